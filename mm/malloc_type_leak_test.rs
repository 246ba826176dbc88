// SPDX-License-Identifier: GPL-2.0

//! Malloc types leak test module.
//!
//! Defines a malloc type, checks at load that the type was registered (from a module, exactly
//! once: a type of an earlier load of this module must be gone), and that its owner is this
//! module; makes one allocation that fails (too large, counted in the type's failures), then
//! leaks three allocations charged to it (8, 128 and 8192 accounted bytes), so that unloading
//! the module logs:
//!
//! `Warning: memory type malloc leak test leaked memory on destroy (3 allocations, 8328 bytes
//! leaked).`

use kernel::{
    alloc::flags::__GFP_NOWARN,
    malloc_type,
    prelude::*, //
};

kernel::malloc_define!(
    M_LEAK_TEST,
    "malloc leak test",
    "Memory leaked on purpose by malloc_type_leak_test"
);

module! {
    type: LeakTest,
    name: "malloc_type_leak_test",
    authors: ["Seed b810a448 maintainers <maintainers@users.noreply.a-seed-b810a448.example>"],
    description: "Malloc types: a module unloaded with live allocations",
    license: "GPL",
}

struct LeakTest;

impl kernel::Module for LeakTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        pr_info!("(init)\n");
        let mut same_name = 0;
        let mut ours = false;
        malloc_type::for_each(|t| {
            if t.name() == M_LEAK_TEST.name() {
                same_name += 1;
                ours |= core::ptr::eq(t, &M_LEAK_TEST) && t.is_module();
            }
        });
        if same_name != 1 || !ours {
            pr_err!("type not registered once from this module ({same_name} of that name)\n");
            return Err(EINVAL);
        }
        if M_LEAK_TEST.owner() != c"malloc_type_leak_test" {
            pr_err!("owner is {:?}, not this module\n", M_LEAK_TEST.owner());
            return Err(EINVAL);
        }
        pr_info!(
            "registered: id {} zone {} of {} types\n",
            M_LEAK_TEST.id(),
            M_LEAK_TEST.zone(),
            malloc_type::count()
        );

        // A failed allocation, a balanced one, then three leaked ones.
        let too_large = malloc_type::KMALLOC_MAX_SIZE + 1;
        if M_LEAK_TEST
            .malloc(too_large, GFP_KERNEL | __GFP_NOWARN)
            .is_ok()
        {
            pr_err!("an allocation of {too_large} bytes succeeded\n");
            return Err(EINVAL);
        }
        let p = M_LEAK_TEST.malloc(64, GFP_KERNEL)?;
        // SAFETY: `p` came from `M_LEAK_TEST` with 64 bytes and is not used again.
        unsafe { M_LEAK_TEST.free(p.as_ptr().cast()) };
        for size in [8, 100, 5000] {
            let _leaked = M_LEAK_TEST.malloc(size, GFP_KERNEL)?;
        }
        let s = M_LEAK_TEST.stats();
        if s.in_use() != 3 || s.mem_use() != 8 + 128 + 8192 || s.numfailures != 1 {
            pr_err!("unexpected statistics {s:?}\n");
            return Err(EINVAL);
        }
        Ok(LeakTest)
    }
}

impl Drop for LeakTest {
    fn drop(&mut self) {
        pr_info!("(exit)\n");
    }
}
