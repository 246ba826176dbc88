// SPDX-License-Identifier: GPL-2.0

//! Typed allocation: the raw API of a malloc type and its [`Allocator`]s.
//!
//! - The raw API, FreeBSD's `malloc(9)` with a type: [`MallocType::malloc`],
//!   [`MallocType::zmalloc`], [`MallocType::mallocarray`], [`MallocType::realloc`] and
//!   [`MallocType::free`].
//! - [`TypedAlloc<M>`], kmalloc charging the type named by `M` (a [`MallocTypeTag`]), for
//!   [`Box`], [`Vec`], [`Arc`] and the other containers that take an allocator.
//! - [`TypedKVAlloc<M>`], the same with kmalloc falling back to vmalloc (`kvmalloc()`).
//!
//! Blocks of the raw API and of [`TypedAlloc`] come from the shared kmalloc caches for a type in
//! zone 0 and from the type's zone's set of kmalloc buckets otherwise (`malloc_types.numzones=`);
//! [`TypedKVAlloc`] always uses `kvmalloc()`, whose kmalloc side is the shared caches. Every
//! block is freed with `kfree()` (or `kvfree()`) and accounted with what it consumes: its size
//! class ([`accounted_size`]), or its pages.
//!
//! C header: [`include/linux/slab.h`](srctree/include/linux/slab.h)
//!
//! [`Box`]: crate::alloc::Box
//! [`Vec`]: crate::alloc::Vec
//! [`Arc`]: crate::sync::Arc

use super::{
    accounted_size,
    page_rounded,
    size_class::{
        built_in_class,
        classes_at_run_time,
        kmalloc_slot,
        normal_cache, //
    },
    trace,
    vmalloc_shrink_moves,
    zindx,
    MallocType,
    KMALLOC_MAX_CACHE_SIZE,
    KMALLOC_MAX_SIZE, //
};
use crate::{
    alloc::{
        allocator::{
            KVmalloc,
            Kmalloc, //
        },
        flags::__GFP_ZERO,
        AllocError,
        Allocator,
        Flags,
        NumaNode, //
    },
    bindings,
    prelude::*, //
};
use core::{
    alloc::Layout,
    marker::PhantomData,
    ptr::{
        self,
        NonNull, //
    }, //
};

/// Whether the fast path may pick a cache of `kmalloc_caches[KMALLOC_NORMAL]` itself: not when
/// the kmalloc caches are partitioned by call site (`CONFIG_KMALLOC_PARTITION_*`), where only
/// `kmalloc()` knows the partition.
const FAST_PATH: bool = cfg!(not(any(
    CONFIG_KMALLOC_PARTITION_RANDOM,
    CONFIG_KMALLOC_PARTITION_TYPED
)));

impl MallocType {
    /// Allocates a new block for `layout` (padded, as [`Kmalloc::aligned_layout`] pads it)
    /// charged to the type, with the contract of [`Allocator::alloc`].
    ///
    /// The fast path, inlined into the caller, serves what `kmalloc()` serves from its normal
    /// caches (1 to [`KMALLOC_MAX_CACHE_SIZE`] bytes, an alignment of at most
    /// `ARCH_KMALLOC_MINALIGN`, no NUMA node, flags without `KMALLOC_NOT_NORMAL_BITS`) for a type
    /// in zone 0: the size class is found once, and gives the cache (so the slab allocator does
    /// not look it up again, as for a constant-size `kmalloc()`), the accounted size and the
    /// `mts_size` bit. A large kmalloc (above [`KMALLOC_MAX_CACHE_SIZE`], no node) goes straight
    /// to the page allocator's kmalloc, charged its pages. Everything else takes the general
    /// path, [`MallocType::realloc_layout`]: so do kmalloc requests when the kernel's kmalloc
    /// caches are not the ones it was built for (the small ones aliased for DMA alignment), so
    /// that the fast path has the size class as constants.
    #[inline(always)]
    pub(crate) fn alloc_new(
        &self,
        layout: Layout,
        flags: Flags,
        nid: NumaNode,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // While failure injection or memguard has a type selected, an allocation of a selected
        // type takes the general path, which asks whether it is to fail or to be guarded; other
        // types pay the test of their bits.
        if (cfg!(CONFIG_FAIL_MALLOC_TYPE) || cfg!(CONFIG_MALLOC_TYPE_MEMGUARD))
            && trace::debug_events()
            && trace::debug_selected(self)
        {
            return self.alloc_slow(layout, flags, nid);
        }
        let size = layout.size();
        if FAST_PATH
            && size.wrapping_sub(1) < KMALLOC_MAX_CACHE_SIZE
            && !classes_at_run_time()
            && layout.align() <= bindings::ARCH_KMALLOC_MINALIGN
            && nid.as_raw() == bindings::NUMA_NO_NODE
            && flags.as_raw() & bindings::MALLOC_TYPE_KMALLOC_NOT_NORMAL_BITS == 0
            && self.zone() == 0
        {
            let slot = kmalloc_slot(size);
            let class = built_in_class(slot);
            // SAFETY: `kmalloc_slot()` of a size from 1 to `KMALLOC_MAX_CACHE_SIZE` is within a
            // `kmem_buckets`.
            let s = unsafe { normal_cache(slot) };
            // SAFETY: `s` is the normal kmalloc cache of `size`'s size class, which is what
            // `kmalloc(size, flags)` allocates from for these flags; any flags are accepted.
            let p = unsafe { bindings::malloc_type_kmalloc_cache(s, flags.as_raw(), size) };
            let p = NonNull::new(p.cast::<u8>()).ok_or_else(|| self.account_failure())?;
            self.account_alloc_class(class.size, class.zindx, class.bit);
            return Ok(NonNull::slice_from_raw_parts(p, size));
        }
        // A large kmalloc (pages from the page allocator, whatever the zone and the kind of
        // cache the flags ask for, as `kmalloc()` serves it), charged its pages with no size
        // class: what `realloc_layout()` charges, without its checks and lookups.
        if FAST_PATH
            && size > KMALLOC_MAX_CACHE_SIZE
            && size <= KMALLOC_MAX_SIZE
            && layout.align() <= bindings::ARCH_KMALLOC_MINALIGN
            && nid.as_raw() == bindings::NUMA_NO_NODE
        {
            // SAFETY: `__kmalloc_large_noprof()` accepts any size and flags.
            let p = unsafe { bindings::malloc_type_kmalloc_large(size, flags.as_raw()) };
            let p = NonNull::new(p.cast::<u8>()).ok_or_else(|| self.account_failure())?;
            // `PAGE_SIZE << get_order(size)`: `size` is above a page.
            self.account_alloc_class(size.next_power_of_two(), -1, 0);
            return Ok(NonNull::slice_from_raw_parts(p, size));
        }
        self.alloc_slow(layout, flags, nid)
    }

    /// Returns whether an allocation of `size` bytes with `flags` is to fail by failure
    /// injection (`CONFIG_FAIL_MALLOC_TYPE`, `mm/malloc_type_fail.c`): never while no type is
    /// selected (a jump label), and then only for a selected type. The caller counts the
    /// failure.
    ///
    /// # Context
    ///
    /// Any context.
    #[inline(always)]
    pub(super) fn fail_injected(&self, size: usize, flags: Flags) -> bool {
        cfg!(CONFIG_FAIL_MALLOC_TYPE)
            && trace::debug_events()
            && trace::fail_selected(self)
            && self.should_fail(size, flags)
    }

    /// [`MallocType::fail_injected`] once a type is selected: asks `malloc_type_should_fail()`.
    #[cfg(CONFIG_FAIL_MALLOC_TYPE)]
    #[cold]
    #[inline(never)]
    fn should_fail(&self, size: usize, flags: Flags) -> bool {
        // SAFETY: `self.as_raw()` is a valid type; any size and flags are accepted.
        unsafe { bindings::malloc_type_should_fail(self.as_raw(), size, flags.as_raw()) }
    }

    /// [`MallocType::fail_injected`] without failure injection: nothing fails.
    #[cfg(not(CONFIG_FAIL_MALLOC_TYPE))]
    #[inline(always)]
    fn should_fail(&self, _size: usize, _flags: Flags) -> bool {
        false
    }

    /// [`MallocType::alloc_new`] outside the fast path: [`MallocType::realloc_layout`].
    #[cold]
    #[inline(never)]
    fn alloc_slow(
        &self,
        layout: Layout,
        flags: Flags,
        nid: NumaNode,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: `None` asks for a new allocation.
        unsafe { self.realloc_layout(None, layout, layout, flags, nid) }
    }

    /// Frees `ptr`, a block of `layout` of the type's kmalloc allocators, and accounts the size
    /// class it consumed, with the contract of [`Allocator::free`].
    ///
    /// # Safety
    ///
    /// `ptr` is a live allocation of `layout` of [`TypedAlloc`] for this type (or of
    /// [`Kmalloc`] for the type that hooks it), not used again.
    #[inline(always)]
    pub(crate) unsafe fn free_layout(&self, ptr: NonNull<u8>, layout: Layout) {
        // A zero-sized layout has a dangling pointer, which may be above `ZERO_SIZE_PTR`.
        if layout.size() == 0 {
            return;
        }
        // The size class it was charged, from the layout as the allocation took it (a constant
        // for a `Box<T>`), rather than from the size the free returns.
        let class = zindx(Kmalloc::aligned_layout(layout).size());
        // SAFETY: `ptr` is a live allocation of `TypedAlloc`, not used again (safety
        // requirements).
        unsafe { self.free_accounted(ptr.as_ptr(), false, Some(class)) };
    }

    /// Frees the block at `p` and accounts the size it was charged, with size class `class`
    /// (that of the size when `None`); nothing for null and `ZERO_SIZE_PTR` when `maybe_none`
    /// (the caller may pass them). A guarded block is freed out of line, so that the path of the
    /// others keeps no more registers than without memguard.
    ///
    /// # Safety
    ///
    /// As for [`free_block`]; when `maybe_none` is false, `p` is a live block.
    #[inline(always)]
    unsafe fn free_accounted(&self, p: *mut u8, maybe_none: bool, class: Option<i32>) {
        #[cfg(CONFIG_MALLOC_TYPE_MEMGUARD)]
        if trace::guarded_blocks() && in_arena(p) {
            // SAFETY: By the safety requirements.
            return unsafe { self.free_guarded_accounted(p) };
        }
        // SAFETY: `p` is null, `ZERO_SIZE_PTR` or a live block of the type's allocators
        // outside memguard's arena, hence a kmalloc block; it is not used again (safety
        // requirements).
        let size = unsafe { bindings::kfree_size(p.cast()) };
        if !maybe_none || size != 0 {
            self.account_free(size, class.unwrap_or_else(|| zindx(size)));
        }
    }

