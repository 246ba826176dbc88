// SPDX-License-Identifier: GPL-2.0

//! The statistics of malloc types: the counters of FreeBSD's `struct malloc_type_stats`, one
//! record per possible CPU.
//!
//! Each registered type owns a record per possible CPU (`mti_stats`, a `struct
//! malloc_type_counters`, the kernel's own: the stream of `/proc/malloc_stats` copies it into
//! the ABI's `struct malloc_type_stats`). Allocations and
//! frees update the current CPU's record with single per-CPU additions (`this_cpu_add()`), with
//! no lock and no atomic read-modify-write on a shared cache line. Readers load the records of
//! every CPU word by word (`READ_ONCE()`), without synchronisation, as FreeBSD's readers do: a
//! sum taken while other CPUs allocate is not a snapshot of one instant, and its differences
//! (in use, bytes in use) may even be negative for a moment.
//!
//! C headers: [`include/linux/malloc_type.h`](srctree/include/linux/malloc_type.h),
//! [`include/uapi/linux/malloc_type.h`](srctree/include/uapi/linux/malloc_type.h)

use super::{
    trace,
    MallocType,
    NAME_MAX,
    OWNER_MAX,
    ZONE_COUNT_MAX, //
};
use crate::{
    alloc::AllocError,
    bindings,
    cpu::CpuId,
    ffi::{
        c_char,
        c_ulong, //
    },
    percpu::{
        PerCpuRef,
        PreemptGuard, //
    },
    percpu_u64,
    sync::atomic::{
        atomic_load,
        Acquire,
        Relaxed, //
    }, //
};
use core::ptr;

const _: () = assert!(size_of::<bindings::malloc_type_header>() == 128);

/// Statistics of a type: one CPU's counters, or their sum over the possible CPUs.
///
/// The fields are FreeBSD's `struct malloc_type_stats` (`mts_*`): byte counts are accounted
/// sizes (see [`accounted_size`](super::accounted_size)), all counters wrap.
///
/// # Examples
///
/// ```
/// use kernel::malloc_type::Stats;
///
/// let s = Stats {
///     memalloced: 128 + 64,
///     memfreed: 64,
///     numallocs: 2,
///     numfrees: 1,
///     size: (1 << 3) | (1 << 5),
///     numfailures: 0,
/// };
/// assert_eq!(s.in_use(), 1);
/// assert_eq!(s.mem_use(), 128);
/// assert!(Stats::from_raw(&s.to_raw()) == s);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Bytes allocated (`mts_memalloced`).
    pub memalloced: u64,
    /// Bytes freed (`mts_memfreed`).
    pub memfreed: u64,
    /// Number of allocations (`mts_numallocs`).
    pub numallocs: u64,
    /// Number of frees (`mts_numfrees`).
    pub numfrees: u64,
    /// Bitmask of the `zindx` values used (`mts_size`).
    pub size: u64,
    /// Number of typed allocations that returned no memory (`mts_numfailures`).
    pub numfailures: u64,
}

impl Stats {
    /// Converts a C record (`struct malloc_type_counters`).
    ///
    /// # Context
    ///
    /// Any context.
    pub fn from_raw(r: &bindings::malloc_type_counters) -> Self {
        Self {
            memalloced: r.mts_memalloced,
            memfreed: r.mts_memfreed,
            numallocs: r.mts_numallocs,
            numfrees: r.mts_numfrees,
            size: r.mts_size,
            numfailures: r.mts_numfailures,
        }
    }

    /// Returns the C record (`struct malloc_type_counters`).
    ///
    /// # Context
    ///
    /// Any context.
    pub fn to_raw(&self) -> bindings::malloc_type_counters {
        bindings::malloc_type_counters {
            mts_memalloced: self.memalloced,
            mts_memfreed: self.memfreed,
            mts_numallocs: self.numallocs,
            mts_numfrees: self.numfrees,
            mts_size: self.size,
            mts_numfailures: self.numfailures,
        }
    }

