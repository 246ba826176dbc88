// SPDX-License-Identifier: GPL-2.0
/*
 * Malloc types: failure injection per type (CONFIG_FAIL_MALLOC_TYPE).
 *
 * FreeBSD's malloc(9) can fail allocations on demand (debug.malloc.
 * failure_rate); Linux's failslab filters by slab cache, not by the code
 * that owns the memory. This makes the allocations of selected malloc types
 * fail, so that the error paths of their code can be tested: "fail 1% of
 * the binder txn allocations".
 *
 * debugfs's fail_malloc_type/ holds the attributes of the kernel's fault
 * injection (probability, interval, times, space, verbose, task-filter and
 * the others of Documentation/fault-injection/fault-injection.rst), and:
 *
 *   types            the selection, one pattern per line: a probe name (the
 *                    type's name with white space as '_') or a glob of one,
 *                    written as names are shown ("\NNN" for a byte;
 *                    mm/malloc_type_pattern.c). A pattern written with a
 *                    leading '!' is removed. Opening with O_TRUNC (">")
 *                    first empties it; each write is all or nothing
 *                    (mm/malloc_type_selection.c). A type registered later
 *                    (module load) is selected when a pattern matches it.
 *   ignore-gfp-wait  Y: allocations that may reclaim (__GFP_DIRECT_RECLAIM)
 *                    do not fail; N (the default) lets every one fail.
 *
 * The boot parameter fail_malloc_type=<interval>,<probability>,<space>,<times>
 * sets the attributes, as failslab= does.
 *
 * An allocation of a selected type is failed when should_fail_ex() says
 * so; it returns NULL (AllocError in Rust) and counts one failure of the
 * type (mts_numfailures), as a real failure does. __GFP_NOFAIL requests
 * never fail. Frees, and the charges of other allocators' memory
 * (malloc_type_allocated()), are not affected; neither is a resize that
 * keeps its block (within its size class).
 *
 * The allocation paths test one static key, malloc_type_events.debug, on
 * while any type is selected (here or by memguard): the types that are not
 * pay its patched no-op while it is off, and the test of their mti_events
 * word while it is on.
 *
 * Locking: the selection's write lock serializes its changes, each the edit
 * of the list and its application to every type; fail_mutex protects the
 * list and every type's MALLOC_TYPE_EV_FAIL bit, and nests inside the
 * registry mutex, as the other selections' mutexes do.
 */

#define pr_fmt(fmt) "malloc_types: " fmt

#include <linux/debugfs.h>
#include <linux/error-injection.h>
#include <linux/fault-inject.h>
#include <linux/init.h>
#include <linux/jump_label.h>
#include <linux/malloc_type.h>
#include <linux/mutex.h>
#include <linux/seq_file.h>
#include <linux/string.h>

#include "malloc_type_internal.h"
#include "malloc_type_selection.h"

struct malloc_type_fail malloc_type_fail = {
	.attr = FAULT_ATTR_INITIALIZER,
	.ignore_gfp_reclaim = false,
};

static DEFINE_MUTEX(fail_mutex);
static struct malloc_type_sel_patterns fail_patterns;

/**
 * malloc_type_should_fail() - whether an allocation of a type is to fail
 * @mtp: a registered type.
 * @size: the bytes requested.
 * @flags: the allocation's GFP flags.
 *
 * Called by the allocation paths while malloc_type_events.debug is on,
 * before they allocate. A type that is not selected never fails.
 *
 * Context: any context.
 * Return: true when the allocation is to return no memory.
 */
bool malloc_type_should_fail(struct malloc_type *mtp, size_t size, gfp_t flags)
{
	int fault_flags = 0;

	if (!test_bit(MALLOC_TYPE_EV_FAIL, &mtp->ks_mti.mti_events))
		return false;
	if (flags & __GFP_NOFAIL)
		return false;
	if (malloc_type_fail.ignore_gfp_reclaim &&
	    (flags & __GFP_DIRECT_RECLAIM))
		return false;
	/* As failslab: a __GFP_NOWARN caller may not want any message. */
	if (flags & __GFP_NOWARN)
		fault_flags |= FAULT_NOWARN;
	if (!should_fail_ex(&malloc_type_fail.attr, size, fault_flags))
		return false;
	if (malloc_type_fail.attr.verbose && !(fault_flags & FAULT_NOWARN))
		pr_notice_ratelimited("failing an allocation of %zu bytes of malloc type \"%s\"\n",
				      size, READ_ONCE(mtp->ks_mti.mti_nametext));
	return true;
}
EXPORT_SYMBOL_GPL(malloc_type_should_fail);
ALLOW_ERROR_INJECTION(malloc_type_should_fail, TRUE);