    /// [`MallocType::free_accounted`] of a block in memguard's arena.
    ///
    /// # Safety
    ///
    /// As for [`free_block`].
    #[cfg(CONFIG_MALLOC_TYPE_MEMGUARD)]
    #[cold]
    #[inline(never)]
    unsafe fn free_guarded_accounted(&self, p: *mut u8) {
        // SAFETY: By the safety requirements.
        let size = unsafe { free_block(p) };
        if size != 0 {
            self.account_free(size, zindx(size));
        }
    }

    /// Allocates a new block for `layout` (padded): from the type's zone when `zoned`, else
    /// with `Kmalloc`.
    ///
    /// # Safety
    ///
    /// When `zoned`, `layout.align()` is at most `ARCH_KMALLOC_MINALIGN`.
    unsafe fn alloc_block(
        &self,
        zoned: bool,
        layout: Layout,
        flags: Flags,
        nid: NumaNode,
    ) -> Result<NonNull<u8>, AllocError> {
        if let Some(p) = self.memguard_alloc(layout, flags) {
            return Ok(p);
        }
        if zoned {
            // SAFETY: `self.as_raw()` is a valid type; any size, flags and node are accepted.
            let n = unsafe {
                bindings::malloc_type_zone_alloc(
                    self.as_raw(),
                    layout.size(),
                    flags.as_raw(),
                    nid.as_raw(),
                )
            };
            // Every kmalloc block is aligned to `ARCH_KMALLOC_MINALIGN` (safety requirements).
            NonNull::new(n.cast::<u8>()).ok_or(AllocError)
        } else {
            // SAFETY: `None` asks for a new allocation.
            let n = unsafe {
                Kmalloc::realloc_unaccounted(None, layout, Layout::new::<()>(), flags, nid)
            }?;
            Ok(n.cast())
        }
    }

    /// A block that memguard guards (`CONFIG_MALLOC_TYPE_MEMGUARD`, `mm/malloc_type_memguard.c`)
    /// when the type is selected and memguard takes the request; `None` otherwise, without
    /// memguard at no cost but a no-op while no type is selected.
    #[inline(always)]
    fn memguard_alloc(&self, layout: Layout, flags: Flags) -> Option<NonNull<u8>> {
        #[cfg(CONFIG_MALLOC_TYPE_MEMGUARD)]
        if trace::debug_events() && trace::memguard_selected(self) {
            return self.memguard_alloc_slow(layout, flags);
        }
        let _ = (layout, flags);
        None
    }

    /// [`MallocType::memguard_alloc`] once a type is selected: asks memguard.
    #[cfg(CONFIG_MALLOC_TYPE_MEMGUARD)]
    #[cold]
    #[inline(never)]
    fn memguard_alloc_slow(&self, layout: Layout, flags: Flags) -> Option<NonNull<u8>> {
        // SAFETY: `self.as_raw()` is a valid type; any size, alignment and flags are accepted.
        let p = unsafe {
            bindings::malloc_type_memguard_alloc(
                self.as_raw(),
                layout.size(),
                layout.align(),
                flags.as_raw(),
                accounted_size(layout.size()),
            )
        };
        NonNull::new(p.cast())
    }

    /// Copies the first `len` bytes of the kmalloc block `from` to `to`, and frees `from`.
    ///
    /// `len` may reach past the size `from` was requested with, up to its size class (a resize
    /// of the raw API knows only that): the copy is `malloc_type_block_copy()`, which reads the
    /// slack as `krealloc()` does.
    ///
    /// # Safety
    ///
    /// `from` is a live kmalloc allocation of a size class of at least `len` bytes, not used
    /// again; `to` is valid for writes of `len` bytes and distinct from `from`.
    unsafe fn move_block(from: NonNull<u8>, to: NonNull<u8>, len: usize) {
        // SAFETY: `from` is a kmalloc block of a size class of at least `len` bytes, `to` is
        // valid for `len` bytes and distinct from it (safety requirements).
        unsafe { bindings::malloc_type_block_copy(to.as_ptr().cast(), from.as_ptr().cast(), len) };
        // SAFETY: `from` is a live block, not used again (safety requirements).
        unsafe { free_block(from.as_ptr()) };
    }

    /// The allocator behind every typed allocation, with the contract of
    /// [`Allocator::realloc`].
    ///
    /// Types in zone 0, and requests aligned to more than `ARCH_KMALLOC_MINALIGN`, allocate with
    /// `Kmalloc`; other types from their zone's buckets. A resize within the size class keeps the
    /// block (`krealloc()`); a resize to another size class moves the contents to a new block.
    ///
    /// # Safety
    ///
    /// As for [`Allocator::realloc`], with "this allocator" meaning the kmalloc allocations of
    /// `self`: those of the raw API ([`MallocType::malloc`] and the others) and of
    /// [`TypedAlloc`] for this type (or of [`Kmalloc`] for the type that hooks it), never those
    /// of [`TypedKVAlloc`], which may come from vmalloc.
    pub(crate) unsafe fn realloc_layout(
        &self,
        ptr: Option<NonNull<u8>>,
        layout: Layout,
        old_layout: Layout,
        flags: Flags,
        nid: NumaNode,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: The caller's safety requirements are the same.
        unsafe { self.realloc_layout_uncounted(ptr, layout, old_layout, flags, nid) }
            .map_err(|_| self.account_failure())
    }

    /// [`MallocType::realloc_layout`] but for the count of failures.
    ///
    /// # Safety
    ///
    /// As for [`MallocType::realloc_layout`].
    unsafe fn realloc_layout_uncounted(
        &self,
        ptr: Option<NonNull<u8>>,
        layout: Layout,
        old_layout: Layout,
        flags: Flags,
        nid: NumaNode,
    ) -> Result<NonNull<[u8]>, AllocError> {
        let layout = Kmalloc::aligned_layout(layout);
        let new_size = layout.size();
        let (ptr, old_size) = match ptr {
            Some(p) if old_layout.size() != 0 => {
                (Some(p), Kmalloc::aligned_layout(old_layout).size())
            }
            _ => (None, 0),
        };

        if new_size == 0 {
            if let Some(p) = ptr {
                // SAFETY: `p` is a live allocation of this type (safety requirements).
                unsafe { free_block(p.as_ptr()) };
                self.account_free(accounted_size(old_size), zindx(old_size));
            }
            return Ok(NonNull::slice_from_raw_parts(
                crate::alloc::dangling_from_layout(layout),
                0,
            ));
        }
        if new_size > KMALLOC_MAX_SIZE {
            return Err(AllocError);
        }

        // Types outside zone 0 allocate from their zone's buckets (over-aligned requests from
        // the shared caches, which align every block to its size).
        let zoned = self.zone() != 0 && layout.align() <= bindings::ARCH_KMALLOC_MINALIGN;
        let (old_class, new_class) = (accounted_size(old_size), accounted_size(new_size));
        // A new block, unless the resize keeps the size class (and the block).
        if (ptr.is_none() || new_class != old_class) && self.fail_injected(new_size, flags) {
            return Err(AllocError);
        }
        let new = match ptr {
            // Another size class: a new block, into which the contents move. For a shrink,
            // `krealloc()` would keep an object that fits, which would leave the block consuming
            // more than the type is charged; moving gives the memory back. For growth in a zone
            // other than 0, `krealloc()` would allocate from the shared caches.
            // A block that memguard guards ends where its guard page starts: any resize moves.
            Some(p)
                if new_class < old_class
                    || (zoned && new_class > old_class)
                    || is_guarded(p.as_ptr()) =>
            {
                // SAFETY: `zoned` implies an alignment of at most `ARCH_KMALLOC_MINALIGN`.
                let n = unsafe { self.alloc_block(zoned, layout, flags, nid) }?;
                // SAFETY: `p` is a live kmalloc allocation valid for `old_size` bytes (safety
                // requirements), not used again; `n` is a new one valid for `new_size` bytes.
                unsafe { Self::move_block(p, n, old_size.min(new_size)) };
                n
            }
            // SAFETY: As above.
            None => unsafe { self.alloc_block(zoned, layout, flags, nid) }?,
            // The same size class, or a larger one outside a zone: `krealloc()` keeps the object
            // when it fits, which is what the block consumed, and tells KASAN and the slab
            // allocator its new size; it moves the block otherwise.
            Some(p) => {
                // SAFETY: `ptr` is a live kmalloc allocation of `old_layout` (safety
                // requirements), from the shared caches or a zone's buckets, which `Kmalloc` may
                // resize.
                let r =
                    unsafe { Kmalloc::realloc_unaccounted(ptr, layout, old_layout, flags, nid) }?
                        .cast::<u8>();
                // `krealloc()` moves even within the size class in a few cases (a KFENCE object,
                // a `__GFP_THISNODE` request for another node), always to the shared caches:
                // bring the block back to the type's zone when memory allows (it is charged the
                // same either way).
                if zoned && r != p {
                    // SAFETY: `zoned` implies an alignment of at most `ARCH_KMALLOC_MINALIGN`.
                    match unsafe { self.alloc_block(zoned, layout, flags, nid) } {
                        Ok(n) => {
                            // SAFETY: `r` is the kmalloc allocation `krealloc()` returned, valid
                            // for `new_size` bytes and not used again; `n` is a new one of the
                            // same size.
                            unsafe { Self::move_block(r, n, new_size) };
                            n
                        }
                        Err(_) => r,
                    }
                } else {
                    r
                }
            }
        };

        // The new block is charged before the old one is charged back, so that the type's
        // counters never sum to nothing in use while a block of it moves: the registry keeps a
        // type whose blocks carry records until they do (`malloc_type_keep()`), and
        // `krealloc_mt()` may move the record of a type whose module has unloaded.
        self.account_alloc(new_class, zindx(new_size));
        if ptr.is_some() {
            self.account_free(old_class, zindx(old_size));
        }
        Ok(NonNull::slice_from_raw_parts(new, new_size))
    }

    /// Allocates `size` bytes charged to the type (`malloc(size, type, flags)`).
    ///
    /// The memory is aligned to `ARCH_KMALLOC_MINALIGN` and must be freed with
    /// [`MallocType::free`] of the same type. A zero-byte request allocates nothing and returns
    /// a dangling pointer, which [`MallocType::free`] and [`MallocType::realloc`] take as null.
    ///
    /// # Context
    ///
    /// Any context that `flags` allow: process context, may sleep, with `GFP_KERNEL`; any
    /// context with `GFP_NOWAIT` or `GFP_ATOMIC`.
    ///
    /// # Errors
    ///
    /// [`AllocError`] when the memory cannot be allocated or `size` exceeds
    /// [`KMALLOC_MAX_SIZE`]; only the type's count of failures (`mts_numfailures`) changes
    /// then.
    ///
    /// # Examples
    ///
    /// ```
    /// kernel::malloc_define!(M_MALLOC_DOC, "malloc doc", "malloc() example");
    ///
    /// let p = M_MALLOC_DOC.malloc(9, GFP_KERNEL)?;
    /// assert_eq!(p.len(), 9);
    /// assert_eq!(M_MALLOC_DOC.stats().memalloced, 16);
    /// // SAFETY: `p` came from `M_MALLOC_DOC.malloc(9, ..)` and is not used again.
    /// unsafe { M_MALLOC_DOC.free(p.as_ptr().cast()) };
    /// assert!(M_MALLOC_DOC.malloc(usize::MAX, GFP_KERNEL).is_err());
    /// assert_eq!(M_MALLOC_DOC.stats().numallocs, 1);
    /// assert_eq!(M_MALLOC_DOC.stats().numfailures, 1);
    /// # Ok::<(), Error>(())
    /// ```
    #[inline]
    pub fn malloc(&self, size: usize, flags: Flags) -> Result<NonNull<[u8]>, AllocError> {
        let layout = Layout::from_size_align(size, 1).map_err(|_| self.account_failure())?;
        self.alloc_new(layout, flags, NumaNode::NO_NODE)
    }

