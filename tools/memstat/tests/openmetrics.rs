//! The Prometheus export: the exposition of the sample stream (golden), label
//! escaping, `promtool check metrics`, the textfile writer and the HTTP
//! exporter of `memstat --listen`.
mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use common::*;
use memstat::{openmetrics, stream, MemoryTypeList};

fn sample_list() -> MemoryTypeList {
    let mut l = MemoryTypeList::new();
    l.update_malloc_bytes(&sample_stream()).unwrap();
    l
}

fn exposition(l: &MemoryTypeList) -> String {
    let mut out = Vec::new();
    openmetrics::write_metrics(l, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn sample_exposition_is_the_golden_one() {
    let got = exposition(&sample_list());
    let path = manifest_dir().join("tests/golden/sample.prom");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &got).unwrap();
    }
    let want = std::fs::read_to_string(&path).unwrap();
    assert_eq!(got, want);
}

#[test]
fn families_and_series() {
    let text = exposition(&sample_list());
    // One HELP and one TYPE line per family, then one sample per type.
    let families = text.lines().filter(|l| l.starts_with("# TYPE ")).count();
    assert_eq!(families, 10);
    let requests: Vec<_> = text
        .lines()
        .filter(|l| l.starts_with("malloc_type_requests_total{"))
        .collect();
    assert_eq!(requests.len(), 7);
    // Two types named "dup" stay two series, told apart by id.
    assert!(text.contains(
        "malloc_type_in_use_bytes{type=\"dup\",probe=\"dup\",id=\"6\",zone=\"0\",origin=\"vmlinux\",module=\"vmlinux\"} 8\n"
    ));
    assert!(text.contains(
        "malloc_type_in_use_bytes{type=\"dup\",probe=\"dup\",id=\"7\",zone=\"0\",origin=\"vmlinux\",module=\"vmlinux\"} 16384\n"
    ));
    // A module's type in zone 2, its probe name with `_` for the space, its module named.
    assert!(text.contains(
        "malloc_type_requests_total{type=\"foo bar\",probe=\"foo_bar\",id=\"4\",zone=\"2\",origin=\"module\",module=\"foo_mod\"} 3\n"
    ));
    // Failures for every type; a peak only for the type whose peak is tracked.
    assert!(text.contains(
        "malloc_type_failures_total{type=\"devbuf\",probe=\"devbuf\",id=\"1\",zone=\"0\",origin=\"vmlinux\",module=\"vmlinux\"} 2\n"
    ));
    let peaks: Vec<_> = text
        .lines()
        .filter(|l| l.starts_with("malloc_type_peak_bytes{"))
        .collect();
    assert_eq!(
        peaks,
        ["malloc_type_peak_bytes{type=\"temp\",probe=\"temp\",id=\"2\",zone=\"0\",origin=\"vmlinux\",module=\"vmlinux\"} 1016"]
    );
    // A racy negative balance is 0, as vmstat -m shows it.
    assert!(text.contains("malloc_type_in_use_allocations{type=\"racy\",probe=\"racy\",id=\"5\""));
    assert!(text.ends_with("malloc_types 7\n"));
}

/// A version 1 stream has no owner: no `module` label (rather than an empty one).
#[test]
fn version_1_streams_have_no_module_label() {
    let v2 = stream::parse_stream(&sample_stream()).unwrap();
    let mut l = MemoryTypeList::new();
    l.update_malloc_bytes(&stream::write_stream_version(1, v2.maxcpus, &v2.types))
        .unwrap();
    let text = exposition(&l);
    assert!(!text.contains("module="), "{text}");
    assert!(!text.contains("malloc_type_peak_bytes{"));
    assert!(text.contains(
        "malloc_type_failures_total{type=\"devbuf\",probe=\"devbuf\",id=\"1\",zone=\"0\",origin=\"vmlinux\"} 0\n"
    ));
}

#[test]
fn label_values_are_escaped() {
    let s = stream::write_stream(1, &[ty("a\"b\\c\nd", 1, vec![cpu(8, 0, 1, 0, 1)])]);
    let mut l = MemoryTypeList::new();
    l.update_malloc_bytes(&s).unwrap();
    let text = exposition(&l);
    assert!(
        // The names' text forms (`\134` for the backslash, `\012` for the newline), escaped.
        text.contains("{type=\"a\\\"b\\\\134c\\\\012d\",probe=\"a\\\"b\\\\134c_d\","),
        "{text}"
    );
    // Every sample is one line.
    assert!(text
        .lines()
        .all(|l| l.starts_with('#') || l.starts_with("malloc_type")));
}