    /// Reads a record that the CPU it belongs to may be updating, word by word.
    ///
    /// # Safety
    ///
    /// `r` points to a valid record, written concurrently only by per-CPU operations, each of
    /// which writes one aligned word.
    unsafe fn read_once(r: *mut bindings::malloc_type_counters) -> Self {
        /// Reads the counter at `p` once (`READ_ONCE()`).
        ///
        /// # Safety
        ///
        /// As for [`Stats::read_once`], for the counter at `p`.
        unsafe fn load(p: *mut u64) -> u64 {
            // SAFETY: `p` is a valid, aligned `u64`, and its concurrent stores are single-word
            // per-CPU operations, which are atomic.
            // ORDERING: Relaxed, `READ_ONCE()`: each counter on its own, no order among them.
            unsafe { atomic_load(p, Relaxed) }
        }

        // SAFETY: Each field of the valid record `r` satisfies the requirements of `load`.
        unsafe {
            Self {
                memalloced: load(ptr::addr_of_mut!((*r).mts_memalloced)),
                memfreed: load(ptr::addr_of_mut!((*r).mts_memfreed)),
                numallocs: load(ptr::addr_of_mut!((*r).mts_numallocs)),
                numfrees: load(ptr::addr_of_mut!((*r).mts_numfrees)),
                size: load(ptr::addr_of_mut!((*r).mts_size)),
                numfailures: load(ptr::addr_of_mut!((*r).mts_numfailures)),
            }
        }
    }

    /// Returns the number of allocations not freed (`InUse` of `vmstat -m`); meaningful for sums.
    ///
    /// # Context
    ///
    /// Any context.
    pub fn in_use(&self) -> i64 {
        // CAST: Two's complement difference of wrapping counters.
        self.numallocs.wrapping_sub(self.numfrees) as i64
    }

    /// Returns the bytes allocated and not freed (`MemUse` of `vmstat -m`); meaningful for sums.
    ///
    /// # Context
    ///
    /// Any context.
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
        self.numfailures = self.numfailures.wrapping_add(o.numfailures);
    }
}

/// A copy of what readers show of a type: its name, registration and summed statistics.
#[derive(Clone, Copy, Debug)]
pub struct Snapshot {
    /// The name, NUL-terminated and zero-filled.
    pub name: [u8; NAME_MAX + 1],
    /// The registration id (0: not registered).
    pub id: u64,
    /// The zone (`mti_zone`).
    pub zone: u32,
    /// Whether the type is defined in a loadable module.
    pub is_module: bool,
    /// The statistics summed over the possible CPUs.
    pub total: Stats,
}