    /// Allocates `size` zeroed bytes charged to the type (`malloc(.., M_ZERO)`).
    ///
    /// # Context
    ///
    /// Any context that `flags` allow: process context, may sleep, with `GFP_KERNEL`; any
    /// context with `GFP_NOWAIT` or `GFP_ATOMIC`.
    ///
    /// # Errors
    ///
    /// As [`MallocType::malloc`].
    ///
    /// # Examples
    ///
    /// ```
    /// kernel::malloc_define!(M_ZMALLOC_DOC, "zmalloc doc", "zmalloc() example");
    ///
    /// let p = M_ZMALLOC_DOC.zmalloc(32, GFP_KERNEL)?;
    /// // SAFETY: `p` is valid for reads of 32 bytes.
    /// assert!(unsafe { p.as_ref() }.iter().all(|&b| b == 0));
    /// // SAFETY: `p` came from `M_ZMALLOC_DOC` with 32 bytes and is not used again.
    /// unsafe { M_ZMALLOC_DOC.free(p.as_ptr().cast()) };
    /// # Ok::<(), Error>(())
    /// ```
    pub fn zmalloc(&self, size: usize, flags: Flags) -> Result<NonNull<[u8]>, AllocError> {
        self.malloc(size, flags | __GFP_ZERO)
    }

    /// Allocates an array of `n` elements of `size` bytes (`mallocarray`).
    ///
    /// # Context
    ///
    /// Any context that `flags` allow: process context, may sleep, with `GFP_KERNEL`; any
    /// context with `GFP_NOWAIT` or `GFP_ATOMIC`.
    ///
    /// # Errors
    ///
    /// [`EOVERFLOW`] when `n * size` overflows, [`ENOMEM`] when the memory cannot be allocated;
    /// only the type's count of failures changes then.
    ///
    /// # Examples
    ///
    /// ```
    /// kernel::malloc_define!(M_ARRAY_DOC, "array doc", "mallocarray() example");
    ///
    /// assert_eq!(M_ARRAY_DOC.mallocarray(usize::MAX, 2, GFP_KERNEL).err(), Some(EOVERFLOW));
    /// let p = M_ARRAY_DOC.mallocarray(4, 8, GFP_KERNEL)?;
    /// assert_eq!(p.len(), 32);
    /// // SAFETY: `p` came from `M_ARRAY_DOC` with 32 bytes and is not used again.
    /// unsafe { M_ARRAY_DOC.free(p.as_ptr().cast()) };
    /// # Ok::<(), Error>(())
    /// ```
    pub fn mallocarray(&self, n: usize, size: usize, flags: Flags) -> Result<NonNull<[u8]>> {
        // OVERFLOW: Checked; an overflow is an error, not a panic as in FreeBSD.
        let bytes = n.checked_mul(size).ok_or_else(|| {
            self.account_failure();
            EOVERFLOW
        })?;
        Ok(self.malloc(bytes, flags)?)
    }

    /// Resizes `ptr` to `new_size` bytes (`realloc`).
    ///
    /// A null (or dangling, zero-byte) `ptr` allocates; a `new_size` of 0 frees and returns a
    /// dangling pointer. The contents are kept up to the smaller size. No old size is passed:
    /// the block tells the size class it was charged (`malloc_type_block_size()`). The change is
    /// accounted as a free of the old block and an allocation of the new one, even when the
    /// block is resized in place; a resize to another size class moves the block.
    ///
    /// # Context
    ///
    /// Any context that `flags` allow: process context, may sleep, with `GFP_KERNEL`; any
    /// context with `GFP_NOWAIT` or `GFP_ATOMIC`.
    ///
    /// # Errors
    ///
    /// [`AllocError`]; `ptr` is then still valid and only the type's count of failures changes.
    ///
    /// # Safety
    ///
    /// `ptr` is null, or was returned by [`MallocType::malloc`], [`MallocType::zmalloc`],
    /// [`MallocType::mallocarray`] or [`MallocType::realloc`] of this type and not freed since;
    /// on success it must not be used again. Memory of [`TypedAlloc`] and [`TypedKVAlloc`] is
    /// resized and freed by its container, not here (and `TypedKVAlloc`'s may be vmalloc memory,
    /// which this function cannot take); memory of the C functions `kmalloc_mt()` and friends
    /// carries a record of its type, which only they and `kfree()` take off.
    ///
    /// # Examples
    ///
    /// ```
    /// kernel::malloc_define!(M_REALLOC_DOC, "realloc doc", "realloc() example");
    ///
    /// let p = M_REALLOC_DOC.malloc(10, GFP_KERNEL)?;
    /// // SAFETY: `p` came from `M_REALLOC_DOC`.
    /// let p = unsafe { M_REALLOC_DOC.realloc(p.as_ptr().cast(), 100, GFP_KERNEL)? };
    /// assert_eq!(M_REALLOC_DOC.stats().mem_use(), 128);
    /// // SAFETY: `p` came from `M_REALLOC_DOC` and is not used again.
    /// unsafe { M_REALLOC_DOC.free(p.as_ptr().cast()) };
    /// # Ok::<(), Error>(())
    /// ```
    pub unsafe fn realloc(
        &self,
        ptr: *mut u8,
        new_size: usize,
        flags: Flags,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: By the safety requirements `ptr` is null, dangling or a live allocation of
        // the raw API of this type.
        unsafe { self.realloc_node(ptr, new_size, flags, NumaNode::NO_NODE) }
    }

    /// [`MallocType::realloc`] on NUMA node `nid`, for the C entry point `krealloc_mt()`.
    ///
    /// # Safety
    ///
    /// As for [`MallocType::realloc`].
    pub(crate) unsafe fn realloc_node(
        &self,
        ptr: *mut u8,
        new_size: usize,
        flags: Flags,
        nid: NumaNode,
    ) -> Result<NonNull<[u8]>, AllocError> {
        let layout = Layout::from_size_align(new_size, 1).map_err(|_| self.account_failure())?;
        let old = if zero_or_null(ptr) {
            0
        } else {
            // SAFETY: `ptr` is a live kmalloc allocation of the raw API (safety requirements).
            unsafe { bindings::malloc_type_block_size(ptr.cast()) }
        };
        // Its size class: what it was charged, and what `move_block()` may copy from it.
        let old_layout = Layout::from_size_align(old, 1).map_err(|_| self.account_failure())?;
        let ptr = if old == 0 { None } else { NonNull::new(ptr) };
        // SAFETY: By the safety requirements `ptr` is `None` or a live allocation of the raw API
        // of this type, a kmalloc block of size class `old_layout.size()`.
        unsafe { self.realloc_layout(ptr, layout, old_layout, flags, nid) }
    }

    /// Frees `ptr` (`free(ptr, type)`); null, and the dangling pointer of a zero-byte
    /// allocation, are a no-op.
    ///
    /// No size is passed, as FreeBSD's `free(9)` takes none: the block tells the size class it
    /// was charged (`kfree_size()`, from the lookup `kfree()` does anyway), so a wrong size
    /// cannot corrupt the counters.
    ///
    /// # Context
    ///
    /// Any context (as `kfree()`).
    ///
    /// # Safety
    ///
    /// `ptr` is null, or was returned by [`MallocType::malloc`], [`MallocType::zmalloc`],
    /// [`MallocType::mallocarray`] or [`MallocType::realloc`] of this type and not freed since,
    /// and is not used again. Memory of [`TypedAlloc`] and [`TypedKVAlloc`] is freed by its
    /// container, not here (and `TypedKVAlloc`'s may be vmalloc memory, which `kfree()` cannot
    /// take); memory of the C functions `kmalloc_mt()` and friends carries a record of its type,
    /// which `kfree_mt()` or `kfree()` charges back.
    ///
    /// # Examples
    ///
    /// ```
    /// kernel::malloc_define!(M_FREE_DOC, "free doc", "free() example");
    ///
    /// // SAFETY: Freeing null is a no-op.
    /// unsafe { M_FREE_DOC.free(core::ptr::null_mut()) };
    /// let p = M_FREE_DOC.malloc(0, GFP_KERNEL)?;
    /// // SAFETY: A zero-byte allocation is freed as null.
    /// unsafe { M_FREE_DOC.free(p.as_ptr().cast()) };
    /// assert_eq!(M_FREE_DOC.stats().numfrees, 0);
    /// # Ok::<(), Error>(())
    /// ```
    #[inline(always)]
    pub unsafe fn free(&self, ptr: *mut u8) {
        // SAFETY: By the safety requirements `ptr` is null, `ZERO_SIZE_PTR` or below (a
        // zero-byte allocation), or a live allocation of the raw API of this type: a kmalloc
        // block (the shared caches, its zone's buckets, or a large kmalloc) or a guarded one,
        // not used again.
        unsafe { self.free_accounted(ptr, true, None) };
    }

    /// Resizes `ptr` to `new_size` bytes as [`MallocType::realloc`] does, and frees `ptr` when
    /// that fails (`reallocf`): FreeBSD's answer to `p = realloc(p, n)`, which loses the block
    /// when the resize fails.
    ///
    /// # Context
    ///
    /// As for [`MallocType::realloc`].
    ///
    /// # Errors
    ///
    /// [`AllocError`]: the failure is counted, and `ptr` is freed (a free of the type).
    ///
    /// # Safety
    ///
    /// As for [`MallocType::realloc`]; `ptr` must not be used again, whether the call succeeds
    /// or fails.
    ///
    /// # Examples
    ///
    /// ```
    /// kernel::malloc_define!(M_REALLOCF_DOC, "reallocf doc", "reallocf() example");
    ///
    /// let p = M_REALLOCF_DOC.malloc(10, GFP_KERNEL)?;
    /// // SAFETY: `p` came from `M_REALLOCF_DOC`; it is not used again.
    /// let p = unsafe { M_REALLOCF_DOC.reallocf(p.as_ptr().cast(), 100, GFP_KERNEL)? };
    /// // A size no allocation can have: the resize fails, and the block is freed.
    /// // SAFETY: `p` came from `M_REALLOCF_DOC`; it is not used again.
    /// let r = unsafe { M_REALLOCF_DOC.reallocf(p.as_ptr().cast(), usize::MAX, GFP_KERNEL) };
    /// assert!(r.is_err());
    /// let s = M_REALLOCF_DOC.stats();
    /// assert_eq!((s.numallocs, s.numfrees, s.numfailures), (2, 2, 1));
    /// assert_eq!(s.mem_use(), 0);
    /// # Ok::<(), Error>(())
    /// ```
    pub unsafe fn reallocf(
        &self,
        ptr: *mut u8,
        new_size: usize,
        flags: Flags,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: By the safety requirements `ptr` is null, dangling or a live allocation of
        // the raw API of this type.
        let r = unsafe { self.realloc(ptr, new_size, flags) };
        if r.is_err() {
            // SAFETY: The failed resize left `ptr` as it was: null, dangling or a live
            // allocation of the raw API of this type, not used again (safety requirements).
            unsafe { self.free(ptr) };
        }
        r
    }

