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
//! - `typed_box`: `Box<_, TypedAlloc<_>>` of a type.
//!
//! and prints one line per measurement for `tools/testing/malloc_types/bench.sh`:
//!
//! `malloc_type_bench: BENCH scenario=S variant=V size=N pairs=P ns=T`
//!
//! `scenario` is the module parameter, echoed: the guest script loads the module once per
//! tracing and profiling setup. Time comes from the monotonic clock; under `-icount shift=0` it
//! counts instructions, so ratios repeat exactly from run to run. The module then fails to load
//! on purpose (`ECANCELED`), so that it can be loaded again.

use core::hint::black_box;
use kernel::{
    alloc::{Box, KBox},
    malloc_type::TypedAlloc,
    prelude::*,
    time::{Instant, Monotonic},
};

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
    },
}

extern "C" {
    fn malloc_type_bench_kmalloc(size: usize, iters: u32) -> u64;
    fn malloc_type_bench_krealloc(size: usize, iters: u32) -> u64;
    fn malloc_type_bench_kmalloc_mt(size: usize, iters: u32) -> u64;
}

/// Runs `f` `n` times and returns the nanoseconds taken.
fn time(n: u32, mut f: impl FnMut() -> Result) -> Result<i64> {
    let start = Instant::<Monotonic>::now();
    for _ in 0..n {
        f()?;
    }
    Ok(start.elapsed().as_nanos())
}

fn report(scenario: u32, variant: &str, size: usize, n: u32, ns: i64) {
    pr_info!("BENCH scenario={scenario} variant={variant} size={size} pairs={n} ns={ns}\n");
}

/// Measures the `Box` variants for one size, given as a constant.
macro_rules! bench_boxes {
    ($scenario:expr, $n:expr, $($size:literal),*) => {$(
        let ns = time($n, || {
            let b = KBox::<[u8; $size]>::new_uninit(GFP_KERNEL)?;
            black_box(&b);
            Ok(())
        })?;
        report($scenario, "kbox", $size, $n, ns);
        let ns = time($n, || {
            let b = Box::<[u8; $size], TypedAlloc<M_BENCH>>::new_uninit(GFP_KERNEL)?;
            black_box(&b);
            Ok(())
        })?;
        report($scenario, "typed_box", $size, $n, ns);
    )*};
}

struct Bench;

impl kernel::Module for Bench {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let scenario = module_parameters::scenario.value();
        let small = module_parameters::pairs.value().max(20);
        let large = small / 20;
        for size in [8usize, 64, 512, 4096, 16384, 1 << 20] {
            let n = if size > 16384 { large } else { small };
            // SAFETY: The C loop has no requirements.
            let ns = unsafe { malloc_type_bench_kmalloc(size, n) };
            if ns == 0 {
                return Err(ENOMEM);
            }
            report(scenario, "kmalloc", size, n, i64::try_from(ns)?);
            // SAFETY: The C loop has no requirements.
            let ns = unsafe { malloc_type_bench_krealloc(size, n) };
            if ns == 0 {
                return Err(ENOMEM);
            }
            report(scenario, "krealloc", size, n, i64::try_from(ns)?);
            let ns = time(n, || {
                let p = M_BENCH.malloc(size, GFP_KERNEL)?;
                black_box(p);
                // SAFETY: `p` came from `M_BENCH` with `size` bytes and is not used again.
                unsafe { M_BENCH.free(p.as_ptr().cast()) };
                Ok(())
            })?;
            report(scenario, "typed", size, n, ns);
            // SAFETY: The C loop has no requirements.
            let ns = unsafe { malloc_type_bench_kmalloc_mt(size, n) };
            if ns == 0 {
                return Err(ENOMEM);
            }
            report(scenario, "typed_c", size, n, i64::try_from(ns)?);
        }
        bench_boxes!(scenario, small, 8, 64, 512, 4096, 16384);
        bench_boxes!(scenario, large, 1048576);
        pr_info!("BENCH scenario={scenario} done\n");
        Err(ECANCELED)
    }
}
