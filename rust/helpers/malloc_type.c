// SPDX-License-Identifier: GPL-2.0

#include <linux/slab.h>

/*
 * kmalloc() from a cache the caller looked up: what kmalloc() does for a
 * size known at compile time, with the allocation profiling hook, whose tag
 * names no default type: the caller charges the block to its own type.
 */
__rust_helper void *__must_check __alloc_size(3)
rust_helper_malloc_type_kmalloc_cache(struct kmem_cache *s, gfp_t flags,
				      size_t size)
{
	return alloc_hooks_typed(__kmalloc_cache_noprof(s, flags, size));
}

/* kmalloc() of a size above KMALLOC_MAX_CACHE_SIZE: pages. */
__rust_helper void *__must_check __alloc_size(1)
rust_helper_malloc_type_kmalloc_large(size_t size, gfp_t flags)
{
	return alloc_hooks_typed(__kmalloc_large_noprof(size, flags));
}
