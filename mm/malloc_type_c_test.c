// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the C API of malloc types (include/linux/malloc_type.h):
 * MALLOC_DEFINE() and the kmalloc-family functions with a type, against the
 * exact per-CPU counters of their types.
 *
 * The types are defined here, in vmlinux, so they are registered at boot,
 * before the tests run. Each test uses types no other code allocates with,
 * so exact deltas hold while the rest of the kernel runs.
 */

#include <kunit/test.h>
#include <linux/cpumask.h>
#include <linux/kfence.h>
#include <linux/malloc_type.h>
#include <linux/mm.h>
#include <linux/percpu.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>

#include "malloc_type_c_test.h"
#include "slab.h"

static MALLOC_DEFINE(M_KUNIT_C, "kunit c api", "KUnit: the C API of malloc types");
/* FreeBSD's idiom for a type of one file. */
static MALLOC_DEFINE(M_KUNIT_C_STATIC, "kunit c static", "KUnit: a static type");
static MALLOC_DEFINE(M_KUNIT_C_REALLOC, "kunit c realloc", "KUnit: krealloc_mt()");
static MALLOC_DEFINE(M_KUNIT_C_REALLOCF, "kunit c reallocf", "KUnit: kreallocf_mt()");
static MALLOC_DEFINE(M_KUNIT_C_ZFREE, "kunit c zfree", "KUnit: kfree_sensitive_mt()");
static MALLOC_DEFINE(M_KUNIT_C_KV, "kunit c kvmalloc", "KUnit: kvmalloc_mt()");
static MALLOC_DEFINE(M_KUNIT_C_OTHER, "kunit c other", "KUnit: malloc_type_allocated()");
static MALLOC_DEFINE(M_KUNIT_C_USABLE, "kunit c usable", "KUnit: malloc_usable_size()");
static MALLOC_DEFINE(M_KUNIT_C_PAGES, "kunit c pages", "KUnit: alloc_pages_mt()");
static MALLOC_DEFINE(M_KUNIT_C_FAIL, "kunit c failure", "KUnit: failures change nothing");
static MALLOC_DEFINE(M_KUNIT_C_ZONE_A, "kunit c zone a", "KUnit: zones from C");
static MALLOC_DEFINE(M_KUNIT_C_ZONE_B, "kunit c zone b", "KUnit: zones from C");
static MALLOC_DEFINE(M_KUNIT_C_ZONE_C, "kunit c zone c", "KUnit: zones from C");
static MALLOC_DEFINE(M_KUNIT_C_ZONE_D, "kunit c zone d", "KUnit: zones from C");
static MALLOC_DEFINE(M_KUNIT_C_KFREE, "kunit c kfree", "KUnit: kfree() of a typed block");
static MALLOC_DEFINE(M_KUNIT_C_PATH, "kunit c kmalloc path",
	      "KUnit: kmalloc_mt() in the kmalloc path");
static MALLOC_DEFINE(M_KUNIT_C_KFREE_OTHER, "kunit c kfree other",
	      "KUnit: kfree_mt() given the wrong type");

/* The type's statistics, summed over the possible CPUs. */
static struct malloc_type_counters mt_sum(struct malloc_type *mtp)
{
	struct malloc_type_counters __percpu *pcpu;
	struct malloc_type_counters s = {};
	int cpu;

	pcpu = READ_ONCE(mtp->ks_mti.mti_stats);
	if (!pcpu)
		return s;
	for_each_possible_cpu(cpu) {
		struct malloc_type_counters *c = per_cpu_ptr(pcpu, cpu);

		s.mts_memalloced += READ_ONCE(c->mts_memalloced);
		s.mts_memfreed += READ_ONCE(c->mts_memfreed);
		s.mts_numallocs += READ_ONCE(c->mts_numallocs);
		s.mts_numfrees += READ_ONCE(c->mts_numfrees);
		s.mts_size |= READ_ONCE(c->mts_size);
		s.mts_numfailures += READ_ONCE(c->mts_numfailures);
	}
	return s;
}

static s64 mt_mem_use(struct malloc_type *mtp)
{
	struct malloc_type_counters s = mt_sum(mtp);

	return (s64)(s.mts_memalloced - s.mts_memfreed);
}

static void expect_stats(struct kunit *test, struct malloc_type *mtp,
			 u64 memalloced, u64 memfreed, u64 numallocs,
			 u64 numfrees)
{
	struct malloc_type_counters s = mt_sum(mtp);

	KUNIT_EXPECT_EQ(test, s.mts_memalloced, memalloced);
	KUNIT_EXPECT_EQ(test, s.mts_memfreed, memfreed);
	KUNIT_EXPECT_EQ(test, s.mts_numallocs, numallocs);
	KUNIT_EXPECT_EQ(test, s.mts_numfrees, numfrees);
}

/* MALLOC_DEFINE() types are registered at boot, with their names. */
static void malloc_define_registers(struct kunit *test)
{
	KUNIT_EXPECT_STREQ(test, M_KUNIT_C->ks_shortdesc, "kunit c api");
	KUNIT_EXPECT_STREQ(test, M_KUNIT_C->ks_longdesc,
			   "KUnit: the C API of malloc types");
	KUNIT_EXPECT_NOT_NULL(test, READ_ONCE(M_KUNIT_C->ks_mti.mti_stats));
	KUNIT_EXPECT_GT(test, READ_ONCE(M_KUNIT_C->ks_mti.mti_id), 0ULL);
	KUNIT_EXPECT_LT(test, READ_ONCE(M_KUNIT_C->ks_mti.mti_zone),
			malloc_type_numzones());
}

/* kmalloc_mt(), kzalloc_mt() and kfree_mt(): size classes, no size to free. */
static void kmalloc_kzalloc_kfree(struct kunit *test)
{
	static const size_t sizes[] = { 1, 8, 9, 96, 97, 100, 192, 193, 4096,
					4097, 8192, 8193, 20000 };
	struct malloc_type_counters before = mt_sum(M_KUNIT_C), s;
	u64 acc = 0;
	size_t i;
	u8 *p;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		size_t want = sizes[i] <= KMALLOC_MAX_CACHE_SIZE ?
			kmalloc_size_roundup(sizes[i]) :
			PAGE_SIZE << get_order(sizes[i]);

		p = kmalloc_mt(sizes[i], GFP_KERNEL, M_KUNIT_C);
		KUNIT_ASSERT_NOT_NULL(test, p);
		KUNIT_EXPECT_EQ(test, malloc_type_block_size(p), want);
		memset(p, 0xa5, sizes[i]);
		s = mt_sum(M_KUNIT_C);
		KUNIT_EXPECT_EQ(test, s.mts_memalloced - before.mts_memalloced,
				acc + want);
		kfree_mt(p, M_KUNIT_C);
		acc += want;
	}
	s = mt_sum(M_KUNIT_C);
	KUNIT_EXPECT_EQ(test, s.mts_memfreed - before.mts_memfreed, acc);
	KUNIT_EXPECT_EQ(test, s.mts_numallocs - before.mts_numallocs,
			(u64)ARRAY_SIZE(sizes));
	KUNIT_EXPECT_EQ(test, s.mts_numfrees - before.mts_numfrees,
			(u64)ARRAY_SIZE(sizes));
	/* The bits of the size classes of these sizes. */
	KUNIT_EXPECT_NE(test, s.mts_size, 0ULL);

	p = kzalloc_mt(300, GFP_KERNEL, M_KUNIT_C);
	KUNIT_ASSERT_NOT_NULL(test, p);
	KUNIT_EXPECT_TRUE(test, mem_is_zero(p, 300));
	KUNIT_EXPECT_EQ(test, mt_mem_use(M_KUNIT_C), kmalloc_size_roundup(300));
	kfree_mt(p, M_KUNIT_C);
	KUNIT_EXPECT_EQ(test, mt_mem_use(M_KUNIT_C), 0);
}

