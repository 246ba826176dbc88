// SPDX-License-Identifier: GPL-2.0

//! The kmalloc size classes of malloc types: `zindx` and the accounted size of a block.
//!
//! A typed allocation is accounted with the size it consumes (FreeBSD accounts the size of the
//! zone that serves it): the object size of the kmalloc cache that serves it up to
//! [`KMALLOC_MAX_CACHE_SIZE`], the page-allocator block above it, whole pages for vmalloc. Its
//! `zindx` is the index of that object size in [`zone_sizes()`], or -1 when no kmalloc cache
//! served it.
//!
//! The size classes are the running kernel's: the object sizes of its normal kmalloc caches
//! (`kmalloc_caches[KMALLOC_NORMAL][]`), read once at boot by [`init`]. They follow the page size
//! (`KMALLOC_SHIFT_HIGH`: 8 KiB caches at most with 4 KiB pages, 32 KiB with 16 KiB pages),
//! `KMALLOC_MIN_SIZE`, and the minimum alignment the slab allocator chose at boot
//! (`__kmalloc_minalign()`: where kmalloc'd memory must be aligned for non-coherent DMA, the
//! slots of the smaller caches point to a larger cache, whose size is what they consume). Which
//! slot a request of a given size uses is `kmalloc_slab()`'s rule, `kmalloc_size_index[]` up to
//! 192 bytes and `fls(size - 1)` above, computed at compile time from the same constants.
//!
//! C header: [`include/linux/slab.h`](srctree/include/linux/slab.h)

use crate::bindings;
use core::cell::UnsafeCell;

/// The most kmalloc size classes a `zindx` can name (`MALLOC_TYPE_ZONE_COUNT_MAX`, the bits of
/// `mts_size`).
pub const ZONE_COUNT_MAX: usize = bindings::MALLOC_TYPE_ZONE_COUNT_MAX as usize;

/// The largest request served by a kmalloc cache (`KMALLOC_MAX_CACHE_SIZE`, two pages), in bytes;
/// larger ones come from the page allocator and have no `zindx` (-1).
pub const KMALLOC_MAX_CACHE_SIZE: usize = bindings::MALLOC_TYPE_KMALLOC_MAX_CACHE_SIZE;

/// The largest request a typed allocation accepts (`KMALLOC_MAX_SIZE`), in bytes.
pub const KMALLOC_MAX_SIZE: usize = bindings::MALLOC_TYPE_KMALLOC_MAX_SIZE;

/// The number of slots of a `kmem_buckets` (`KMALLOC_SHIFT_HIGH + 1`).
const SLOTS: usize = bindings::KMALLOC_SHIFT_HIGH as usize + 1;

/// [`SLOTS`] rounded up to a power of two: a slot masked with `TABLE - 1` indexes the tables
/// without a bounds check.
const TABLE: usize = SLOTS.next_power_of_two();

/// `KMALLOC_MIN_SIZE`, in bytes.
const MIN_SIZE: usize = bindings::KMALLOC_MIN_SIZE as usize;

const _: () = {
    assert!(KMALLOC_MAX_CACHE_SIZE == 1 << bindings::KMALLOC_SHIFT_HIGH);
    assert!(MIN_SIZE == 1 << bindings::KMALLOC_SHIFT_LOW && MIN_SIZE <= 256);
    // Every class has its bit in `mts_size`.
    assert!(TABLE <= ZONE_COUNT_MAX);
};

/// `kmalloc_size_index[]`, the slot of sizes 1 to 192 by `(size - 1) / 8`, as
/// `setup_kmalloc_cache_index_table()` leaves it for this `KMALLOC_MIN_SIZE`.
const SMALL: [u8; 24] = {
    let mut t = [
        3, 4, 5, 5, 6, 6, 6, 6, 1, 1, 1, 1, 7, 7, 7, 7, 2, 2, 2, 2, 2, 2, 2, 2,
    ];
    let mut i = 8;
    while i < MIN_SIZE && (i - 1) / 8 < t.len() {
        // CAST: `KMALLOC_SHIFT_LOW` is at most 8 (checked above).
        t[(i - 1) / 8] = bindings::KMALLOC_SHIFT_LOW as u8;
        i += 8;
    }
    // No 96-byte cache when `KMALLOC_MIN_SIZE` is 64 or more, no 192-byte cache from 128.
    if MIN_SIZE >= 64 {
        i = 64 + 8;
        while i <= 96 {
            t[(i - 1) / 8] = 7;
            i += 8;
        }
    }
    if MIN_SIZE >= 128 {
        i = 128 + 8;
        while i <= 192 {
            t[(i - 1) / 8] = 8;
            i += 8;
        }
    }
    t
};

