// SPDX-License-Identifier: GPL-2.0
/*
 * Malloc types: peak bytes in use per type, for the types that ask for it.
 *
 * The per-CPU counters give a type's bytes in use only as a sum over the
 * CPUs, too dear to take on every allocation, so the highest value they
 * reached is not known. A type whose peak is tracked also keeps its bytes in
 * use in one shared counter (mti_in_use, an atomic64_t), and raises mti_peak
 * when an allocation takes it higher: an atomic add per allocation and free,
 * a cache line shared by the CPUs, which is why only the types named in
 * /proc/malloc_types_peak pay it. Every other type costs what it costs with
 * tracking off: the accounting tests the type's mti_events word only behind
 * a static key (malloc_type_events) that is off while no type is tracked
 * and no dtmalloc tracepoint has a probe.
 *
 * /proc/malloc_types_peak (0600) holds the selection, one pattern per line:
 * a probe name (the type's name with white space as '_') or a glob of one,
 * written as names are shown ("\NNN" for a byte; mm/malloc_type_pattern.c).
 * Writing patterns starts tracking the types they match, from their bytes
 * in use at that moment, and resets the peak of those already tracked to
 * their bytes in use; a pattern written with a leading '!' is removed, and
 * the types no other pattern matches stop being tracked. Opening with
 * O_TRUNC (">") first empties the selection. Each write is all or nothing
 * (mm/malloc_type_selection.c). A type that registers later (module load)
 * is tracked from 0 when a pattern matches it; a type that goes (module
 * unload) takes its state with it.
 *
 * The peak is exact for allocations and frees made after tracking started;
 * the starting point is the per-CPU sum, read as /proc/malloc_types reads
 * it (not at one instant while other CPUs allocate). It is shown in
 * /proc/malloc_types (HighUse) and in the /proc/malloc_stats stream
 * (mth_peak, with MALLOC_TYPE_F_PEAK).
 *
 * Locking: the selection's write lock serializes its changes, each the
 * edit of the list and its application to every type; malloc_type_peak_mutex
 * protects the list and every type's MALLOC_TYPE_EV_PEAK bit, and nests
 * inside the registry mutex, as the probe selection's does
 * (mm/malloc_type_probes.c).
 */

#define pr_fmt(fmt) "malloc_types: " fmt

#include <linux/cpumask.h>
#include <linux/fs.h>
#include <linux/glob.h>
#include <linux/init.h>
#include <linux/jump_label.h>
#include <linux/malloc_type.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "malloc_type_internal.h"
#include "malloc_type_selection.h"

static DEFINE_MUTEX(malloc_type_peak_mutex);
static struct malloc_type_peak_patterns peak_patterns;

/**
 * malloc_type_peak_alloc() - account an allocation of a tracked type
 * @mtp: a registered type whose MALLOC_TYPE_EV_PEAK bit was seen set.
 * @size: accounted bytes.
 *
 * Context: any context.
 */
void malloc_type_peak_alloc(struct malloc_type *mtp, unsigned long size)
{
	struct malloc_type_internal *mti = &mtp->ks_mti;
	s64 in_use = atomic64_add_return(size, &mti->mti_in_use);
	s64 peak = atomic64_read(&mti->mti_peak);

	while (in_use > peak &&
	       !atomic64_try_cmpxchg(&mti->mti_peak, &peak, in_use))
		;
}
EXPORT_SYMBOL_GPL(malloc_type_peak_alloc);

/**
 * malloc_type_peak_free() - account a free of a tracked type
 * @mtp: a registered type whose MALLOC_TYPE_EV_PEAK bit was seen set.
 * @size: accounted bytes.
 *
 * Context: any context.
 */
void malloc_type_peak_free(struct malloc_type *mtp, unsigned long size)
{
	atomic64_sub(size, &mtp->ks_mti.mti_in_use);
}
EXPORT_SYMBOL_GPL(malloc_type_peak_free);

/* The type's bytes in use now, summed over the possible CPUs. */
static s64 malloc_type_mem_use(struct malloc_type *mtp)
{
	struct malloc_type_counters __percpu *stats = READ_ONCE(mtp->ks_mti.mti_stats);
	s64 bytes = 0;
	int cpu;

	if (!stats)
		return 0;
	for_each_possible_cpu(cpu) {
		struct malloc_type_counters *s = per_cpu_ptr(stats, cpu);

		bytes += (s64)(READ_ONCE(s->mts_memalloced) -
			       READ_ONCE(s->mts_memfreed));
	}
	return max(bytes, 0);
}

