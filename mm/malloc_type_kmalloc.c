// SPDX-License-Identifier: GPL-2.0
/*
 * Malloc types: the kmalloc memory of the typed allocators.
 *
 * Zones: with malloc_types.numzones=N (default 1) on the command line, zones
 * 1..N-1 are dedicated sets of kmalloc buckets (kmem_buckets_create()) and
 * each type is placed in zone hash(name) % N; zone 0 is the shared kmalloc
 * caches. malloc_type_zone_alloc() allocates from a type's zone.
 *
 * Blocks: what a typed block consumes, what its owner may use of it, and
 * how much of it a resize copies, found from the block itself, for the
 * accounting of the typed allocators (rust/kernel/malloc_type/).
 */

#define pr_fmt(fmt) "malloc_types: " fmt

#include <linux/init.h>
#include <linux/jhash.h>
#include <linux/kasan.h>
#include <linux/kfence.h>
#include <linux/malloc_type.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>

#include "malloc_type_internal.h"
#include "slab.h"

#ifdef MODULE_PARAM_PREFIX
#undef MODULE_PARAM_PREFIX
#endif
#define MODULE_PARAM_PREFIX "malloc_types."

static unsigned int numzones = 1;
module_param(numzones, uint, 0444);
MODULE_PARM_DESC(numzones, "Number of zones (sets of kmalloc buckets) types are spread over");

/* Zone i > 0 allocates from malloc_type_buckets[i]; [0] is unused. */
static kmem_buckets *malloc_type_buckets[MALLOC_TYPE_MAX_ZONES];

/**
 * malloc_type_zone_for_name() - the zone a type of this name is placed in
 * @name: the type's short description.
 * @nzones: the number of zones.
 *
 * Return: jhash(name) % @nzones, or 0 when @nzones is 0 or 1.
 */
unsigned int malloc_type_zone_for_name(const char *name, unsigned int nzones)
{
	if (nzones <= 1)
		return 0;
	return jhash(name, strlen(name), 0) % nzones;
}
EXPORT_SYMBOL_GPL(malloc_type_zone_for_name);

/**
 * malloc_type_numzones() - the number of zones in use
 *
 * Return: 1 unless malloc_types.numzones= asked for more and their buckets
 * could be created.
 */
unsigned int malloc_type_numzones(void)
{
	return READ_ONCE(numzones);
}
EXPORT_SYMBOL_GPL(malloc_type_numzones);

/**
 * malloc_type_zone_alloc() - allocate from the buckets of a type's zone
 * @mtp: the type.
 * @size: bytes wanted.
 * @flags: GFP flags.
 * @node: the NUMA node, or NUMA_NO_NODE.
 *
 * A set of buckets has caches of the normal kind only: flags that ask for
 * memory of another kind (__GFP_DMA, __GFP_RECLAIMABLE) are served by the
 * shared kmalloc caches of that kind, as kmalloc_node() serves them.
 * __GFP_ACCOUNT stays in the zone: the buckets charge the memory cgroup as
 * the kmalloc-cg caches do (msg_msg's buckets are used so). The node is
 * honoured either way.
 *
 * No accounting is done here; the Rust side accounts after success.
 *
 * Return: the memory (free it with kfree()), or NULL.
 */
void *malloc_type_zone_alloc(const struct malloc_type *mtp, size_t size,
			     gfp_t flags, int node)
{
	u32 zone = READ_ONCE(mtp->ks_mti.mti_zone);
	/* Unused without CONFIG_SLAB_BUCKETS, where the allocation ignores it. */
	kmem_buckets *b __maybe_unused = NULL;
	/*
	 * One kmalloc token for both allocations below: one partition,
	 * whichever tag the caller keeps. Unused without partitions.
	 */
	kmalloc_token_t token __maybe_unused = __kmalloc_token(size);

	if (zone > 0 && zone < MALLOC_TYPE_MAX_ZONES &&
	    !(flags & (__GFP_DMA | __GFP_RECLAIMABLE)))
		b = malloc_type_buckets[zone];
#ifdef CONFIG_MEM_ALLOC_PROFILING
	/*
	 * A C caller comes through kmalloc_mt() and friends, whose
	 * alloc_hooks_typed() made the allocation tag of its call site
	 * current: keep it, so that /proc/allocinfo names that call site.
	 */
	if (current->alloc_tag)
		return __kmalloc_node_track_caller_noprof(PASS_KMALLOC_PARAMS(size, b, token),
							  flags, node, _RET_IP_);
#endif
	/* The caller charges the block to @mtp: no default type. */
	return alloc_hooks_typed(__kmalloc_node_track_caller_noprof(PASS_KMALLOC_PARAMS(size, b,
			token), flags, node, _RET_IP_));
}
EXPORT_SYMBOL_GPL(malloc_type_zone_alloc);