/// `promtool check metrics` on the exposition: run when promtool is installed, and required
/// when `MEMSTAT_REQUIRE_PROMTOOL` is set (as `make check` sets it, having installed it).
#[test]
fn promtool_accepts_the_exposition() {
    let required = std::env::var_os("MEMSTAT_REQUIRE_PROMTOOL").is_some();
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) if !required => {
            eprintln!("promtool not run: {e}");
            return;
        }
        Err(e) => panic!("promtool: {e}"),
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(exposition(&sample_list()).as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn textfile_is_replaced_whole() {
    let d = tmpdir("openmetrics_textfile");
    let path = d.join("malloc_types.prom");
    std::fs::write(&path, "old\n").unwrap();
    openmetrics::write_textfile(&sample_list(), &path).unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        exposition(&sample_list())
    );
    // No temporary file is left behind.
    let names: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, [std::ffi::OsString::from("malloc_types.prom")]);
    // A directory that does not exist is an error, and nothing is created.
    let missing = d.join("no/such/dir/m.prom");
    assert!(openmetrics::write_textfile(&sample_list(), &missing).is_err());
}

fn stream_file(name: &str) -> PathBuf {
    let d = tmpdir(name);
    let p = d.join("sample.stream");
    std::fs::write(&p, sample_stream()).unwrap();
    p
}

#[test]
fn cli_prints_and_writes_the_metrics() {
    let f = stream_file("openmetrics_cli");
    let out = Command::new(env!("CARGO_BIN_EXE_memstat"))
        .args(["--prometheus", "-f"])
        .arg(&f)
        .args(["--sysctl", "/nonexistent"])
        .output()
        .unwrap();
    assert_success(&out);
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        exposition(&sample_list())
    );
    let tf = f.with_file_name("m.prom");
    let out = Command::new(env!("CARGO_BIN_EXE_memstat"))
        .arg("--textfile")
        .arg(&tf)
        .arg("-f")
        .arg(&f)
        .output()
        .unwrap();
    assert_success(&out);
    assert!(out.stdout.is_empty());
    assert_eq!(
        std::fs::read_to_string(&tf).unwrap(),
        exposition(&sample_list())
    );
    // The export is of malloc types only: with -z, or with --json, a usage error.
    for bad in [["--prometheus", "-z"], ["--prometheus", "--json"]] {
        let out = Command::new(env!("CARGO_BIN_EXE_memstat"))
            .args(bad)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
    }
}

/// One HTTP/1.0 request to `addr`; the whole response.
fn http_get(addr: &str, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut r = String::new();
    s.read_to_string(&mut r).unwrap();
    r
}

#[test]
fn http_exporter_serves_metrics() {
    let f = stream_file("openmetrics_http");
    // A free port: bound, then released for the exporter.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_memstat"))
        .args(["--listen", &addr, "-c", "2", "-f"])
        .arg(&f)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until it listens.
    let mut line = String::new();
    let mut err = child.stderr.take().unwrap();
    let mut b = [0u8; 1];
    while !line.ends_with('\n') {
        assert_eq!(err.read(&mut b).unwrap(), 1, "exporter exited: {line}");
        line.push(b[0] as char);
    }
    assert_eq!(line, format!("memstat: serving http://{addr}/metrics\n"));
    let r = http_get(&addr, "/nothing");
    assert!(
        r.starts_with("HTTP/1.1 404") || r.starts_with("HTTP/1.0 404"),
        "{r}"
    );
    let r = http_get(&addr, "/metrics");
    assert!(
        r.starts_with("HTTP/1.1 200") || r.starts_with("HTTP/1.0 200"),
        "{r}"
    );
    assert!(
        r.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8"),
        "{r}"
    );
    assert!(r.ends_with(&exposition(&sample_list())), "{r}");
    // A stream that cannot be read: 503 with the reason, and the exporter goes on.
    std::fs::write(&f, b"garbage").unwrap();
    let r = http_get(&addr, "/metrics");
    assert!(r.contains(" 503 "), "{r}");
    assert!(r.contains("memstat: "), "{r}");
    // -c 2: two scrapes, then it exits by itself.
    assert!(child.wait().unwrap().success());
}

#[test]
fn http_exporter_reports_a_bad_address() {
    let out = Command::new(env!("CARGO_BIN_EXE_memstat"))
        .args(["--listen", "not an address", "-f", "/nonexistent"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with("memstat: cannot listen on not an address: "),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1);
}
