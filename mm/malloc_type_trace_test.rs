// SPDX-License-Identifier: GPL-2.0

//! Malloc types trace test module.
//!
//! Runs a known sequence of typed allocations and frees at load and at unload, for the tests of
//! the `dtmalloc:malloc` and `dtmalloc:free` tracepoints and of the `dtmalloc` tool:
//!
//! | when   | type             | event  | requested | accounted (size) | zindx |
//! |--------|------------------|--------|-----------|------------------|-------|
//! | load   | `trace test`     | malloc | 100       | 128              | 5     |
//! | load   | `trace test`     | malloc | 5000      | 8192             | 12    |
//! | load   | `trace test`     | malloc | 20000     | 32768            | -1    |
//! | load   | `trace test`     | free   | 100       | 128              | 0     |
//! | load   | `tab\tand space` | malloc | 8         | 8                | 0     |
//! | load   | `tab\tand space` | free   | 8         | 8                | 0     |
//! | unload | `trace test`     | free   | 5000      | 8192             | 0     |
//! | unload | `trace test`     | free   | 20000     | 32768            | 0     |
//!
//! The second type's name holds a tab and a space: its probe name is `tab_and_space`.

use core::ptr::NonNull;
use kernel::prelude::*;

kernel::malloc_define!(
    M_TRACE_TEST,
    "trace test",
    "Allocations of the trace test module"
);
kernel::malloc_define!(
    M_TRACE_TAB,
    "tab\tand space",
    "A type whose name has white space"
);

module! {
    type: TraceTest,
    name: "malloc_type_trace_test",
    authors: ["Seed b810a448 maintainers <maintainers@users.noreply.a-seed-b810a448.example>"],
    description: "Malloc types: a known sequence of traced allocations",
    license: "GPL",
}

/// The two blocks kept until unload: 5000 and 20000 bytes of `trace test`.
struct TraceTest {
    mid: NonNull<[u8]>,
    large: NonNull<[u8]>,
}

// SAFETY: The blocks are plain memory owned by the module; any thread may free them.
unsafe impl Send for TraceTest {}
// SAFETY: `&TraceTest` gives no access to the blocks.
unsafe impl Sync for TraceTest {}

impl kernel::Module for TraceTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let small = M_TRACE_TEST.malloc(100, GFP_KERNEL)?;
        let mid = match M_TRACE_TEST.malloc(5000, GFP_KERNEL) {
            Ok(p) => p,
            Err(e) => {
                // SAFETY: `small` came from `M_TRACE_TEST` with 100 bytes.
                unsafe { M_TRACE_TEST.free(small.as_ptr().cast()) };
                return Err(e.into());
            }
        };
        let large = match M_TRACE_TEST.malloc(20000, GFP_KERNEL) {
            Ok(p) => p,
            Err(e) => {
                // SAFETY: Both came from `M_TRACE_TEST` with these sizes.
                unsafe {
                    M_TRACE_TEST.free(small.as_ptr().cast());
                    M_TRACE_TEST.free(mid.as_ptr().cast());
                }
                return Err(e.into());
            }
        };
        let this = TraceTest { mid, large };
        // SAFETY: `small` came from `M_TRACE_TEST` with 100 bytes and is not used again.
        unsafe { M_TRACE_TEST.free(small.as_ptr().cast()) };
        let tab = M_TRACE_TAB.malloc(8, GFP_KERNEL)?;
        // SAFETY: `tab` came from `M_TRACE_TAB` with 8 bytes and is not used again.
        unsafe { M_TRACE_TAB.free(tab.as_ptr().cast()) };
        Ok(this)
    }
}

impl Drop for TraceTest {
    fn drop(&mut self) {
        // SAFETY: The blocks came from `M_TRACE_TEST` with these sizes and are freed once, here.
        unsafe {
            M_TRACE_TEST.free(self.mid.as_ptr().cast());
            M_TRACE_TEST.free(self.large.as_ptr().cast());
        }
    }
}
