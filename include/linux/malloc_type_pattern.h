/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Malloc types: the words and patterns of the selection files, tracefs's
 * set_dtmalloc_probes and /proc/malloc_types_peak (mm/malloc_type_pattern.c).
 *
 * A pattern turns into a glob for glob_match() (<linux/glob.h>). This
 * header and the functions it declares depend on nothing but that, types
 * and string functions, so that the fuzzing harness of the selection files
 * (tools/testing/malloc_types/fuzz/) builds them in user space.
 */
#ifndef _LINUX_MALLOC_TYPE_PATTERN_H
#define _LINUX_MALLOC_TYPE_PATTERN_H

#include <linux/glob.h>
#include <linux/types.h>

/*
 * Longest pattern, in bytes: the text form of a name of 31 bytes, each
 * written as \NNN (MALLOC_TYPE_TEXT_MAX).
 */
#define MALLOC_TYPE_PATTERN_MAX		124

/*
 * Longest glob a pattern turns into: a byte of the pattern is at most two
 * of the glob (an unclosed '[' is "\["; "\NNN" four bytes for two).
 */
#define MALLOC_TYPE_GLOB_MAX		(2 * MALLOC_TYPE_PATTERN_MAX)

/* Longest word of a selection file: "!", a pattern and ":malloc". */
#define MALLOC_TYPE_WORD_MAX		(1 + MALLOC_TYPE_PATTERN_MAX + 7)

/**
 * struct malloc_type_words - the state of the words written to a selection file
 * @part: the bytes of the last word of the writes so far, when no white
 *	space has ended it yet: the next write continues it.
 * @part_len: their number, 0 when the writes so far ended between words.
 *
 * One per open file, as tracefs's trace_parser: a word may be split across
 * write() calls.
 */
struct malloc_type_words {
	char		part[MALLOC_TYPE_WORD_MAX];
	unsigned int	part_len;
};

int malloc_type_words_parse(struct malloc_type_words *w, const char *buf,
			    size_t len,
			    int (*word)(const char *s, size_t n, void *arg),
			    void *arg);
int malloc_type_pattern_glob(const char *pat, size_t len, char *glob,
			     size_t size);

#endif /* _LINUX_MALLOC_TYPE_PATTERN_H */