    /// Zeroes the whole block `ptr` consumed (its size class, or the pages of a large kmalloc,
    /// not the size requested), then frees it (`zfree(ptr, type)`): for blocks that held keys,
    /// credentials or other secrets. `kfree_sensitive()` charged to the type; null and the
    /// dangling pointer of a zero-byte allocation are a no-op.
    ///
    /// # Context
    ///
    /// Any context (as `kfree_sensitive()`).
    ///
    /// # Safety
    ///
    /// As for [`MallocType::free`].
    ///
    /// # Examples
    ///
    /// ```
    /// kernel::malloc_define!(M_ZFREE_DOC, "zfree doc", "zfree() example");
    ///
    /// let p = M_ZFREE_DOC.malloc(20, GFP_KERNEL)?;
    /// // SAFETY: `p` is valid for writes of 20 bytes.
    /// unsafe { p.as_ptr().cast::<u8>().write_bytes(0x5a, 20) };
    /// // SAFETY: `p` came from `M_ZFREE_DOC` and is not used again.
    /// unsafe { M_ZFREE_DOC.zfree(p.as_ptr().cast()) };
    /// let s = M_ZFREE_DOC.stats();
    /// assert_eq!((s.numallocs, s.numfrees, s.memfreed), (1, 1, 32));
    /// # Ok::<(), Error>(())
    /// ```
    pub unsafe fn zfree(&self, ptr: *mut u8) {
        if zero_or_null(ptr) {
            return;
        }
        if let Some(usable) = guarded_usable(ptr) {
            // SAFETY: `ptr` is a live guarded block, valid for its `usable` bytes up to its
            // guard page; it is freed and not used again.
            let size = unsafe {
                ptr.write_bytes(0, usable);
                free_block(ptr)
            };
            self.account_free(size, zindx(size));
            return;
        }
        // SAFETY: `ptr` is a live block of the raw API of this type (safety requirements).
        let size = unsafe { bindings::malloc_type_block_size(ptr.cast()) };
        // SAFETY: As above, and it is not used again. `kfree_sensitive()` zeroes the bytes
        // `ksize()` reports (the whole object, or the pages of a large kmalloc) and frees it.
        unsafe { bindings::kfree_sensitive(ptr.cast()) };
        self.account_free(size, zindx(size));
    }

    /// [`KVmalloc`]'s allocator charging this type, with the contract of
    /// [`Allocator::realloc`]: kmalloc's accounting for the blocks kmalloc served and vmalloc's
    /// (page-rounded, zindx -1) for the others. A failed allocation counts a failure only; a
    /// successful resize counts as a free and an allocation.
    ///
    /// # Safety
    ///
    /// As for [`Allocator::realloc`] of [`KVmalloc`], with "this allocator" meaning
    /// `KVmalloc` allocations charged to `self`.
    pub(crate) unsafe fn kvrealloc_layout(
        &self,
        ptr: Option<NonNull<u8>>,
        layout: Layout,
        old_layout: Layout,
        flags: Flags,
        nid: NumaNode,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: The caller's safety requirements are the same.
        unsafe { self.kvrealloc_layout_uncounted(ptr, layout, old_layout, flags, nid) }
            .map_err(|_| self.account_failure())
    }

    /// [`MallocType::kvrealloc_layout`] but for the count of failures.
    ///
    /// # Safety
    ///
    /// As for [`MallocType::kvrealloc_layout`].
    unsafe fn kvrealloc_layout_uncounted(
        &self,
        ptr: Option<NonNull<u8>>,
        layout: Layout,
        old_layout: Layout,
        flags: Flags,
        nid: NumaNode,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // The kmalloc side aligns a block to its size's power of two only: pad the layout as
        // `KVmalloc` does, and account the padded sizes.
        let layout = Kmalloc::aligned_layout(layout);
        let old = match ptr {
            Some(p) if old_layout.size() != 0 => Some(kvmalloc_accounting(
                p,
                Kmalloc::aligned_layout(old_layout).size(),
            )),
            _ => None,
        };
        // A new allocation, or a resize, which may need one.
        if layout.size() != 0
            && (old.is_none() || layout.size() != Kmalloc::aligned_layout(old_layout).size())
            && self.fail_injected(layout.size(), flags)
        {
            return Err(AllocError);
        }
        let new = match (ptr, old) {
            // A shrink that would leave the block consuming more than its new accounting
            // (`krealloc()` keeps an object that fits; `vrealloc()` keeps the pages of some
            // shrinks, see `vmalloc_shrink_moves`): move the contents to a block of the new size
            // instead.
            (Some(p), Some((old_acc, _)))
                if layout.size() != 0
                    && kvmalloc_accounting(p, layout.size()).0 < old_acc
                    && (!is_vmalloc(p) || vmalloc_shrink_moves(flags)) =>
            {
                // SAFETY: `None` asks for a new allocation.
                let n = unsafe {
                    KVmalloc::realloc_unaccounted(None, layout, Layout::new::<()>(), flags, nid)
                }?;
                // SAFETY: `p` is valid for the old size, which is more than `layout.size()`, for
                // which `n` is valid; they are distinct allocations.
                unsafe {
                    ptr::copy_nonoverlapping(p.as_ptr(), n.cast::<u8>().as_ptr(), layout.size())
                };
                // SAFETY: `p` is a live allocation of `old_layout` (safety requirements), not
                // used again; a zero-sized layout frees it.
                let _ = unsafe {
                    KVmalloc::realloc_unaccounted(
                        Some(p),
                        Layout::new::<()>(),
                        old_layout,
                        flags,
                        nid,
                    )
                };
                n
            }
            // SAFETY: The caller's safety requirements are those of `realloc_unaccounted`.
            _ => unsafe { KVmalloc::realloc_unaccounted(ptr, layout, old_layout, flags, nid) }?,
        };
        // The new block first, as in `realloc_layout_uncounted`.
        if layout.size() != 0 {
            let (size, zindx) = kvmalloc_accounting(new.cast(), layout.size());
            self.account_alloc(size, zindx);
        }
        if let Some((size, zindx)) = old {
            self.account_free(size, zindx);
        }
        Ok(new)
    }
}

/// Returns the bytes of the typed block at `ptr` its owner may use: FreeBSD's
/// `malloc_usable_size(9)`, C's `malloc_usable_size()`.
///
/// That is the size the block was charged (its size class, pages, or vmalloc pages), except for
/// a KFENCE object, of which only the requested size is usable; so never more than the charge.
/// Null and the dangling pointer of a zero-byte allocation give 0.
///
/// Like `ksize()` it only reports: past the size the block was requested with, KASAN keeps the
/// bytes poisoned. To use them, resize the block to this size first
/// ([`MallocType::realloc`]), which keeps the block and what its type is charged.
///
/// # Safety
///
/// `ptr` is null, the dangling pointer of a zero-byte allocation, or a live block of the raw API
/// ([`MallocType::malloc`] and friends, or the C functions `kmalloc_mt()` and friends) of any
/// type.
///
/// # Examples
///
/// ```
/// use kernel::malloc_type::usable_size;
///
/// kernel::malloc_define!(M_USABLE_DOC, "usable doc", "usable_size() example");
///
/// let p = M_USABLE_DOC.malloc(100, GFP_KERNEL)?;
/// // SAFETY: `p` is a live block of the raw API.
/// let n = unsafe { usable_size(p.as_ptr().cast()) };
/// let charged = M_USABLE_DOC.stats().mem_use();
/// assert!(n >= 100 && i64::try_from(n)? <= charged);
/// // Resizing to the usable size keeps the block and the charge.
/// // SAFETY: `p` came from `M_USABLE_DOC` and is not used again.
/// let q = unsafe { M_USABLE_DOC.realloc(p.as_ptr().cast(), n, GFP_KERNEL)? };
/// assert_eq!(q.cast::<u8>(), p.cast::<u8>());
/// assert_eq!(M_USABLE_DOC.stats().mem_use(), charged);
/// // SAFETY: `q` came from `M_USABLE_DOC` and is not used again.
/// unsafe { M_USABLE_DOC.free(q.as_ptr().cast()) };
/// // SAFETY: Null is allowed.
/// assert_eq!(unsafe { usable_size(core::ptr::null()) }, 0);
/// # Ok::<(), Error>(())
/// ```
#[inline]
pub unsafe fn usable_size(ptr: *const u8) -> usize {
    if zero_or_null(ptr) {
        return 0;
    }
    // SAFETY: `ptr` is a live block of the raw API (safety requirements): kmalloc memory, or
    // vmalloc memory of the kvmalloc functions, which `malloc_usable_size()` takes.
    unsafe { bindings::malloc_usable_size(ptr.cast()) }
}

/// Frees the block at `p` of the kmalloc allocators of a type (or of memguard for a guarded
/// type) and returns the size it was charged: `kfree_size()`'s, or what memguard recorded; 0 for
/// null and `ZERO_SIZE_PTR`.
///
/// # Safety
///
/// `p` is null, `ZERO_SIZE_PTR`, or a live block of the raw API or of [`TypedAlloc`], not used
/// again.
#[inline(always)]
unsafe fn free_block(p: *mut u8) -> usize {
    // SAFETY: By the safety requirements.
    if let Some(size) = unsafe { free_guarded(p) } {
        return size;
    }
    // SAFETY: `p` is null, `ZERO_SIZE_PTR` or a live kmalloc block (safety requirements), not
    // used again.
    unsafe { bindings::kfree_size(p.cast()) }
}

/// Frees the block at `p` when memguard guards it, and returns the size it was charged; `None`
/// for any other block, which it leaves alone. Without memguard, or before its first selection,
/// a no-op.
///
/// # Safety
///
/// `p` is null, `ZERO_SIZE_PTR`, or a live block of a type's allocators, not used again if it
/// is a guarded one.
#[inline(always)]
pub(super) unsafe fn free_guarded(p: *const u8) -> Option<usize> {
    #[cfg(CONFIG_MALLOC_TYPE_MEMGUARD)]
    if trace::guarded_blocks() && in_arena(p) {
        // SAFETY: By the safety requirements.
        return unsafe { free_guarded_slow(p) };
    }
    let _ = p;
    None
}

