// SPDX-License-Identifier: GPL-2.0
/*
 * Malloc types: the registry.
 *
 * Every malloc type (kernel::malloc_define!() in Rust) leaves a pointer to
 * itself in the section "__malloc_types_ptrs". This file registers the types
 * of vmlinux at boot and those of a module while the module is coming, the
 * way tracepoints of modules are found (kernel/tracepoint.c), and
 * unregisters a module's types when the module core frees the module
 * (malloc_type_module_unload()). Registration gives a type its
 * per-CPU statistics, its zone and its id; unregistration warns, as
 * FreeBSD's malloc_uninit() does, when the type still has memory allocated.
 *
 * The registry is a list under a mutex. Allocation and free never take the
 * mutex: they touch only the type's own per-CPU statistics. Readers walk the
 * list with malloc_type_for_each(), holding the mutex, so a module's type
 * cannot go away under a reader; or under rcu_read_lock(), as the stream of
 * /proc/malloc_stats does (mm/malloc_type_stream.c), so as not to hold up
 * module loads and unloads.
 *
 * Zones: with malloc_types.numzones=N (default 1) on the command line, zones
 * 1..N-1 are dedicated sets of kmalloc buckets (kmem_buckets_create()) and
 * each type is placed in zone hash(name) % N; zone 0 is the shared kmalloc
 * caches.
 */

#define pr_fmt(fmt) "malloc_types: " fmt

#include <linux/cpumask.h>
#include <linux/init.h>
#include <linux/jhash.h>
#include <linux/kasan.h>
#include <linux/kfence.h>
#include <linux/malloc_type.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/string_helpers.h>
#include <linux/vmalloc.h>
#include <linux/vmcore_info.h>

#include "malloc_type_internal.h"
#include "slab.h"

#ifdef MODULE_PARAM_PREFIX
#undef MODULE_PARAM_PREFIX
#endif
#define MODULE_PARAM_PREFIX "malloc_types."

static unsigned int numzones = 1;
module_param(numzones, uint, 0444);
MODULE_PARM_DESC(numzones, "Number of zones (sets of kmalloc buckets) types are spread over");

struct malloc_type_default_switch malloc_type_default_types = {
	.off = STATIC_KEY_FALSE_INIT,
};
EXPORT_SYMBOL_GPL(malloc_type_default_types);

struct malloc_type_classes_switch malloc_type_classes = {
	.runtime = STATIC_KEY_FALSE_INIT,
};
EXPORT_SYMBOL_GPL(malloc_type_classes);

static bool default_types = true;

/*
 * malloc_types.default_types=0 turns the switch's key on. Boot parameters are
 * parsed after jump_label_init() and before any initcall, so before the first
 * Rust allocation: every block is freed the way it was allocated.
 */
static int default_types_set(const char *val, const struct kernel_param *kp)
{
	int ret = param_set_bool(val, kp);

	if (ret)
		return ret;
	if (default_types)
		static_branch_disable(&malloc_type_default_types.off);
	else
		static_branch_enable(&malloc_type_default_types.off);
	return 0;
}

static const struct kernel_param_ops default_types_ops = {
	.set = default_types_set,
	.get = param_get_bool,
};
module_param_cb(default_types, &default_types_ops, &default_types, 0444);
MODULE_PARM_DESC(default_types,
		 "Charge untyped kmalloc and Rust allocations to the default types (1, default) or not (0)");

/* Zone i > 0 allocates from malloc_type_buckets[i]; [0] is unused. */
static kmem_buckets *malloc_type_buckets[MALLOC_TYPE_MAX_ZONES];

/* Serializes registration, unregistration and the walks that hold it. */
DEFINE_MUTEX(malloc_type_mutex);
LIST_HEAD(malloc_type_list);
unsigned long malloc_type_unregistered;
static unsigned int malloc_type_nr;
static u64 malloc_type_next_id = 1;

extern struct malloc_type *__start___malloc_types_ptrs[];
extern struct malloc_type *__stop___malloc_types_ptrs[];

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
 * malloc_type_count() - the number of registered types
 *
 * Return: the number of types now in the registry.
 */
