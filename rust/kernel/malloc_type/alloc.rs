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
//! Blocks of a type in zone 0 come from the shared kmalloc caches, those of other types from
//! their zone's set of kmalloc buckets (`malloc_types.numzones=`); every block is freed with
//! `kfree()` (or `kvfree()`), and accounted with [`accounted_size`] bytes.
//!
//! C header: [`include/linux/slab.h`](srctree/include/linux/slab.h)
//!
//! [`Box`]: crate::alloc::Box
//! [`Vec`]: crate::alloc::Vec
//! [`Arc`]: crate::sync::Arc

use super::{
    accounted_size,
    page_rounded,
    zindx,
    MallocType,
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

impl MallocType {
    /// The allocator behind every typed allocation, with the contract of
    /// [`Allocator::realloc`].
    ///
    /// Types in zone 0, and requests aligned to more than `ARCH_KMALLOC_MINALIGN`, use `Kmalloc`
    /// (`krealloc()`); other types allocate from their zone's buckets, and move on every resize.
    ///
    /// # Safety
    ///
    /// As for [`Allocator::realloc`], with "this allocator" meaning allocations charged to
    /// `self`.
    pub(crate) unsafe fn realloc_layout(
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
                // SAFETY: `p` is a live kmalloc allocation of this type (safety requirements).
                unsafe { bindings::kfree(p.as_ptr().cast()) };
                self.account_free(accounted_size(old_size));
            }
            return Ok(NonNull::slice_from_raw_parts(
                crate::alloc::dangling_from_layout(layout),
                0,
            ));
        }
        if new_size > KMALLOC_MAX_SIZE {
            return Err(AllocError);
        }

        let new = if self.zone() != 0 && layout.align() <= bindings::ARCH_KMALLOC_MINALIGN {
            match ptr {
                Some(p) if old_size == new_size => p,
                _ => {
                    // SAFETY: `self.as_raw()` is a valid type; any size and flags are accepted.
                    let n = unsafe {
                        bindings::malloc_type_zone_alloc(self.as_raw(), new_size, flags.as_raw())
                    };
                    let n = NonNull::new(n.cast::<u8>()).ok_or(AllocError)?;
                    if let Some(p) = ptr {
                        // SAFETY: `p` is valid for `old_size` bytes and `n` for `new_size`
                        // bytes; they are distinct allocations.
                        unsafe {
                            ptr::copy_nonoverlapping(p.as_ptr(), n.as_ptr(), old_size.min(new_size))
                        };
                        // SAFETY: `p` is a live kmalloc allocation, not used again.
                        unsafe { bindings::kfree(p.as_ptr().cast()) };
                    }
                    n
                }
            }
        } else {
            // SAFETY: `ptr` is `None` or a live kmalloc allocation of `old_layout`; all memory
            // of a type comes from kmalloc, so `Kmalloc` may resize or free it.
            let r = unsafe { Kmalloc::realloc_unaccounted(ptr, layout, old_layout, flags, nid) }?;
            r.cast::<u8>()
        };

        if ptr.is_some() {
            self.account_free(accounted_size(old_size));
        }
        self.account_alloc(accounted_size(new_size), zindx(new_size));
        Ok(NonNull::slice_from_raw_parts(new, new_size))
    }

    /// Allocates `size` bytes charged to the type (`malloc(size, type, flags)`).
    ///
    /// The memory is aligned to `ARCH_KMALLOC_MINALIGN` and must be freed with
    /// [`MallocType::free`] of the same type and size. A zero-byte request allocates nothing and
    /// returns a dangling pointer.
    ///
    /// # Context
    ///
    /// Any context that `flags` allow: process context, may sleep, with `GFP_KERNEL`; any
    /// context with `GFP_NOWAIT` or `GFP_ATOMIC`.
    ///
    /// # Errors
    ///
    /// [`AllocError`] when the memory cannot be allocated or `size` exceeds
    /// [`KMALLOC_MAX_SIZE`]; no counter changes then.
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
    /// unsafe { M_MALLOC_DOC.free(p.as_ptr().cast(), 9) };
    /// assert!(M_MALLOC_DOC.malloc(usize::MAX, GFP_KERNEL).is_err());
    /// assert_eq!(M_MALLOC_DOC.stats().numallocs, 1);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn malloc(&self, size: usize, flags: Flags) -> Result<NonNull<[u8]>, AllocError> {
        let layout = Layout::from_size_align(size, 1).map_err(|_| AllocError)?;
        // SAFETY: `ptr` is `None`, so this is a new allocation.
        unsafe { self.realloc_layout(None, layout, layout, flags, NumaNode::NO_NODE) }
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
    /// unsafe { M_ZMALLOC_DOC.free(p.as_ptr().cast(), 32) };
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
    /// no counter changes then.
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
    /// unsafe { M_ARRAY_DOC.free(p.as_ptr().cast(), 32) };
    /// # Ok::<(), Error>(())
    /// ```
    pub fn mallocarray(&self, n: usize, size: usize, flags: Flags) -> Result<NonNull<[u8]>> {
        // OVERFLOW: Checked; an overflow is an error, not a panic as in FreeBSD.
        let bytes = n.checked_mul(size).ok_or(EOVERFLOW)?;
        Ok(self.malloc(bytes, flags)?)
    }

    /// Resizes `ptr` from `old_size` to `new_size` bytes (`realloc`).
    ///
    /// A null `ptr` (or `old_size` 0) allocates; a `new_size` of 0 frees and returns a dangling
    /// pointer. The contents are kept up to the smaller size. The change is accounted as a free
    /// of the old block and an allocation of the new one, even when the block is resized in
    /// place.
    ///
    /// # Context
    ///
    /// Any context that `flags` allow: process context, may sleep, with `GFP_KERNEL`; any
    /// context with `GFP_NOWAIT` or `GFP_ATOMIC`.
    ///
    /// # Errors
    ///
    /// [`AllocError`]; `ptr` is then still valid and no counter changes.
    ///
    /// # Safety
    ///
    /// `ptr` is null, or was returned for `old_size` bytes by an allocation of this type and not
    /// freed since; on success it must not be used again.
    ///
    /// # Examples
    ///
    /// ```
    /// kernel::malloc_define!(M_REALLOC_DOC, "realloc doc", "realloc() example");
    ///
    /// let p = M_REALLOC_DOC.malloc(10, GFP_KERNEL)?;
    /// // SAFETY: `p` came from `M_REALLOC_DOC` with 10 bytes.
    /// let p = unsafe { M_REALLOC_DOC.realloc(p.as_ptr().cast(), 10, 100, GFP_KERNEL)? };
    /// assert_eq!(M_REALLOC_DOC.stats().mem_use(), 128);
    /// // SAFETY: `p` came from `M_REALLOC_DOC` with 100 bytes and is not used again.
    /// unsafe { M_REALLOC_DOC.free(p.as_ptr().cast(), 100) };
    /// # Ok::<(), Error>(())
    /// ```
    pub unsafe fn realloc(
        &self,
        ptr: *mut u8,
        old_size: usize,
        new_size: usize,
        flags: Flags,
    ) -> Result<NonNull<[u8]>, AllocError> {
        let layout = Layout::from_size_align(new_size, 1).map_err(|_| AllocError)?;
        let old_layout = Layout::from_size_align(old_size, 1).map_err(|_| AllocError)?;
        // SAFETY: By the safety requirements `ptr` is null or a live allocation of this type
        // of `old_layout`.
        unsafe {
            self.realloc_layout(
                NonNull::new(ptr),
                layout,
                old_layout,
                flags,
                NumaNode::NO_NODE,
            )
        }
    }

    /// Frees `ptr`, allocated with `size` bytes (`free(ptr, type)`); null (or `size` 0) is a
    /// no-op.
    ///
    /// # Context
    ///
    /// Any context (as `kfree()`).
    ///
    /// # Safety
    ///
    /// `ptr` is null, or was returned for `size` bytes by an allocation of this type and not
    /// freed since, and is not used again.
    ///
    /// # Examples
    ///
    /// ```
    /// kernel::malloc_define!(M_FREE_DOC, "free doc", "free() example");
    ///
    /// // SAFETY: Freeing null is a no-op.
    /// unsafe { M_FREE_DOC.free(core::ptr::null_mut(), 8) };
    /// assert_eq!(M_FREE_DOC.stats().numfrees, 0);
    /// ```
    pub unsafe fn free(&self, ptr: *mut u8, size: usize) {
        if ptr.is_null() || size == 0 {
            return;
        }
        // SAFETY: By the safety requirements `ptr` is a live allocation of this type, and every
        // allocation of a type comes from kmalloc (directly or from its zone's buckets).
        unsafe { bindings::kfree(ptr.cast()) };
        self.account_free(accounted_size(size));
    }

    /// [`KVmalloc`]'s allocator charging this type, with the contract of
    /// [`Allocator::realloc`]: kmalloc's accounting for the blocks kmalloc served and vmalloc's
    /// (page-rounded, zindx -1) for the others. A failed allocation changes no counter; a
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
        let old = match ptr {
            Some(p) if old_layout.size() != 0 => Some(kvmalloc_accounting(p, old_layout.size())),
            _ => None,
        };
        // SAFETY: The caller's safety requirements are those of `realloc_unaccounted`.
        let new = unsafe { KVmalloc::realloc_unaccounted(ptr, layout, old_layout, flags, nid) }?;
        if let Some((size, _)) = old {
            self.account_free(size);
        }
        if layout.size() != 0 {
            let (size, zindx) = kvmalloc_accounting(new.cast(), layout.size());
            self.account_alloc(size, zindx);
        }
        Ok(new)
    }
}