/* Zero bytes, NULL and ZERO_SIZE_PTR: kmalloc's conventions, no counter. */
static void zero_size_and_null(struct kunit *test)
{
	struct malloc_type_counters before = mt_sum(M_KUNIT_C);
	void *p;

	p = kmalloc_mt(0, GFP_KERNEL, M_KUNIT_C);
	KUNIT_EXPECT_PTR_EQ(test, p, (void *)ZERO_SIZE_PTR);
	kfree_mt(p, M_KUNIT_C);
	kfree_mt(NULL, M_KUNIT_C);
	p = kvmalloc_mt(0, GFP_KERNEL, M_KUNIT_C);
	KUNIT_EXPECT_PTR_EQ(test, p, (void *)ZERO_SIZE_PTR);
	kvfree_mt(p, M_KUNIT_C);
	kvfree_mt(NULL, M_KUNIT_C);
	KUNIT_EXPECT_EQ(test, malloc_type_block_size(NULL), 0UL);
	KUNIT_EXPECT_EQ(test, malloc_type_block_size(ZERO_SIZE_PTR), 0UL);
	expect_stats(test, M_KUNIT_C, before.mts_memalloced,
		     before.mts_memfreed, before.mts_numallocs,
		     before.mts_numfrees);
}

/*
 * Arrays: overflow is NULL, counted as a failure of the type and nothing
 * else, as are a request too large and one for a node that does not exist;
 * kcalloc_mt() zeroes.
 */
static void arrays_and_overflow(struct kunit *test)
{
	size_t both;
	u32 *a;

	KUNIT_EXPECT_NULL(test, kmalloc_array_mt(SIZE_MAX / 2 + 1, 2,
						 GFP_KERNEL, M_KUNIT_C_FAIL));
	KUNIT_EXPECT_NULL(test, kcalloc_mt(2, SIZE_MAX, GFP_KERNEL,
					   M_KUNIT_C_FAIL));
	KUNIT_EXPECT_NULL(test, kvmalloc_array_mt(SIZE_MAX, SIZE_MAX,
						  GFP_KERNEL, M_KUNIT_C_FAIL));
	KUNIT_EXPECT_NULL(test, kmalloc_mt(KMALLOC_MAX_SIZE + 1,
					   GFP_KERNEL | __GFP_NOWARN,
					   M_KUNIT_C_FAIL));
	KUNIT_EXPECT_NULL(test, kmalloc_node_mt(8, GFP_KERNEL, MAX_NUMNODES,
						M_KUNIT_C_FAIL));
	expect_stats(test, M_KUNIT_C_FAIL, 0, 0, 0, 0);
	KUNIT_EXPECT_EQ(test, mt_sum(M_KUNIT_C_FAIL).mts_numfailures, 5ULL);

	a = kcalloc_mt(5, sizeof(*a), GFP_KERNEL, M_KUNIT_C_FAIL);
	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_EXPECT_TRUE(test, mem_is_zero(a, 5 * sizeof(*a)));
	expect_stats(test, M_KUNIT_C_FAIL, kmalloc_size_roundup(5 * sizeof(*a)), 0, 1,
		     0);
	kfree_mt(a, M_KUNIT_C_FAIL);
	a = kmalloc_array_mt(3, 4, GFP_KERNEL, M_KUNIT_C_FAIL);
	KUNIT_ASSERT_NOT_NULL(test, a);
	kfree_mt(a, M_KUNIT_C_FAIL);
	both = kmalloc_size_roundup(5 * sizeof(*a)) + kmalloc_size_roundup(12);
	expect_stats(test, M_KUNIT_C_FAIL, both, both, 2, 2);
	KUNIT_EXPECT_EQ(test, mt_sum(M_KUNIT_C_FAIL).mts_numfailures, 5ULL);
}

/*
 * krealloc_mt(): within the size class the block stays; to another class it
 * moves, growing or shrinking, so that it consumes what it is charged; the
 * contents are kept; a failure keeps the block and the counters; zero bytes
 * frees; NULL allocates.
 */
static void krealloc_rules(struct kunit *test)
{
	struct malloc_type *t = M_KUNIT_C_REALLOC;
	u8 *p, *q;

	p = kmalloc_mt(10, GFP_KERNEL, t);
	KUNIT_ASSERT_NOT_NULL(test, p);
	memset(p, 0x5a, 10);
	q = krealloc_mt(p, 12, GFP_KERNEL, t);
	KUNIT_ASSERT_PTR_EQ(test, q, p);
	expect_stats(test, t, 2 * kmalloc_size_roundup(10), kmalloc_size_roundup(10), 2, 1);

	p = krealloc_mt(q, 100, GFP_KERNEL, t);
	KUNIT_ASSERT_NOT_NULL(test, p);
	KUNIT_EXPECT_EQ(test, mt_mem_use(t), kmalloc_size_roundup(100));
	KUNIT_EXPECT_EQ(test, malloc_type_block_size(p), kmalloc_size_roundup(100));

	/* 4000 bytes, then 10: the larger object does not stay. */
	q = krealloc_mt(p, 4000, GFP_KERNEL, t);
	KUNIT_ASSERT_NOT_NULL(test, q);
	KUNIT_EXPECT_EQ(test, mt_mem_use(t), kmalloc_size_roundup(4000));
	p = krealloc_mt(q, 10, GFP_KERNEL, t);
	KUNIT_ASSERT_NOT_NULL(test, p);
	KUNIT_EXPECT_EQ(test, mt_mem_use(t), kmalloc_size_roundup(10));
	KUNIT_EXPECT_EQ(test, malloc_type_block_size(p), kmalloc_size_roundup(10));
	KUNIT_EXPECT_TRUE(test, !memchr_inv(p, 0x5a, 10));

	q = krealloc_mt(p, KMALLOC_MAX_SIZE + 1, GFP_KERNEL | __GFP_NOWARN, t);
	KUNIT_EXPECT_NULL(test, q);
	KUNIT_EXPECT_EQ(test, mt_mem_use(t), kmalloc_size_roundup(10));
	KUNIT_EXPECT_TRUE(test, !memchr_inv(p, 0x5a, 10));

	q = krealloc_mt(p, 0, GFP_KERNEL, t);
	KUNIT_EXPECT_PTR_EQ(test, q, (u8 *)ZERO_SIZE_PTR);
	KUNIT_EXPECT_EQ(test, mt_mem_use(t), 0);

	p = krealloc_mt(NULL, 8, GFP_KERNEL, t);
	KUNIT_ASSERT_NOT_NULL(test, p);
	q = krealloc_mt(ZERO_SIZE_PTR, 8, GFP_KERNEL, t);
	KUNIT_ASSERT_NOT_NULL(test, q);
	KUNIT_EXPECT_EQ(test, mt_mem_use(t), 2 * kmalloc_size_roundup(8));
	kfree_mt(p, t);
	kfree_mt(q, t);
	KUNIT_EXPECT_EQ(test, mt_mem_use(t), 0);
	KUNIT_EXPECT_EQ(test, mt_sum(t).mts_numallocs, mt_sum(t).mts_numfrees);
}

