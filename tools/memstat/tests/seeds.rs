//! Writes the fuzz seed corpus when MEMSTAT_FUZZ_CORPUS names a directory
//! (fuzz/run.sh does); otherwise only checks that the seeds parse as
//! intended.
mod common;

use common::vmcore;
use common::*;
use memstat::stream::{parse_stream, write_stream, write_stream_version};

include!("../../../rust/kernel/malloc_type/name_text.rs");
include!("../../../rust/kernel/malloc_type/patterns.rs");

fn seeds() -> Vec<(&'static str, Vec<u8>, bool)> {
    let mut v3 = sample_stream();
    v3[0] = 3;
    let v2 = parse_stream(&sample_stream()).unwrap();
    let hostile: Vec<_> = NAME_TEXTS
        .iter()
        .zip(1..)
        .map(|(&(name, _), id)| ty(name, id, vec![cpu(64, 0, 1, 0, 1 << 3)]))
        .collect();
    vec![
        ("sample", sample_stream(), true),
        (
            "version1",
            write_stream_version(1, v2.maxcpus, &v2.types),
            true,
        ),
        ("empty", write_stream(1, &[]), true),
        (
            "one",
            write_stream(1, &[ty("devbuf", 1, vec![cpu(4096, 0, 1, 0, 1 << 11)])]),
            true,
        ),
        ("hostile_names", write_stream(1, &hostile), true),
        (
            "same_id",
            write_stream(1, &[ty("a", 9, vec![]), ty("b", 9, vec![])]),
            false,
        ),
        ("truncated", sample_stream()[..200].to_vec(), false),
        ("version3", v3, false),
        ("zerocpus", write_stream(0, &[]), false),
    ]
}

/// Inputs of the `kernel_files` target (the two sysctls, a NUL, a slabinfo file) and whether
/// their reconciliation is built: the fixture of a kernel, a size named twice (refused), a
/// count of values that is not the count of classes (refused).
fn kernel_files_seeds() -> Vec<(&'static str, Vec<u8>, bool)> {
    let vm = fixture("sysctl-coverage/vm");
    let read = |name: &str| std::fs::read_to_string(vm.join(name)).unwrap();
    let mut kernel = format!("{}\n", read("malloc_zone_sizes").trim_end()).into_bytes();
    kernel.extend_from_slice(read("malloc_zone_memuse").as_bytes());
    kernel.push(0);
    kernel.extend_from_slice(&std::fs::read(fixture("slabinfo")).unwrap());
    vec![
        ("fixture", kernel, true),
        ("size_twice", b" 0 0\n0 0\0".to_vec(), false),
        ("count_mismatch", b"64 128\n1\0".to_vec(), false),
    ]
}

/// Cores for the `core` target: small registries of the synthetic kernel (zero pages take no
/// bytes of the file), and cores that claim 65536 CPU ids over memory of zeros, each stopped by
/// one of the reader's bounds.
fn core_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let all: Vec<u64> = (0..4).collect();
    let offsets: Vec<(u64, u64)> = all.iter().map(|&c| (c, c << 12)).collect();
    vec![
        (
            "registry",
            vmcore::registry_core(3, 4, Some(&all), &offsets),
        ),
        ("no-mask", vmcore::registry_core(2, 4, None, &offsets)),
        (
            "registry-legacy",
            vmcore::registry_core_with(vmcore::Record::Legacy, 3, 4, Some(&all), &offsets),
        ),
        (
            "registry-padded",
            vmcore::registry_core_with(
                vmcore::Record::Counters {
                    size: 104,
                    offsets: [88, 8, 56, 40, 72, 24],
                },
                3,
                4,
                Some(&all),
                &offsets,
            ),
        ),
        (
            "no-possible-cpu",
            vmcore::registry_core(2, 65536, Some(&[]), &[]),
        ),
        (
            "nr-cpu-ids",
            vmcore::registry_core(2, 65536, Some(&[0]), &[]),
        ),
        ("same-offsets", vmcore::registry_core(2, 65536, None, &[])),
        (
            "stream-cap",
            vmcore::registry_core(16, 65536, Some(&[0, 65535]), &[(65535, 64)]),
        ),
    ]
}

#[test]
fn core_seeds_read_as_intended() {
    let d = tmpdir("seeds-core");
    for (name, data) in core_seeds() {
        let p = d.join(name);
        std::fs::write(&p, &data).unwrap();
        let r = memstat::kvm::Core::open(&p, None).and_then(|c| c.read_malloc());
        assert_eq!(
            r.is_ok(),
            ["registry", "no-mask", "registry-legacy", "registry-padded"].contains(&name),
            "{name}: {r:?}"
        );
    }
}