/// The accounted size and zindx of a block of `size` bytes of [`KVmalloc`] at `p`: kmalloc's
/// when kmalloc served it, vmalloc's otherwise.
fn kvmalloc_accounting(p: NonNull<u8>, size: usize) -> (usize, i32) {
    // SAFETY: `is_vmalloc_addr()` only compares the address with the vmalloc range.
    if unsafe { bindings::is_vmalloc_addr(p.as_ptr().cast()) } {
        (page_rounded(size), -1)
    } else {
        (accounted_size(size), zindx(size))
    }
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
// (directly or through a zone's buckets) and resizes and frees any of these allocations, so
// - memory remains valid until it is freed,
// - any pointer it returned may be passed to it again,
// - it has the guarantees of `Allocator::realloc` (contents kept up to the smaller size, the old
//   block untouched on failure, alignment to `layout.align()` and at least
//   `ARCH_KMALLOC_MINALIGN`, see `Kmalloc`).
unsafe impl<M: MallocTypeTag> Allocator for TypedAlloc<M> {
    const MIN_ALIGN: usize = bindings::ARCH_KMALLOC_MINALIGN;

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
        Stats, //
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
        // (request, accounted bytes, zindx)
        let cases: [(usize, usize, i32); 11] = [
            (0, 0, -1),
            (1, 8, 0),
            (8, 8, 0),
            (9, 16, 1),
            (96, 96, 4),
            (97, 128, 5),
            (192, 192, 6),
            (193, 256, 7),
            (8192, 8192, 12),
            (8193, 16384, -1),
            (100_000, 131_072, -1),
        ];
        for &(size, acc, z) in cases.iter() {
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
            unsafe { t.free(p.as_ptr().cast(), size) };
            let after = t.stats();
            assert_eq!(after.memfreed - mid.memfreed, acc as u64);
            assert_eq!(after.numfrees - mid.numfrees, n);
        }
        let s = t.stats();
        assert_eq!(s.in_use(), 0);
        assert_eq!(s.mem_use(), 0);
        assert_eq!(s.numallocs, 10);
        let mask = (1 << 0) | (1 << 1) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 12);
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
        let p = unsafe { t.realloc(p.as_ptr().cast(), 10, 12, GFP_KERNEL)? };
        let s = t.stats();
        assert_eq!(
            (s.numallocs, s.numfrees, s.memalloced, s.memfreed),
            (2, 1, 32, 16)
        );
        // Growth.
        // SAFETY: `p` came from `t` with 12 bytes.
        let p = unsafe { t.realloc(p.as_ptr().cast(), 12, 100, GFP_KERNEL)? };
        assert_eq!(t.stats().mem_use(), 128);
        // Shrink.
        // SAFETY: `p` came from `t` with 100 bytes.
        let p = unsafe { t.realloc(p.as_ptr().cast(), 100, 50, GFP_KERNEL)? };
        assert_eq!(t.stats().mem_use(), 64);
        // SAFETY: `p` is valid for 50 bytes, of which the first 10 were kept.
        let bytes = unsafe { core::slice::from_raw_parts(p.as_ptr().cast::<u8>(), 10) };
        assert!(bytes.iter().all(|&b| b == 0x5a));
        // A failed resize keeps the block and the counters.
        let before = t.stats();
        // SAFETY: `p` came from `t` with 50 bytes.
        let r = unsafe { t.realloc(p.as_ptr().cast(), 50, KMALLOC_MAX_SIZE + 1, GFP_KERNEL) };
        assert!(r.is_err());
        assert!(t.stats() == before);
        // Resize to 0 frees.
        // SAFETY: `p` came from `t` with 50 bytes and is not used again.
        let z = unsafe { t.realloc(p.as_ptr().cast(), 50, 0, GFP_KERNEL)? };
        assert_eq!(z.len(), 0);
        let s = t.stats();
        assert_eq!((s.in_use(), s.mem_use()), (0, 0));
        assert_eq!((s.numallocs, s.numfrees), (4, 4));
        // Realloc of null allocates.
        // SAFETY: Null is accepted.
        let p = unsafe { t.realloc(ptr::null_mut(), 0, 8, GFP_KERNEL)? };
        assert_eq!(t.stats().in_use(), 1);
        // SAFETY: `p` came from `t` with 8 bytes and is not used again.
        unsafe { t.free(p.as_ptr().cast(), 8) };
        assert_eq!(t.stats().in_use(), 0);
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
        assert!(t.stats() == Stats::default());
        let p = t.mallocarray(3, 4, GFP_KERNEL)?;
        assert_eq!(t.stats().memalloced, 16);
        // SAFETY: `p` came from `t` with 12 bytes and is not used again.
        unsafe { t.free(p.as_ptr().cast(), 12) };
        // Freeing null is a no-op.
        // SAFETY: Null is accepted.
        unsafe { t.free(ptr::null_mut(), 12) };
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
            let p = unsafe { t.realloc(p.as_ptr().cast(), 24, 300, GFP_KERNEL)? };
            // SAFETY: The first 24 bytes were kept.
            let kept = unsafe { core::slice::from_raw_parts(p.as_ptr().cast::<u8>(), 24) };
            assert!(kept.iter().all(|&b| b == 7));
            let s = t.stats();
            assert_eq!(
                (s.memalloced, s.memfreed, s.size),
                (32 + 512, 32, (1 << 2) | (1 << 8))
            );
            // SAFETY: `p` came from `t` with 300 bytes and is not used again.
            unsafe { t.free(p.as_ptr().cast(), 300) };
            assert_eq!(t.stats().mem_use(), 0);
        }
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
            assert_eq!(M_T_ALLOC.stats().mem_use(), 128);
            let a = Box::<Aligned, TypedAlloc<M_T_ALLOC>>::new(Aligned([2; 64]), GFP_KERNEL)?;
            assert_eq!(ptr::from_ref(&*a) as usize % 64, 0);
            assert_eq!(a.0[63], 2);
            assert_eq!(M_T_ALLOC.stats().mem_use(), 192);
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
        use crate::list::{List, ListArc, ListLinks};
        use crate::rbtree::{RBTree, RBTreeNode};
        use crate::sync::Arc;
        use crate::try_pin_init;
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
        let is_vmalloc = |p: *const u8| {
            // SAFETY: `is_vmalloc_addr()` only compares the address with the vmalloc range.
            unsafe { bindings::is_vmalloc_addr(p.cast()) }
        };
        {
            // kmalloc memory: `TypedAlloc::realloc()` moves the elements to a smaller block.
            let mut v = Vec::<u64, TypedAlloc<M_T_SHRINK>>::with_capacity(100, GFP_KERNEL)?;
            v.push(7, GFP_KERNEL)?;
            assert_eq!(M_T_SHRINK.stats().mem_use(), 1024);
            v.shrink_to(0, GFP_KERNEL)?;
            assert_eq!((v.capacity(), v[0]), (1, 7));
            let s = M_T_SHRINK.stats();
            assert_eq!((s.in_use(), s.mem_use()), (1, 8));
        }
        assert_eq!(M_T_SHRINK.stats().in_use(), 0);
        {
            // vmalloc memory (more than kmalloc gives): copied into a new, kmalloc'd block.
            let big = 2 * KMALLOC_MAX_SIZE;
            let mut v = Vec::<u8, TypedKVAlloc<M_T_SHRINK>>::with_capacity(big, GFP_KERNEL)?;
            v.push(7, GFP_KERNEL)?;
            assert!(is_vmalloc(v.as_ptr()));
            assert_eq!(M_T_SHRINK.stats().mem_use(), page_rounded(big) as i64);
            v.shrink_to(64, GFP_KERNEL)?;
            assert!(!is_vmalloc(v.as_ptr()));
            assert_eq!((v.capacity(), v[0]), (64, 7));
            let s = M_T_SHRINK.stats();
            assert_eq!((s.in_use(), s.mem_use()), (1, 64));
        }
        let s = M_T_SHRINK.stats();
        assert_eq!((s.in_use(), s.mem_use(), s.numallocs), (0, 0, 4));
        Ok(())
    }
}
