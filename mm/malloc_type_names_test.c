// SPDX-License-Identifier: GPL-2.0
/*
 * Malloc types names test module: types whose names hold what would break
 * a text format if a name were written as it is, for the tests of the text
 * form of names (malloc_type_name_text()) in /proc/malloc_types, the
 * dtmalloc events, dtmalloc_probes, the selection files and the tools.
 *
 * At load each type allocates 64 bytes and frees them; "nl\nrow 0 0 0"
 * keeps a second block until unload, so that it has a row in use.
 */

#include <linux/malloc_type.h>
#include <linux/module.h>
#include <linux/slab.h>

/* A newline and what would look like the rest of a row of /proc/malloc_types. */
static MALLOC_DEFINE(M_NAMES_NL, "nl\nrow 0 0 0", "A name with a newline");
/* An escape sequence (red text) and a terminal title change. */
static MALLOC_DEFINE(M_NAMES_ESC, "esc\x1b[31mred\x1b]0;t\x07", "A name with escapes");
/* A literal backslash-n, and a real newline: two names, two texts. */
static MALLOC_DEFINE(M_NAMES_BSN, "a\\n", "A name with a backslash");
static MALLOC_DEFINE(M_NAMES_LF, "a\n", "A name ending in a newline");
/* U+202E, right-to-left override: would reverse the rest of a line. */
static MALLOC_DEFINE(M_NAMES_RLO, "rlo\xe2\x80\xaelive", "A bidirectional override");
/* Bytes that selection patterns give a meaning to. */
static MALLOC_DEFINE(M_NAMES_META, "glob*?[x]:malloc !", "Glob and spec characters");

static struct malloc_type *const names_types[] = {
	M_NAMES_NL, M_NAMES_ESC, M_NAMES_BSN, M_NAMES_LF, M_NAMES_RLO,
	M_NAMES_META,
};

static void *kept;

static int __init malloc_type_names_test_init(void)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(names_types); i++)
		kfree_mt(kmalloc_mt(64, GFP_KERNEL, names_types[i]),
			 names_types[i]);
	kept = kmalloc_mt(64, GFP_KERNEL, M_NAMES_NL);
	return kept ? 0 : -ENOMEM;
}

static void __exit malloc_type_names_test_exit(void)
{
	kfree_mt(kept, M_NAMES_NL);
}

module_init(malloc_type_names_test_init);
module_exit(malloc_type_names_test_exit);

MODULE_DESCRIPTION("Malloc types: names that would break text formats");
MODULE_LICENSE("GPL");
