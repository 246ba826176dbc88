// SPDX-License-Identifier: GPL-2.0

//! Rust malloc types sample.
//!
//! Defines four malloc types (one with spaces in its name) and allocates with each form of the
//! API: typed malloc, zero-malloc, reallocf, zfree, array allocation, usable size, `Box` / `Vec`
//! with the typed allocator, and a typed page (FreeBSD's `contigmalloc`). Some allocations live
//! until the module is unloaded; with `leak=N` the module leaks N more blocks of 256 bytes of
//! "sample leak" on purpose, so that unloading it shows the kernel's warning:
//!
//! `Warning: memory type sample leak leaked memory on destroy (N allocations, 256*N bytes leaked).`

use core::ptr::NonNull;
use kernel::{
    alloc::{flags::__GFP_ZERO, Box, Vec},
    malloc_type::{usable_size, TypedAlloc, TypedPage},
    prelude::*,
};

kernel::malloc_define!(
    M_SAMPLE_BUF,
    "sample buf",
    "Byte buffers of the malloc types sample"
);
kernel::malloc_define!(
    M_SAMPLE_NODE,
    "sample list node",
    "List nodes of the malloc types sample"
);
kernel::malloc_define!(
    M_SAMPLE_LEAK,
    "sample leak",
    "Blocks the sample leaks on purpose"
);
kernel::malloc_define!(
    M_SAMPLE_PAGES,
    "sample pages",
    "Pages of the malloc types sample"
);

module! {
    type: RustMallocTypes,
    name: "rust_malloc_types",
    authors: ["Seed b810a448 maintainers <maintainers@users.noreply.a-seed-b810a448.example>"],
    description: "Rust malloc types sample",
    license: "GPL",
    params: {
        leak: u32 {
            default: 0,
            description: "Blocks of 256 bytes to leak on purpose, shown at unload (at most 1000)",
        },
    },
}

/// A node of a list, charged to "sample list node" through the typed allocator.
struct Node {
    value: u64,
    next: Option<Box<Node, TypedAlloc<M_SAMPLE_NODE>>>,
}

struct RustMallocTypes {
    /// A 4 KiB buffer kept until unload (typed malloc, then realloc from 1 KiB).
    buf: NonNull<[u8]>,
    /// A zeroed array of 64 `u64`, kept until unload.
    array: NonNull<[u8]>,
    /// Ten list nodes, kept until unload.
    list: Option<Box<Node, TypedAlloc<M_SAMPLE_NODE>>>,
    /// Numbers in a typed `Vec`, kept until unload.
    numbers: Vec<u32, TypedAlloc<M_SAMPLE_BUF>>,
    /// A zeroed page, charged to "sample pages" until unload.
    _page: TypedPage<M_SAMPLE_PAGES>,
}

// SAFETY: The raw blocks are plain memory owned by the module; any thread may free them.
unsafe impl Send for RustMallocTypes {}
// SAFETY: `&RustMallocTypes` gives no access to the raw blocks.
unsafe impl Sync for RustMallocTypes {}

const ARRAY_LEN: usize = 64;

impl kernel::Module for RustMallocTypes {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        pr_info!("Rust malloc types sample (init)\n");

        // A scratch buffer that is used and freed at once, zeroed first (`zfree`), as a buffer
        // that held a secret is.
        let scratch = M_SAMPLE_BUF.zmalloc(200, GFP_KERNEL)?;
        // FreeBSD's `malloc_usable_size()`: the size class the block was charged.
        // SAFETY: `scratch` is a live block of the raw API.
        let usable = unsafe { usable_size(scratch.as_ptr().cast()) };
        pr_info!("a block of 200 bytes has {usable} usable\n");
        // SAFETY: `scratch` came from `M_SAMPLE_BUF` with 200 bytes and is not used again.
        unsafe { M_SAMPLE_BUF.zfree(scratch.as_ptr().cast()) };

        // A buffer that grows from 1 KiB to 4 KiB; `reallocf` frees it if that fails.
        let small = M_SAMPLE_BUF.malloc(1024, GFP_KERNEL)?;
        // SAFETY: `small` came from `M_SAMPLE_BUF` with 1024 bytes and is not used again.
        let buf = unsafe { M_SAMPLE_BUF.reallocf(small.as_ptr().cast(), 4096, GFP_KERNEL)? };

        // An array; the element count times the size is checked for overflow.
        let array = match M_SAMPLE_BUF.mallocarray(ARRAY_LEN, size_of::<u64>(), GFP_KERNEL) {
            Ok(p) => p,
            Err(e) => {
                // SAFETY: `buf` came from `M_SAMPLE_BUF` with 4096 bytes.
                unsafe { M_SAMPLE_BUF.free(buf.as_ptr().cast()) };
                return Err(e);
            }
        };
        let page = match TypedPage::alloc_page(GFP_KERNEL | __GFP_ZERO) {
            Ok(page) => page,
            Err(e) => {
                // SAFETY: The blocks came from `M_SAMPLE_BUF` and are not used again.
                unsafe {
                    M_SAMPLE_BUF.free(buf.as_ptr().cast());
                    M_SAMPLE_BUF.free(array.as_ptr().cast());
                }
                return Err(e.into());
            }
        };
        let mut this = RustMallocTypes {
            buf,
            array,
            list: None,
            numbers: Vec::new(),
            _page: page,
        };

        // An overflowing array is an error, not a panic; the type counts it among its failures
        // (`mts_numfailures`, the Fails column of `/proc/malloc_types`).
        if M_SAMPLE_BUF
            .mallocarray(usize::MAX / 2, 4, GFP_KERNEL)
            .is_ok()
        {
            pr_err!("an overflowing array allocation succeeded\n");
            return Err(EINVAL);
        }

        for value in 0..10 {
            let next = this.list.take();
            this.list = Some(Box::new(Node { value, next }, GFP_KERNEL)?);
        }
        for n in [72, 108, 200] {
            this.numbers.push(n, GFP_KERNEL)?;
        }

        for _ in 0..module_parameters::leak.value().min(1000) {
            // Leaked on purpose: nothing frees these blocks.
            M_SAMPLE_LEAK.malloc(256, GFP_KERNEL)?;
        }

        for t in [
            &M_SAMPLE_BUF,
            &M_SAMPLE_NODE,
            &M_SAMPLE_LEAK,
            &M_SAMPLE_PAGES,
        ] {
            let s = t.stats();
            pr_info!(
                "type {:?}: {} in use, {} bytes in use, {} requests\n",
                t.name(),
                s.in_use(),
                s.mem_use(),
                s.numallocs
            );
        }
        Ok(this)
    }
}

impl Drop for RustMallocTypes {
    fn drop(&mut self) {
        let mut sum = 0;
        let mut node = self.list.take();
        while let Some(mut n) = node {
            sum += n.value;
            node = n.next.take();
        }
        // SAFETY: The blocks came from `M_SAMPLE_BUF` with these sizes and are freed once, here.
        unsafe {
            M_SAMPLE_BUF.free(self.buf.as_ptr().cast());
            M_SAMPLE_BUF.free(self.array.as_ptr().cast());
        }
        pr_info!(
            "Rust malloc types sample (exit), list sum {sum}, numbers {:?}\n",
            &self.numbers[..]
        );
    }
}
