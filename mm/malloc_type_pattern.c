// SPDX-License-Identifier: GPL-2.0
/*
 * Malloc types: the words and patterns of the selection files, tracefs's
 * set_dtmalloc_probes and /proc/malloc_types_peak.
 *
 * What is written to a selection file is words separated by white space,
 * each one printable ASCII. A word may be split across write() calls, as in
 * tracefs's own selection files (trace_parser): struct malloc_type_words
 * carries its first part to the next write.
 *
 * A pattern selects types by their probe names. It is written in the text
 * form the kernel shows names in (malloc_type_name_text()): "\NNN", a
 * backslash and three octal digits, stands for the byte NNN, so that a
 * probe name copied from dtmalloc_probes selects its type, whatever bytes
 * the name holds. Outside a character class such a byte is always itself,
 * even '*', '?', '[' or '\'; everything else is glob_match()'s: '*', '?',
 * and classes ("[a-z]", "[!...]"), in which the bytes, decoded, keep
 * glob_match()'s meaning. A pattern is turned into a glob_match() pattern
 * once, when it is written (malloc_type_pattern_glob()).
 *
 * The rules are shared with the tools (tools/memstat), which select probes
 * with the same patterns: rust/kernel/malloc_type/patterns.rs is the test
 * vector both read.
 *
 * This file depends on nothing but string functions, so that the fuzzing
 * harness of the selection files builds it in user space.
 */

#include <linux/errno.h>
#include <linux/string.h>

#include <linux/malloc_type_pattern.h>

/* Whether @c separates words: ASCII white space, as C's isspace(). */
static bool malloc_type_is_space(unsigned char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

/**
 * malloc_type_words_parse() - split what a write brings into words
 * @w: the state of the file's words, updated: the part of a word that the
 *	writes so far left unfinished, continued by @buf.
 * @buf: the bytes written.
 * @len: their number.
 * @word: called for each word @buf finishes (a word followed by white
 *	space), with its bytes and their number (no NUL after them); a non-zero
 *	return stops the parse and is returned.
 * @arg: passed to @word.
 *
 * Words are separated by ASCII white space and made of printable ASCII
 * (0x21 to 0x7e); a word that white space does not end yet stays in @w
 * for the next write. On error @w is left in any state: callers parse a
 * copy and keep it only on success.
 *
 * Return: 0; -EINVAL for a byte that is neither white space nor printable
 * ASCII (a NUL included) or a word longer than MALLOC_TYPE_WORD_MAX; or
 * the first error of @word.
 */
int malloc_type_words_parse(struct malloc_type_words *w, const char *buf,
			    size_t len,
			    int (*word)(const char *s, size_t n, void *arg),
			    void *arg)
{
	size_t i;
	int ret;

	for (i = 0; i < len; i++) {
		unsigned char c = buf[i];

		if (malloc_type_is_space(c)) {
			if (!w->part_len)
				continue;
			ret = word(w->part, w->part_len, arg);
			w->part_len = 0;
			if (ret)
				return ret;
			continue;
		}
		if (c < 0x21 || c > 0x7e || w->part_len == MALLOC_TYPE_WORD_MAX)
			return -EINVAL;
		w->part[w->part_len++] = c;
	}
	return 0;
}

/* A byte of a pattern, decoded: whether it was written as "\NNN". */
struct malloc_type_pattern_byte {
	unsigned char	b;
	bool		escaped;
};

/*
 * Where the class whose '[' is before @t[k] ends, as glob_match() reads a
 * class on the decoded bytes: an optional '!', a first member that may be
 * ']', then members up to the first ']'. Return: the index of that ']' in
 * @t, or 0 when no ']' closes the class.
 */
static size_t malloc_type_class_end(const struct malloc_type_pattern_byte *t,
				    size_t n, size_t k)
{
	if (k < n && t[k].b == '!')
		k++;
	/* The first member. */
	k++;
	for (; k < n; k++)
		if (t[k].b == ']')
			return k;
	return 0;
}

/**
 * malloc_type_pattern_glob() - check a pattern and turn it into a glob
 * @pat: the pattern, printable ASCII; need not be NUL-terminated.
 * @len: its length in bytes.
 * @glob: where the glob_match() pattern goes, NUL-terminated.
 * @size: the size of @glob: MALLOC_TYPE_GLOB_MAX + 1 holds any.
 *
 * Each "\NNN" (001 to 377) becomes its byte, preceded by a backslash
 * outside a class where glob_match() would take it for more than itself
 * ('\', '*', '?', '['); inside a class every byte is copied as it is. A '['
 * that no ']' closes is written as "\[", the literal '[' glob_match() reads
 * for it anyway, so that the bytes after it are outside a class for both.
 *
 * Return: the length of the glob; -EINVAL for a pattern of 0 or more than
 * MALLOC_TYPE_PATTERN_MAX bytes, a byte that is not printable ASCII, or a
 * backslash that is not the escape of a byte from 001 to 377; -ENOSPC when
 * the glob does not fit in @size.
 */
int malloc_type_pattern_glob(const char *pat, size_t len, char *glob,
			     size_t size)
{
	struct malloc_type_pattern_byte t[MALLOC_TYPE_PATTERN_MAX];
	size_t i = 0, n = 0, k, end, o = 0;

	if (!len || len > MALLOC_TYPE_PATTERN_MAX)
		return -EINVAL;
	while (i < len) {
		const unsigned char *p = (const unsigned char *)pat + i;

		if (p[0] < 0x21 || p[0] > 0x7e)
			return -EINVAL;
		t[n].escaped = p[0] == '\\';
		if (!t[n].escaped) {
			t[n++].b = p[0];
			i++;
			continue;
		}
		if (len - i < 4 || p[1] < '0' || p[1] > '3' || p[2] < '0' ||
		    p[2] > '7' || p[3] < '0' || p[3] > '7' ||
		    (p[1] == '0' && p[2] == '0' && p[3] == '0'))
			return -EINVAL;
		t[n++].b = (p[1] - '0') << 6 | (p[2] - '0') << 3 | (p[3] - '0');
		i += 4;
	}
	for (k = 0; k < n; k++) {
		unsigned char b = t[k].b;
		bool meta = b == '\\' || b == '*' || b == '?' || b == '[';

		if (b == '[' && !t[k].escaped) {
			end = malloc_type_class_end(t, n, k + 1);
			if (end) {
				/* The class, its bytes as glob_match() reads them. */
				if (o + end - k + 1 >= size)
					return -ENOSPC;
				for (; k <= end; k++)
					glob[o++] = t[k].b;
				k--;
				continue;
			}
			/* An unclosed '[', literal for glob_match() too. */
			meta = true;
		} else if (!t[k].escaped) {
			meta = false;
		}
		if (o + meta + 1 >= size)
			return -ENOSPC;
		if (meta)
			glob[o++] = '\\';
		glob[o++] = b;
	}
	glob[o] = '\0';
	return o;
}
