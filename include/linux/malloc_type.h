/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Malloc types: FreeBSD-style typed kernel allocation accounting.
 *
 * A malloc type is a static, named object defined with MALLOC_DEFINE() in C
 * or the Rust macro kernel::malloc_define!(). It carries per-CPU counters
 * (struct malloc_type_counters), which the stream of /proc/malloc_types
 * copies into FreeBSD's struct malloc_type_stats (<uapi/linux/malloc_type.h>).
 *
 * Types are found without any call from their owner: both macros place a
 * pointer to each type in the section "__malloc_types_ptrs". Types of
 * vmlinux are registered at boot, types of a module when the module is
 * coming and unregistered when the module core frees it, after its exit and
 * its async functions (see mm/malloc_type.c), or once memory charged to
 * them is freed if a block outlives the module (mm/malloc_type_module.c).
 *
 * C code allocates through a type with the kmalloc-family functions below,
 * the type last: kmalloc_mt(), kzalloc_mt(), kmalloc_array_mt(),
 * kcalloc_mt(), krealloc_mt(), kreallocf_mt(), kfree_mt(),
 * kfree_sensitive_mt(), and kvmalloc_mt(), kvzalloc_mt(), kvmalloc_array_mt(),
 * kvfree_mt(), with malloc_usable_size(); pages with alloc_pages_mt() and
 * friends; memory of other allocators is charged with
 * malloc_type_allocated() and malloc_type_freed(). The accounting is
 * implemented in Rust (rust/kernel/malloc_type/), and the C API's general
 * path calls it (rust/kernel/malloc_type/c_api.rs); kmalloc_mt() and
 * kfree_mt() of a type of the shared caches take the slab allocator's
 * kmalloc path instead, whose hooks update the same per-CPU counters inline
 * (mm/slub.c).
 *
 * Documentation/core-api/malloc_types.rst describes the design.
 */
#ifndef _LINUX_MALLOC_TYPE_H
#define _LINUX_MALLOC_TYPE_H

#include <linux/atomic.h>
#include <linux/build_bug.h>
#include <linux/compiler_types.h>
#include <linux/gfp_types.h>
#include <linux/jump_label.h>
#include <linux/list.h>
#include <linux/malloc_type_pattern.h>
#include <linux/mm.h>
#include <linux/numa.h>
#include <linux/overflow.h>
#include <linux/percpu.h>
#include <linux/slab.h>
#include <linux/types.h>
#include <uapi/linux/malloc_type.h>

/* Longest short description (type name), in bytes, without the NUL. */
#define MALLOC_TYPE_NAME_MAX		(MALLOC_MAX_NAME - 1)

/*
 * Longest text form of a name (each byte written as a backslash and three
 * octal digits, malloc_type_name_text()), in bytes, without the NUL.
 */
#define MALLOC_TYPE_TEXT_MAX		(4 * MALLOC_TYPE_NAME_MAX)

/* Largest number of zones malloc_types.numzones= accepts. */
#define MALLOC_TYPE_MAX_ZONES		16

/* Indices of malloc_type_internal.mti_probes (as FreeBSD's dtmalloc). */
#define DTMALLOC_PROBE_MALLOC		0
#define DTMALLOC_PROBE_FREE		1
#define DTMALLOC_PROBE_MAX		2

/*
 * Bits of malloc_type_internal.mti_events: what the accounting has to do
 * for the type beyond counting. Bits DTMALLOC_PROBE_MALLOC and
 * DTMALLOC_PROBE_FREE mirror whether mti_probes[] of that probe is set.
 */
#define MALLOC_TYPE_EV_PEAK		2
#define MALLOC_TYPE_EV_FAIL		3
#define MALLOC_TYPE_EV_MEMGUARD		4

/*
 * Bits of mti_flags that the stream does not show. MALLOC_TYPE_F_RECORDS:
 * the type is registered and its memory stays while memory charged to it is
 * allocated (a type of vmlinux, or of a module, in the module's section
 * "malloc_types"), so its blocks may carry a record (malloc_type_obj_set()).
 * MALLOC_TYPE_F_RECORDED: a block of the type has carried one, so that a
 * kfree() by other code may charge the type back after its module unloaded.
 * MALLOC_TYPE_F_DEFAULT: a default type the registry allocated
 * (mm/malloc_type_default.c), freed when it is destroyed.
 */
#define MALLOC_TYPE_F_DEFAULT		0x20000000
#define MALLOC_TYPE_F_RECORDS		0x40000000
#define MALLOC_TYPE_F_RECORDED		0x80000000

/**
 * struct malloc_type_counters - one CPU's counters of one malloc type
 * @mts_memalloced: bytes allocated on this CPU (accounted sizes).
 * @mts_memfreed: bytes freed on this CPU.
 * @mts_numallocs: number of allocations on this CPU.
 * @mts_numfrees: number of frees on this CPU.
 * @mts_size: bitmask of the zindx values (kmalloc size classes) used.
 * @mts_numfailures: number of allocations on this CPU that returned no
 *	memory.
 *
 * The kernel's record, which the accounting updates with per-CPU operations
 * (this_cpu_add()). The fields are named as FreeBSD's struct
 * malloc_type_stats, which the stream of /proc/malloc_types carries
 * (<uapi/linux/malloc_type.h>) and builds from this record; the two are
 * separate so that this one can change without changing the ABI. Readers of
 * crash dumps find its size and the offsets of its fields in the vmcoreinfo
 * (malloc_type_vmcoreinfo_setup()).
 */
struct malloc_type_counters {
	u64	mts_memalloced;
	u64	mts_memfreed;
	u64	mts_numallocs;
	u64	mts_numfrees;
	u64	mts_size;
	u64	mts_numfailures;
};