/*
 * kreallocf_mt(): krealloc_mt() while it succeeds; a failure frees the block,
 * counted as a free beside the failure, and returns NULL.
 */
static void kreallocf_frees_on_failure(struct kunit *test)
{
	struct malloc_type *t = M_KUNIT_C_REALLOCF;
	u8 *p, *q;

	p = kmalloc_mt(10, GFP_KERNEL, t);
	KUNIT_ASSERT_NOT_NULL(test, p);
	memset(p, 0x5a, 10);
	q = kreallocf_mt(p, 100, GFP_KERNEL, t);
	KUNIT_ASSERT_NOT_NULL(test, q);
	KUNIT_EXPECT_TRUE(test, !memchr_inv(q, 0x5a, 10));
	expect_stats(test, t, kmalloc_size_roundup(10) + kmalloc_size_roundup(100),
		     kmalloc_size_roundup(10), 2, 1);

	p = kreallocf_mt(q, KMALLOC_MAX_SIZE + 1, GFP_KERNEL | __GFP_NOWARN, t);
	KUNIT_EXPECT_NULL(test, p);
	expect_stats(test, t, kmalloc_size_roundup(10) + kmalloc_size_roundup(100),
		     kmalloc_size_roundup(10) + kmalloc_size_roundup(100), 2, 2);
	KUNIT_EXPECT_EQ(test, mt_sum(t).mts_numfailures, 1ULL);

	/* NULL allocates; zero bytes frees and is no failure. */
	p = kreallocf_mt(NULL, 8, GFP_KERNEL, t);
	KUNIT_ASSERT_NOT_NULL(test, p);
	q = kreallocf_mt(p, 0, GFP_KERNEL, t);
	KUNIT_EXPECT_PTR_EQ(test, q, (u8 *)ZERO_SIZE_PTR);
	KUNIT_EXPECT_EQ(test, mt_mem_use(t), 0);
	KUNIT_EXPECT_EQ(test, mt_sum(t).mts_numallocs, 3ULL);
	KUNIT_EXPECT_EQ(test, mt_sum(t).mts_numfrees, 3ULL);
	KUNIT_EXPECT_EQ(test, mt_sum(t).mts_numfailures, 1ULL);
}

/*
 * kfree_sensitive_mt(): the free of the size class, of the pages of a large
 * kmalloc; NULL and ZERO_SIZE_PTR are no-ops.
 */
static void kfree_sensitive_frees_the_block(struct kunit *test)
{
	struct malloc_type *t = M_KUNIT_C_ZFREE;
	size_t big = KMALLOC_MAX_CACHE_SIZE + 1;
	u8 *p, *q;

	p = kmalloc_mt(20, GFP_KERNEL, t);
	KUNIT_ASSERT_NOT_NULL(test, p);
	memset(p, 0x5a, 20);
	q = kmalloc_mt(big, GFP_KERNEL, t);
	KUNIT_ASSERT_NOT_NULL(test, q);
	kfree_sensitive_mt(p, t);
	kfree_sensitive_mt(q, t);
	kfree_sensitive_mt(NULL, t);
	kfree_sensitive_mt(ZERO_SIZE_PTR, t);
	expect_stats(test, t, kmalloc_size_roundup(20) + (PAGE_SIZE << get_order(big)),
		     kmalloc_size_roundup(20) + (PAGE_SIZE << get_order(big)), 2, 2);
}

/*
 * malloc_type_allocated() and malloc_type_freed(): objects of a kmem_cache
 * charged to a type, one allocation or free each of the size given, with no
 * size class; zero bytes change nothing.
 */
static void allocated_and_freed(struct kunit *test)
{
	struct malloc_type *t = M_KUNIT_C_OTHER;
	struct kmem_cache *cache;
	unsigned int size;
	void *a, *b;

	cache = kmem_cache_create("malloc_type_kunit_other", 100, 0, 0, NULL);
	KUNIT_ASSERT_NOT_NULL(test, cache);
	size = kmem_cache_size(cache);
	a = kmem_cache_alloc(cache, GFP_KERNEL);
	b = kmem_cache_alloc(cache, GFP_KERNEL);
	if (!a || !b) {
		kmem_cache_free(cache, a);
		kmem_cache_free(cache, b);
		kmem_cache_destroy(cache);
		KUNIT_FAIL(test, "kmem_cache_alloc() failed");
		return;
	}
	malloc_type_allocated(t, size);
	malloc_type_allocated(t, size);
	malloc_type_allocated(t, 0);
	expect_stats(test, t, 2 * size, 0, 2, 0);
	KUNIT_EXPECT_EQ(test, mt_sum(t).mts_size, 0ULL);
	kmem_cache_free(cache, a);
	malloc_type_freed(t, size);
	kmem_cache_free(cache, b);
	malloc_type_freed(t, size);
	malloc_type_freed(t, 0);
	expect_stats(test, t, 2 * size, 2 * size, 2, 2);
	kmem_cache_destroy(cache);
}

/*
 * alloc_pages_mt(), __get_free_pages_mt() and alloc_pages_exact_mt(): one
 * allocation per call, of its pages (the exact variant's rounded up to a
 * page, not to the power of two), with no size class; frees balance them.
 * malloc_type_failed() counts a failure and nothing else.
 */
static void typed_pages(struct kunit *test)
{
	struct malloc_type *t = M_KUNIT_C_PAGES;
	size_t exact = 3 * PAGE_SIZE + 1;
	unsigned long addr;
	struct page *page;
	void *p;

	page = alloc_pages_mt(GFP_KERNEL, 2, t);
	KUNIT_ASSERT_NOT_NULL(test, page);
	expect_stats(test, t, 4 * PAGE_SIZE, 0, 1, 0);
	addr = __get_free_pages_mt(GFP_KERNEL | __GFP_ZERO, 0, t);
	KUNIT_ASSERT_NE(test, addr, 0UL);
	KUNIT_EXPECT_TRUE(test, mem_is_zero((void *)addr, PAGE_SIZE));
	p = alloc_pages_exact_mt(exact, GFP_KERNEL, t);
	KUNIT_ASSERT_NOT_NULL(test, p);
	expect_stats(test, t, 9 * PAGE_SIZE, 0, 3, 0);
	KUNIT_EXPECT_EQ(test, mt_sum(t).mts_size, 0ULL);
	__free_pages_mt(page, 2, t);
	free_pages_mt(addr, 0, t);
	free_pages_exact_mt(p, exact, t);
	free_pages_mt(0, 0, t);
	free_pages_exact_mt(NULL, exact, t);
	expect_stats(test, t, 9 * PAGE_SIZE, 9 * PAGE_SIZE, 3, 3);

	malloc_type_failed(t);
	KUNIT_EXPECT_EQ(test, mt_sum(t).mts_numfailures, 1ULL);
	expect_stats(test, t, 9 * PAGE_SIZE, 9 * PAGE_SIZE, 3, 3);
}

/* kvmalloc_mt(): kmalloc blocks by size class, vmalloc ones by pages. */
/*
 * malloc_usable_size() is what the block was charged, never more (less only
 * for a KFENCE object); krealloc_mt() to it keeps the block and the charge,
 * and gives the caller all of it (KASAN reports the memset otherwise).
 */
