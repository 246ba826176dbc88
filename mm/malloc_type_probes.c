// SPDX-License-Identifier: GPL-2.0
/*
 * Malloc types: per-type dtmalloc probes, as dtmalloc(4) has them.
 *
 * Every malloc type has two probes, "malloc" and "free", named after the
 * type's probe name (dtmalloc::foo_bar:malloc). By default the dtmalloc
 * tracepoints fire for every type. Writing probe names to tracefs's
 * set_dtmalloc_probes selects types: while the selection is not empty, the
 * events fire only for the probes it names, each type's decision being one
 * load of its mti_events word (whose bits mirror its mti_probes[] slots:
 * the probe's id while it is selected, 0 otherwise, as FreeBSD stores it),
 * and every other type costs what it costs with tracing off. Whether events
 * are recorded is still decided by enabling dtmalloc:malloc and
 * dtmalloc:free (tracefs, perf, trace-cmd, bpftrace); the selection says
 * which types they fire for.
 *
 * Files, in the root of tracefs:
 *
 *   dtmalloc_probes      the probes, as "dtrace -l -P dtmalloc" lists them:
 *                        ID, PROVIDER, MODULE, FUNCTION (the probe name, in
 *                        its text form), NAME (malloc or free). Read only.
 *   set_dtmalloc_probes  the selection, one spec per line: PATTERN,
 *                        PATTERN:malloc or PATTERN:free, PATTERN a probe
 *                        name or a glob of one (glob_match()). Writing
 *                        replaces it (">") or adds to it (">>", O_APPEND);
 *                        a spec written with a leading '!' is removed.
 *
 * A selection is a list of specs, not of types: a type registered later (a
 * module loaded) gets its probes enabled at registration when a spec
 * matches it, and a type that goes (a module unloaded) takes its own state
 * with it. Probe ids are derived from the registration id (2 * id - 1 for
 * malloc, 2 * id for free), so they are unique and never reused.
 *
 * Locking: malloc_type_probes_mutex protects the list of specs; it nests
 * inside the registry mutex (registration applies the specs to the new
 * type), so a write edits the list, drops the mutex, and then re-applies
 * the specs to every type through malloc_type_for_each().
 */

#define pr_fmt(fmt) "malloc_types: " fmt

#include <linux/fs.h>
#include <linux/glob.h>
#include <linux/init.h>
#include <linux/jump_label.h>
#include <linux/malloc_type.h>
#include <linux/mutex.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/tracefs.h>
#include <linux/uaccess.h>

/* Tested by the accounting, which typed code in modules instantiates. */
struct dtmalloc_selection dtmalloc_probes_selected = {
	.key = STATIC_KEY_FALSE_INIT,
};
EXPORT_SYMBOL_GPL(dtmalloc_probes_selected);

/* The most specs a selection holds. */
#define DTMALLOC_SPECS_MAX	64

/* The probes a spec names. */
#define DTMALLOC_SPEC_MALLOC	BIT(DTMALLOC_PROBE_MALLOC)
#define DTMALLOC_SPEC_FREE	BIT(DTMALLOC_PROBE_FREE)

struct dtmalloc_spec {
	char	pattern[MALLOC_MAX_NAME];
	u32	probes;
};

static DEFINE_MUTEX(malloc_type_probes_mutex);
static struct dtmalloc_spec dtmalloc_specs[DTMALLOC_SPECS_MAX];
static unsigned int dtmalloc_nr_specs;

/* The id of probe @probe (DTMALLOC_PROBE_*) of the type with id @id. */
static u32 dtmalloc_probe_id(u64 id, unsigned int probe)
{
	return (u32)(2 * id - 1 + probe);
}

/**
 * malloc_type_probes_apply() - set a type's mti_probes[] from the selection
 * @mtp: a registered type, or one being registered.
 *
 * Called with the registry mutex held (at registration and from
 * malloc_type_for_each()).
 *
 * Return: 0.
 */
