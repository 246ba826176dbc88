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
 *                        name or a glob of one (mm/malloc_type_pattern.c:
 *                        written as names are shown, "\NNN" for a byte, and
 *                        a ':' in a probe name as "\072"). Writing replaces
 *                        it (">") or adds to it (">>", O_APPEND); a spec
 *                        written with a leading '!' is removed. Each write
 *                        is all or nothing (mm/malloc_type_selection.c).
 *
 * A selection is a list of specs, not of types: a type registered later (a
 * module loaded) gets its probes enabled at registration when a spec
 * matches it, and a type that goes (a module unloaded) takes its own state
 * with it. Probe ids are derived from the registration id (2 * id - 1 for
 * malloc, 2 * id for free), 64-bit as the id is, so they are unique and
 * never reused.
 *
 * Locking: the selection's write lock serializes its changes, each the
 * edit of the list and its application to every type and to the key;
 * malloc_type_probes_mutex protects the list itself and nests inside the
 * registry mutex (registration applies the specs to the new type), which
 * nests inside the write lock.
 */

#define pr_fmt(fmt) "malloc_types: " fmt

#include <linux/fs.h>
#include <linux/glob.h>
#include <linux/init.h>
#include <linux/jump_label.h>
#include <linux/malloc_type.h>
#include <linux/mutex.h>
#include <linux/seq_file.h>
#include <linux/string.h>
#include <linux/tracefs.h>

#include "malloc_type_internal.h"
#include "malloc_type_selection.h"

/* Tested by the accounting, which typed code in modules instantiates. */
struct dtmalloc_selection dtmalloc_probes_selected = {
	.key = STATIC_KEY_FALSE_INIT,
};
EXPORT_SYMBOL_GPL(dtmalloc_probes_selected);

static DEFINE_MUTEX(malloc_type_probes_mutex);
static struct dtmalloc_specs dtmalloc_specs;

/* The id of probe @probe (DTMALLOC_PROBE_*) of the type with id @id. */
static u64 dtmalloc_probe_id(u64 id, unsigned int probe)
{
	return 2 * id - 1 + probe;
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
	for (i = 0; i < dtmalloc_specs.nr; i++)
		if (glob_match(dtmalloc_specs.spec[i].pat.glob, mti->mti_probename))
			probes |= dtmalloc_specs.spec[i].probes;
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
 * Parses a word of set_dtmalloc_probes, "[!]PATTERN[:malloc|:free]", into
 * @out; sets @remove for a leading '!'. The pattern may not start with '!'
 * or hold a raw ':' (a probe name's are written "\041" and "\072").
 */
static int dtmalloc_parse_word(const char *word, size_t len,
			       struct dtmalloc_spec *out, bool *remove)
{
	const char *colon, *suffix;
	size_t plen, slen;

	*remove = len && word[0] == '!';
	if (*remove) {
		word++;
		len--;
	}
	colon = memchr(word, ':', len);
	plen = colon ? colon - word : len;
	if (!colon) {
		out->probes = DTMALLOC_SPEC_MALLOC | DTMALLOC_SPEC_FREE;
	} else {
		suffix = colon + 1;
		slen = len - plen - 1;
		if (slen == 6 && !memcmp(suffix, "malloc", 6))
			out->probes = DTMALLOC_SPEC_MALLOC;
		else if (slen == 4 && !memcmp(suffix, "free", 4))
			out->probes = DTMALLOC_SPEC_FREE;
		else
			return -EINVAL;
	}
	return malloc_type_sel_pattern_set(&out->pat, word, plen);
}

/* Adds (or, with a leading '!', takes out) the probes of a word in @staged. */
static int dtmalloc_edit(void *staged, const char *word, size_t len)
{
	struct dtmalloc_specs *specs = staged;
	struct dtmalloc_spec spec;
	bool remove;
	unsigned int i;
	int ret;

	ret = dtmalloc_parse_word(word, len, &spec, &remove);
	if (ret)
		return ret;
	for (i = 0; i < specs->nr; i++) {
		struct dtmalloc_spec *s = &specs->spec[i];

		if (strcmp(s->pat.text, spec.pat.text))
			continue;
		if (remove)
			s->probes &= ~spec.probes;
		else
			s->probes |= spec.probes;
		if (!s->probes)
			*s = specs->spec[--specs->nr];
		return 0;
	}
	if (remove)
		return 0;
	if (specs->nr == DTMALLOC_SPECS_MAX)
		return -ENOSPC;
	specs->spec[specs->nr++] = spec;
	return 0;
}

static void dtmalloc_clear(void *staged)
{
	struct dtmalloc_specs *specs = staged;

	specs->nr = 0;
}

/*
 * Applies the list to every type and sets the selection key to match; the
 * selection's write lock held, so that the key and the types agree with
 * the list once it returns.
 */
static void dtmalloc_commit(void)
{
	bool selected;

	lockdep_assert_held(&dtmalloc_selection.write_lock);
	mutex_lock(&malloc_type_probes_mutex);
	selected = dtmalloc_specs.nr > 0;
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
	for (i = 0; i < dtmalloc_specs.nr; i++) {
		const struct dtmalloc_spec *s = &dtmalloc_specs.spec[i];

		if (s->probes & DTMALLOC_SPEC_MALLOC)
			seq_printf(m, "%s:malloc\n", s->pat.text);
		if (s->probes & DTMALLOC_SPEC_FREE)
			seq_printf(m, "%s:free\n", s->pat.text);
	}
	mutex_unlock(&malloc_type_probes_mutex);
	return 0;
}

struct malloc_type_selection dtmalloc_selection = {
	.write_lock	= __MUTEX_INITIALIZER(dtmalloc_selection.write_lock),
	.list_lock	= &malloc_type_probes_mutex,
	.list		= &dtmalloc_specs,
	.list_size	= sizeof(dtmalloc_specs),
	.edit		= dtmalloc_edit,
	.clear		= dtmalloc_clear,
	.apply		= dtmalloc_commit,
	.show		= set_probes_show,
};

static int set_probes_open(struct inode *inode, struct file *file)
{
	return malloc_type_selection_open(&dtmalloc_selection, inode, file);
}

static int set_probes_release(struct inode *inode, struct file *file)
{
	return malloc_type_selection_release(&dtmalloc_selection, inode, file);
}

static ssize_t set_probes_write(struct file *file, const char __user *ubuf,
				size_t count, loff_t *ppos)
{
	return malloc_type_selection_write(&dtmalloc_selection, file, ubuf,
					   count, ppos);
}

static const struct file_operations set_probes_fops = {
	.open		= set_probes_open,
	.read		= seq_read,
	.write		= set_probes_write,
	.llseek		= malloc_type_selection_llseek,
	.release	= set_probes_release,
};

static int list_probes_one(struct malloc_type *mtp, void *arg)
{
	struct seq_file *m = arg;
	u64 id = READ_ONCE(mtp->ks_mti.mti_id);

	seq_printf(m, "%5llu %10s %20s %32s %s\n",
		   dtmalloc_probe_id(id, DTMALLOC_PROBE_MALLOC), "dtmalloc", "",
		   mtp->ks_mti.mti_probetext, "malloc");
	seq_printf(m, "%5llu %10s %20s %32s %s\n",
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