static void usable_size(struct kunit *test)
{
	static const size_t sizes[] = { 1, 60, 100, 4097,
					KMALLOC_MAX_CACHE_SIZE + 1 };
	struct malloc_type *t = M_KUNIT_C_USABLE;
	size_t i, n;
	s64 charged;
	u8 *p, *q;

	KUNIT_EXPECT_EQ(test, malloc_usable_size(NULL), 0);
	KUNIT_EXPECT_EQ(test, malloc_usable_size(ZERO_SIZE_PTR), 0);
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		p = kmalloc_mt(sizes[i], GFP_KERNEL, t);
		KUNIT_ASSERT_NOT_NULL(test, p);
		charged = mt_mem_use(t);
		n = malloc_usable_size(p);
		KUNIT_EXPECT_GE(test, n, sizes[i]);
		if (is_kfence_address(p))
			KUNIT_EXPECT_EQ(test, n, sizes[i]);
		else
			KUNIT_EXPECT_EQ(test, n, charged);
		q = krealloc_mt(p, n, GFP_KERNEL, t);
		KUNIT_ASSERT_NOT_NULL(test, q);
		KUNIT_EXPECT_PTR_EQ(test, q, p);
		KUNIT_EXPECT_EQ(test, mt_mem_use(t), charged);
		memset(q, 0x5a, n);
		kfree_mt(q, t);
		KUNIT_EXPECT_EQ(test, mt_mem_use(t), 0);
	}

	/* A kvmalloc block vmalloc served: its pages. */
	p = kvmalloc_mt(KMALLOC_MAX_SIZE + 100, GFP_KERNEL, t);
	KUNIT_ASSERT_NOT_NULL(test, p);
	KUNIT_EXPECT_EQ(test, malloc_usable_size(p),
			PAGE_ALIGN(KMALLOC_MAX_SIZE + 100));
	KUNIT_EXPECT_EQ(test, malloc_usable_size(p), mt_mem_use(t));
	kvfree_mt(p, t);
	KUNIT_EXPECT_EQ(test, mt_mem_use(t), 0);
}

static void kvmalloc_kvfree(struct kunit *test)
{
	struct malloc_type *t = M_KUNIT_C_KV;
	u8 *small, *big;

	small = kvmalloc_mt(100, GFP_KERNEL, t);
	KUNIT_ASSERT_NOT_NULL(test, small);
	KUNIT_EXPECT_FALSE(test, is_vmalloc_addr(small));
	KUNIT_EXPECT_EQ(test, mt_mem_use(t), kmalloc_size_roundup(100));

	big = kvzalloc_mt(KMALLOC_MAX_SIZE + 100, GFP_KERNEL, t);
	KUNIT_ASSERT_NOT_NULL(test, big);
	KUNIT_EXPECT_TRUE(test, is_vmalloc_addr(big));
	KUNIT_EXPECT_TRUE(test, mem_is_zero(big, 4096));
	KUNIT_EXPECT_EQ(test, malloc_type_block_size(big),
			PAGE_ALIGN(KMALLOC_MAX_SIZE + 100));
	KUNIT_EXPECT_EQ(test, mt_mem_use(t),
			kmalloc_size_roundup(100) + PAGE_ALIGN(KMALLOC_MAX_SIZE + 100));

	kvfree_mt(big, t);
	kvfree_mt(small, t);
	expect_stats(test, t, kmalloc_size_roundup(100) + PAGE_ALIGN(KMALLOC_MAX_SIZE + 100),
		     kmalloc_size_roundup(100) + PAGE_ALIGN(KMALLOC_MAX_SIZE + 100), 2, 2);
	/* The vmalloc side has no size class: only the bit of 100 bytes is set. */
	KUNIT_EXPECT_EQ(test, hweight64(mt_sum(t).mts_size), 1);
}

/*
 * With malloc_types.numzones > 1 a type outside zone 0 allocates from its
 * zone's buckets ("malloc-zone<N>-<size>" caches), from C as from Rust,
 * and krealloc_mt() keeps it there.
 */
static void zones_from_c(struct kunit *test)
{
	struct malloc_type *types[] = { M_KUNIT_C_ZONE_A, M_KUNIT_C_ZONE_B,
					M_KUNIT_C_ZONE_C, M_KUNIT_C_ZONE_D };
	unsigned int n = malloc_type_numzones();
	size_t i;

	for (i = 0; i < ARRAY_SIZE(types); i++) {
		struct malloc_type *t = types[i];
		u32 zone = READ_ONCE(t->ks_mti.mti_zone);
		const char *cache;
		unsigned int usersize;
		char want[32];
		u8 *p;

		KUNIT_EXPECT_EQ(test, zone,
				malloc_type_zone_for_name(t->ks_shortdesc, n));
		p = kmalloc_mt(24, GFP_KERNEL, t);
		KUNIT_ASSERT_NOT_NULL(test, p);
		memset(p, 7, 24);
		p = krealloc_mt(p, 300, GFP_KERNEL, t);
		KUNIT_ASSERT_NOT_NULL(test, p);
		KUNIT_EXPECT_TRUE(test, !memchr_inv(p, 7, 24));
		KUNIT_ASSERT_TRUE(test, malloc_type_test_cache_of(p, &cache,
								  &usersize));
		KUNIT_EXPECT_EQ(test, malloc_type_block_size(p), kmalloc_size_roundup(300));
		if (zone == 0) {
			KUNIT_EXPECT_TRUE(test, strstarts(cache, "kmalloc-"));
		} else {
			snprintf(want, sizeof(want), "malloc-zone%u-%zu", zone,
				 kmalloc_size_roundup(300));
			KUNIT_EXPECT_STREQ(test, cache, want);
		}
		kfree_mt(p, t);
		expect_stats(test, t, kmalloc_size_roundup(24) + kmalloc_size_roundup(300),
			     kmalloc_size_roundup(24) + kmalloc_size_roundup(300), 2, 2);
	}
}

struct kfree_rcu_block {
	struct rcu_head rcu;
	u8 data[40];
};

/*
 * A block of kmalloc_mt() records its type: kfree(), kvfree(), kfree_rcu()
 * and kfree_bulk() charge back what it was charged, and so does kfree_mt()
 * given another type; a plain krealloc() that moves it charges the old block
 * back. Slab objects and large kmalloc, shared caches and zones.
 */