/**
 * malloc_type_block_size() - the size a typed block is accounted at
 * @p: a block of the typed allocation API: kmalloc memory (the shared caches,
 *	a zone's buckets, or a large kmalloc), or vmalloc memory of the kvmalloc
 *	functions; or NULL or ZERO_SIZE_PTR.
 *
 * What the block consumes, found from the block itself, so that a free needs
 * no size (as FreeBSD's free(9) takes none): the object size of the slab
 * cache that holds it (the kmalloc size class, also for a KFENCE object,
 * whose slab is its cache's), the pages of a large kmalloc block, or the
 * requested size of a vmalloc area rounded up to whole pages; for a block
 * memguard guards, what it recorded as charged. These are the sizes the
 * allocation was charged: the accounting rounds a request up to its size
 * class or pages the same way.
 *
 * Any context.
 *
 * Return: the size in bytes; 0 for NULL and ZERO_SIZE_PTR, and for a pointer
 * that is none of these blocks (with a warning).
 */
size_t malloc_type_block_size(const void *p)
{
	struct page *page;
	struct slab *slab;

	if (unlikely(ZERO_OR_NULL_PTR(p)))
		return 0;
	if (unlikely(is_vmalloc_addr(p))) {
		struct vm_struct *vm;
#ifdef CONFIG_MALLOC_TYPE_MEMGUARD
		size_t charged;

		if (malloc_type_memguard_block(p, &charged))
			return charged;
#endif
		vm = find_vm_area(p);

		if (WARN_ON_ONCE(!vm))
			return 0;
		return PAGE_ALIGN(vm->requested_size);
	}
	page = virt_to_page(p);
	if (PageLargeKmalloc(page))
		return large_kmalloc_size(page);
	slab = page_slab(page);
	if (WARN_ON_ONCE(!slab))
		return 0;
	return slab->slab_cache->object_size;
}
EXPORT_SYMBOL_GPL(malloc_type_block_size);

/**
 * malloc_usable_size() - the bytes of a typed block its owner may use
 * @p: a block of the typed allocation API (as for malloc_type_block_size()),
 *	or NULL or ZERO_SIZE_PTR.
 *
 * FreeBSD's malloc_usable_size(9), with the semantics of ksize(): the size
 * the block was charged to its type (malloc_type_block_size(): its size
 * class, pages, or vmalloc pages), except for a KFENCE object, of which only
 * the requested size is usable (its guard page may start right after), and
 * for a block memguard guards (CONFIG_MALLOC_TYPE_MEMGUARD), likewise. So
 * the usable size never exceeds the charge, and equals it but for these.
 *
 * Like ksize() it only reports: past the size the block was requested with,
 * KASAN keeps the bytes poisoned and the compiler's __alloc_size() bounds
 * stay, so a caller that wants them resizes the block to this size first.
 * For a kmalloc block krealloc_mt() to the usable size keeps the block and
 * what its type is charged (the same size class); for a kvmalloc block the
 * same holds of a resize within its pages.
 *
 * Context: any context.
 *
 * Return: the usable size in bytes; 0 for NULL and ZERO_SIZE_PTR, and for a
 * block KASAN finds freed or invalid (which it reports).
 */
size_t malloc_usable_size(const void *p)
{
	size_t size __maybe_unused;

	if (unlikely(ZERO_OR_NULL_PTR(p)) || !kasan_check_byte(p))
		return 0;
	if (is_kfence_address(p))
		return kfence_ksize(p);
#ifdef CONFIG_MALLOC_TYPE_MEMGUARD
	/* A guarded block ends where its guard page starts. */
	size = malloc_type_memguard_block(p, NULL);
	if (size)
		return size;
#endif
	return malloc_type_block_size(p);
}
EXPORT_SYMBOL_GPL(malloc_usable_size);

