// SPDX-License-Identifier: GPL-2.0
/*
 * Instantiates the dtmalloc tracepoints (include/trace/events/dtmalloc.h),
 * with the rust_do_trace_*() entry points that kernel::malloc_type fires
 * them through.
 */
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
