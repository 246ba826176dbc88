// SPDX-License-Identifier: GPL-2.0
/*
 * The malloc type of a kmalloc block, recorded with the block.
 *
 * kmalloc_mt() and its friends record the type they charge a block to, so
 * that whoever frees the block, with kfree_mt(), kfree(), kvfree() or
 * kfree_rcu(), charges back that type: the slab allocator's free hooks
 * (mm/slub.c) find the record, uncharge the size the block consumed and
 * clear the record; kfree_mt() takes it off as it frees (kfree_size_mt())
 * and charges it back itself. The record of a slab object is the last slot of its
 * struct slabobj_ext, after memcg's objcg and allocation profiling's codetag;
 * the record of a large kmalloc is page->private of its first page, which
 * nothing else uses for such a page; a KFENCE object keeps it in KFENCE's
 * metadata, and KFENCE's free charges it back (mm/kfence/core.c).
 *
 * A block may outlive the module of its type: a module's types are in
 * memory of their own, and the registry keeps a type that blocks with a
 * record are charged to after its module unloaded, until they are freed
 * (mm/malloc_type_module.c). A type that cannot be kept so is not recorded
 * (MALLOC_TYPE_F_RECORDS). A block of such a type, and a block that can have
 * no record (memguard's and vmalloc's blocks, an object of a slab whose
 * extension vector could not be allocated), is charged back to the type that
 * the C API's free is given.
 */

#include <linux/kfence.h>
#include <linux/malloc_type.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/sysctl.h>

#include "malloc_type_internal.h"
#include "slab.h"

/*
 * Swaps the record of the block @p with *@mtp. With @create, a slab without
 * an extension vector gets one, allocated with @gfp.
 *
 * Return: 0; -EOPNOTSUPP if @p cannot have a record (or has none, without
 * @create); -ENOMEM if its slab's vector could not be allocated.
 */
static int malloc_type_obj_xchg(const void *p, struct malloc_type **mtp,
				bool create, gfp_t gfp)
{
	struct malloc_type *old;
	unsigned long obj_exts;
	struct kmem_cache *s;
	struct page *page;
	struct slab *slab;

	if (is_vmalloc_addr(p))
		return -EOPNOTSUPP;
	if (is_kfence_address(p)) {
		*mtp = kfence_malloc_type_xchg(p, *mtp);
		return 0;
	}

	page = virt_to_page(p);
	slab = page_slab(page);
	if (!slab) {
		if (!PageLargeKmalloc(page))
			return -EOPNOTSUPP;
		old = (struct malloc_type *)page_private(page);
		set_page_private(page, (unsigned long)*mtp);
		*mtp = old;
		return 0;
	}

	s = slab->slab_cache;
	obj_exts = slab_obj_exts(slab);
	if (!obj_exts) {
		if (!create || (s->flags & SLAB_NO_OBJ_EXT))
			return -EOPNOTSUPP;
		if (alloc_slab_obj_exts(slab, s, gfp, SLAB_ALLOC_DEFAULT))
			return -ENOMEM;
		obj_exts = slab_obj_exts(slab);
	}

	*mtp = slab_malloc_type_xchg(s, slab, obj_exts, p, *mtp);
	return 0;
}

/**
 * malloc_type_obj_set() - record the malloc type a kmalloc block is charged to
 * @p: a live block of kmalloc, with no record.
 * @mtp: the type it is charged to.
 * @gfp: the flags of its allocation, for the slab's extension vector.
 *
 * After this, freeing @p in any way charges it back to @mtp (the size it
 * consumed: its slab's object size, or the pages of a large kmalloc).
 *
 * Context: as for kmalloc() with @gfp.
 * Return: 0; -EOPNOTSUPP if @mtp is not registered, or a module's type that
 * cannot outlive its module (MALLOC_TYPE_F_RECORDS), or @p cannot have a
 * record; -ENOMEM if the record could not be allocated. Without a record, the
 * block is charged back to the type given to its free.
 */
int malloc_type_obj_set(const void *p, struct malloc_type *mtp, gfp_t gfp)
{
	struct malloc_type *old = mtp;
	u32 flags;
	int ret;

	flags = READ_ONCE(mtp->ks_mti.mti_flags);
	if (!(flags & MALLOC_TYPE_F_RECORDS))
		return -EOPNOTSUPP;
	ret = malloc_type_obj_xchg(p, &old, true, gfp);
	VM_WARN_ON_ONCE(!ret && old);
	/* Racing setters store the same value. */
	if (!ret && !(flags & MALLOC_TYPE_F_RECORDED))
		WRITE_ONCE(mtp->ks_mti.mti_flags,
			   flags | MALLOC_TYPE_F_RECORDED);
	return ret;
}

/**
 * malloc_type_obj_take() - take the record of the malloc type off a block
 * @p: NULL, ZERO_SIZE_PTR or a live block of kmalloc or kvmalloc.
 * @mtp: the type the caller believes @p is charged to, or NULL.
 *
 * Clears the record of @p, so that the caller charges the block back itself
 * (kfree_mt() and friends) or moves the record to a new block (krealloc_mt()).
 * Under CONFIG_DEBUG_VM, a record other than @mtp warns once: the caller's
 * type is wrong, and the record is the type the block was charged to.
 *
 * Context: any context.
 * Return: the type @p was charged to, or NULL if it has no record.
 */
struct malloc_type *malloc_type_obj_take(const void *p, struct malloc_type *mtp)
{
	struct malloc_type *old = NULL;