/**
 * malloc_type_block_copy() - copy the start of a kmalloc block, slack included
 * @to: the destination, valid for @len bytes.
 * @from: a kmalloc block of at least @len bytes of size class (see
 *	malloc_type_block_size()).
 * @len: bytes to copy.
 *
 * A resize that knows only the size class of the old block copies up to that
 * size, past the size it was requested with, which KASAN poisons: copy with
 * KASAN checks off, as krealloc() does. A KFENCE object, or a block memguard
 * guards, may end where its guard page starts: at most its requested size
 * is copied from it.
 *
 * Any context.
 */
void malloc_type_block_copy(void *to, const void *from, size_t len)
{
	if (is_kfence_address(from))
		len = min(len, kfence_ksize(from));
#ifdef CONFIG_MALLOC_TYPE_MEMGUARD
	/* A guarded block ends where its guard page starts. */
	len = min(len, malloc_type_memguard_block(from, NULL) ?: len);
#endif
	kasan_disable_current();
	memcpy(to, kasan_reset_tag(from), len);
	kasan_enable_current();
}
EXPORT_SYMBOL_GPL(malloc_type_block_copy);

#if IS_ENABLED(CONFIG_RUST_MALLOC_TYPE_KUNIT_TEST) || \
	IS_ENABLED(CONFIG_MALLOC_TYPES_C_KUNIT_TEST)
/**
 * malloc_type_test_cache_of() - the slab cache of a kmalloc block, for KUnit
 * @p: a kmalloc block.
 * @name: set to the name of the cache that holds @p.
 * @usersize: set to its usercopy window in bytes (0 without
 *	CONFIG_HARDENED_USERCOPY).
 *
 * For the KUnit tests of the zones (rust/kernel/malloc_type/alloc.rs,
 * mm/malloc_type_c_test.c).
 *
 * Return: false when @p is not in a slab (a large kmalloc block).
 */
bool malloc_type_test_cache_of(const void *p, const char **name,
			       unsigned int *usersize)
{
	struct slab *slab = virt_to_slab(p);

	if (!slab)
		return false;
	*name = slab->slab_cache->name;
#ifdef CONFIG_HARDENED_USERCOPY
	*usersize = slab->slab_cache->usersize;
#else
	*usersize = 0;
#endif
	return true;
}
#endif

/**
 * malloc_type_zones_init() - create the buckets of the zones
 *
 * Clamps malloc_types.numzones= to what can be made, with a warning, and
 * creates the buckets of zones 1 and up; a zone whose buckets cannot be
 * created ends the zones.
 *
 * Context: malloc_type_init(), before any type is registered.
 */
void __init malloc_type_zones_init(void)
{
	unsigned int i;

	if (numzones < 1)
		numzones = 1;
	if (numzones > MALLOC_TYPE_MAX_ZONES) {
		pr_warn("numzones=%u is too large, using %u\n", numzones,
			MALLOC_TYPE_MAX_ZONES);
		numzones = MALLOC_TYPE_MAX_ZONES;
	}
	if (numzones > 1 && !IS_ENABLED(CONFIG_SLAB_BUCKETS)) {
		pr_warn("numzones=%u needs CONFIG_SLAB_BUCKETS, using 1\n",
			numzones);
		numzones = 1;
	}
	for (i = 1; i < numzones; i++) {
		char name[24];

		snprintf(name, sizeof(name), "malloc-zone%u", i);
		/*
		 * The whole of every object may be copied to and from user
		 * space (a usersize of INT_MAX is clamped to each bucket's
		 * size), as with the shared kmalloc caches: typed memory
		 * holds what user space sends, and a window of 0 would make
		 * every copy_{to,from}_user() of it a usercopy BUG under
		 * CONFIG_HARDENED_USERCOPY.
		 */
		malloc_type_buckets[i] = kmem_buckets_create(name, 0, 0,
							     INT_MAX, NULL);
		if (!malloc_type_buckets[i]) {
			pr_warn("cannot create zone %u, using %u zones\n", i,
				i);
			numzones = i;
			break;
		}
	}
}