/**
 * struct malloc_type_internal - the part of a type owned by the subsystem
 * @mti_probes: per-type tracing, one word per dtmalloc probe, as in FreeBSD:
 *	the probe's id while the probe is enabled on its own (a selection in
 *	tracefs's set_dtmalloc_probes names it), 0 otherwise. 64-bit, as the
 *	registration id it is derived from, so that an id is never reused.
 * @mti_zone: zone of the type: 0 for the shared kmalloc caches,
 *	1..numzones-1 for a dedicated set of kmalloc buckets.
 * @mti_flags: MALLOC_TYPE_F_* bits (<uapi/linux/malloc_type.h>), and the
 *	internal MALLOC_TYPE_F_RECORDS and MALLOC_TYPE_F_RECORDED.
 * @mti_stats: per-CPU counters; NULL while the type is not registered.
 * @mti_id: registration id: unique, never reused, increasing.
 * @mti_list: link in the registry, protected by the registry mutex.
 * @mti_probename: the probe name (the name with each ASCII white-space
 *	character replaced by '_', malloc_type_probe_name()), computed once at
 *	registration; the selection files' patterns match it.
 * @mti_nametext: the text form of the name (malloc_type_name_text()), what
 *	every text output shows: the name itself when no byte of it needs
 *	escaping, else a copy made at registration.
 * @mti_probetext: the text form of the probe name, as the dtmalloc events
 *	and the probe list show it: @mti_probename itself when the name needs
 *	no escaping, else a copy made with @mti_nametext's.
 * @mti_events: one word for the accounting's test of the type, behind the
 *	static keys of struct malloc_type_events: bit DTMALLOC_PROBE_MALLOC
 *	(or _FREE) while that probe is selected on its own (as @mti_probes[]),
 *	bit MALLOC_TYPE_EV_PEAK while the type's peak bytes in use are tracked
 *	(a pattern in /proc/malloc_types_peak matches its probe name; the
 *	accounting then keeps @mti_in_use), bit MALLOC_TYPE_EV_FAIL while its
 *	allocations may be made to fail (CONFIG_FAIL_MALLOC_TYPE: a pattern in
 *	debugfs's fail_malloc_type/types matches its probe name), bit
 *	MALLOC_TYPE_EV_MEMGUARD while its allocations are guarded
 *	(CONFIG_MALLOC_TYPE_MEMGUARD: a pattern in debugfs's memguard/types
 *	matches it). Changed with
 *	atomic bit operations (the probe selection, the peak tracking and the
 *	failure injection have mutexes of their own), read locklessly.
 * @mti_owner: the name of the module that defines the type, "vmlinux" for
 *	the kernel's own types; valid while the type is registered.
 * @mti_in_use: while the peak is tracked, the type's bytes in use
 *	(accounted sizes): the per-CPU sum when tracking started (0 for a type
 *	that registers tracked), then every allocation and free since.
 * @mti_peak: the highest @mti_in_use since tracking started or was reset.
 *
 * All fields are zero in a type that was never registered. They are written
 * only by mm/malloc_type.c, under the registry mutex: at registration (boot,
 * or module coming), @mti_stats last with a release store; at unregistration
 * (module freed), @mti_stats cleared, and the statistics freed only after an
 * RCU grace period, since their readers and the traced charges use them
 * under rcu_read_lock() or with preemption disabled; a plain charge needs
 * neither, as a type is unregistered only when nothing can charge it.
 * Readers outside the mutex use READ_ONCE() (atomic loads in Rust).
 */
