/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Malloc types: what the files of mm/ share of the registry (mm/malloc_type.c)
 * and of the parts it calls. Internal to mm/.
 */
#ifndef _MM_MALLOC_TYPE_INTERNAL_H
#define _MM_MALLOC_TYPE_INTERNAL_H

#include <linux/init.h>
#include <linux/list.h>
#include <linux/malloc_type.h>
#include <linux/mutex.h>

/*
 * The registered types, newest (highest mti_id) first, linked by
 * mti_list: changed under malloc_type_mutex, with the RCU list functions,
 * so that readers may walk it under rcu_read_lock() too. A type taken out
 * stays valid for the readers that may still see it until a grace period
 * has elapsed.
 */
extern struct mutex malloc_type_mutex;
extern struct list_head malloc_type_list;

/*
 * The number of types unregistered since boot, incremented (under the
 * registry mutex) before a type leaves the list: a reader that saw the
 * same count before and after finding a type knows the type is still
 * registered.
 */
extern unsigned long malloc_type_unregistered;

struct malloc_type;

#ifdef CONFIG_MALLOC_TYPES
/*
 * Sets up the registry and registers vmlinux's types, once the slab,
 * per-CPU and vmalloc allocators are up (called by mm_core_init()).
 */
void __init malloc_type_init(void);
#else
static inline void malloc_type_init(void)
{
}
#endif

/* Creates the buckets of the zones (mm/malloc_type_kmalloc.c). */
void __init malloc_type_zones_init(void);

#ifdef CONFIG_MALLOC_TYPES
/*
 * The mts_size bit of each kmalloc size class, by the slot of
 * kmalloc_caches[][] that kmalloc_slab() picks for a request of the class's
 * object size; 0 for a slot without a class. A slot is at most fls() of an
 * unsigned int. Set by malloc_type_kmalloc_bits_init() (mm/malloc_type_slab.c),
 * read by the slab allocator's kmalloc hooks (mm/slub.c).
 */
#define MALLOC_TYPE_KMALLOC_SLOTS	(1 + BITS_PER_TYPE(unsigned int))
extern u64 malloc_type_kmalloc_bits[MALLOC_TYPE_KMALLOC_SLOTS];
/* The zindx of each slot's size class; MALLOC_TYPE_ZONE_NONE for none. */
extern u8 malloc_type_kmalloc_zindx[MALLOC_TYPE_KMALLOC_SLOTS];
void __init malloc_type_kmalloc_bits_init(void);

/* Counts @size bytes more of kmalloc slot @slot in use charged to a type. */
static __always_inline void malloc_type_zone_charge(unsigned int slot,
						    unsigned int size)
{
	this_cpu_add(malloc_type_zone_counters.mzc_memuse[malloc_type_kmalloc_zindx[slot]],
		     size);
}

/* Counts @size bytes of kmalloc slot @slot less in use charged to a type. */
static __always_inline void malloc_type_zone_uncharge(unsigned int slot,
						      unsigned int size)
{
	this_cpu_sub(malloc_type_zone_counters.mzc_memuse[malloc_type_kmalloc_zindx[slot]],
		     size);
}

struct kmem_cache;

/*
 * The charge of a block that the slab allocator's kmalloc paths make
 * (mm/slub.c), to kmalloc_mt()'s type or to a default type
 * (mm/malloc_type_default.c), where it cannot be made inline
 * (mm/malloc_type_slab.c).
 */
void malloc_type_kmalloc_charge(struct kmem_cache *s, void *object,
				struct malloc_type *mtp, gfp_t flags,
				bool explicit);
#endif

/* Sets a type's mti_probes[] from the selection (mm/malloc_type_probes.c). */
int malloc_type_probes_apply(struct malloc_type *mtp);

/*
 * Peak tracking (mm/malloc_type_peak.c) at registration and
 * unregistration, registry mutex held.
 */
void malloc_type_peak_register(struct malloc_type *mtp);
void malloc_type_peak_unregister(struct malloc_type *mtp);

#ifdef CONFIG_FAIL_MALLOC_TYPE
/*
 * Failure injection (mm/malloc_type_fail.c): a type that registers is
 * selected when a pattern of fail_malloc_type/types matches it, and a type
 * that goes is deselected. Registry mutex held.
 */
void malloc_type_fail_register(struct malloc_type *mtp);
void malloc_type_fail_unregister(struct malloc_type *mtp);
#else
static inline void malloc_type_fail_register(struct malloc_type *mtp)
{
}

static inline void malloc_type_fail_unregister(struct malloc_type *mtp)
{
}
#endif

#ifdef CONFIG_MALLOC_TYPE_MEMGUARD
/*
 * memguard (mm/malloc_type_memguard.c): a type that registers is guarded
 * when a pattern of memguard/types matches it, and a type that goes is not
 * any more. Registry mutex held.
 */
void malloc_type_memguard_register(struct malloc_type *mtp);
void malloc_type_memguard_unregister(struct malloc_type *mtp);
#else
static inline void malloc_type_memguard_register(struct malloc_type *mtp)
{
}

static inline void malloc_type_memguard_unregister(struct malloc_type *mtp)
{
}
#endif

/*
 * The memory of modules' types (mm/malloc_type_module.c): the registry
 * counts a module's type in its area while the type is registered. Registry
 * mutex held.
 */
#ifdef CONFIG_MODULES
void __init malloc_type_areas_init(void);
const char *malloc_type_area_register(struct malloc_type *mtp);
void malloc_type_area_unregister(struct malloc_type *mtp);
#else
static inline void malloc_type_areas_init(void)
{
}

static inline const char *malloc_type_area_register(struct malloc_type *mtp)
{
	return NULL;
}

static inline void malloc_type_area_unregister(struct malloc_type *mtp)
{
}
#endif

struct module;

/*
 * The default types (mm/malloc_type_default.c): registered by the registry
 * (mm/malloc_type.c) in memory that malloc_type_default_free() frees; a
 * module's is made while the module is coming and taken from it when the
 * module is freed. Registry mutex held by the callers of
 * malloc_type_register_default() and malloc_type_default_module_take().
 */
#ifdef CONFIG_MALLOC_TYPES_DEFAULT
int malloc_type_register_default(struct malloc_type *mtp, const char *owner,
				 bool module);
void __init malloc_type_default_init(void);
void malloc_type_default_free(struct malloc_type *mtp);
#else
static inline void malloc_type_default_init(void)
{
}

static inline void malloc_type_default_free(struct malloc_type *mtp)
{
}
#endif
#if defined(CONFIG_MALLOC_TYPES_DEFAULT) && defined(CONFIG_MODULES)
void malloc_type_default_module_coming(struct module *mod);
struct malloc_type *malloc_type_default_module_take(struct module *mod);
#else
static inline void malloc_type_default_module_coming(struct module *mod)
{
}

static inline struct malloc_type *
malloc_type_default_module_take(struct module *mod)
{
	return NULL;
}
#endif

struct iov_iter;
struct malloc_type_stream;

/* /proc/malloc_stats (mm/malloc_type_stream.c), for its KUnit tests too. */
struct malloc_type_stream *malloc_type_stream_open(void);
ssize_t malloc_type_stream_read(struct malloc_type_stream *st,
				struct iov_iter *to, loff_t *pos);
void malloc_type_stream_release(struct malloc_type_stream *st);

#endif /* _MM_MALLOC_TYPE_INTERNAL_H */
