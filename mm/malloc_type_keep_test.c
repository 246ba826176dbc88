// SPDX-License-Identifier: GPL-2.0
/*
 * Malloc types keep test: allocates blocks of its own type with
 * kmalloc_mt(), a small and a large slab object and a large kmalloc, and
 * hands them to malloc_type_keep_test_holder, which frees them with kfree()
 * after this module may have unloaded; one more block it frees itself with
 * kfree(). It hands the holder a block of plain kmalloc() too, charged to
 * the module's default type (with CONFIG_MALLOC_TYPES_DEFAULT). Guest test
 * 36 checks that the types stay registered while the holder has their
 * blocks, and that their frees are charged back to them.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/malloc_type.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "malloc_type_keep_test.h"

static MALLOC_DEFINE(M_KEEP_TEST, "keep test", "Blocks that outlive their module");

static int __init malloc_type_keep_test_init(void)
{
	/* kmalloc-64, kmalloc-1k, and above the largest kmalloc cache. */
	const size_t sizes[] = { 64, 1000, 3 * PAGE_SIZE };
	unsigned int i;
	void *p;
	int ret;

	p = kmalloc_mt(32, GFP_KERNEL, M_KEEP_TEST);
	if (!p)
		return -ENOMEM;
	kfree(p);

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		p = kmalloc_mt(sizes[i], GFP_KERNEL, M_KEEP_TEST);
		if (!p)
			return -ENOMEM;
		ret = malloc_type_keep_test_hold(p);
		if (ret) {
			kfree(p);
			return ret;
		}
	}

	/* No type given: the module's default type, "malloc_type_keep_test". */
	p = kmalloc(100, GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	ret = malloc_type_keep_test_hold(p);
	if (ret)
		kfree(p);
	return ret;
}
module_init(malloc_type_keep_test_init);

static void __exit malloc_type_keep_test_exit(void)
{
}
module_exit(malloc_type_keep_test_exit);

MODULE_DESCRIPTION("Malloc types: blocks of a module's type that outlive the module");
MODULE_LICENSE("GPL");