static void kfree_charges_back(struct kunit *test)
{
	static const size_t sizes[] = { 8, 100, 4096, KMALLOC_MAX_CACHE_SIZE,
					KMALLOC_MAX_CACHE_SIZE + 1, 20000 };
	struct malloc_type *types[] = { M_KUNIT_C_KFREE, M_KUNIT_C_ZONE_A,
					M_KUNIT_C_ZONE_B };
	struct malloc_type *t = M_KUNIT_C_KFREE, *heap_type, *def;
	struct malloc_type_counters before;
	struct kfree_rcu_block *r;
	void *bulk[2];
	size_t i, j;
	u8 *p, *q;

	for (j = 0; j < ARRAY_SIZE(types); j++) {
		u64 acc = 0;

		before = mt_sum(types[j]);
		for (i = 0; i < ARRAY_SIZE(sizes); i++) {
			p = kmalloc_mt(sizes[i], GFP_KERNEL, types[j]);
			KUNIT_ASSERT_NOT_NULL(test, p);
			kfree(p);
			KUNIT_EXPECT_EQ(test, mt_mem_use(types[j]), 0);
			acc += sizes[i] <= KMALLOC_MAX_CACHE_SIZE ?
				kmalloc_size_roundup(sizes[i]) :
				PAGE_SIZE << get_order(sizes[i]);
		}
		expect_stats(test, types[j], before.mts_memalloced + acc,
			     before.mts_memfreed + acc,
			     before.mts_numallocs + ARRAY_SIZE(sizes),
			     before.mts_numfrees + ARRAY_SIZE(sizes));
	}

	before = mt_sum(t);
	p = kvmalloc_mt(300, GFP_KERNEL, t);
	KUNIT_ASSERT_NOT_NULL(test, p);
	kvfree(p);
	KUNIT_EXPECT_EQ(test, mt_mem_use(t), 0);

	r = kmalloc_mt(sizeof(*r), GFP_KERNEL, t);
	KUNIT_ASSERT_NOT_NULL(test, r);
	kfree_rcu(r, rcu);
	kvfree_rcu_barrier();
	KUNIT_EXPECT_EQ(test, mt_mem_use(t), 0);

	bulk[0] = kmalloc_mt(64, GFP_KERNEL, t);
	bulk[1] = kmalloc_mt(64, GFP_KERNEL, t);
	KUNIT_ASSERT_NOT_NULL(test, bulk[0]);
	KUNIT_ASSERT_NOT_NULL(test, bulk[1]);
	kfree_bulk(2, bulk);
	KUNIT_EXPECT_EQ(test, mt_mem_use(t), 0);
	expect_stats(test, t,
		     before.mts_memalloced + kmalloc_size_roundup(300) +
		     kmalloc_size_roundup(sizeof(*r)) + 2 * kmalloc_size_roundup(64),
		     before.mts_memfreed + kmalloc_size_roundup(300) +
		     kmalloc_size_roundup(sizeof(*r)) + 2 * kmalloc_size_roundup(64),
		     before.mts_numallocs + 4, before.mts_numfrees + 4);

	/*
	 * The type the block was charged to is charged back, not the one
	 * given (which warns under CONFIG_DEBUG_VM); slab and large kmalloc.
	 */
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		p = kmalloc_mt(sizes[i], GFP_KERNEL, t);
		KUNIT_ASSERT_NOT_NULL(test, p);
		kfree_mt(p, IS_ENABLED(CONFIG_DEBUG_VM) ? t : M_KUNIT_C_KFREE_OTHER);
		KUNIT_EXPECT_EQ(test, mt_mem_use(t), 0);
	}
	expect_stats(test, M_KUNIT_C_KFREE_OTHER, 0, 0, 0, 0);

	/* krealloc() that moves the block charges the old one back. */
	p = kmalloc_mt(10, GFP_KERNEL, t);
	KUNIT_ASSERT_NOT_NULL(test, p);
	q = krealloc(p, 1000, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, q);
	KUNIT_EXPECT_EQ(test, mt_mem_use(t), 0);
	kfree(q);
	KUNIT_EXPECT_EQ(test, mt_mem_use(t), 0);

	/*
	 * No record of a type that is not registered (as one on the heap).
	 * The block of a plain kmalloc() may carry its default type's record:
	 * it is taken off and charged back first.
	 */
	heap_type = kzalloc_obj(*heap_type);
	KUNIT_ASSERT_NOT_NULL(test, heap_type);
	p = kmalloc(10, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, p);
	def = malloc_type_obj_take(p, NULL);
	if (def)
		malloc_type_freed(def, kmalloc_size_roundup(10));
	KUNIT_EXPECT_EQ(test, malloc_type_obj_set(p, heap_type, GFP_KERNEL),
			-EOPNOTSUPP);
	KUNIT_EXPECT_NULL(test, malloc_type_obj_take(p, NULL));
	KUNIT_EXPECT_EQ(test, malloc_type_obj_set(p, t, GFP_KERNEL), 0);
	KUNIT_EXPECT_PTR_EQ(test, malloc_type_obj_take(p, t), t);
	KUNIT_EXPECT_NULL(test, malloc_type_obj_take(p, t));
	kfree(p);
	kfree(heap_type);
}

/* The zindx of the size class of @size bytes: its index in the zone sizes. */
static u32 malloc_type_c_zindx(size_t size)
{
	size_t class = kmalloc_size_roundup(size);
	u32 z;

	for (z = 0; malloc_type_zone_size(z); z++)
		if (malloc_type_zone_size(z) == class)
			return z;
	return 63;
}

/* A cache of one's own, whose objects kmalloc's default types do not charge. */
struct default_type_obj {
	u64 a[3];
};

/*
 * The default type of this file's kmalloc() call sites: the record of a block
 * of one, put back before the block is freed, so that the free charges it.
 */
static struct malloc_type *this_file_default_type(struct kunit *test)
{
	struct malloc_type *def;
	void *q = kmalloc(1, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, q);
	def = malloc_type_obj_take(q, NULL);
	KUNIT_ASSERT_NOT_NULL(test, def);
	KUNIT_EXPECT_EQ(test, malloc_type_obj_set(q, def, GFP_KERNEL), 0);
	kfree(q);
	return def;
}

/*
 * kmalloc() and its friends without a type charge the default type of the
 * code that calls them: for this file, built in, the type named after its
 * KBUILD_MODNAME, owned by vmlinux. The size class (or pages) is charged,
 * with its bit in mts_size; any free charges it back, krealloc() that moves
 * the block charges the new block and the old one back. A call site whose
 * caller charges the block itself (alloc_hooks_typed()), and a cache of
 * one's own, are not charged.
 */
