// SPDX-License-Identifier: GPL-2.0
/*
 * A libFuzzer target for the parser of the selection files
 * (mm/malloc_type_pattern.c), built in user space with the kernel's own
 * glob_match() (lib/glob.c) and the headers in include/ here:
 *
 *   clang -fsanitize=fuzzer,address,undefined -Iinclude -I$TREE/mm \
 *	selection_fuzz.c $TREE/mm/malloc_type_pattern.c $TREE/lib/glob.c
 *
 * run.sh builds and runs it. For every input it checks that:
 *  - words split across two writes at any point are the words of one write;
 *  - every word is printable ASCII and at most MALLOC_TYPE_WORD_MAX bytes;
 *  - a pattern that is accepted gives a NUL-terminated glob of at most
 *    MALLOC_TYPE_GLOB_MAX bytes, which glob_match() takes;
 *  - the exact pattern of a probe name (its text form, with the glob and
 *    selection metacharacters escaped too) matches that name and no longer
 *    one.
 * Any failed check aborts, which the fuzzer reports with the input.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/glob.h>

#include <linux/malloc_type_pattern.h>

#define check(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "check failed: %s (line %d)\n",	\
				#cond, __LINE__);			\
			abort();					\
		}							\
	} while (0)

/* The words of one parse, concatenated with a NUL after each. */
struct words {
	char	buf[8192];
	size_t	len;
	int	nr;
};

static int collect(const char *s, size_t n, void *arg)
{
	struct words *w = arg;
	size_t i;

	check(n > 0 && n <= MALLOC_TYPE_WORD_MAX);
	for (i = 0; i < n; i++)
		check(s[i] >= 0x21 && s[i] <= 0x7e);
	if (w->len + n + 1 <= sizeof(w->buf)) {
		memcpy(w->buf + w->len, s, n);
		w->len += n;
		w->buf[w->len++] = '\0';
	}
	w->nr++;
	return 0;
}

/* Checks a word as a pattern: the glob it gives is bounded and usable. */
static void check_pattern(const char *s, size_t n)
{
	char glob[MALLOC_TYPE_GLOB_MAX + 1];
	int len = malloc_type_pattern_glob(s, n, glob, sizeof(glob));

	if (len < 0) {
		check(len == -EINVAL);
		return;
	}
	check(len <= MALLOC_TYPE_GLOB_MAX && glob[len] == '\0');
	check(strlen(glob) == (size_t)len);
}

/*
 * The pattern rule read directly, as an oracle for the glob the parser
 * makes: @t are the pattern's bytes decoded, @esc whether each was written
 * as "\NNN". Outside a class an escaped byte is itself; '*', '?' and a
 * closed class are glob_match()'s, on the decoded bytes.
 */
static bool oracle(const unsigned char *t, const bool *esc, size_t n,
		   const unsigned char *s, size_t sn)
{
	size_t k, end;

	if (!n)
		return !sn;
	if (!esc[0] && t[0] == '*') {
		for (k = 0; k <= sn; k++)
			if (oracle(t + 1, esc + 1, n - 1, s + k, sn - k))
				return true;
		return false;
	}
	if (!sn)
		return false;
	if (!esc[0] && t[0] == '?')
		return oracle(t + 1, esc + 1, n - 1, s + 1, sn - 1);
	if (!esc[0] && t[0] == '[') {
		bool inv, in = false;

		k = 1;
		inv = k < n && t[k] == '!';
		k += inv;
		end = 0;
		if (k < n)
			for (end = k + 1; end < n && t[end] != ']'; end++)
				;
		if (k < n && end < n) {
			for (; k < end; k++) {
				unsigned char a = t[k], b = a;

				if (k + 2 < end + 1 && t[k + 1] == '-' &&
				    t[k + 2] != ']') {
					b = t[k + 2];
					k += 2;
				}
				if (a <= s[0] && s[0] <= b)
					in = true;
			}
			if (in == inv)
				return false;
			return oracle(t + end + 1, esc + end + 1, n - end - 1,
				      s + 1, sn - 1);
		}
	}
	if (t[0] != s[0])
		return false;
	return oracle(t + 1, esc + 1, n - 1, s + 1, sn - 1);
}

