mod common;

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Command;

use common::{assert_success, run_until_stdout_closed, tmpdir};
use memstat::trace::{
    columns_from_env, filter_is_exact, filter_string, format_event, malloc_min_from_env,
    parse_cpu_stats, parse_line, Probe, Record, Top,
};

const L1: &str = "          insmod-123     [001] .....   12.345678: malloc: probe=foo_bar size=4096 zindx=12 name='foo bar'";

fn ev(line: &str) -> memstat::trace::Event {
    match parse_line(line) {
        Ok(Record::Event(e)) => e,
        other => panic!("{line}: {other:?}"),
    }
}

/// The number of `dtmalloc top` reports in a run's output (one header line each).
fn top_reports(out: &std::process::Output) -> usize {
    String::from_utf8_lossy(&out.stdout)
        .matches("NET(B)")
        .count()
}

#[test]
fn parses_a_plain_line() {
    let e = ev(L1);
    assert_eq!(e.comm, "insmod");
    assert_eq!(e.pid, 123);
    assert_eq!(e.cpu, 1);
    assert_eq!(e.timestamp, "12.345678");
    assert_eq!(e.probe, Probe::Malloc);
    assert_eq!(e.type_probe, "foo_bar");
    assert_eq!(e.name, "foo bar");
    assert_eq!(e.size, 4096);
    assert_eq!(e.zindx, 12);
    assert_eq!(
        format_event(&e),
        "12.345678 insmod[123]: malloc(9) type foo_bar 4096 bytes"
    );
}

#[test]
fn comm_with_spaces_dashes_and_brackets() {
    let e =
        ev("  my cool-prog [2]-4242 [003] d.h1. 99.000001: free: probe=x size=1 zindx=0 name='x'");
    assert_eq!(e.comm, "my cool-prog [2]");
    assert_eq!(e.pid, 4242);
    assert_eq!(e.cpu, 3);
    assert_eq!(e.probe, Probe::Free);
    assert_eq!(
        format_event(&e),
        "99.000001 my cool-prog [2][4242]: free(9) type x 1 byte"
    );
    let e = ev("kworker/u8:2-77 [000] 5.5: malloc: probe=big size=131072 zindx=-1 name='big'");
    assert_eq!((e.comm.as_str(), e.pid, e.zindx), ("kworker/u8:2", 77, -1));
    // record-tgid column
    let e = ev("          <idle>-0       (-------) [002] ..s1.  1.000000: malloc: probe=a size=8 zindx=0 name='a'");
    assert_eq!((e.comm.as_str(), e.pid), ("<idle>", 0));
    let e = ev("            bash-10      (   10) [002] .....  1.000000: malloc: probe=a size=8 zindx=0 name='a \'q\' b'");
    assert_eq!(e.name, "a \'q\' b");
}

#[test]
fn lost_events_lines() {
    assert_eq!(
        parse_line("CPU:3 [LOST 12 EVENTS]").unwrap(),
        Record::Lost { cpu: 3, count: 12 }
    );
    assert_eq!(
        parse_line("CPU:0 [LOST 1 EVENTS]\n").unwrap(),
        Record::Lost { cpu: 0, count: 1 }
    );
}

#[test]
fn malformed_lines_are_errors() {
    for bad in [
        "",
        "garbage",
        "CPU:x [LOST 1 EVENTS]",
        "insmod-123 [001] ..... 12.3: sched_switch: prev=a",
        "insmod-123 [001] ..... 12.3: malloc: probe=a size=x zindx=0 name='a'",
        "insmod-123 [001] ..... 12.3: malloc: probe=a size=1 zindx=0 name=a",
        "insmod-123 [001] ..... 12.3: malloc: probe=a size=1",
        "insmod [001] ..... 12.3: malloc: probe=a size=1 zindx=0 name='a'",
        "insmod-123 [001] ..... notatime: malloc: probe=a size=1 zindx=0 name='a'",
        "insmod-123 [0x1] ..... 12.3: malloc: probe=a size=1 zindx=0 name='a'",
        "[[[[[[[]]]]]]]",
        "-1 [",
        "\u{fffd}-1 [1] \u{fffd}",
    ] {
        assert!(parse_line(bad).is_err(), "{bad:?} parsed");
    }
    // Truncations of a good line never panic.
    for i in 0..L1.len() {
        if L1.is_char_boundary(i) {
            let _ = parse_line(&L1[..i]);
        }
    }
}

#[test]
fn top_aggregates_and_sorts() {
    let mut t = Top::new();
    let line = |p: &str, ty: &str, size: u64| {
        parse_line(format!(
            "a-1 [000] ..... 1.0: {p}: probe={ty} size={size} zindx=0 name='{ty}'"
        ))
        .unwrap()
    };
    for r in [
        line("malloc", "small", 100),
        line("malloc", "big", 10000),
        line("malloc", "big", 10000),
        line("free", "big", 10000),
        line("malloc", "leaky", 5000),
        line("malloc", "leaky", 6000),
        line("free", "gone", 300),
        line("malloc", "failed", 0),
        parse_line("CPU:1 [LOST 5 EVENTS]").unwrap(),
    ] {
        t.add(&r);
    }
    let rows: Vec<_> = t
        .rows()
        .into_iter()
        .map(|r| (r.probe, r.net, r.balance))
        .collect();
    assert_eq!(
        rows,
        vec![
            ("leaky".to_string(), 11000, 2),
            ("big".to_string(), 10000, 1),
            ("small".to_string(), 100, 1),
            ("failed".to_string(), 0, -1),
            ("gone".to_string(), -300, -1),
        ]
    );
    assert_eq!(t.events(), 8);
    assert_eq!(t.lost(), 5);
    let table = t.table();
    assert!(
        table.starts_with("        NET(B)    BALANCE TYPE\n         11000          2 leaky\n"),
        "{table}"
    );
}

#[test]
fn dwatch_malloc_min() {
    let env = |v: &[u8]| malloc_min_from_env(Some(OsStr::from_bytes(v)));
    assert_eq!(malloc_min_from_env(None), Ok(65536));
    assert_eq!(env(b""), Ok(65536));
    assert_eq!(env(b"0"), Ok(0));
    assert_eq!(env(b"4096"), Ok(4096));
    for bad in [
        &b"abc"[..],
        b"-1",
        b"+5",
        b" 5",
        b"5k",
        b"1.5",
        b"99999999999999999999999",
        b"\xff",
        b"1\xff",
    ] {
        assert_eq!(
            env(bad),
            Err("DWATCH_MALLOC_MIN must be a number".into()),
            "{bad:?}"
        );
    }
}

#[test]
fn columns() {
    let env = |v: &[u8]| columns_from_env(Some(OsStr::from_bytes(v)));
    assert_eq!(columns_from_env(None), Ok(80));
    assert_eq!(env(b""), Ok(80));
    assert_eq!(env(b"132"), Ok(132));
    assert_eq!(env(b"65535"), Ok(65535));
    for bad in [
        &b"0"[..],
        b"65536",
        b"99999999999",
        b"+80",
        b"80 ",
        b"wide",
        b"\xff",
    ] {
        assert!(env(bad).is_err(), "{bad:?}");
    }
    assert_eq!(
        env(b"\x1b[2J"),
        Err("COLUMNS=\\033[2J is not a width from 1 to 65535".into())
    );
}

