// SPDX-License-Identifier: GPL-2.0

//! Malloc types benchmark: a module with 128 malloc types and nothing else.
//!
//! A benchmark of the readers of the statistics loads some of the modules
//! `malloc_type_bench_types_N` (N = 1, 2, 4, ..., 512) so that exactly 10,
//! 100 and 1000 types are registered while it times them. The types are
//! defined by `bench_types!` (the included file).

use kernel::prelude::*;

include!("malloc_type_bench_types.inc");

bench_types!(128; [0 1]; [0 1 2 3 4 5 6 7]; [0 1 2 3 4 5 6 7]);

module! {
    type: BenchTypes,
    name: "malloc_type_bench_types_128",
    authors: ["Seed b810a448 maintainers <maintainers@users.noreply.a-seed-b810a448.example>"],
    description: "Malloc types: 128 types for the reader benchmark",
    license: "GPL",
}

struct BenchTypes;

impl kernel::Module for BenchTypes {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        Ok(BenchTypes)
    }
}
