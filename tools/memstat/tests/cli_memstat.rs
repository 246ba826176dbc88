//! `memstat` output against golden files (tests/golden). Regenerate with
//! `UPDATE_GOLDEN=1 cargo test --test cli_memstat` after a deliberate change.
mod common;

use std::path::PathBuf;
use std::process::{Command, Output};

use common::*;

fn stream_file() -> PathBuf {
    let d = tmpdir("cli_memstat");
    let p = d.join("sample.stream");
    std::fs::write(&p, sample_stream()).unwrap();
    p
}

fn memstat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_memstat"))
        .args(args)
        .output()
        .expect("run memstat")
}

fn golden(name: &str, out: &Output) {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = common::manifest_dir().join("tests/golden").join(name);
    let got = String::from_utf8(out.stdout.clone()).unwrap();
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &got).unwrap();
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(got, want, "output differs from {}", path.display());
}

fn m_args<'a>(stream: &'a str, sysctl: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["-f", stream, "--sysctl", sysctl];
    v.extend_from_slice(extra);
    v
}

#[test]
fn golden_malloc() {
    let s = stream_file();
    let s = s.to_str().unwrap();
    let sys = fixture("sysctl");
    let sys = sys.to_str().unwrap();
    golden("malloc.txt", &memstat(&m_args(s, sys, &["-m", "-H"])));
    golden("malloc.txt", &memstat(&m_args(s, sys, &[])));
    golden("malloc-all.txt", &memstat(&m_args(s, sys, &["-a", "-H"])));
    golden("malloc-humanized.txt", &memstat(&m_args(s, sys, &["-h"])));
    golden(
        "malloc-sorted.txt",
        &memstat(&m_args(s, sys, &["-H", "-s", "memuse"])),
    );
    golden(
        "malloc-name.txt",
        &memstat(&m_args(s, sys, &["-H", "--name", "foo_*", "-s", "name"])),
    );
    golden("malloc.json", &memstat(&m_args(s, sys, &["--json"])));
    golden("malloc-long.txt", &memstat(&m_args(s, sys, &["-l", "-H"])));
    golden(
        "malloc-long-humanized.txt",
        &memstat(&m_args(s, sys, &["-l", "-h"])),
    );
}

/// A type whose only activity is failed allocations (failure injection, a
/// subsystem out of memory) is listed, as a type with requests is: its
/// failures are what there is to see. A type with neither stays hidden.
#[test]
fn failures_alone_list_a_type() {
    let d = tmpdir("cli_memstat_failures");
    let p = d.join("failures.stream");
    let mut types = sample_types();
    types.push(ty(
        "failing",
        8,
        vec![cpu(0, 0, 0, 0, 0), cpu(0, 0, 0, 0, 0)],
    ));
    types[7].stats[1].numfailures = 3;
    std::fs::write(&p, memstat::stream::write_stream(4, &types)).unwrap();
    let sys = fixture("sysctl");
    let out = memstat(&m_args(
        p.to_str().unwrap(),
        sys.to_str().unwrap(),
        &["-l", "-H"],
    ));
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(
        rows.contains(&vec!["failing", "0", "0K", "0", "3", "-", "vmlinux"]),
        "{text}"
    );
    assert!(!rows.iter().any(|r| r.first() == Some(&"unused")), "{text}");
}

/// A stream saved by a kernel of stream version 1 reads as it always did:
/// the same table, and JSON without the keys version 2 added.
#[test]
fn golden_malloc_version_1() {
    let d = tmpdir("cli_memstat_v1");
    let p = d.join("v1.stream");
    let v2 = memstat::stream::parse_stream(&sample_stream()).unwrap();
    std::fs::write(
        &p,
        memstat::stream::write_stream_version(1, v2.maxcpus, &v2.types),
    )
    .unwrap();
    let s = p.to_str().unwrap();
    let sys = fixture("sysctl");
    let sys = sys.to_str().unwrap();
    golden("malloc.txt", &memstat(&m_args(s, sys, &["-m", "-H"])));
    golden("malloc-v1.json", &memstat(&m_args(s, sys, &["--json"])));
    golden(
        "malloc-long-v1.txt",
        &memstat(&m_args(s, sys, &["-l", "-H"])),
    );
}