/// Returns the slot of `kmalloc_caches[type][]` that serves a request of `size` bytes, 1 to
/// [`KMALLOC_MAX_CACHE_SIZE`], as `kmalloc_slab()` picks it (below `KMALLOC_SHIFT_HIGH + 1`);
/// the result for other sizes is meaningless, but below 32.
///
/// Folds to a constant for a constant `size`, as `kmalloc_index()` does in C.
///
/// # Context
///
/// Any context.
#[inline(always)]
pub(crate) fn kmalloc_slot(size: usize) -> usize {
    let slot = if size.wrapping_sub(1) < 192 {
        usize::from(SMALL[size.wrapping_sub(1) / 8])
    } else {
        // `fls(size - 1)`.
        // CAST: `leading_zeros()` of a `usize` is at most 64.
        (usize::BITS - size.wrapping_sub(1).leading_zeros()) as usize
    };
    slot & (TABLE - 1)
}

/// A kmalloc size class as the allocation paths use it: everything they need in one entry.
#[derive(Clone, Copy)]
pub(crate) struct SizeClass {
    /// The accounted size in bytes: the object size of the cache (0 for a slot without one).
    pub(crate) size: usize,
    /// The bit of the class in `mts_size` (`1 << zindx`; 0 for a slot without a cache).
    pub(crate) bit: u64,
    /// The `zindx`: the index of `size` in [`zone_sizes()`] (-1 for a slot without a cache).
    pub(crate) zindx: i32,
}

/// The size classes of the kernel: by slot of `kmalloc_caches[type][]`, and by `zindx`.
struct Classes {
    /// The class of each slot.
    by_slot: [SizeClass; TABLE],
    /// The distinct object sizes of the caches in bytes, ascending, by `zindx`; then zeroes.
    zones: [usize; TABLE],
    /// The number of classes in `zones`.
    count: usize,
}

impl Classes {
    /// The classes of caches whose object size in bytes by slot is `slot_size` (0 for none).
    const fn new(slot_size: &[usize; TABLE]) -> Self {
        let mut c = Classes {
            by_slot: [SizeClass {
                size: 0,
                bit: 0,
                zindx: -1,
            }; TABLE],
            zones: [0; TABLE],
            count: 0,
        };
        // The distinct sizes in ascending order: each one the smallest above the previous.
        let mut last = 0;
        loop {
            let mut next = usize::MAX;
            let mut slot = 0;
            while slot < TABLE {
                if slot_size[slot] > last && slot_size[slot] < next {
                    next = slot_size[slot];
                }
                slot += 1;
            }
            if next == usize::MAX {
                break;
            }
            c.zones[c.count] = next;
            c.count += 1;
            last = next;
        }
        let mut slot = 0;
        while slot < TABLE {
            let mut z = 0;
            while z < c.count {
                if c.zones[z] == slot_size[slot] {
                    c.by_slot[slot] = SizeClass {
                        size: slot_size[slot],
                        bit: 1 << z,
                        // CAST: `z` is below `TABLE`, at most 64.
                        zindx: z as i32,
                    };
                }
                z += 1;
            }
            slot += 1;
        }
        c
    }
}

/// The object sizes `create_kmalloc_caches()` gives the caches of each slot when nothing aliases
/// them: `2^slot` from `KMALLOC_SHIFT_LOW` to `KMALLOC_SHIFT_HIGH`, 96 and 192 bytes in slots 1
/// and 2 when `KMALLOC_MIN_SIZE` allows them (`kmalloc_info[]`). What [`init`] reads replaces
/// them at boot.
const BUILD_TIME_SIZES: [usize; TABLE] = {
    let mut t = [0; TABLE];
    let mut slot = bindings::KMALLOC_SHIFT_LOW as usize;
    while slot < SLOTS {
        t[slot] = 1 << slot;
        slot += 1;
    }
    if MIN_SIZE <= 32 {
        t[1] = 96;
    }
    if MIN_SIZE <= 64 {
        t[2] = 192;
    }
    t
};

/// The size classes of [`BUILD_TIME_SIZES`]: those of the running kernel unless
/// [`classes_at_run_time`] says otherwise. A constant, so that the class of a constant size folds
/// into the code that uses it.
const BUILD_TIME_CLASSES: Classes = Classes::new(&BUILD_TIME_SIZES);