impl MallocType {
    /// Returns the type's per-CPU statistics, `None` when it is not registered; they stay
    /// allocated while `_rcu` lives.
    ///
    /// `_rcu` keeps preemption disabled: an RCU-sched read-side critical section, which the
    /// registry waits for (`synchronize_rcu()`) between clearing `mti_stats` at unregistration
    /// and freeing the statistics.
    #[inline]
    pub(super) fn stats_ref<'g>(
        &self,
        _rcu: &'g PreemptGuard,
    ) -> Option<PerCpuRef<'g, bindings::malloc_type_counters>> {
        // SAFETY: `mti_stats` is a valid, aligned pointer field, and the registry stores it with
        // `smp_store_release()` or `WRITE_ONCE()`, which are atomic.
        // ORDERING: Acquire, paired with the release store that publishes the statistics at
        // registration: the zone, flags and id written before it are seen after it.
        let p = unsafe {
            atomic_load(
                ptr::addr_of_mut!((*self.as_raw()).ks_mti.mti_stats),
                Acquire,
            )
        };
        // SAFETY: `mti_stats` is NULL or the type's per-CPU statistics. The registry clears it
        // before it frees them, and frees them only after a grace period (`mm/malloc_type.c`):
        // `_rcu` began an RCU-sched read-side critical section before the load above, so they
        // stay allocated for `'g`. They are written only by `account_alloc`/`account_free`,
        // with per-CPU operations.
        unsafe { PerCpuRef::from_raw(p) }
    }

    /// Returns the type's per-CPU counters for a charge (the accounting of an allocation or a
    /// free), `None` when it is not registered.
    ///
    /// Unlike [`MallocType::stats_ref`], no guard: the registry frees the counters of a type
    /// only once nothing can charge it any more (`mm/malloc_type.c`). A module's types are
    /// unregistered when the module core frees the module (`free_module()`), after its exit and
    /// its async functions, so its code charges them no more; a type whose blocks carry a
    /// record, which any code's `kfree()` charges back, is kept while memory is charged to it,
    /// and unregistered only once its counters sum to nothing in use, that is after the last
    /// update of the last charge back (`malloc_type_keep()`, `malloc_type_sweep()`); the types
    /// of vmlinux are never unregistered.
    ///
    /// # Safety
    ///
    /// The caller charges the type, and uses the counters for the per-CPU updates of that charge
    /// only, nothing after them.
    #[inline(always)]
    unsafe fn charge_ref(&self) -> Option<PerCpuRef<'_, bindings::malloc_type_counters>> {
        // SAFETY: `mti_stats` is a valid, aligned pointer field, and the registry stores it with
        // `smp_store_release()` or `WRITE_ONCE()`, which are atomic.
        // ORDERING: Acquire, as in `stats_ref`.
        let p = unsafe {
            atomic_load(
                ptr::addr_of_mut!((*self.as_raw()).ks_mti.mti_stats),
                Acquire,
            )
        };
        // SAFETY: `mti_stats` is NULL or the type's per-CPU counters, which stay allocated for
        // the charge (safety requirements: the registry does not free them while the type can
        // be charged) and are written only with per-CPU operations.
        unsafe { PerCpuRef::from_raw(p) }
    }

    /// Returns whether the type is registered (has statistics).
    ///
    /// # Context
    ///
    /// Any context.
    pub fn is_registered(&self) -> bool {
        let rcu = PreemptGuard::new();
        self.stats_ref(&rcu).is_some()
    }

    /// Returns `cpu`'s statistics (zero when the type is not registered or `cpu` not possible).
    ///
    /// # Context
    ///
    /// Any context.
    pub fn stats_cpu(&self, cpu: CpuId) -> Stats {
        let rcu = PreemptGuard::new();
        match self.stats_ref(&rcu).and_then(|s| s.cpu_ptr(cpu)) {
            // SAFETY: `r` is `cpu`'s record of the type's statistics, allocated while `rcu`
            // lives and written only by per-CPU operations.
            Some(r) => unsafe { Stats::read_once(r) },
            None => Stats::default(),
        }
    }

    /// Calls `f` with the statistics of each CPU from 0 to `ncpus - 1`, in order: zero for a CPU
    /// that is not possible, and for every CPU when the type is not registered. What the
    /// per-CPU records of the `/proc/malloc_stats` stream hold.
    ///
    /// The statistics are looked up once, and `f` runs with preemption disabled (an RCU-sched
    /// read-side critical section that keeps them allocated): it must not sleep.
    ///
    /// # Context
    ///
    /// Any context.
    ///
    /// # Examples
    ///
    /// ```
    /// kernel::malloc_define!(M_EACH_DOC, "each doc", "for_each_cpu_stats() example");
    ///
    /// let p = M_EACH_DOC.malloc(100, GFP_KERNEL)?;
    /// let mut allocs = 0;
    /// M_EACH_DOC.for_each_cpu_stats(kernel::cpu::nr_cpu_ids(), |s| allocs += s.numallocs);
    /// assert_eq!(allocs, 1);
    /// // SAFETY: `p` came from `M_EACH_DOC` and is not used again.
    /// unsafe { M_EACH_DOC.free(p.as_ptr().cast()) };
    /// # Ok::<(), Error>(())
    /// ```
    #[inline]
    pub fn for_each_cpu_stats(&self, ncpus: u32, mut f: impl FnMut(&Stats)) {
        let rcu = PreemptGuard::new();
        let stats = self.stats_ref(&rcu);
        for cpu in 0..ncpus {
            let r = CpuId::from_u32(cpu).and_then(|c| stats.and_then(|s| s.cpu_ptr(c)));
            let s = match r {
                // SAFETY: `r` is a CPU's record of the type's statistics, allocated while `rcu`
                // lives and written only by per-CPU operations.
                Some(r) => unsafe { Stats::read_once(r) },
                None => Stats::default(),
            };
            f(&s);
        }
    }

    /// Returns the statistics summed over the possible CPUs.
    ///
    /// The counters are read without synchronisation, as FreeBSD does: a sum taken while other
    /// CPUs allocate is not a snapshot of one instant.
    ///
    /// # Context
    ///
    /// Any context.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::malloc_type::{accounted_size, zindx};
    ///
    /// kernel::malloc_define!(M_STATS_DOC, "stats doc", "stats() example");
    ///
    /// let p = M_STATS_DOC.malloc(100, GFP_KERNEL)?;
    /// let s = M_STATS_DOC.stats();
    /// assert_eq!((s.numallocs, s.memalloced), (1, accounted_size(100) as u64));
    /// assert_eq!(s.size, 1 << zindx(100));
    /// // SAFETY: `p` came from `M_STATS_DOC` and is not used again.
    /// unsafe { M_STATS_DOC.free(p.as_ptr().cast()) };
    /// assert_eq!(M_STATS_DOC.stats().mem_use(), 0);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn stats(&self) -> Stats {
        let mut total = Stats::default();
        self.for_each_cpu_stats(crate::cpu::nr_cpu_ids(), |s| total.accumulate(s));
        total
    }

    /// Returns a snapshot of the type.
    ///
    /// # Context
    ///
    /// Any context.
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

    /// Returns the type's header in the `/proc/malloc_stats` stream
    /// (`struct malloc_type_header`).
    ///
    /// The name is truncated to [`NAME_MAX`] bytes and the owner to [`OWNER_MAX`], both
    /// NUL-padded; reserved fields are zero.
    ///
    /// # Context
    ///
    /// Any context.
    pub fn uapi_header(&self) -> bindings::malloc_type_header {
        let peak = self.peak();
        let mut flags = if peak.is_some() {
            bindings::MALLOC_TYPE_F_PEAK
        } else {
            0
        };
        flags |= self.flags() & (bindings::MALLOC_TYPE_F_MODULE | bindings::MALLOC_TYPE_F_UNLOADED);
        let mut h = bindings::malloc_type_header {
            mth_id: self.id(),
            mth_zone: self.zone(),
            mth_flags: flags,
            mth_peak: peak.unwrap_or(0),
            ..Default::default()
        };
        let name = self.name().to_bytes();
        for (d, &c) in h.mth_name.iter_mut().zip(name.iter().take(NAME_MAX)) {
            *d = c_char::from_ne_bytes([c]);
        }
        let owner = self.owner().to_bytes();
        for (d, &c) in h.mth_owner.iter_mut().zip(owner.iter().take(OWNER_MAX)) {
            *d = c_char::from_ne_bytes([c]);
        }
        h
    }

    /// Accounts an allocation of `size` accounted bytes from size class `zindx` (-1: none) on
    /// this CPU; nothing when the type is not registered.
    ///
    /// This is where the `dtmalloc:malloc` tracepoint fires, after the counters are updated.
    /// Inlined into the allocation paths; the tracepoint call is out of line.
    ///
    /// # Context
    ///
    /// Any context.
    #[inline]
    pub(crate) fn account_alloc(&self, size: usize, zindx: i32) {
        let bit = match u32::try_from(zindx) {
            Ok(z) if z < 64 => 1u64 << z,
            _ => 0,
        };
        self.account_alloc_class(size, zindx, bit);
    }

    /// [`MallocType::account_alloc`] with the `mts_size` bit of `zindx` given (0 for none), as
    /// the allocation fast path has it in its size class table.
    ///
    /// # Context
    ///
    /// Any context.
    #[inline(always)]
    pub(crate) fn account_alloc_class(&self, size: usize, zindx: i32, bit: u64) {
        if trace::malloc_events() {
            let w = trace::events_word(self);
            if trace::has_work(w, bindings::DTMALLOC_PROBE_MALLOC, trace::malloc_enabled) {
                self.account_alloc_traced(size, zindx, bit, w);
                return;
            }
        }
        // SAFETY: This is an allocation's charge of the type, which uses the counters for its
        // per-CPU updates (`count_alloc`) only.
        let Some(s) = (unsafe { self.charge_ref() }) else {
            return;
        };
        count_alloc(s, size, zindx, bit);
    }

    /// [`MallocType::account_alloc_class`] of a type whose allocation has more to do than count
    /// (its `mti_events` word `w`, see [`trace::has_work`]): the counters, then the peak and
    /// the event, with preemption disabled throughout, so that the event names the record that
    /// was updated and the type stays registered for it. Out of line: only tracing calls it.
    ///
    /// # Context
    ///
    /// Any context.
    #[cold]
    #[inline(never)]
    fn account_alloc_traced(&self, size: usize, zindx: i32, bit: u64, w: c_ulong) {
        let rcu = PreemptGuard::new();
        let Some(s) = self.stats_ref(&rcu) else {
            return;
        };
        count_alloc(s, size, zindx, bit);
        let probe = bindings::DTMALLOC_PROBE_MALLOC;
        // SAFETY: `self` is registered (`s` exists) and the record is this CPU's, updated just
        // above; `rcu` keeps preemption disabled until after the call.
        unsafe { trace::on_event(self, w, probe, s.this_cpu_ptr(&rcu), size, zindx) };
    }

    /// Charges `size` bytes that the caller got from another allocator (a `kmem_cache`, a
    /// mempool, the page allocator) to the type, as one allocation (FreeBSD's
    /// `malloc_type_allocated()`), so that a subsystem's memory shows in its type's row
    /// whatever allocator it comes from. No size class is recorded (zindx -1, no `mts_size`
    /// bit), and the `dtmalloc:malloc` event fires with zindx -1. Zero bytes charge nothing, as
    /// in FreeBSD, where a failed allocation passes 0.
    ///
    /// Charge what the memory consumes (`kmem_cache_size()` of a cache's object, the pages of
    /// a page allocation), and give [`MallocType::freed`] the same size when it is freed.
    ///
    /// # Context
    ///
    /// Any context.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::page::{Page, PAGE_SIZE};
    ///
    /// kernel::malloc_define!(M_ALLOCATED_DOC, "allocated doc", "allocated() example");
    ///
    /// // A page from the page allocator, charged to the type while it is used.
    /// let page = Page::alloc_page(GFP_KERNEL)?;
    /// M_ALLOCATED_DOC.allocated(PAGE_SIZE);
    /// let s = M_ALLOCATED_DOC.stats();
    /// assert_eq!((s.numallocs, s.memalloced, s.size), (1, PAGE_SIZE as u64, 0));
    /// drop(page);
    /// M_ALLOCATED_DOC.freed(PAGE_SIZE);
    /// M_ALLOCATED_DOC.allocated(0);
    /// let s = M_ALLOCATED_DOC.stats();
    /// assert_eq!((s.numallocs, s.numfrees, s.mem_use()), (1, 1, 0));
    /// # Ok::<(), Error>(())
    /// ```
    #[inline]
    pub fn allocated(&self, size: usize) {
        if size != 0 {
            self.account_alloc_class(size, -1, 0);
        }
    }

    /// Takes `size` bytes charged with [`MallocType::allocated`] off the type, as one free
    /// (FreeBSD's `malloc_type_freed()`); the `dtmalloc:free` event fires. Zero bytes change
    /// nothing, so that a zero-byte [`MallocType::allocated`] and its free stay balanced
    /// (FreeBSD counts a free of 0 bytes).
    ///
    /// # Context
    ///
    /// Any context.
    #[inline]
    pub fn freed(&self, size: usize) {
        if size != 0 {
            self.account_free(size, -1);
        }
    }

    /// Counts a failed allocation of another allocator, whose memory [`MallocType::allocated`]
    /// would have charged to the type (`mts_numfailures`, the Fails column): so that the type's
    /// row tells its failures whatever allocator the subsystem uses.
    ///
    /// # Context
    ///
    /// Any context.
    #[inline]
    pub fn failed(&self) {
        self.account_failure();
    }

    /// Counts a typed allocation that returned no memory on this CPU (`mts_numfailures`);
    /// nothing when the type is not registered. Out of line: only failures call it. Returns
    /// [`AllocError`], for `ok_or_else()` and `map_err()`.
    ///
    /// # Context
    ///
    /// Any context.
    #[cold]
    #[inline(never)]
    pub(crate) fn account_failure(&self) -> AllocError {
        let rcu = PreemptGuard::new();
        if let Some(s) = self.stats_ref(&rcu) {
            percpu_u64!(s, bindings::malloc_type_counters, mts_numfailures).inc();
        }
        AllocError
    }

    /// Accounts a free of `size` accounted bytes from size class `zindx` (-1: none; the zindx
    /// the block was charged with) on this CPU; nothing when the type is not registered.
    ///
    /// This is where the `dtmalloc:free` tracepoint fires, after the counters are updated.
    /// Inlined into the free paths; the tracepoint call is out of line.
    ///
    /// # Context
    ///
    /// Any context.
    #[inline(always)]
    pub(crate) fn account_free(&self, size: usize, zindx: i32) {
        if trace::free_events() {
            let w = trace::events_word(self);
            if trace::has_work(w, bindings::DTMALLOC_PROBE_FREE, trace::free_enabled) {
                self.account_free_traced(size, zindx, w);
                return;
            }
        }
        // SAFETY: This is a free's charge of the type, which uses the counters for its per-CPU
        // updates (`count_free`) only.
        let Some(s) = (unsafe { self.charge_ref() }) else {
            return;
        };
        count_free(s, size, zindx);
    }

    /// [`MallocType::account_free`] with more to do than count, as
    /// [`MallocType::account_alloc_traced`].
    ///
    /// # Context
    ///
    /// Any context.
    #[cold]
    #[inline(never)]
    fn account_free_traced(&self, size: usize, zindx: i32, w: c_ulong) {
        let rcu = PreemptGuard::new();
        let Some(s) = self.stats_ref(&rcu) else {
            return;
        };
        count_free(s, size, zindx);
        let probe = bindings::DTMALLOC_PROBE_FREE;
        // SAFETY: As in `account_alloc_traced`.
        unsafe { trace::on_event(self, w, probe, s.this_cpu_ptr(&rcu), size, 0) };
    }
}