unsigned int malloc_type_count(void)
{
	return READ_ONCE(malloc_type_nr);
}
EXPORT_SYMBOL_GPL(malloc_type_count);

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
 * memguard guards, what it recorded as charged. These are the
 * sizes the allocation was charged: the accounting rounds a request up to its
 * size class or pages the same way.
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
 * malloc_type_probe_name() - turn a type's name into its probe name
 * @name: a copy of the name, NUL-terminated; changed in place.
 *
 * Replaces each ASCII white-space character (what isspace() matches in C's
 * "C" locale: ' ', '\t', '\n', '\v', '\f', '\r') with '_', as dtmalloc(4)
 * names its probes; every other byte stays. The kernel's isspace() is not
 * used: it also matches 0xa0, the second byte of many UTF-8 characters
 * (U+00E0 is c3 a0), which would leave a probe name that is not UTF-8 and that
 * no tool computes. Any context.
 */
void malloc_type_probe_name(char *name)
{
	for (; *name; name++)
		if (*name == ' ' || (*name >= '\t' && *name <= '\r'))
			*name = '_';
}
EXPORT_SYMBOL_GPL(malloc_type_probe_name);

/**
 * malloc_type_name_text() - write a type's name in its text form
 * @buf: where the text goes, NUL-terminated.
 * @size: the size of @buf, at least 1; MALLOC_TYPE_TEXT_MAX + 1 holds the
 *	text of any name or probe name.
 * @name: the name's bytes, any of them.
 * @len: their number.
 *
 * A name is bytes, and a newline, an escape sequence or a bidirectional
 * override in one would split a line, forge a row of a table or take over a
 * terminal. Every text output writes a name in this form instead: each byte
 * that is not printable ASCII (below 0x20, 0x7f and above) and each
 * backslash as a backslash and three octal digits, every other byte as it
 * is, as seq_escape() writes the paths of /proc/mounts. Two names never
 * have the same text, and the text is printable ASCII. The tools write names
 * the same way (rust/kernel/malloc_type/name_text.rs is the test vector the
 * kernel and the tools share). Any context.
 *
 * Return: the length of the text written, without the NUL (cut to fit
 * @size).
 */
size_t malloc_type_name_text(char *buf, size_t size, const char *name,
			     size_t len)
{
	int n = string_escape_mem(name, len, buf, size - 1,
				  ESCAPE_OCTAL | ESCAPE_NAP | ESCAPE_APPEND,
				  "\\");

	n = min_t(size_t, n, size - 1);
	buf[n] = '\0';
	return n;
}
EXPORT_SYMBOL_GPL(malloc_type_name_text);

/*
 * Sets the text forms of a type being registered, its probe name already
 * computed: the name and probe name themselves when no byte needs
 * escaping (the common case), else one copy holding both.
 */
static int malloc_type_texts_init(struct malloc_type *mtp)
{
	struct malloc_type_internal *mti = &mtp->ks_mti;
	size_t len = strnlen(mtp->ks_shortdesc, MALLOC_TYPE_NAME_MAX);
	char text[MALLOC_TYPE_TEXT_MAX + 1];
	size_t n = malloc_type_name_text(text, sizeof(text), mtp->ks_shortdesc,
					 len);
	char *buf;

	if (n == len) {
		/* Every byte stands for itself. */
		mti->mti_nametext = mtp->ks_shortdesc;
		mti->mti_probetext = mti->mti_probename;
		return 0;
	}
	/* The probe name's text is at most as long: white space becomes '_'. */
	buf = kmalloc(2 * (n + 1), GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, text, n + 1);
	malloc_type_name_text(buf + n + 1, n + 1, mti->mti_probename,
			      strlen(mti->mti_probename));
	mti->mti_nametext = buf;
	mti->mti_probetext = buf + n + 1;
	return 0;
}

/* Frees what malloc_type_texts_init() allocated. */
static void malloc_type_texts_free(struct malloc_type *mtp)
{
	struct malloc_type_internal *mti = &mtp->ks_mti;

	if (mti->mti_nametext != mtp->ks_shortdesc)
		kfree(mti->mti_nametext);
	mti->mti_nametext = NULL;
	mti->mti_probetext = NULL;
}