#[test]
fn filters_and_probe_names() {
    assert_eq!(filter_string(65536, None), "size >= 65536");
    assert_eq!(filter_string(0, None), "0");
    assert_eq!(
        filter_string(10, Some("foo_bar")),
        "size >= 10 && probe == \"foo_bar\""
    );
    assert_eq!(filter_string(0, Some("x")), "probe == \"x\"");
    // Text forms hold any printable ASCII: a quote is quoted with the other one, and with
    // both a glob stands for each `"` and escapes glob_match()'s characters.
    assert_eq!(filter_string(0, Some("a\"b")), "probe == 'a\"b'");
    assert_eq!(filter_string(0, Some("a'b")), "probe == \"a'b\"");
    assert_eq!(
        filter_string(5, Some("a\"b'*?[\\033")),
        "size >= 5 && probe ~ \"a?b'\\*\\?\\[\\\\033\""
    );
    assert_eq!(filter_string(0, Some("!\"'")), "probe ~ \"??'\"");
    assert_eq!(filter_string(0, Some("7\"'")), "probe ~ \"??'\"");
    assert!(filter_is_exact("a\"b") && filter_is_exact("a'b") && filter_is_exact("x"));
    assert!(!filter_is_exact("a\"b'"));
    assert_eq!(
        parse_cpu_stats("entries: 0\noverrun: 3\ncommit overrun: 1\ndropped events: 2\n"),
        (3, 2)
    );
}

const PIPE: &str = "          insmod-123     [001] .....   12.345678: malloc: probe=foo_bar size=4096 zindx=12 name='foo bar'
 kworker/u8:2-my thing-77 [000] d..1.   13.000001: malloc: probe=big size=131072 zindx=-1 name='big'
CPU:1 [LOST 12 EVENTS]
garbage line here
          insmod-123     [001] .....   14.500000: free: probe=foo_bar size=4096 zindx=0 name='foo bar'
";

fn fake_tracefs(name: &str) -> std::path::PathBuf {
    let root = tmpdir(name);
    fs::create_dir_all(root.join("events/dtmalloc/malloc")).unwrap();
    fs::create_dir_all(root.join("events/dtmalloc/free")).unwrap();
    fs::create_dir_all(root.join("instances")).unwrap();
    fs::create_dir_all(root.join("per_cpu/cpu0")).unwrap();
    fs::write(root.join("trace_pipe"), PIPE).unwrap();
    fs::write(
        root.join("per_cpu/cpu0/stats"),
        "entries: 0\noverrun: 3\ndropped events: 2\n",
    )
    .unwrap();
    root
}

fn dtmalloc(root: &Path, args: &[&str], env_min: Option<&str>) -> std::process::Output {
    dtmalloc_env(root, args, env_min.map(str::as_bytes), None)
}

/// [`dtmalloc`] with `DWATCH_MALLOC_MIN` and `COLUMNS` as bytes, unset when `None`.
fn dtmalloc_env(
    root: &Path,
    args: &[&str],
    env_min: Option<&[u8]>,
    columns: Option<&[u8]>,
) -> std::process::Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_dtmalloc"));
    c.arg("--tracefs")
        .arg(root)
        .arg("--fake-tracefs")
        .args(args);
    c.env_remove("DWATCH_MALLOC_MIN").env_remove("COLUMNS");
    if let Some(m) = env_min {
        c.env("DWATCH_MALLOC_MIN", OsStr::from_bytes(m));
    }
    if let Some(m) = columns {
        c.env("COLUMNS", OsStr::from_bytes(m));
    }
    c.output().expect("run dtmalloc")
}

#[test]
fn fake_tracefs_event_run() {
    let root = fake_tracefs("dt_events");
    let out = dtmalloc(&root, &["--instance", "t1"], Some("0"));
    assert_success(&out);
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "12.345678 insmod[123]: malloc(9) type foo_bar 4096 bytes\n\
         13.000001 kworker/u8:2-my thing[77]: malloc(9) type big 131072 bytes\n\
         14.500000 insmod[123]: free(9) type foo_bar 4096 bytes\n"
    );
    // The markers report the overrun counter's increments: the same events, counted once (the
    // larger of the two: this fake's stats say less than its pipe), plus the dropped ones.
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains(
            "3 events, 14 lost (LOST EVENTS markers 12, overrun 3, dropped 2), 1 unparsed lines"
        ),
        "{err}"
    );
    let log = fs::read_to_string(root.join("fake-writes.log")).unwrap();
    assert_eq!(
        log,
        "instances/t1/events/dtmalloc/malloc/filter 0\n\
         instances/t1/events/dtmalloc/free/filter 0\n\
         instances/t1/events/dtmalloc/malloc/enable 1\n\
         instances/t1/events/dtmalloc/free/enable 1\n\
         instances/t1/events/dtmalloc/malloc/enable 0\n\
         instances/t1/events/dtmalloc/free/enable 0\n"
    );
    assert!(!root.join("instances/t1").exists(), "instance not removed");
    assert_eq!(fs::read_dir(root.join("instances")).unwrap().count(), 0);
}

#[test]
fn fake_tracefs_type_and_min_filter_and_default_instance() {
    let root = fake_tracefs("dt_type");
    let out = dtmalloc(
        &root,
        &["--type", "foo bar", "--min", "100", "-c", "1"],
        None,
    );
    assert_success(&out);
    assert_eq!(out.stdout.iter().filter(|&&b| b == b'\n').count(), 1);
    let log = fs::read_to_string(root.join("fake-writes.log")).unwrap();
    assert!(
        log.contains("/events/dtmalloc/malloc/filter size >= 100 && probe == \"foo_bar\"\n"),
        "{log}"
    );
    assert!(log.starts_with("instances/dtmalloc."), "{log}");
    assert_eq!(fs::read_dir(root.join("instances")).unwrap().count(), 0);
    // Default threshold from the environment.
    let root = fake_tracefs("dt_env");
    let out = dtmalloc(&root, &["--instance", "e"], Some("4096"));
    assert!(out.status.success());
    let log = fs::read_to_string(root.join("fake-writes.log")).unwrap();
    assert!(
        log.contains("instances/e/events/dtmalloc/free/filter size >= 4096\n"),
        "{log}"
    );
    let root = fake_tracefs("dt_default");
    let out = dtmalloc(&root, &["--instance", "d"], None);
    assert!(out.status.success());
    let log = fs::read_to_string(root.join("fake-writes.log")).unwrap();
    assert!(log.contains("filter size >= 65536\n"), "{log}");
}

#[test]
fn bad_dwatch_malloc_min_exits_2() {
    // A value that is not UTF-8 is no number either.
    for bad in [&b"lots"[..], b"\xff", b"12\xff"] {
        let root = fake_tracefs("dt_badmin");
        let out = dtmalloc_env(&root, &[], Some(bad), None);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "dtmalloc: DWATCH_MALLOC_MIN must be a number\n"
        );
        assert!(!root.join("fake-writes.log").exists());
    }
}