struct malloc_type_internal {
	u64				mti_probes[DTMALLOC_PROBE_MAX];
	u32				mti_zone;
	u32				mti_flags;
	struct malloc_type_counters __percpu *mti_stats;
	u64				mti_id;
	struct list_head		mti_list;
	char				mti_probename[MALLOC_MAX_NAME];
	const char			*mti_nametext;
	const char			*mti_probetext;
	unsigned long			mti_events;
	const char			*mti_owner;
	atomic64_t			mti_in_use;
	atomic64_t			mti_peak;
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

/*
 * The section that holds the types themselves. In a module it is a codetag
 * section (<asm-generic/codetag.lds.h>): the module loader places it in
 * memory of its own, which outlives the module while memory charged to one
 * of its types is allocated (mm/malloc_type_module.c).
 */
#define MALLOC_TYPE_SECTION_NAME	"malloc_types"

/*
 * Puts a pointer to @type in the section the registry reads (nothing without
 * CONFIG_MALLOC_TYPES, where a type is only a name).
 */
#ifdef CONFIG_MALLOC_TYPES
#define __MALLOC_TYPE_ENTRY(type)					\
	static struct malloc_type *const __malloc_type_ptr_##type	\
	__used __section("__malloc_types_ptrs") = type
#define __malloc_type_section	__section(MALLOC_TYPE_SECTION_NAME)
#else
#define __MALLOC_TYPE_ENTRY(type)					\
	static_assert(1)
#define __malloc_type_section
#endif

/**
 * MALLOC_DEFINE() - define a malloc type
 * @type: the C name of the type, by convention M_FOO (an array of one
 *	struct malloc_type, so that @type is the pointer the allocation
 *	functions take, as in FreeBSD).
 * @shortdesc: its name, a string literal of 1 to MALLOC_TYPE_NAME_MAX bytes
 *	(checked at compile time); shown by /proc/malloc_types and the tools.
 * @longdesc: its description, a string literal.
 *
 * FreeBSD's MALLOC_DEFINE(9), same arguments in the same order. The type is
 * registered with no call from its owner: at boot in vmlinux, when the
 * module loads in a module; a module's types are removed when it unloads,
 * with a warning for a type that still has memory allocated (a type whose
 * blocks of kmalloc_mt() are still allocated stays until they are freed).
 * The type is placed in the section "malloc_types". Use it at file
 * scope, once per type, and the type is placed and shared as FreeBSD code
 * places and shares its types:
 *
 * - static MALLOC_DEFINE(M_FOO, ...): a type of one file (the expansion
 *   starts with the definition of @type, so a storage class before the
 *   macro applies to it);
 * - MALLOC_DEFINE() in one file and MALLOC_DECLARE() in a header: a type
 *   shared by the files of a module (or of vmlinux);
 * - and EXPORT_SYMBOL_GPL(M_FOO) after the definition: a type that other
 *   modules allocate with (they then depend on the defining module, which
 *   cannot unload while they are loaded, as with any exported symbol).
 *
 * The name may hold any bytes: text outputs write it in its text form
 * (see malloc_type_name_text()).
 *
 * Example::
 *
 *	static MALLOC_DEFINE(M_FOO, "foo bar", "FooBar subsystem");
 *
 *	struct foo *f = kzalloc_mt(sizeof(*f), GFP_KERNEL, M_FOO);
 *	...
 *	kfree_mt(f, M_FOO);
 */
#define MALLOC_DEFINE(type, shortdesc, longdesc)			\
	struct malloc_type type[1] __malloc_type_section = { {		\
		.ks_shortdesc = "" shortdesc,				\
		.ks_longdesc = "" longdesc,				\
	} };								\
	static_assert(sizeof("" shortdesc) >= 2 &&			\
		      sizeof("" shortdesc) <= MALLOC_TYPE_NAME_MAX + 1,	\
		      "malloc type name must be 1 to 31 bytes");	\
	__MALLOC_TYPE_ENTRY(type)

/**
 * MALLOC_DECLARE() - declare a malloc type defined in another file
 * @type: the C name given to MALLOC_DEFINE().
 */
#define MALLOC_DECLARE(type)	extern struct malloc_type type[1]

struct module;

/*
 * Registration (mm/malloc_type.c): a module's types are registered by a
 * module notifier while it is coming, and unregistered by the module core
 * when it frees the module.
 */
#if defined(CONFIG_MALLOC_TYPES) && defined(CONFIG_MODULES)
void malloc_type_module_unload(struct module *mod);
#else
static inline void malloc_type_module_unload(struct module *mod)
{
}
#endif

#ifdef CONFIG_MALLOC_TYPES
/*
 * Bytes of kmalloc blocks in use charged to types, by the zindx of their
 * size class, per CPU: each charge of a block of a kmalloc size class adds
 * its size to the current CPU's counter of its class, each uncharge takes it
 * off (wrapping: a block freed on another CPU leaves one CPU's counter below
 * zero and another's above), so that the sum over the CPUs is what the types
 * hold of each class (vm.malloc_zone_memuse). The last counter is never a
 * class (MALLOC_TYPE_ZONE_NONE): charges that find no class add there.
 */
#define MALLOC_TYPE_ZONE_NONE		(MALLOC_TYPE_ZONE_COUNT_MAX - 1)
struct malloc_type_zone_counters {
	u64 mzc_memuse[MALLOC_TYPE_ZONE_COUNT_MAX];
};
DECLARE_PER_CPU(struct malloc_type_zone_counters, malloc_type_zone_counters);
/* The same per-CPU counters, for Rust (a __percpu pointer to the first). */
extern u64 __percpu *const malloc_type_zone_memuse;
#endif

struct pt_regs;

#ifdef CONFIG_MALLOC_TYPE_MEMGUARD
/*
 * memguard per type (mm/malloc_type_memguard.c): the page fault handlers
 * report a kernel fault on a not-present page in its arena through this,
 * as through kfence_handle_page_fault().
 */
bool malloc_type_memguard_fault(unsigned long addr, bool is_write,
				struct pt_regs *regs);
#else
static inline bool malloc_type_memguard_fault(unsigned long addr,
					      bool is_write,
					      struct pt_regs *regs)
{
	return false;
}
#endif

#ifdef CONFIG_MALLOC_TYPES

int malloc_type_for_each(int (*fn)(struct malloc_type *mtp, void *arg),
			 void *arg);
unsigned int malloc_type_count(void);
unsigned int malloc_type_numzones(void);
unsigned int malloc_type_zone_for_name(const char *name,
				       unsigned int numzones);
void *malloc_type_zone_alloc(const struct malloc_type *mtp, size_t size,
			     gfp_t flags, int node);
void malloc_type_probe_name(char *name);
size_t malloc_type_name_text(char *buf, size_t size, const char *name,
			     size_t len);
/**
 * struct dtmalloc_selection - whether a per-type probe selection is in force
 * @key: on while tracefs's set_dtmalloc_probes is not empty: the dtmalloc
 *	events then fire only for types whose mti_probes[] slot is set; off,
 *	they fire for every type, as a plain enable of the events does.
 *
 * A struct around the key so that Rust's static_branch_unlikely!() names
 * the key by its field, as it does a tracepoint's.
 */
struct dtmalloc_selection {
	struct static_key_false key;
};

extern struct dtmalloc_selection dtmalloc_probes_selected;
/**
 * struct malloc_type_events - whether the accounting has more to do than count
 * @malloc: on while the dtmalloc:malloc tracepoint has a probe or any type
 *	has its peak tracked: an allocation then also tests the type's
 *	mti_events and, without a probe selection, the tracepoint.
 * @free: the same for frees and dtmalloc:free.
 * @debug: on while any type's allocations may be made to fail
 *	(CONFIG_FAIL_MALLOC_TYPE) or are guarded (CONFIG_MALLOC_TYPE_MEMGUARD):
 *	an allocation then tests its type's MALLOC_TYPE_EV_FAIL and
 *	MALLOC_TYPE_EV_MEMGUARD bits, and one of a selected type takes the
 *	general path, which asks fail_malloc_type whether it is to fail and
 *	memguard for a new block. One key for both options, so that a kernel
 *	with both pays one patched no-op per allocation for them.
 * @guarded: on from the first type guarded on, since guarded blocks may
 *	outlive their type's selection: a free then tests whether the block
 *	is in memguard's arena, and only then asks memguard.
 *
 * Counted keys (static_branch_inc()): the tracepoints' reg and unreg
 * functions hold one reference each, each tracked type one of @malloc and
 * @free, and each type selected for failures and each guarded type one of
 * @debug. With neither tracing, peaks, failure injection nor memguard, a
 * typed allocation costs a patched no-op for @malloc and one for @debug,
 * and a typed free one for @free and one for @guarded.
 */
struct malloc_type_events {
	struct static_key_false malloc;
	struct static_key_false free;
	struct static_key_false debug;
	struct static_key_false guarded;
};

extern struct malloc_type_events malloc_type_events;
/* The reg and unreg functions of the dtmalloc tracepoints. */
int dtmalloc_malloc_reg(void);
void dtmalloc_malloc_unreg(void);
int dtmalloc_free_reg(void);
void dtmalloc_free_unreg(void);
/* Peak tracking (mm/malloc_type_peak.c), called by the accounting. */
void malloc_type_peak_alloc(struct malloc_type *mtp, unsigned long size);
void malloc_type_peak_free(struct malloc_type *mtp, unsigned long size);
/* Starts (or resets) and stops tracking a registered type's peak. */
void malloc_type_peak_track(struct malloc_type *mtp, bool on);
#ifdef CONFIG_FAIL_MALLOC_TYPE
/*
 * Whether an allocation of a type selected for failures is to fail
 * (mm/malloc_type_fail.c); the accounting asks while malloc_type_events.debug
 * is on and the type's MALLOC_TYPE_EV_FAIL bit is set.
 */
bool malloc_type_should_fail(struct malloc_type *mtp, size_t size, gfp_t flags);
#endif
#ifdef CONFIG_MALLOC_TYPE_MEMGUARD
/**
 * struct malloc_type_memguard_arena - where memguard's blocks are
 * @start: the first address of the arena.
 * @size: its size in bytes; 0 until it is set up at boot (after @start),
 *	then neither changes.
 *
 * Every guarded block is in [@start, @start + @size): a free tests that
 * inline to tell other blocks apart without a call.
 */
struct malloc_type_memguard_arena {
	unsigned long start;
	unsigned long size;
};

extern struct malloc_type_memguard_arena malloc_type_memguard_arena;
/* memguard per type (mm/malloc_type_memguard.c), called by the accounting. */
void *malloc_type_memguard_alloc(struct malloc_type *mtp, size_t size,
				 size_t align, gfp_t flags, size_t charged);
bool malloc_type_memguard_free(const void *p, size_t *charged);
size_t malloc_type_memguard_block(const void *p, size_t *charged);
extern bool malloc_type_memguard_kunit_expect;
#endif
/**
 * struct malloc_type_default_switch - whether untyped allocations are charged
 * @off: on when the kernel was booted with malloc_types.default_types=0:
 *	Kmalloc, Vmalloc and KVmalloc then leave their allocations uncharged
 *	instead of charging the default types "rust kmalloc", "rust vmalloc"
 *	and "rust kvmalloc", and the default types of kmalloc are not
 *	registered (mm/malloc_type_default.c). Set while the boot parameters
 *	are parsed, before any Rust code runs, and never changed after.
 *
 * A struct around the key for Rust's static_branch_unlikely!(), as above.
 */
struct malloc_type_default_switch {
	struct static_key_false off;
};

extern struct malloc_type_default_switch malloc_type_default_types;
/**
 * struct malloc_type_classes_switch - where typed allocations find their size class
 * @runtime: on when the kmalloc caches are not the ones the kernel was built
 *	for (the slots of the small caches point to larger caches, as where
 *	__kmalloc_minalign() keeps a DMA alignment): the size classes are
 *	then looked up in the table read from the caches at boot instead of
 *	folded in at compile time. Set by malloc_type_init(), before any
 *	typed allocation, and never changed after.
 *
 * A struct around the key for Rust's static_branch_unlikely!(), as above.
 */
struct malloc_type_classes_switch {
	struct static_key_false runtime;
};

extern struct malloc_type_classes_switch malloc_type_classes;
size_t malloc_type_block_size(const void *p);
size_t malloc_usable_size(const void *p);
void malloc_type_block_copy(void *to, const void *from, size_t len);
/* For the KUnit tests of the zones, in Rust and in C. */
bool malloc_type_test_cache_of(const void *p, const char **name,
			       unsigned int *usersize);

/*
 * Reads the kmalloc size classes of the running kernel from its kmalloc
 * caches, once, before the secondary CPUs start (malloc_type_init());
 * returns whether they differ from those the kernel was built for.
 * Implemented in Rust (rust/kernel/malloc_type/size_class.rs).
 */
bool malloc_type_init_size_classes(void);
/* The size in bytes of the size class @zindx names, 0 past the last one. */
size_t malloc_type_zone_size(u32 zindx);
/*
 * Describes the registry in the vmcoreinfo note, for the readers of crash
 * dumps and /proc/kcore (called by crash_save_vmcoreinfo_init()).
 */
void malloc_type_vmcoreinfo_setup(void);
/*
 * Charges one kmalloc block of @size bytes (its cache's object size, or the
 * pages of a large kmalloc) to @mtp, with its size class: the charge of a
 * default type (implemented in Rust, rust/kernel/malloc_type/c_api.rs).
 */
void malloc_type_kmalloc_charged(struct malloc_type *mtp, unsigned long size);
/*
 * Takes one kmalloc block of @size bytes charged with
 * malloc_type_kmalloc_charged() (or inline by the slab allocator) off @mtp,
 * with its size class (implemented in Rust as well).
 */
void malloc_type_kmalloc_uncharged(struct malloc_type *mtp, unsigned long size);
/* The record of a block's type (mm/malloc_type_slab.c), for the C API. */
int malloc_type_obj_set(const void *p, struct malloc_type *mtp, gfp_t gfp);
struct malloc_type *malloc_type_obj_take(const void *p, struct malloc_type *mtp);
size_t kfree_size_mt(const void *object, struct malloc_type **mtp);
/* The C entry points, implemented in Rust (rust/kernel/malloc_type/c_api.rs). */
void *malloc_type_kmalloc_node(size_t size, gfp_t flags, int node,
			       struct malloc_type *mtp);
void *malloc_type_krealloc(const void *p, size_t new_size, gfp_t flags,
			   struct malloc_type *mtp);
void malloc_type_kfree(const void *p, struct malloc_type *mtp);
void *malloc_type_kreallocf(const void *p, size_t new_size, gfp_t flags,
			    struct malloc_type *mtp);
void malloc_type_kfree_sensitive(const void *p, struct malloc_type *mtp);
/**
 * malloc_type_allocated() - charge memory of another allocator to a type
 * @mtp: the malloc type.
 * @size: the bytes the memory consumes (kmem_cache_size() of a cache's
 *	object, the pages of a page allocation); 0 charges nothing.
 *
 * FreeBSD's malloc_type_allocated(9): for code that gets memory elsewhere (a
 * kmem_cache, a mempool, the page allocator), so that a subsystem's memory
 * shows in its type's row. Counts one allocation of @size bytes with no size
 * class (zindx -1, no mts_size bit); the dtmalloc:malloc event fires. Give
 * malloc_type_freed() the same size when the memory is freed.
 *
 * Context: any context.
 */
void malloc_type_allocated(struct malloc_type *mtp, unsigned long size);
/**
 * malloc_type_freed() - uncharge memory charged with malloc_type_allocated()
 * @mtp: the malloc type.
 * @size: the size given to malloc_type_allocated(); 0 changes nothing.
 *
 * FreeBSD's malloc_type_freed(9): counts one free of @size bytes; the
 * dtmalloc:free event fires.
 *
 * Context: any context.
 */
void malloc_type_freed(struct malloc_type *mtp, unsigned long size);

/**
 * malloc_type_failed() - count a failed allocation of another allocator
 * @mtp: the malloc type the memory would have been charged to.
 *
 * Counts one failure of @mtp (mts_numfailures), as its own failed
 * allocations count, so that its row tells the failures of the memory a
 * subsystem charges with malloc_type_allocated().
 *
 * Context: any context.
 */
void malloc_type_failed(struct malloc_type *mtp);

/*
 * Whether failure injection fails an allocation of @mtp of @size bytes with
 * @gfp (CONFIG_FAIL_MALLOC_TYPE): one patched no-op while no type is
 * selected. The caller counts the failure.
 */
static inline bool malloc_type_fail_injected(struct malloc_type *mtp,
					     size_t size, gfp_t gfp)
{
#ifdef CONFIG_FAIL_MALLOC_TYPE
	if (static_branch_unlikely(&malloc_type_events.debug) &&
	    test_bit(MALLOC_TYPE_EV_FAIL, &mtp->ks_mti.mti_events))
		return malloc_type_should_fail(mtp, size, gfp);
#endif
	return false;
}

/* Typed pages: the page allocator with the pages charged to a type. */
static inline struct page *alloc_pages_mt_noprof(gfp_t gfp, unsigned int order,
						 struct malloc_type *type)
{
	unsigned long size = PAGE_SIZE << order;
	struct page *page = NULL;