static void default_type_of_kmalloc(struct kunit *test)
{
	static const size_t sizes[] = { 8, 100, 4096, 20000 };
	struct malloc_type_counters before, after;
	struct kmem_cache *cache;
	struct malloc_type *def;
	u64 bytes = 0, allocs = 0;
	void *p[ARRAY_SIZE(sizes) * 3], *q;
	size_t i, n = 0;

	if (!IS_ENABLED(CONFIG_MALLOC_TYPES_DEFAULT) || !malloc_type_default_tags())
		kunit_skip(test, "default types are off");

	def = this_file_default_type(test);
	KUNIT_EXPECT_STREQ(test, def->ks_shortdesc, KBUILD_MODNAME);
	KUNIT_EXPECT_STREQ(test, def->ks_mti.mti_owner, "vmlinux");

	before = mt_sum(def);
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		size_t charged = sizes[i] <= KMALLOC_MAX_CACHE_SIZE ?
			kmalloc_size_roundup(sizes[i]) :
			PAGE_SIZE << get_order(sizes[i]);

		p[n++] = kmalloc(sizes[i], GFP_KERNEL);
		p[n++] = kzalloc(sizes[i], GFP_KERNEL);
		p[n++] = kcalloc(1, sizes[i], GFP_KERNEL);
		bytes += 3 * charged;
		allocs += 3;
	}
	for (i = 0; i < n; i++)
		KUNIT_ASSERT_NOT_NULL(test, p[i]);
	after = mt_sum(def);
	KUNIT_EXPECT_EQ(test, after.mts_memalloced - before.mts_memalloced, bytes);
	KUNIT_EXPECT_EQ(test, after.mts_numallocs - before.mts_numallocs, allocs);
	KUNIT_EXPECT_EQ(test, after.mts_numfrees, before.mts_numfrees);
	KUNIT_EXPECT_TRUE(test, after.mts_size & BIT_ULL(malloc_type_c_zindx(100)));

	/* Freed by kfree(), kvfree() and kfree_bulk(): all charged back. */
	kfree(p[0]);
	kvfree(p[1]);
	kfree_bulk(n - 2, p + 2);
	after = mt_sum(def);
	KUNIT_EXPECT_EQ(test, after.mts_memfreed - before.mts_memfreed, bytes);
	KUNIT_EXPECT_EQ(test, after.mts_numfrees - before.mts_numfrees, allocs);

	/* krealloc() moving a block: the new one charged, the old one back. */
	before = mt_sum(def);
	p[0] = kmalloc(10, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, p[0]);
	q = krealloc(p[0], 1000, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, q);
	after = mt_sum(def);
	KUNIT_EXPECT_EQ(test, after.mts_numallocs - before.mts_numallocs, 2);
	KUNIT_EXPECT_EQ(test, after.mts_numfrees - before.mts_numfrees, 1);
	KUNIT_EXPECT_EQ(test, (s64)(after.mts_memalloced - after.mts_memfreed) -
			(s64)(before.mts_memalloced - before.mts_memfreed),
			(s64)kmalloc_size_roundup(1000));
	kfree(q);

	/* Not charged: a typed call site, and a cache of one's own. */
	before = mt_sum(def);
	q = alloc_hooks_typed(kmalloc_noprof(64, GFP_KERNEL));
	KUNIT_ASSERT_NOT_NULL(test, q);
	KUNIT_EXPECT_NULL(test, malloc_type_obj_take(q, NULL));
	kfree(q);
	cache = KMEM_CACHE(default_type_obj, 0);
	KUNIT_ASSERT_NOT_NULL(test, cache);
	q = kmem_cache_alloc(cache, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, q);
	KUNIT_EXPECT_NULL(test, malloc_type_obj_take(q, NULL));
	kmem_cache_free(cache, q);
	kmem_cache_destroy(cache);
	after = mt_sum(def);
	KUNIT_EXPECT_EQ(test, after.mts_numallocs, before.mts_numallocs);
	KUNIT_EXPECT_EQ(test, after.mts_numfrees, before.mts_numfrees);
}

/*
 * kmalloc_mt() and kfree_mt() take the slab allocator's kmalloc path: each
 * block, from a slab or from the page allocator, is charged once to its type
 * with its size class and its record, and not to the call site's default
 * type; kfree_mt() and kfree() charge it back. Also with default types off.
 */
static void kmalloc_mt_in_kmalloc_path(struct kunit *test)
{
	static const size_t sizes[] = { 8, 100, 4096, 20000 };
	struct malloc_type_counters before, after, def_before, def_after;
	struct malloc_type *t = M_KUNIT_C_PATH, *def = NULL;
	size_t i;
	void *p;

	if (IS_ENABLED(CONFIG_MALLOC_TYPES_DEFAULT) && malloc_type_default_tags())
		def = this_file_default_type(test);

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		size_t charged = sizes[i] <= KMALLOC_MAX_CACHE_SIZE ?
			kmalloc_size_roundup(sizes[i]) :
			PAGE_SIZE << get_order(sizes[i]);
		u64 bit = sizes[i] <= KMALLOC_MAX_CACHE_SIZE ?
			BIT_ULL(malloc_type_c_zindx(sizes[i])) : 0;

		if (def)
			def_before = mt_sum(def);
		before = mt_sum(t);
		p = kmalloc_mt(sizes[i], GFP_KERNEL, t);
		KUNIT_ASSERT_NOT_NULL(test, p);
		after = mt_sum(t);
		KUNIT_EXPECT_EQ(test, after.mts_numallocs - before.mts_numallocs, 1);
		KUNIT_EXPECT_EQ(test, after.mts_memalloced - before.mts_memalloced,
				charged);
		KUNIT_EXPECT_EQ(test, after.mts_size & bit, bit);
		KUNIT_EXPECT_PTR_EQ(test, malloc_type_obj_take(p, t), t);
		KUNIT_EXPECT_EQ(test, malloc_type_obj_set(p, t, GFP_KERNEL), 0);
		if (def) {
			def_after = mt_sum(def);
			KUNIT_EXPECT_EQ(test, def_after.mts_numallocs,
					def_before.mts_numallocs);
		}
		if (i & 1)
			kfree(p);
		else
			kfree_mt(p, t);
		after = mt_sum(t);
		KUNIT_EXPECT_EQ(test, after.mts_numfrees - before.mts_numfrees, 1);
		KUNIT_EXPECT_EQ(test, after.mts_memfreed - before.mts_memfreed,
				charged);
	}

	/* kzalloc_mt() and kcalloc_mt() zero the block. */
	p = kzalloc_mt(100, GFP_KERNEL, t);
	KUNIT_ASSERT_NOT_NULL(test, p);
	KUNIT_EXPECT_TRUE(test, mem_is_zero(p, 100));
	kfree_mt(p, t);
	p = kcalloc_mt(10, 10, GFP_KERNEL, t);
	KUNIT_ASSERT_NOT_NULL(test, p);
	KUNIT_EXPECT_TRUE(test, mem_is_zero(p, 100));
	kfree_mt(p, t);
}

/* This CPU's count of the bytes of size class @z in use charged to types. */
static u64 zone_memuse_here(u32 z)
{
	return this_cpu_read(malloc_type_zone_counters.mzc_memuse[z]);
}

/*
 * vm.malloc_zone_memuse: every charge of a kmalloc block adds its size to
 * the counter of its size class, every charge back takes it off, whichever
 * path charges it (inline in the kmalloc path for kmalloc_mt() and a default
 * type, the Rust path for an explicit node, the free hooks for kfree(),
 * __kfree_mt() for kfree_mt()); a large kmalloc has no class. With interrupts
 * off, nothing else on this CPU allocates between the reads.
 */
static void zone_memuse_follows_blocks(struct kunit *test)
{
	static const size_t sizes[] = { 1, 100, 700, KMALLOC_MAX_CACHE_SIZE };
	struct malloc_type *t = M_KUNIT_C_PATH;
	u64 c[7], large[2];
	unsigned long irqflags;
	void *p[3];
	size_t i;
	u32 z;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		size_t class = kmalloc_size_roundup(sizes[i]);

		z = malloc_type_c_zindx(sizes[i]);
		KUNIT_ASSERT_LT(test, z, MALLOC_TYPE_ZONE_NONE);
		local_irq_save(irqflags);
		c[0] = zone_memuse_here(z);
		p[0] = kmalloc_mt(sizes[i], GFP_ATOMIC, t);
		c[1] = zone_memuse_here(z);
		kfree(p[0]);
		c[2] = zone_memuse_here(z);
		p[1] = kmalloc_node_mt(sizes[i], GFP_ATOMIC, numa_node_id(), t);
		c[3] = zone_memuse_here(z);
		kfree_mt(p[1], t);
		c[4] = zone_memuse_here(z);
		p[2] = kmalloc(sizes[i], GFP_ATOMIC);
		c[5] = zone_memuse_here(z);
		kfree(p[2]);
		c[6] = zone_memuse_here(z);
		local_irq_restore(irqflags);

		KUNIT_ASSERT_NOT_NULL(test, p[0]);
		KUNIT_ASSERT_NOT_NULL(test, p[1]);
		KUNIT_ASSERT_NOT_NULL(test, p[2]);
		KUNIT_EXPECT_EQ(test, c[1] - c[0], class);
		KUNIT_EXPECT_EQ(test, c[2], c[0]);
		KUNIT_EXPECT_EQ(test, c[3] - c[2], class);
		KUNIT_EXPECT_EQ(test, c[4], c[0]);
		if (IS_ENABLED(CONFIG_MALLOC_TYPES_DEFAULT) &&
		    malloc_type_default_tags())
			KUNIT_EXPECT_EQ(test, c[5] - c[4], class);
		KUNIT_EXPECT_EQ(test, c[6], c[0]);
	}

	/* A large kmalloc changes no class: not even the largest. */
	z = malloc_type_c_zindx(KMALLOC_MAX_CACHE_SIZE);
	local_irq_save(irqflags);
	large[0] = zone_memuse_here(z);
	p[0] = kmalloc_mt(KMALLOC_MAX_CACHE_SIZE + 1, GFP_ATOMIC, t);
	large[1] = zone_memuse_here(z);
	kfree(p[0]);
	local_irq_restore(irqflags);
	KUNIT_ASSERT_NOT_NULL(test, p[0]);
	KUNIT_EXPECT_EQ(test, large[1], large[0]);
}

