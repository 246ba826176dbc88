// SPDX-License-Identifier: GPL-2.0

//! Writes the streams the C test program (`tests/c/memstat_test.c`) reads, into the directory
//! given as the only argument:
//!
//! * `first.stream`: three malloc types over 4 CPUs: `devbuf` (vmlinux, peak tracked), a
//!   module's `foo bar` with a failure, and a name with a newline and a byte above ASCII;
//! * `second.stream`: the next read of the same kernel: `devbuf` changed, the module's type
//!   gone, a new type `pipe` added;
//! * `owner.stream`: `devbuf` alone, its owner now a module's;
//! * `truncated.stream`: `first.stream` cut inside its second type;
//! * `version99.stream`: `first.stream` claiming stream version 99.
//!
//! The values are the C test's expectations; keep the two in step.

use memstat_lib::stream::{write_stream, CpuStats, StreamType, FLAG_MODULE, FLAG_PEAK};
use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let dir = PathBuf::from(
        std::env::args_os()
            .nth(1)
            .expect("usage: capi_fixtures DIR"),
    );
    let devbuf = |extra: u64| StreamType {
        name: b"devbuf".to_vec(),
        id: 1,
        zone: 0,
        flags: FLAG_PEAK,
        peak: 12288,
        owner: b"vmlinux".to_vec(),
        stats: vec![
            // 3 x 4096 allocated, 1 freed, on CPU 0 (zone 11: 4096); 64 bytes on CPU 2.
            CpuStats::new(12288, 4096, 3, 1, 1 << 11),
            CpuStats::new(0, 0, 0, 0, 0),
            CpuStats::new(64 + extra, 0, 1 + extra / 64, 0, 1 << 3),
            CpuStats::new(0, 0, 0, 0, 0),
        ],
    };
    let mut module_type = StreamType {
        name: b"foo bar".to_vec(),
        id: 7,
        zone: 2,
        flags: FLAG_MODULE,
        peak: 0,
        owner: b"foo_mod".to_vec(),
        stats: vec![CpuStats::new(0, 0, 0, 0, 0); 4],
    };
    module_type.stats[1] = CpuStats::new(256, 128, 2, 1, 1 << 7);
    module_type.stats[1].numfailures = 1;
    let odd = StreamType {
        name: b"odd\nname\xff".to_vec(),
        id: 9,
        zone: 0,
        flags: 0,
        peak: 0,
        owner: b"vmlinux".to_vec(),
        stats: vec![CpuStats::new(8, 8, 1, 1, 1); 4],
    };
    let pipe = StreamType {
        name: b"pipe".to_vec(),
        id: 12,
        zone: 0,
        flags: 0,
        peak: 0,
        owner: b"vmlinux".to_vec(),
        stats: vec![CpuStats::new(1024, 0, 1, 0, 1 << 9); 4],
    };
    let first = write_stream(4, &[devbuf(0), module_type, odd.clone()]);
    std::fs::write(dir.join("first.stream"), &first)?;
    std::fs::write(
        dir.join("second.stream"),
        write_stream(4, &[devbuf(128), odd, pipe]),
    )?;
    std::fs::write(dir.join("truncated.stream"), &first[..first.len() - 100])?;
    let mut moved = devbuf(0);
    moved.owner = b"other_mod".to_vec();
    moved.flags |= FLAG_MODULE;
    std::fs::write(dir.join("owner.stream"), write_stream(4, &[moved]))?;
    let mut v99 = first.clone();
    v99[0..4].copy_from_slice(&99u32.to_ne_bytes());
    std::fs::write(dir.join("version99.stream"), v99)?;
    Ok(())
}
