// SPDX-License-Identifier: GPL-2.0

//! Malloc types unload test module.
//!
//! Allocates and frees memory of its own type from an async function that still runs while the
//! module unloads. The module's exit schedules the function (`async_schedule()`); the module
//! core then calls the going notifier, which unregisters the type and frees its per-CPU
//! statistics, and waits for async functions only after that (`async_synchronize_full()` in
//! `delete_module()`). The function keeps allocating until it sees the type unregistered, and a
//! while after: the registry must not free the statistics while an allocation or free may
//! still use them. Guest test 35 loads and unloads the module in a loop, under KASAN and
//! lockdep.

use kernel::prelude::*;

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
    /// Schedules the async function that calls [`malloc_type_unload_test_churn`]
    /// (`malloc_type_unload_test_async.c`).
    fn malloc_type_unload_test_schedule();
}

/// The most allocate+free pairs of one churn, so that it ends even if it never sees the type
/// unregistered.
const MAX_PAIRS: u32 = 1 << 20;

/// The pairs a churn makes after it saw the type unregistered.
const PAIRS_AFTER: u32 = 1000;

/// Allocates and frees 64 bytes of `unload test` until the type has been unregistered for
/// [`PAIRS_AFTER`] pairs (at most [`MAX_PAIRS`] pairs in all), and logs how many pairs it made
/// and how many of them while the type was registered.
///
/// Called by the async function that the module's exit schedules.
///
/// # Context
///
/// Process context; may sleep.
#[no_mangle]
pub extern "C" fn malloc_type_unload_test_churn() {
    let (mut pairs, mut registered, mut after) = (0u32, 0u32, 0u32);
    while pairs < MAX_PAIRS && after < PAIRS_AFTER {
        let was_registered = M_UNLOAD_TEST.is_registered();
        let Ok(p) = M_UNLOAD_TEST.malloc(64, GFP_KERNEL) else {
            break;
        };
        // SAFETY: `p` came from `M_UNLOAD_TEST.malloc` with 64 bytes and is not used again.
        unsafe { M_UNLOAD_TEST.free(p.as_ptr().cast()) };
        pairs += 1;
        if was_registered {
            registered += 1;
        } else {
            after += 1;
        }
    }
    pr_info!("churn: {pairs} pairs, {registered} while the type was registered\n");
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
        // SAFETY: The function only schedules an async function of this module, which the module
        // core waits for before it frees the module.
        unsafe { malloc_type_unload_test_schedule() };
    }
}