/**
 * malloc_type_for_each() - call @fn for each registered type
 * @fn: the function; a non-zero return stops the walk.
 * @arg: passed to @fn.
 *
 * Types are visited newest first, as FreeBSD's kmemstatistics list. @fn runs
 * with the registry mutex held: it may sleep and allocate, but must not load
 * or unload modules. A type passed to @fn stays registered until @fn returns.
 *
 * Context: process context, may sleep.
 * Return: the first non-zero return of @fn, or 0.
 */
int malloc_type_for_each(int (*fn)(struct malloc_type *mtp, void *arg),
			 void *arg)
{
	struct malloc_type *mtp;
	int ret = 0;

	mutex_lock(&malloc_type_mutex);
	list_for_each_entry(mtp, &malloc_type_list, ks_mti.mti_list) {
		ret = fn(mtp, arg);
		if (ret)
			break;
	}
	mutex_unlock(&malloc_type_mutex);
	return ret;
}
EXPORT_SYMBOL_GPL(malloc_type_for_each);

/* mth_owner of the stream holds any module name. */
static_assert(MODULE_NAME_LEN <= MALLOC_MAX_OWNER);

/* Registers @mtp for @owner, which outlives its registration, with @flags. */
static int __malloc_type_register(struct malloc_type *mtp, const char *owner,
				  u32 flags)
{
	struct malloc_type_internal *mti = &mtp->ks_mti;
	struct malloc_type_counters __percpu *stats;

	lockdep_assert_held(&malloc_type_mutex);

	strscpy(mti->mti_probename, mtp->ks_shortdesc);
	malloc_type_probe_name(mti->mti_probename);
	if (malloc_type_texts_init(mtp))
		return -ENOMEM;
	stats = alloc_percpu(struct malloc_type_counters);
	if (!stats) {
		malloc_type_texts_free(mtp);
		return -ENOMEM;
	}

	memset(mti->mti_probes, 0, sizeof(mti->mti_probes));
	WRITE_ONCE(mti->mti_events, 0);
	WRITE_ONCE(mti->mti_zone,
		   malloc_type_zone_for_name(mtp->ks_shortdesc, numzones));
	/* Read locklessly (READ_ONCE() in C, atomic loads in Rust). */
	WRITE_ONCE(mti->mti_flags, flags);
	/* The module's name lives as long as its types are registered. */
	WRITE_ONCE(mti->mti_owner, owner);
	WRITE_ONCE(mti->mti_id, malloc_type_next_id++);
	malloc_type_probes_apply(mtp);
	malloc_type_peak_register(mtp);
	malloc_type_fail_register(mtp);
	malloc_type_memguard_register(mtp);
	/* Publish the statistics last: their presence means "registered". */
	smp_store_release(&mti->mti_stats, stats);
	list_add_rcu(&mti->mti_list, &malloc_type_list);
	WRITE_ONCE(malloc_type_nr, malloc_type_nr + 1);
	return 0;
}

static int malloc_type_register(struct malloc_type *mtp, struct module *mod)
{
	u32 flags = MALLOC_TYPE_F_RECORDS;
	const char *owner = "vmlinux";
	int ret;

	lockdep_assert_held(&malloc_type_mutex);

	if (WARN_ON_ONCE(READ_ONCE(mtp->ks_mti.mti_stats)))
		return -EBUSY;
	if (mod) {
		/* A type in the module's area may be kept after the unload. */
		flags = MALLOC_TYPE_F_MODULE;
		owner = malloc_type_area_register(mtp);
		if (owner)
			flags |= MALLOC_TYPE_F_RECORDS;
		else
			owner = mod->name;
	}
	ret = __malloc_type_register(mtp, owner, flags);
	if (ret && mod && (flags & MALLOC_TYPE_F_RECORDS))
		malloc_type_area_unregister(mtp);
	return ret;
}