/// [`free_guarded`] once memguard may hold blocks: asks it.
///
/// # Safety
///
/// As for [`free_guarded`].
#[cfg(CONFIG_MALLOC_TYPE_MEMGUARD)]
#[cold]
#[inline(never)]
unsafe fn free_guarded_slow(p: *const u8) -> Option<usize> {
    let mut size = 0;
    // SAFETY: Any address is accepted; a guarded block is freed, and not used again (safety
    // requirements).
    unsafe { bindings::malloc_type_memguard_free(p.cast(), &mut size) }.then_some(size)
}

/// Returns the usable size of the block at `p` when memguard guards it (its requested size: it
/// ends where its guard page starts); `None` for any other block.
#[inline(always)]
fn guarded_usable(p: *const u8) -> Option<usize> {
    #[cfg(CONFIG_MALLOC_TYPE_MEMGUARD)]
    if trace::guarded_blocks() && in_arena(p) {
        // SAFETY: Any address is accepted.
        let n = unsafe { bindings::malloc_type_memguard_block(p.cast(), ptr::null_mut()) };
        return (n != 0).then_some(n);
    }
    let _ = p;
    None
}

/// Returns whether memguard guards the block at `p`.
#[inline(always)]
fn is_guarded(p: *const u8) -> bool {
    guarded_usable(p).is_some()
}

/// Returns whether `p` is in memguard's arena (`malloc_type_memguard_arena`): where every guarded
/// block is, so that other blocks are told apart without a call.
#[cfg(CONFIG_MALLOC_TYPE_MEMGUARD)]
#[inline(always)]
fn in_arena(p: *const u8) -> bool {
    use crate::sync::atomic::{
        atomic_load,
        Relaxed, //
    };

    // SAFETY: `malloc_type_memguard_arena` is a static defined by C (`mm/malloc_type_memguard.c`)
    // whose fields are valid, aligned words, written once at boot with `WRITE_ONCE()`.
    // ORDERING: Relaxed, `READ_ONCE()`: a guarded block's pointer reaches its freer after the
    // arena was set up, through the ordering that hands the block over.
    let (start, size) = unsafe {
        let arena = ptr::addr_of_mut!(bindings::malloc_type_memguard_arena);
        (
            atomic_load(ptr::addr_of_mut!((*arena).start), Relaxed),
            atomic_load(ptr::addr_of_mut!((*arena).size), Relaxed),
        )
    };
    (p as usize).wrapping_sub(start) < size
}

/// Returns whether vmalloc served the block at `p`.
fn is_vmalloc(p: NonNull<u8>) -> bool {
    // SAFETY: `is_vmalloc_addr()` only compares the address with the vmalloc range.
    unsafe { bindings::is_vmalloc_addr(p.as_ptr().cast()) }
}

/// The accounted size and zindx of a block of `size` bytes of [`KVmalloc`] at `p`: kmalloc's
/// when kmalloc served it, vmalloc's otherwise.
fn kvmalloc_accounting(p: NonNull<u8>, size: usize) -> (usize, i32) {
    if is_vmalloc(p) {
        (page_rounded(size), -1)
    } else {
        (accounted_size(size), zindx(size))
    }
}

/// Returns whether `p` is null or `ZERO_SIZE_PTR` and below (C's `ZERO_OR_NULL_PTR()`): no
/// block. The dangling pointers of zero-byte allocations with an alignment of at most 16 are
/// among them.
#[inline]
pub(crate) fn zero_or_null<T>(p: *const T) -> bool {
    p.addr() <= 16
}

/// Names a [`MallocType`] at the type level, so that an [`Allocator`] can charge it.
///
/// [`malloc_define!`](crate::malloc_define) implements it for a type of the same name as the
/// static.
pub trait MallocTypeTag {
    /// Returns the malloc type.
    fn get() -> &'static MallocType;
}

/// An [`Allocator`] that charges every allocation to the malloc type named by `M`.
///
/// # Examples
///
/// ```
/// use kernel::alloc::{Box, Vec};
/// use kernel::malloc_type::TypedAlloc;
///
/// kernel::malloc_define!(M_BOXED, "boxed", "Boxes and vectors");
///
/// let b = Box::<[u8; 100], TypedAlloc<M_BOXED>>::new([0; 100], GFP_KERNEL)?;
/// assert_eq!(M_BOXED.stats().mem_use(), 128);
/// drop(b);
///
/// let mut v = Vec::<u64, TypedAlloc<M_BOXED>>::new();
/// for i in 0..10 {
///     v.push(i, GFP_KERNEL)?;
/// }
/// assert_eq!(M_BOXED.stats().in_use(), 1);
/// drop(v);
/// assert_eq!(M_BOXED.stats().in_use(), 0);
/// assert_eq!(M_BOXED.stats().mem_use(), 0);
/// # Ok::<(), Error>(())
/// ```
pub struct TypedAlloc<M: MallocTypeTag>(PhantomData<M>);

// SAFETY: `realloc` delegates to `MallocType::realloc_layout`, which allocates with kmalloc
// (directly or through a zone's buckets) and resizes and frees any of these allocations, `alloc`
// to `MallocType::alloc_new`, which allocates as `realloc_layout` or from the kmalloc cache that
// `kmalloc()` would pick, and `free` to `MallocType::free_layout`, which frees with `kfree()`, so
// - memory remains valid until it is freed,
// - any pointer it returned may be passed to it again,
// - it has the guarantees of `Allocator::realloc` (contents kept up to the smaller size, the old
//   block untouched on failure, alignment to `layout.align()` and at least
//   `ARCH_KMALLOC_MINALIGN`, see `Kmalloc`).
unsafe impl<M: MallocTypeTag> Allocator for TypedAlloc<M> {
    const MIN_ALIGN: usize = bindings::ARCH_KMALLOC_MINALIGN;

    // Inlined into every `Box::new()` and the like, as `kmalloc()` is in C: with the layout a
    // constant there, the size class folds to constants and the fast path to a few instructions.
    #[inline(always)]
    fn alloc(layout: Layout, flags: Flags, nid: NumaNode) -> Result<NonNull<[u8]>, AllocError> {
        M::get().alloc_new(Kmalloc::aligned_layout(layout), flags, nid)
    }

    #[inline]
    unsafe fn realloc(
        ptr: Option<NonNull<u8>>,
        layout: Layout,
        old_layout: Layout,
        flags: Flags,
        nid: NumaNode,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: Same safety requirements as `Allocator::realloc`, for this type.
        unsafe { M::get().realloc_layout(ptr, layout, old_layout, flags, nid) }
    }

    #[inline(always)]
    unsafe fn free(ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: Same safety requirements as `Allocator::free`, for this type.
        unsafe { M::get().free_layout(ptr, layout) }
    }
}

/// An [`Allocator`] like [`KVmalloc`] (kmalloc, falling back to vmalloc when that fails) that
/// charges every allocation to the malloc type named by `M`: with kmalloc's size class and
/// accounted size for the blocks kmalloc served, page-rounded with zindx -1 for the others.
///
/// # Examples
///
/// ```
/// use kernel::alloc::Vec;
/// use kernel::malloc_type::TypedKVAlloc;
///
/// kernel::malloc_define!(M_KV_DOC, "kv doc", "TypedKVAlloc example");
///
/// let small = Vec::<u8, TypedKVAlloc<M_KV_DOC>>::with_capacity(100, GFP_KERNEL)?;
/// assert_eq!(M_KV_DOC.stats().mem_use(), 128);
/// let big = Vec::<u8, TypedKVAlloc<M_KV_DOC>>::with_capacity(1 << 20, GFP_KERNEL)?;
/// // 1 MiB, whether kmalloc (a 2^8-page block) or vmalloc (256 pages) served it.
/// assert_eq!(M_KV_DOC.stats().mem_use(), (1 << 20) + 128);
/// drop(small);
/// drop(big);
/// assert_eq!(M_KV_DOC.stats().in_use(), 0);
/// assert_eq!(M_KV_DOC.stats().mem_use(), 0);
/// # Ok::<(), Error>(())
/// ```
pub struct TypedKVAlloc<M: MallocTypeTag>(PhantomData<M>);

// SAFETY: `realloc` delegates to `MallocType::kvrealloc_layout`, which allocates, resizes and
// frees with `KVmalloc`, so it has `KVmalloc`'s guarantees (memory valid until freed, any pointer
// it returned accepted again, the contract of `Allocator::realloc`).
unsafe impl<M: MallocTypeTag> Allocator for TypedKVAlloc<M> {
    const MIN_ALIGN: usize = <KVmalloc as Allocator>::MIN_ALIGN;

    #[inline]
    unsafe fn realloc(
        ptr: Option<NonNull<u8>>,
        layout: Layout,
        old_layout: Layout,
        flags: Flags,
        nid: NumaNode,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: Same safety requirements as `Allocator::realloc`, for this type.
        unsafe { M::get().kvrealloc_layout(ptr, layout, old_layout, flags, nid) }
    }
}

#[cfg(CONFIG_RUST_MALLOC_TYPE_KUNIT_TEST)]
#[macros::kunit_tests(rust_malloc_type_alloc)]
mod tests {
    use super::super::{
        numzones,
        zone_for_name,
        zone_sizes,
        Stats,
        KMALLOC_MAX_CACHE_SIZE, //
    };
    use super::*;
    use crate::alloc::{
        flags::{
            __GFP_NOWARN,
            GFP_KERNEL, //
        },
        Box,
        Vec, //
    };

    /// What the slab allocator consumes for a kmalloc of `size` bytes.
    fn roundup(size: usize) -> usize {
        // SAFETY: `kmalloc_size_roundup()` accepts any size.
        unsafe { bindings::kmalloc_size_roundup(size) }
    }

    /// The name of the normal kmalloc cache of `size` bytes (`kmalloc_info[]`: from 1 KiB up,
    /// in KiB).
    fn cache_name(size: usize) -> Result<crate::str::CString> {
        Ok(if size >= 1024 {
            crate::str::CString::try_from_fmt(fmt!("kmalloc-{}k", size / 1024))?
        } else {
            crate::str::CString::try_from_fmt(fmt!("kmalloc-{}", size))?
        })
    }

    /// Whether `name` is a normal kmalloc cache of `size` bytes: [`cache_name`], or with
    /// `CONFIG_KMALLOC_PARTITION_CACHES` one of its partitions, `kmalloc-part-NN-` and the same
    /// size, which the kmalloc token of the call site picks.
    fn is_normal_cache(name: &CStr, size: usize) -> Result<bool> {
        let own = cache_name(size)?;
        let own = own.to_bytes();
        let class = own.strip_prefix(b"kmalloc-".as_slice()).ok_or(EINVAL)?;
        let name = name.to_bytes();
        let partition = name
            .strip_prefix(b"kmalloc-part-".as_slice())
            .and_then(|rest| Some((rest.get(..2)?, rest.get(2..)?)));
        Ok(name == own
            || partition.is_some_and(|(nn, rest)| {
                nn.iter().all(u8::is_ascii_digit)
                    && rest.strip_prefix(b"-".as_slice()) == Some(class)
            }))
    }