/// Lines of trace_pipe: a kernel's with text forms, an older one's with raw bytes, a lost
/// events marker.
const TRACE_LINES: &[(&str, &[u8])] = &[
    (
        "malloc",
        b"          insmod-123     [001] .....   12.345678: malloc: probe=foo_bar size=4096 zindx=12 name='foo bar'",
    ),
    (
        "text_form",
        b"a-1 [000] ..... 1.0: free: probe=nl_row_0_0_0 size=8 zindx=0 name='nl\\012row 0 0 0'",
    ),
    (
        "raw",
        b"\x1b[31mevil-5 [000] d..1. 1.0: malloc: probe=esc\x1b[31m\xff size=8 zindx=-1 name='esc\x1b[31m\xff'",
    ),
    ("lost", b"CPU:3 [LOST 12 EVENTS]"),
];

/// A seed of the `stacks` target: two events with their stacks, on two CPUs, one stack after
/// the other CPU's event.
const STACK_SEED: &str = "\
          insmod-61      [000] .....     4.339309: malloc: probe=sample_buf size=4096 zindx=12 name='sample buf'
          insmod-62      [001] .....     4.339310: free: probe=other size=64 zindx=0 name='other'
          insmod-61      [000] .....     4.339315: <stack trace>
 => trace_event_raw_event_dtmalloc+0x10/0x20
 => kmalloc_mt+0x3a/0x80
 => init_one+0x21/0x400 [sample]
          insmod-62      [001] .....     4.339316: <stack trace>
 => kfree_mt+0x3a/0x80
CPU:1 [LOST 3 EVENTS]
";

/// A seed of the `names` target: the name's length, the name, then a pattern.
/// The reconciliation of a `kernel_files` input, read as the fuzz target reads it.
fn kernel_files_coverage(data: &[u8]) -> memstat::Result<memstat::coverage::Coverage> {
    let (sysctls, slabinfo) = data.split_at(data.iter().position(|&b| b == 0).unwrap());
    let caches = memstat::slab::parse_slabinfo(&slabinfo[1..])?;
    let text = std::str::from_utf8(sysctls).unwrap();
    let (sizes, memuse) = text.split_once('\n').unwrap();
    let zones = memstat::ZoneSizes::parse(sizes)?;
    let memuse = memstat::coverage::parse_zone_memuse(memuse)?;
    memstat::coverage::Coverage::new(&zones, &memuse, &caches)
}

fn names_seed(name: &[u8], pattern: &[u8]) -> Vec<u8> {
    let mut v = vec![u8::try_from(name.len()).unwrap()];
    v.extend_from_slice(name);
    v.extend_from_slice(pattern);
    v
}

#[test]
fn seeds_parse_as_intended() {
    for (name, data, ok) in seeds() {
        assert_eq!(parse_stream(&data).is_ok(), ok, "{name}");
    }
    for (name, line) in TRACE_LINES {
        assert!(memstat::trace::parse_line(line).is_ok(), "{name}");
    }
    for (name, data, ok) in kernel_files_seeds() {
        assert_eq!(kernel_files_coverage(&data).is_ok(), ok, "{name}");
    }
    let mut r = memstat::stacks::StackReader::new();
    for line in STACK_SEED.lines() {
        r.line(line.as_bytes());
    }
    assert_eq!(r.finish().len(), 2);
    let Some(dir) = std::env::var_os("MEMSTAT_FUZZ_CORPUS") else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    let d = dir.join("core");
    std::fs::create_dir_all(&d).unwrap();
    for (name, data) in core_seeds() {
        std::fs::write(d.join(name), data).unwrap();
    }
    let d = dir.join("stream");
    std::fs::create_dir_all(&d).unwrap();
    for (name, data, _) in seeds() {
        std::fs::write(d.join(name), data).unwrap();
    }
    let d = dir.join("trace_line");
    std::fs::create_dir_all(&d).unwrap();
    for (name, line) in TRACE_LINES {
        std::fs::write(d.join(name), line).unwrap();
    }
    let d = dir.join("kernel_files");
    std::fs::create_dir_all(&d).unwrap();
    for (name, data, _) in kernel_files_seeds() {
        std::fs::write(d.join(name), data).unwrap();
    }
    let d = dir.join("stacks");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("two_cpus"), STACK_SEED).unwrap();
    let d = dir.join("names");
    std::fs::create_dir_all(&d).unwrap();
    for (i, &(pattern, probe, _)) in PATTERN_MATCHES.iter().enumerate() {
        std::fs::write(d.join(format!("match{i}")), names_seed(probe, pattern)).unwrap();
    }
    for (i, &(name, _)) in NAME_TEXTS.iter().enumerate() {
        std::fs::write(d.join(format!("name{i}")), names_seed(name, b"*")).unwrap();
    }
    for (i, &(probe, exact)) in EXACT_PATTERNS.iter().enumerate() {
        std::fs::write(d.join(format!("exact{i}")), names_seed(probe, exact)).unwrap();
    }
    for (i, &pattern) in BAD_PATTERNS.iter().enumerate() {
        std::fs::write(d.join(format!("bad{i}")), names_seed(b"x", pattern)).unwrap();
    }
}
