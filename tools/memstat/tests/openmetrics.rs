//! The Prometheus export: the exposition of the sample stream (golden), label
//! escaping, `promtool check metrics`, the textfile writer and the HTTP
//! exporter of `memstat --listen`.
mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use common::*;
use memstat::{openmetrics, stream, text, MemoryTypeList};

fn sample_list() -> MemoryTypeList {
    let mut l = MemoryTypeList::new();
    l.update_malloc_bytes(&sample_stream()).unwrap();
    l
}

fn exposition(l: &MemoryTypeList) -> String {
    let mut out = Vec::new();
    openmetrics::write_metrics(l, None, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// A reconciliation of two size classes: 64 bytes (1000 objects given out, 10 of them free in
/// the sheaves, 5 in KASAN's quarantine, 60000 bytes typed) and 128 (none in use, 128 typed: a KFENCE object), and 4096
/// bytes of the slab allocator's own.
fn sample_coverage() -> memstat::coverage::Coverage {
    let zones = memstat::ZoneSizes::new(vec![64, 128]).unwrap();
    let caches = [
        memstat::SlabCache {
            name: b"kmalloc-64".to_vec(),
            object_size: 64,
            active_objs: 1000,
            sheaf_objs: 10,
            quarantine_objs: 5,
            ..Default::default()
        },
        memstat::SlabCache {
            name: b"kmalloc-no-objext-64".to_vec(),
            object_size: 64,
            active_objs: 64,
            ..Default::default()
        },
    ];
    memstat::coverage::Coverage::new(&zones, &[60000, 128], &caches).unwrap()
}

#[test]
fn coverage_has_a_sample_per_size_class() {
    let text = openmetrics::exposition(&sample_list(), Some(&sample_coverage()));
    assert!(text.ends_with(&[
        "# HELP malloc_type_kmalloc_cache_bytes Bytes in use in the kmalloc caches of the size class (objects in use, not those free in the sheaves or KASAN's quarantine, times object size).",
        "# TYPE malloc_type_kmalloc_cache_bytes gauge",
        "malloc_type_kmalloc_cache_bytes{size=\"64\"} 63040",
        "malloc_type_kmalloc_cache_bytes{size=\"128\"} 0",
        "# HELP malloc_type_kmalloc_typed_bytes Bytes of kmalloc blocks of the size class charged to malloc types (vm.malloc_zone_memuse).",
        "# TYPE malloc_type_kmalloc_typed_bytes gauge",
        "malloc_type_kmalloc_typed_bytes{size=\"64\"} 60000",
        "malloc_type_kmalloc_typed_bytes{size=\"128\"} 128",
        "# HELP malloc_type_kmalloc_untyped_bytes Bytes in use in the kmalloc caches of the size class that no malloc type holds.",
        "# TYPE malloc_type_kmalloc_untyped_bytes gauge",
        "malloc_type_kmalloc_untyped_bytes{size=\"64\"} 3040",
        "malloc_type_kmalloc_untyped_bytes{size=\"128\"} -128",
        "# HELP malloc_type_kmalloc_sheaf_bytes Bytes of the free objects the sheaves of the kmalloc caches of the size class hold.",
        "# TYPE malloc_type_kmalloc_sheaf_bytes gauge",
        "malloc_type_kmalloc_sheaf_bytes{size=\"64\"} 640",
        "malloc_type_kmalloc_sheaf_bytes{size=\"128\"} 0",
        "# HELP malloc_type_kmalloc_quarantine_bytes Bytes of the freed objects of the kmalloc caches of the size class that KASAN's quarantine holds (0 without KASAN).",
        "# TYPE malloc_type_kmalloc_quarantine_bytes gauge",
        "malloc_type_kmalloc_quarantine_bytes{size=\"64\"} 320",
        "malloc_type_kmalloc_quarantine_bytes{size=\"128\"} 0",
        "# HELP malloc_type_slab_own_bytes Bytes in use in the slab allocator's own caches (kmalloc-no-objext-*).",
        "# TYPE malloc_type_slab_own_bytes gauge",
        "malloc_type_slab_own_bytes 4096",
        "",
    ].join("\n")), "{text}");
    // Without it, the malloc types' families only.
    assert!(!exposition(&sample_list()).contains("kmalloc_cache_bytes"));
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

/// The label values of the samples of `family` in an exposition, unescaped, one map per sample.
fn label_sets(text: &str, family: &str) -> Vec<Vec<(String, String)>> {
    let mut sets = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix(family).and_then(|r| r.strip_prefix('{')) else {
            continue;
        };
        let mut set = Vec::new();
        let mut chars = rest.chars();
        loop {
            let key: String = chars.by_ref().take_while(|&c| c != '=').collect();
            assert_eq!(chars.next(), Some('"'), "{line}");
            let mut value = String::new();
            loop {
                match chars.next().unwrap() {
                    '"' => break,
                    '\\' => match chars.next().unwrap() {
                        'n' => value.push('\n'),
                        c => value.push(c),
                    },
                    c => value.push(c),
                }
            }
            set.push((key, value));
            if chars.next() != Some(',') {
                break;
            }
        }
        sets.push(set);
    }
    sets
}

/// The `type` and `probe` labels hold the text forms of the name and of the probe name, and
/// the exposition escapes them (each backslash of a text form as `\\`).
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

/// Two names that differ only in bytes the exposition escapes (a line feed, a backslash and
/// `n`) give two label sets, also without the `id` label, each holding the text forms.
#[test]
fn names_differing_in_escapable_bytes_have_distinct_labels() {
    let names = ["a\n", "a\\n", "a\t", "a_"];
    let types: Vec<_> = names
        .iter()
        .zip(1..)
        .map(|(n, id)| ty(n, id, vec![cpu(8, 0, 1, 0, 1)]))
        .collect();
    let mut l = MemoryTypeList::new();
    l.update_malloc_bytes(&stream::write_stream(1, &types))
        .unwrap();
    let text = exposition(&l);
    let sets = label_sets(&text, "malloc_type_requests_total");
    assert_eq!(sets.len(), names.len(), "{text}");
    let value = |set: &[(String, String)], key: &str| {
        set.iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .unwrap()
    };
    for (set, name) in sets.iter().zip(names) {
        assert_eq!(value(set, "type"), text::name_text(name.as_bytes()));
        assert!(text::is_name_text(&value(set, "probe")), "{set:?}");
    }
    assert_eq!(value(&sets[0], "type"), "a\\012");
    assert_eq!(value(&sets[0], "probe"), "a_");
    assert_eq!(value(&sets[1], "type"), "a\\134n");
    assert_eq!(value(&sets[1], "probe"), "a\\134n");
    // Without the id, the label sets of the types are still pairwise different.
    let without_id: Vec<_> = sets
        .iter()
        .map(|s| {
            s.iter()
                .filter(|(k, _)| k != "id")
                .cloned()
                .collect::<Vec<_>>()
        })
        .collect();
    for (i, a) in without_id.iter().enumerate() {
        for b in &without_id[i + 1..] {
            assert_ne!(a, b);
        }
    }
}

/// `promtool check metrics` on the exposition: run when promtool is installed, and required
/// when `MEMSTAT_REQUIRE_PROMTOOL` is set (as `make check` sets it, having installed it).
#[test]
fn promtool_accepts_the_exposition() {
    let required = std::env::var_os("MEMSTAT_REQUIRE_PROMTOOL").is_some();
    // The sample, and names with bytes the text form and the exposition escape.
    let hostile: Vec<_> = ["a\"b\\c\nd", "e\u{1b}[2J", "\u{202e}rtl", "a\n", "a\\n"]
        .iter()
        .zip(1..)
        .map(|(n, id)| ty(n, id, vec![cpu(8, 0, 1, 0, 1)]))
        .collect();
    let mut hostile_list = MemoryTypeList::new();
    hostile_list
        .update_malloc_bytes(&stream::write_stream(1, &hostile))
        .unwrap();
    // And the reconciliation against the kmalloc caches, a class with more typed than cached.
    let coverage = sample_coverage();
    for (list, coverage) in [
        (sample_list(), None),
        (hostile_list, None),
        (sample_list(), Some(&coverage)),
    ] {
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
            .write_all(openmetrics::exposition(&list, coverage).as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "promtool: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn textfile_is_replaced_whole() {
    let d = tmpdir("openmetrics_textfile");
    let path = d.join("malloc_types.prom");
    std::fs::write(&path, "old\n").unwrap();
    openmetrics::write_textfile(&sample_list(), None, &path).unwrap();
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
    assert!(openmetrics::write_textfile(&sample_list(), None, &missing).is_err());
}

/// `--textfile` never writes through a symbolic link: not one at the temporary name the tool
/// once used (`.x.prom.tmp`), whose target stays as it was, nor one at the textfile's name,
/// which is replaced by a regular file. The file is readable by all (mode 0666 less the umask).
#[test]
fn textfile_does_not_write_through_links() {
    let f = stream_file("openmetrics_textfile_links");
    let d = f.parent().unwrap().to_path_buf();
    let victim = d.join("victim");
    std::fs::write(&victim, "victim\n").unwrap();
    std::os::unix::fs::symlink("victim", d.join(".x.prom.tmp")).unwrap();
    let tf = d.join("x.prom");
    let textfile = |what: &str| {
        let out = Command::new("sh")
            .arg("-c")
            .arg("umask 022; exec \"$0\" --textfile \"$1\" -f \"$2\"")
            .arg(env!("CARGO_BIN_EXE_memstat"))
            .arg(&tf)
            .arg(&f)
            .output()
            .unwrap();
        assert_success(&out);
        assert!(out.stdout.is_empty(), "{what}");
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "victim\n",
            "{what}"
        );
        let meta = std::fs::symlink_metadata(&tf).unwrap();
        assert!(meta.file_type().is_file(), "{what}: {meta:?}");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(meta.permissions().mode() & 0o777, 0o644, "{what}");
        assert_eq!(
            std::fs::read_to_string(&tf).unwrap(),
            exposition(&sample_list()),
            "{what}"
        );
    };
    textfile("a link at the old temporary name");
    assert_eq!(
        std::fs::read_link(d.join(".x.prom.tmp")).unwrap(),
        PathBuf::from("victim")
    );
    std::fs::remove_file(&tf).unwrap();
    std::os::unix::fs::symlink("victim", &tf).unwrap();
    textfile("a link at the textfile's name");
    // Nothing else was created.
    let mut names: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, [".x.prom.tmp", "sample.stream", "victim", "x.prom"]);
}

/// A textfile that cannot be written: a one-line error naming it, exit status 1, and no
/// temporary file left behind.
#[test]
fn textfile_failures_leave_nothing_behind() {
    let f = stream_file("openmetrics_textfile_fail");
    let d = f.parent().unwrap().to_path_buf();
    std::fs::create_dir(d.join("x.prom")).unwrap();
    for (tf, why) in [
        (d.join("x.prom"), "Is a directory"),
        (d.join("missing/x.prom"), "No such file or directory"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_memstat"))
            .arg("--textfile")
            .arg(&tf)
            .arg("-f")
            .arg(&f)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(
            String::from_utf8(out.stderr).unwrap(),
            format!("memstat: {}: {why}\n", tf.display())
        );
    }
    let mut names: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["sample.stream", "x.prom"]);
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
    // Port 0: the exporter picks a free port and names it.
    let mut child = Command::new(env!("CARGO_BIN_EXE_memstat"))
        .args(["--listen", "127.0.0.1:0", "-c", "2", "-f"])
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
    let addr = line
        .strip_prefix("memstat: serving http://")
        .and_then(|l| l.strip_suffix("/metrics\n"))
        .unwrap_or_else(|| panic!("{line}"))
        .to_string();
    assert!(
        addr.starts_with("127.0.0.1:") && !addr.ends_with(":0"),
        "{addr}"
    );
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