/// The per-CPU updates of an allocation of `size` accounted bytes of size class `zindx` (-1 for
/// none), whose `mts_size` bit is `bit` (0 for none), on the current CPU's record of `s`.
#[inline(always)]
fn count_alloc(
    s: PerCpuRef<'_, bindings::malloc_type_counters>,
    size: usize,
    zindx: i32,
    bit: u64,
) {
    // CAST: `usize` and `u64` have the same width on 64-bit kernels.
    let size = size as u64;
    percpu_u64!(s, bindings::malloc_type_counters, mts_memalloced).add(size);
    percpu_u64!(s, bindings::malloc_type_counters, mts_numallocs).inc();
    percpu_u64!(s, bindings::malloc_type_counters, mts_size).or(bit);
    count_zone(zindx, size);
}

/// The per-CPU updates of a free of `size` accounted bytes of size class `zindx` (-1 for none),
/// on the current CPU's record of `s`.
#[inline(always)]
fn count_free(s: PerCpuRef<'_, bindings::malloc_type_counters>, size: usize, zindx: i32) {
    // CAST: `usize` and `u64` have the same width on 64-bit kernels.
    let size = size as u64;
    percpu_u64!(s, bindings::malloc_type_counters, mts_memfreed).add(size);
    percpu_u64!(s, bindings::malloc_type_counters, mts_numfrees).inc();
    count_zone(zindx, size.wrapping_neg());
}

