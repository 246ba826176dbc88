// SPDX-License-Identifier: GPL-2.0

//! The kmalloc size classes of malloc types: `zindx` and the accounted size of a block.
//!
//! A typed allocation is accounted with the size it consumes (FreeBSD accounts the size of the
//! zone that serves it): its kmalloc bucket size up to [`KMALLOC_MAX_CACHE_SIZE`], the
//! page-allocator block above it, whole pages for vmalloc. Its `zindx` is the index of the
//! kmalloc size class that served it in [`ZONE_SIZES`], or -1 when no kmalloc cache did.
//!
//! C header: [`include/linux/slab.h`](srctree/include/linux/slab.h)

use crate::bindings;

/// Number of kmalloc size classes a `zindx` can name on x86_64 (`vm.malloc_zone_count`).
pub const ZONE_COUNT: usize = 13;

/// The kmalloc size class of each `zindx`, in bytes (`vm.malloc_zone_sizes`).
///
/// # Examples
///
/// ```
/// use kernel::malloc_type::{ZONE_COUNT, ZONE_SIZES};
///
/// assert_eq!(ZONE_SIZES.len(), ZONE_COUNT);
/// assert_eq!(ZONE_SIZES[4], 96);
/// assert_eq!(ZONE_SIZES[ZONE_COUNT - 1], 8192);
/// ```
pub const ZONE_SIZES: [usize; ZONE_COUNT] = [
    8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192,
];

/// The slot in `kmalloc_caches[type][]` of the kmalloc cache of each `zindx`: `kmalloc_index()`
/// of its size (96 and 192 bytes have slots 1 and 2, the powers of two `2^n` slot `n`).
pub(crate) const KMALLOC_INDEX: [u8; ZONE_COUNT] = [3, 4, 5, 6, 1, 7, 2, 8, 9, 10, 11, 12, 13];

const _: () = {
    let mut z = 0;
    while z < ZONE_COUNT {
        // Every slot exists in a `kmem_buckets`.
        assert!((KMALLOC_INDEX[z] as usize) < bindings::KMALLOC_SHIFT_HIGH as usize + 1);
        z += 1;
    }
};

/// The `zindx` of sizes 1 to 192 by `(size - 1) / 8`, as `kmalloc_size_index[]` maps them.
const SMALL: [u8; 24] = [
    0, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 6,
];

/// The largest request served by a kmalloc cache (`KMALLOC_MAX_CACHE_SIZE`), in bytes; larger
/// ones come from the page allocator and have no `zindx` (-1).
pub const KMALLOC_MAX_CACHE_SIZE: usize = ZONE_SIZES[ZONE_COUNT - 1];

/// The largest request a typed allocation accepts (`KMALLOC_MAX_SIZE`), in bytes.
pub const KMALLOC_MAX_SIZE: usize = bindings::MALLOC_TYPE_KMALLOC_MAX_SIZE;

const _: () = assert!(KMALLOC_MAX_CACHE_SIZE == bindings::MALLOC_TYPE_KMALLOC_MAX_CACHE_SIZE);

/// Returns the `zindx` of a request of `size` bytes: the index in [`ZONE_SIZES`] of the kmalloc
/// size class that serves it, or -1 when no kmalloc cache serves it (0 or more than
/// [`KMALLOC_MAX_CACHE_SIZE`] bytes).
///
/// # Context
///
/// Any context.
///
/// # Examples
///
/// ```
/// use kernel::malloc_type::zindx;
///
/// assert_eq!(zindx(1), 0);
/// assert_eq!(zindx(9), 1);
/// assert_eq!(zindx(97), 5);
/// assert_eq!(zindx(8192), 12);
/// assert_eq!(zindx(8193), -1);
/// assert_eq!(zindx(0), -1);
/// ```
#[inline]
pub fn zindx(size: usize) -> i32 {
    match size {
        0 => -1,
        // CAST: Values of `SMALL` are below `ZONE_COUNT`.
        1..=192 => i32::from(SMALL[(size - 1) / 8]),
        // 256 (zindx 7) to 8192 (12): the next power of two, as `fls(size - 1)` finds it.
        // CAST: `leading_zeros()` of a `usize` is at most 64.
        193..=KMALLOC_MAX_CACHE_SIZE => (usize::BITS - (size - 1).leading_zeros()) as i32 - 1,
        _ => -1,
    }
}

/// Returns the `zindx` of a request of `size` bytes that a kmalloc cache serves (1 to
/// [`KMALLOC_MAX_CACHE_SIZE`]); the result for other sizes is meaningless, but below 16.
///
/// [`zindx`] without the range checks, for the allocation fast path, which has checked the size
/// before.
///
/// # Context
///
/// Any context.
#[inline(always)]
pub(crate) fn cache_zindx(size: usize) -> usize {
    let z = if size.wrapping_sub(1) < 192 {
        usize::from(SMALL[size.wrapping_sub(1) / 8])
    } else {
        // CAST: `leading_zeros()` of a `usize` is at most 64.
        (usize::BITS - size.wrapping_sub(1).leading_zeros()) as usize - 1
    };
    z & 15
}

