// SPDX-License-Identifier: GPL-2.0
/*
 * Instantiates the dtmalloc tracepoints (include/trace/events/dtmalloc.h),
 * with the rust_do_trace_*() entry points that kernel::malloc_type fires
 * them through, and defines the static keys behind which the accounting
 * tests whether it has more to do than count (struct malloc_type_events).
 */
#include <linux/export.h>
#include <linux/jump_label.h>
#include <linux/malloc_type.h>

#define CREATE_TRACE_POINTS
#define CREATE_RUST_TRACE_POINTS
#include <trace/events/dtmalloc.h>

/*
 * Typed allocation code can be instantiated in modules (the typed
 * allocator is generic over its type), so the tracepoints and their Rust
 * entry points are exported.
 */
EXPORT_TRACEPOINT_SYMBOL_GPL(malloc);
EXPORT_TRACEPOINT_SYMBOL_GPL(free);
EXPORT_SYMBOL_GPL(rust_do_trace_malloc);
EXPORT_SYMBOL_GPL(rust_do_trace_free);

/* Tested by the accounting, which typed code in modules instantiates. */
struct malloc_type_events malloc_type_events = {
	.malloc = STATIC_KEY_FALSE_INIT,
	.free = STATIC_KEY_FALSE_INIT,
	.debug = STATIC_KEY_FALSE_INIT,
	.guarded = STATIC_KEY_FALSE_INIT,
};
EXPORT_SYMBOL_GPL(malloc_type_events);

/*
 * The reg and unreg functions of the dtmalloc tracepoints: called by the
 * tracepoint core when the first probe of an event is registered and after
 * its last one is removed (tracepoints_mutex held).
 */
int dtmalloc_malloc_reg(void)
{
	static_branch_inc(&malloc_type_events.malloc);
	return 0;
}

void dtmalloc_malloc_unreg(void)
{
	static_branch_dec(&malloc_type_events.malloc);
}

int dtmalloc_free_reg(void)
{
	static_branch_inc(&malloc_type_events.free);
	return 0;
}

void dtmalloc_free_unreg(void)
{
	static_branch_dec(&malloc_type_events.free);
}
