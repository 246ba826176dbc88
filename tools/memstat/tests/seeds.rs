//! Writes the fuzz seed corpus when MEMSTAT_FUZZ_CORPUS names a directory
//! (fuzz/run.sh does); otherwise only checks that the seeds parse as
//! intended.
mod common;

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

#[test]
fn seeds_parse_as_intended() {
    for (name, data, ok) in seeds() {
        assert_eq!(parse_stream(&data).is_ok(), ok, "{name}");
    }
    if let Some(dir) = std::env::var_os("MEMSTAT_FUZZ_CORPUS") {
        let dir = std::path::PathBuf::from(dir);
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
