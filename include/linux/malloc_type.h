/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Malloc types: FreeBSD-style typed kernel allocation accounting.
 *
 * A malloc type is a static, named object defined with the Rust macro
 * kernel::malloc_define!(). It carries per-CPU statistics laid out as
 * FreeBSD's struct malloc_type_stats (see <uapi/linux/malloc_type.h>).
 *
 * Types are found without any call from their owner: the macro places a
 * pointer to each type in the section "__malloc_types_ptrs". Types of
 * vmlinux are registered at boot, types of a module when the module is
 * coming and unregistered when it is going (see mm/malloc_type.c).
 *
 * Documentation/core-api/malloc_types.rst describes the design.
 */
#ifndef _LINUX_MALLOC_TYPE_H
#define _LINUX_MALLOC_TYPE_H

#include <linux/compiler_types.h>
#include <linux/gfp_types.h>
#include <linux/list.h>
#include <linux/types.h>
#include <uapi/linux/malloc_type.h>

/* Longest short description (type name), in bytes, without the NUL. */
#define MALLOC_TYPE_NAME_MAX		(MALLOC_MAX_NAME - 1)

/* Largest number of zones malloc_types.numzones= accepts. */
#define MALLOC_TYPE_MAX_ZONES		16

/* Indices of malloc_type_internal.mti_probes (as FreeBSD's dtmalloc). */
#define DTMALLOC_PROBE_MALLOC		0
#define DTMALLOC_PROBE_FREE		1
#define DTMALLOC_PROBE_MAX		2

/**
 * struct malloc_type_internal - the part of a type owned by the subsystem
 * @mti_probes: tracing state, one word per dtmalloc probe (0: disabled);
 *	reserved for the dtmalloc tracepoints.
 * @mti_zone: zone of the type: 0 for the shared kmalloc caches,
 *	1..numzones-1 for a dedicated set of kmalloc buckets.
 * @mti_flags: MALLOC_TYPE_F_* bits (<uapi/linux/malloc_type.h>).
 * @mti_stats: per-CPU statistics; NULL while the type is not registered.
 * @mti_id: registration id: unique, never reused, increasing.
 * @mti_list: link in the registry, protected by the registry mutex.
 *
 * All fields are zero in a type that was never registered. They are written
 * only by mm/malloc_type.c, under the registry mutex: at registration (boot,
 * or module coming), @mti_stats last with a release store; at unregistration
 * (module going), @mti_stats cleared, and the statistics freed only after an
 * RCU grace period, since the accounting uses them with preemption disabled.
 * Readers outside the mutex use READ_ONCE() (atomic loads in Rust).
 */
struct malloc_type_internal {
	u32				mti_probes[DTMALLOC_PROBE_MAX];
	u32				mti_zone;
	u32				mti_flags;
	struct malloc_type_stats __percpu *mti_stats;
	u64				mti_id;
	struct list_head		mti_list;
};

/**
 * struct malloc_type - a malloc type
 * @ks_shortdesc: name, NUL-terminated, at most MALLOC_TYPE_NAME_MAX bytes.
 * @ks_longdesc: description, NUL-terminated.
 * @ks_mti: the subsystem's part.
 */
struct malloc_type {
	const char			*ks_shortdesc;
	const char			*ks_longdesc;
	struct malloc_type_internal	ks_mti;
};

#ifdef CONFIG_MALLOC_TYPES

struct module;

/* Registration (mm/malloc_type.c); modules are handled by a notifier. */
int malloc_type_for_each(int (*fn)(struct malloc_type *mtp, void *arg),
			 void *arg);
unsigned int malloc_type_count(void);
unsigned int malloc_type_numzones(void);
unsigned int malloc_type_zone_for_name(const char *name,
				       unsigned int numzones);
void *malloc_type_zone_alloc(const struct malloc_type *mtp, size_t size,
			     gfp_t flags, int node);
void malloc_type_probe_name(char *name);
size_t malloc_type_block_size(const void *p);
void malloc_type_block_copy(void *to, const void *from, size_t len);
/* For the KUnit tests (CONFIG_RUST_MALLOC_TYPE_KUNIT_TEST). */
bool malloc_type_test_cache_of(const void *p, const char **name,
			       unsigned int *usersize);

#endif /* CONFIG_MALLOC_TYPES */

#endif /* _LINUX_MALLOC_TYPE_H */
