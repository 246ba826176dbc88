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
 */

#define pr_fmt(fmt) "malloc_types: " fmt

#include <linux/cpumask.h>
#include <linux/init.h>
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

#include "malloc_type_internal.h"

#ifdef MODULE_PARAM_PREFIX
#undef MODULE_PARAM_PREFIX
#endif
#define MODULE_PARAM_PREFIX "malloc_types."

struct malloc_type_default_switch malloc_type_default_types = {
	.off = STATIC_KEY_FALSE_INIT,
};
EXPORT_SYMBOL_GPL(malloc_type_default_types);

struct malloc_type_classes_switch malloc_type_classes = {
	.runtime = STATIC_KEY_FALSE_INIT,
};
EXPORT_SYMBOL_GPL(malloc_type_classes);

/*
 * The bytes charged to types by kmalloc size class, per CPU (struct
 * malloc_type_zone_counters): every charge updates them with the type's.
 */
DEFINE_PER_CPU(struct malloc_type_zone_counters, malloc_type_zone_counters);
EXPORT_PER_CPU_SYMBOL_GPL(malloc_type_zone_counters);
u64 __percpu *const malloc_type_zone_memuse =
	&malloc_type_zone_counters.mzc_memuse[0];
EXPORT_SYMBOL_GPL(malloc_type_zone_memuse);

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

/* Serializes registration, unregistration and the walks that hold it. */
DEFINE_MUTEX(malloc_type_mutex);
LIST_HEAD(malloc_type_list);
unsigned long malloc_type_unregistered;
static unsigned int malloc_type_nr;
static u64 malloc_type_next_id = 1;

extern struct malloc_type *__start___malloc_types_ptrs[];
extern struct malloc_type *__stop___malloc_types_ptrs[];

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
		   malloc_type_zone_for_name(mtp->ks_shortdesc,
					     malloc_type_numzones()));
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
 * (mm/malloc_type_default.c), out of the registry, logs FreeBSD's warning
 * for each that still has memory charged, and frees their statistics; but
 * keeps a type whose blocks carry records while memory is charged to it (see
 * malloc_type_keep()), and unregisters the kept types that have nothing
 * charged any more (of this or earlier unloads). The module core calls it
 * from free_module(), beside codetag_unload_module(): after the module's
 * exit, the going notifier and async_synchronize_full() in delete_module(),
 * so that what the module's async functions allocate and free is counted,
 * and the warning is about memory still allocated. A module whose load fails
 * after the coming notifier is unloaded from the failure path of
 * load_module(). A type that is not registered (the coming notifier failed,
 * or never ran) is skipped.
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
	malloc_type_zones_init();

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
	pr_info("%u types, %u zones\n", malloc_type_count(),
		malloc_type_numzones());
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