/* Decodes an accepted pattern for the oracle. */
static size_t decode(const char *p, size_t len, unsigned char *t, bool *esc)
{
	size_t i = 0, n = 0;

	while (i < len) {
		esc[n] = p[i] == '\\';
		if (esc[n]) {
			t[n++] = (p[i + 1] - '0') << 6 | (p[i + 2] - '0') << 3 |
				 (p[i + 3] - '0');
			i += 4;
		} else {
			t[n++] = p[i++];
		}
	}
	return n;
}

/*
 * Checks that the glob of pattern @p matches @name exactly when the rule
 * says the pattern does.
 */
static void check_match(const char *p, size_t n, const unsigned char *name,
			size_t name_len)
{
	char glob[MALLOC_TYPE_GLOB_MAX + 1], str[64];
	unsigned char t[MALLOC_TYPE_PATTERN_MAX];
	bool esc[MALLOC_TYPE_PATTERN_MAX];
	size_t tn, i, stars;

	if (malloc_type_pattern_glob(p, n, glob, sizeof(glob)) < 0)
		return;
	/* The oracle backtracks without bound: a few stars at most. */
	for (i = 0, stars = 0; i < n; i++)
		stars += p[i] == '*';
	if (stars > 3)
		return;
	tn = decode(p, n, t, esc);
	memcpy(str, name, name_len);
	str[name_len] = '\0';
	check(glob_match(glob, str) == oracle(t, esc, tn, name, name_len));
}

/* The exact pattern of @name: see rust/kernel/malloc_type/patterns.rs. */
static size_t exact_pattern(const unsigned char *name, size_t n, char *out)
{
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		unsigned char c = name[i];

		if (c < 0x20 || c > 0x7e || strchr("\\*?[:! ", c))
			o += sprintf(out + o, "\\%03o", c);
		else
			out[o++] = c;
	}
	out[o] = '\0';
	return o;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct malloc_type_words one = {}, two = {};
	static struct words w1, w2;
	char pat[4 * 31 + 1], glob[MALLOC_TYPE_GLOB_MAX + 1];
	unsigned char name[32];
	size_t split, n, i;
	int r1, r2;

	/* One write, then the same bytes in two writes. */
	w1.len = w1.nr = 0;
	w2.len = w2.nr = 0;
	r1 = malloc_type_words_parse(&one, (const char *)data, size, collect,
				     &w1);
	split = size ? data[0] % (size + 1) : 0;
	r2 = malloc_type_words_parse(&two, (const char *)data, split, collect,
				     &w2);
	if (!r2)
		r2 = malloc_type_words_parse(&two, (const char *)data + split,
					     size - split, collect, &w2);
	check(r1 == r2);
	if (!r1) {
		check(w1.nr == w2.nr && w1.len == w2.len &&
		      !memcmp(w1.buf, w2.buf, w1.len));
		check(one.part_len == two.part_len &&
		      !memcmp(one.part, two.part, one.part_len));
	}
	for (i = 0; i < w1.len; i += strlen(w1.buf + i) + 1)
		check_pattern(w1.buf + i, strlen(w1.buf + i));
	check_pattern((const char *)data, size);

	/*
	 * The input as "PATTERN NAME": the glob and the rule agree on whether
	 * the pattern matches the name (no NUL in a name).
	 */
	if (w1.nr >= 2 && !r1) {
		const char *p = w1.buf, *nm = w1.buf + strlen(w1.buf) + 1;
		size_t nl = strlen(nm) < 31 ? strlen(nm) : 31;

		check_match(p, strlen(p), (const unsigned char *)nm, nl);
	}

	/* The first bytes as a probe name: its exact pattern selects it. */
	n = size < 31 ? size : 31;
	for (i = 0; i < n; i++)
		name[i] = data[i] ? data[i] : 1;
	name[n] = '\0';
	if (n) {
		size_t len = exact_pattern(name, n, pat);
		int g = malloc_type_pattern_glob(pat, len, glob, sizeof(glob));

		check(g > 0);
		check(glob_match(glob, (const char *)name));
		if (n < 31) {
			name[n] = 'x';
			name[n + 1] = '\0';
			check(!glob_match(glob, (const char *)name));
		}
	}
	return 0;
}
