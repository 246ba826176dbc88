/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A malloc type shared by the files of the C KUnit test, as FreeBSD code
 * shares one: MALLOC_DEFINE() in one file (mm/malloc_type_c_test_shared.c),
 * MALLOC_DECLARE() in a header for the others (mm/malloc_type_c_test.c).
 */
#ifndef _MM_MALLOC_TYPE_C_TEST_H
#define _MM_MALLOC_TYPE_C_TEST_H

#include <linux/malloc_type.h>

MALLOC_DECLARE(M_KUNIT_C_SHARED);

void *malloc_type_c_test_shared_alloc(size_t size);

#endif /* _MM_MALLOC_TYPE_C_TEST_H */
