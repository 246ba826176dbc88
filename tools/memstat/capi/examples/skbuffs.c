// SPDX-License-Identifier: GPL-2.0
/*
 * The example of libmemstat(3)'s EXAMPLES section, on Linux: create a memory
 * type list, query the slab allocator (ALLOCATOR_UMA, the counterpart of
 * uma(9)) for available statistics, and print the number of objects in use
 * in the skbuff_head_cache cache: socket buffer heads, what mbufs are to
 * FreeBSD.
 *
 *	cc -o skbuffs skbuffs.c $(pkg-config --cflags --libs memstat)
 */

#include <err.h>
#include <stdint.h>
#include <stdio.h>

#include <memstat.h>

int main(void)
{
	struct memory_type_list *mtlp;
	struct memory_type *mtp;
	uint64_t skbuff_count;

	mtlp = memstat_mtl_alloc();
	if (mtlp == NULL)
		err(-1, "memstat_mtl_alloc");
	if (memstat_sysctl_uma(mtlp, 0) < 0)
		err(-1, "memstat_sysctl_uma");
	mtp = memstat_mtl_find(mtlp, ALLOCATOR_UMA, "skbuff_head_cache");
	if (mtp == NULL)
		errx(-1, "memstat_mtl_find: skbuff_head_cache not found");
	skbuff_count = memstat_get_count(mtp);
	memstat_mtl_free(mtlp);

	printf("skbuffs: %llu\n", (unsigned long long)skbuff_count);
	return 0;
}