/// `top`'s header is `COLUMNS` wide; a `COLUMNS` that is no width is said on stderr, and the
/// default width used.
#[test]
fn top_header_width_from_columns() {
    let header = |columns: Option<&[u8]>| {
        let root = fake_tracefs("dt_columns");
        let out = dtmalloc_env(&root, &["top", "--once"], None, columns);
        assert_success(&out);
        let text = String::from_utf8(out.stdout).unwrap();
        let width = text.lines().nth(1).unwrap().len();
        (width, String::from_utf8(out.stderr).unwrap())
    };
    let (w, err) = header(None);
    assert_eq!(w, 80);
    assert!(!err.contains("COLUMNS"), "{err}");
    assert_eq!(header(Some(b"100")).0, 100);
    for bad in [&b"\xff"[..], b"99999999999", b"0"] {
        let (w, err) = header(Some(bad));
        assert_eq!(w, 80, "{bad:?}");
        assert!(
            err.starts_with("dtmalloc: COLUMNS=")
                && err.contains(" is not a width from 1 to 65535; using 80\n"),
            "{err}"
        );
    }
}

#[test]
fn fake_tracefs_top() {
    let root = fake_tracefs("dt_top");
    let out = dtmalloc(&root, &["--instance", "top", "top", "--once"], Some("lots"));
    assert_success(&out);
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<_> = text.lines().collect();
    assert_eq!(lines[0], "Cataloging malloc(9) activity ...");
    assert!(lines[1].starts_with("dtmalloc:malloc, dtmalloc:free"));
    assert_eq!(
        &lines[2..],
        [
            "        NET(B)    BALANCE TYPE",
            "        131072          1 big",
            "             0          0 foo_bar"
        ]
    );
    // top applies no size threshold by default.
    let log = fs::read_to_string(root.join("fake-writes.log")).unwrap();
    assert!(
        log.contains("instances/top/events/dtmalloc/malloc/filter 0\n"),
        "{log}"
    );
    assert!(!root.join("instances/top").exists());
    // Periodic mode stops after --count refreshes (here: end of input).
    let root = fake_tracefs("dt_top2");
    let out = dtmalloc(&root, &["top", "--interval", "0.05", "--count", "1"], None);
    assert!(out.status.success());
    assert_eq!(top_reports(&out), 1);
}