/// Adds `delta` (wrapping: a free adds the negated size) to the current CPU's counter of the
/// bytes of size class `zindx` in use charged to types (`malloc_type_zone_counters`, summed by
/// `vm.malloc_zone_memuse`); nothing for -1, a block of no kmalloc size class.
#[inline(always)]
fn count_zone(zindx: i32, delta: u64) {
    let Ok(z) = usize::try_from(zindx) else {
        return;
    };
    // The last counter is no class's (`MALLOC_TYPE_ZONE_NONE`); a zindx has fewer classes.
    let z = z.min(ZONE_COUNT_MAX - 1);
    // SAFETY: `malloc_type_zone_memuse` is a constant pointer, set at build time.
    let base = unsafe { bindings::malloc_type_zone_memuse };
    // SAFETY: `base` points to the `ZONE_COUNT_MAX` counters of `malloc_type_zone_counters`, a
    // static per-CPU variable, never freed; `z` is below that count; the counters are written
    // only with per-CPU operations on the current CPU's copy.
    let Some(r) = (unsafe { PerCpuRef::<u64>::from_raw(base.wrapping_add(z)) }) else {
        return;
    };
    // SAFETY: The `u64` at offset 0 of a `u64` is itself.
    unsafe { r.u64_at::<0>() }.add(delta);
}