    fn bit(z: i32) -> u64 {
        if z < 0 {
            0
        } else {
            1u64 << z
        }
    }

    #[test]
    fn size_class_boundaries() -> Result {
        crate::malloc_define!(M_T_BOUNDS, "kunit bounds", "Size class boundaries");
        let t = &M_T_BOUNDS;
        assert!(t.is_registered());
        // Requests at the boundaries of the size classes; what each one consumes is what the slab
        // allocator rounds it up to, and its zindx the place of that size in the classes.
        let cases = [
            0,
            1,
            8,
            9,
            96,
            97,
            192,
            193,
            KMALLOC_MAX_CACHE_SIZE,
            KMALLOC_MAX_CACHE_SIZE + 1,
            100_000,
        ];
        for size in cases {
            let acc = roundup(size);
            let z = if size == 0 || size > KMALLOC_MAX_CACHE_SIZE {
                -1
            } else {
                zone_sizes()
                    .iter()
                    .position(|&c| c == acc)
                    .map_or(-2, |i| i as i32)
            };
            let before = t.stats();
            let p = t.malloc(size, GFP_KERNEL)?;
            assert_eq!(p.len(), size);
            assert_eq!(zindx(size), z);
            assert_eq!(accounted_size(size), acc);
            let mid = t.stats();
            let n = if size == 0 { 0 } else { 1 };
            assert_eq!(mid.memalloced - before.memalloced, acc as u64);
            assert_eq!(mid.numallocs - before.numallocs, n);
            assert_eq!(mid.size & bit(z), bit(z));
            if size > 0 {
                // SAFETY: `p` is valid for `size` bytes.
                unsafe { p.cast::<u8>().as_ptr().add(size - 1).write(0xa5) };
            }
            // SAFETY: `p` came from `t` with `size` bytes and is not used again.
            unsafe { t.free(p.as_ptr().cast()) };
            let after = t.stats();
            assert_eq!(after.memfreed - mid.memfreed, acc as u64);
            assert_eq!(after.numfrees - mid.numfrees, n);
        }
        let s = t.stats();
        assert_eq!(s.in_use(), 0);
        assert_eq!(s.mem_use(), 0);
        assert_eq!(s.numallocs, 10);
        // The bits of the classes of the requests a kmalloc cache served, and no other.
        let mask = cases.iter().fold(0, |m, &size| m | bit(zindx(size)));
        assert_eq!(s.size, mask);
        Ok(())
    }

    #[test]
    fn realloc_grow_shrink_in_place() -> Result {
        crate::malloc_define!(M_T_REALLOC, "kunit realloc", "realloc accounting");
        let t = &M_T_REALLOC;
        let p = t.malloc(10, GFP_KERNEL)?;
        // SAFETY: `p` is valid for 10 bytes.
        unsafe { ptr::write_bytes(p.as_ptr().cast::<u8>(), 0x5a, 10) };
        // In place (same bucket): accounted as a free of 16 and an allocation of 16.
        // SAFETY: `p` came from `t` with 10 bytes.
        let p = unsafe { t.realloc(p.as_ptr().cast(), 12, GFP_KERNEL)? };
        let s = t.stats();
        assert_eq!(
            (s.numallocs, s.numfrees, s.memalloced, s.memfreed),
            (2, 1, (roundup(10) + roundup(12)) as u64, roundup(10) as u64)
        );
        // Growth.
        // SAFETY: `p` came from `t` with 12 bytes.
        let p = unsafe { t.realloc(p.as_ptr().cast(), 100, GFP_KERNEL)? };
        assert_eq!(t.stats().mem_use(), roundup(100) as i64);
        // Shrink.
        // SAFETY: `p` came from `t` with 100 bytes.
        let p = unsafe { t.realloc(p.as_ptr().cast(), 50, GFP_KERNEL)? };
        assert_eq!(t.stats().mem_use(), roundup(50) as i64);
        // SAFETY: `p` is valid for 50 bytes, of which the first 10 were kept.
        let bytes = unsafe { core::slice::from_raw_parts(p.as_ptr().cast::<u8>(), 10) };
        assert!(bytes.iter().all(|&b| b == 0x5a));
        // A failed resize keeps the block and the counters, but for one more failure.
        let before = t.stats();
        // SAFETY: `p` came from `t` with 50 bytes.
        let r = unsafe { t.realloc(p.as_ptr().cast(), KMALLOC_MAX_SIZE + 1, GFP_KERNEL) };
        assert!(r.is_err());
        assert!(
            t.stats()
                == Stats {
                    numfailures: before.numfailures + 1,
                    ..before
                }
        );
        // Resize to 0 frees.
        // SAFETY: `p` came from `t` with 50 bytes and is not used again.
        let z = unsafe { t.realloc(p.as_ptr().cast(), 0, GFP_KERNEL)? };
        assert_eq!(z.len(), 0);
        let s = t.stats();
        assert_eq!((s.in_use(), s.mem_use()), (0, 0));
        assert_eq!((s.numallocs, s.numfrees), (4, 4));
        // Realloc of null allocates.
        // SAFETY: Null is accepted.
        let p = unsafe { t.realloc(ptr::null_mut(), 8, GFP_KERNEL)? };
        assert_eq!(t.stats().in_use(), 1);
        // SAFETY: `p` came from `t` with 8 bytes and is not used again.
        unsafe { t.free(p.as_ptr().cast()) };
        assert_eq!(t.stats().in_use(), 0);
        Ok(())
    }

    /// `free` takes no size: the block tells what it was charged. Before, `malloc(100)` then
    /// `free(p, 8)` left 120 bytes in use for good; now there is no size to get wrong, and every
    /// block's size is its accounted size, whatever the size class or the large kmalloc.
    #[test]
    fn free_takes_the_size_from_the_block() -> Result {
        crate::malloc_define!(M_T_SIZELESS, "kunit sizeless", "free() without a size");
        let t = &M_T_SIZELESS;
        let p = t.malloc(100, GFP_KERNEL)?;
        // SAFETY: `p` came from `t` and is not used again.
        unsafe { t.free(p.as_ptr().cast()) };
        let s = t.stats();
        let acc = roundup(100) as u64;
        assert_eq!((s.memalloced, s.memfreed, s.mem_use()), (acc, acc, 0));
        let sizes = [
            1,
            8,
            9,
            95,
            96,
            97,
            100,
            192,
            193,
            2048,
            4095,
            4096,
            4097,
            KMALLOC_MAX_CACHE_SIZE,
            KMALLOC_MAX_CACHE_SIZE + 1,
            20000,
            65536 + 1,
        ];
        for size in sizes {
            let p = t.malloc(size, GFP_KERNEL)?;
            // SAFETY: `p` is a live block of `t`.
            let block = unsafe { bindings::malloc_type_block_size(p.as_ptr().cast()) };
            assert_eq!(block, accounted_size(size));
            // SAFETY: `p` came from `t` and is not used again.
            unsafe { t.free(p.as_ptr().cast()) };
            assert_eq!(t.stats().mem_use(), 0);
        }
        // A resize that moves copies the old block up to its size class, never past the block.
        let p = t.malloc(4000, GFP_KERNEL)?;
        // SAFETY: `p` is valid for 4000 bytes.
        unsafe { ptr::write_bytes(p.as_ptr().cast::<u8>(), 3, 4000) };
        // SAFETY: `p` came from `t`.
        let p = unsafe { t.realloc(p.as_ptr().cast(), 9000, GFP_KERNEL)? };
        // SAFETY: The first 4000 bytes were kept.
        let kept = unsafe { core::slice::from_raw_parts(p.as_ptr().cast::<u8>(), 4000) };
        assert!(kept.iter().all(|&b| b == 3));
        assert_eq!(t.stats().mem_use(), roundup(9000) as i64);
        // SAFETY: `p` came from `t` and is not used again.
        unsafe { t.free(p.as_ptr().cast()) };
        assert_eq!(t.stats().mem_use(), 0);
        Ok(())
    }

    #[test]
    fn array_overflow_and_failure() -> Result {
        crate::malloc_define!(M_T_FAIL, "kunit failure", "Failures change nothing");
        let t = &M_T_FAIL;
        assert_eq!(
            t.mallocarray(usize::MAX / 2 + 1, 2, GFP_KERNEL).err(),
            Some(EOVERFLOW)
        );
        assert_eq!(
            t.mallocarray(2, usize::MAX, GFP_KERNEL).err(),
            Some(EOVERFLOW)
        );
        assert!(t.malloc(usize::MAX, GFP_KERNEL).is_err());
        assert!(t
            .malloc(KMALLOC_MAX_SIZE + 1, GFP_KERNEL | __GFP_NOWARN)
            .is_err());
        assert_eq!(
            t.mallocarray(KMALLOC_MAX_SIZE, 2, GFP_KERNEL | __GFP_NOWARN)
                .err(),
            Some(ENOMEM)
        );
        // Five failures, and nothing else counted.
        assert!(
            t.stats()
                == Stats {
                    numfailures: 5,
                    ..Stats::default()
                }
        );
        let p = t.mallocarray(3, 4, GFP_KERNEL)?;
        assert_eq!(t.stats().memalloced, roundup(12) as u64);
        // SAFETY: `p` came from `t` with 12 bytes and is not used again.
        unsafe { t.free(p.as_ptr().cast()) };
        // Freeing null is a no-op.
        // SAFETY: Null is accepted.
        unsafe { t.free(ptr::null_mut()) };
        let s = t.stats();
        assert_eq!((s.numallocs, s.numfrees), (1, 1));
        Ok(())
    }

    crate::malloc_define!(M_T_ZONE_A, "kunit zone a", "Zone assignment");
    crate::malloc_define!(M_T_ZONE_B, "kunit zone b", "Zone assignment");
    crate::malloc_define!(M_T_ZONE_C, "kunit zone c", "Zone assignment");
    crate::malloc_define!(M_T_ZONE_D, "kunit zone d", "Zone assignment");
    crate::malloc_define!(M_T_ZONE_E, "kunit zone e", "Zone assignment");
    crate::malloc_define!(M_T_ZONE_F, "kunit zone f", "Zone assignment");

