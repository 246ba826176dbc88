// SPDX-License-Identifier: GPL-2.0
/*
 * The async part of the malloc types unload test module: the module's exit
 * allocates a block of the module's type and schedules an async function
 * that waits until the going notifier chain has run to its end, then
 * allocates and frees memory of the type and frees the block (in Rust,
 * malloc_type_unload_test_churn()). The module core waits for async
 * functions after the going notifier, and the registry must keep the type
 * registered until then: every pair is counted, the block's free too, and
 * the unload warns of no leak.
 */
#include <linux/async.h>
#include <linux/completion.h>
#include <linux/limits.h>
#include <linux/module.h>
#include <linux/notifier.h>

void malloc_type_unload_test_churn(void *held);
void malloc_type_unload_test_schedule(void *held);

static DECLARE_COMPLETION(malloc_type_unload_test_gone);

/* The last of the going notifiers for this module: the chain has run. */
static int malloc_type_unload_test_notify(struct notifier_block *nb,
					  unsigned long val, void *data)
{
	if (val == MODULE_STATE_GOING && data == THIS_MODULE)
		complete(&malloc_type_unload_test_gone);
	return NOTIFY_DONE;
}

static struct notifier_block malloc_type_unload_test_nb = {
	.notifier_call = malloc_type_unload_test_notify,
	.priority = INT_MIN,
};

static void malloc_type_unload_test_async(void *held, async_cookie_t cookie)
{
	wait_for_completion(&malloc_type_unload_test_gone);
	unregister_module_notifier(&malloc_type_unload_test_nb);
	malloc_type_unload_test_churn(held);
}

/*
 * Called by the module's exit with @held, a block of the module's type (or
 * NULL), which the async function frees.
 */
void malloc_type_unload_test_schedule(void *held)
{
	if (register_module_notifier(&malloc_type_unload_test_nb))
		complete(&malloc_type_unload_test_gone);
	async_schedule(malloc_type_unload_test_async, held);
}