#[cfg(CONFIG_RUST_MALLOC_TYPE_KUNIT_TEST)]
#[macros::kunit_tests(rust_malloc_type_stats)]
mod tests {
    use super::super::{
        accounted_size,
        zindx, //
    };
    use super::*;
    use crate::percpu;
    use crate::{
        alloc::flags::{
            GFP_KERNEL,
            GFP_NOWAIT, //
        },
        prelude::*, //
    };

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
                t.free(a.as_ptr().cast());
                t.free(b.as_ptr().cast());
            }
            let s = t.stats_cpu(guard.cpu());
            let acc = |size| accounted_size(size) as u64;
            let bit = |size| 1u64 << zindx(size);
            assert_eq!(s.memalloced, acc(10) + acc(200) + acc(5000));
            assert_eq!(s.memfreed, acc(10) + acc(200));
            assert_eq!(s.numallocs, 3);
            assert_eq!(s.numfrees, 2);
            assert_eq!(s.size, bit(10) | bit(200) | bit(5000));
            // SAFETY: As above.
            unsafe { t.free(c.as_ptr().cast()) };
            guard.cpu()
        };
        for other in percpu::possible_cpus().filter(|&c| c != cpu) {
            assert!(t.stats_cpu(other) == Stats::default());
        }
        let s = t.stats();
        let acc = |size| accounted_size(size) as u64;
        assert_eq!(s.memfreed, acc(10) + acc(200) + acc(5000));
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
            assert_eq!(s.memalloced, accounted_size(64) as u64 * (c as u64 + 1));
            assert_eq!(s.size, 1 << zindx(64));
            for &p in ptrs.iter().take(c + 1) {
                // SAFETY: `p` came from `t` with 64 bytes and is not used again.
                unsafe { t.free(p as *mut u8) };
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
    fn reads_of_a_record() -> Result {
        crate::malloc_define!(M_T_READ, "kunit read", "Reads of the per-CPU records");
        let t = &M_T_READ;
        let p = t.malloc(100, GFP_KERNEL)?;
        let s = t.stats();
        // Each field of the record lands in its own field of `Stats`.
        assert_eq!(
            (s.memalloced, s.memfreed, s.numallocs, s.numfrees, s.size),
            (128, 0, 1, 0, 1 << 5)
        );
        let snap = t.snapshot();
        assert!(snap.total == s);
        assert_eq!(
            (snap.id, snap.zone, snap.is_module),
            (t.id(), t.zone(), false)
        );
        // SAFETY: `p` came from `t` with 100 bytes and is not used again.
        unsafe { t.free(p.as_ptr().cast()) };
        let s = t.stats();
        assert_eq!(
            (s.memfreed, s.numfrees, s.in_use(), s.mem_use()),
            (128, 1, 0, 0)
        );
        Ok(())
    }

    #[test]
    fn failures_count_and_nothing_else() -> Result {
        use crate::alloc::{
            flags::__GFP_NOWARN,
            Allocator,
            NumaNode, //
        };
        use core::alloc::Layout;

        crate::malloc_define!(M_T_FAIL, "kunit failures", "Failed allocations");
        let t = &M_T_FAIL;
        // Too large for kmalloc, an overflowing array and a size beyond any layout: one failure
        // each.
        let failures = || t.stats().numfailures;
        assert!(t
            .malloc(
                super::super::KMALLOC_MAX_SIZE + 1,
                GFP_KERNEL | __GFP_NOWARN
            )
            .is_err());
        assert_eq!(failures(), 1);
        assert_eq!(
            t.mallocarray(usize::MAX, 2, GFP_KERNEL).err(),
            Some(EOVERFLOW)
        );
        assert_eq!(failures(), 2);
        assert!(t.malloc(usize::MAX, GFP_KERNEL).is_err());
        assert_eq!(failures(), 3);
        // A too-large request through a typed allocator (its general path).
        // CAST: `isize::MAX` is positive.
        let huge = Layout::from_size_align(isize::MAX as usize - 4096, 8).map_err(|_| EINVAL)?;
        crate::malloc_define!(
            M_T_FAIL_ALLOC,
            "kunit failures alloc",
            "TypedAlloc failures"
        );
        let r = super::super::TypedAlloc::<M_T_FAIL_ALLOC>::alloc(
            huge,
            GFP_KERNEL | __GFP_NOWARN,
            NumaNode::NO_NODE,
        );
        assert!(r.is_err());
        assert_eq!(M_T_FAIL_ALLOC.stats().numfailures, 1);
        let s = t.stats();
        assert_eq!((s.numallocs, s.memalloced, s.size), (0, 0, 0));
        // A success leaves the count as it is.
        let p = t.malloc(64, GFP_KERNEL)?;
        // SAFETY: `p` came from `t` with 64 bytes and is not used again.
        unsafe { t.free(p.as_ptr().cast()) };
        assert_eq!(t.stats().numfailures, 3);
        assert_eq!(t.uapi_header().mth_flags & bindings::MALLOC_TYPE_F_PEAK, 0);
        Ok(())
    }

    #[test]
    fn peak_tracks_the_highest_bytes_in_use() -> Result {
        crate::malloc_define!(M_T_PEAK, "kunit peak", "Peak bytes in use");
        let t = &M_T_PEAK;
        let acc = |size| accounted_size(size) as u64;
        let keep = t.malloc(1000, GFP_KERNEL)?;
        assert_eq!(t.peak(), None);
        // Tracking starts from the bytes in use.
        // SAFETY: `t` is registered (a type of vmlinux) for the whole call.
        unsafe { bindings::malloc_type_peak_track(t.as_raw(), true) };
        assert_eq!(t.peak(), Some(acc(1000)));
        let a = t.malloc(3000, GFP_KERNEL)?;
        let b = t.malloc(100, GFP_KERNEL)?;
        // SAFETY: `a` came from `t` and is not used again.
        unsafe { t.free(a.as_ptr().cast()) };
        let top = acc(1000) + acc(3000) + acc(100);
        assert_eq!(t.peak(), Some(top));
        let h = t.uapi_header();
        assert_eq!(
            (h.mth_peak, h.mth_flags & bindings::MALLOC_TYPE_F_PEAK),
            (top, bindings::MALLOC_TYPE_F_PEAK)
        );
        // A reset starts again from the bytes in use now.
        // SAFETY: As above.
        unsafe { bindings::malloc_type_peak_track(t.as_raw(), true) };
        assert_eq!(t.peak(), Some(acc(1000) + acc(100)));
        // SAFETY: `b` and `keep` came from `t` and are not used again.
        unsafe {
            t.free(b.as_ptr().cast());
            t.free(keep.as_ptr().cast());
        }
        assert_eq!(t.peak(), Some(acc(1000) + acc(100)));
        // SAFETY: As above.
        unsafe { bindings::malloc_type_peak_track(t.as_raw(), false) };
        assert_eq!(t.peak(), None);
        assert_eq!(t.uapi_header().mth_peak, 0);
        Ok(())
    }

    #[test]
    fn owner_of_the_kernel_s_types() {
        crate::malloc_define!(M_T_OWNER, "kunit owner", "The owner of a built-in type");
        assert_eq!(M_T_OWNER.owner().to_bytes(), b"vmlinux");
        let h = M_T_OWNER.uapi_header();
        assert!(h.mth_owner[..8].iter().copied().eq(*b"vmlinux\0"));
    }
}
