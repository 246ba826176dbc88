//! Times module loads while readers poll `/proc/malloc_stats`, for `make bench`: a load and
//! unload of a module of malloc types takes the registry mutex, which a reader of the stream
//! holds only while it takes the set of types, not while it fills the stream.
//!
//! `bench_load MODULE.ko RUNS READERS...`: for each number of readers, starts that many threads
//! that read the stream whole again and again, then loads and unloads MODULE RUNS times
//! (`finit_module()`, `delete_module()`), each pair timed. Time is the monotonic clock: under
//! QEMU's `-icount shift=0` it counts instructions (of both CPUs: a reader that runs beside the
//! loader makes its time pass faster, blocking or not).
//!
//! Prints `BENCH load readers=N runs=R median_ns=T max_ns=T reads=K read_ns=T` lines: the
//! median and the longest load+unload pair, and how many stream reads the readers made in the
//! meantime and their mean time.

use std::ffi::CString;
use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Instant;

/// Loads the module in `image` and unloads it by `name`.
fn load_unload(image: &File, name: &CString) -> Result<(), String> {
    // SAFETY: finit_module() takes a file descriptor, a NUL-terminated parameter string and
    // flags; `image` stays open for the call.
    let r = unsafe { libc::syscall(libc::SYS_finit_module, image.as_raw_fd(), c"".as_ptr(), 0) };
    if r != 0 {
        return Err(format!("finit_module: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: delete_module() takes a NUL-terminated module name and flags.
    let r = unsafe { libc::syscall(libc::SYS_delete_module, name.as_ptr(), libc::O_NONBLOCK) };
    if r != 0 {
        return Err(format!(
            "delete_module: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// One measurement: `runs` load+unload pairs while `readers` threads read the stream.
fn measure(path: &str, name: &CString, runs: usize, readers: usize) -> Result<String, String> {
    let image = File::open(path).map_err(|e| format!("{path}: {e}"))?;
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let read_ns = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..readers)
        .map(|_| {
            let (stop, reads, read_ns) = (stop.clone(), reads.clone(), read_ns.clone());
            thread::spawn(move || {
                let mut buf = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let start = Instant::now();
                    buf.clear();
                    if File::open("/proc/malloc_stats")
                        .and_then(|mut f| f.read_to_end(&mut buf))
                        .is_err()
                    {
                        break;
                    }
                    let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
                    read_ns.fetch_add(ns, Ordering::Relaxed);
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    // The readers under way before the first load.
    while readers > 0 && reads.load(Ordering::Relaxed) == 0 {
        thread::yield_now();
    }
    let mut times = Vec::with_capacity(runs);
    let mut result = Ok(());
    for _ in 0..runs {
        let start = Instant::now();
        if let Err(e) = load_unload(&image, name) {
            result = Err(e);
            break;
        }
        times.push(start.elapsed().as_nanos());
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    result?;
    times.sort_unstable();
    let n = reads.load(Ordering::Relaxed);
    let mean = read_ns.load(Ordering::Relaxed).checked_div(n).unwrap_or(0);
    Ok(format!(
        "BENCH load readers={readers} runs={runs} median_ns={} max_ns={} reads={n} read_ns={mean}",
        times[times.len() / 2],
        times[times.len() - 1]
    ))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let usage = || {
        eprintln!("usage: bench_load MODULE.ko RUNS READERS...");
        ExitCode::from(2)
    };
    if args.len() < 4 {
        return usage();
    }
    let Ok(runs) = args[2].parse::<usize>() else {
        return usage();
    };
    let name = std::path::Path::new(&args[1])
        .file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| CString::new(s).ok());
    let Some(name) = name.filter(|_| runs > 0) else {
        return usage();
    };
    for r in &args[3..] {
        let Ok(readers) = r.parse::<usize>() else {
            return usage();
        };
        match measure(&args[1], &name, runs, readers) {
            Ok(line) => println!("{line}"),
            Err(e) => {
                eprintln!("bench_load: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
