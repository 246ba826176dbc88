// SPDX-License-Identifier: GPL-2.0

//! Malloc types benchmark module.
//!
//! At load, times allocate+free pairs of sizes 8, 64, 512, 4096, 16384 and 1 MiB through:
//!
//! - `kmalloc`: plain `kmalloc()`/`kfree()` in C (the baseline);
//! - `krealloc`: `krealloc(NULL, ..)`/`kfree()` in C, the path of every Rust allocation;
//! - `kbox`: `KBox`, the default Rust allocator (charged to "rust kmalloc");
//! - `typed`: [`MallocType::malloc`] / [`MallocType::free`] of a type;
//! - `typed_c`: `kmalloc_mt()`/`kfree_mt()` of a type, in C;
//! - `typed_box`: `Box<_, TypedAlloc<_>>` of a type;
//! - `floor`: `kmalloc()`/`kfree_size()` in C with FreeBSD's per-CPU counters and nothing
//!   else, the least a typed pair can cost;
//! - `attribution_floor`: the floor with a record of the type per block, stored inline after
//!   `kmalloc()` and taken off by the free, the least charging every kmalloc block to a type in
//!   the allocator's hooks can cost.
//!
//! and prints one line per measurement, for a script to collect:
//!
//! `malloc_type_bench: BENCH scenario=S variant=V size=N pairs=P ns=T round=R`
//!
//! The whole set is measured `rounds` times, the rounds one after the other, so that every
//! variant is measured at several points of the run (a slab refill falls in one of them, not in
//! all); the report takes the median, and shows the minimum and maximum.
//!
//! `scenario` is the module parameter, echoed: the guest script loads the module once per
//! tracing and profiling setup. Time comes from the monotonic clock; under `-icount shift=0` it
//! counts instructions, so ratios repeat exactly from run to run. The module then fails to load
//! on purpose (`ECANCELED`), so that it can be loaded again.
//!
//! Without `CONFIG_MALLOC_TYPES` (the bench-nomt kernel, the baseline of
//! `malloc_types.default_types=0`) only the untyped variants, `kmalloc`, `krealloc` and `kbox`,
//! are measured.

use core::hint::black_box;
#[cfg(CONFIG_MALLOC_TYPES)]
use kernel::{alloc::Box, malloc_type::TypedAlloc};
use kernel::{
    alloc::KBox,
    prelude::*,
    time::{Instant, Monotonic},
};

#[cfg(CONFIG_MALLOC_TYPES)]
kernel::malloc_define!(
    M_BENCH,
    "bench",
    "Allocations of the malloc types benchmark"
);

module! {
    type: Bench,
    name: "malloc_type_bench",
    authors: ["Seed b810a448 maintainers <maintainers@users.noreply.a-seed-b810a448.example>"],
    description: "Malloc types: cost of typed allocation",
    license: "GPL",
    params: {
        scenario: u32 {
            default: 0,
            description: "Number of the setup this run measures, echoed in the output",
        },
        pairs: u32 {
            default: 4000,
            description: "Allocate+free pairs per measurement of sizes up to 16 KiB (1 MiB: 1/20)",
        },
        rounds: u32 {
            default: 3,
            description: "Times each measurement is taken, interleaved with the others",
        },
    },
}

extern "C" {
    fn malloc_type_bench_kmalloc(size: usize, iters: u32) -> u64;
    fn malloc_type_bench_krealloc(size: usize, iters: u32) -> u64;
    #[cfg(CONFIG_MALLOC_TYPES)]
    fn malloc_type_bench_kmalloc_mt(size: usize, iters: u32) -> u64;
    #[cfg(CONFIG_MALLOC_TYPES)]
    fn malloc_type_bench_floor(size: usize, iters: u32) -> u64;
    #[cfg(CONFIG_MALLOC_TYPES)]
    fn malloc_type_bench_attribution_floor(size: usize, iters: u32) -> u64;
}

/// Runs `f` `n` times and returns the nanoseconds taken.
fn time(n: u32, mut f: impl FnMut() -> Result) -> Result<i64> {
    let start = Instant::<Monotonic>::now();
    for _ in 0..n {
        f()?;
    }
    Ok(start.elapsed().as_nanos())
}

/// Where a measurement line goes: the scenario and round it belongs to.
#[derive(Clone, Copy)]
struct Run {
    scenario: u32,
    round: u32,
}

fn report(run: Run, variant: &str, size: usize, n: u32, ns: i64) {
    let Run { scenario, round } = run;
    pr_info!(
        "BENCH scenario={scenario} variant={variant} size={size} pairs={n} ns={ns} round={round}\n"
    );
}