	if (!malloc_type_fail_injected(type, size, gfp))
		page = alloc_pages_noprof(gfp, order);
	if (page)
		malloc_type_allocated(type, size);
	else
		malloc_type_failed(type);
	return page;
}

/**
 * alloc_pages_mt() - alloc_pages() charged to a malloc type
 * @gfp: GFP flags, as for alloc_pages().
 * @order: the order of the allocation.
 * @type: the malloc type (MALLOC_DEFINE()).
 *
 * FreeBSD charges contigmalloc(9) to a type; this charges the pages of the
 * page allocator: one allocation of PAGE_SIZE << @order bytes with no size
 * class (zindx -1), as malloc_type_allocated() charges; the dtmalloc:malloc
 * event fires. A failure (or one injected by fail_malloc_type) counts one
 * failure of the type. /proc/allocinfo names the caller, as for
 * alloc_pages().
 *
 * Context: as for alloc_pages() with @gfp.
 * Return: the first page, to be freed with __free_pages_mt() of the same
 * order and type; or NULL.
 */
#define alloc_pages_mt(gfp, order, type)				\
	alloc_hooks(alloc_pages_mt_noprof(gfp, order, type))

/**
 * __free_pages_mt() - free pages of alloc_pages_mt()
 * @page: the first page, as alloc_pages_mt() returned it.
 * @order: the order it was allocated with.
 * @type: the malloc type it was charged to.
 *
 * Context: as for __free_pages().
 */
static inline void __free_pages_mt(struct page *page, unsigned int order,
				   struct malloc_type *type)
{
	malloc_type_freed(type, PAGE_SIZE << order);
	__free_pages(page, order);
}

static inline unsigned long
__get_free_pages_mt_noprof(gfp_t gfp, unsigned int order,
			   struct malloc_type *type)
{
	unsigned long size = PAGE_SIZE << order;
	unsigned long addr = 0;