#[test]
fn missing_tracepoints_and_busy_instance() {
    let root = tmpdir("dt_missing");
    let out = Command::new(env!("CARGO_BIN_EXE_dtmalloc"))
        .arg("--tracefs")
        .arg(&root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no dtmalloc tracepoints"), "{err}");
    let root = fake_tracefs("dt_busy");
    fs::create_dir(root.join("instances/taken")).unwrap();
    let out = dtmalloc(&root, &["--instance", "taken"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(root.join("instances/taken").exists());
    let out = dtmalloc(&root, &["--instance", "../x"], None);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn bad_numbers_are_usage_errors() {
    let root = fake_tracefs("dt_badnum");
    for args in [
        &["--duration", "1e30"][..],
        &["top", "-i", "1e30"][..],
        &["top", "--interval", "1e30", "--once"][..],
        &["-c", "0"][..],
        &["top", "-c", "0"][..],
    ] {
        let out = dtmalloc(&root, args, Some("0"));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(err.starts_with("dtmalloc: --"), "{err}");
        assert!(out.stdout.is_empty());
    }
    assert!(!root.join("fake-writes.log").exists());
    // Large but representable: accepted (no panic adding it to the clock).
    let out = dtmalloc(
        &root,
        &["--instance", "big", "--duration", "1e18"],
        Some("0"),
    );
    assert_success(&out);
    let out = dtmalloc(&root, &["--instance", "big2", "top", "-i", "1e18"], None);
    assert_success(&out);
    assert_eq!(top_reports(&out), 1);
}

#[test]
fn lost_event_totals_saturate() {
    let root = fake_tracefs("dt_lost");
    fs::write(
        root.join("trace_pipe"),
        "CPU:0 [LOST 18446744073709551615 EVENTS]\nCPU:1 [LOST 18446744073709551615 EVENTS]\n",
    )
    .unwrap();
    let out = dtmalloc(&root, &["--instance", "lost"], Some("0"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(
            "0 events, 18446744073709551615 lost (LOST EVENTS markers 18446744073709551615, overrun 3, dropped 2)"
        ),
        "{err}"
    );
    assert_eq!(
        parse_cpu_stats("overrun: 18446744073709551615\noverrun: 5\ndropped events: 1\n"),
        (u64::MAX, 1)
    );
}

/// What a kernel with the text form writes: the `probe` and `name` fields are text forms,
/// taken as they are (not escaped twice), a literal backslash-n and a newline told apart.
#[test]
fn text_form_fields_are_taken_as_they_are() {
    let e = ev("  insmod-1 [000] ..... 1.000000: malloc: probe=nl_row_0_0_0 size=8 zindx=0 name='nl\\012row 0 0 0'");
    assert_eq!(
        (e.type_probe.as_str(), e.name.as_str()),
        ("nl_row_0_0_0", "nl\\012row 0 0 0")
    );
    let e = ev("a-1 [000] ..... 1.0: free: probe=a\\134n size=8 zindx=0 name='a\\134n'");
    assert_eq!(
        (e.type_probe.as_str(), e.name.as_str()),
        ("a\\134n", "a\\134n")
    );
    let e = ev("a-1 [000] ..... 1.0: free: probe=a\\012 size=8 zindx=0 name='a\\012'");
    assert_eq!(format_event(&e), "1.0 a[1]: free(9) type a\\012 8 bytes");
}

/// What an older kernel writes: raw bytes in the fields (ESC, U+202E, bytes that are not
/// UTF-8, a backslash that starts no escape) and in the task name are put in text form.
#[test]
fn raw_fields_are_put_in_text_form() {
    let line: &[u8] = b"  \x1b[31mevil-5 [000] ..... 1.000000: malloc: probe=t\x1b[0m\xff\\n size=8 zindx=0 name='t\x1b[0m\xff\\n'";
    let e = match parse_line(line) {
        Ok(Record::Event(e)) => e,
        other => panic!("{other:?}"),
    };
    assert_eq!(e.comm, "\\033[31mevil");
    assert_eq!(e.type_probe, "t\\033[0m\\377\\134n");
    assert_eq!(e.name, "t\\033[0m\\377\\134n");
    assert_eq!(
        format_event(&e),
        "1.000000 \\033[31mevil[5]: malloc(9) type t\\033[0m\\377\\134n 8 bytes"
    );
    let e = ev(
        "a-1 [000] ..... 1.0: malloc: probe=rlo\u{202e}evil size=8 zindx=0 name='rlo\u{202e}evil'",
    );
    assert_eq!(e.type_probe, "rlo\\342\\200\\256evil");
    let mut top = Top::new();
    top.add(&Record::Event(e));
    assert_eq!(
        top.table(),
        "        NET(B)    BALANCE TYPE\n             8          1 rlo\\342\\200\\256evil\n"
    );
}

/// The pipe of a run: hostile names in text form (a kernel with the text form) and raw (an
/// older one), an unparsable line with an escape sequence.
const HOSTILE_PIPE: &[u8] =
    b"a-1 [000] ..... 1.0: malloc: probe=nl_row_0_0_0 size=8 zindx=0 name='nl\\012row 0 0 0'
a-1 [000] ..... 2.0: malloc: probe=esc\x1b[31mred size=16 zindx=1 name='esc\x1b[31mred'
a-1 [000] ..... 3.0: malloc: probe=a\\134n size=32 zindx=2 name='a\\134n'
a-1 [000] ..... 4.0: malloc: probe=a\\012 size=64 zindx=3 name='a\\012'
a-1 [000] ..... 5.0: free: probe=\xc3\xa0_la_carte size=1 zindx=0 name='\xc3\xa0 la carte'
garbage \x1b[2J\xe2\x80\xae line
";

/// Every output of a run, the events, `top` and the unparsed lines of `-v`, is printable
/// ASCII with each name in its text form.
#[test]
fn hostile_names_in_event_top_and_verbose_output() {
    let printable = |b: &[u8]| b.iter().all(|&c| c == b'\n' || (0x20..0x7f).contains(&c));
    let root = fake_tracefs("dt_hostile");
    fs::write(root.join("trace_pipe"), HOSTILE_PIPE).unwrap();
    let out = dtmalloc(&root, &["--instance", "h", "-v"], Some("0"));
    assert_success(&out);
    assert!(printable(&out.stdout), "{:?}", out.stdout);
    assert!(printable(&out.stderr), "{:?}", out.stderr);
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "1.0 a[1]: malloc(9) type nl_row_0_0_0 8 bytes\n\
         2.0 a[1]: malloc(9) type esc\\033[31mred 16 bytes\n\
         3.0 a[1]: malloc(9) type a\\134n 32 bytes\n\
         4.0 a[1]: malloc(9) type a\\012 64 bytes\n\
         5.0 a[1]: free(9) type \\303\\240_la_carte 1 byte\n"
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("dtmalloc: unrecognised trace line: no CPU column: garbage \\033[2J\\342\\200\\256 line\n"),
        "{err}"
    );
    let root = fake_tracefs("dt_hostile_top");
    fs::write(root.join("trace_pipe"), HOSTILE_PIPE).unwrap();
    let out = dtmalloc(&root, &["--instance", "ht", "top", "--once"], None);
    assert_success(&out);
    assert!(printable(&out.stdout), "{:?}", out.stdout);
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<&str> = text.lines().skip(3).collect();
    assert_eq!(
        rows,
        [
            "            64          1 a\\012",
            "            32          1 a\\134n",
            "            16          1 esc\\033[31mred",
            "             8          1 nl_row_0_0_0",
            "            -1         -1 \\303\\240_la_carte",
        ]
    );
}

#[test]
fn closed_stdout_pipe_exits_quietly() {
    let root = fake_tracefs("dt_epipe");
    let mut pipe = String::new();
    for i in 0..20000 {
        pipe.push_str(&format!(
            "insmod-123 [001] ..... {i}.000000: malloc: probe=foo_bar size=4096 zindx=12 name='foo bar'\n"
        ));
    }
    fs::write(root.join("trace_pipe"), pipe).unwrap();
    let out = run_until_stdout_closed(
        Command::new(env!("CARGO_BIN_EXE_dtmalloc"))
            .arg("--tracefs")
            .arg(&root)
            .args(["--fake-tracefs", "--instance", "ep", "--min", "0"]),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!root.join("instances/ep").exists());
}

/// `--type` adds the type's probes to the kernel's per-type selection
/// (`set_dtmalloc_probes`, appended to: other specs stay) before it enables
/// the events, and takes them out again (`!NAME`) when the watch ends; the
/// instance keeps its filter on the probe name.
#[test]
fn fake_tracefs_type_selects_the_probes() {
    let root = fake_tracefs("dt_select");
    fs::write(root.join("set_dtmalloc_probes"), "other:malloc\n").unwrap();
    let out = dtmalloc(
        &root,
        &["--instance", "s", "--type", "foo bar", "--min", "0"],
        None,
    );
    assert_success(&out);
    assert_eq!(
        fs::read_to_string(root.join("set_dtmalloc_probes")).unwrap(),
        "other:malloc\nfoo_bar\n!foo_bar\n"
    );
    let log = fs::read_to_string(root.join("fake-writes.log")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines[0], "set_dtmalloc_probes foo_bar");
    assert_eq!(
        lines[1],
        "instances/s/events/dtmalloc/malloc/filter probe == \"foo_bar\""
    );
    assert_eq!(lines.last(), Some(&"set_dtmalloc_probes !foo_bar"));
}

/// A watch of every type selects every type (`*`, both probes) while it runs: the selection
/// is shared by every consumer, and while another watch's `-t` (here `binder_work:malloc`)
/// is in it, only the selected types fire. Taken out again at the end; a `*` selected already
/// (by a user or another watch of every type) is left alone.
#[test]
fn fake_tracefs_every_type_selects_every_type() {
    let root = fake_tracefs("dt_select_all");
    fs::write(root.join("set_dtmalloc_probes"), "binder_work:malloc\n").unwrap();
    let out = dtmalloc(&root, &["--instance", "a", "--min", "0"], None);
    assert_success(&out);
    assert_eq!(
        fs::read_to_string(root.join("set_dtmalloc_probes")).unwrap(),
        "binder_work:malloc\n*\n!*\n"
    );
    let log = fs::read_to_string(root.join("fake-writes.log")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines[0], "set_dtmalloc_probes *");
    assert_eq!(lines.last(), Some(&"set_dtmalloc_probes !*"));

    let root = fake_tracefs("dt_select_all_top");
    fs::write(root.join("set_dtmalloc_probes"), "*:malloc\n*:free\n").unwrap();
    let out = dtmalloc(&root, &["--instance", "t", "top", "--once"], None);
    assert_success(&out);
    assert_eq!(
        fs::read_to_string(root.join("set_dtmalloc_probes")).unwrap(),
        "*:malloc\n*:free\n"
    );
}

/// `-l` prints the kernel's probe list as it is; without the file, one
/// clear line and status 1.
#[test]
fn list_probes() {
    let root = fake_tracefs("dt_list");
    let listing = "   ID   PROVIDER               MODULE                         FUNCTION NAME\n    1   dtmalloc                                        rust_kmalloc malloc\n";
    fs::write(root.join("dtmalloc_probes"), listing).unwrap();
    let out = dtmalloc(&root, &["-l"], None);
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap(), listing);
    let root = fake_tracefs("dt_nolist");
    let out = dtmalloc(&root, &["-l"], None);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.ends_with("dtmalloc_probes: No such file or directory (kernel without per-type dtmalloc probes?)\n"),
        "{err}"
    );
}

/// Every name is one type's spec, by its exact pattern: `:`, a leading `!` and the glob
/// characters are written `\NNN`, so that the selection has exactly that type; the spec is
/// taken out at the end. A type selected already by the same spec is left as it was.
#[test]
fn fake_tracefs_selection_by_exact_patterns() {
    for (name, spec) in [
        ("a:b", "a\\072b"),
        ("!foo", "\\041foo"),
        ("foo*", "foo\\052"),
        ("?", "\\077"),
        ("[a-z]x", "\\133a-z]x"),
    ] {
        let root = fake_tracefs("dt_exact");
        fs::write(root.join("set_dtmalloc_probes"), "foo:malloc\nfoo:free\n").unwrap();
        let out = dtmalloc(
            &root,
            &["--instance", "g", "--type", name, "--min", "0"],
            None,
        );
        assert_success(&out);
        assert_eq!(
            fs::read_to_string(root.join("set_dtmalloc_probes")).unwrap(),
            format!("foo:malloc\nfoo:free\n{spec}\n!{spec}\n"),
            "{name}"
        );
        let log = fs::read_to_string(root.join("fake-writes.log")).unwrap();
        assert!(
            log.contains(&format!("filter probe == \"{name}\"\n")),
            "{log}"
        );
    }
    let root = fake_tracefs("dt_owned");
    fs::write(
        root.join("set_dtmalloc_probes"),
        "foo_bar:malloc\nfoo_bar:free\n",
    )
    .unwrap();
    let out = dtmalloc(
        &root,
        &["--instance", "o", "--type", "foo bar", "--min", "0"],
        None,
    );
    assert!(out.status.success());
    assert_eq!(
        fs::read_to_string(root.join("set_dtmalloc_probes")).unwrap(),
        "foo_bar:malloc\nfoo_bar:free\n"
    );
}

/// `-t` takes a name as memstat shows it (a text form) or as its bytes, and selects exactly
/// that probe: the exact pattern in the selection, a filter on the text form, quoted with the
/// quote it does not hold, or a glob and an exact check when it holds both.
#[test]
fn fake_tracefs_type_of_any_name() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let cases: [(&[u8], &str, &str); 6] = [
        (
            b"nl\\012row 0 0 0",
            "nl_row_0_0_0",
            "probe == \"nl_row_0_0_0\"",
        ),
        (
            b"nl\nrow 0 0 0",
            "nl_row_0_0_0",
            "probe == \"nl_row_0_0_0\"",
        ),
        (
            b"esc\x1b[31mred",
            "esc\\033\\13331mred",
            "probe == \"esc\\033[31mred\"",
        ),
        (
            b"\xc3\xa0 la carte",
            "\\303\\240_la_carte",
            "probe == \"\\303\\240_la_carte\"",
        ),
        (b"a\\n", "a\\134n", "probe == \"a\\134n\""),
        (b"\"q'", "\"q'", "probe ~ \"?q'\""),
    ];
    for (name, spec, filter) in cases {
        let root = fake_tracefs("dt_any");
        fs::write(root.join("set_dtmalloc_probes"), "").unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_dtmalloc"))
            .arg("--tracefs")
            .arg(&root)
            .args(["--fake-tracefs", "--instance", "a", "--min", "0", "--type"])
            .arg(OsStr::from_bytes(name))
            .output()
            .unwrap();
        assert_success(&out);
        assert_eq!(
            fs::read_to_string(root.join("set_dtmalloc_probes")).unwrap(),
            format!("{spec}\n!{spec}\n"),
            "{name:?}"
        );
        let log = fs::read_to_string(root.join("fake-writes.log")).unwrap();
        assert!(
            log.contains(&format!("/malloc/filter {filter}\n")),
            "{name:?}: {log}"
        );
    }
}

/// With a probe name that holds both quotes the filter is a glob: the events of the other
/// probe names it lets through are dropped, those of the probe name are shown.
#[test]
fn fake_tracefs_type_with_both_quotes_is_exact() {
    let root = fake_tracefs("dt_quotes");
    fs::write(
        root.join("trace_pipe"),
        "a-1 [000] ..... 1.0: malloc: probe=a\"b'c size=8 zindx=0 name='a\"b'c'\n\
         a-1 [000] ..... 2.0: malloc: probe=aXb'c size=16 zindx=0 name='aXb'c'\n\
         a-1 [000] ..... 3.0: free: probe=a\"b'c size=8 zindx=0 name='a\"b'c'\n",
    )
    .unwrap();
    let out = dtmalloc(
        &root,
        &["--instance", "q", "--type", "a\"b'c", "--min", "0"],
        None,
    );
    assert_success(&out);
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "1.0 a[1]: malloc(9) type a\"b'c 8 bytes\n3.0 a[1]: free(9) type a\"b'c 8 bytes\n"
    );
    let log = fs::read_to_string(root.join("fake-writes.log")).unwrap();
    assert!(log.contains("/malloc/filter probe ~ \"a?b'c\"\n"), "{log}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("dtmalloc: 2 events,"), "{err}");
}

/// A name that no type can have is a usage error.
#[test]
fn type_names_of_no_type_are_usage_errors() {
    let root = fake_tracefs("dt_badtype");
    for (name, err) in [
        ("", "dtmalloc: --type '': a type's name is 1 to 31 bytes\n"),
        (
            "a_type_name_longer_than_31_bytes",
            "dtmalloc: --type 'a_type_name_longer_than_31_bytes': a type's name is 1 to 31 bytes\n",
        ),
    ] {
        let out = dtmalloc(&root, &["--type", name], Some("0"));
        assert_eq!(out.status.code(), Some(2), "{name}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), err);
    }
    assert!(!root.join("fake-writes.log").exists());
    // 31 bytes as text forms: 124 characters.
    let out = dtmalloc(
        &root,
        &["--instance", "l", "--type", &"\\377".repeat(31)],
        Some("0"),
    );
    assert_success(&out);
}

/// `-l` copies a list of text forms (a kernel with the text form) as it is, puts an older
/// kernel's raw bytes in text form, and refuses a list past its limit instead of cutting it.
#[test]
fn list_probes_bytes_and_limit() {
    let root = fake_tracefs("dt_list_bytes");
    let text_form =
        "    3   dtmalloc                                nl_row_0_0_0\\033[0m\\134n malloc\n";
    let mut listing = text_form.as_bytes().to_vec();
    listing.extend_from_slice(b"    5   dtmalloc  \xc3\xa0_la_carte\x1b[2J\\n free\n\xff");
    fs::write(root.join("dtmalloc_probes"), &listing).unwrap();
    let out = dtmalloc(&root, &["-l"], None);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("{text_form}    5   dtmalloc  \\303\\240_la_carte\\033[2J\\134n free\n\\377")
    );
    let f = fs::File::create(root.join("dtmalloc_probes")).unwrap();
    f.set_len((64 << 20) + 1).unwrap();
    drop(f);
    let out = dtmalloc(&root, &["-l"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.ends_with("dtmalloc_probes: larger than 67108864 bytes\n"),
        "{err}"
    );
}

/// A last line without its newline (the input ended in the middle of it) is counted as
/// unparsed, said so in the summary and shown by `-v`; a watch stopped by its count leaves
/// the lines after it uncounted.
#[test]
fn partial_last_line_is_counted() {
    let root = fake_tracefs("dt_partial");
    fs::write(
        root.join("trace_pipe"),
        "a-1 [000] ..... 1.0: malloc: probe=x size=8 zindx=0 name='x'\n\
         a-1 [000] ..... 2.0: malloc: probe=x size=16 zindx=0 name='x'\n\
         a-1 [000] ..... 3.0: malloc: probe=x size=32 zindx=0 name=\x1b",
    )
    .unwrap();
    let out = dtmalloc(&root, &["--instance", "p", "-v"], Some("0"));
    assert_success(&out);
    assert_eq!(out.stdout.iter().filter(|&&b| b == b'\n').count(), 2);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains(
            "dtmalloc: partial last line: a-1 [000] ..... 3.0: malloc: probe=x size=32 zindx=0 name=\\033\n"
        ),
        "{err}"
    );
    assert!(
        err.ends_with(
            "dtmalloc: 2 events, 5 lost (LOST EVENTS markers 0, overrun 3, dropped 2), 1 unparsed lines (the last one partial: no newline at its end)\n"
        ),
        "{err}"
    );
    // Stopped by its count after the first event: nothing is partial.
    let root = fake_tracefs("dt_partial_count");
    fs::write(
        root.join("trace_pipe"),
        "a-1 [000] ..... 1.0: malloc: probe=x size=8 zindx=0 name='x'\n\
         a-1 [000] ..... 2.0: malloc: probe=x size=16 zindx=0 name='x'\n\
         a-1 [000] ..... 3.0: malloc: probe=x",
    )
    .unwrap();
    let out = dtmalloc(&root, &["--instance", "c", "-c", "1"], Some("0"));
    assert_success(&out);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.ends_with(", 0 unparsed lines\n"), "{err}");
}

/// Two allocations of `foo bar` with their stacks (the second's event and stack with another
/// CPU's lines between them), a free, and an allocation of another type.
const STACK_PIPE: &str = "          insmod-123     [001] .....   12.345678: malloc: probe=foo_bar size=4096 zindx=12 name='foo bar'
          insmod-123     [001] .....   12.345680: <stack trace>
 => trace_event_raw_event_malloc+0x1c/0x90
 => kmalloc_mt+0x3a/0x80
 => trace_test_init+0x21/0x400 [malloc_type_trace_test]
 => do_one_initcall+0x5c/0x230
          insmod-123     [001] .....   12.345690: malloc: probe=foo_bar size=64 zindx=3 name='foo bar'
      kworker/0:1-9      [000] .....   12.345691: malloc: probe=other size=32 zindx=2 name='other'
      kworker/0:1-9      [000] .....   12.345692: <stack trace>
 => kmalloc_mt+0x3a/0x80
 => worker_thread+0x1/0x2
          insmod-123     [001] .....   12.345693: <stack trace>
 => kmalloc_mt+0x3a/0x80
 => trace_test_init+0x40/0x400 [malloc_type_trace_test]
 => do_one_initcall+0x5c/0x230
CPU:1 [LOST 2 EVENTS]
          insmod-123     [001] .....   12.345700: free: probe=foo_bar size=4096 zindx=0 name='foo bar'
";

#[test]
fn fake_tracefs_stacks() {
    let root = fake_tracefs("dt_stacks");
    fs::write(root.join("trace_pipe"), STACK_PIPE).unwrap();
    let (folded, svg, pprof) = (
        root.join("f.folded"),
        root.join("f.svg"),
        root.join("f.pb.gz"),
    );
    let out = dtmalloc(
        &root,
        &[
            "--instance",
            "st",
            "-t",
            "foo bar",
            "stacks",
            "--folded",
            folded.to_str().unwrap(),
            "--svg",
            svg.to_str().unwrap(),
            "--pprof",
            pprof.to_str().unwrap(),
        ],
        None,
    );
    assert_success(&out);
    let report = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        report,
        "2 stacks, 2 events, 4160 bytes\n\
         \n\
         foo_bar:malloc  4096 bytes in 1 event (98.5%)\n\
         \x20   kmalloc_mt+0x3a/0x80\n\
         \x20   trace_test_init+0x21/0x400 [malloc_type_trace_test]\n\
         \x20   do_one_initcall+0x5c/0x230\n\
         \n\
         foo_bar:malloc  64 bytes in 1 event (1.5%)\n\
         \x20   kmalloc_mt+0x3a/0x80\n\
         \x20   trace_test_init+0x40/0x400 [malloc_type_trace_test]\n\
         \x20   do_one_initcall+0x5c/0x230\n"
    );
    // The free, which a kernel would not have recorded without --frees, came without a stack.
    // Both stacks are one path of functions: one folded line.
    assert_eq!(
        fs::read_to_string(&folded).unwrap(),
        "foo_bar:malloc;do_one_initcall;trace_test_init [malloc_type_trace_test];kmalloc_mt 4160\n"
    );
    let svg = fs::read_to_string(&svg).unwrap();
    assert!(
        svg.contains(
            "<title>trace_test_init [malloc_type_trace_test] (4160 bytes, 100.00%)</title>"
        ),
        "{svg}"
    );
    assert!(svg.contains("dtmalloc stacks: foo_bar (malloc)"), "{svg}");
    assert_eq!(&fs::read(&pprof).unwrap()[..2], b"\x1f\x8b", "not gzip");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("dtmalloc: 2 events with a stack, 1 without"),
        "{err}"
    );
    let log = fs::read_to_string(root.join("fake-writes.log")).unwrap();
    assert_eq!(
        log,
        "instances/st/options/stacktrace 1\n\
         instances/st/options/sym-offset 1\n\
         instances/st/events/dtmalloc/malloc/filter probe == \"foo_bar\"\n\
         instances/st/events/dtmalloc/malloc/enable 1\n\
         instances/st/events/dtmalloc/malloc/enable 0\n"
    );
    assert!(!root.join("instances/st").exists(), "instance not removed");
}