/// Measures the `Box` variants for one size, given as a constant.
macro_rules! bench_boxes {
    ($run:expr, $n:expr, $($size:literal),*) => {$(
        let ns = time($n, || {
            let b = KBox::<[u8; $size]>::new_uninit(GFP_KERNEL)?;
            black_box(&b);
            Ok(())
        })?;
        report($run, "kbox", $size, $n, ns);
        #[cfg(CONFIG_MALLOC_TYPES)]
        {
            let ns = time($n, || {
                let b = Box::<[u8; $size], TypedAlloc<M_BENCH>>::new_uninit(GFP_KERNEL)?;
                black_box(&b);
                Ok(())
            })?;
            report($run, "typed_box", $size, $n, ns);
        }
    )*};
}

/// Gives the slabs the kmalloc/kfree pairs will use the state every round measures them in: a
/// typed C pair stores a record of its type in its block, which gives the block's slab an
/// extension vector, and every `kfree()` of an object of such a slab reads the object's slot.
/// The typed C pairs of a round leave their slabs so; without this, the first round's
/// kmalloc/kfree pairs, measured before any typed pair, would run in slabs without a vector.
/// One pair a size (an allocate+free loop reuses the object the pair freed), then a few
/// kmalloc/kfree pairs, which take the first use of the size's per-CPU objects out of the
/// first round's figures.
#[cfg(CONFIG_MALLOC_TYPES)]
fn warm_up() {
    for size in [8usize, 64, 512, 4096, 16384, 1 << 20] {
        // SAFETY: The C loops have no requirements.
        unsafe {
            malloc_type_bench_kmalloc_mt(size, 1);
            malloc_type_bench_kmalloc(size, 100);
        }
    }
}

/// Takes every measurement once.
fn round(run: Run, small: u32, large: u32) -> Result {
    for size in [8usize, 64, 512, 4096, 16384, 1 << 20] {
        let n = if size > 16384 { large } else { small };
        // SAFETY: The C loop has no requirements.
        let ns = unsafe { malloc_type_bench_kmalloc(size, n) };
        if ns == 0 {
            return Err(ENOMEM);
        }
        report(run, "kmalloc", size, n, i64::try_from(ns)?);
        // SAFETY: The C loop has no requirements.
        let ns = unsafe { malloc_type_bench_krealloc(size, n) };
        if ns == 0 {
            return Err(ENOMEM);
        }
        report(run, "krealloc", size, n, i64::try_from(ns)?);
        #[cfg(CONFIG_MALLOC_TYPES)]
        typed(run, size, n)?;
    }
    bench_boxes!(run, small, 8, 64, 512, 4096, 16384);
    bench_boxes!(run, large, 1048576);
    Ok(())
}

/// Measures the typed variants of the raw API, in Rust and in C, and the floor, for one size.
#[cfg(CONFIG_MALLOC_TYPES)]
fn typed(run: Run, size: usize, n: u32) -> Result {
    let ns = time(n, || {
        let p = M_BENCH.malloc(size, GFP_KERNEL)?;
        black_box(p);
        // SAFETY: `p` came from `M_BENCH` and is not used again.
        unsafe { M_BENCH.free(p.as_ptr().cast()) };
        Ok(())
    })?;
    report(run, "typed", size, n, ns);
    // SAFETY: The C loop has no requirements.
    let ns = unsafe { malloc_type_bench_kmalloc_mt(size, n) };
    if ns == 0 {
        return Err(ENOMEM);
    }
    report(run, "typed_c", size, n, i64::try_from(ns)?);
    // SAFETY: The C loop has no requirements.
    let ns = unsafe { malloc_type_bench_floor(size, n) };
    if ns == 0 {
        return Err(ENOMEM);
    }
    report(run, "floor", size, n, i64::try_from(ns)?);
    // SAFETY: The C loop has no requirements.
    let ns = unsafe { malloc_type_bench_attribution_floor(size, n) };
    if ns == 0 {
        return Err(ENOMEM);
    }
    report(run, "attribution_floor", size, n, i64::try_from(ns)?);
    Ok(())
}

struct Bench;

impl kernel::Module for Bench {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let scenario = module_parameters::scenario.value();
        let small = module_parameters::pairs.value().max(20);
        let large = small / 20;
        #[cfg(CONFIG_MALLOC_TYPES)]
        warm_up();
        for round_no in 0..module_parameters::rounds.value().max(1) {
            round(
                Run {
                    scenario,
                    round: round_no,
                },
                small,
                large,
            )?;
        }
        pr_info!("BENCH scenario={scenario} done\n");
        Err(ECANCELED)
    }
}
