// SPDX-License-Identifier: GPL-2.0

//! Malloc types: FreeBSD-style typed allocation accounting.
//!
//! A malloc type is a static, named object declared with [`malloc_define!`](crate::malloc_define).
//! Allocations made through a type ([`MallocType::malloc`], or [`Box`]/[`Vec`] with the
//! [`TypedAlloc`] allocator) are charged to it: each type keeps per-CPU statistics laid out as
//! FreeBSD's `struct malloc_type_stats` (bytes allocated and freed, numbers of allocations and
//! frees, the bitmask of kmalloc size classes used).
//!
//! Types register themselves: those of vmlinux at boot, those of a module while it loads; a
//! module's types are removed when it unloads, with a warning for a type that still has memory
//! allocated. No call from the type's owner is needed.
//!
//! Differences from FreeBSD's `malloc(9)`, on purpose:
//! - a failed allocation changes no counter;
//! - a `realloc` is accounted as a free of the old block and an allocation of the new one, even
//!   when the block is resized in place;
//! - an overflowing array allocation is an error ([`EOVERFLOW`]), not a panic;
//! - zero-byte requests follow Rust's allocator semantics: they allocate nothing, are accounted
//!   nowhere, and return a dangling pointer; `realloc` to zero bytes frees;
//! - `free` takes the size of the block (as Rust's allocators take a [`Layout`]).
//!
//! The accounted size of a block is the size it consumes: its kmalloc bucket size
//! (`kmalloc_size_roundup()`), or `PAGE_SIZE << get_order(size)` above
//! [`KMALLOC_MAX_CACHE_SIZE`].
//!
//! C header: [`include/linux/malloc_type.h`](srctree/include/linux/malloc_type.h)
//!
//! Reference: Documentation/core-api/malloc_types.rst
//!
//! [`Box`]: crate::alloc::Box
//! [`Vec`]: crate::alloc::Vec

use crate::{
    alloc::{
        allocator::{
            KVmalloc,
            Kmalloc,
            Vmalloc, //
        },
        flags::__GFP_ZERO,
        AllocError,
        Allocator,
        Flags,
        NumaNode, //
    },
    bindings,
    cpu::CpuId,
    ffi::c_ulong,
    percpu::{
        self,
        PerCpuRef,
        PreemptGuard, //
    },
    percpu_u64,
    prelude::*,
    types::Opaque, //
};

use core::{
    alloc::Layout,
    marker::PhantomData,
    ptr::{
        self,
        NonNull, //
    }, //
};

/// The `dtmalloc` tracepoints (`include/trace/events/dtmalloc.h`), FreeBSD's dtmalloc(4)
/// probes.
mod trace {
    use crate::bindings;
    use crate::ffi::{c_int, c_ulong};

    crate::declare_trace! {
        /// Fires `dtmalloc:malloc`.
        ///
        /// # Safety
        ///
        /// `mtp` is a registered type, `mtip` its internal part and `mtsp` the current CPU's
        /// record of its statistics.
        pub(super) unsafe fn malloc(
            mtp: *mut bindings::malloc_type,
            mtip: *mut bindings::malloc_type_internal,
            mtsp: *mut bindings::malloc_type_stats,
            size: c_ulong,
            zindx: c_int,
        );

        /// Fires `dtmalloc:free`.
        ///
        /// # Safety
        ///
        /// As for [`malloc`].
        pub(super) unsafe fn free(
            mtp: *mut bindings::malloc_type,
            mtip: *mut bindings::malloc_type_internal,
            mtsp: *mut bindings::malloc_type_stats,
            size: c_ulong,
            zindx: c_int,
        );
    }

    /// The signature of [`malloc`] and [`free`].
    pub(super) type Event = unsafe fn(
        *mut bindings::malloc_type,
        *mut bindings::malloc_type_internal,
        *mut bindings::malloc_type_stats,
        c_ulong,
        c_int,
    );

    /// Defines `$fn() -> bool`: whether tracepoint `$tp` is enabled, a branch patched in and out
    /// with the tracepoint (a jump label), so that its arguments are computed only when it is.
    macro_rules! enabled {
        ($fn:ident, $tp:ident) => {
            #[inline(always)]
            pub(super) fn $fn() -> bool {
                #[cfg(CONFIG_TRACEPOINTS)]
                {
                    // SAFETY: It is always okay to query the static key of a tracepoint.
                    unsafe {
                        crate::jump_label::static_branch_unlikely!(
                            bindings::$tp,
                            bindings::tracepoint,
                            key
                        )
                    }
                }
                #[cfg(not(CONFIG_TRACEPOINTS))]
                {
                    false
                }
            }
        };
    }

    enabled!(malloc_enabled, __tracepoint_malloc);
    enabled!(free_enabled, __tracepoint_free);
}

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