#[test]
fn fake_tracefs_stacks_of_frees_folded_to_stdout_by_count() {
    let root = fake_tracefs("dt_stacks_frees");
    fs::write(root.join("trace_pipe"), STACK_PIPE).unwrap();
    let out = dtmalloc(
        &root,
        &[
            "--instance",
            "sf",
            "stacks",
            "--frees",
            "--folded",
            "-",
            "--weight",
            "count",
        ],
        None,
    );
    assert_success(&out);
    // The free's stack never came: counted, not shown.
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "foo_bar:malloc;do_one_initcall;trace_test_init [malloc_type_trace_test];kmalloc_mt 2\n\
         other:malloc;worker_thread;kmalloc_mt 1\n"
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("3 events with a stack, 1 without"), "{err}");
    assert!(
        err.contains("5 lost (LOST EVENTS markers 2, overrun 3, dropped 2)"),
        "{err}"
    );
    let log = fs::read_to_string(root.join("fake-writes.log")).unwrap();
    assert!(
        log.contains("instances/sf/events/dtmalloc/free/enable 1\n"),
        "{log}"
    );
}

#[test]
fn stacks_output_errors_name_the_file() {
    let root = fake_tracefs("dt_stacks_bad");
    fs::write(root.join("trace_pipe"), STACK_PIPE).unwrap();
    let bad = root.join("no/such/dir/x.svg");
    let out = dtmalloc(
        &root,
        &["--instance", "sb", "stacks", "--svg", bad.to_str().unwrap()],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("no/such/dir/x.svg: No such file or directory"),
        "{err}"
    );
    assert!(!root.join("instances/sb").exists(), "instance not removed");
    let out = dtmalloc(&root, &["stacks", "--weight", "pages"], None);
    assert_eq!(out.status.code(), Some(2));
}

