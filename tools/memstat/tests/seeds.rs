//! Writes the fuzz seed corpus when MEMSTAT_FUZZ_CORPUS names a directory
//! (fuzz/run.sh does); otherwise only checks that the seeds parse as
//! intended.
mod common;

use common::vmcore;
use common::*;
use memstat::stream::{parse_stream, write_stream, write_stream_version};

fn seeds() -> Vec<(&'static str, Vec<u8>, bool)> {
    let mut v3 = sample_stream();
    v3[0] = 3;
    let v2 = parse_stream(&sample_stream()).unwrap();
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
        ("truncated", sample_stream()[..200].to_vec(), false),
        ("version3", v3, false),
        ("zerocpus", write_stream(0, &[]), false),
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
            ["registry", "no-mask"].contains(&name),
            "{name}: {r:?}"
        );
    }
}

#[test]
fn seeds_parse_as_intended() {
    for (name, data, ok) in seeds() {
        assert_eq!(parse_stream(&data).is_ok(), ok, "{name}");
    }
    if let Some(dir) = std::env::var_os("MEMSTAT_FUZZ_CORPUS") {
        let dir = std::path::PathBuf::from(dir);
        let d = dir.join("core");
        std::fs::create_dir_all(&d).unwrap();
        for (name, data) in core_seeds() {
            std::fs::write(d.join(name), data).unwrap();
        }
        for (target, lines) in [("stream", None), ("trace_line", Some(()))] {
            let d = dir.join(target);
            std::fs::create_dir_all(&d).unwrap();
            if lines.is_none() {
                for (name, data, _) in seeds() {
                    std::fs::write(d.join(name), data).unwrap();
                }
            } else {
                std::fs::write(
                    d.join("malloc"),
                    "          insmod-123     [001] .....   12.345678: malloc: probe=foo_bar size=4096 zindx=12 name='foo bar'",
                )
                .unwrap();
                std::fs::write(d.join("lost"), "CPU:3 [LOST 12 EVENTS]").unwrap();
            }
        }
    }
}
