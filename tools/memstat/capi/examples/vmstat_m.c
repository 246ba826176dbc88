// SPDX-License-Identifier: GPL-2.0
/*
 * vmstat -m on libmemstat, as FreeBSD's vmstat(8) writes it: the malloc
 * types in use with their allocations in use, memory in use, requests and
 * the size classes (zones) they allocated from, through
 * memstat_malloc_zone_get_count(), _get_size() and _used(). A type that was
 * never used is not shown. The output is `memstat -m -H`'s.
 *
 *	cc -o vmstat_m vmstat_m.c $(pkg-config --cflags --libs memstat)
 */

#include <err.h>
#include <stdint.h>
#include <stdio.h>

#include <memstat.h>

int main(void)
{
	struct memory_type_list *mtlp;
	struct memory_type *mtp;
	size_t i, zones;
	int first;

	mtlp = memstat_mtl_alloc();
	if (mtlp == NULL)
		err(1, "memstat_mtl_alloc");
	if (memstat_sysctl_malloc(mtlp, 0) < 0)
		errx(1, "memstat_sysctl_malloc: %s",
		    memstat_strerror(memstat_mtl_geterror(mtlp)));
	zones = memstat_malloc_zone_get_count();
	printf("%13s %5s %6s %8s  Size(s)\n", "Type", "InUse", "MemUse", "Requests");
	for (mtp = memstat_mtl_first(mtlp); mtp != NULL; mtp = memstat_mtl_next(mtp)) {
		if (memstat_get_numallocs(mtp) == 0 && memstat_get_count(mtp) == 0)
			continue;
		printf("%13s %5llu %5lluK %8llu  ", memstat_get_name(mtp),
		    (unsigned long long)memstat_get_count(mtp),
		    (unsigned long long)(memstat_get_bytes(mtp) + 1023) / 1024,
		    (unsigned long long)memstat_get_numallocs(mtp));
		first = 1;
		for (i = 0; i < zones; i++) {
			if (memstat_malloc_zone_used(mtp, i)) {
				printf(first ? "%zu" : ",%zu", memstat_malloc_zone_get_size(i));
				first = 0;
			}
		}
		printf("\n");
	}
	memstat_mtl_free(mtlp);
	return 0;
}
