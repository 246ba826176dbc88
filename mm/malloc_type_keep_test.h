/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What malloc_type_keep_test_holder gives malloc_type_keep_test: a block to
 * keep and free later with kfree().
 */
#ifndef _MM_MALLOC_TYPE_KEEP_TEST_H
#define _MM_MALLOC_TYPE_KEEP_TEST_H

int malloc_type_keep_test_hold(void *p);

#endif /* _MM_MALLOC_TYPE_KEEP_TEST_H */