#ifdef CONFIG_MALLOC_TYPES_DEFAULT
/**
 * malloc_type_register_default() - register a default type
 * @mtp: the type, in memory of the registry's (mm/malloc_type_default.c),
 *	which malloc_type_default_free() frees once the type is destroyed.
 * @owner: "vmlinux" or the module's name, as long-lived as @mtp.
 * @module: whether the type is a module's.
 *
 * Context: under malloc_type_mutex.
 * Return: 0 or -ENOMEM.
 */
int malloc_type_register_default(struct malloc_type *mtp, const char *owner,
				 bool module)
{
	/* Every block charged to a default type carries a record. */
	u32 flags = MALLOC_TYPE_F_RECORDS | MALLOC_TYPE_F_RECORDED |
		    MALLOC_TYPE_F_DEFAULT;

	if (module)
		flags |= MALLOC_TYPE_F_MODULE;
	return __malloc_type_register(mtp, owner, flags);
}
#endif

#ifdef CONFIG_MODULES
/*
 * Unregistering a type is two steps, so that a module's types share one
 * grace period: malloc_type_unpublish() takes the type out of the registry
 * and clears mti_stats, and after synchronize_rcu() malloc_type_destroy()
 * checks for leaks and frees the statistics. The readers of the counters
 * (the /proc/malloc_stats stream, the sums of the Rust API) hold
 * rcu_read_lock() or keep preemption disabled, as does a charge that fires
 * an event or tracks a peak: all of them have finished with the type once
 * the grace period has elapsed. A plain charge (the per-CPU updates of an
 * allocation or a free) runs with preemption enabled and needs none of
 * this: a type is unpublished only when nothing can charge it any more,
 * its module's code being gone and any block with its record freed (see
 * malloc_type_keep()).
 */
static struct malloc_type_counters __percpu *
malloc_type_unpublish(struct malloc_type *mtp)
{
	struct malloc_type_internal *mti = &mtp->ks_mti;
	struct malloc_type_counters __percpu *stats = mti->mti_stats;

	lockdep_assert_held(&malloc_type_mutex);

	if (!stats)
		return NULL;
	/* Before the type leaves the list (see malloc_type_unregistered). */
	WRITE_ONCE(malloc_type_unregistered, malloc_type_unregistered + 1);
	list_del_rcu(&mti->mti_list);
	WRITE_ONCE(malloc_type_nr, malloc_type_nr - 1);
	WRITE_ONCE(mti->mti_stats, NULL);
	malloc_type_peak_unregister(mtp);
	malloc_type_fail_unregister(mtp);
	malloc_type_memguard_unregister(mtp);
	return stats;
}

/* The allocations and bytes in use: the sums over the CPUs. */
static void malloc_type_in_use(struct malloc_type_counters __percpu *stats,
			       long *allocs, long *bytes)
{
	int cpu;

	*allocs = 0;
	*bytes = 0;
	for_each_possible_cpu(cpu) {
		struct malloc_type_counters *s = per_cpu_ptr(stats, cpu);

		*allocs += (long)(READ_ONCE(s->mts_numallocs) -
				  READ_ONCE(s->mts_numfrees));
		*bytes += (long)(READ_ONCE(s->mts_memalloced) -
				 READ_ONCE(s->mts_memfreed));
	}
}

/* FreeBSD's warning of malloc_uninit(), for a type with memory in use. */
static void malloc_type_warn_leak(struct malloc_type *mtp, long allocs,
				  long bytes)
{
	pr_warn("Warning: memory type %s leaked memory on destroy (%ld allocations, %ld bytes leaked).\n",
		mtp->ks_mti.mti_nametext, allocs, bytes);
}

/* After a grace period that followed malloc_type_unpublish(). */
static void malloc_type_destroy(struct malloc_type *mtp,
				struct malloc_type_counters __percpu *stats)
{
	long allocs, bytes;