int malloc_type_probes_apply(struct malloc_type *mtp)
{
	struct malloc_type_internal *mti = &mtp->ks_mti;
	u32 probes = 0;
	unsigned int i;

	mutex_lock(&malloc_type_probes_mutex);
	for (i = 0; i < dtmalloc_nr_specs; i++)
		if (glob_match(dtmalloc_specs[i].pattern, mti->mti_probename))
			probes |= dtmalloc_specs[i].probes;
	mutex_unlock(&malloc_type_probes_mutex);

	for (i = 0; i < DTMALLOC_PROBE_MAX; i++) {
		WRITE_ONCE(mti->mti_probes[i], probes & BIT(i) ?
			   dtmalloc_probe_id(READ_ONCE(mti->mti_id), i) : 0);
		/* The accounting's one-word test (the peak shares the word). */
		assign_bit(i, &mti->mti_events, probes & BIT(i));
	}
	return 0;
}

static int malloc_type_probes_apply_cb(struct malloc_type *mtp, void *arg)
{
	return malloc_type_probes_apply(mtp);
}

/*
 * Parses @spec ("PATTERN", "PATTERN:malloc" or "PATTERN:free") into @out.
 * The pattern is a probe name or a glob of one: at most
 * MALLOC_TYPE_NAME_MAX bytes, none of them white space (probe names have
 * none) or a ':'.
 */
static int dtmalloc_parse_spec(const char *spec, struct dtmalloc_spec *out)
{
	const char *colon = strchr(spec, ':');
	size_t len = colon ? colon - spec : strlen(spec);

	if (malloc_type_check_pattern(spec, len))
		return -EINVAL;
	if (!colon)
		out->probes = DTMALLOC_SPEC_MALLOC | DTMALLOC_SPEC_FREE;
	else if (!strcmp(colon + 1, "malloc"))
		out->probes = DTMALLOC_SPEC_MALLOC;
	else if (!strcmp(colon + 1, "free"))
		out->probes = DTMALLOC_SPEC_FREE;
	else
		return -EINVAL;
	memcpy(out->pattern, spec, len);
	out->pattern[len] = '\0';
	return 0;
}

/* Adds (or, with @remove, takes out) the probes of @spec. Mutex held. */
static int dtmalloc_edit(const struct dtmalloc_spec *spec, bool remove)
{
	unsigned int i;

	lockdep_assert_held(&malloc_type_probes_mutex);
	for (i = 0; i < dtmalloc_nr_specs; i++) {
		struct dtmalloc_spec *s = &dtmalloc_specs[i];

		if (strcmp(s->pattern, spec->pattern))
			continue;
		if (remove)
			s->probes &= ~spec->probes;
		else
			s->probes |= spec->probes;
		if (!s->probes)
			dtmalloc_specs[i] = dtmalloc_specs[--dtmalloc_nr_specs];
		return 0;
	}
	if (remove)
		return 0;
	if (dtmalloc_nr_specs == DTMALLOC_SPECS_MAX)
		return -ENOSPC;
	dtmalloc_specs[dtmalloc_nr_specs++] = *spec;
	return 0;
}

/* Re-applies the list to every type and sets the selection key to match. */
static void dtmalloc_commit(void)
{
	bool selected;

	mutex_lock(&malloc_type_probes_mutex);
	selected = dtmalloc_nr_specs > 0;
	mutex_unlock(&malloc_type_probes_mutex);
	/*
	 * Turning the selection on: the types' slots first, then the key, so
	 * that the selected types never miss an event; turning it off: the
	 * key first, so that every type fires again before the slots clear.
	 */
	if (!selected)
		static_branch_disable(&dtmalloc_probes_selected.key);
	malloc_type_for_each(malloc_type_probes_apply_cb, NULL);
	if (selected)
		static_branch_enable(&dtmalloc_probes_selected.key);
}

