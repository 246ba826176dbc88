//! The command lines of `memstat` and `dtmalloc`: help and version that cannot be written.
mod common;

use std::fs::File;
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