/*
 * A block that the slab allocator kmalloc'ed before the registry started
 * and keeps, the barn of a kmalloc cache (kmem_cache_init() allocates it),
 * is charged to "slub" when the registry starts, as the sheaves and barns
 * allocated later are: it carries the record of that type.
 */
static void early_slab_blocks_are_charged(struct kunit *test)
{
	struct kmem_cache *s =
		kmalloc_caches[KMALLOC_NORMAL][kmalloc_size_slot(64)];
	struct node_barn *barn = NULL;
	struct malloc_type *mtp;
	int node;

	if (!IS_ENABLED(CONFIG_MALLOC_TYPES_DEFAULT) || !malloc_type_default_tags())
		kunit_skip(test, "default types are off");
	for_each_node(node) {
		barn = s->per_node[node].barn;
		if (barn)
			break;
	}
	if (!barn)
		kunit_skip(test, "%s has no sheaves", s->name);

	/* The barn lives as long as its cache: take the record and put it back. */
	mtp = malloc_type_obj_take(barn, NULL);
	KUNIT_ASSERT_NOT_NULL(test, mtp);
	KUNIT_EXPECT_STREQ(test, mtp->ks_shortdesc, "slub");
	KUNIT_EXPECT_STREQ(test, mtp->ks_mti.mti_owner, "vmlinux");
	KUNIT_EXPECT_EQ(test, malloc_type_obj_set(barn, mtp, GFP_KERNEL), 0);
}

/*
 * With allocation profiling on, the block @p of call site @site on line
 * @line of this function is charged to that call site in /proc/allocinfo:
 * the codetag in its slab's extension vector names it.
 */
static void expect_call_site(struct kunit *test, const void *p,
			     unsigned int line, const char *site)
{
#ifdef CONFIG_MEM_ALLOC_PROFILING
	struct slab *slab = virt_to_slab(p);
	const struct codetag *ct = NULL;
	struct slabobj_ext *obj_ext;
	unsigned long obj_exts;
	union codetag_ref *ref;

	KUNIT_ASSERT_NOT_NULL(test, slab);
	obj_exts = slab_obj_exts(slab);
	KUNIT_ASSERT_NE_MSG(test, obj_exts, 0, "%s: no extension vector", site);
	get_slab_obj_exts(obj_exts);
	obj_ext = slab_obj_ext(slab->slab_cache, slab, obj_exts, p);
	ref = slab_obj_ext_codetag_ref(slab, obj_ext);
	if (!is_codetag_empty(ref))
		ct = ref->ct;
	put_slab_obj_exts(obj_exts);
	KUNIT_ASSERT_NOT_NULL_MSG(test, ct, "%s: no call site", site);
	KUNIT_EXPECT_STREQ_MSG(test, ct->filename, __FILE__, "%s", site);
	KUNIT_EXPECT_STREQ_MSG(test, ct->function, "kmalloc_partitions_and_call_sites",
			       "%s", site);
	KUNIT_EXPECT_EQ_MSG(test, ct->lineno, line, "%s", site);
#endif
}

/* The name of the slab cache of the block @p. */
static const char *block_cache_name(const void *p)
{
	struct slab *slab = virt_to_slab(p);

	return slab ? slab->slab_cache->name : "(not a slab object)";
}

/* The kmalloc partition the block @p of @size bytes came from, or -1. */
static int block_partition(const void *p, size_t size)
{
	struct slab *slab = virt_to_slab(p);
	int k;

	for (k = KMALLOC_PARTITION_START; slab && k <= KMALLOC_PARTITION_END; k++)
		if (kmalloc_caches[k][kmalloc_index(size)] == slab->slab_cache)
			return k;
	return -1;
}

#define PARTITION_SITES	16
#define PARTITION_SIZE	64

/* The blocks of one call site of each kind, from two rounds, and its line. */
struct partition_site {
	void *plain[2];
	void *typed[2];
	unsigned int line;
};

/*
 * A call site of each kind, in round @round: a plain kmalloc() block
 * (charged to this file's default type) and a kmalloc_mt() block of @type,
 * stored in @site. Each expansion is a call site of its own, with its own
 * kmalloc token and allocation tag.
 */
#define PARTITION_SITE(site, round, type)				\
	do {								\
		struct partition_site *_s = (site);			\
		int _r = (round);					\
									\
		_s->plain[_r] = kmalloc(PARTITION_SIZE, GFP_KERNEL);	\
		_s->typed[_r] = kmalloc_mt(PARTITION_SIZE, GFP_KERNEL, type); \
		_s->line = __LINE__;					\
	} while (0)

/*
 * Charging happens in kmalloc's own hooks, so kmalloc keeps choosing the
 * cache: with CONFIG_KMALLOC_PARTITION_CACHES, typed and default-typed
 * blocks spread over the partitions as plain kmalloc() blocks do, each call
 * site in its own partition (the same one each time; 16 call sites of the
 * random mode in one partition of 16: 16^-15), and without it they all come
 * from the one normal cache; a type of a zone (malloc_types.numzones) has
 * the zone's buckets instead. With allocation profiling on, each block is
 * charged in /proc/allocinfo to its own call site, not to a helper of the
 * C API, also where the C API's general path allocates it (a zone).
 */
