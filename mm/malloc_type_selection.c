// SPDX-License-Identifier: GPL-2.0
/*
 * Malloc types: the selection files.
 *
 * tracefs's set_dtmalloc_probes (mm/malloc_type_probes.c) and
 * /proc/malloc_types_peak (mm/malloc_type_peak.c) each hold a list of
 * probe-name patterns, which a read lists (a seq_file) and a write edits.
 * Both are written the same way:
 *
 * - What is written is words separated by white space (the words and
 *   patterns are mm/malloc_type_pattern.c's). A word may be split across
 *   write() calls: the last word of a write is finished by the white space
 *   of a later write, or by the close of the file, as in tracefs's own
 *   selection files.
 * - Each write is all or nothing: its words are applied together to a copy
 *   of the selection, which replaces the selection only when every one of
 *   them applied. A bad word (-EINVAL), a selection that
 *   would overflow (-ENOSPC) or memory short (-ENOMEM) fails the write, and
 *   nothing of it is applied (an unfinished word it carried is dropped too).
 *   A write of more than MALLOC_TYPE_SELECTION_WRITE_MAX bytes fails with
 *   -E2BIG.
 * - A change of the selection and its application to the types (and to
 *   any key derived from it) are made under one mutex, the selection's
 *   write lock, so that concurrent writers are serialized and, after each
 *   change, the list, the types and the keys agree.
 * - Opening the file for writing with O_TRUNC (">") empties the selection
 *   first.
 */

#define pr_fmt(fmt) "malloc_types: " fmt

#include <linux/fs.h>
#include <linux/glob.h>
#include <linux/printk.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "malloc_type_selection.h"

/* The most bytes one write() may bring. */
#define MALLOC_TYPE_SELECTION_WRITE_MAX	SZ_64K

/* The edits of one change: the selection and a copy of its list. */
struct malloc_type_stage {
	struct malloc_type_selection	*sel;
	void				*staged;
};

static int malloc_type_edit_word(const char *word, size_t len, void *arg)
{
	struct malloc_type_stage *st = arg;

	return st->sel->edit(st->staged, word, len);
}

/**
 * malloc_type_selection_change() - change a selection, all or nothing
 * @sel: the selection.
 * @words: the state of the words of the writer's file (the word a write
 *	left unfinished), updated on success and emptied on failure; NULL
 *	when @buf brings no words.
 * @buf: the bytes of one write.
 * @len: their number.
 * @clear: empty the selection first.
 * @finish: apply the word left unfinished too, as the close of the file
 *	does.
 *
 * Applies the words of @buf, @clear first, to a copy of the selection,
 * which replaces it and is applied to the types only if every word
 * applied; all under @sel's write lock, which also keeps @words, the state
 * of one file, from two writers at once (pwrite() is not serialized by the
 * file position's lock).
 *
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for a bad word; -ENOSPC when the selection would
 * overflow; -ENOMEM. Nothing changed on error.
 */
int malloc_type_selection_change(struct malloc_type_selection *sel,
				 struct malloc_type_words *words,
				 const char *buf, size_t len, bool clear,
				 bool finish)
{
	struct malloc_type_stage st = { .sel = sel };
	struct malloc_type_words next;
	int ret = 0;

	st.staged = kvmalloc(sel->list_size, GFP_KERNEL);
	mutex_lock(&sel->write_lock);
	if (!st.staged) {
		ret = -ENOMEM;
		goto out;
	}
	mutex_lock(sel->list_lock);
	memcpy(st.staged, sel->list, sel->list_size);
	mutex_unlock(sel->list_lock);
	if (clear)
		sel->clear(st.staged);
	if (words) {
		next = *words;
		ret = malloc_type_words_parse(&next, buf, len,
					      malloc_type_edit_word, &st);
		if (!ret && finish && next.part_len) {
			ret = sel->edit(st.staged, next.part, next.part_len);
			next.part_len = 0;
		}
	}
	if (!ret) {
		mutex_lock(sel->list_lock);
		memcpy(sel->list, st.staged, sel->list_size);
		mutex_unlock(sel->list_lock);
		sel->apply();
	}
out:
	if (words) {
		if (ret)
			words->part_len = 0;
		else
			*words = next;
	}
	mutex_unlock(&sel->write_lock);
	kvfree(st.staged);
	return ret;
}

