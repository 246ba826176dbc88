// SPDX-License-Identifier: GPL-2.0
/*
 * The floors of the malloc types benchmark: allocate+free pairs of kmalloc()
 * with FreeBSD's per-CPU counters and nothing else, and the attribution
 * floor, the same with the record of a malloc type per block: what charging
 * every kmalloc block to a type in the slab allocator's hooks costs at the
 * least, the figure such charged paths are judged against. Built in whenever
 * the benchmark is built, for the record is stored as an allocation hook
 * would, with the slab allocator's own structures (mm/slab.h); the
 * benchmark module calls them.
 */
#include <linux/compiler.h>
#include <linux/export.h>
#include <linux/jump_label.h>
#include <linux/log2.h>
#include <linux/malloc_type.h>
#include <linux/percpu.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>

#include "malloc_type_bench_floor.h"
#include "slab.h"

/* The counters of the floor, and the key of its stand-in tracepoints (off). */
static DEFINE_PER_CPU(struct malloc_type_counters, floor_stats);
static DEFINE_STATIC_KEY_FALSE(floor_probe);

static noinline void floor_event(void)
{
	barrier();
}

/*
 * Records @mtp as the type of the kmalloc block @p, inline, as an allocation
 * hook with @p at hand would: the slot of its slab's extension vector, or
 * page->private of a large kmalloc. A slab without a vector yet gets one from
 * malloc_type_obj_set(), once.
 */
static __always_inline void floor_record(void *p, struct malloc_type *mtp)
{
	struct page *page = virt_to_page(p);
	struct slab *slab = page_slab(page);
	unsigned long obj_exts;

	if (!slab) {
		set_page_private(page, (unsigned long)mtp);
		return;
	}
	obj_exts = slab_obj_exts(slab);
	if (unlikely(!obj_exts)) {
		malloc_type_obj_set(p, mtp, GFP_KERNEL);
		return;
	}
	slab_malloc_type_xchg(slab->slab_cache, slab, obj_exts, p, mtp);
}

/*
 * @iters allocate+free pairs of @size bytes: kmalloc(), which charges the
 * block to no default type (alloc_hooks_typed()), with @record the record of
 * @mtp stored inline (floor_record()), the three per-CPU updates of a malloc
 * (mts_memalloced, mts_numallocs, mts_size) and a patched no-op for its
 * event; then the free, which returns the size it freed: with @record
 * kfree_size_mt(), which takes the record off with the lookup kfree() does
 * and gives the type to charge back, else kfree_size(); and the two updates
 * of a free (mts_memfreed, mts_numfrees) and its no-op. The size class is
 * found once, outside the loop, as if kmalloc's own lookup handed it over.
 * @record is a constant in each caller: the loop has no test of it.
 */
static __always_inline u64 floor_pairs(size_t size, unsigned int iters,
				       struct malloc_type *mtp, const bool record)
{
	size_t class = kmalloc_size_roundup(size);
	u64 bit = BIT_ULL(ilog2(class) & 63);
	u64 start = ktime_get_ns();
	unsigned int i;

	for (i = 0; i < iters; i++) {
		/* The floor charges the block itself: not to a default type. */
		void *p = alloc_hooks_typed(kmalloc_noprof(size, GFP_KERNEL));
		struct malloc_type *charged = mtp;
		size_t freed;

		if (!p)
			return 0;
		if (record)
			floor_record(p, mtp);
		this_cpu_add(floor_stats.mts_memalloced, class);
		this_cpu_inc(floor_stats.mts_numallocs);
		this_cpu_or(floor_stats.mts_size, bit);
		if (static_branch_unlikely(&floor_probe))
			floor_event();
		OPTIMIZER_HIDE_VAR(p);
		freed = record ? kfree_size_mt(p, &charged) : kfree_size(p);
		this_cpu_add(floor_stats.mts_memfreed, freed);
		this_cpu_inc(floor_stats.mts_numfrees);
		if (static_branch_unlikely(&floor_probe))
			floor_event();
		OPTIMIZER_HIDE_VAR(charged);
	}
	return ktime_get_ns() - start;
}

/**
 * malloc_type_bench_floor() - time the floor under a typed pair
 * @size: the bytes of each allocation.
 * @iters: the allocate+free pairs.
 *
 * kmalloc() and kfree_size() with FreeBSD's five per-CPU updates and a
 * no-op per event (floor_pairs()), and nothing else: no type to look at, no
 * statistics to find, no preemption toggle. What FreeBSD's counters cost at
 * the least, beside kmalloc()/kfree().
 *
 * Return: the nanoseconds taken, or 0 when kmalloc() failed.
 */
u64 malloc_type_bench_floor(size_t size, unsigned int iters)
{
	return floor_pairs(size, iters, NULL, false);
}
EXPORT_SYMBOL_FOR_MODULES(malloc_type_bench_floor, "malloc_type_bench");

/**
 * malloc_type_bench_floor_recorded() - time the attribution floor
 * @size: the bytes of each allocation.
 * @iters: the allocate+free pairs.
 * @mtp: a registered type whose blocks may be recorded (a module's, or one
 *	of vmlinux).
 *
 * The floor with the record of @mtp per block, stored after kmalloc() and
 * taken off by the free (floor_pairs()); beside malloc_type_bench_floor(),
 * what the record costs.
 *
 * Return: the nanoseconds taken, or 0 when kmalloc() failed.
 */
u64 malloc_type_bench_floor_recorded(size_t size, unsigned int iters,
				     struct malloc_type *mtp)
{
	return floor_pairs(size, iters, mtp, true);
}
EXPORT_SYMBOL_FOR_MODULES(malloc_type_bench_floor_recorded, "malloc_type_bench");