	if (!malloc_type_fail_injected(type, size, gfp))
		addr = get_free_pages_noprof(gfp, order);
	if (addr)
		malloc_type_allocated(type, size);
	else
		malloc_type_failed(type);
	return addr;
}

/**
 * __get_free_pages_mt() - __get_free_pages() charged to a malloc type
 * @gfp: GFP flags, as for __get_free_pages() (no __GFP_HIGHMEM).
 * @order: the order of the allocation.
 * @type: the malloc type (MALLOC_DEFINE()).
 *
 * As alloc_pages_mt(), for the kernel address of the pages.
 *
 * Context: as for __get_free_pages() with @gfp.
 * Return: the address, to be freed with free_pages_mt() of the same order
 * and type; or 0.
 */
#define __get_free_pages_mt(gfp, order, type)				\
	alloc_hooks(__get_free_pages_mt_noprof(gfp, order, type))

/**
 * free_pages_mt() - free pages of __get_free_pages_mt()
 * @addr: their address; 0 is a no-op.
 * @order: the order they were allocated with.
 * @type: the malloc type they were charged to.
 *
 * Context: as for free_pages().
 */
static inline void free_pages_mt(unsigned long addr, unsigned int order,
				 struct malloc_type *type)
{
	if (!addr)
		return;
	malloc_type_freed(type, PAGE_SIZE << order);
	free_pages(addr, order);
}

static inline void *alloc_pages_exact_mt_noprof(size_t size, gfp_t gfp,
						struct malloc_type *type)
{
	size_t bytes = ALIGN(size, PAGE_SIZE);
	void *p = NULL;

