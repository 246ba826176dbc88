/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The floors of the malloc types benchmark, built in
 * (mm/malloc_type_bench_floor.c), for the benchmark module.
 */
#ifndef _MM_MALLOC_TYPE_BENCH_FLOOR_H
#define _MM_MALLOC_TYPE_BENCH_FLOOR_H

#include <linux/types.h>

struct malloc_type;

u64 malloc_type_bench_floor(size_t size, unsigned int iters);
u64 malloc_type_bench_floor_recorded(size_t size, unsigned int iters,
				     struct malloc_type *mtp);

#endif /* _MM_MALLOC_TYPE_BENCH_FLOOR_H */