/// A `dtmalloc_probes` listing of the types `probes`, as the kernel writes it.
fn probe_list(probes: &[&str]) -> String {
    let mut s = String::from(
        "   ID   PROVIDER               MODULE                         FUNCTION NAME\n",
    );
    for (i, p) in probes.iter().enumerate() {
        s.push_str(&format!("{:>5} dtmalloc {p:>40} malloc\n", 2 * i + 1));
        s.push_str(&format!("{:>5} dtmalloc {p:>40} free\n", 2 * i + 2));
    }
    s
}

/// `-t` names a registered type, as `dtrace` wants a probe description to match a probe:
/// a type that `dtmalloc_probes` does not list fails at once, with no instance made;
/// `-Z` waits for it. The header's FUNCTION is not a type.
#[test]
fn fake_tracefs_type_must_be_registered() {
    for t in ["foo bar", "FUNCTION"] {
        let root = fake_tracefs("dt_notype");
        fs::write(root.join("dtmalloc_probes"), probe_list(&["rust_kmalloc"])).unwrap();
        let out = dtmalloc(&root, &["--type", t, "--min", "0", "-c", "1"], None);
        assert_eq!(out.status.code(), Some(1));
        let p = t.replace(' ', "_");
        assert_eq!(
            String::from_utf8(out.stderr).unwrap(),
            format!(
                "dtmalloc: --type '{p}': no such type ({} has no probe {p}; -Z waits for one)\n",
                root.join("dtmalloc_probes").display()
            )
        );
        assert!(out.stdout.is_empty());
        assert!(!root.join("fake-writes.log").exists(), "tracefs written");
    }
    let root = fake_tracefs("dt_waittype");
    fs::write(root.join("dtmalloc_probes"), probe_list(&["rust_kmalloc"])).unwrap();
    let out = dtmalloc(
        &root,
        &["-Z", "--type", "foo bar", "--min", "0", "-c", "1"],
        None,
    );
    assert_success(&out);
    assert_eq!(out.stdout.iter().filter(|&&b| b == b'\n').count(), 1);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with("dtmalloc: no type foo_bar yet: waiting for one (-Z)\n"),
        "{err}"
    );
    let root = fake_tracefs("dt_hastype");
    fs::write(
        root.join("dtmalloc_probes"),
        probe_list(&["rust_kmalloc", "foo_bar"]),
    )
    .unwrap();
    let out = dtmalloc(&root, &["--type", "foo bar", "--min", "0", "-c", "1"], None);
    assert_success(&out);
}

