// SPDX-License-Identifier: GPL-2.0
/*
 * Malloc types KFENCE test: blocks of kmalloc_mt() that KFENCE serves keep
 * the record of their type in KFENCE's metadata, so that every free charges
 * the type back, as for the blocks of the slabs. At load, the module
 * allocates blocks of 40 bytes of its type "kfence test" (size class 64,
 * which is what a free must charge back, not the 40 KFENCE keeps) until
 * KFENCE has served five (KFENCE must be enabled, kfence.sample_interval),
 * freeing the others with kfree_mt(), and frees the five in five ways:
 * kfree(), kfree_mt(), krealloc_mt() to a larger size before a kfree() of
 * the new block, kvfree() and kfree_bulk(). Guest test 37 enables KFENCE,
 * loads the module and checks that the type holds nothing afterwards.
 * (kfree_rcu() may leave a block in a per-CPU RCU sheaf until the sheaf
 * fills, which a module cannot flush: the C API's KUnit suite covers it.)
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jiffies.h>
#include <linux/kfence.h>
#include <linux/malloc_type.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/slab.h>

static MALLOC_DEFINE(M_KFENCE_TEST, "kfence test", "Malloc types KFENCE test");

static unsigned int timeout_ms = 30000;
module_param(timeout_ms, uint, 0444);
MODULE_PARM_DESC(timeout_ms, "How long to wait for KFENCE to serve the blocks");

#define KFENCE_TEST_BLOCKS	5
#define KFENCE_TEST_SIZE	40

/* A block of @size bytes of the type that KFENCE served, or NULL. */
static void *malloc_type_kfence_test_alloc(size_t size, unsigned long timeout,
					   unsigned long *allocs)
{
	void *p;

	do {
		p = kmalloc_mt(size, GFP_KERNEL, M_KFENCE_TEST);
		if (!p)
			return NULL;
		(*allocs)++;
		if (is_kfence_address(p))
			return p;
		kfree_mt(p, M_KFENCE_TEST);
		/* Let the timer that opens KFENCE's allocation gate run. */
		cond_resched();
	} while (time_before(jiffies, timeout));
	return NULL;
}

static int __init malloc_type_kfence_test_init(void)
{
	unsigned long timeout = jiffies + msecs_to_jiffies(timeout_ms);
	void *p[KFENCE_TEST_BLOCKS], *q;
	unsigned long allocs = 0;
	int i;

	for (i = 0; i < KFENCE_TEST_BLOCKS; i++) {
		p[i] = malloc_type_kfence_test_alloc(KFENCE_TEST_SIZE, timeout, &allocs);
		if (!p[i]) {
			pr_err("KFENCE served %d of %d blocks in %u ms\n", i,
			       KFENCE_TEST_BLOCKS, timeout_ms);
			while (i--)
				kfree_mt(p[i], M_KFENCE_TEST);
			return -ETIMEDOUT;
		}
	}
	kfree(p[0]);
	kfree_mt(p[1], M_KFENCE_TEST);
	q = krealloc_mt(p[2], 2000, GFP_KERNEL, M_KFENCE_TEST);
	if (!q) {
		for (i = 2; i < KFENCE_TEST_BLOCKS; i++)
			kfree(p[i]);
		return -ENOMEM;
	}
	kfree(q);
	kvfree(p[3]);
	kfree_bulk(1, &p[4]);
	pr_info("KFENCE served %d blocks of %lu allocations, freed with kfree(), kfree_mt(), krealloc_mt()+kfree(), kvfree() and kfree_bulk()\n",
		KFENCE_TEST_BLOCKS, allocs);
	return 0;
}
module_init(malloc_type_kfence_test_init);

static void __exit malloc_type_kfence_test_exit(void)
{
}
module_exit(malloc_type_kfence_test_exit);

MODULE_DESCRIPTION("Malloc types KFENCE test");
MODULE_LICENSE("GPL");