/// Returns whether the kmalloc caches differ from [`BUILD_TIME_SIZES`], so that the size classes
/// must be looked up in the table [`init`] read (the `malloc_type_classes.runtime` static key, a
/// single no-op instruction when they do not).
#[inline(always)]
pub(crate) fn classes_at_run_time() -> bool {
    // SAFETY: `malloc_type_classes` is a static key defined by C (`mm/malloc_type.c`); it is
    // always okay to query it.
    unsafe {
        crate::jump_label::static_branch_unlikely!(
            bindings::malloc_type_classes,
            bindings::malloc_type_classes_switch,
            runtime
        )
    }
}

/// The size classes, written by [`init`] only.
struct ClassTable(UnsafeCell<Classes>);

// SAFETY: The table is written once, by `init()`, before the secondary CPUs are started and
// before any typed allocation; it is only read after.
unsafe impl Sync for ClassTable {}

static CLASSES: ClassTable = ClassTable(UnsafeCell::new(BUILD_TIME_CLASSES));

/// The size classes.
#[inline(always)]
fn classes() -> &'static Classes {
    // SAFETY: `CLASSES` is only written by `init()`, before anything reads it (see `Sync`).
    unsafe { &*CLASSES.0.get() }
}

/// The class of slot `slot` of `kmalloc_caches[type][]` ([`kmalloc_slot`]).
#[inline(always)]
pub(crate) fn class(slot: usize) -> SizeClass {
    if classes_at_run_time() {
        classes().by_slot[slot & (TABLE - 1)]
    } else {
        built_in_class(slot)
    }
}

/// The class of slot `slot` of `kmalloc_caches[type][]` ([`kmalloc_slot`]) when
/// [`classes_at_run_time`] is false: a constant for a constant `slot`.
///
/// The allocation fast path uses it behind its own test of [`classes_at_run_time`], so that the
/// accounting that follows has the class's size and bit as immediates (a class picked from
/// either table would be held in registers, a few instructions more on every allocation).
#[inline(always)]
pub(crate) fn built_in_class(slot: usize) -> SizeClass {
    BUILD_TIME_CLASSES.by_slot[slot & (TABLE - 1)]
}

/// The normal kmalloc cache at slot `slot` of `kmalloc_caches[KMALLOC_NORMAL]`: NULL for a slot
/// without one.
///
/// # Safety
///
/// `slot` is below `KMALLOC_SHIFT_HIGH + 1`.
#[inline(always)]
pub(crate) unsafe fn normal_cache(slot: usize) -> *mut bindings::kmem_cache {
    let caches = &raw const bindings::kmalloc_caches;
    let normal = bindings::kmalloc_cache_type_KMALLOC_NORMAL as usize;
    // SAFETY: `kmalloc_caches` is set up before any initcall and not written after boot
    // (`__ro_after_init`); `KMALLOC_NORMAL` is one of its rows, and `slot` is within a
    // `kmem_buckets` (safety requirements).
    unsafe {
        *caches
            .cast::<bindings::kmem_buckets>()
            .add(normal)
            .cast::<*mut bindings::kmem_cache>()
            .add(slot)
    }
}

/// Reads the size classes of the running kernel from its normal kmalloc caches: what
/// [`zone_sizes()`], [`zindx`], [`accounted_size`] and the allocation paths use from then on.
/// Returns whether they differ from [`BUILD_TIME_SIZES`]: the caller then enables
/// `malloc_type_classes.runtime` ([`classes_at_run_time`]).
///
/// Called by `malloc_type_init()` (`mm/malloc_type.c`, from `mm_core_init()`).
///
/// # Safety
///
/// Called once, after `create_kmalloc_caches()`, before the secondary CPUs are started and
/// before any typed allocation.
#[no_mangle]
pub(crate) unsafe extern "C" fn malloc_type_init_size_classes() -> bool {
    let mut sizes = [0; TABLE];
    for (slot, size) in sizes.iter_mut().enumerate().take(SLOTS) {
        // SAFETY: `slot` is below `SLOTS`.
        let s = unsafe { normal_cache(slot) };
        if !s.is_null() {
            // SAFETY: `s` is a live kmalloc cache.
            *size = unsafe { bindings::kmem_cache_size(s) } as usize;
        }
    }
    // SAFETY: Nothing reads `CLASSES` concurrently (safety requirements).
    unsafe { CLASSES.0.get().write(Classes::new(&sizes)) };
    sizes != BUILD_TIME_SIZES
}