/*
 * Starts tracking @mtp from its bytes in use (0 when @registering), or
 * resets its peak to its bytes in use when it is tracked already. Mutex
 * held.
 */
static void peak_start(struct malloc_type *mtp, bool registering)
{
	struct malloc_type_internal *mti = &mtp->ks_mti;

	lockdep_assert_held(&malloc_type_peak_mutex);
	if (test_bit(MALLOC_TYPE_EV_PEAK, &mti->mti_events)) {
		atomic64_set(&mti->mti_peak, atomic64_read(&mti->mti_in_use));
		return;
	}
	/*
	 * The keys first: once static_branch_inc() returns, every CPU tests
	 * mti_events, so the accounting misses nothing after the bit is set.
	 */
	static_branch_inc(&malloc_type_events.malloc);
	static_branch_inc(&malloc_type_events.free);
	atomic64_set(&mti->mti_in_use,
		     registering ? 0 : malloc_type_mem_use(mtp));
	atomic64_set(&mti->mti_peak, atomic64_read(&mti->mti_in_use));
	/*
	 * The counters before the bit: pairs with the full barrier of the
	 * accounting's atomic64_add_return(), which follows its read of the
	 * bit, so that no allocation adds to the counters' old values.
	 */
	smp_mb__before_atomic();
	set_bit(MALLOC_TYPE_EV_PEAK, &mti->mti_events);
}

/* Stops tracking @mtp. Mutex held. */
static void peak_stop(struct malloc_type *mtp)
{
	struct malloc_type_internal *mti = &mtp->ks_mti;

	lockdep_assert_held(&malloc_type_peak_mutex);
	if (!test_and_clear_bit(MALLOC_TYPE_EV_PEAK, &mti->mti_events))
		return;
	static_branch_dec(&malloc_type_events.malloc);
	static_branch_dec(&malloc_type_events.free);
}

/*
 * Whether a pattern of the selection matches @mtp (with @fresh, one the
 * change being applied wrote). Mutex held.
 */
static bool peak_selected(struct malloc_type *mtp, bool fresh)
{
	unsigned int i;

	for (i = 0; i < peak_patterns.nr; i++)
		if ((!fresh || peak_patterns.pat[i].fresh) &&
		    glob_match(peak_patterns.pat[i].pat.glob,
			       mtp->ks_mti.mti_probename))
			return true;
	return false;
}

/**
 * malloc_type_peak_register() - track a new type when the selection names it
 * @mtp: a type being registered, its probe name set, its statistics not yet
 *	published.
 *
 * Called with the registry mutex held.
 */
void malloc_type_peak_register(struct malloc_type *mtp)
{
	mutex_lock(&malloc_type_peak_mutex);
	if (peak_selected(mtp, false))
		peak_start(mtp, true);
	mutex_unlock(&malloc_type_peak_mutex);
}

/**
 * malloc_type_peak_unregister() - stop tracking a type that goes
 * @mtp: a type being unregistered.
 *
 * Called with the registry mutex held.
 */
void malloc_type_peak_unregister(struct malloc_type *mtp)
{
	mutex_lock(&malloc_type_peak_mutex);
	peak_stop(mtp);
	mutex_unlock(&malloc_type_peak_mutex);
}

/**
 * malloc_type_peak_track() - start, reset or stop tracking a type's peak
 * @mtp: a registered type (which stays registered for the call).
 * @on: true starts tracking from the type's bytes in use, or resets the
 *	peak of a tracked type to its bytes in use; false stops it.
 *
 * The selection in /proc/malloc_types_peak is not changed: a later write
 * to it applies it again. For tests and callers that manage one type.
 *
 * Context: process context, may sleep.
 */
void malloc_type_peak_track(struct malloc_type *mtp, bool on)
{
	mutex_lock(&malloc_type_peak_mutex);
	if (on)
		peak_start(mtp, false);
	else
		peak_stop(mtp);
	mutex_unlock(&malloc_type_peak_mutex);
}
EXPORT_SYMBOL_GPL(malloc_type_peak_track);