/// The largest request served by a kmalloc cache (`KMALLOC_MAX_CACHE_SIZE`); larger ones come
/// from the page allocator and have no `zindx` (-1).
pub const KMALLOC_MAX_CACHE_SIZE: usize = ZONE_SIZES[ZONE_COUNT - 1];

/// The largest request a typed allocation accepts (`KMALLOC_MAX_SIZE`).
pub const KMALLOC_MAX_SIZE: usize = bindings::MALLOC_TYPE_KMALLOC_MAX_SIZE;

/// The longest name of a type, in bytes, without the terminating NUL.
pub const NAME_MAX: usize = 31;

const _: () = assert!(NAME_MAX + 1 == bindings::MALLOC_MAX_NAME as usize);
const _: () = assert!(KMALLOC_MAX_CACHE_SIZE == bindings::MALLOC_TYPE_KMALLOC_MAX_CACHE_SIZE);
const _: () = assert!(size_of::<bindings::malloc_type_stats>() == 64);
const _: () = assert!(size_of::<bindings::malloc_type_header>() == 64);

/// Returns the `zindx` of a request of `size` bytes: the index in [`ZONE_SIZES`] of the kmalloc
/// size class that serves it, or -1 when no kmalloc cache serves it (0 or more than
/// [`KMALLOC_MAX_CACHE_SIZE`] bytes).
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
pub fn zindx(size: usize) -> i32 {
    /// The `zindx` of sizes 1 to 192 by `(size - 1) / 8`, as `kmalloc_size_index[]` maps them.
    const SMALL: [u8; 24] = [
        0, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 6,
    ];
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

/// Returns the accounted size of a request of `size` bytes: what `kmalloc_size_roundup(size)`
/// returns, that is the bucket size up to [`KMALLOC_MAX_CACHE_SIZE`] and `PAGE_SIZE <<
/// get_order(size)` above; 0 for 0.
///
/// It is computed from [`ZONE_SIZES`] rather than by calling the slab allocator, because it runs
/// on every typed allocation and free; a KUnit case checks that both agree for every size.
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

/// Returns the zone a type named `name` gets when there are `numzones` zones: a hash of the
/// name modulo `numzones`, 0 when `numzones <= 1`.
///
/// # Examples
///
/// ```
/// use kernel::malloc_type::zone_for_name;
///
/// assert_eq!(zone_for_name(c"devbuf", 1), 0);
/// assert!(zone_for_name(c"devbuf", 4) < 4);
/// ```
pub fn zone_for_name(name: &CStr, numzones: u32) -> u32 {
    // SAFETY: `name` is a valid NUL-terminated string.
    unsafe { bindings::malloc_type_zone_for_name(name.as_char_ptr(), numzones) }
}

/// Returns the number of zones (`malloc_types.numzones=`, 1 by default).
pub fn numzones() -> u32 {
    // SAFETY: No requirements.
    unsafe { bindings::malloc_type_numzones() }
}

/// Returns the number of registered types (`kernel.malloc_count`).
///
/// # Examples
///
/// ```
/// use kernel::malloc_type;
///
/// kernel::malloc_define!(M_COUNTED, "counted", "A type that is counted");
/// assert!(malloc_type::count() >= 1);
/// ```
pub fn count() -> u32 {
    // SAFETY: No requirements.
    unsafe { bindings::malloc_type_count() }
}

/// Calls `f` for each registered type, newest first, until `f` returns an error.
///
/// `f` runs with the registry mutex held: a type passed to `f` stays registered until `f`
/// returns. Allocations and frees never wait for the mutex, so `f` may allocate, but it must not
/// load or unload modules.
///
/// # Context
///
/// Process context; may sleep.
///
/// # Examples
///
/// ```
/// use kernel::malloc_type;
///
/// kernel::malloc_define!(M_WALKED, "walked", "A type found by walking the registry");
/// let mut seen = 0;
/// malloc_type::try_for_each(|t| {
///     if core::ptr::eq(t, &M_WALKED) {
///         seen += 1;
///     }
///     Ok::<(), Error>(())
/// })?;
/// assert_eq!(seen, 1);
/// # Ok::<(), Error>(())
/// ```
pub fn try_for_each<F, E>(mut f: F) -> Result<(), E>
where
    F: FnMut(&MallocType) -> Result<(), E>,
{
    struct Ctx<'a, F, E> {
        f: &'a mut F,
        err: Option<E>,
    }

    /// # Safety
    ///
    /// `mtp` is a registered type and `arg` a `Ctx<F, E>` borrowed for the call.
    unsafe extern "C" fn call<F, E>(mtp: *mut bindings::malloc_type, arg: *mut c_void) -> c_int
    where
        F: FnMut(&MallocType) -> Result<(), E>,
    {
        // SAFETY: By the safety requirements, `arg` is a valid, exclusively borrowed `Ctx`.
        let ctx = unsafe { &mut *arg.cast::<Ctx<'_, F, E>>() };
        // SAFETY: By the safety requirements, `mtp` is a registered type; it stays registered
        // (and valid) while the registry mutex is held, i.e. during this call.
        let t = unsafe { MallocType::from_raw(mtp) };
        match (ctx.f)(t) {
            Ok(()) => 0,
            Err(e) => {
                ctx.err = Some(e);
                1
            }
        }
    }

    let mut ctx = Ctx {
        f: &mut f,
        err: None,
    };
    // SAFETY: `call::<F, E>` matches the callback type; it is called with registered types and
    // `&mut ctx`, which outlives the call.
    unsafe { bindings::malloc_type_for_each(Some(call::<F, E>), ptr::from_mut(&mut ctx).cast()) };
    match ctx.err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Calls `f` for each registered type, newest first.
///
/// See [`try_for_each`] for the context and locking.
///
/// # Examples
///
/// ```
/// use kernel::malloc_type;
///
/// let mut n = 0;
/// malloc_type::for_each(|_| n += 1);
/// assert!(n >= 1);
/// ```
pub fn for_each(mut f: impl FnMut(&MallocType)) {
    let _ = try_for_each(|t| {
        f(t);
        Ok::<(), ()>(())
    });
}

/// Statistics of a type: one CPU's counters, or their sum over the possible CPUs.
///
/// The fields are FreeBSD's `struct malloc_type_stats` (`mts_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Bytes allocated (accounted sizes).
    pub memalloced: u64,
    /// Bytes freed.
    pub memfreed: u64,
    /// Number of allocations.
    pub numallocs: u64,
    /// Number of frees.
    pub numfrees: u64,
    /// Bitmask of the `zindx` values used.
    pub size: u64,
}

impl Stats {
    /// Converts a C record.
    pub fn from_raw(r: &bindings::malloc_type_stats) -> Self {
        Self {
            memalloced: r.mts_memalloced,
            memfreed: r.mts_memfreed,
            numallocs: r.mts_numallocs,
            numfrees: r.mts_numfrees,
            size: r.mts_size,
        }
    }

    /// Returns the C record (`struct malloc_type_stats`, reserved fields zero).
    pub fn to_raw(&self) -> bindings::malloc_type_stats {
        bindings::malloc_type_stats {
            mts_memalloced: self.memalloced,
            mts_memfreed: self.memfreed,
            mts_numallocs: self.numallocs,
            mts_numfrees: self.numfrees,
            mts_size: self.size,
            ..Default::default()
        }
    }

    /// Returns the number of allocations not freed (`InUse` of `vmstat -m`); meaningful for sums.
    pub fn in_use(&self) -> i64 {
        // CAST: Two's complement difference of wrapping counters.
        self.numallocs.wrapping_sub(self.numfrees) as i64
    }

    /// Returns the bytes allocated and not freed (`MemUse` of `vmstat -m`); meaningful for sums.
    pub fn mem_use(&self) -> i64 {
        // CAST: Two's complement difference of wrapping counters.
        self.memalloced.wrapping_sub(self.memfreed) as i64
    }

    fn accumulate(&mut self, o: &Self) {
        self.memalloced = self.memalloced.wrapping_add(o.memalloced);
        self.memfreed = self.memfreed.wrapping_add(o.memfreed);
        self.numallocs = self.numallocs.wrapping_add(o.numallocs);
        self.numfrees = self.numfrees.wrapping_add(o.numfrees);
        self.size |= o.size;
    }
}

/// A copy of what readers show of a type.
#[derive(Clone, Copy, Debug)]
pub struct Snapshot {
    /// The name, NUL-terminated and zero-filled.
    pub name: [u8; NAME_MAX + 1],
    /// The registration id.
    pub id: u64,
    /// The zone.
    pub zone: u32,
    /// Whether the type is defined in a loadable module.
    pub is_module: bool,
    /// The statistics summed over the possible CPUs.
    pub total: Stats,
}

/// A malloc type.
///
/// Declared with [`malloc_define!`](crate::malloc_define); the statistics exist while the type
/// is registered (see the [module documentation](self)).
///
/// # Invariants
///
/// `self.0` is a `struct malloc_type` whose `ks_shortdesc` and `ks_longdesc` are valid
/// NUL-terminated strings that live as long as `self`, with a name of at most [`NAME_MAX`]
/// bytes. Its `ks_mti` part is written only by `mm/malloc_type.c`.
///
/// # Examples
///
/// ```
/// kernel::malloc_define!(M_EXAMPLE, "example", "Example buffers");
///
/// let p = M_EXAMPLE.malloc(100, GFP_KERNEL)?;
/// let t = M_EXAMPLE.stats();
/// assert_eq!(t.numallocs, 1);
/// assert_eq!(t.memalloced, 128);
/// // SAFETY: `p` was allocated by `M_EXAMPLE` with 100 bytes and is not used again.
/// unsafe { M_EXAMPLE.free(p.as_ptr().cast(), 100) };
/// assert_eq!(M_EXAMPLE.stats().mem_use(), 0);
/// # Ok::<(), Error>(())
/// ```
#[repr(transparent)]
pub struct MallocType(Opaque<bindings::malloc_type>);

// SAFETY: The names are immutable; the rest is written by the registry under its mutex, and the
// statistics only with per-CPU operations, so a `MallocType` may be used from any thread.
unsafe impl Sync for MallocType {}

// SAFETY: See `Sync`; nothing ties a `MallocType` to a thread.
unsafe impl Send for MallocType {}

impl MallocType {
    /// Creates a type. Use [`malloc_define!`](crate::malloc_define) instead, which also
    /// registers it.
    #[doc(hidden)]
    pub const fn __new(name: &'static CStr, description: &'static CStr) -> Self {
        assert!(name.count_bytes() <= NAME_MAX, "malloc type name too long");
        // INVARIANT: `name` and `description` are static C strings; `name` was checked above.
        Self(Opaque::new(bindings::malloc_type {
            ks_shortdesc: crate::str::as_char_ptr_in_const_context(name),
            ks_longdesc: crate::str::as_char_ptr_in_const_context(description),
            // SAFETY: `malloc_type_internal` holds integers, pointers and a `list_head` of
            // pointers, for all of which zero is valid; a zeroed part means "not registered".
            ks_mti: unsafe { core::mem::zeroed() },
        }))
    }

    /// Returns the C `struct malloc_type`.
    #[inline]
    pub fn as_raw(&self) -> *mut bindings::malloc_type {
        self.0.get()
    }

    /// Creates a reference from a C `struct malloc_type`.
    ///
    /// # Safety
    ///
    /// `ptr` points to a `struct malloc_type` that satisfies the type invariants and stays valid
    /// for `'a`.
    #[inline]
    pub unsafe fn from_raw<'a>(ptr: *const bindings::malloc_type) -> &'a Self {
        // SAFETY: `MallocType` is a transparent wrapper of the C struct; validity by the safety
        // requirements.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// Returns the type's name (FreeBSD's short description, `ks_shortdesc`).
    pub fn name(&self) -> &CStr {
        // SAFETY: By the type invariant `ks_shortdesc` is a valid C string that outlives `self`
        // and is never written after construction.
        unsafe { CStr::from_char_ptr((*self.as_raw()).ks_shortdesc) }
    }

    /// Returns the type's long description (`ks_longdesc`).
    pub fn description(&self) -> &CStr {
        // SAFETY: As in `name`.
        unsafe { CStr::from_char_ptr((*self.as_raw()).ks_longdesc) }
    }

    /// Returns the type's zone (`mti_zone`): 0 for the shared kmalloc caches, else the set of
    /// dedicated buckets that serves the type.
    pub fn zone(&self) -> u32 {
        // SAFETY: The field is valid; it is written by the registry while the type is not in use,
        // and a volatile read is the kernel's `READ_ONCE()`.
        unsafe { ptr::addr_of!((*self.as_raw()).ks_mti.mti_zone).read_volatile() }
    }

    /// Returns the registration id: unique, increasing in registration order; 0 if the type is
    /// not registered.
    pub fn id(&self) -> u64 {
        // SAFETY: As in `zone`.
        unsafe { ptr::addr_of!((*self.as_raw()).ks_mti.mti_id).read_volatile() }
    }

    /// Returns whether the type is defined in a loadable module.
    pub fn is_module(&self) -> bool {
        // SAFETY: As in `zone`.
        let flags = unsafe { ptr::addr_of!((*self.as_raw()).ks_mti.mti_flags).read_volatile() };
        flags & bindings::MALLOC_TYPE_F_MODULE != 0
    }

    /// Returns whether the type is registered (has statistics).
    pub fn is_registered(&self) -> bool {
        self.stats_ref().is_some()
    }

    fn stats_ref(&self) -> Option<PerCpuRef<'_, bindings::malloc_type_stats>> {
        // SAFETY: The field is valid; a volatile read is the kernel's `READ_ONCE()`.
        let p = unsafe { ptr::addr_of!((*self.as_raw()).ks_mti.mti_stats).read_volatile() };
        // SAFETY: `mti_stats` is NULL or the type's per-CPU statistics, which the registry frees
        // only when the type can no longer be used: at the unload of the module that defines it
        // (whose code no longer runs), with readers excluded by the registry mutex. They are
        // written only by `account_alloc`/`account_free` with per-CPU operations.
        unsafe { PerCpuRef::from_raw(p) }
    }

    /// Returns `cpu`'s statistics (zero when the type is not registered or `cpu` not possible).
    pub fn stats_cpu(&self, cpu: CpuId) -> Stats {
        self.stats_ref()
            .and_then(|s| s.get(cpu))
            .map_or_else(Stats::default, |r| Stats::from_raw(&r))
    }

    /// Returns the statistics summed over the possible CPUs.
    ///
    /// The counters are read without synchronisation, as FreeBSD does: a sum taken while other
    /// CPUs allocate is not a snapshot of one instant.
    pub fn stats(&self) -> Stats {
        let mut total = Stats::default();
        if let Some(s) = self.stats_ref() {
            for cpu in percpu::possible_cpus() {
                if let Some(r) = s.get(cpu) {
                    total.accumulate(&Stats::from_raw(&r));
                }
            }
        }
        total
    }

    /// Returns a snapshot of the type.
    pub fn snapshot(&self) -> Snapshot {
        let mut name = [0u8; NAME_MAX + 1];
        let bytes = self.name().to_bytes();
        let n = bytes.len().min(NAME_MAX);
        name[..n].copy_from_slice(&bytes[..n]);
        Snapshot {
            name,
            id: self.id(),
            zone: self.zone(),
            is_module: self.is_module(),
            total: self.stats(),
        }
    }

    /// Returns the type's header in the `/proc/malloc_stats` stream.
    ///
    /// The name is truncated to [`NAME_MAX`] bytes and NUL-padded; reserved fields are zero.
    pub fn uapi_header(&self) -> bindings::malloc_type_header {
        let mut h = bindings::malloc_type_header {
            mth_id: self.id(),
            mth_zone: self.zone(),
            mth_flags: if self.is_module() {
                bindings::MALLOC_TYPE_F_MODULE
            } else {
                0
            },
            ..Default::default()
        };
        let name = self.name().to_bytes();
        for (d, &c) in h.mth_name.iter_mut().zip(name.iter().take(NAME_MAX)) {
            *d = c_char::from_ne_bytes([c]);
        }
        h
    }

    /// Accounts an allocation of `size` accounted bytes from size class `zindx` on this CPU.
    ///
    /// This is where the `dtmalloc:malloc` tracepoint fires, after the counters are updated.
    /// Inlined into the allocation paths; the tracepoint call is out of line.
    #[inline]
    fn account_alloc(&self, size: usize, zindx: i32) {
        let Some(s) = self.stats_ref() else {
            return;
        };
        // Each per-CPU operation is safe against preemption and interrupts on its own; the sums
        // over the CPUs are right even if the task moves between two of them.
        // CAST: `usize` and `u64` have the same width on 64-bit kernels.
        percpu_u64!(s, bindings::malloc_type_stats, mts_memalloced).add(size as u64);
        percpu_u64!(s, bindings::malloc_type_stats, mts_numallocs).add(1);
        if let Ok(z) = u32::try_from(zindx) {
            if z < 64 {
                percpu_u64!(s, bindings::malloc_type_stats, mts_size).or(1u64 << z);
            }
        }
        if trace::malloc_enabled() {
            self.trace(trace::malloc, s, size, zindx);
        }
    }

    /// Fires `event` (`dtmalloc:malloc` or `dtmalloc:free`) for a block of `size` accounted
    /// bytes from size class `zindx` that was just accounted in `s`.
    #[cold]
    #[inline(never)]
    fn trace(
        &self,
        event: trace::Event,
        s: PerCpuRef<'_, bindings::malloc_type_stats>,
        size: usize,
        zindx: i32,
    ) {
        let guard = PreemptGuard::new();
        let mtp = self.as_raw();
        // SAFETY: `mtp` is this registered type, the second pointer its internal part and
        // the third this CPU's record of its statistics, all valid while `self` is.
        // CAST: `usize` and `c_ulong` have the same width on 64-bit kernels.
        unsafe {
            event(
                mtp,
                ptr::addr_of_mut!((*mtp).ks_mti),
                s.this_cpu_ptr(&guard),
                size as c_ulong,
                zindx,
            )
        };
    }

    /// Accounts a free of `size` accounted bytes on this CPU.
    ///
    /// This is where the `dtmalloc:free` tracepoint fires, after the counters are updated.
    /// Inlined into the free paths; the tracepoint call is out of line.
    #[inline]
    fn account_free(&self, size: usize) {
        let Some(s) = self.stats_ref() else {
            return;
        };
        // CAST: `usize` and `u64` have the same width on 64-bit kernels.
        percpu_u64!(s, bindings::malloc_type_stats, mts_memfreed).add(size as u64);
        percpu_u64!(s, bindings::malloc_type_stats, mts_numfrees).add(1);
        if trace::free_enabled() {
            self.trace(trace::free, s, size, 0);
        }
    }

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
    unsafe fn realloc_layout(
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

/// Declares a static malloc type (FreeBSD's `MALLOC_DEFINE`).
///
/// `malloc_define!(VIS NAME, "name", "description")` defines `VIS static NAME: MallocType`,
/// registered without any call: at boot in vmlinux, at load in a module (and removed at
/// unload). It also defines a type `NAME` implementing [`MallocTypeTag`], for
/// [`TypedAlloc<NAME>`]. The name must have 1 to 31 bytes, checked at compile time; names need
/// not be unique. The name is a string literal or a constant expression that expands to one, such
/// as `concat!("bench ", 1)` (for types defined by a macro).
///
/// # Examples
///
/// ```
/// kernel::malloc_define!(M_FOO_BAR, "foo bar", "FooBar subsystem");
///
/// assert_eq!(M_FOO_BAR.name(), c"foo bar");
/// assert_eq!(M_FOO_BAR.description(), c"FooBar subsystem");
/// assert!(M_FOO_BAR.is_registered());
/// assert!(!M_FOO_BAR.is_module());
/// ```
#[macro_export]
macro_rules! malloc_define {
    ($vis:vis $name:ident, $short:expr, $long:literal $(,)?) => {
        #[doc = $long]
        $vis static $name: $crate::malloc_type::MallocType =
            $crate::malloc_type::MallocType::__new($crate::c_str!($short), $crate::c_str!($long));

        const _: () = {
            ::core::assert!(
                !$short.is_empty() && $short.len() <= $crate::malloc_type::NAME_MAX,
                "a malloc type name must have 1 to 31 bytes"
            );

            #[used]
            #[link_section = "__malloc_types_ptrs"]
            static mut __MALLOC_TYPE_PTR: *const $crate::malloc_type::MallocType = &raw const $name;
        };

        #[doc = ::core::concat!("Allocator tag of [`", ::core::stringify!($name), "`].")]
        #[allow(non_camel_case_types, dead_code)]
        $vis enum $name {}

        impl $crate::malloc_type::MallocTypeTag for $name {
            fn get() -> &'static $crate::malloc_type::MallocType {
                &$name
            }
        }
    };
}

crate::malloc_define!(
    pub M_RUST_KMALLOC,
    "rust kmalloc",
    "Untyped Rust allocations through Kmalloc (KBox, KVec, Arc, ...)"
);
crate::malloc_define!(
    pub M_RUST_VMALLOC,
    "rust vmalloc",
    "Untyped Rust allocations through Vmalloc (VBox, VVec)"
);
crate::malloc_define!(
    pub M_RUST_KVMALLOC,
    "rust kvmalloc",
    "Untyped Rust allocations through KVmalloc (KVBox, KVVec)"
);

/// Returns `size` rounded up to whole pages, as vmalloc allocates it.
fn page_rounded(size: usize) -> usize {
    size.checked_next_multiple_of(crate::page::PAGE_SIZE)
        .unwrap_or(usize::MAX)
}

/// [`Kmalloc`]'s allocator with malloc types: allocations are charged to [`M_RUST_KMALLOC`],
/// as those of a typed allocator are to their type.
///
/// # Safety
///
/// As for [`Allocator::realloc`] of [`Kmalloc`].
pub(crate) unsafe fn kmalloc_realloc(
    ptr: Option<NonNull<u8>>,
    layout: Layout,
    old_layout: Layout,
    flags: Flags,
    nid: NumaNode,
) -> Result<NonNull<[u8]>, AllocError> {
    // SAFETY: Every allocation of `Kmalloc` is charged to `M_RUST_KMALLOC` and comes from
    // kmalloc, so the safety requirements of `realloc_layout` are those of the caller.
    unsafe { M_RUST_KMALLOC.realloc_layout(ptr, layout, old_layout, flags, nid) }
}

/// [`Vmalloc`]'s allocator with malloc types: allocations are charged to [`M_RUST_VMALLOC`]
/// with their page-rounded size and zindx -1 (no kmalloc size class serves them).
///
/// A failed allocation changes no counter; a successful realloc counts as a free of the old
/// block and an allocation of the new one, as with typed allocations.
///
/// # Safety
///
/// As for [`Allocator::realloc`] of [`Vmalloc`].
pub(crate) unsafe fn vmalloc_realloc(
    ptr: Option<NonNull<u8>>,
    layout: Layout,
    old_layout: Layout,
    flags: Flags,
    nid: NumaNode,
) -> Result<NonNull<[u8]>, AllocError> {
    let old = ptr.is_some() && old_layout.size() != 0;
    // SAFETY: The caller's safety requirements are those of `realloc_unaccounted`.
    let new = unsafe { Vmalloc::realloc_unaccounted(ptr, layout, old_layout, flags, nid) }?;
    if old {
        M_RUST_VMALLOC.account_free(page_rounded(old_layout.size()));
    }
    if layout.size() != 0 {
        M_RUST_VMALLOC.account_alloc(page_rounded(layout.size()), -1);
    }
    Ok(new)
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

/// [`KVmalloc`]'s allocator with malloc types: allocations are charged to [`M_RUST_KVMALLOC`],
/// with kmalloc's accounting for the blocks kmalloc served and vmalloc's for the others.
///
/// # Safety
///
/// As for [`Allocator::realloc`] of [`KVmalloc`].
pub(crate) unsafe fn kvmalloc_realloc(
    ptr: Option<NonNull<u8>>,
    layout: Layout,
    old_layout: Layout,
    flags: Flags,
    nid: NumaNode,
) -> Result<NonNull<[u8]>, AllocError> {
    // SAFETY: Every allocation of `KVmalloc` is charged to `M_RUST_KVMALLOC`, so the safety
    // requirements of `kvrealloc_layout` are those of the caller.
    unsafe { M_RUST_KVMALLOC.kvrealloc_layout(ptr, layout, old_layout, flags, nid) }
}

impl MallocType {
    /// [`KVmalloc`]'s allocator charging this type, with the contract of
    /// [`Allocator::realloc`]: kmalloc's accounting for the blocks kmalloc served and vmalloc's
    /// (page-rounded, zindx -1) for the others. A failed allocation changes no counter; a
    /// successful resize counts as a free and an allocation.
    ///
    /// # Safety
    ///
    /// As for [`Allocator::realloc`] of [`KVmalloc`], with "this allocator" meaning
    /// `KVmalloc` allocations charged to `self`.
    unsafe fn kvrealloc_layout(
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
#[macros::kunit_tests(rust_malloc_type)]
mod tests {
    use super::*;
    use crate::alloc::{
        flags::{
            __GFP_NOWARN,
            GFP_KERNEL,
            GFP_NOWAIT, //
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
    fn zone_tables() {
        for (i, &z) in ZONE_SIZES.iter().enumerate() {
            assert_eq!(zindx(z), i as i32);
            assert_eq!(accounted_size(z), z);
            if i > 0 {
                assert_eq!(zindx(ZONE_SIZES[i - 1] + 1), i as i32);
                assert_eq!(accounted_size(ZONE_SIZES[i - 1] + 1), z);
            }
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
    fn exact_counters_one_cpu() -> Result {
        crate::malloc_define!(M_T_ONECPU, "kunit one cpu", "Counters on one CPU");
        let t = &M_T_ONECPU;
        let cpu = {
            let guard = PreemptGuard::new();
            let a = t.malloc(10, GFP_NOWAIT)?;
            let b = t.zmalloc(200, GFP_NOWAIT)?;
            let c = t.malloc(5000, GFP_NOWAIT)?;
            // SAFETY: Each pointer came from `t` with the given size and is not used again.
            unsafe {
                t.free(a.as_ptr().cast(), 10);
                t.free(b.as_ptr().cast(), 200);
            }
            let s = t.stats_cpu(guard.cpu());
            assert_eq!(s.memalloced, 16 + 256 + 8192);
            assert_eq!(s.memfreed, 16 + 256);
            assert_eq!(s.numallocs, 3);
            assert_eq!(s.numfrees, 2);
            assert_eq!(s.size, (1 << 1) | (1 << 7) | (1 << 12));
            // SAFETY: As above.
            unsafe { t.free(c.as_ptr().cast(), 5000) };
            guard.cpu()
        };
        for other in percpu::possible_cpus().filter(|&c| c != cpu) {
            assert!(t.stats_cpu(other) == Stats::default());
        }
        let s = t.stats();
        assert_eq!(s.memfreed, 16 + 256 + 8192);
        assert_eq!(s.numfrees, 3);
        assert_eq!(s.in_use(), 0);
        Ok(())
    }

    crate::malloc_define!(M_T_XCPU, "kunit cross cpu", "Counters across CPUs");

    /// Restricts the current task to the CPUs of `mask`; the task runs on one of them on return.
    fn run_on(mask: &crate::cpumask::Cpumask) -> Result {
        use crate::error::to_result;

        // SAFETY: `current_raw()` is the running task, valid for the call; `mask` is a valid
        // cpumask. `set_cpus_allowed_ptr()` migrates the task before it returns.
        to_result(unsafe {
            bindings::set_cpus_allowed_ptr(crate::task::Task::current_raw(), mask.as_raw())
        })
    }

    #[test]
    fn exact_counters_across_cpus() -> Result {
        use crate::cpumask::CpumaskVar;

        let t = &M_T_XCPU;
        let mut all = CpumaskVar::new_zero(GFP_KERNEL)?;
        all.setall();
        let mut visited = 0;
        for cpu in percpu::possible_cpus() {
            let c = cpu.as_u32() as usize;
            if c >= 3 {
                break;
            }
            // Move this test's task to `cpu` (process context, unlike a cross-CPU call, so the
            // allocations below are ordinary ones); a CPU that is not online is skipped.
            let mut one = CpumaskVar::new_zero(GFP_KERNEL)?;
            one.set(cpu);
            if run_on(&one).is_err() {
                continue;
            }
            let mut ptrs = [0usize; 3];
            {
                let guard = PreemptGuard::new();
                assert!(guard.cpu() == cpu);
                // `cpu + 1` allocations of 64 bytes on `cpu`.
                for p in ptrs.iter_mut().take(c + 1) {
                    *p = t.malloc(64, GFP_NOWAIT)?.as_ptr().cast::<u8>() as usize;
                }
            }
            visited += 1;
            let s = t.stats_cpu(cpu);
            assert_eq!(s.numallocs, c as u64 + 1);
            assert_eq!(s.memalloced, 64 * (c as u64 + 1));
            assert_eq!(s.size, 1 << 3);
            for &p in ptrs.iter().take(c + 1) {
                // SAFETY: `p` came from `t` with 64 bytes and is not used again.
                unsafe { t.free(p as *mut u8, 64) };
            }
        }
        run_on(&all)?;
        assert!(visited >= 1);
        let s = t.stats();
        assert_eq!(s.in_use(), 0);
        assert_eq!(s.mem_use(), 0);
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
    fn registry() -> Result {
        crate::malloc_define!(M_T_REG1, "kunit registry", "Registry walk");
        crate::malloc_define!(M_T_REG2, "kunit registry", "Duplicate name");
        assert!(M_T_REG1.id() != 0 && M_T_REG2.id() != 0);
        assert!(M_T_REG1.id() != M_T_REG2.id());
        let mut n = 0u32;
        let mut dup = 0;
        let mut prev_id = u64::MAX;
        let mut ok = true;
        for_each(|t| {
            n += 1;
            // Newest first: ids decrease.
            ok &= t.id() < prev_id;
            prev_id = t.id();
            ok &= t.is_registered() && t.name().to_bytes().len() <= NAME_MAX;
            if t.name() == c"kunit registry" {
                dup += 1;
                ok &= !t.is_module();
            }
        });
        assert!(ok);
        assert_eq!(dup, 2);
        assert_eq!(n, count());
        let snap = M_T_REG1.snapshot();
        assert_eq!(&snap.name[..15], b"kunit registry\0");
        assert_eq!(snap.id, M_T_REG1.id());
        let h = M_T_REG2.uapi_header();
        assert_eq!(h.mth_id, M_T_REG2.id());
        assert_eq!(h.mth_flags, 0);
        // Errors stop the walk and come back.
        let mut calls = 0;
        let r = try_for_each(|_| {
            calls += 1;
            Err(EAGAIN)
        });
        assert_eq!(r.err(), Some(EAGAIN));
        assert_eq!(calls, 1);
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

    #[test]
    fn default_types_charge_untyped_allocations() -> Result {
        use crate::alloc::{KBox, KVBox, VBox};

        // Nothing else allocates through Rust while KUnit runs this test, so the deltas are
        // exact.
        let (k, v, kv) = (
            M_RUST_KMALLOC.stats(),
            M_RUST_VMALLOC.stats(),
            M_RUST_KVMALLOC.stats(),
        );
        {
            let b = KBox::new([0u8; 100], GFP_KERNEL)?;
            let s = M_RUST_KMALLOC.stats();
            assert_eq!(s.numallocs - k.numallocs, 1);
            assert_eq!(s.memalloced - k.memalloced, 128);
            assert_ne!(s.size & (1 << 5), 0);
            drop(b);
            let s = M_RUST_KMALLOC.stats();
            assert_eq!(s.numfrees - k.numfrees, 1);
            assert_eq!(s.memfreed - k.memfreed, 128);
        }
        {
            let _b = VBox::<[u8; 5000]>::new_uninit(GFP_KERNEL)?;
            let s = M_RUST_VMALLOC.stats();
            assert_eq!(s.numallocs - v.numallocs, 1);
            assert_eq!(s.memalloced - v.memalloced, 8192);
            assert_eq!(s.size, v.size);
        }
        assert_eq!(M_RUST_VMALLOC.stats().memfreed - v.memfreed, 8192);
        {
            let _b = KVBox::new([0u8; 64], GFP_KERNEL)?;
            let s = M_RUST_KVMALLOC.stats();
            assert_eq!(s.numallocs - kv.numallocs, 1);
            assert_eq!(s.memalloced - kv.memalloced, 64);
        }
        assert_eq!(M_RUST_KVMALLOC.stats().memfreed - kv.memfreed, 64);

        // A typed allocator charges its own type only, once.
        crate::malloc_define!(M_T_ONCE, "kunit charged once", "Typed, not default");
        let k = M_RUST_KMALLOC.stats();
        {
            let _b = Box::<[u8; 100], TypedAlloc<M_T_ONCE>>::new([0; 100], GFP_KERNEL)?;
            assert_eq!(M_T_ONCE.stats().numallocs, 1);
        }
        let s = M_RUST_KMALLOC.stats();
        assert_eq!((s.numallocs, s.numfrees), (k.numallocs, k.numfrees));
        Ok(())
    }
}
