//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use memstat::stream::{write_stream, CpuStats, StreamType};

pub mod vmcore;

/// A fresh directory under Cargo's per-target temporary directory, unique to
/// this call: tests of one binary run in parallel threads of one process.
pub fn tmpdir(name: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("{name}.{}.{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create temp dir");
    d
}

/// The crate's directory, read when the test runs: `cargo test` sets it. The compile-time
/// `env!` value would go stale when a shared target directory serves another checkout.
pub fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// Runs `cmd` with its stdout and stderr piped, reads the first 16 bytes it writes, closes
/// stdout (as `head` would), and returns what it then did. The command must write that much.
pub fn run_until_stdout_closed(cmd: &mut Command) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the command");
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 16];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    child.wait_with_output().unwrap()
}

/// Asserts that a command succeeded, showing its standard error when it did not.
pub fn assert_success(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Path of a checked-in fixture.
pub fn fixture(rel: &str) -> PathBuf {
    manifest_dir().join("tests/fixtures").join(rel)
}

pub fn cpu(memalloced: u64, memfreed: u64, numallocs: u64, numfrees: u64, size: u64) -> CpuStats {
    CpuStats::new(memalloced, memfreed, numallocs, numfrees, size)
}

pub fn ty(name: impl AsRef<[u8]>, id: u64, stats: Vec<CpuStats>) -> StreamType {
    StreamType {
        name: name.as_ref().to_vec(),
        id,
        zone: 0,
        flags: 0,
        peak: 0,
        owner: b"vmlinux".to_vec(),
        stats,
    }
}

/// The known sample: 4 CPUs, six types, including a duplicate name, a
/// type never used, a racy negative balance and a large allocation.
pub fn sample_types() -> Vec<StreamType> {
    vec![
        ty(
            "devbuf",
            1,
            vec![
                cpu(65536, 0, 1, 0, 1 << 12),
                cpu(4096, 2048, 3, 1, (1 << 9) | (1 << 10)),
                cpu(0, 0, 0, 0, 0),
                cpu(0, 1024, 0, 1, 0),
            ],
        ),
        ty(
            "temp",
            2,
            vec![cpu(1000, 1000, 10, 10, 1 << 3), cpu(16, 0, 1, 0, 1 << 1)],
        ),
        ty("unused", 3, vec![]),
        ty(
            "foo bar",
            4,
            vec![cpu(128 * 1024, 0, 2, 0, 0), cpu(256, 0, 1, 0, 1 << 7)],
        ),
        // Racy: more freed than allocated in the sum.
        ty(
            "racy",
            5,
            vec![cpu(100, 0, 1, 0, 1 << 5), cpu(0, 300, 0, 3, 0)],
        ),
        ty("dup", 6, vec![cpu(8, 0, 1, 0, 1)]),
        ty(
            "dup",
            7,
            vec![cpu(8192, 0, 1, 0, 1 << 12), cpu(8192, 0, 1, 0, 1 << 12)],
        ),
    ]
}

pub fn sample_stream() -> Vec<u8> {
    let mut types = sample_types();
    types[3].flags = memstat::stream::FLAG_MODULE;
    types[3].zone = 2;
    types[3].owner = b"foo_mod".to_vec();
    // Two failed allocations of devbuf on CPU 1, and the peak of temp tracked.
    types[0].stats[1].numfailures = 2;
    types[1].flags = memstat::stream::FLAG_PEAK;
    types[1].peak = 1016;
    write_stream(4, &types)
}