    #[test]
    fn zone_assignment() -> Result {
        let n = numzones();
        assert!(n >= 1);
        for name in [c"a", c"devbuf", c"kunit zone a", c"foo bar"] {
            assert_eq!(zone_for_name(name, 0), 0);
            assert_eq!(zone_for_name(name, 1), 0);
            for z in 2..=16 {
                assert!(zone_for_name(name, z) < z);
            }
        }
        let types = [
            &M_T_ZONE_A,
            &M_T_ZONE_B,
            &M_T_ZONE_C,
            &M_T_ZONE_D,
            &M_T_ZONE_E,
            &M_T_ZONE_F,
        ];
        for t in types {
            assert_eq!(t.zone(), zone_for_name(t.name(), n));
            assert!(t.zone() < n);
            // Allocate, resize and free through the type's zone.
            let p = t.malloc(24, GFP_KERNEL)?;
            // SAFETY: `p` is valid for 24 bytes.
            unsafe { ptr::write_bytes(p.as_ptr().cast::<u8>(), 7, 24) };
            // SAFETY: `p` came from `t` with 24 bytes.
            let p = unsafe { t.realloc(p.as_ptr().cast(), 300, GFP_KERNEL)? };
            // SAFETY: The first 24 bytes were kept.
            let kept = unsafe { core::slice::from_raw_parts(p.as_ptr().cast::<u8>(), 24) };
            assert!(kept.iter().all(|&b| b == 7));
            let s = t.stats();
            assert_eq!(
                (s.memalloced, s.memfreed, s.size),
                (32 + 512, 32, (1 << 2) | (1 << 8))
            );
            // SAFETY: `p` came from `t` with 300 bytes and is not used again.
            unsafe { t.free(p.as_ptr().cast()) };
            assert_eq!(t.stats().mem_use(), 0);
        }
        Ok(())
    }

    /// The name and the usercopy window (in bytes) of the slab cache that holds the kmalloc
    /// block `p`; `None` for a block that is not in a slab.
    fn cache_of(p: *mut u8) -> Option<(&'static CStr, u32)> {
        let mut name = ptr::null();
        let mut usersize = 0;
        // SAFETY: `p` is a live kmalloc block; `name` and `usersize` are valid for writes.
        let in_slab =
            unsafe { bindings::malloc_type_test_cache_of(p.cast(), &mut name, &mut usersize) };
        // SAFETY: A cache's name is a NUL-terminated string that lives as long as the cache, and
        // the kmalloc and zone caches are never destroyed.
        in_slab.then(|| (unsafe { CStr::from_char_ptr(name) }, usersize))
    }

    crate::malloc_define!(M_T_CACHE_A, "kunit cache a", "Caches of the zones");
    crate::malloc_define!(M_T_CACHE_B, "kunit cache b", "Caches of the zones");
    crate::malloc_define!(M_T_CACHE_C, "kunit cache c", "Caches of the zones");
    crate::malloc_define!(M_T_CACHE_D, "kunit cache d", "Caches of the zones");
    crate::malloc_define!(M_T_CACHE_E, "kunit cache e", "Caches of the zones");
    crate::malloc_define!(M_T_CACHE_F, "kunit cache f", "Caches of the zones");

    #[test]
    fn zone_caches() -> Result {
        let hardened = cfg!(CONFIG_HARDENED_USERCOPY);
        for t in [
            &M_T_CACHE_A,
            &M_T_CACHE_B,
            &M_T_CACHE_C,
            &M_T_CACHE_D,
            &M_T_CACHE_E,
            &M_T_CACHE_F,
        ] {
            let z = t.zone();
            // The type's zone serves it, on the node asked for, and the whole object may be
            // copied to and from user space (as with the shared caches).
            let node0 = crate::alloc::NumaNode::new(0)?;
            let layout = Layout::new::<[u64; 8]>();
            // SAFETY: A new allocation (`None`).
            let p = unsafe { t.realloc_layout(None, layout, layout, GFP_KERNEL, node0)? };
            let (name, usersize) = cache_of(p.as_ptr().cast()).ok_or(EINVAL)?;
            if z == 0 {
                assert!(name.to_bytes().starts_with(b"kmalloc-"));
            } else {
                let want = crate::str::CString::try_from_fmt(fmt!("malloc-zone{}-64", z))?;
                assert_eq!(name, &*want);
            }
            if hardened {
                assert_eq!(usersize, 64);
            }
            // SAFETY: `p` came from `t` with `layout` and is not used again.
            unsafe {
                t.realloc_layout(
                    Some(p.cast()),
                    Layout::new::<()>(),
                    layout,
                    GFP_KERNEL,
                    node0,
                )?
            };
            assert_eq!(t.stats().mem_use(), 0);

            // A request for another kind of cache (reclaimable here) gets the shared caches
            // of that kind: a zone's buckets are of the normal kind only.
            let gfp = bindings::GFP_KERNEL | (1 << bindings::___GFP_RECLAIMABLE_BIT);
            // SAFETY: `t` is a valid type; any size, flags and node are accepted.
            let raw = unsafe { bindings::malloc_type_zone_alloc(t.as_raw(), 64, gfp, -1) };
            let raw = NonNull::new(raw.cast::<u8>()).ok_or(ENOMEM)?;
            let kind = cache_of(raw.as_ptr()).map(|(name, _)| name);
            // SAFETY: `raw` is a kmalloc block of this test, not used again.
            unsafe { bindings::kfree(raw.as_ptr().cast()) };
            assert_eq!(kind, Some(c"kmalloc-rcl-64"));
        }
        Ok(())
    }

    crate::malloc_define!(M_T_FAST, "kunit fast path", "The allocation fast path");

    #[test]
    fn fast_path_caches_and_counters() -> Result {
        let t = &M_T_FAST;
        // Zone 0 only: the other zones take the general path.
        if t.zone() != 0 {
            return Ok(());
        }
        // Every size a kmalloc cache serves: the block comes from the normal kmalloc cache of
        // its size class (as `kmalloc()` would pick it), is charged that
        // class, and the free, which is told no size, discharges the same.
        for size in 1..=KMALLOC_MAX_CACHE_SIZE {
            let class = zone_sizes()[zindx(size) as usize];
            let before = t.stats();
            let p = t.malloc(size, GFP_KERNEL)?;
            let p = p.as_ptr().cast::<u8>();
            let (name, _) = cache_of(p).ok_or(EINVAL)?;
            let mid = t.stats();
            // SAFETY: `p` came from `t` and is not used again.
            unsafe { t.free(p) };
            let after = t.stats();
            // A KFENCE object's slab names the cache it stands in for.
            assert!(is_normal_cache(name, class)?);
            assert_eq!(mid.numallocs - before.numallocs, 1);
            assert_eq!(mid.memalloced - before.memalloced, class as u64);
            assert_ne!(mid.size & (1 << zindx(size)), 0);
            assert_eq!(after.numfrees - before.numfrees, 1);
            assert_eq!(after.memfreed - before.memfreed, class as u64);
        }
        // Flags that ask for another kind of cache take the general path, to that kind.
        let gfp = Flags::from_raw(bindings::GFP_KERNEL | (1 << bindings::___GFP_RECLAIMABLE_BIT));
        let p = t.malloc(64, gfp)?.as_ptr().cast::<u8>();
        let kind = cache_of(p).map(|(name, _)| name);
        // SAFETY: `p` came from `t` and is not used again.
        unsafe { t.free(p) };
        assert_eq!(kind, Some(c"kmalloc-rcl-64"));
        // Large kmallocs: charged their pages, with no size class.
        let page = crate::page::PAGE_SIZE;
        let m = KMALLOC_MAX_CACHE_SIZE;
        for size in [m + 1, m + page, 2 * m, 2 * m + 1, 1 << 20] {
            let before = t.stats();
            let p = t.malloc(size, GFP_KERNEL)?.as_ptr().cast::<u8>();
            let mid = t.stats();
            // SAFETY: `p` came from `t` and is not used again.
            unsafe { t.free(p) };
            let after = t.stats();
            let pages = size.next_power_of_two() as u64;
            assert_eq!(mid.memalloced - before.memalloced, pages);
            assert_eq!(mid.size, before.size);
            assert_eq!(after.memfreed - before.memfreed, pages);
            assert_eq!(after.numfrees - before.numfrees, 1);
        }
        // `Box` of the typed allocator: the same fast path and free, with a constant size.
        let b = Box::<[u8; 100], TypedAlloc<M_T_FAST>>::new_uninit(GFP_KERNEL)?;
        assert_eq!(t.stats().mem_use(), roundup(100) as i64);
        drop(b);
        let s = t.stats();
        assert_eq!((s.in_use(), s.mem_use()), (0, 0));
        Ok(())
    }

    /// Copies `data` from user space at `uaddr` into a vector of `M`'s memory and back to user
    /// space after it, and checks the copies.
    fn user_copies<M: MallocTypeTag>(uaddr: usize, data: &[u8]) -> Result {
        use crate::uaccess::{
            UserPtr,
            UserSlice, //
        };

        // `copy_from_user()` into the type's memory...
        let mut v = Vec::<u8, TypedAlloc<M>>::new();
        UserSlice::new(UserPtr::from_addr(uaddr), data.len()).read_all(&mut v, GFP_KERNEL)?;
        assert!(&v[..] == data);
        // ...and `copy_to_user()` out of it.
        let back = uaddr + data.len();
        UserSlice::new(UserPtr::from_addr(back), data.len())
            .writer()
            .write_slice(&v)?;
        let mut w = Vec::<u8, TypedAlloc<M>>::new();
        UserSlice::new(UserPtr::from_addr(back), data.len()).read_all(&mut w, GFP_KERNEL)?;
        assert!(&w[..] == data);
        Ok(())
    }

    #[test]
    fn user_copies_in_every_zone() -> Result {
        use crate::uaccess::{
            UserPtr,
            UserSlice, //
        };

        // Flags of `mmap()` (the generic values, which x86 and arm64 use).
        const PROT_READ_WRITE: c_ulong = 0x1 | 0x2;
        const MAP_PRIVATE_ANONYMOUS: c_ulong = 0x02 | 0x20;
        const LEN: usize = 200;

        // SAFETY: No requirements: it returns the running KUnit test.
        let test = unsafe { bindings::kunit_get_current_test() };
        if test.is_null() {
            return Err(EINVAL);
        }
        // Anonymous memory in an address space of the test's own, which KUnit unmaps when the
        // test ends.
        // SAFETY: `test` is the running test; no file is mapped.
        let uaddr = unsafe {
            bindings::kunit_vm_mmap(
                test,
                ptr::null_mut(),
                0,
                4096,
                PROT_READ_WRITE,
                MAP_PRIVATE_ANONYMOUS,
                0,
            )
        };
        // An error is a negative errno, as `IS_ERR_VALUE()` tells.
        if uaddr == 0 || uaddr >= (-4095isize) as c_ulong {
            return Err(ENOMEM);
        }
        // CAST: A user address fits in `usize`.
        let uaddr = uaddr as usize;
        let mut data = [0u8; LEN];
        for (i, b) in data.iter_mut().enumerate() {
            // CAST: The bytes count 0 to 255 and again.
            *b = i as u8;
        }
        UserSlice::new(UserPtr::from_addr(uaddr), LEN)
            .writer()
            .write_slice(&data)?;
        // Types in several zones with `malloc_types.numzones=4`: under
        // `CONFIG_HARDENED_USERCOPY` each copy is checked against the usercopy window of the
        // cache that holds the block.
        user_copies::<M_T_CACHE_A>(uaddr, &data)?;
        user_copies::<M_T_CACHE_B>(uaddr, &data)?;
        user_copies::<M_T_CACHE_C>(uaddr, &data)?;
        user_copies::<M_T_CACHE_D>(uaddr, &data)?;
        user_copies::<M_T_CACHE_E>(uaddr, &data)?;
        user_copies::<M_T_CACHE_F>(uaddr, &data)?;
        Ok(())
    }