/// Returns the accounted size in bytes of a kmalloc request of `size` bytes: what
/// `kmalloc_size_roundup(size)` returns, that is the bucket size up to
/// [`KMALLOC_MAX_CACHE_SIZE`] and `PAGE_SIZE << get_order(size)` above; 0 for 0.
///
/// It is computed from [`ZONE_SIZES`] rather than by calling the slab allocator, because it runs
/// on every typed allocation and free; a KUnit case checks that both agree for every size.
///
/// # Context
///
/// Any context.
///
/// # Examples
///
/// ```
/// use kernel::malloc_type::accounted_size;
///
/// assert_eq!(accounted_size(0), 0);
/// assert_eq!(accounted_size(1), 8);
/// assert_eq!(accounted_size(97), 128);
/// assert_eq!(accounted_size(8193), 16384);
/// ```
#[inline]
pub fn accounted_size(size: usize) -> usize {
    match usize::try_from(zindx(size)) {
        Ok(z) => ZONE_SIZES[z],
        // Large kmalloc: `PAGE_SIZE << get_order(size)`, the next power of two above a page.
        Err(_) if size > KMALLOC_MAX_CACHE_SIZE && size <= KMALLOC_MAX_SIZE => {
            size.next_power_of_two()
        }
        Err(_) => size,
    }
}

/// Returns the accounted size in bytes of a vmalloc block of `size` bytes: `size` rounded up to
/// whole pages, as vmalloc allocates it (`usize::MAX` when that overflows, a size no allocation
/// has).
///
/// # Context
///
/// Any context.
#[inline]
pub(crate) fn page_rounded(size: usize) -> usize {
    size.checked_next_multiple_of(crate::page::PAGE_SIZE)
        .unwrap_or(usize::MAX)
}

/// Returns whether a shrink of vmalloc memory with `flags` moves its contents to a new area
/// rather than resizing in place, so that the area consumes what it is charged
/// ([`page_rounded`] of the new size).
///
/// `vrealloc()` frees the tail pages of a shrink, except when the flags lack `__GFP_IO` or
/// `__GFP_FS` (and for huge-page areas), when it keeps them. Moving frees the old area with
/// `vfree()`, which may sleep: with flags that do not allow blocking the area stays as it is,
/// charged less than it consumes until it is freed.
///
/// # Context
///
/// Any context.
#[inline]
pub(crate) fn vmalloc_shrink_moves(flags: crate::alloc::Flags) -> bool {
    let raw = flags.as_raw();
    let io_fs = (1 << bindings::___GFP_IO_BIT) | (1 << bindings::___GFP_FS_BIT);
    let blocking = 1 << bindings::___GFP_DIRECT_RECLAIM_BIT;
    raw & blocking != 0 && raw & io_fs != io_fs
}

#[cfg(CONFIG_RUST_MALLOC_TYPE_KUNIT_TEST)]
#[macros::kunit_tests(rust_malloc_type_size_class)]
mod tests {
    use super::*;

    #[test]
    fn zone_tables() {
        for (i, &z) in ZONE_SIZES.iter().enumerate() {
            assert_eq!(zindx(z), i as i32);
            assert_eq!(accounted_size(z), z);
            if i > 0 {
                assert_eq!(zindx(ZONE_SIZES[i - 1] + 1), i as i32);
                assert_eq!(accounted_size(ZONE_SIZES[i - 1] + 1), z);
            }
        }
        for size in 1..=KMALLOC_MAX_CACHE_SIZE {
            assert_eq!(cache_zindx(size) as i32, zindx(size));
        }
        assert_eq!(zindx(KMALLOC_MAX_CACHE_SIZE + 1), -1);
        assert_eq!(
            accounted_size(KMALLOC_MAX_CACHE_SIZE + 1),
            4 * crate::page::PAGE_SIZE
        );
        // The tables agree with the slab allocator for every kmalloc'd size and for large ones.
        let large = [
            8193,
            12288,
            16384,
            16385,
            65536,
            1 << 20,
            (1 << 20) + 1,
            KMALLOC_MAX_SIZE,
        ];
        for size in Iterator::chain(1..=KMALLOC_MAX_CACHE_SIZE, large) {
            // SAFETY: `kmalloc_size_roundup()` accepts any size.
            let want = unsafe { bindings::kmalloc_size_roundup(size) };
            assert_eq!(accounted_size(size), want);
            if size <= KMALLOC_MAX_CACHE_SIZE {
                assert_eq!(ZONE_SIZES[zindx(size) as usize], want);
            }
        }
    }

    #[test]
    fn kmalloc_cache_slots() {
        // The slot of each size class holds the running kernel's normal kmalloc cache of that
        // size, and so does the slot the slab allocator picks for a request of that size.
        for (z, &size) in ZONE_SIZES.iter().enumerate() {
            let caches = &raw const bindings::kmalloc_caches;
            let normal = bindings::kmalloc_cache_type_KMALLOC_NORMAL as usize;
            // SAFETY: `kmalloc_caches` is set up before any initcall and not written after boot;
            // the index is within its bounds.
            let s = unsafe { (*caches)[normal][usize::from(KMALLOC_INDEX[z])] };
            assert!(!s.is_null());
            // SAFETY: `s` is a live kmalloc cache.
            assert_eq!(unsafe { bindings::kmem_cache_size(s) } as usize, size);
        }
    }

    #[test]
    fn vmalloc_shrinks() {
        use crate::alloc::flags::{
            GFP_ATOMIC,
            GFP_KERNEL,
            GFP_NOWAIT, //
        };
        // `vrealloc()` frees the tail pages itself.
        assert!(!vmalloc_shrink_moves(GFP_KERNEL));
        // It cannot move without sleeping.
        assert!(!vmalloc_shrink_moves(GFP_NOWAIT));
        assert!(!vmalloc_shrink_moves(GFP_ATOMIC));
    }

    #[test]
    fn page_rounding() {
        let page = crate::page::PAGE_SIZE;
        assert_eq!(page_rounded(0), 0);
        assert_eq!(page_rounded(1), page);
        assert_eq!(page_rounded(page), page);
        assert_eq!(page_rounded(page + 1), 2 * page);
        assert_eq!(page_rounded(usize::MAX), usize::MAX);
    }
}