/// Runs dtmalloc on a fake tracefs whose trace_pipe is a FIFO fed with `feed`, with `foo_bar`
/// in `dtmalloc_probes`; once the watch has run two seconds, takes `foo_bar` out of the list
/// and returns what dtmalloc did within ten more seconds (it is killed after that).
fn watch_while_type_goes_away(name: &str, args: &[&str], feed: &str) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let root = fake_tracefs(name);
    let pipe = root.join("trace_pipe");
    fs::remove_file(&pipe).unwrap();
    let st = Command::new("mkfifo").arg(&pipe).status().expect("mkfifo");
    assert!(st.success());
    // Read and write: the FIFO has a writer for as long as the test holds it, so the watch
    // never sees its end.
    let mut fifo = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&pipe)
        .unwrap();
    fs::write(
        root.join("dtmalloc_probes"),
        probe_list(&["foo_bar", "other"]),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_dtmalloc"))
        .arg("--tracefs")
        .arg(&root)
        .arg("--fake-tracefs")
        .args(args)
        .env_remove("DWATCH_MALLOC_MIN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run dtmalloc");
    fifo.write_all(feed.as_bytes()).unwrap();
    std::thread::sleep(Duration::from_secs(2));
    fs::write(root.join("dtmalloc_probes"), probe_list(&["other"])).unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    assert_eq!(fs::read_dir(root.join("instances")).unwrap().count(), 0);
    drop(fifo);
    out
}

/// A watched type that goes away ends the watch with an error, after the events the pipe
/// held and the output of a finished watch; with `-Z` the watch goes on.
#[test]
fn fake_tracefs_type_that_goes_away() {
    let out = watch_while_type_goes_away("dt_gone", &["--type", "foo bar", "--min", "0"], PIPE);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .filter(|l| l.contains("type foo_bar"))
            .count(),
        2
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("dtmalloc: --type 'foo_bar': the type went away (")
            && err.ends_with(
                " has no probe foo_bar any more); stopped after 2 events (-Z keeps watching)\n"
            ),
        "{err}"
    );

    let out = watch_while_type_goes_away(
        "dt_gone_stacks",
        &["--instance", "gs", "--type", "foo bar", "stacks"],
        STACK_PIPE,
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = String::from_utf8(out.stdout).unwrap();
    assert!(
        report.starts_with("2 stacks, 2 events, 4160 bytes\n"),
        "{report}"
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("the type went away"), "{err}");

    // -Z: the watch goes on past the type's departure, to its --duration.
    let out = watch_while_type_goes_away(
        "dt_gone_zero",
        &["-Z", "--type", "foo bar", "--min", "0", "-d", "4"],
        PIPE,
    );
    assert_success(&out);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(!err.contains("went away"), "{err}");
}

/// `--probes PATTERN` watches the types whose probe names match: the pattern is the spec added
/// to the kernel's selection (and taken out at the end), the instance's filter tests the size
/// only, and dtmalloc keeps the events of matching probe names.
#[test]
fn fake_tracefs_probes_pattern() {
    for (pattern, folded) in [
        (
            "f*",
            "foo_bar:malloc;do_one_initcall;trace_test_init [malloc_type_trace_test];kmalloc_mt 4160\n",
        ),
        (
            "[fo]*",
            "foo_bar:malloc;do_one_initcall;trace_test_init [malloc_type_trace_test];kmalloc_mt 4160\n\
             other:malloc;worker_thread;kmalloc_mt 32\n",
        ),
        ("\\146oo?bar", "foo_bar:malloc;do_one_initcall;trace_test_init [malloc_type_trace_test];kmalloc_mt 4160\n"),
    ] {
        let root = fake_tracefs("dt_probes");
        fs::write(root.join("trace_pipe"), STACK_PIPE).unwrap();
        fs::write(root.join("dtmalloc_probes"), probe_list(&["foo_bar", "other"])).unwrap();
        fs::write(root.join("set_dtmalloc_probes"), "").unwrap();
        let out = dtmalloc(
            &root,
            &["--instance", "p", "-p", pattern, "stacks", "--folded", "-"],
            None,
        );
        assert_success(&out);
        assert_eq!(String::from_utf8(out.stdout).unwrap(), folded, "{pattern}");
        // dtmalloc stacks records allocations only: the malloc probes are selected.
        assert_eq!(
            fs::read_to_string(root.join("set_dtmalloc_probes")).unwrap(),
            format!("{pattern}:malloc\n!{pattern}:malloc\n")
        );
        let log = fs::read_to_string(root.join("fake-writes.log")).unwrap();
        assert!(
            log.contains("instances/p/events/dtmalloc/malloc/filter 0\n"),
            "{log}"
        );
    }
    // The event view and top keep the matching types' events too.
    let root = fake_tracefs("dt_probes_events");
    let out = dtmalloc(&root, &["--instance", "pe", "-p", "b*", "--min", "0"], None);
    assert_success(&out);
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "13.000001 kworker/u8:2-my thing[77]: malloc(9) type big 131072 bytes\n"
    );
}