#[test]
fn golden_zones() {
    let dir = fixture("slab");
    let d = dir.to_str().unwrap();
    golden("zones.txt", &memstat(&["-z", "-H", "--slab-dir", d]));
    golden("zones.json", &memstat(&["-z", "--json", "--slab-dir", d]));
    let info = fixture("slabinfo");
    golden(
        "zones-slabinfo.txt",
        &memstat(&[
            "-z",
            "-H",
            "--slab-dir",
            "/nonexistent",
            "--slabinfo",
            info.to_str().unwrap(),
        ]),
    );
}

#[test]
fn both_tables_and_json() {
    let s = stream_file();
    let sys = fixture("sysctl");
    let dir = fixture("slab");
    let out = memstat(&[
        "-m",
        "-z",
        "--json",
        "-f",
        s.to_str().unwrap(),
        "--sysctl",
        sys.to_str().unwrap(),
        "--slab-dir",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["malloc-statistics"]["memory"][0]["type"], "devbuf");
    assert_eq!(
        v["memory-zone-statistics"]["zone"][0]["name"],
        "anon_vma_chain"
    );
}

#[test]
fn errors_are_one_line_and_nonzero() {
    let out = memstat(&["-f", "/nonexistent/stream"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "memstat: /nonexistent/stream: No such file or directory\n"
    );
    // The kernel hint is for the default /proc path only.
    let out = memstat(&["--proc", "/nonexistent/malloc_stats"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "memstat: /nonexistent/malloc_stats: No such file or directory\n"
    );
    let d = tmpdir("cli_memstat_bad");
    let bad = d.join("bad.stream");
    std::fs::write(&bad, &sample_stream()[..100]).unwrap();
    let out = memstat(&["-f", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("memstat: Data format error: stream is 100 bytes"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1);
    let mut v2 = sample_stream();
    v2[0] = 9;
    std::fs::write(&bad, &v2).unwrap();
    let out = memstat(&["-f", bad.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("memstat: Version mismatch"));
    let out = memstat(&["--bogus"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn save_and_repeat() {
    let s = stream_file();
    let d = tmpdir("cli_memstat_save");
    let saved = d.join("saved.stream");
    let out = memstat(&["-f", s.to_str().unwrap(), "--save", saved.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    assert_eq!(std::fs::read(&saved).unwrap(), sample_stream());
    let out = memstat(&["-f", s.to_str().unwrap(), "-H", "-w", "0.01", "-c", "3"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.matches("Size(s)").count(), 3);
}

#[test]
fn help_lists_every_option() {
    let out = memstat(&["--help"]);
    let h = String::from_utf8(out.stdout).unwrap();
    for opt in [
        "-m",
        "-z",
        "-a",
        "--json",
        "-h",
        "-H",
        "--sort",
        "--name",
        "-w",
        "-c",
        "--stream",
        "--proc",
        "--sysctl",
        "--slab-dir",
        "--slabinfo",
        "--save",
    ] {
        assert!(h.contains(opt), "{opt} missing from --help");
    }
}

#[test]
fn endless_or_huge_sources_fail_fast() {
    let out = memstat(&["-f", "/dev/zero"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with("memstat: Version mismatch"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d = tmpdir("cli_memstat_sparse");
    let p = d.join("sparse.stream");
    let f = std::fs::File::create(&p).unwrap();
    f.set_len(1 << 32).unwrap();
    drop(f);
    let t = std::time::Instant::now();
    let out = memstat(&["-f", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("memstat: Version mismatch"));
    assert!(t.elapsed() < std::time::Duration::from_secs(20));
    let _ = std::fs::remove_file(&p);
}

#[test]
fn bad_intervals_and_counts_are_usage_errors() {
    let s = stream_file();
    let s = s.to_str().unwrap();
    for w in ["1e30", "0", "nan", "inf"] {
        let out = memstat(&["-f", s, "-w", w]);
        assert_eq!(out.status.code(), Some(2), "-w {w}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("memstat: -w: "), "-w {w}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(out.stdout.is_empty());
    }
    for extra in [
        &["-w", "0.1", "-c", "0"][..],
        &["--listen", "127.0.0.1:0", "-c", "0"],
    ] {
        let mut a = vec!["-f", s];
        a.extend_from_slice(extra);
        let out = memstat(&a);
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "memstat: -c: the count must be at least 1\n"
        );
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn closed_stdout_pipe_exits_quietly() {
    let s = stream_file();
    // Read the first report, then close the pipe.
    let out = run_until_stdout_closed(Command::new(env!("CARGO_BIN_EXE_memstat")).args([
        "-f",
        s.to_str().unwrap(),
        "-H",
        "-w",
        "0.05",
        "-c",
        "20",
    ]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.is_empty(), "{err}");
}

include!("../../../rust/kernel/malloc_type/name_text.rs");

/// A stream with one type for each name of the shared text-form vector (a newline that would
/// forge a row, ESC, U+202E, a backslash-n and a newline, bytes that are not UTF-8), type `i`
/// with `i + 1` allocations.
fn hostile_stream() -> PathBuf {
    let d = tmpdir("cli_memstat_hostile");
    let p = d.join("hostile.stream");
    let types: Vec<_> = NAME_TEXTS
        .iter()
        .zip(1..)
        .map(|(&(name, _), i)| ty(name, i, vec![cpu(64 * i, 0, i, 0, 1 << 3)]))
        .collect();
    std::fs::write(&p, memstat::stream::write_stream(1, &types)).unwrap();
    p
}

/// Every `-m` table (plain, `-l`, humanized or not) writes each name in its text form: one
/// row per type, printable ASCII only, and two names never look the same.
#[test]
fn names_in_every_table_are_text_forms() {
    let p = hostile_stream();
    let s = p.to_str().unwrap();
    for args in [&["-H"][..], &["-h"], &["-l", "-H"], &["-l", "-h"], &["-a"]] {
        let mut a = vec!["-f", s];
        a.extend_from_slice(args);
        let out = memstat(&a);
        assert_success(&out);
        assert!(
            out.stdout
                .iter()
                .all(|&b| b == b'\n' || (0x20..0x7f).contains(&b)),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let rows: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(rows.len(), NAME_TEXTS.len(), "{args:?}:\n{text}");
        for (row, &(_, name)) in rows.iter().zip(NAME_TEXTS) {
            let name = std::str::from_utf8(name).unwrap();
            assert!(
                row.trim_start().starts_with(&format!("{name} ")),
                "{args:?}: {row:?} is not the row of {name:?}"
            );
        }
    }
}

/// JSON names the types by their text forms: lossless and unique, where a lossy decoding
/// made two names one.
#[test]
fn names_in_json_are_text_forms() {
    let p = hostile_stream();
    for args in [&["--json"][..], &["--json", "-a"]] {
        let mut a = vec!["-f", p.to_str().unwrap()];
        a.extend_from_slice(args);
        let out = memstat(&a);
        assert_success(&out);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let types: Vec<&str> = v["malloc-statistics"]["memory"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["type"].as_str().unwrap())
            .collect();
        let want: Vec<&str> = NAME_TEXTS
            .iter()
            .map(|&(_, t)| std::str::from_utf8(t).unwrap())
            .collect();
        assert_eq!(types, want);
    }
}

/// A source that fails in the middle of `-w` (here a stream cut short, as a read that the
/// kernel ended early would be) does not stop the watch: the error goes to stderr, the
/// report shows the figures of the last good update, and the next good read is shown again.
/// The stream comes through a FIFO so that each update reads exactly what this test wrote for
/// it: a round is written only after the report of the one before has come out.
#[test]
fn watch_survives_a_failed_update() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;

    let d = tmpdir("cli_memstat_watch");
    let fifo = d.join("stream.fifo");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("run mkfifo");
    assert!(made.success());
    let sys = fixture("sysctl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_memstat"))
        .args([
            "-f",
            fifo.to_str().unwrap(),
            "--sysctl",
            sys.to_str().unwrap(),
        ])
        .args(["--json", "-w", "0.01", "-c", "3"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run memstat");
    let mut reports = BufReader::new(child.stdout.take().unwrap()).lines();

    let good = sample_stream();
    let mut grown_types = sample_types();
    grown_types[0].stats[0].memalloced += 4096;
    grown_types[0].stats[0].numallocs += 1;
    let grown = memstat::stream::write_stream(4, &grown_types);
    let rounds: [&[u8]; 3] = [&good, &good[..good.len() - 40], &grown];
    let mut got = Vec::new();
    for bytes in rounds {
        let mut w = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
        w.write_all(bytes).unwrap();
        drop(w);
        got.push(reports.next().expect("a report").unwrap());
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("header announces")
            && err.ends_with("showing the figures of the last update\n"),
        "{err}"
    );
    let memuse = |report: &str| -> u64 {
        let v: serde_json::Value = serde_json::from_str(report).unwrap();
        v["malloc-statistics"]["memory"][0]["memory-use"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(got[1], got[0], "the failed update shows the last figures");
    assert_eq!(
        memuse(&got[2]),
        memuse(&got[0]) + 4,
        "KiB after the good update"
    );
}

/// The Requests of a type whose two CPUs are at the largest count: the largest count (a sum
/// that saturates), in the table and in JSON.
#[test]
fn per_cpu_sums_saturate_in_the_outputs() {
    let d = tmpdir("cli_memstat_saturate");
    let p = d.join("max.stream");
    let max = u64::MAX;
    std::fs::write(
        &p,
        memstat::stream::write_stream(2, &[ty("big", 1, vec![cpu(0, 0, max, 0, 1); 2])]),
    )
    .unwrap();
    let s = p.to_str().unwrap();
    let out = memstat(&["-f", s, "--json"]);
    assert_success(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["malloc-statistics"]["memory"][0]["requests"], max);
    let out = memstat(&["-f", s, "-H"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(" 18446744073709551615 "), "{text}");
}

/// A stream with two types of one id is refused as corrupt, with the id named.
#[test]
fn a_stream_with_a_repeated_id_is_an_error() {
    let d = tmpdir("cli_memstat_dup_id");
    let p = d.join("dup.stream");
    let one = |name: &str| ty(name, 9, vec![cpu(64, 0, 1, 0, 1 << 3)]);
    std::fs::write(&p, memstat::stream::write_stream(1, &[one("a"), one("b")])).unwrap();
    for args in [&["--json"][..], &["-H"], &["--prometheus"]] {
        let mut a = vec!["-f", p.to_str().unwrap()];
        a.extend_from_slice(args);
        let out = memstat(&a);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "memstat: Data format error: types 0 and 1 have the same id 9\n"
        );
        assert!(out.stdout.is_empty());
    }
}

/// Names that a lossy decoding made one (two bytes that are not UTF-8) keep two label sets in
/// the Prometheus exposition: the labels hold text forms.
#[test]
fn names_equal_after_lossy_decoding_keep_distinct_labels() {
    let d = tmpdir("cli_memstat_lossy");
    let p = d.join("lossy.stream");
    let types = [
        ty(b"x\xff", 1, vec![cpu(64, 0, 1, 0, 1 << 3)]),
        ty(b"x\xfe", 2, vec![cpu(64, 0, 1, 0, 1 << 3)]),
    ];
    std::fs::write(&p, memstat::stream::write_stream(1, &types)).unwrap();
    let out = memstat(&["-f", p.to_str().unwrap(), "--prometheus"]);
    assert_success(&out);
    let text = String::from_utf8(out.stdout).unwrap();
    let samples: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("malloc_type_in_use_bytes{"))
        .collect();
    assert_eq!(samples.len(), 2, "{text}");
    assert!(
        samples[0].contains("type=\"x\\\\377\",probe=\"x\\\\377\""),
        "{text}"
    );
    assert!(
        samples[1].contains("type=\"x\\\\376\",probe=\"x\\\\376\""),
        "{text}"
    );
    assert!(text.is_ascii());
}

/// `--name` takes a pattern ([`memstat::pattern`]) and matches it against a type's name and
/// its probe name, as bytes: `?` is one byte, `\NNN` any byte, classes take ranges of bytes.
#[test]
fn name_patterns_match_the_bytes_of_names() {
    let p = hostile_stream();
    let selected = |pattern: &str| -> Vec<String> {
        let out = memstat(&["-f", p.to_str().unwrap(), "--json", "--name", pattern]);
        assert_success(&out);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["malloc-statistics"]["memory"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["type"].as_str().unwrap().to_string())
            .collect()
    };
    for (pattern, want) in [
        ("nl?row*", &["nl\\012row 0 0 0"][..]),
        ("nl_row_0_0_0", &["nl\\012row 0 0 0"]),
        ("esc\\033[31m*", &["esc\\033[31mred"]),
        ("a\\134n", &["a\\134n"]),
        ("a\\012", &["a\\012"]),
        ("a?", &["a\\012"]),
        ("a_", &["a\\012"]),
        ("[\\200-\\377]*", &["\\303\\240 la carte", "\\377\\376"]),
        (
            "*[\\001-\\037\\177]*",
            &[
                "nl\\012row 0 0 0",
                "esc\\033[31mred",
                "tab\\011here",
                "a\\012",
                "del\\177",
                "\\001",
            ],
        ),
        ("rlo???evil", &["rlo\\342\\200\\256evil"]),
        ("*\\134*", &["back\\134slash", "a\\134n"]),
        ("~\\041*", &["~!\"#$%&'()*+,-./:;<=>?@[]^_`{|}"]),
        ("foo?bar", &["foo bar"]),
    ] {
        assert_eq!(selected(pattern), want, "--name {pattern}");
    }
}

/// A pattern the rule refuses is a usage error naming what is wrong.
#[test]
fn bad_name_patterns_are_usage_errors() {
    let p = hostile_stream();
    for (pattern, err) in [
        (
            "foo bar",
            "memstat: --name 'foo bar': a space at offset 3: a pattern is printable ASCII without spaces (write \\040)\n",
        ),
        (
            "a\\n",
            "memstat: --name 'a\\134n': backslash at offset 1: a backslash starts \\NNN, three octal digits from 001 to 377 (a backslash itself is \\134)\n",
        ),
        ("", "memstat: --name '': a pattern is 1 to 124 bytes, not empty\n"),
        (
            "\u{1b}[2J",
            "memstat: --name '\\033[2J': byte 0x1b at offset 0: a pattern is printable ASCII without spaces (write \\033)\n",
        ),
    ] {
        let out = memstat(&["-f", p.to_str().unwrap(), "--name", pattern]);
        assert_eq!(out.status.code(), Some(2), "{pattern:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), err);
        assert!(out.stdout.is_empty());
    }
}

/// A type kept after its module unloaded (`MALLOC_TYPE_F_UNLOADED`) says so in the JSON; the
/// others have no `unloaded` key.
#[test]
fn unloaded_types_in_json() {
    let mut types = sample_types();
    types[3].flags = memstat::stream::FLAG_MODULE | memstat::stream::FLAG_UNLOADED;
    types[3].owner = b"foo_mod".to_vec();
    let p = tmpdir("cli_memstat_unloaded").join("unloaded.stream");
    std::fs::write(&p, memstat::stream::write_stream(4, &types)).unwrap();
    let sys = fixture("sysctl");
    let out = memstat(&[
        "-m",
        "--json",
        "-f",
        p.to_str().unwrap(),
        "--sysctl",
        sys.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["malloc-statistics"]["memory"].as_array().unwrap();
    let unloaded: Vec<(&str, &str)> = rows
        .iter()
        .filter(|r| r.get("unloaded").is_some())
        .map(|r| {
            assert_eq!(r["unloaded"], true);
            (r["type"].as_str().unwrap(), r["owner"].as_str().unwrap())
        })
        .collect();
    let name = String::from_utf8(types[3].name.clone()).unwrap();
    assert_eq!(unloaded, [(name.as_str(), "foo_mod")]);
}

/// The reconciliation against the kmalloc caches ends the `-m` report of the running kernel
/// (`--proc`, not `-f`), with its sysctls and SLUB's sysfs (the fixture's `kmalloc-64` has
/// given out 2548 objects, 40 of them free in its sheaves: 2508 in use, 160512 bytes; the types
/// hold 160000 of them and 4096 of the 8192-byte class,
/// whose caches are not in the fixture); in the JSON and the Prometheus metrics too. Not with
/// `--name`, which shows some types only, nor for a saved stream.
#[test]
fn coverage_ends_the_malloc_report() {
    let s = stream_file();
    let s = s.to_str().unwrap();
    let sys = fixture("sysctl-coverage");
    let sys = sys.to_str().unwrap();
    let slab = fixture("slab");
    let slab = slab.to_str().unwrap();
    let live_at = |sys: &str, extra: &[&str]| {
        let mut v = vec!["--proc", s, "--sysctl", sys, "--slab-dir", slab];
        v.extend_from_slice(extra);
        memstat(&v)
    };
    let live = |extra: &[&str]| live_at(sys, extra);
    golden("malloc-coverage.txt", &live(&["-H"]));
    golden("malloc-coverage-humanized.txt", &live(&["-h"]));
    golden("malloc-coverage.json", &live(&["--json"]));
    let text = |o: Output| String::from_utf8(o.stdout).unwrap();
    let prom = text(live(&["--prometheus"]));
    assert!(
        prom.contains("malloc_type_kmalloc_typed_bytes{size=\"64\"} 160000\n"),
        "{prom}"
    );
    assert!(
        prom.contains("malloc_type_kmalloc_untyped_bytes{size=\"8192\"} -4096\n"),
        "{prom}"
    );
    assert!(
        prom.contains("malloc_type_kmalloc_sheaf_bytes{size=\"64\"} 2560\n"),
        "{prom}"
    );
    assert!(
        prom.contains("malloc_type_kmalloc_quarantine_bytes{size=\"64\"} 256\n"),
        "{prom}"
    );
    assert!(!text(live(&["-H", "--name", "foo_*"])).contains("kmalloc caches"));
    let saved = text(memstat(&["-f", s, "--sysctl", sys, "-H"]));
    assert!(!saved.contains("kmalloc caches"), "{saved}");
    // --slab-dir for a report that reads no cache: a usage error.
    let o = tmpdir("coverage_save").join("out");
    for extra in [
        &["--save", o.to_str().unwrap()][..],
        &["-m", "--name", "d*"],
    ] {
        assert_eq!(live(extra).status.code(), Some(2), "{extra:?}");
    }
    // A kernel without vm.malloc_zone_memuse: the table alone, as before.
    let old = fixture("sysctl");
    let out = live_at(old.to_str().unwrap(), &[]);
    golden("malloc.txt", &out);
    // A bad value: the table, and the reason on standard error.
    let d = tmpdir("coverage_bad");
    std::fs::create_dir_all(d.join("vm")).unwrap();
    for f in ["malloc_zone_sizes", "malloc_zone_count"] {
        std::fs::copy(fixture("sysctl-coverage/vm").join(f), d.join("vm").join(f)).unwrap();
    }
    std::fs::write(d.join("vm/malloc_zone_memuse"), "1 2 3\n").unwrap();
    let out = live_at(d.to_str().unwrap(), &[]);
    golden("malloc.txt", &out);
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        err,
        "memstat: kmalloc coverage: Data format error: malloc_zone_memuse has 3 values for 13 size classes\n"
    );
}