/**
 * malloc_type_sel_pattern_set() - check a pattern of a selection file and keep it
 * @p: where it goes, as written and as a glob.
 * @pat: the pattern; need not be NUL-terminated.
 * @len: its length in bytes.
 *
 * A pattern of a selection file is one of malloc_type_pattern_glob() that
 * does not start with '!', which removes a pattern from the selection.
 *
 * Return: 0; -EINVAL for a bad pattern.
 */
int malloc_type_sel_pattern_set(struct malloc_type_sel_pattern *p,
				const char *pat, size_t len)
{
	int ret;

	if (!len || pat[0] == '!')
		return -EINVAL;
	ret = malloc_type_pattern_glob(pat, len, p->glob, sizeof(p->glob));
	if (ret < 0)
		return ret;
	memcpy(p->text, pat, len);
	p->text[len] = '\0';
	return 0;
}

/**
 * malloc_type_sel_patterns_edit() - apply a word to a plain list of patterns
 * @staged: the copy of a struct malloc_type_sel_patterns being changed.
 * @word: "PATTERN" adds the pattern, "!PATTERN" takes it out; need not be
 *	NUL-terminated.
 * @len: its length in bytes.
 *
 * The edit of struct malloc_type_selection for such a list. Adding a
 * pattern the list holds, or taking out one it does not, changes nothing.
 *
 * Return: 0; -EINVAL for a bad pattern; -ENOSPC when the list is full.
 */
int malloc_type_sel_patterns_edit(void *staged, const char *word, size_t len)
{
	struct malloc_type_sel_patterns *pats = staged;
	struct malloc_type_sel_pattern pat;
	bool remove = len && word[0] == '!';
	unsigned int i;
	int ret;

	if (remove) {
		word++;
		len--;
	}
	ret = malloc_type_sel_pattern_set(&pat, word, len);
	if (ret)
		return ret;
	for (i = 0; i < pats->nr; i++) {
		if (strcmp(pats->pat[i].text, pat.text))
			continue;
		if (remove)
			pats->pat[i] = pats->pat[--pats->nr];
		return 0;
	}
	if (remove)
		return 0;
	if (pats->nr == MALLOC_TYPE_SEL_PATTERNS_MAX)
		return -ENOSPC;
	pats->pat[pats->nr++] = pat;
	return 0;
}

/**
 * malloc_type_sel_patterns_clear() - empty a plain list of patterns
 * @staged: the copy of a struct malloc_type_sel_patterns being changed.
 */
void malloc_type_sel_patterns_clear(void *staged)
{
	struct malloc_type_sel_patterns *pats = staged;

	pats->nr = 0;
}

/**
 * malloc_type_sel_patterns_match() - whether a pattern of a list names a type
 * @pats: the list, its lock held.
 * @mtp: a type, its probe name set.
 *
 * Return: true when a pattern matches @mtp's probe name.
 */
bool malloc_type_sel_patterns_match(const struct malloc_type_sel_patterns *pats,
				    struct malloc_type *mtp)
{
	unsigned int i;

	for (i = 0; i < pats->nr; i++)
		if (glob_match(pats->pat[i].glob, mtp->ks_mti.mti_probename))
			return true;
	return false;
}

/**
 * malloc_type_sel_patterns_show() - list a plain list of patterns, one a line
 * @m: the seq_file of a reader.
 * @pats: the list, its lock held.
 */
void malloc_type_sel_patterns_show(struct seq_file *m,
				   const struct malloc_type_sel_patterns *pats)
{
	unsigned int i;

	for (i = 0; i < pats->nr; i++)
		seq_printf(m, "%s\n", pats->pat[i].text);
}