	if (!stats)
		return;
	malloc_type_in_use(stats, &allocs, &bytes);
	if (allocs > 0 || bytes > 0)
		malloc_type_warn_leak(mtp, allocs, bytes);
	free_percpu(stats);
	malloc_type_texts_free(mtp);
	if (READ_ONCE(mtp->ks_mti.mti_flags) & MALLOC_TYPE_F_DEFAULT) {
		malloc_type_default_free(mtp);
	} else if (READ_ONCE(mtp->ks_mti.mti_flags) & MALLOC_TYPE_F_RECORDS) {
		mutex_lock(&malloc_type_mutex);
		malloc_type_area_unregister(mtp);
		mutex_unlock(&malloc_type_mutex);
	}
}

/*
 * Whether the registry keeps @mtp, a type of a module being freed, instead
 * of unregistering it: blocks of it have carried a record and memory is
 * still charged to it, so a kfree() by other code may charge it back (or,
 * if they leaked, the records point to it for good). The warning of a leak
 * is the same as for a type that goes. The type is unregistered by
 * malloc_type_sweep() once all is freed.
 */
static bool malloc_type_keep(struct malloc_type *mtp)
{
	struct malloc_type_internal *mti = &mtp->ks_mti;
	u32 flags = READ_ONCE(mti->mti_flags);
	long allocs, bytes;

	lockdep_assert_held(&malloc_type_mutex);

	if (!mti->mti_stats || !(flags & MALLOC_TYPE_F_RECORDS) ||
	    !(flags & MALLOC_TYPE_F_RECORDED))
		return false;
	malloc_type_in_use(mti->mti_stats, &allocs, &bytes);
	if (allocs <= 0 && bytes <= 0)
		return false;
	WRITE_ONCE(mti->mti_flags, flags | MALLOC_TYPE_F_UNLOADED);
	malloc_type_warn_leak(mtp, allocs, bytes);
	pr_info("memory type %s of module %s: kept until the memory charged to it is freed\n",
		mti->mti_nametext, mti->mti_owner);
	return true;
}

/*
 * Unregisters the kept types (malloc_type_keep()) that have no memory
 * charged any more, one grace period each: there are few. Called at each
 * load and unload of a module, as allocation profiling releases the tags
 * of unloaded modules at the next load.
 */
static void malloc_type_sweep(void)
{
	struct malloc_type_counters __percpu *stats;
	struct malloc_type *mtp, *found;
	long allocs, bytes;

	do {
		found = NULL;
		stats = NULL;
		mutex_lock(&malloc_type_mutex);
		list_for_each_entry(mtp, &malloc_type_list, ks_mti.mti_list) {
			if (!(READ_ONCE(mtp->ks_mti.mti_flags) &
			      MALLOC_TYPE_F_UNLOADED))
				continue;
			malloc_type_in_use(mtp->ks_mti.mti_stats, &allocs,
					   &bytes);
			if (allocs <= 0 && bytes <= 0) {
				found = mtp;
				stats = malloc_type_unpublish(mtp);
				break;
			}
		}
		mutex_unlock(&malloc_type_mutex);
		if (found) {
			synchronize_rcu();
			malloc_type_destroy(found, stats);
		}
	} while (found);
}
#endif /* CONFIG_MODULES */

#ifdef CONFIG_VMCORE_INFO
/*
 * The malloc types' part of the vmcoreinfo: the same KEY=VALUE lines, kept
 * in kernel memory, which the note points to. The note is one page that
 * every subsystem and architecture shares (a full one is truncated with a
 * warning): the registry's description, about 1100 bytes, would take a
 * quarter of it on x86_64, so it adds two lines only.
 */
static char malloc_type_vmcoreinfo[2048] __ro_after_init;
static size_t malloc_type_vmcoreinfo_len __initdata;

static __printf(1, 2) void __init mt_vmcoreinfo(const char *fmt, ...)
{
	size_t room = sizeof(malloc_type_vmcoreinfo) - malloc_type_vmcoreinfo_len;
	va_list args;

	va_start(args, fmt);
	malloc_type_vmcoreinfo_len +=
		vscnprintf(malloc_type_vmcoreinfo + malloc_type_vmcoreinfo_len,
			   room, fmt, args);
	va_end(args);
}

#define MT_VMCOREINFO_OFFSET(name, field)				\
	mt_vmcoreinfo("OFFSET(%s.%s)=%zu\n", #name, #field,		\
		      offsetof(struct name, field))