	if (!malloc_type_fail_injected(type, bytes, gfp))
		p = alloc_pages_exact_noprof(size, gfp);
	if (p)
		malloc_type_allocated(type, bytes);
	else
		malloc_type_failed(type);
	return p;
}

/**
 * alloc_pages_exact_mt() - alloc_pages_exact() charged to a malloc type
 * @size: bytes wanted, rounded up to pages.
 * @gfp: GFP flags, as for alloc_pages_exact().
 * @type: the malloc type (MALLOC_DEFINE()).
 *
 * As alloc_pages_mt(), charging the pages alloc_pages_exact() keeps: @size
 * rounded up to a page, not the power of two it allocates first.
 *
 * Context: as for alloc_pages_exact() with @gfp.
 * Return: the memory, to be freed with free_pages_exact_mt() of the same
 * size and type; or NULL.
 */
#define alloc_pages_exact_mt(size, gfp, type)				\
	alloc_hooks(alloc_pages_exact_mt_noprof(size, gfp, type))

/**
 * free_pages_exact_mt() - free memory of alloc_pages_exact_mt()
 * @virt: the memory; NULL is a no-op.
 * @size: the size it was allocated with.
 * @type: the malloc type it was charged to.
 *
 * Context: as for free_pages_exact().
 */
static inline void free_pages_exact_mt(void *virt, size_t size,
				       struct malloc_type *type)
{
	if (!virt)
		return;
	malloc_type_freed(type, ALIGN(size, PAGE_SIZE));
	free_pages_exact(virt, size);
}

void *malloc_type_kvmalloc_node(size_t size, gfp_t flags, int node,
				struct malloc_type *mtp);
void malloc_type_kvfree(const void *p, struct malloc_type *mtp);

void *__kmalloc_mt_noprof(DECL_TOKEN_PARAMS(size, token), gfp_t flags,
			  struct malloc_type *mtp);
void __kfree_mt(const void *object, struct malloc_type *mtp);

/*
 * Whether kmalloc_mt() of @type takes the slab allocator's kmalloc path
 * (__kmalloc_mt_noprof()), whose hook charges the block with its record: a
 * type of the shared caches (zone 0) that is registered and may be recorded,
 * a size kmalloc() serves, no node asked for, and no type made to fail or
 * guarded. Otherwise the C API's general path (malloc_type_kmalloc_node()),
 * which also counts the failures of a size above KMALLOC_MAX_SIZE or a
 * node that does not exist, and warns of a NULL @type.
 */
static __always_inline bool malloc_type_kmalloc_direct(size_t size, int node,
						       struct malloc_type *type)
{
	return node == NUMA_NO_NODE && type && size <= KMALLOC_MAX_SIZE &&
	       !static_branch_unlikely(&malloc_type_events.debug) &&
	       !READ_ONCE(type->ks_mti.mti_zone) &&
	       (READ_ONCE(type->ks_mti.mti_flags) & MALLOC_TYPE_F_RECORDS);
}

static __always_inline void *
_kmalloc_node_mt_noprof(size_t size, gfp_t flags, int node,
			struct malloc_type *type, kmalloc_token_t token)
{
	if (malloc_type_kmalloc_direct(size, node, type))
		return __kmalloc_mt_noprof(PASS_TOKEN_PARAMS(size, token), flags,
					   type);
	return malloc_type_kmalloc_node(size, flags, node, type);
}

static __always_inline void *
_kmalloc_array_mt_noprof(size_t n, size_t size, gfp_t flags,
			 struct malloc_type *type, kmalloc_token_t token)
{
	size_t bytes;