/// A pattern that breaks the rule, or that cannot be a spec of the selection (a raw `:`, a
/// leading `!`), and `--probes` beside `--type`, are usage errors, with nothing written.
#[test]
fn probes_pattern_usage_errors() {
    for (args, want) in [
        (&["-p", "a:b"][..], "--probes 'a:b': "),
        (&["-p", "!foo"][..], "--probes '!foo': "),
        (&["-p", "foo bar"][..], "--probes 'foo bar': "),
        (&["-p", "x\\9"][..], "--probes 'x\\9': "),
        (&["-p", ""][..], "--probes '': "),
        (&["-p", "foo", "-t", "foo"][..], "cannot be used with"),
    ] {
        let root = fake_tracefs("dt_probes_bad");
        let out = dtmalloc(&root, args, None);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!root.join("fake-writes.log").exists(), "tracefs written");
    }
}

/// A pattern must match a registered type, as a dtrace probe description must match a probe;
/// -Z waits for one. Matching types that go away do not end the watch.
#[test]
fn probes_pattern_must_match_and_outlives_its_types() {
    let root = fake_tracefs("dt_probes_none");
    fs::write(root.join("dtmalloc_probes"), probe_list(&["foo_bar"])).unwrap();
    let out = dtmalloc(&root, &["-p", "zz*", "--min", "0"], None);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        format!(
            "dtmalloc: --probes 'zz*': no type matches ({} has no probe that matches; -Z waits for one)\n",
            root.join("dtmalloc_probes").display()
        )
    );
    assert!(!root.join("fake-writes.log").exists(), "tracefs written");
    let out = dtmalloc(&root, &["-Z", "-p", "zz*", "--min", "0"], None);
    assert_success(&out);
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with("dtmalloc: no type matches zz* yet: waiting for one (-Z)\n"),
        "{err}"
    );

    let out = watch_while_type_goes_away(
        "dt_probes_gone",
        &["-p", "foo*", "--min", "0", "-d", "4"],
        PIPE,
    );
    assert_success(&out);
    assert_eq!(
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .filter(|l| l.contains("type foo_bar"))
            .count(),
        2
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(!err.contains("went away"), "{err}");
}

/// The probes a watch needs that the selection holds already for its spec are left alone; only
/// the others are added and taken out (the kernel keeps a probe mask per spec, so `!spec`
/// would end a user's `spec:malloc` too). `-v` says each selection write is an append.
#[test]
fn probes_selected_already_are_left_alone() {
    let root = fake_tracefs("dt_partial");
    fs::write(root.join("dtmalloc_probes"), probe_list(&["foo_bar"])).unwrap();
    fs::write(root.join("set_dtmalloc_probes"), "f*:malloc\n").unwrap();
    let out = dtmalloc(
        &root,
        &["-v", "--instance", "pp", "-p", "f*", "--min", "0"],
        None,
    );
    assert_success(&out);
    assert_eq!(
        fs::read_to_string(root.join("set_dtmalloc_probes")).unwrap(),
        "f*:malloc\nf*:free\n!f*:free\n"
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains(&format!(
            "dtmalloc: echo 'f*:free' >> {}\n",
            root.join("set_dtmalloc_probes").display()
        )),
        "{err}"
    );
    // Stacks of allocations need the malloc probe only, which is there.
    let root = fake_tracefs("dt_partial_stacks");
    fs::write(root.join("trace_pipe"), STACK_PIPE).unwrap();
    fs::write(root.join("set_dtmalloc_probes"), "foo_bar:malloc\n").unwrap();
    let out = dtmalloc(
        &root,
        &["--instance", "ps", "-t", "foo bar", "stacks"],
        None,
    );
    assert_success(&out);
    assert_eq!(
        fs::read_to_string(root.join("set_dtmalloc_probes")).unwrap(),
        "foo_bar:malloc\n"
    );
    // -v writes what a shell would run: a quote in a pattern is quoted.
    let root = fake_tracefs("dt_partial_quote");
    fs::write(root.join("set_dtmalloc_probes"), "").unwrap();
    let out = dtmalloc(
        &root,
        &["-v", "--instance", "pq", "-p", "x'y", "--min", "0"],
        None,
    );
    assert_success(&out);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("dtmalloc: echo 'x'\\''y' >> "), "{err}");
}

/// Events of types the watch does not keep, and their stacks, count nowhere: not as samples
/// and not as events without a stack.
#[test]
fn stacks_of_other_types_count_nowhere() {
    let root = fake_tracefs("dt_unstacked");
    fs::write(root.join("trace_pipe"), STACK_PIPE).unwrap();
    let out = dtmalloc(
        &root,
        &["--instance", "u", "-p", "o*", "stacks", "--folded", "-"],
        None,
    );
    assert_success(&out);
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "other:malloc;worker_thread;kmalloc_mt 32\n"
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("dtmalloc: 1 events with a stack, 0 without"),
        "{err}"
    );
}

/// `-l` with `-t` or `-p` lists the probes of those types only, as `dtrace -l -n` does; a bad
/// pattern is a usage error there too.
#[test]
fn list_probes_of_a_pattern() {
    let root = fake_tracefs("dt_list_pattern");
    fs::write(
        root.join("dtmalloc_probes"),
        probe_list(&["binder_proc", "binder_txn", "pipe"]),
    )
    .unwrap();
    let out = dtmalloc(&root, &["-l", "-p", "binder_*"], None);
    assert_success(&out);
    let want = probe_list(&["binder_proc", "binder_txn", "pipe"])
        .lines()
        .filter(|l| !l.contains("pipe"))
        .map(|l| format!("{l}\n"))
        .collect::<String>();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), want);
    let out = dtmalloc(&root, &["-l", "-t", "pipe"], None);
    assert_success(&out);
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 3);
    let out = dtmalloc(&root, &["-l", "-p", "a:b"], None);
    assert_eq!(out.status.code(), Some(2));
}

/// A pattern of bytes that are not UTF-8 gets the pattern rule's message, naming the byte; a
/// probe list that is there but cannot be read fails the watch rather than being skipped.
#[test]
fn probes_pattern_bytes_and_unreadable_lists() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let root = fake_tracefs("dt_probes_bytes");
    let out = Command::new(env!("CARGO_BIN_EXE_dtmalloc"))
        .arg("--tracefs")
        .arg(&root)
        .args(["--fake-tracefs", "-p"])
        .arg(OsStr::from_bytes(b"a\xff*"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with("dtmalloc: --probes 'a\\377*': byte 0xff at offset 1"),
        "{err}"
    );
    let root = fake_tracefs("dt_probes_dir");
    fs::create_dir(root.join("dtmalloc_probes")).unwrap();
    let out = dtmalloc(&root, &["-p", "zz*", "--min", "0"], None);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("dtmalloc_probes: "), "{err}");
    assert!(!root.join("fake-writes.log").exists(), "tracefs written");
}
