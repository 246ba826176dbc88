//! Times the readers of malloc type statistics, for `make bench`: one read
//! of `/proc/malloc_stats`, one of `/proc/malloc_types`, and one update of
//! a [`memstat::MemoryTypeList`] (`sysctl_malloc`, as `memstat -m` does), each averaged over
//! repeated runs. Time is the monotonic clock: under QEMU's
//! `-icount shift=0` it counts instructions.
//!
//! Prints `BENCH reader=NAME types=N runs=R ns=T` lines.

use std::fs;
use std::hint::black_box;
use std::io::Read;
use std::process::ExitCode;
use std::time::Instant;

const RUNS: u32 = 50;

fn main() -> ExitCode {
    let stream = match fs::read("/proc/malloc_stats") {
        Ok(s) => s,
        Err(e) => {
            eprintln!("bench_reads: /proc/malloc_stats: {e}");
            return ExitCode::FAILURE;
        }
    };
    let types = match memstat::stream::parse_stream(&stream) {
        Ok(s) => s.types.len(),
        Err(e) => {
            eprintln!("bench_reads: /proc/malloc_stats: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Each file is read whole into a buffer kept from one run to the next, as a reader that
    // polls does: a fresh buffer each time would add the faults and zeroing of its pages (about
    // 0.3 ms at 1000 types) to the file's cost.
    let mut buf = Vec::new();
    for path in ["/proc/malloc_stats", "/proc/malloc_types"] {
        let start = Instant::now();
        for _ in 0..RUNS {
            buf.clear();
            match fs::File::open(path).and_then(|mut f| f.read_to_end(&mut buf)) {
                Ok(n) => {
                    black_box(n);
                }
                Err(e) => {
                    eprintln!("bench_reads: {path}: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
        let ns = start.elapsed().as_nanos() / u128::from(RUNS);
        println!("BENCH reader={path} types={types} runs={RUNS} ns={ns}");
    }
    let mut list = memstat::MemoryTypeList::new();
    let start = Instant::now();
    for _ in 0..RUNS {
        if let Err(e) = list.sysctl_malloc(
            std::path::Path::new(memstat::DEFAULT_PROC_PATH),
            std::path::Path::new("/proc/sys"),
        ) {
            eprintln!("bench_reads: memstat update: {e}");
            return ExitCode::FAILURE;
        }
    }
    let ns = start.elapsed().as_nanos() / u128::from(RUNS);
    println!("BENCH reader=memstat_update types={types} runs={RUNS} ns={ns}");
    ExitCode::SUCCESS
}
