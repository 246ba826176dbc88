// SPDX-License-Identifier: GPL-2.0
/*
 * The malloc type that the files of the C KUnit test share
 * (mm/malloc_type_c_test.h): defined here, declared in the header, and
 * allocated with from both files.
 */

#include <linux/malloc_type.h>
#include <linux/slab.h>

#include "malloc_type_c_test.h"

MALLOC_DEFINE(M_KUNIT_C_SHARED, "kunit c shared", "KUnit: a type of two files");

/* An allocation of @size bytes charged to the shared type, from its own file. */
void *malloc_type_c_test_shared_alloc(size_t size)
{
	return kmalloc_mt(size, GFP_KERNEL, M_KUNIT_C_SHARED);
}