	/* SIZE_MAX fails, counted as the type's failure. */
	if (unlikely(check_mul_overflow(n, size, &bytes)))
		bytes = SIZE_MAX;
	return _kmalloc_node_mt_noprof(bytes, flags, NUMA_NO_NODE, type, token);
}

/*
 * The kmalloc_mt() family are macros, as kmalloc() is, so that allocation
 * profiling and the kmalloc partitions see the caller's call site. The call
 * site's allocation tag names no default type (alloc_hooks_typed()): the
 * block is charged to @type.
 */
/**
 * kmalloc_node_mt() - kmalloc_node() charged to a malloc type
 * @size: bytes wanted.
 * @flags: GFP flags, as for kmalloc().
 * @node: the NUMA node, or NUMA_NO_NODE.
 * @type: the malloc type (MALLOC_DEFINE()).
 *
 * FreeBSD's malloc_domainset(9). The block comes from the shared kmalloc
 * caches for a type in zone 0 and from its zone's buckets otherwise
 * (malloc_types.numzones=), and is charged its size class (or its pages above
 * KMALLOC_MAX_CACHE_SIZE); the dtmalloc:malloc event fires. A failure or a
 * size above KMALLOC_MAX_SIZE returns NULL and counts one in the type's
 * mts_numfailures, changing no other counter; a NULL @type (a bug) warns
 * and returns NULL. Zero bytes: ZERO_SIZE_PTR, nothing charged.
 *
 * The block records its type (mm/malloc_type_slab.c), so that kfree(),
 * kvfree(), kfree_rcu() and kfree_bulk() charge it back too, whoever frees
 * it, also after the type's module has unloaded (the registry keeps the
 * type until then).
 *
 * Context: as for kmalloc() with @flags.
 * Return: the memory, to be freed with kfree_mt() of the same type or any
 * kfree(); or NULL.
 */
#define kmalloc_node_mt(size, flags, node, type)			\
	alloc_hooks_typed(_kmalloc_node_mt_noprof(size, flags, node, type, \
						  __kmalloc_token(size)))

/**
 * kmalloc_mt() - kmalloc() charged to a malloc type
 * @size: bytes wanted.
 * @flags: GFP flags, as for kmalloc().
 * @type: the malloc type (MALLOC_DEFINE()).
 *
 * FreeBSD's malloc(9) with the type last; see kmalloc_node_mt().
 *
 * Context: as for kmalloc() with @flags.
 * Return: the memory, to be freed with kfree_mt() of the same type; or NULL.
 */
#define kmalloc_mt(size, flags, type)					\
	kmalloc_node_mt(size, flags, NUMA_NO_NODE, type)

/**
 * kzalloc_mt() - kzalloc() charged to a malloc type
 * @size: bytes wanted.
 * @flags: GFP flags, as for kmalloc().
 * @type: the malloc type.
 *
 * malloc(9) with M_ZERO; see kmalloc_mt().
 *
 * Context: as for kmalloc() with @flags.
 * Return: zeroed memory, to be freed with kfree_mt(); or NULL.
 */
#define kzalloc_mt(size, flags, type)					\
	kmalloc_node_mt(size, (flags) | __GFP_ZERO, NUMA_NO_NODE, type)

/**
 * kmalloc_array_mt() - kmalloc_array() charged to a malloc type
 * @n: number of elements.
 * @size: bytes per element.
 * @flags: GFP flags, as for kmalloc().
 * @type: the malloc type.
 *
 * FreeBSD's mallocarray(9), except that an overflow of @n * @size returns
 * NULL (counted as a failure of the type) instead of panicking.
 *
 * Context: as for kmalloc() with @flags.
 * Return: the memory, to be freed with kfree_mt(); or NULL.
 */
#define kmalloc_array_mt(n, size, flags, type)				\
	alloc_hooks_typed(_kmalloc_array_mt_noprof(n, size, flags, type,	\
						   __kmalloc_token(size)))

/**
 * kcalloc_mt() - kcalloc() charged to a malloc type
 * @n: number of elements.
 * @size: bytes per element.
 * @flags: GFP flags, as for kmalloc().
 * @type: the malloc type.
 *
 * kmalloc_array_mt() with zeroed memory.
 *
 * Context: as for kmalloc() with @flags.
 * Return: zeroed memory, to be freed with kfree_mt(); or NULL.
 */
#define kcalloc_mt(n, size, flags, type)				\
	kmalloc_array_mt(n, size, (flags) | __GFP_ZERO, type)

/**
 * krealloc_mt() - krealloc() charged to a malloc type
 * @p: NULL, ZERO_SIZE_PTR, or memory of kmalloc_mt() and friends of @type.
 * @new_size: bytes wanted; 0 frees @p and returns ZERO_SIZE_PTR.
 * @flags: GFP flags, as for kmalloc().
 * @type: the malloc type @p was charged to.
 *
 * FreeBSD's realloc(9). The contents are kept up to the smaller size. A
 * resize within the size class keeps the block; a resize to another size
 * class moves the contents to a new block, so that the block always consumes
 * what it is charged. The change counts as a free and an allocation.
 *
 * Context: as for kmalloc() with @flags.
 * Return: the memory, or NULL on failure, with @p unchanged and still
 * allocated, and only the type's failure count changed.
 */
static inline void *krealloc_mt(const void *p, size_t new_size, gfp_t flags,
				struct malloc_type *type)
{
	return malloc_type_krealloc(p, new_size, flags, type);
}

/**
 * kfree_mt() - free memory charged to a malloc type
 * @p: NULL, ZERO_SIZE_PTR (no-op), or memory of kmalloc_mt() and friends.
 * @type: the malloc type @p was charged to.
 *
 * FreeBSD's free(9): no size is passed, the block tells what it was charged
 * (kfree_size()), so a wrong size cannot corrupt the counters. A block that
 * records its type (see kmalloc_node_mt()) is charged back to that type
 * whatever @type is; under CONFIG_DEBUG_VM another @type warns once.
 *
 * Context: any context, as kfree().
 */
static inline void kfree_mt(const void *p, struct malloc_type *type)
{
	/* memguard's blocks, and a NULL @type, take the general path. */
	if (static_branch_unlikely(&malloc_type_events.guarded) || !type)
		malloc_type_kfree(p, type);
	else
		__kfree_mt(p, type);
}

/**
 * kreallocf_mt() - krealloc_mt() that frees the block when it fails
 * @p: NULL, ZERO_SIZE_PTR, or memory of kmalloc_mt() and friends of @type;
 *	not used again, whether the call succeeds or fails.
 * @new_size: bytes wanted; 0 frees @p and returns ZERO_SIZE_PTR.
 * @flags: GFP flags, as for kmalloc().
 * @type: the malloc type @p was charged to.
 *
 * FreeBSD's reallocf(9): krealloc_mt(), except that a failure frees @p
 * (counted as a free of @type, beside the failure), so that the idiom
 * ``p = kreallocf_mt(p, n, gfp, type)`` does not leak @p when it fails.
 *
 * Context: as for kmalloc() with @flags.
 * Return: the memory, or NULL on failure, with @p freed.
 */
static inline void *kreallocf_mt(const void *p, size_t new_size, gfp_t flags,
				 struct malloc_type *type)
{
	return malloc_type_kreallocf(p, new_size, flags, type);
}

/**
 * kfree_sensitive_mt() - zero, then free memory charged to a malloc type
 * @p: NULL, ZERO_SIZE_PTR (no-op), or memory of kmalloc_mt() and friends.
 * @type: the malloc type @p was charged to.
 *
 * FreeBSD's zfree(9), kfree_sensitive() charged to a type: zeroes the whole
 * block @p consumed (its size class, or the pages of a large kmalloc, not
 * the size requested), then frees it. For memory that held keys,
 * credentials or other secrets.
 *
 * Context: any context, as kfree_sensitive().
 */
static inline void kfree_sensitive_mt(const void *p, struct malloc_type *type)
{
	malloc_type_kfree_sensitive(p, type);
}

/**
 * kvmalloc_node_mt() - kvmalloc_node() charged to a malloc type
 * @size: bytes wanted.
 * @flags: GFP flags, as for kvmalloc().
 * @node: the NUMA node, or NUMA_NO_NODE.
 * @type: the malloc type.
 *
 * kmalloc, falling back to vmalloc for sizes or situations kmalloc cannot
 * serve. A kmalloc block is charged its size class; a vmalloc block its size
 * rounded up to whole pages, with zindx -1. Zero bytes: ZERO_SIZE_PTR.
 *
 * Context: process context, as kvmalloc() (may sleep with GFP_KERNEL).
 * Return: the memory, to be freed with kvfree_mt(); or NULL.
 */
static inline void *kvmalloc_node_mt(size_t size, gfp_t flags, int node,
				     struct malloc_type *type)
{
	return malloc_type_kvmalloc_node(size, flags, node, type);
}

/**
 * kvmalloc_mt() - kvmalloc() charged to a malloc type
 * @size: bytes wanted.
 * @flags: GFP flags, as for kvmalloc().
 * @type: the malloc type.
 *
 * See kvmalloc_node_mt().
 *
 * Context: process context, as kvmalloc().
 * Return: the memory, to be freed with kvfree_mt(); or NULL.
 */
static inline void *kvmalloc_mt(size_t size, gfp_t flags,
				struct malloc_type *type)
{
	return malloc_type_kvmalloc_node(size, flags, NUMA_NO_NODE, type);
}

/**
 * kvzalloc_mt() - kvzalloc() charged to a malloc type
 * @size: bytes wanted.
 * @flags: GFP flags, as for kvmalloc().
 * @type: the malloc type.
 *
 * Context: process context, as kvmalloc().
 * Return: zeroed memory, to be freed with kvfree_mt(); or NULL.
 */
static inline void *kvzalloc_mt(size_t size, gfp_t flags,
				struct malloc_type *type)
{
	return malloc_type_kvmalloc_node(size, flags | __GFP_ZERO,
					 NUMA_NO_NODE, type);
}

/**
 * kvmalloc_array_mt() - kvmalloc_array() charged to a malloc type
 * @n: number of elements.
 * @size: bytes per element.
 * @flags: GFP flags, as for kvmalloc().
 * @type: the malloc type.
 *
 * Context: process context, as kvmalloc().
 * Return: the memory, to be freed with kvfree_mt(); NULL on failure or when
 * @n * @size overflows (a failure of the type then).
 */
static inline void *kvmalloc_array_mt(size_t n, size_t size, gfp_t flags,
				      struct malloc_type *type)
{
	size_t bytes;

