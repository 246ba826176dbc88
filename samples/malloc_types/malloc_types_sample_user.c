// SPDX-License-Identifier: GPL-2.0
/*
 * A module that allocates with another module's malloc type: "c sample
 * buf", which malloc_types_sample defines and exports. The block is charged
 * to that type, whose owner stays malloc_types_sample; the symbol makes this
 * module depend on it, so malloc_types_sample cannot be unloaded while this
 * one is loaded and holds the block.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/malloc_type.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "malloc_types_sample.h"

/* kmalloc_mt(300): a 512-byte block of "c sample buf", kept until unload. */
static void *block;

static int __init malloc_types_sample_user_init(void)
{
	block = kmalloc_mt(300, GFP_KERNEL, M_C_SAMPLE_BUF);
	if (!block)
		return -ENOMEM;
	pr_info("loaded, one block of \"c sample buf\" held\n");
	return 0;
}

static void __exit malloc_types_sample_user_exit(void)
{
	kfree_mt(block, M_C_SAMPLE_BUF);
}

module_init(malloc_types_sample_user_init);
module_exit(malloc_types_sample_user_exit);

MODULE_DESCRIPTION("Allocates with the malloc type another module exports");
MODULE_LICENSE("GPL");
