/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Malloc types: the selection files, tracefs's set_dtmalloc_probes
 * (mm/malloc_type_probes.c) and /proc/malloc_types_peak
 * (mm/malloc_type_peak.c), on mm/malloc_type_selection.c. Internal to mm/.
 */
#ifndef _MM_MALLOC_TYPE_SELECTION_H
#define _MM_MALLOC_TYPE_SELECTION_H

#include <linux/bits.h>
#include <linux/malloc_type.h>
#include <linux/mutex.h>
#include <linux/types.h>

#include <linux/malloc_type_pattern.h>

struct file;
struct inode;
struct seq_file;

/**
 * struct malloc_type_selection - a selection file
 * @write_lock: serializes the changes of the selection, each the edits of
 *	one write and the application of the result to the types, so that
 *	the list, the types and any key derived from them agree after each.
 * @list_lock: protects @list; taken inside the registry mutex by the
 *	registration of a type, which applies the selection to it.
 * @list: the selection, @list_size bytes.
 * @list_size: its size.
 * @edit: applies one word (its bytes and their number) to @staged, a copy
 *	of @list: 0, or an error (-EINVAL for a bad word, -ENOSPC) that undoes
 *	the whole write.
 * @clear: empties @staged, for an open with O_TRUNC.
 * @apply: applies @list, just changed, to the types (@write_lock held).
 * @show: lists @list into a seq_file, for readers.
 */
struct malloc_type_selection {
	struct mutex	write_lock;	/* the changes, see above */
	struct mutex	*list_lock;	/* @list, see above */
	void		*list;
	size_t		list_size;
	int		(*edit)(void *staged, const char *word, size_t len);
	void		(*clear)(void *staged);
	void		(*apply)(void);
	int		(*show)(struct seq_file *m, void *v);
};

/**
 * struct malloc_type_sel_pattern - a pattern of a selection file
 * @text: the pattern as written, NUL-terminated.
 * @glob: the glob_match() pattern it turns into (malloc_type_pattern_glob()).
 */
struct malloc_type_sel_pattern {
	char	text[MALLOC_TYPE_PATTERN_MAX + 1];
	char	glob[MALLOC_TYPE_GLOB_MAX + 1];
};

int malloc_type_sel_pattern_set(struct malloc_type_sel_pattern *p,
				const char *pat, size_t len);
int malloc_type_selection_change(struct malloc_type_selection *sel,
				 struct malloc_type_words *words,
				 const char *buf, size_t len, bool clear,
				 bool finish);
int malloc_type_selection_open(struct malloc_type_selection *sel,
			       struct inode *inode, struct file *file);
int malloc_type_selection_release(struct malloc_type_selection *sel,
				  struct inode *inode, struct file *file);
ssize_t malloc_type_selection_write(struct malloc_type_selection *sel,
				    struct file *file, const char __user *ubuf,
				    size_t count, loff_t *ppos);
loff_t malloc_type_selection_llseek(struct file *file, loff_t offset,
				    int whence);

/* The most specs set_dtmalloc_probes holds. */
#define DTMALLOC_SPECS_MAX		64

/* The probes a spec names. */
#define DTMALLOC_SPEC_MALLOC		BIT(DTMALLOC_PROBE_MALLOC)
#define DTMALLOC_SPEC_FREE		BIT(DTMALLOC_PROBE_FREE)

/**
 * struct dtmalloc_spec - a spec of set_dtmalloc_probes
 * @pat: its pattern.
 * @probes: the probes it names, DTMALLOC_SPEC_* bits.
 */
struct dtmalloc_spec {
	struct malloc_type_sel_pattern	pat;
	u32				probes;
};

/**
 * struct dtmalloc_specs - the list of set_dtmalloc_probes
 * @nr: the number of specs.
 * @spec: the specs, in no order.
 */
struct dtmalloc_specs {
	unsigned int		nr;
	struct dtmalloc_spec	spec[DTMALLOC_SPECS_MAX];
};

/* The most patterns /proc/malloc_types_peak holds. */
#define MALLOC_TYPE_PEAK_PATTERNS_MAX	64

/**
 * struct malloc_type_peak_pattern - a pattern of /proc/malloc_types_peak
 * @pat: the pattern.
 * @fresh: written by the change being applied: the peaks of the tracked
 *	types it matches are reset.
 */
struct malloc_type_peak_pattern {
	struct malloc_type_sel_pattern	pat;
	bool				fresh;
};

/**
 * struct malloc_type_peak_patterns - the list of /proc/malloc_types_peak
 * @nr: the number of patterns.
 * @pat: the patterns, in no order.
 */
struct malloc_type_peak_patterns {
	unsigned int			nr;
	struct malloc_type_peak_pattern	pat[MALLOC_TYPE_PEAK_PATTERNS_MAX];
};

/* The most patterns a plain list of patterns holds. */
#define MALLOC_TYPE_SEL_PATTERNS_MAX	64

/**
 * struct malloc_type_sel_patterns - a plain list of patterns
 * @nr: the number of patterns.
 * @pat: the patterns, in no order.
 *
 * The selection of debugfs's fail_malloc_type/types and memguard/types: a
 * type is selected when a pattern matches its probe name. The functions
 * below are the selection's edit, clear and show for such a list.
 */
struct malloc_type_sel_patterns {
	unsigned int			nr;
	struct malloc_type_sel_pattern	pat[MALLOC_TYPE_SEL_PATTERNS_MAX];
};

int malloc_type_sel_patterns_edit(void *staged, const char *word, size_t len);
void malloc_type_sel_patterns_clear(void *staged);
bool malloc_type_sel_patterns_match(const struct malloc_type_sel_patterns *pats,
				    struct malloc_type *mtp);
void malloc_type_sel_patterns_show(struct seq_file *m,
				   const struct malloc_type_sel_patterns *pats);

#ifdef CONFIG_FAIL_MALLOC_TYPE
#include <linux/fault-inject.h>

/**
 * struct malloc_type_fail - failure injection per type (mm/malloc_type_fail.c)
 * @attr: the fault injection attributes (debugfs's fail_malloc_type/).
 * @ignore_gfp_reclaim: allocations that may reclaim do not fail
 *	(ignore-gfp-wait).
 */
struct malloc_type_fail {
	struct fault_attr	attr;
	bool			ignore_gfp_reclaim;
};

extern struct malloc_type_fail malloc_type_fail;
extern struct malloc_type_selection malloc_type_fail_selection;
#endif

#ifdef CONFIG_MALLOC_TYPE_MEMGUARD
/**
 * struct malloc_type_memguard_report - what memguard's last report said
 * @addr: the address of the access or the free.
 * @what: the kind of bug ("out-of-bounds", "use-after-free", ...).
 * @type: the text of the block's malloc type's name, "" for none.
 */
struct malloc_type_memguard_report {
	unsigned long	addr;
	char		what[24];
	char		type[MALLOC_TYPE_TEXT_MAX + 1];
};

/* memguard (mm/malloc_type_memguard.c): its selection and, for KUnit, its reports. */
extern struct malloc_type_selection malloc_type_memguard_selection;
extern struct malloc_type_memguard_report malloc_type_memguard_last;
long malloc_type_memguard_reports(void);
#endif

/* The selections, and their lists for the KUnit tests (mm/malloc_type_c_test.c). */
extern struct malloc_type_selection dtmalloc_selection;
extern struct malloc_type_selection malloc_type_peak_selection;

#endif /* _MM_MALLOC_TYPE_SELECTION_H */
