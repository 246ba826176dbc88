// SPDX-License-Identifier: GPL-2.0

//! Malloc types unload test module.
//!
//! Allocates and frees memory of its own type from an async function that runs while the
//! module unloads. The module's exit allocates a block of the type and schedules the function
//! (`async_schedule()`), which waits until the going notifier chain has run, then allocates and
//! frees memory of the type, and frees the block. The module core waits for async functions
//! only after the going notifier (`async_synchronize_full()` in `delete_module()`); the registry
//! unregisters the type later, from `free_module()`, so every allocation and free of the
//! function is counted, and the unload warns of no leak. Guest test 35 loads and unloads the
//! module in a loop, under KASAN and lockdep.

use kernel::{ffi::c_void, prelude::*};

kernel::malloc_define!(
    M_UNLOAD_TEST,
    "unload test",
    "Allocations racing the unload of their module"
);

module! {
    type: UnloadTest,
    name: "malloc_type_unload_test",
    authors: ["Seed b810a448 maintainers <maintainers@users.noreply.a-seed-b810a448.example>"],
    description: "Malloc types: typed allocations racing the module's unload",
    license: "GPL",
}

extern "C" {
    /// Schedules the async function that calls [`malloc_type_unload_test_churn`] with `held`
    /// once the going notifier chain has run (`malloc_type_unload_test_async.c`).
    fn malloc_type_unload_test_schedule(held: *mut c_void);
}

/// The allocate+free pairs of one churn.
const PAIRS: u32 = 1000;

/// Allocates and frees 64 bytes of `unload test` [`PAIRS`] times, frees `held`, and logs how
/// many pairs it made, how many of them while the type was registered, and whether it was
/// registered when `held` was freed.
///
/// Called by the async function that the module's exit schedules, after the going notifier.
///
/// # Safety
///
/// `held` is NULL or a block of `M_UNLOAD_TEST.malloc()`, not used again.
///
/// # Context
///
/// Process context; may sleep.
#[no_mangle]
pub unsafe extern "C" fn malloc_type_unload_test_churn(held: *mut c_void) {
    let (mut pairs, mut registered) = (0u32, 0u32);
    while pairs < PAIRS {
        let was_registered = M_UNLOAD_TEST.is_registered();
        let Ok(p) = M_UNLOAD_TEST.malloc(64, GFP_KERNEL) else {
            break;
        };
        // SAFETY: `p` came from `M_UNLOAD_TEST.malloc` with 64 bytes and is not used again.
        unsafe { M_UNLOAD_TEST.free(p.as_ptr().cast()) };
        pairs += 1;
        if was_registered {
            registered += 1;
        }
    }
    let held = if held.is_null() {
        "none"
    } else {
        let was_registered = M_UNLOAD_TEST.is_registered();
        // SAFETY: `held` is a block of `M_UNLOAD_TEST.malloc()`, not used again (safety
        // requirements).
        unsafe { M_UNLOAD_TEST.free(held.cast()) };
        if was_registered {
            "yes"
        } else {
            "no"
        }
    };
    pr_info!(
        "churn: {pairs} pairs, {registered} while the type was registered; \
         held block freed while registered: {held}\n"
    );
}

struct UnloadTest;

impl kernel::Module for UnloadTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let p = M_UNLOAD_TEST.malloc(64, GFP_KERNEL)?;
        // SAFETY: `p` came from `M_UNLOAD_TEST.malloc` with 64 bytes and is not used again.
        unsafe { M_UNLOAD_TEST.free(p.as_ptr().cast()) };
        Ok(UnloadTest)
    }
}

impl Drop for UnloadTest {
    fn drop(&mut self) {
        // A block allocated before the going notifier and freed after it, by the async function.
        let held = M_UNLOAD_TEST
            .malloc(64, GFP_KERNEL)
            .map_or(core::ptr::null_mut(), |p| p.as_ptr().cast::<c_void>());
        // SAFETY: The function only schedules an async function of this module, which the module
        // core waits for before it frees the module; `held` is NULL or a block of
        // `M_UNLOAD_TEST.malloc()` that only that function uses, and frees.
        unsafe { malloc_type_unload_test_schedule(held) };
    }
}