/// Returns the size in bytes of the kmalloc size class `zindx` names ([`zone_sizes()`]), or 0
/// past the last class, for C.
///
/// # Context
///
/// Any context, after `malloc_type_init_size_classes()`.
#[no_mangle]
pub(crate) extern "C" fn malloc_type_zone_size(zindx: u32) -> usize {
    // CAST: A `u32` fits in the `usize` of every 64-bit target.
    zone_sizes().get(zindx as usize).copied().unwrap_or(0)
}

/// Returns the kmalloc size classes of the running kernel in bytes, ascending, by `zindx`
/// (`vm.malloc_zone_sizes`): the distinct object sizes of its normal kmalloc caches, from the
/// smallest one a request can get (8 bytes, or the DMA alignment where kmalloc keeps it) to
/// [`KMALLOC_MAX_CACHE_SIZE`]. At most [`ZONE_COUNT_MAX`] classes.
///
/// # Examples
///
/// ```
/// use kernel::malloc_type::{zindx, zone_sizes, KMALLOC_MAX_CACHE_SIZE};
///
/// let sizes = zone_sizes();
/// assert_eq!(sizes.last(), Some(&KMALLOC_MAX_CACHE_SIZE));
/// for (z, &size) in sizes.iter().enumerate() {
///     assert_eq!(zindx(size), z as i32);
/// }
/// ```
#[inline]
pub fn zone_sizes() -> &'static [usize] {
    let c = classes();
    &c.zones[..c.count]
}

/// Returns the `zindx` of a request of `size` bytes: the index in [`zone_sizes()`] of the
/// kmalloc size class that serves it, or -1 when no kmalloc cache serves it (0 or more than
/// [`KMALLOC_MAX_CACHE_SIZE`] bytes).
///
/// # Context
///
/// Any context.
///
/// # Examples
///
/// ```
/// use kernel::malloc_type::{zindx, KMALLOC_MAX_CACHE_SIZE};
///
/// assert_eq!(zindx(KMALLOC_MAX_CACHE_SIZE + 1), -1);
/// assert_eq!(zindx(0), -1);
/// assert!(zindx(1) <= zindx(9));
/// ```
#[inline]
pub fn zindx(size: usize) -> i32 {
    if size.wrapping_sub(1) < KMALLOC_MAX_CACHE_SIZE {
        class(kmalloc_slot(size)).zindx
    } else {
        -1
    }
}

