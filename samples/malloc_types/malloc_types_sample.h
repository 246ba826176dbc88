/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The C malloc types sample's shared type, as FreeBSD code shares one:
 * defined once with MALLOC_DEFINE() (sample_main.c), declared here for the
 * other files of the module (sample_table.c), and exported for other
 * modules (malloc_types_sample_user.c).
 */
#ifndef _MALLOC_TYPES_SAMPLE_H
#define _MALLOC_TYPES_SAMPLE_H

#include <linux/malloc_type.h>

MALLOC_DECLARE(M_C_SAMPLE_BUF);

int sample_table_create(void);
void sample_table_destroy(void);

#endif /* _MALLOC_TYPES_SAMPLE_H */