/**
 * malloc_type_vmcoreinfo_setup() - describe the registry in the vmcoreinfo
 *
 * Writes what a reader of a crash dump or of /proc/kcore needs to list the
 * malloc types without the kernel's debugging information, as makedumpfile
 * and crash find the page structures: the registry's list head, the layout
 * of struct malloc_type and of its per-CPU counters (struct
 * malloc_type_counters: its size and the offset of each field, so that the
 * record may change), where the per-CPU offsets and the possible CPUs are,
 * the number of CPU ids, the peak bit of mti_events, the number of zones
 * and the kmalloc size classes a zindx names (bytes, by zindx). Two
 * versions: the stream's, for the meaning of the fields a reader rebuilds
 * the stream with, and MALLOC_TYPE_VMCOREINFO_VERSION, the description's
 * own, bumped when a reader of the previous one would misread a dump (a
 * new counter that a reader must know, say); without it, a dump is of the
 * kernels whose per-CPU record was the stream's struct malloc_type_stats
 * (SIZE(malloc_type_stats)). The lines go to
 * malloc_type_vmcoreinfo[], and the note gets its address and length
 * (SYMBOL(malloc_type_vmcoreinfo), LENGTH(malloc_type_vmcoreinfo)). The
 * reader is memstat -M (tools/memstat, libmemstat's kvm side).
 *
 * Context: called once by crash_save_vmcoreinfo_init() (a subsys initcall),
 * after malloc_type_init(), before the note is finished.
 */
void __init malloc_type_vmcoreinfo_setup(void)
{
	unsigned int zindx;
	size_t size;

	mt_vmcoreinfo("NUMBER(MALLOC_TYPE_STREAM_VERSION)=%d\n",
		      MALLOC_TYPE_STREAM_VERSION);
	mt_vmcoreinfo("SYMBOL(malloc_type_list)=%lx\n",
		      (unsigned long)&malloc_type_list);
	mt_vmcoreinfo("SIZE(malloc_type)=%zu\n", sizeof(struct malloc_type));
	MT_VMCOREINFO_OFFSET(malloc_type, ks_shortdesc);
	MT_VMCOREINFO_OFFSET(malloc_type, ks_mti);
	MT_VMCOREINFO_OFFSET(malloc_type_internal, mti_zone);
	MT_VMCOREINFO_OFFSET(malloc_type_internal, mti_flags);
	MT_VMCOREINFO_OFFSET(malloc_type_internal, mti_stats);
	MT_VMCOREINFO_OFFSET(malloc_type_internal, mti_id);
	MT_VMCOREINFO_OFFSET(malloc_type_internal, mti_list);
	MT_VMCOREINFO_OFFSET(malloc_type_internal, mti_events);
	MT_VMCOREINFO_OFFSET(malloc_type_internal, mti_owner);
	MT_VMCOREINFO_OFFSET(malloc_type_internal, mti_peak);
	mt_vmcoreinfo("NUMBER(MALLOC_TYPE_VMCOREINFO_VERSION)=%d\n",
		      MALLOC_TYPE_VMCOREINFO_VERSION);
	mt_vmcoreinfo("SIZE(malloc_type_counters)=%zu\n",
		      sizeof(struct malloc_type_counters));
	MT_VMCOREINFO_OFFSET(malloc_type_counters, mts_memalloced);
	MT_VMCOREINFO_OFFSET(malloc_type_counters, mts_memfreed);
	MT_VMCOREINFO_OFFSET(malloc_type_counters, mts_numallocs);
	MT_VMCOREINFO_OFFSET(malloc_type_counters, mts_numfrees);
	MT_VMCOREINFO_OFFSET(malloc_type_counters, mts_size);
	MT_VMCOREINFO_OFFSET(malloc_type_counters, mts_numfailures);
	mt_vmcoreinfo("NUMBER(MALLOC_TYPE_EV_PEAK)=%d\n", MALLOC_TYPE_EV_PEAK);
#ifdef CONFIG_SMP
	mt_vmcoreinfo("SYMBOL(__per_cpu_offset)=%lx\n",
		      (unsigned long)__per_cpu_offset);
#endif
	mt_vmcoreinfo("SYMBOL(__cpu_possible_mask)=%lx\n",
		      (unsigned long)&__cpu_possible_mask);
	mt_vmcoreinfo("NUMBER(MALLOC_TYPE_NR_CPU_IDS)=%u\n", nr_cpu_ids);
	mt_vmcoreinfo("NUMBER(MALLOC_TYPE_NUMZONES)=%u\n", numzones);
	mt_vmcoreinfo("MALLOC_TYPE_ZONE_SIZES=");
	for (zindx = 0; zindx < MALLOC_TYPE_ZONE_COUNT_MAX; zindx++) {
		size = malloc_type_zone_size(zindx);
		if (!size)
			break;
		mt_vmcoreinfo("%s%zu", zindx ? "," : "", size);
	}
	mt_vmcoreinfo("\n");
	/* vscnprintf() stops one short of a full buffer: the text is cut. */
	if (malloc_type_vmcoreinfo_len >= sizeof(malloc_type_vmcoreinfo) - 1) {
		pr_warn("vmcoreinfo: the description does not fit in %zu bytes\n",
			sizeof(malloc_type_vmcoreinfo));
		return;
	}
	VMCOREINFO_SYMBOL_ARRAY(malloc_type_vmcoreinfo);
	VMCOREINFO_LENGTH(malloc_type_vmcoreinfo, malloc_type_vmcoreinfo_len);
}
#endif /* CONFIG_VMCORE_INFO */