/// Returns the accounted size in bytes of a kmalloc request of `size` bytes: what
/// `kmalloc_size_roundup(size)` returns, that is the object size of the cache that serves it up
/// to [`KMALLOC_MAX_CACHE_SIZE`] and `PAGE_SIZE << get_order(size)` above; 0 for 0.
///
/// It is computed from the size classes rather than by calling the slab allocator, because it
/// runs on every typed allocation and free; a KUnit case checks that both agree for every size.
///
/// # Context
///
/// Any context.
///
/// # Examples
///
/// ```
/// use kernel::malloc_type::{accounted_size, KMALLOC_MAX_CACHE_SIZE};
///
/// assert_eq!(accounted_size(0), 0);
/// assert!(accounted_size(1) >= 8);
/// assert_eq!(accounted_size(KMALLOC_MAX_CACHE_SIZE), KMALLOC_MAX_CACHE_SIZE);
/// assert_eq!(accounted_size(KMALLOC_MAX_CACHE_SIZE + 1), 2 * KMALLOC_MAX_CACHE_SIZE);
/// ```
#[inline]
pub fn accounted_size(size: usize) -> usize {
    if size.wrapping_sub(1) < KMALLOC_MAX_CACHE_SIZE {
        class(kmalloc_slot(size)).size
    } else if size > KMALLOC_MAX_CACHE_SIZE && size <= KMALLOC_MAX_SIZE {
        // Large kmalloc: `PAGE_SIZE << get_order(size)`, the next power of two above a page.
        size.next_power_of_two()
    } else {
        size
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
        let sizes = zone_sizes();
        assert!(!sizes.is_empty() && sizes.len() <= ZONE_COUNT_MAX);
        assert_eq!(sizes.last(), Some(&KMALLOC_MAX_CACHE_SIZE));
        for (i, &z) in sizes.iter().enumerate() {
            assert_eq!(zindx(z), i as i32);
            assert_eq!(accounted_size(z), z);
            if i > 0 {
                assert!(sizes[i - 1] < z);
                assert_eq!(zindx(sizes[i - 1] + 1), i as i32);
                assert_eq!(accounted_size(sizes[i - 1] + 1), z);
            }
        }
        assert_eq!(zindx(0), -1);
        assert_eq!(zindx(KMALLOC_MAX_CACHE_SIZE + 1), -1);
        assert_eq!(
            accounted_size(KMALLOC_MAX_CACHE_SIZE + 1),
            4 * crate::page::PAGE_SIZE
        );
        // The classes agree with the slab allocator for every kmalloc'd size and for large ones.
        let large = [
            KMALLOC_MAX_CACHE_SIZE + 1,
            KMALLOC_MAX_CACHE_SIZE + crate::page::PAGE_SIZE,
            2 * KMALLOC_MAX_CACHE_SIZE,
            2 * KMALLOC_MAX_CACHE_SIZE + 1,
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
                assert_eq!(sizes[zindx(size) as usize], want);
            }
        }
    }

    #[test]
    fn kmalloc_cache_slots() {
        // The slot that `kmalloc_slot()` picks for every size a cache serves holds a normal
        // kmalloc cache of the size that the class of that slot accounts, with that class's
        // `zindx` and `mts_size` bit; and every slot with a cache has the class of its size.
        for size in 1..=KMALLOC_MAX_CACHE_SIZE {
            let slot = kmalloc_slot(size);
            assert!(slot < SLOTS);
            // SAFETY: `slot` is below `SLOTS`.
            let s = unsafe { normal_cache(slot) };
            assert!(!s.is_null());
            // SAFETY: `s` is a live kmalloc cache.
            let object_size = unsafe { bindings::kmem_cache_size(s) } as usize;
            let c = class(slot);
            assert_eq!(c.size, object_size);
            assert!(c.size >= size);
            assert_eq!(zone_sizes()[c.zindx as usize], object_size);
            assert_eq!(c.bit, 1 << c.zindx);
        }
        let mut live = [0; TABLE];
        for (slot, size) in live.iter_mut().enumerate().take(SLOTS) {
            // SAFETY: `slot` is below `SLOTS`.
            let s = unsafe { normal_cache(slot) };
            if s.is_null() {
                assert_eq!(class(slot).zindx, -1);
            } else {
                // SAFETY: `s` is a live kmalloc cache.
                *size = unsafe { bindings::kmem_cache_size(s) } as usize;
                assert_eq!(class(slot).size, *size);
            }
        }
        // The classes folded in at compile time are used exactly when they are the caches'.
        assert_eq!(classes_at_run_time(), live != BUILD_TIME_SIZES);
    }

    #[test]
    fn classes_of_aliased_slots() {
        // Where the boot-time minimum alignment is 128 bytes (arm64 without a bounce buffer for
        // DMA), the slots of 8 to 96 bytes hold the 128-byte cache and that of 192 bytes the
        // 256-byte one: the classes are what the slots hold, each once, in ascending order.
        let mut sizes = [0; TABLE];
        for (slot, size) in sizes.iter_mut().enumerate().take(SLOTS) {
            *size = match slot {
                0 => 0,
                1 | 3..=7 => 128,
                2 | 8 => 256,
                _ => 1 << slot,
            };
        }
        let c = Classes::new(&sizes);
        assert_eq!(c.count, SLOTS - 7);
        assert_eq!(c.zones[..3], [128, 256, 512]);
        assert_eq!(c.zones[c.count - 1], KMALLOC_MAX_CACHE_SIZE);
        assert_eq!(c.by_slot[3].size, 128);
        assert_eq!(c.by_slot[3].zindx, 0);
        assert_eq!(c.by_slot[1].bit, 1);
        assert_eq!(c.by_slot[2].zindx, 1);
        assert_eq!(c.by_slot[8].bit, 2);
        assert_eq!(c.by_slot[0].zindx, -1);
        assert_eq!(c.by_slot[0].size, 0);
        // The build-time classes: 8 bytes to two pages, with 96 and 192 where
        // `KMALLOC_MIN_SIZE` allows them.
        let b = Classes::new(&BUILD_TIME_SIZES);
        assert_eq!(b.zones[0], MIN_SIZE);
        assert_eq!(b.zones[b.count - 1], KMALLOC_MAX_CACHE_SIZE);
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
