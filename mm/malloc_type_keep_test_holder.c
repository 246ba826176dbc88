// SPDX-License-Identifier: GPL-2.0
/*
 * Malloc types keep test, the holder: keeps the blocks that
 * malloc_type_keep_test hands it with malloc_type_keep_test_hold(), and
 * frees them with a plain kfree() when "release" is written to, or at its
 * exit, after the module that allocated them may have unloaded. Guest test
 * 36 checks that the type of the other module stays registered until then
 * and that every free charges it back.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/slab.h>

#include "malloc_type_keep_test.h"

#define MALLOC_TYPE_KEEP_TEST_MAX	64

static DEFINE_MUTEX(malloc_type_keep_test_lock);
static void *malloc_type_keep_test_held[MALLOC_TYPE_KEEP_TEST_MAX];
static unsigned int malloc_type_keep_test_nr;

/**
 * malloc_type_keep_test_hold() - keep a block until the holder frees it
 * @p: a block of kmalloc.
 *
 * Return: 0, or -ENOSPC when the holder is full (the caller keeps @p).
 */
int malloc_type_keep_test_hold(void *p)
{
	int ret = -ENOSPC;

	mutex_lock(&malloc_type_keep_test_lock);
	if (malloc_type_keep_test_nr < MALLOC_TYPE_KEEP_TEST_MAX) {
		malloc_type_keep_test_held[malloc_type_keep_test_nr++] = p;
		ret = 0;
	}
	mutex_unlock(&malloc_type_keep_test_lock);
	return ret;
}
EXPORT_SYMBOL_GPL(malloc_type_keep_test_hold);

static void malloc_type_keep_test_release(void)
{
	unsigned int i;

	mutex_lock(&malloc_type_keep_test_lock);
	for (i = 0; i < malloc_type_keep_test_nr; i++)
		kfree(malloc_type_keep_test_held[i]);
	pr_info("freed %u blocks\n", malloc_type_keep_test_nr);
	malloc_type_keep_test_nr = 0;
	mutex_unlock(&malloc_type_keep_test_lock);
}

static int malloc_type_keep_test_release_set(const char *val,
					     const struct kernel_param *kp)
{
	malloc_type_keep_test_release();
	return 0;
}

static const struct kernel_param_ops malloc_type_keep_test_release_ops = {
	.set = malloc_type_keep_test_release_set,
};
module_param_cb(release, &malloc_type_keep_test_release_ops, NULL, 0200);
MODULE_PARM_DESC(release, "Free the held blocks (write anything)");

static int __init malloc_type_keep_test_holder_init(void)
{
	return 0;
}
module_init(malloc_type_keep_test_holder_init);

static void __exit malloc_type_keep_test_holder_exit(void)
{
	malloc_type_keep_test_release();
}
module_exit(malloc_type_keep_test_holder_exit);

MODULE_DESCRIPTION("Malloc types: holds blocks of another module's type past its unload");
MODULE_LICENSE("GPL");
