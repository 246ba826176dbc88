// SPDX-License-Identifier: GPL-2.0
/*
 * A second file of the C malloc types sample: it allocates with the type
 * that sample_main.c defines, which it knows from the header's
 * MALLOC_DECLARE().
 */

#include <linux/malloc_type.h>
#include <linux/slab.h>

#include "malloc_types_sample.h"

/* kvzalloc_mt(2000): from kmalloc, 2048 bytes, kept until unload. */
static u8 *table;

int sample_table_create(void)
{
	table = kvzalloc_mt(2000, GFP_KERNEL, M_C_SAMPLE_BUF);
	return table ? 0 : -ENOMEM;
}

void sample_table_destroy(void)
{
	kvfree_mt(table, M_C_SAMPLE_BUF);
}
