// SPDX-License-Identifier: GPL-2.0
/*
 * The C baseline of the malloc types benchmark: allocate+free pairs of
 * plain kmalloc()/kfree(), timed with the monotonic clock (which counts
 * instructions when the guest runs with -icount shift=0). With
 * CONFIG_MEM_ALLOC_PROFILING the same loop measures allocation profiling,
 * enabled or not with the vm.mem_profiling sysctl. Beside them, the C typed
 * pair kmalloc_mt()/kfree_mt() of the type "bench c", and the floor under
 * any typed pair: kmalloc()/kfree_size() with FreeBSD's per-CPU counters and
 * nothing else.
 */
#include <linux/compiler.h>
#include <linux/jump_label.h>
#include <linux/log2.h>
#include <linux/malloc_type.h>
#include <linux/percpu.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>

MALLOC_DEFINE(M_BENCH_C, "bench c", "Benchmark: the C typed pair");

u64 malloc_type_bench_kmalloc(size_t size, unsigned int iters);
u64 malloc_type_bench_krealloc(size_t size, unsigned int iters);
u64 malloc_type_bench_kmalloc_mt(size_t size, unsigned int iters);
u64 malloc_type_bench_floor(size_t size, unsigned int iters);

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

/* The counters of the floor, and the key of its stand-in tracepoints (off). */
static DEFINE_PER_CPU(struct malloc_type_stats, bench_floor_stats);
static DEFINE_STATIC_KEY_FALSE(bench_floor_probe);

static noinline void bench_floor_event(void)
{
	barrier();
}

/*
 * The floor under a typed pair: kmalloc() and kfree_size() (the free that
 * returns the size it freed), the five per-CPU updates of FreeBSD's
 * accounting, each one this_cpu_*() instruction (malloc: mts_memalloced,
 * mts_numallocs, mts_size; free: mts_memfreed, mts_numfrees), and a patched
 * no-op per event, as a tracepoint that is off. Nothing else: no type to
 * look at, no statistics to find, no preemption toggle, and the size class
 * found once, outside the loop, as if kmalloc's own lookup handed it over.
 * What FreeBSD's counters cost at the least, beside kmalloc()/kfree().
 */
u64 malloc_type_bench_floor(size_t size, unsigned int iters)
{
	size_t class = kmalloc_size_roundup(size);
	u64 bit = BIT_ULL(ilog2(class) & 63);
	u64 start = ktime_get_ns();
	unsigned int i;

	for (i = 0; i < iters; i++) {
		void *p = kmalloc(size, GFP_KERNEL);

		if (!p)
			return 0;
		this_cpu_add(bench_floor_stats.mts_memalloced, class);
		this_cpu_inc(bench_floor_stats.mts_numallocs);
		this_cpu_or(bench_floor_stats.mts_size, bit);
		if (static_branch_unlikely(&bench_floor_probe))
			bench_floor_event();
		OPTIMIZER_HIDE_VAR(p);
		this_cpu_add(bench_floor_stats.mts_memfreed, kfree_size(p));
		this_cpu_inc(bench_floor_stats.mts_numfrees);
		if (static_branch_unlikely(&bench_floor_probe))
			bench_floor_event();
	}
	return ktime_get_ns() - start;
}