	if (ZERO_OR_NULL_PTR(p) || malloc_type_obj_xchg(p, &old, false, 0))
		return NULL;
	VM_WARN_ONCE(old && mtp && old != mtp,
		     "malloc type: a block of %s freed as %s\n",
		     old->ks_shortdesc, mtp->ks_shortdesc);
	return old;
}

u64 malloc_type_kmalloc_bits[MALLOC_TYPE_KMALLOC_SLOTS] __ro_after_init;
u8 malloc_type_kmalloc_zindx[MALLOC_TYPE_KMALLOC_SLOTS] __ro_after_init = {
	[0 ... MALLOC_TYPE_KMALLOC_SLOTS - 1] = MALLOC_TYPE_ZONE_NONE,
};

/**
 * malloc_type_kmalloc_bits_init() - find the slots of the kmalloc size classes
 *
 * Fills malloc_type_kmalloc_bits[] and malloc_type_kmalloc_zindx[], by which
 * the slab allocator's hooks (mm/slub.c) find the size class of a block: the
 * slot of each size class is the one kmalloc_slab() picks for a request of
 * the class's size (kmalloc_size_slot()).
 *
 * Context: malloc_type_init(), after the size classes are read.
 */
void __init malloc_type_kmalloc_bits_init(void)
{
	unsigned int slot;
	size_t size;
	u32 z;

	for (z = 0; z < MALLOC_TYPE_ZONE_COUNT_MAX &&
	     (size = malloc_type_zone_size(z)); z++) {
		slot = kmalloc_size_slot(size);
		if (WARN_ON_ONCE(slot >= ARRAY_SIZE(malloc_type_kmalloc_bits)))
			continue;
		malloc_type_kmalloc_bits[slot] = BIT_ULL(z);
		malloc_type_kmalloc_zindx[slot] = z;
	}
}

#ifdef CONFIG_SYSCTL
/* Fills @memuse with the sums of the classes' counters; returns how many. */
static unsigned int malloc_zone_memuse_sum(unsigned long *memuse,
					   unsigned int max)
{
	unsigned int n;
	int cpu;

	for (n = 0; n < max && malloc_type_zone_size(n); n++) {
		s64 sum = 0;

		for_each_possible_cpu(cpu)
			sum += (s64)READ_ONCE(per_cpu(malloc_type_zone_counters,
						      cpu).mzc_memuse[n]);
		memuse[n] = max_t(s64, sum, 0);
	}
	return n;
}

/*
 * vm.malloc_zone_memuse: the bytes of kmalloc blocks in use charged to types,
 * by zindx (the classes of vm.malloc_zone_sizes), summed over the CPUs; what
 * a reader compares with the bytes in use of the kmalloc caches of each size
 * to see what no type holds. A sum that a concurrent free on another CPU
 * makes negative reads as 0.
 */
static int malloc_zone_memuse_handler(const struct ctl_table *table,
				      int write, void *buffer, size_t *lenp,
				      loff_t *ppos)
{
	unsigned long memuse[MALLOC_TYPE_ZONE_NONE];
	const struct ctl_table t = {
		.procname	= table->procname,
		.data		= memuse,
		.maxlen		= malloc_zone_memuse_sum(memuse, ARRAY_SIZE(memuse)) *
				  sizeof(memuse[0]),
		.mode		= table->mode,
	};

	if (write)
		return -EPERM;
	return proc_doulongvec_minmax(&t, write, buffer, lenp, ppos);
}

static const struct ctl_table malloc_type_slab_sysctls[] = {
	{
		.procname	= "malloc_zone_memuse",
		.mode		= 0444,
		.proc_handler	= malloc_zone_memuse_handler,
	},
};

static int __init malloc_type_slab_sysctl_init(void)
{
	register_sysctl_init("vm", malloc_type_slab_sysctls);
	return 0;
}
subsys_initcall(malloc_type_slab_sysctl_init);
#endif

/**
 * malloc_type_kmalloc_charge() - charge a kmalloc block to a type, in general
 * @s: the cache of @object, or NULL for a large kmalloc.
 * @object: the block, just allocated.
 * @mtp: the type: kmalloc_mt()'s, or the default type of the call site.
 * @flags: the flags of the allocation.
 * @explicit: whether @mtp is kmalloc_mt()'s type.
 *
 * The slab allocator's kmalloc hook (mm/slub.c) charges most blocks inline;
 * this is the rest: a large kmalloc, a KFENCE object, a slab that has no
 * extension vector yet, a charge with an event or a peak. Records @mtp with
 * the block and charges it the size the block consumes (its cache's object
 * size, the pages of a large kmalloc), with the size class. A block that can
 * have no record (its slab's extension vector could not be allocated) is
 * charged all the same to kmalloc_mt()'s type, which kfree_mt() charges back
 * (as FreeBSD, which needs no record), and not to a default type, which only
 * a record could charge back.
 *
 * Context: as for kmalloc() with @flags.
 */
void malloc_type_kmalloc_charge(struct kmem_cache *s, void *object,
				struct malloc_type *mtp, gfp_t flags,
				bool explicit)
{
	size_t size;

	if (malloc_type_obj_set(object, mtp, flags) && !explicit)
		return;
	size = s ? s->object_size : page_size(virt_to_page(object));
	malloc_type_kmalloc_charged(mtp, size);
}

/* The large kmalloc free hook, for a page whose private field is a record. */
void __malloc_type_large_kmalloc_free_hook(struct page *page)
{
	struct malloc_type *mtp = (struct malloc_type *)page_private(page);

	set_page_private(page, 0);
	malloc_type_kmalloc_uncharged(mtp, page_size(page));
}