#ifdef CONFIG_MODULES
/* The @i-th type of module @mod: its own, then @def, its default type. */
static struct malloc_type *malloc_type_of_module(struct module *mod,
						 struct malloc_type *def,
						 unsigned int i)
{
	return i < mod->num_malloc_types ? mod->malloc_types_ptrs[i] : def;
}

/**
 * malloc_type_module_unload() - unregister a module's malloc types
 * @mod: the module.
 *
 * Takes the module's types, and the default type the registry made for it
 * (mm/malloc_type_default.c), out of the registry, logs FreeBSD's warning for
 * each that still has memory charged, and frees their statistics; but keeps
 * a type whose blocks carry records while memory is charged to it (see
 * malloc_type_keep()), and unregisters the kept types that have nothing
 * charged any more (of this or earlier unloads). The module core calls it
 * from free_module(), beside codetag_unload_module(): after
 * the module's exit, the going notifier and async_synchronize_full() in
 * delete_module(), so that what the module's async functions allocate and
 * free is counted, and the warning is about memory still allocated. A
 * module whose load fails after the coming notifier is unloaded from the
 * failure path of load_module(). A type that is not registered (the coming
 * notifier failed, or never ran) is skipped.
 *
 * Context: process context; takes the registry mutex and sleeps for an RCU
 * grace period.
 */
void malloc_type_module_unload(struct module *mod)
{
	struct malloc_type_counters __percpu **stats;
	unsigned int i, n = mod->num_malloc_types;
	struct malloc_type *def;

	/* The module's types, and the default type the registry made for it. */
	mutex_lock(&malloc_type_mutex);
	def = malloc_type_default_module_take(mod);
	mutex_unlock(&malloc_type_mutex);
	if (def)
		n++;

	if (!n)
		goto sweep;
	/* The module's types share one grace period... */
	stats = kvcalloc(n, sizeof(*stats), GFP_KERNEL);
	if (!stats) {
		/* ...or, without memory for that, have one each. */
		for (i = 0; i < n; i++) {
			struct malloc_type *mtp = malloc_type_of_module(mod, def, i);
			struct malloc_type_counters __percpu *s;

			mutex_lock(&malloc_type_mutex);
			s = malloc_type_keep(mtp) ? NULL :
						    malloc_type_unpublish(mtp);
			mutex_unlock(&malloc_type_mutex);
			synchronize_rcu();
			malloc_type_destroy(mtp, s);
		}
		goto sweep;
	}

	mutex_lock(&malloc_type_mutex);
	for (i = 0; i < n; i++) {
		struct malloc_type *mtp = malloc_type_of_module(mod, def, i);

		stats[i] = malloc_type_keep(mtp) ? NULL :
						   malloc_type_unpublish(mtp);
	}
	mutex_unlock(&malloc_type_mutex);

	synchronize_rcu();
	for (i = 0; i < n; i++)
		malloc_type_destroy(malloc_type_of_module(mod, def, i), stats[i]);
	kvfree(stats);
sweep:
	malloc_type_sweep();
}