	/* SIZE_MAX fails, counted as the type's failure. */
	if (unlikely(check_mul_overflow(n, size, &bytes)))
		bytes = SIZE_MAX;
	return malloc_type_kvmalloc_node(bytes, flags, NUMA_NO_NODE, type);
}

/**
 * kvfree_mt() - free memory of kvmalloc_mt() and friends
 * @p: NULL, ZERO_SIZE_PTR (no-op), or memory of kvmalloc_mt() and friends.
 * @type: the malloc type @p was charged to.
 *
 * No size: the block tells what it was charged, kmalloc or vmalloc.
 *
 * Context: as kvfree(): may sleep for vmalloc memory outside interrupts.
 */
static inline void kvfree_mt(const void *p, struct malloc_type *type)
{
	malloc_type_kvfree(p, type);
}

#else /* !CONFIG_MALLOC_TYPES */

static inline void malloc_type_vmcoreinfo_setup(void)
{
}

/* Without malloc types the functions are the kmalloc family, uncharged. */
#define kmalloc_node_mt(size, flags, node, type)			\
	((void)(type), kmalloc_node(size, flags, node))
#define kmalloc_mt(size, flags, type)	((void)(type), kmalloc(size, flags))
#define kzalloc_mt(size, flags, type)	((void)(type), kzalloc(size, flags))
#define kmalloc_array_mt(n, size, flags, type)				\
	((void)(type), kmalloc_array(n, size, flags))
#define kcalloc_mt(n, size, flags, type)				\
	((void)(type), kcalloc(n, size, flags))
#define krealloc_mt(p, new_size, flags, type)				\
	((void)(type), krealloc(p, new_size, flags))
#define kfree_mt(p, type)		((void)(type), kfree(p))
#define kfree_sensitive_mt(p, type)	((void)(type), kfree_sensitive(p))
#define malloc_type_allocated(type, size)	((void)(type), (void)(size))
#define malloc_type_freed(type, size)		((void)(type), (void)(size))
#define malloc_type_failed(type)		((void)(type))
#define alloc_pages_mt(gfp, order, type)				\
	((void)(type), alloc_pages(gfp, order))
#define __free_pages_mt(page, order, type)				\
	((void)(type), __free_pages(page, order))
#define __get_free_pages_mt(gfp, order, type)				\
	((void)(type), __get_free_pages(gfp, order))
#define free_pages_mt(addr, order, type)				\
	((void)(type), free_pages(addr, order))
#define alloc_pages_exact_mt(size, gfp, type)				\
	((void)(type), alloc_pages_exact(size, gfp))
#define free_pages_exact_mt(virt, size, type)				\
	((void)(type), free_pages_exact(virt, size))

/*
 * ksize() for kmalloc memory; for a kvmalloc block vmalloc served, the pages
 * mapped from its start up to the guard page that ends every vmalloc area.
 */
static inline size_t malloc_usable_size(const void *p)
{
	const char *q = p;

	if (!is_vmalloc_addr(p))
		return ksize(p);
	while (vmalloc_to_page(q))
		q += PAGE_SIZE;
	return q - (const char *)p;
}

/* reallocf(): a failed krealloc() frees the block. */
static inline void *kreallocf_mt(const void *p, size_t new_size, gfp_t flags,
				 struct malloc_type *type)
{
	void *q = krealloc(p, new_size, flags);

	if (!q)
		kfree(p);
	return q;
}

#define kvmalloc_node_mt(size, flags, node, type)			\
	((void)(type), kvmalloc_node(size, flags, node))
#define kvmalloc_mt(size, flags, type)	((void)(type), kvmalloc(size, flags))
#define kvzalloc_mt(size, flags, type)	((void)(type), kvzalloc(size, flags))
#define kvmalloc_array_mt(n, size, flags, type)				\
	((void)(type), kvmalloc_array(n, size, flags))
#define kvfree_mt(p, type)		((void)(type), kvfree(p))

#endif /* CONFIG_MALLOC_TYPES */

#endif /* _LINUX_MALLOC_TYPE_H */