/* Applies the selection to one registered type (registry mutex held). */
static int peak_apply_cb(struct malloc_type *mtp, void *arg)
{
	mutex_lock(&malloc_type_peak_mutex);
	if (!peak_selected(mtp, false))
		peak_stop(mtp);
	else if (!test_bit(MALLOC_TYPE_EV_PEAK, &mtp->ks_mti.mti_events) ||
		 peak_selected(mtp, true))
		peak_start(mtp, false);
	mutex_unlock(&malloc_type_peak_mutex);
	return 0;
}

/* Applies the list, just changed, to every type (the write lock held). */
static void peak_apply(void)
{
	unsigned int i;

	lockdep_assert_held(&malloc_type_peak_selection.write_lock);
	malloc_type_for_each(peak_apply_cb, NULL);
	mutex_lock(&malloc_type_peak_mutex);
	for (i = 0; i < peak_patterns.nr; i++)
		peak_patterns.pat[i].fresh = false;
	mutex_unlock(&malloc_type_peak_mutex);
}

/*
 * Parses a word of /proc/malloc_types_peak, "[!]PATTERN", into @out; sets
 * @remove for a leading '!'.
 */
static int peak_parse_word(const char *word, size_t len,
			   struct malloc_type_peak_pattern *out, bool *remove)
{
	*remove = len && word[0] == '!';
	if (*remove) {
		word++;
		len--;
	}
	out->fresh = true;
	return malloc_type_sel_pattern_set(&out->pat, word, len);
}

/*
 * Adds (or, with a leading '!', takes out) a pattern in @staged; a pattern
 * written again is fresh again.
 */
static int peak_edit(void *staged, const char *word, size_t len)
{
	struct malloc_type_peak_patterns *pats = staged;
	struct malloc_type_peak_pattern pat;
	unsigned int i;
	bool remove;
	int ret;

	ret = peak_parse_word(word, len, &pat, &remove);
	if (ret)
		return ret;
	for (i = 0; i < pats->nr; i++) {
		if (strcmp(pats->pat[i].pat.text, pat.pat.text))
			continue;
		if (remove)
			pats->pat[i] = pats->pat[--pats->nr];
		else
			pats->pat[i].fresh = true;
		return 0;
	}
	if (remove)
		return 0;
	if (pats->nr == MALLOC_TYPE_PEAK_PATTERNS_MAX)
		return -ENOSPC;
	pats->pat[pats->nr++] = pat;
	return 0;
}

static void peak_clear(void *staged)
{
	struct malloc_type_peak_patterns *pats = staged;

	pats->nr = 0;
}

static int peak_show(struct seq_file *m, void *v)
{
	unsigned int i;

	mutex_lock(&malloc_type_peak_mutex);
	for (i = 0; i < peak_patterns.nr; i++)
		seq_printf(m, "%s\n", peak_patterns.pat[i].pat.text);
	mutex_unlock(&malloc_type_peak_mutex);
	return 0;
}

struct malloc_type_selection malloc_type_peak_selection = {
	.write_lock	= __MUTEX_INITIALIZER(malloc_type_peak_selection.write_lock),
	.list_lock	= &malloc_type_peak_mutex,
	.list		= &peak_patterns,
	.list_size	= sizeof(peak_patterns),
	.edit		= peak_edit,
	.clear		= peak_clear,
	.apply		= peak_apply,
	.show		= peak_show,
};

static int peak_open(struct inode *inode, struct file *file)
{
	return malloc_type_selection_open(&malloc_type_peak_selection, inode,
					  file);
}

static int peak_release(struct inode *inode, struct file *file)
{
	return malloc_type_selection_release(&malloc_type_peak_selection,
					     inode, file);
}

static ssize_t peak_write(struct file *file, const char __user *ubuf,
			  size_t count, loff_t *ppos)
{
	return malloc_type_selection_write(&malloc_type_peak_selection, file,
					   ubuf, count, ppos);
}

static const struct proc_ops peak_proc_ops = {
	.proc_open	= peak_open,
	.proc_read	= seq_read,
	.proc_write	= peak_write,
	.proc_lseek	= malloc_type_selection_llseek,
	.proc_release	= peak_release,
};

static int __init malloc_type_peak_init(void)
{
	/* Root only, as /proc/malloc_types. */
	if (!proc_create("malloc_types_peak", 0600, NULL, &peak_proc_ops))
		pr_warn("cannot create /proc/malloc_types_peak\n");
	return 0;
}
late_initcall(malloc_type_peak_init);