    #[test]
    fn shrinks_move_to_the_new_size_class() -> Result {
        crate::malloc_define!(M_T_SHRINKS, "kunit shrinks", "Shrinking resizes");
        let t = &M_T_SHRINKS;

        // The raw API: a block shrunk from 4000 to 10 bytes holds a 16-byte object, what the
        // type is charged, not the 4096-byte one that `krealloc()` would have kept.
        let p = t.malloc(4000, GFP_KERNEL)?;
        // SAFETY: `p` is valid for 4000 bytes.
        unsafe { ptr::write_bytes(p.as_ptr().cast::<u8>(), 0x3c, 4000) };
        // SAFETY: `p` came from `t` with 4000 bytes.
        let p = unsafe { t.realloc(p.as_ptr().cast(), 10, GFP_KERNEL)? };
        let s = t.stats();
        assert_eq!((s.in_use(), s.mem_use()), (1, roundup(10) as i64));
        assert_eq!(s.size, bit(zindx(10)) | bit(zindx(4000)));
        let (name, _) = cache_of(p.as_ptr().cast()).ok_or(EINVAL)?;
        assert!(is_normal_cache(name, roundup(10))?);
        // SAFETY: `p` is valid for 10 bytes, which were kept.
        let kept = unsafe { core::slice::from_raw_parts(p.as_ptr().cast::<u8>(), 10) };
        assert!(kept.iter().all(|&b| b == 0x3c));
        // A resize within the size class is charged the same (`krealloc()` keeps the block,
        // except a KFENCE object).
        // SAFETY: `p` came from `t` with 10 bytes.
        let q = unsafe { t.realloc(p.as_ptr().cast(), 12, GFP_KERNEL)? };
        assert_eq!(t.stats().mem_use(), roundup(10) as i64);
        // SAFETY: `q` came from `t` with 12 bytes and is not used again.
        unsafe { t.free(q.as_ptr().cast()) };

        // `Vec::shrink_to` with `TypedAlloc` and with `TypedKVAlloc` (kmalloc memory).
        fn vec_shrinks<A: Allocator>() -> Result {
            let mut v = Vec::<u8, A>::with_capacity(4000, GFP_KERNEL)?;
            v.push(1, GFP_KERNEL)?;
            v.shrink_to(10, GFP_KERNEL)?;
            assert_eq!(M_T_SHRINKS.stats().mem_use(), roundup(10) as i64);
            let (name, _) = cache_of(v.as_ptr().cast_mut()).ok_or(EINVAL)?;
            assert!(is_normal_cache(name, roundup(10))?);
            assert_eq!(v[0], 1);
            Ok(())
        }
        vec_shrinks::<TypedAlloc<M_T_SHRINKS>>()?;
        vec_shrinks::<TypedKVAlloc<M_T_SHRINKS>>()?;
        let s = t.stats();
        assert_eq!((s.in_use(), s.mem_use()), (0, 0));
        Ok(())
    }

    #[test]
    fn typed_box_and_vec() -> Result {
        crate::malloc_define!(M_T_ALLOC, "kunit allocator", "Box and Vec");
        #[repr(align(64))]
        struct Aligned([u8; 64]);
        {
            let b = Box::<[u8; 100], TypedAlloc<M_T_ALLOC>>::new([1; 100], GFP_KERNEL)?;
            assert_eq!(b[99], 1);
            assert_eq!(M_T_ALLOC.stats().mem_use(), roundup(100) as i64);
            let a = Box::<Aligned, TypedAlloc<M_T_ALLOC>>::new(Aligned([2; 64]), GFP_KERNEL)?;
            assert_eq!(ptr::from_ref(&*a) as usize % 64, 0);
            assert_eq!(a.0[63], 2);
            assert_eq!(
                M_T_ALLOC.stats().mem_use(),
                (roundup(100) + roundup(64)) as i64
            );
        }
        assert_eq!(M_T_ALLOC.stats().mem_use(), 0);
        {
            let mut v = Vec::<u64, TypedAlloc<M_T_ALLOC>>::new();
            for i in 0..100 {
                v.push(i, GFP_KERNEL)?;
            }
            assert_eq!(v[99], 99);
            let s = M_T_ALLOC.stats();
            assert_eq!(s.in_use(), 1);
            assert_eq!(s.mem_use(), accounted_size(v.capacity() * 8) as i64);
        }
        let s = M_T_ALLOC.stats();
        assert_eq!((s.in_use(), s.mem_use()), (0, 0));
        Ok(())
    }

    #[test]
    fn typed_list_and_rbtree() -> Result {
        use crate::{
            list::{
                List,
                ListArc,
                ListLinks, //
            },
            rbtree::{
                RBTree,
                RBTreeNode, //
            },
            sync::Arc,
            try_pin_init, //
        };
        use pin_init::pin_data;

        crate::malloc_define!(M_T_LIST, "kunit list", "ListArc, List and RBTree");
        type A = TypedAlloc<M_T_LIST>;

        #[pin_data]
        struct Item {
            value: u64,
            #[pin]
            links: ListLinks,
        }
        crate::list::impl_list_arc_safe! {
            impl ListArcSafe<0> for Item { untracked; }
        }
        crate::list::impl_list_item! {
            impl ListItem<0> for Item { using ListLinks { self.links }; }
        }

        {
            let mut list = List::<Item, 0, A>::new();
            for value in 0..3 {
                let item = ListArc::<Item, 0, A>::pin_init_in(
                    try_pin_init!(Item { value, links <- ListLinks::new() }),
                    GFP_KERNEL,
                )?;
                list.push_back(item);
            }
            // One allocation per item: its `Arc`'s refcount and the `Item`.
            assert_eq!(M_T_LIST.stats().in_use(), 3);
            assert_eq!(list.iter().map(|item| item.value).sum::<u64>(), 3);
            // Off the list and out of its `ListArc`, the item is still the type's, and is freed
            // to it.
            let arc: Arc<Item, A> = list.pop_front().ok_or(EINVAL)?.into_arc();
            drop(list);
            assert_eq!(M_T_LIST.stats().in_use(), 1);
            assert_eq!(arc.value, 0);
        }
        assert_eq!(M_T_LIST.stats().in_use(), 0);
        {
            let mut tree = RBTree::<u32, u64, A>::new_in();
            tree.try_create_and_insert(1, 10, GFP_KERNEL)?;
            tree.insert(RBTreeNode::new_in(2, 20, GFP_KERNEL)?);
            assert_eq!(M_T_LIST.stats().in_use(), 2);
            // A node removed from the tree is still allocated until it is dropped.
            let node = tree.remove_node(&1).ok_or(EINVAL)?;
            assert_eq!(M_T_LIST.stats().in_use(), 2);
            assert_eq!(node.to_key_value(), (1, 10));
            assert_eq!(M_T_LIST.stats().in_use(), 1);
        }
        let s = M_T_LIST.stats();
        assert_eq!((s.in_use(), s.mem_use(), s.numallocs), (0, 0, 5));
        Ok(())
    }

    #[test]
    fn typed_vec_shrink_to() -> Result {
        crate::malloc_define!(M_T_SHRINK, "kunit shrink", "Vec::shrink_to");
        let in_vmalloc = |p: *const u8| NonNull::new(p.cast_mut()).is_some_and(is_vmalloc);
        {
            // kmalloc memory: `TypedAlloc::realloc()` moves the elements to a smaller block.
            let mut v = Vec::<u64, TypedAlloc<M_T_SHRINK>>::with_capacity(100, GFP_KERNEL)?;
            v.push(7, GFP_KERNEL)?;
            assert_eq!(M_T_SHRINK.stats().mem_use(), roundup(800) as i64);
            v.shrink_to(0, GFP_KERNEL)?;
            assert_eq!((v.capacity(), v[0]), (1, 7));
            let s = M_T_SHRINK.stats();
            assert_eq!((s.in_use(), s.mem_use()), (1, roundup(8) as i64));
        }
        assert_eq!(M_T_SHRINK.stats().in_use(), 0);
        {
            // vmalloc memory (more than kmalloc gives): copied into a new, kmalloc'd block.
            let big = 2 * KMALLOC_MAX_SIZE;
            let mut v = Vec::<u8, TypedKVAlloc<M_T_SHRINK>>::with_capacity(big, GFP_KERNEL)?;
            v.push(7, GFP_KERNEL)?;
            assert!(in_vmalloc(v.as_ptr()));
            assert_eq!(M_T_SHRINK.stats().mem_use(), page_rounded(big) as i64);
            v.shrink_to(64, GFP_KERNEL)?;
            assert!(!in_vmalloc(v.as_ptr()));
            assert_eq!((v.capacity(), v[0]), (64, 7));
            let s = M_T_SHRINK.stats();
            assert_eq!((s.in_use(), s.mem_use()), (1, roundup(64) as i64));
        }
        let s = M_T_SHRINK.stats();
        assert_eq!((s.in_use(), s.mem_use(), s.numallocs), (0, 0, 4));
        Ok(())
    }

    #[test]
    fn over_aligned_layouts() -> Result {
        crate::malloc_define!(M_T_ALIGN, "kunit align", "Over-aligned layouts");

        /// Allocates `layout` with `A`, checks its alignment and the bytes charged to
        /// `M_T_ALIGN` (the padded size's), and frees it.
        fn check<A: Allocator>(layout: Layout) -> Result {
            let padded = Kmalloc::aligned_layout(layout).size();
            let before = M_T_ALIGN.stats();
            let p = A::alloc(layout, GFP_KERNEL, NumaNode::NO_NODE)?;
            assert_eq!(p.cast::<u8>().as_ptr() as usize % layout.align(), 0);
            // SAFETY: `p` is valid for `layout.size()` bytes.
            unsafe { ptr::write_bytes(p.cast::<u8>().as_ptr(), 0x5a, layout.size()) };
            let s = M_T_ALIGN.stats();
            assert_eq!(s.numallocs - before.numallocs, 1);
            assert_eq!(
                s.memalloced - before.memalloced,
                accounted_size(padded) as u64
            );
            // SAFETY: `p` came from `A` with `layout` and is not used again.
            unsafe { A::free(p.cast(), layout) };
            let s = M_T_ALIGN.stats();
            assert_eq!((s.in_use(), s.mem_use()), (0, 0));
            Ok(())
        }

        // Sizes below their alignment: kmalloc aligns a block to its size's power of two only,
        // so the layout is padded to the alignment (as `Kmalloc` pads it) and charged as such.
        for (size, align) in [(8, 64), (24, 128), (64, 256), (100, 512), (8, 4096)] {
            let layout = Layout::from_size_align(size, align).map_err(|_| EINVAL)?;
            check::<TypedAlloc<M_T_ALIGN>>(layout)?;
            check::<TypedKVAlloc<M_T_ALIGN>>(layout)?;
        }
        Ok(())
    }
}