/* The state of the words written to @file, or NULL if it is not open for writing. */
static struct malloc_type_words *malloc_type_file_words(struct file *file)
{
	if (file->f_mode & FMODE_READ)
		return ((struct seq_file *)file->private_data)->private;
	return file->private_data;
}

/**
 * malloc_type_selection_open() - open a selection file
 * @sel: the selection.
 * @inode: the file's inode.
 * @file: the file.
 *
 * A file opened for writing gets the state of its words, and with O_TRUNC
 * the selection is emptied, once nothing else can fail; one opened for
 * reading gets a single_open() seq_file of @sel's show (whose private data
 * is the state of the words).
 *
 * Context: process context, may sleep.
 * Return: 0, or -ENOMEM.
 */
int malloc_type_selection_open(struct malloc_type_selection *sel,
			       struct inode *inode, struct file *file)
{
	struct malloc_type_words *words = NULL;
	int ret;

	if (file->f_mode & FMODE_WRITE) {
		words = kzalloc_obj(*words, GFP_KERNEL);
		if (!words)
			return -ENOMEM;
	}
	if (file->f_mode & FMODE_READ) {
		ret = single_open(file, sel->show, words);
		if (ret)
			goto err;
	} else {
		file->private_data = words;
	}
	if ((file->f_mode & FMODE_WRITE) && (file->f_flags & O_TRUNC)) {
		ret = malloc_type_selection_change(sel, NULL, NULL, 0, true,
						   false);
		if (ret)
			goto err_release;
	}
	return 0;
err_release:
	if (file->f_mode & FMODE_READ)
		single_release(inode, file);
err:
	kfree(words);
	return ret;
}

/**
 * malloc_type_selection_release() - close a selection file
 * @sel: the selection.
 * @inode: the file's inode.
 * @file: the file.
 *
 * The last word written, if no white space finished it, is applied now;
 * if it cannot be (a bad word, a full selection), it is dropped with a
 * warning, since close() cannot report it.
 *
 * Context: process context, may sleep.
 * Return: 0.
 */
int malloc_type_selection_release(struct malloc_type_selection *sel,
				  struct inode *inode, struct file *file)
{
	struct malloc_type_words *words = malloc_type_file_words(file);
	int ret;

	if (words && words->part_len) {
		ret = malloc_type_selection_change(sel, words, NULL, 0, false,
						   true);
		if (ret)
			pr_warn_ratelimited("%pD: the last word written was not applied: %d\n",
					    file, ret);
	}
	kfree(words);
	if (file->f_mode & FMODE_READ)
		return single_release(inode, file);
	return 0;
}

/**
 * malloc_type_selection_write() - change a selection with the words of a write
 * @sel: the selection.
 * @file: the file written.
 * @ubuf: what user space wrote.
 * @count: its size in bytes.
 * @ppos: the file position, advanced by @count on success.
 *
 * See malloc_type_selection_change(): all of the write or none of it.
 *
 * Context: process context, may sleep.
 * Return: @count; -E2BIG for more than MALLOC_TYPE_SELECTION_WRITE_MAX
 * bytes; -EFAULT; or the error of malloc_type_selection_change().
 */
ssize_t malloc_type_selection_write(struct malloc_type_selection *sel,
				    struct file *file, const char __user *ubuf,
				    size_t count, loff_t *ppos)
{
	char *buf;
	int ret;

	if (count > MALLOC_TYPE_SELECTION_WRITE_MAX)
		return -E2BIG;
	buf = vmemdup_user(ubuf, count);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	ret = malloc_type_selection_change(sel, malloc_type_file_words(file),
					   buf, count, false, false);
	kvfree(buf);
	if (ret)
		return ret;
	*ppos += count;
	return count;
}

/* The llseek of a selection file: one opened for writing only has no seq_file. */
loff_t malloc_type_selection_llseek(struct file *file, loff_t offset,
				    int whence)
{
	if (!(file->f_mode & FMODE_READ))
		return noop_llseek(file, offset, whence);
	return seq_lseek(file, offset, whence);
}
