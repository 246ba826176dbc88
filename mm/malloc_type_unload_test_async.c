// SPDX-License-Identifier: GPL-2.0
/*
 * The async part of the malloc types unload test module: the module's exit
 * schedules an async function that allocates and frees typed memory (in
 * Rust, malloc_type_unload_test_churn()) while the module core unregisters
 * the module's malloc types; the module core waits for async functions only
 * after the going notifier.
 */
#include <linux/async.h>

void malloc_type_unload_test_churn(void);
void malloc_type_unload_test_schedule(void);

static void malloc_type_unload_test_async(void *data, async_cookie_t cookie)
{
	malloc_type_unload_test_churn();
}

void malloc_type_unload_test_schedule(void)
{
	async_schedule(malloc_type_unload_test_async, NULL);
}