static int malloc_type_module_coming(struct module *mod)
{
	unsigned int i;
	int ret = 0;

	malloc_type_sweep();
	mutex_lock(&malloc_type_mutex);
	for (i = 0; i < mod->num_malloc_types; i++) {
		ret = malloc_type_register(mod->malloc_types_ptrs[i], mod);
		if (ret)
			break;
	}
	mutex_unlock(&malloc_type_mutex);
	if (ret) {
		pr_warn("module %s: cannot register its malloc types: %d\n",
			mod->name, ret);
		malloc_type_module_unload(mod);
		return ret;
	}
	malloc_type_default_module_coming(mod);
	return 0;
}

static int malloc_type_module_notify(struct notifier_block *nb,
				     unsigned long val, void *data)
{
	struct module *mod = data;
	int ret = 0;

	switch (val) {
	case MODULE_STATE_COMING:
		ret = malloc_type_module_coming(mod);
		break;
	default:
		break;
	}
	return notifier_from_errno(ret);
}

static struct notifier_block malloc_type_module_nb = {
	.notifier_call = malloc_type_module_notify,
	.priority = 0,
};
#endif /* CONFIG_MODULES */

static void __init malloc_type_init_zones(void)
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

/**
 * malloc_type_init() - set up the registry and register vmlinux's types
 *
 * Reads the size classes (the object sizes of the kmalloc caches that
 * kmem_cache_init() created), creates the zones, registers the types
 * vmlinux defines and gives vmlinux's allocation tags their default types.
 * It needs the slab, per-CPU and vmalloc allocators and nothing later, so
 * mm_core_init() calls it as soon as those are up: the kmalloc blocks of
 * the rest of start_kernel() (the scheduler, workqueues, RCU, interrupts,
 * the VFS caches) are charged to their default types from the first, and
 * the few allocated before it carry no record and are never charged.
 *
 * Context: start_kernel(), one CPU, interrupts off.
 */
void __init malloc_type_init(void)
{
	struct malloc_type **p;
	int ret;

	if (malloc_type_init_size_classes()) {
		static_branch_enable(&malloc_type_classes.runtime);
		pr_info("kmalloc size classes differ from the built-in ones: looked up at run time\n");
	}
	malloc_type_kmalloc_bits_init();
	malloc_type_init_zones();

	mutex_lock(&malloc_type_mutex);
	for (p = __start___malloc_types_ptrs; p < __stop___malloc_types_ptrs;
	     p++) {
		ret = malloc_type_register(*p, NULL);
		if (ret) {
			char text[MALLOC_TYPE_TEXT_MAX + 1];

			malloc_type_name_text(text, sizeof(text),
					      (*p)->ks_shortdesc,
					      strnlen((*p)->ks_shortdesc,
						      MALLOC_TYPE_NAME_MAX));
			pr_warn("cannot register type %s: %d\n", text, ret);
		}
	}
	mutex_unlock(&malloc_type_mutex);
	malloc_type_default_init();
	pr_info("%u types, %u zones\n", malloc_type_count(), numzones);
}

#ifdef CONFIG_MODULES
/*
 * The modules' types: kept after an unload in the areas of the code tags
 * (which need the IDR, so not before radix_tree_init()), registered by the
 * notifier before the first module loads.
 */
static int __init malloc_type_modules_init(void)
{
	int ret;

	malloc_type_areas_init();
	ret = register_module_notifier(&malloc_type_module_nb);
	if (ret)
		pr_warn("cannot register the module notifier: %d\n", ret);
	return 0;
}
early_initcall(malloc_type_modules_init);
#endif