static int set_probes_show(struct seq_file *m, void *v)
{
	unsigned int i;

	mutex_lock(&malloc_type_probes_mutex);
	for (i = 0; i < dtmalloc_nr_specs; i++) {
		const struct dtmalloc_spec *s = &dtmalloc_specs[i];

		if (s->probes & DTMALLOC_SPEC_MALLOC)
			seq_printf(m, "%s:malloc\n", s->pattern);
		if (s->probes & DTMALLOC_SPEC_FREE)
			seq_printf(m, "%s:free\n", s->pattern);
	}
	mutex_unlock(&malloc_type_probes_mutex);
	return 0;
}

static int set_probes_open(struct inode *inode, struct file *file)
{
	if ((file->f_mode & FMODE_WRITE) && (file->f_flags & O_TRUNC)) {
		mutex_lock(&malloc_type_probes_mutex);
		dtmalloc_nr_specs = 0;
		mutex_unlock(&malloc_type_probes_mutex);
		dtmalloc_commit();
	}
	return malloc_type_selection_open(file, set_probes_show);
}

/* Edits the list with one spec. Mutex held. */
static int set_probes_write_one(char *tok, bool remove, void *arg)
{
	struct dtmalloc_spec spec = {};
	int ret;

	ret = dtmalloc_parse_spec(tok, &spec);
	if (!ret)
		ret = dtmalloc_edit(&spec, remove);
	return ret;
}

/*
 * Takes specs separated by white space; one bad spec fails the write with
 * -EINVAL (-ENOSPC when the list is full) and changes nothing of the specs
 * after it. At most one page per write.
 */
static ssize_t set_probes_write(struct file *file, const char __user *ubuf,
				size_t count, loff_t *ppos)
{
	int ret;

	ret = malloc_type_selection_write(ubuf, count, &malloc_type_probes_mutex,
					  set_probes_write_one, NULL);
	if (ret != -E2BIG && ret != -EFAULT)
		dtmalloc_commit();
	if (ret)
		return ret;
	*ppos += count;
	return count;
}

static const struct file_operations set_probes_fops = {
	.open		= set_probes_open,
	.read		= seq_read,
	.write		= set_probes_write,
	.llseek		= malloc_type_selection_llseek,
	.release	= malloc_type_selection_release,
};

static int list_probes_one(struct malloc_type *mtp, void *arg)
{
	struct seq_file *m = arg;
	u64 id = READ_ONCE(mtp->ks_mti.mti_id);

	seq_printf(m, "%5u %10s %20s %32s %s\n",
		   dtmalloc_probe_id(id, DTMALLOC_PROBE_MALLOC), "dtmalloc", "",
		   mtp->ks_mti.mti_probetext, "malloc");
	seq_printf(m, "%5u %10s %20s %32s %s\n",
		   dtmalloc_probe_id(id, DTMALLOC_PROBE_FREE), "dtmalloc", "",
		   mtp->ks_mti.mti_probetext, "free");
	return 0;
}

/* "dtrace -l -P dtmalloc": the header, then two probes per type. */
static int list_probes_show(struct seq_file *m, void *v)
{
	seq_printf(m, "%5s %10s %20s %32s %s\n", "ID", "PROVIDER", "MODULE",
		   "FUNCTION", "NAME");
	return malloc_type_for_each(list_probes_one, m);
}

static int list_probes_open(struct inode *inode, struct file *file)
{
	return single_open(file, list_probes_show, NULL);
}

static const struct file_operations list_probes_fops = {
	.open		= list_probes_open,
	.read		= seq_read,
	.llseek		= seq_lseek,
	.release	= single_release,
};

static int __init malloc_type_probes_init(void)
{
	/* Root only, as /proc/malloc_types and the tracing files. */
	if (!tracefs_create_file("dtmalloc_probes", 0400, NULL, NULL,
				 &list_probes_fops) ||
	    !tracefs_create_file("set_dtmalloc_probes", 0600, NULL, NULL,
				 &set_probes_fops))
		pr_warn("cannot create the dtmalloc probe files in tracefs\n");
	return 0;
}
late_initcall(malloc_type_probes_init);
