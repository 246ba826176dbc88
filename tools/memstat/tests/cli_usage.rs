//! The command lines of `memstat` and `dtmalloc`: help and version that cannot be written,
//! options that a combination would ignore, and the error messages of files and addresses.
mod common;

use std::fs::File;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use common::*;

fn run(bin: &str, args: &[&str], stdout: Stdio) -> Output {
    Command::new(bin)
        .args(args)
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

fn full() -> Stdio {
    Stdio::from(File::options().write(true).open("/dev/full").unwrap())
}

/// `--help` and `--version` that cannot be written (standard output on `/dev/full`) fail with
/// a one-line message and status 1, for both commands; written to a pipe they succeed.
#[test]
fn help_and_version_fail_when_they_cannot_be_written() {
    for (bin, name) in [
        (env!("CARGO_BIN_EXE_memstat"), "memstat"),
        (env!("CARGO_BIN_EXE_dtmalloc"), "dtmalloc"),
    ] {
        let mut cases = vec![&["--help"][..], &["--version"], &["-V"]];
        if name == "dtmalloc" {
            cases.push(&["top", "--help"]);
        }
        for args in cases {
            let out = run(bin, args, full());
            assert_eq!(out.status.code(), Some(1), "{name} {args:?}");
            assert_eq!(
                String::from_utf8(out.stderr).unwrap(),
                format!("{name}: stdout: No space left on device\n"),
                "{name} {args:?}"
            );
            let out = run(bin, args, Stdio::piped());
            assert_success(&out);
            assert!(!out.stdout.is_empty(), "{name} {args:?}");
        }
    }
}

fn sample_file(name: &str) -> PathBuf {
    let p = tmpdir(name).join("sample.stream");
    std::fs::write(&p, sample_stream()).unwrap();
    p
}

/// An option that the other options given would ignore is a usage error (status 2, nothing on
/// standard output): `-c` without `-w` or `--listen` (the example), the table options
/// with the exports, the malloc options with `-z` alone, the slab options without `-z`, the
/// exporter's options without `--listen` or out of range. The combinations that mean something
/// still work.
#[test]
fn ignored_options_are_usage_errors() {
    let f = sample_file("cli_usage_combinations");
    let s = f.to_str().unwrap();
    let dir = f.parent().unwrap().to_str().unwrap().to_string();
    let out_file = format!("{dir}/out");
    let o = out_file.as_str();
    let sysctl = fixture("sysctl");
    let sysctl = sysctl.to_str().unwrap();
    let slab = fixture("slab");
    let slab = slab.to_str().unwrap();
    let bad: &[&[&str]] = &[
        &["-c", "3"],
        &["--prometheus", "-c", "2"],
        &["--textfile", o, "-c", "2"],
        &["--save", o, "-w", "1"],
        &["--save", o, "-z"],
        &["--save", o, "--json"],
        &["--save", o, "-a"],
        &["--save", o, "--name", "d*"],
        &["--prometheus", "-a"],
        &["--prometheus", "--name", "d*"],
        &["--prometheus", "-s", "name"],
        &["--prometheus", "-H"],
        &["--textfile", o, "-l"],
        &["--textfile", o, "-h"],
        &["--json", "-l"],
        &["--json", "-h"],
        &["--json", "-H"],
        &["--listen", "127.0.0.1:0", "-a"],
        &["--prometheus", "--sysctl", sysctl],
        &["--save", o, "--sysctl", sysctl],
        &["-z", "-a", "--slab-dir", slab],
        &["-z", "--sysctl", sysctl, "--slab-dir", slab],
        &["--slab-dir", slab],
        &["--slabinfo", slab],
        &["--proc", s],
        &["--max-connections", "3"],
        &["--idle-timeout", "1"],
        &["--max-header-size", "2048"],
        &["--listen", "127.0.0.1:0", "--max-connections", "0"],
        &["--listen", "127.0.0.1:0", "--idle-timeout", "0"],
        &["--listen", "127.0.0.1:0", "--idle-timeout", "nan"],
        &["--listen", "127.0.0.1:0", "--max-header-size", "1023"],
        &["--listen", "127.0.0.1:0", "--max-header-size", "1048577"],
    ];
    for args in bad {
        let out = run(
            env!("CARGO_BIN_EXE_memstat"),
            &[&["-f", s][..], args].concat(),
            Stdio::piped(),
        );
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?}");
    }
    // -M takes its zone sizes from the core, and reads no --proc.
    for args in [&["-M", s, "--sysctl", sysctl][..], &["-M", s, "--proc", s]] {
        let out = run(env!("CARGO_BIN_EXE_memstat"), args, Stdio::piped());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
    let good: &[&[&str]] = &[
        &["-w", "0.01", "-c", "2"],
        &["-m", "-a", "-l", "-H", "--sysctl", sysctl],
        &["-m", "-z", "-a", "-l", "-H", "--slab-dir", slab],
        &["-z", "-H", "-s", "name", "--name", "k*", "--slab-dir", slab],
        &["--json", "-a", "-s", "memuse", "--name", "d*"],
        &["--prometheus", "-m"],
        &["--prometheus", "-w", "0.01", "-c", "2"],
        &["--textfile", o, "-w", "0.01", "-c", "2"],
        &["--save", o, "-m"],
    ];
    for args in good {
        let out = run(
            env!("CARGO_BIN_EXE_memstat"),
            &[&["-f", s][..], args].concat(),
            Stdio::piped(),
        );
        assert_success(&out);
    }
}

/// The errors of files and addresses are one line naming them, without Rust's
/// "(os error N)".
#[test]
fn file_and_address_errors_are_clean() {
    let f = sample_file("cli_usage_errors");
    let s = f.to_str().unwrap();
    let dir = f.parent().unwrap().to_str().unwrap().to_string();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = busy.local_addr().unwrap().to_string();
    let cases: Vec<(Vec<String>, String)> = vec![
        (
            vec!["--save".into(), "/nonexistent/x.stream".into()],
            "memstat: /nonexistent/x.stream: No such file or directory\n".into(),
        ),
        (
            vec!["--save".into(), dir.clone()],
            format!("memstat: {dir}: Is a directory\n"),
        ),
        (
            vec!["--textfile".into(), "/nonexistent/x.prom".into()],
            "memstat: /nonexistent/x.prom: No such file or directory\n".into(),
        ),
        (
            vec!["--listen".into(), busy.clone()],
            format!("memstat: cannot listen on {busy}: Address already in use\n"),
        ),
        (
            vec!["--listen".into(), "127.0.0.1:99999".into()],
            "memstat: cannot listen on 127.0.0.1:99999: invalid port value\n".into(),
        ),
    ];
    for (args, want) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_memstat"))
            .args(["-f", s])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(String::from_utf8(out.stderr).unwrap(), want, "{args:?}");
    }
    for args in [&["-f", s][..], &["--prometheus", "-f", s]] {
        let out = run(env!("CARGO_BIN_EXE_memstat"), args, full());
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(
            String::from_utf8(out.stderr).unwrap(),
            "memstat: stdout: No space left on device\n"
        );
    }
}
