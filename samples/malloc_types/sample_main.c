// SPDX-License-Identifier: GPL-2.0
/*
 * C malloc types sample.
 *
 * Defines three malloc types with MALLOC_DEFINE() and allocates with the
 * functions of the C API: kzalloc_mt() (with malloc_usable_size()) then
 * kfree_sensitive_mt(), kmalloc_mt() then kreallocf_mt(),
 * kmalloc_array_mt(), kcalloc_mt(), kvzalloc_mt(), and a page of "c sample
 * pages" from __get_free_pages_mt() (FreeBSD's contigmalloc()). The types
 * are placed as FreeBSD code places them: "c sample leak" is a static type of this
 * file; "c sample buf" is shared with the other file of the module
 * (sample_table.c, through MALLOC_DECLARE() in malloc_types_sample.h) and
 * exported for other modules (malloc_types_sample_user.c). Some blocks live
 * until the module is unloaded; with leak=N the module leaks N more blocks
 * of 256 bytes of "c sample leak" on purpose, so that unloading it shows
 * the kernel's warning:
 *
 *   Warning: memory type c sample leak leaked memory on destroy
 *   (N allocations, 256*N bytes leaked).
 *
 * A plain kzalloc() of 100 bytes, kept until unload, is charged to the
 * module's default type, "malloc_types_sample" (with
 * CONFIG_MALLOC_TYPES_DEFAULT): code that names no type is accounted too.
 *
 * The Rust sample beside it is samples/rust/rust_malloc_types.rs.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/malloc_type.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "malloc_types_sample.h"

MALLOC_DEFINE(M_C_SAMPLE_BUF, "c sample buf", "Buffers of the C malloc types sample");
EXPORT_SYMBOL_GPL(M_C_SAMPLE_BUF);
static MALLOC_DEFINE(M_C_SAMPLE_LEAK, "c sample leak", "Blocks the C sample leaks on purpose");
static MALLOC_DEFINE(M_C_SAMPLE_PAGES, "c sample pages", "Pages of the C malloc types sample");

static unsigned int leak;
module_param(leak, uint, 0444);
MODULE_PARM_DESC(leak, "Blocks of 256 bytes to leak on purpose, shown at unload (at most 1000)");

/* Kept until unload. */
static u8 *buf;		/* kmalloc_mt(1024), grown to 4096 with kreallocf_mt() */
static u64 *array;	/* kmalloc_array_mt(64, sizeof(u64)): 512 bytes */
static unsigned long page;	/* __get_free_pages_mt(order 0): one page */
static void *untyped;		/* kzalloc(100): the default type's 128 bytes */

static int __init malloc_types_sample_init(void)
{
	u32 *scratch;
	u8 *p;
	unsigned int i;

	/*
	 * Freed at once: kzalloc_mt(200), zeroed again when freed as memory
	 * that held a secret is (kfree_sensitive_mt()), and kcalloc_mt(3, 4).
	 */
	p = kzalloc_mt(200, GFP_KERNEL, M_C_SAMPLE_BUF);
	if (!p)
		return -ENOMEM;
	/* FreeBSD's malloc_usable_size(): the size class the block was charged. */
	pr_info("a block of 200 bytes has %zu usable\n", malloc_usable_size(p));
	kfree_sensitive_mt(p, M_C_SAMPLE_BUF);
	scratch = kcalloc_mt(3, sizeof(*scratch), GFP_KERNEL, M_C_SAMPLE_BUF);
	if (!scratch)
		return -ENOMEM;
	kfree_mt(scratch, M_C_SAMPLE_BUF);

	buf = kmalloc_mt(1024, GFP_KERNEL, M_C_SAMPLE_BUF);
	if (!buf)
		return -ENOMEM;
	/* FreeBSD's reallocf(): a failure frees buf, so nothing leaks here. */
	buf = kreallocf_mt(buf, 4096, GFP_KERNEL, M_C_SAMPLE_BUF);
	if (!buf)
		return -ENOMEM;
	array = kmalloc_array_mt(64, sizeof(*array), GFP_KERNEL, M_C_SAMPLE_BUF);
	if (!array)
		goto out_buf;
	page = __get_free_pages_mt(GFP_KERNEL, 0, M_C_SAMPLE_PAGES);
	if (!page)
		goto out_array;
	/* No type given: charged to the module's default type. */
	untyped = kzalloc(100, GFP_KERNEL);
	if (!untyped)
		goto out_page;
	if (sample_table_create())
		goto out_untyped;

	for (i = 0; i < min(leak, 1000U); i++) {
		/* Leaked on purpose: nothing keeps the pointer. */
		if (!kmalloc_mt(256, GFP_KERNEL, M_C_SAMPLE_LEAK))
			break;
	}
	pr_info("loaded, %u blocks of \"c sample leak\" leaked on purpose\n", i);
	return 0;

out_untyped:
	kfree(untyped);
out_page:
	free_pages_mt(page, 0, M_C_SAMPLE_PAGES);
out_array:
	kfree_mt(array, M_C_SAMPLE_BUF);
out_buf:
	kfree_mt(buf, M_C_SAMPLE_BUF);
	return -ENOMEM;
}

static void __exit malloc_types_sample_exit(void)
{
	sample_table_destroy();
	kfree(untyped);
	free_pages_mt(page, 0, M_C_SAMPLE_PAGES);
	kfree_mt(array, M_C_SAMPLE_BUF);
	kfree_mt(buf, M_C_SAMPLE_BUF);
}

module_init(malloc_types_sample_init);
module_exit(malloc_types_sample_exit);

MODULE_DESCRIPTION("C malloc types sample");
MODULE_LICENSE("GPL");