/* Selects @mtp. Mutex held. */
static void fail_select(struct malloc_type *mtp)
{
	lockdep_assert_held(&fail_mutex);
	if (test_bit(MALLOC_TYPE_EV_FAIL, &mtp->ks_mti.mti_events))
		return;
	/* The key first, so that the bit is tested once it is set. */
	static_branch_inc(&malloc_type_events.debug);
	set_bit(MALLOC_TYPE_EV_FAIL, &mtp->ks_mti.mti_events);
}

/* Deselects @mtp. Mutex held. */
static void fail_deselect(struct malloc_type *mtp)
{
	lockdep_assert_held(&fail_mutex);
	if (test_and_clear_bit(MALLOC_TYPE_EV_FAIL, &mtp->ks_mti.mti_events))
		static_branch_dec(&malloc_type_events.debug);
}

/* Whether a pattern of the selection matches @mtp. Mutex held. */
static bool fail_selected(struct malloc_type *mtp)
{
	return malloc_type_sel_patterns_match(&fail_patterns, mtp);
}

/**
 * malloc_type_fail_register() - select a new type when a pattern names it
 * @mtp: a type being registered, its probe name set, its statistics not yet
 *	published.
 *
 * Called with the registry mutex held.
 */
void malloc_type_fail_register(struct malloc_type *mtp)
{
	mutex_lock(&fail_mutex);
	if (fail_selected(mtp))
		fail_select(mtp);
	mutex_unlock(&fail_mutex);
}

/**
 * malloc_type_fail_unregister() - deselect a type that goes
 * @mtp: a type being unregistered.
 *
 * Called with the registry mutex held.
 */
void malloc_type_fail_unregister(struct malloc_type *mtp)
{
	mutex_lock(&fail_mutex);
	fail_deselect(mtp);
	mutex_unlock(&fail_mutex);
}

/* Applies the selection to one registered type (registry mutex held). */
static int fail_apply_cb(struct malloc_type *mtp, void *arg)
{
	mutex_lock(&fail_mutex);
	if (fail_selected(mtp))
		fail_select(mtp);
	else
		fail_deselect(mtp);
	mutex_unlock(&fail_mutex);
	return 0;
}

/* Applies the list, just changed, to every type (the write lock held). */
static void fail_apply(void)
{
	lockdep_assert_held(&malloc_type_fail_selection.write_lock);
	malloc_type_for_each(fail_apply_cb, NULL);
}

static int fail_show(struct seq_file *m, void *v)
{
	mutex_lock(&fail_mutex);
	malloc_type_sel_patterns_show(m, &fail_patterns);
	mutex_unlock(&fail_mutex);
	return 0;
}

struct malloc_type_selection malloc_type_fail_selection = {
	.write_lock	= __MUTEX_INITIALIZER(malloc_type_fail_selection.write_lock),
	.list_lock	= &fail_mutex,
	.list		= &fail_patterns,
	.list_size	= sizeof(fail_patterns),
	.edit		= malloc_type_sel_patterns_edit,
	.clear		= malloc_type_sel_patterns_clear,
	.apply		= fail_apply,
	.show		= fail_show,
};

static int __init setup_fail_malloc_type(char *str)
{
	return setup_fault_attr(&malloc_type_fail.attr, str);
}
__setup("fail_malloc_type=", setup_fail_malloc_type);

#ifdef CONFIG_FAULT_INJECTION_DEBUG_FS
static int fail_types_open(struct inode *inode, struct file *file)
{
	return malloc_type_selection_open(&malloc_type_fail_selection, inode,
					  file);
}

static int fail_types_release(struct inode *inode, struct file *file)
{
	return malloc_type_selection_release(&malloc_type_fail_selection,
					     inode, file);
}

static ssize_t fail_types_write(struct file *file, const char __user *ubuf,
				size_t count, loff_t *ppos)
{
	return malloc_type_selection_write(&malloc_type_fail_selection, file,
					   ubuf, count, ppos);
}

static const struct file_operations fail_types_fops = {
	.owner		= THIS_MODULE,
	.open		= fail_types_open,
	.read		= seq_read,
	.write		= fail_types_write,
	.llseek		= malloc_type_selection_llseek,
	.release	= fail_types_release,
};

static int __init malloc_type_fail_debugfs_init(void)
{
	struct dentry *dir;

	dir = fault_create_debugfs_attr("fail_malloc_type", NULL,
					&malloc_type_fail.attr);
	if (IS_ERR(dir))
		return PTR_ERR(dir);
	debugfs_create_file("types", 0600, dir, NULL, &fail_types_fops);
	debugfs_create_bool("ignore-gfp-wait", 0600, dir,
			    &malloc_type_fail.ignore_gfp_reclaim);
	return 0;
}
late_initcall(malloc_type_fail_debugfs_init);
#endif /* CONFIG_FAULT_INJECTION_DEBUG_FS */
