// SPDX-License-Identifier: GPL-2.0
/*
 * A module that makes one memory bug in a block of its malloc type
 * "memguard test" at load, for memguard to catch (guest test 74):
 *
 *   bug=overflow  writes the byte after a 64-byte block;
 *   bug=uaf       reads a 64-byte block after freeing it.
 *
 * The type must be guarded first (its probe name memguard_test in
 * /sys/kernel/debug/memguard/types): the module checks that its block is
 * one of memguard's and makes no bug otherwise, so that loading it by
 * mistake corrupts nothing. memguard reports the bug, naming the type,
 * and the load goes on (the kernel is tainted; with panic_on_warn it
 * panics).
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/compiler.h>
#include <linux/malloc_type.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/preempt.h>
#include <linux/slab.h>
#include <linux/string.h>

static MALLOC_DEFINE(M_MEMGUARD_TEST, "memguard test",
		     "Blocks of the memguard test module");

static char *bug = "";
module_param(bug, charp, 0444);
MODULE_PARM_DESC(bug, "The bug to make: overflow or uaf");

static int __init malloc_type_memguard_test_init(void)
{
	bool overflow = !strcmp(bug, "overflow");
	size_t i = 64;
	u8 *p;

	if (!overflow && strcmp(bug, "uaf"))
		return -EINVAL;
	p = kmalloc_mt(64, GFP_KERNEL, M_MEMGUARD_TEST);
	if (!p)
		return -ENOMEM;
	if (!malloc_type_memguard_block(p, NULL)) {
		pr_err("\"memguard test\" is not guarded: no bug made\n");
		kfree_mt(p, M_MEMGUARD_TEST);
		return -EPERM;
	}
	OPTIMIZER_HIDE_VAR(i);
	/* On one CPU: the free forgets the block in this CPU's TLB at once. */
	migrate_disable();
	if (overflow) {
		WRITE_ONCE(p[i], 1);
		kfree_mt(p, M_MEMGUARD_TEST);
	} else {
		kfree_mt(p, M_MEMGUARD_TEST);
		(void)READ_ONCE(p[0]);
	}
	migrate_enable();
	return 0;
}

static void __exit malloc_type_memguard_test_exit(void)
{
}

module_init(malloc_type_memguard_test_init);
module_exit(malloc_type_memguard_test_exit);

MODULE_DESCRIPTION("A memory bug of a malloc type, for memguard to catch");
MODULE_LICENSE("GPL");