static void kmalloc_partitions_and_call_sites(struct kunit *test)
{
	DECLARE_BITMAP(plain_parts, NR_KMALLOC_TYPES) = {};
	DECLARE_BITMAP(typed_parts, NR_KMALLOC_TYPES) = {};
	struct malloc_type *t = M_KUNIT_C_PATH, *def = NULL;
	struct partition_site sites[PARTITION_SITES] = {};
	u32 zone = READ_ONCE(t->ks_mti.mti_zone);
	unsigned int want, nplain, ntyped;
	struct partition_site *s;
	const char *name;
	int r, i, k;

	if (IS_ENABLED(CONFIG_MALLOC_TYPES_DEFAULT) && malloc_type_default_tags())
		def = this_file_default_type(test);

	for (r = 0; r < 2; r++) {
		PARTITION_SITE(&sites[0], r, t);
		PARTITION_SITE(&sites[1], r, t);
		PARTITION_SITE(&sites[2], r, t);
		PARTITION_SITE(&sites[3], r, t);
		PARTITION_SITE(&sites[4], r, t);
		PARTITION_SITE(&sites[5], r, t);
		PARTITION_SITE(&sites[6], r, t);
		PARTITION_SITE(&sites[7], r, t);
		PARTITION_SITE(&sites[8], r, t);
		PARTITION_SITE(&sites[9], r, t);
		PARTITION_SITE(&sites[10], r, t);
		PARTITION_SITE(&sites[11], r, t);
		PARTITION_SITE(&sites[12], r, t);
		PARTITION_SITE(&sites[13], r, t);
		PARTITION_SITE(&sites[14], r, t);
		PARTITION_SITE(&sites[15], r, t);
	}

	for (i = 0; i < PARTITION_SITES; i++) {
		s = &sites[i];
		for (r = 0; r < 2; r++) {
			KUNIT_ASSERT_NOT_NULL(test, s->plain[r]);
			KUNIT_ASSERT_NOT_NULL(test, s->typed[r]);
		}
		k = block_partition(s->plain[0], PARTITION_SIZE);
		KUNIT_EXPECT_GE_MSG(test, k, 0, "plain site %d: no partition", i);
		KUNIT_EXPECT_EQ(test, block_partition(s->plain[1], PARTITION_SIZE), k);
		if (k >= 0)
			__set_bit(k, plain_parts);
		if (zone) {
			/* A type of a zone has its zone's buckets, partitions or not. */
			name = block_cache_name(s->typed[0]);
			KUNIT_EXPECT_TRUE_MSG(test, str_has_prefix(name, "malloc-zone"),
					      "typed site %d: %s", i, name);
		} else {
			k = block_partition(s->typed[0], PARTITION_SIZE);
			KUNIT_EXPECT_GE_MSG(test, k, 0, "typed site %d: no partition", i);
			KUNIT_EXPECT_EQ(test, block_partition(s->typed[1], PARTITION_SIZE), k);
			if (k >= 0)
				__set_bit(k, typed_parts);
		}

		/* Each block carries the record of its type. */
		KUNIT_EXPECT_PTR_EQ(test, malloc_type_obj_take(s->typed[0], t), t);
		KUNIT_EXPECT_EQ(test, malloc_type_obj_set(s->typed[0], t, GFP_KERNEL), 0);
		if (def) {
			KUNIT_EXPECT_PTR_EQ(test, malloc_type_obj_take(s->plain[0], NULL), def);
			KUNIT_EXPECT_EQ(test, malloc_type_obj_set(s->plain[0], def, GFP_KERNEL), 0);
		}

		if (mem_alloc_profiling_enabled()) {
			expect_call_site(test, s->typed[0], s->line, "kmalloc_mt()");
			expect_call_site(test, s->plain[0], s->line, "kmalloc()");
		}
	}

	want = KMALLOC_PARTITION_CACHES_NR ? 2 : 1;
	nplain = bitmap_weight(plain_parts, NR_KMALLOC_TYPES);
	ntyped = bitmap_weight(typed_parts, NR_KMALLOC_TYPES);
	KUNIT_EXPECT_GE(test, nplain, want);
	if (!zone)
		KUNIT_EXPECT_GE(test, ntyped, want);
	if (!KMALLOC_PARTITION_CACHES_NR && !zone)
		KUNIT_EXPECT_TRUE(test, bitmap_equal(plain_parts, typed_parts,
						     NR_KMALLOC_TYPES));
	kunit_info(test, "%d call sites: kmalloc() in %u partitions, kmalloc_mt() in %u%s\n",
		   PARTITION_SITES, nplain, ntyped,
		   mem_alloc_profiling_enabled() ? ", call sites checked" : "");

	for (i = 0; i < PARTITION_SITES; i++) {
		for (r = 0; r < 2; r++) {
			kfree(sites[i].plain[r]);
			kfree_mt(sites[i].typed[r], t);
		}
	}
}

/*
 * The ways FreeBSD code places its types: a static type of this file, and a
 * type defined in another file and declared in a header, allocated with
 * from both files into one set of counters.
 */
static void static_and_shared_types(struct kunit *test)
{
	void *a, *b;

	KUNIT_EXPECT_STREQ(test, M_KUNIT_C_STATIC->ks_shortdesc, "kunit c static");
	KUNIT_EXPECT_NOT_NULL(test, READ_ONCE(M_KUNIT_C_STATIC->ks_mti.mti_stats));
	a = kmalloc_mt(100, GFP_KERNEL, M_KUNIT_C_STATIC);
	KUNIT_ASSERT_NOT_NULL(test, a);
	expect_stats(test, M_KUNIT_C_STATIC, kmalloc_size_roundup(100), 0, 1, 0);
	kfree_mt(a, M_KUNIT_C_STATIC);
	expect_stats(test, M_KUNIT_C_STATIC, kmalloc_size_roundup(100),
		     kmalloc_size_roundup(100), 1, 1);

	KUNIT_EXPECT_NOT_NULL(test, READ_ONCE(M_KUNIT_C_SHARED->ks_mti.mti_stats));
	a = malloc_type_c_test_shared_alloc(10);
	KUNIT_ASSERT_NOT_NULL(test, a);
	b = kmalloc_mt(200, GFP_KERNEL, M_KUNIT_C_SHARED);
	KUNIT_ASSERT_NOT_NULL(test, b);
	expect_stats(test, M_KUNIT_C_SHARED,
		     kmalloc_size_roundup(10) + kmalloc_size_roundup(200), 0, 2, 0);
	kfree_mt(a, M_KUNIT_C_SHARED);
	kfree_mt(b, M_KUNIT_C_SHARED);
	KUNIT_EXPECT_EQ(test, mt_mem_use(M_KUNIT_C_SHARED), 0);
}

static struct kunit_case malloc_type_c_cases[] = {
	KUNIT_CASE(malloc_define_registers),
	KUNIT_CASE(static_and_shared_types),
	KUNIT_CASE(kmalloc_kzalloc_kfree),
	KUNIT_CASE(zero_size_and_null),
	KUNIT_CASE(arrays_and_overflow),
	KUNIT_CASE(krealloc_rules),
	KUNIT_CASE(kreallocf_frees_on_failure),
	KUNIT_CASE(kfree_sensitive_frees_the_block),
	KUNIT_CASE(allocated_and_freed),
	KUNIT_CASE(typed_pages),
	KUNIT_CASE(usable_size),
	KUNIT_CASE(kvmalloc_kvfree),
	KUNIT_CASE(zones_from_c),
	KUNIT_CASE_SLOW(kfree_charges_back),
	KUNIT_CASE(default_type_of_kmalloc),
	KUNIT_CASE(kmalloc_mt_in_kmalloc_path),
	KUNIT_CASE(zone_memuse_follows_blocks),
	KUNIT_CASE(early_slab_blocks_are_charged),
	KUNIT_CASE(kmalloc_partitions_and_call_sites),
	{}
};

static struct kunit_suite malloc_type_c_suite = {
	.name = "malloc_type_c",
	.test_cases = malloc_type_c_cases,
};

kunit_test_suite(malloc_type_c_suite);

MODULE_DESCRIPTION("KUnit tests of the C API of malloc types");
MODULE_LICENSE("GPL");
