// SPDX-License-Identifier: GPL-2.0
/*
 * The C baseline of the malloc types benchmark: allocate+free pairs of
 * plain kmalloc()/kfree(), timed with the monotonic clock (which counts
 * instructions when the guest runs with -icount shift=0). With
 * CONFIG_MEM_ALLOC_PROFILING the same loop measures allocation profiling,
 * enabled or not with the vm.mem_profiling sysctl. Beside them, the C typed
 * pair kmalloc_mt()/kfree_mt() of the type "bench c"; the floors are built
 * in (mm/malloc_type_bench_floor.c).
 */
#include <linux/compiler.h>
#include <linux/malloc_type.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>

#include "malloc_type_bench_floor.h"

static MALLOC_DEFINE(M_BENCH_C, "bench c", "Benchmark: the C typed pair");

u64 malloc_type_bench_kmalloc(size_t size, unsigned int iters);
u64 malloc_type_bench_krealloc(size_t size, unsigned int iters);
u64 malloc_type_bench_kmalloc_mt(size_t size, unsigned int iters);
u64 malloc_type_bench_attribution_floor(size_t size, unsigned int iters);

/* Returns the nanoseconds taken by @iters pairs, or 0 when kmalloc failed. */
u64 malloc_type_bench_kmalloc(size_t size, unsigned int iters)
{
	u64 start = ktime_get_ns();
	unsigned int i;

	for (i = 0; i < iters; i++) {
		void *p = kmalloc(size, GFP_KERNEL);

		if (!p)
			return 0;
		OPTIMIZER_HIDE_VAR(p);
		kfree(p);
	}
	return ktime_get_ns() - start;
}

/*
 * The same with krealloc(NULL, ...), the path every Rust allocation takes
 * (krealloc_node_align() through a helper), and kfree().
 */
u64 malloc_type_bench_krealloc(size_t size, unsigned int iters)
{
	u64 start = ktime_get_ns();
	unsigned int i;

	for (i = 0; i < iters; i++) {
		void *p = krealloc(NULL, size, GFP_KERNEL);

		if (!p)
			return 0;
		OPTIMIZER_HIDE_VAR(p);
		kfree(p);
	}
	return ktime_get_ns() - start;
}

/* The same with the C typed pair, kmalloc_mt() and kfree_mt(). */
u64 malloc_type_bench_kmalloc_mt(size_t size, unsigned int iters)
{
	u64 start = ktime_get_ns();
	unsigned int i;

	for (i = 0; i < iters; i++) {
		void *p = kmalloc_mt(size, GFP_KERNEL, M_BENCH_C);

		if (!p)
			return 0;
		OPTIMIZER_HIDE_VAR(p);
		kfree_mt(p, M_BENCH_C);
	}
	return ktime_get_ns() - start;
}

#ifdef CONFIG_MALLOC_TYPES
/* The attribution floor with the records of the type "bench c". */
u64 malloc_type_bench_attribution_floor(size_t size, unsigned int iters)
{
	return malloc_type_bench_floor_recorded(size, iters, M_BENCH_C);
}
#endif
