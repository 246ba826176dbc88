// SPDX-License-Identifier: GPL-2.0

//! Per-CPU variables.
//!
//! A small abstraction over dynamically allocated per-CPU memory: an owned allocation
//! ([`PerCpu`]), a borrowed `__percpu` pointer ([`PerCpuRef`]), and `u64` counters inside it
//! ([`PerCpuU64`]) that are updated on the current CPU with the IRQ- and preemption-safe
//! `this_cpu_*()` operations and read from any CPU.
//!
//! This models the C API: [`PerCpu`] is `alloc_percpu()` and `free_percpu()`, [`PerCpuRef`] a
//! `__percpu` pointer, and [`PerCpuU64`] the `this_cpu_add()`, `this_cpu_inc()` and
//! `this_cpu_or()` of a `u64` and the reads through `per_cpu_ptr()`, as FreeBSD's `counter(9)`
//! (`counter_u64_add()`, `counter_u64_fetch()`) serves its statistics.
//!
//! C header: [`include/linux/percpu.h`](srctree/include/linux/percpu.h)

use crate::{
    alloc::{
        AllocError,
        Flags, //
    },
    bindings,
    cpu::{
        nr_cpu_ids,
        CpuId, //
    },
    prelude::*,
    sync::atomic::{
        atomic_load,
        Relaxed, //
    },
    types::NotThreadSafe, //
};

use core::{
    marker::PhantomData,
    ptr::NonNull, //
};

/// Returns whether `cpu` is a possible CPU.
///
/// # Context
///
/// Any context.
///
/// # Examples
///
/// ```
/// use kernel::{cpu::CpuId, percpu};
///
/// assert!(percpu::cpu_possible(CpuId::current()));
/// ```
#[inline]
pub fn cpu_possible(cpu: CpuId) -> bool {
    // SAFETY: `cpu_possible()` accepts any CPU id below `nr_cpu_ids`, which `CpuId` guarantees.
    unsafe { bindings::cpu_possible(cpu.as_u32()) }
}

/// Returns an iterator over the possible CPUs, in increasing order (`for_each_possible_cpu`).
///
/// # Context
///
/// Any context.
///
/// # Examples
///
/// ```
/// use kernel::{cpu::CpuId, percpu};
///
/// let n = percpu::possible_cpus().count();
/// assert!(n >= 1);
/// assert!(percpu::possible_cpus().any(|c| c == CpuId::current()));
/// ```
#[doc(alias("for_each_possible_cpu"))]
pub fn possible_cpus() -> impl Iterator<Item = CpuId> {
    (0..nr_cpu_ids())
        .filter_map(CpuId::from_u32)
        .filter(|&cpu| cpu_possible(cpu))
}

/// A guard that keeps preemption disabled while it lives (`preempt_disable()`).
///
/// While the guard lives the current task stays on the CPU it runs on, so a sequence of
/// per-CPU operations lands on one CPU.
///
/// # Invariants
///
/// Preemption has been disabled once by this guard and will be enabled again when it is
/// dropped, on the same task (the guard is not [`Send`]).
///
/// # Examples
///
/// ```
/// use kernel::{cpu::CpuId, percpu::PreemptGuard};
///
/// let guard = PreemptGuard::new();
/// assert!(guard.cpu() == CpuId::current());
/// drop(guard);
/// ```
#[must_use = "preemption is enabled again as soon as the guard is dropped"]
pub struct PreemptGuard(NotThreadSafe);

impl PreemptGuard {
    /// Disables preemption until the returned guard is dropped.
    ///
    /// There is no `Default`: making a guard has a side effect.
    ///
    /// # Context
    ///
    /// Any context.
    #[doc(alias("preempt_disable"))]
    #[inline]
    #[expect(clippy::new_without_default)]
    pub fn new() -> Self {
        // SAFETY: `preempt_disable()` may be called in any context.
        unsafe { bindings::preempt_disable() };
        // INVARIANT: Preemption was disabled just above.
        Self(NotThreadSafe)
    }

    /// Returns the CPU the current task runs on, which cannot change while `self` lives.
    #[inline]
    pub fn cpu(&self) -> CpuId {
        CpuId::current()
    }
}

impl Drop for PreemptGuard {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: By the type invariant, preemption was disabled by this guard on this task.
        unsafe { bindings::preempt_enable() };
    }
}

/// An owned, zero-initialised per-CPU allocation of a `T` for every possible CPU
/// (`alloc_percpu()`), freed when dropped (`free_percpu()`).
///
/// Access goes through [`PerCpu::as_ref`].
///
/// # Invariants
///
/// `self.ptr` is a `__percpu` pointer returned by `alloc_percpu_gfp()` for a `T`, not yet freed;
/// every CPU's copy is a valid `T`.
///
/// # Examples
///
/// ```
/// use kernel::{percpu::PerCpu, percpu_u64};
///
/// #[derive(Clone, Copy)]
/// struct Counters {
///     hits: u64,
///     misses: u64,
/// }
///
/// // SAFETY: All fields are integers, for which zero is a valid value.
/// unsafe impl Zeroable for Counters {}
///
/// let c = PerCpu::<Counters>::new_zeroed(GFP_KERNEL)?;
/// let hits = percpu_u64!(c.as_ref(), Counters, hits);
/// hits.add(3);
/// hits.add(4);
/// assert_eq!(hits.sum(), 7);
/// assert_eq!(percpu_u64!(c.as_ref(), Counters, misses).sum(), 0);
/// # Ok::<(), Error>(())
/// ```
pub struct PerCpu<T: Zeroable + Copy> {
    ptr: NonNull<T>,
    _p: PhantomData<T>,
}

// SAFETY: The allocation is not tied to a thread; its words are only read with atomic loads.
unsafe impl<T: Zeroable + Copy + Send> Send for PerCpu<T> {}

// SAFETY: Shared access only performs per-CPU operations and atomic loads of single words (see
// `PerCpuRef`), which are safe from any thread.
unsafe impl<T: Zeroable + Copy + Send> Sync for PerCpu<T> {}

impl<T: Zeroable + Copy> PerCpu<T> {
    /// Allocates a zeroed `T` for every possible CPU.
    ///
    /// # Errors
    ///
    /// [`AllocError`] when the per-CPU allocator has no memory.
    ///
    /// # Context
    ///
    /// Any context that `flags` allow (`GFP_KERNEL`: process context, may sleep).
    #[doc(alias("alloc_percpu_gfp"))]
    pub fn new_zeroed(flags: Flags) -> Result<Self, AllocError> {
        // SAFETY: `__alloc_percpu_gfp()` may be called with any size, alignment and flags; the
        // memory it returns is zeroed, and a zeroed `T` is valid because `T: Zeroable`.
        let ptr = unsafe {
            bindings::__alloc_percpu_gfp(size_of::<T>(), align_of::<T>(), flags.as_raw())
        };
        let ptr = NonNull::new(ptr.cast::<T>()).ok_or(AllocError)?;
        // INVARIANT: `ptr` was just allocated for a `T` and every copy is zeroed.
        Ok(Self {
            ptr,
            _p: PhantomData,
        })
    }

    /// Returns a borrowed per-CPU reference to the allocation.
    #[inline]
    pub fn as_ref(&self) -> PerCpuRef<'_, T> {
        // INVARIANT: By the type invariant, `self.ptr` stays valid while `self` is borrowed.
        PerCpuRef {
            ptr: self.ptr,
            _p: PhantomData,
        }
    }
}

impl<T: Zeroable + Copy> Drop for PerCpu<T> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant, `self.ptr` came from `alloc_percpu_gfp()` and was not
        // freed; no borrow outlives `self`.
        unsafe { bindings::free_percpu(self.ptr.as_ptr().cast()) };
    }
}

/// A borrowed `__percpu` pointer to a `T`.
///
/// # Invariants
///
/// `self.ptr` is a `__percpu` pointer to a `T` for every possible CPU, valid for `'a`, and the
/// memory is only written through per-CPU operations on the current CPU's copy.
pub struct PerCpuRef<'a, T> {
    ptr: NonNull<T>,
    _p: PhantomData<&'a T>,
}

impl<T> Clone for PerCpuRef<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for PerCpuRef<'_, T> {}

impl<'a, T: Copy> PerCpuRef<'a, T> {
    /// Creates a reference from a raw `__percpu` pointer; `None` when `ptr` is null.
    ///
    /// # Safety
    ///
    /// When not null, `ptr` is a `__percpu` pointer to a valid `T` for every possible CPU that
    /// stays allocated for `'a`, and whose memory is written only by per-CPU operations on the
    /// current CPU's copy during `'a`.
    #[inline]
    pub unsafe fn from_raw(ptr: *mut T) -> Option<Self> {
        // INVARIANT: Guaranteed by the safety requirements.
        NonNull::new(ptr).map(|ptr| Self {
            ptr,
            _p: PhantomData,
        })
    }

    /// Returns the raw `__percpu` pointer.
    #[inline]
    pub fn as_raw(self) -> *mut T {
        self.ptr.as_ptr()
    }

    /// Returns a raw pointer to `cpu`'s `T`, or `None` when `cpu` is not possible.
    ///
    /// The `T` may be written concurrently by `cpu` with per-CPU operations: read it word by
    /// word with atomic loads (`atomic_load(.., Relaxed)`, the kernel's `READ_ONCE()`), as
    /// [`PerCpuU64::get`] does, never as a whole.
    ///
    /// # Context
    ///
    /// Any context.
    #[doc(alias("per_cpu_ptr"))]
    #[inline]
    pub fn cpu_ptr(self, cpu: CpuId) -> Option<*mut T> {
        if !cpu_possible(cpu) {
            return None;
        }
        // SAFETY: By the type invariant `self.ptr` is a valid `__percpu` pointer and `cpu` is a
        // possible CPU.
        Some(unsafe { bindings::per_cpu_ptr(self.ptr.as_ptr().cast(), cpu.as_u32()) }.cast())
    }

    /// Returns a raw pointer to the current CPU's `T`, which stays the current CPU's for as long
    /// as `guard` keeps preemption disabled (`this_cpu_ptr()`).
    #[inline]
    pub fn this_cpu_ptr(self, guard: &PreemptGuard) -> *mut T {
        // SAFETY: By the type invariant `self.ptr` is a valid `__percpu` pointer, and the CPU the
        // current task runs on is a possible CPU.
        unsafe { bindings::per_cpu_ptr(self.ptr.as_ptr().cast(), guard.cpu().as_u32()) }.cast()
    }

    /// Projects the reference onto the `u64` at byte offset `OFFSET` of `T`.
    ///
    /// Use [`percpu_u64!`](crate::percpu_u64) rather than calling this directly.
    ///
    /// # Safety
    ///
    /// `OFFSET` is the offset of a `u64` field of `T`.
    #[inline]
    pub unsafe fn u64_at<const OFFSET: usize>(self) -> PerCpuU64<'a, OFFSET> {
        // INVARIANT: By the safety requirements `OFFSET` names a `u64` inside the `T` of every
        // CPU.
        PerCpuU64 {
            base: self.ptr.as_ptr().cast(),
            _p: PhantomData,
        }
    }
}

/// Returns the [`PerCpuU64`] of field `$field` (a `u64`) of `$ty` behind the [`PerCpuRef`] `$r`.
///
/// # Examples
///
/// ```
/// use kernel::{percpu::PerCpu, percpu_u64};
///
/// #[derive(Clone, Copy)]
/// struct S {
///     a: u64,
/// }
///
/// // SAFETY: Zero is a valid `u64`.
/// unsafe impl Zeroable for S {}
///
/// let s = PerCpu::<S>::new_zeroed(GFP_KERNEL)?;
/// percpu_u64!(s.as_ref(), S, a).add(1);
/// assert_eq!(percpu_u64!(s.as_ref(), S, a).sum(), 1);
/// # Ok::<(), Error>(())
/// ```
#[macro_export]
macro_rules! percpu_u64 {
    ($r:expr, $ty:ty, $field:ident) => {{
        let r: $crate::percpu::PerCpuRef<'_, $ty> = $r;
        // Fails to build unless `$field` is a `u64` field of `$ty`.
        let _: fn(&$ty) -> &u64 = |t| &t.$field;
        // SAFETY: Just above, `$field` was checked to be a `u64` field of `$ty`.
        unsafe { r.u64_at::<{ ::core::mem::offset_of!($ty, $field) }>() }
    }};
}

/// A `u64` counter in per-CPU memory, with one copy per possible CPU.
///
/// Updates apply to the current CPU's copy with `this_cpu_add()` / `this_cpu_inc()` /
/// `this_cpu_or()`: a single instruction on x86_64, safe against preemption and interrupts, with
/// no lock and no atomic read-modify-write on a shared cache line. The updates call the C
/// helpers, which `CONFIG_RUST_INLINE_HELPERS` inlines. Without that option, on x86_64, they are
/// the one instruction the helper would run (a `%gs`-relative `add`, `inc` or `or`, with the
/// field's offset `OFFSET` folded into its address, as `this_cpu_*()` emits it), written with
/// `asm!` so that an update is not a function call. Readers sum or inspect the copies.
///
/// # Invariants
///
/// `self.base + OFFSET` is a `__percpu` pointer to a `u64` of every possible CPU, valid for `'a`.
#[derive(Clone, Copy)]
pub struct PerCpuU64<'a, const OFFSET: usize = 0> {
    base: *mut u8,
    _p: PhantomData<&'a u64>,
}

impl<const OFFSET: usize> PerCpuU64<'_, OFFSET> {
    /// Returns the `__percpu` pointer to the counter.
    #[inline]
    fn ptr(self) -> *mut u64 {
        // The address is computed without dereferencing the `__percpu` pointer.
        self.base.wrapping_add(OFFSET).cast()
    }

    /// Adds `val` (wrapping) to the current CPU's copy.
    ///
    /// # Context
    ///
    /// Any context, interrupts included.
    #[doc(alias("this_cpu_add"))]
    #[inline]
    pub fn add(self, val: u64) {
        #[cfg(all(
            target_arch = "x86_64",
            not(CONFIG_UML),
            not(CONFIG_RUST_INLINE_HELPERS)
        ))]
        // SAFETY: By the type invariant `self.base + OFFSET` is a valid `__percpu` `u64`
        // pointer, so `%gs:(base + OFFSET)` is the current CPU's copy; this is the one
        // instruction `this_cpu_add()` compiles to on x86_64, which preemption and interrupts
        // cannot split.
        unsafe {
            core::arch::asm!(
                "add qword ptr gs:[{p} + {off}], {v}",
                p = in(reg) self.base,
                off = const OFFSET,
                v = in(reg) val,
                options(nostack),
            )
        };
        #[cfg(not(all(
            target_arch = "x86_64",
            not(CONFIG_UML),
            not(CONFIG_RUST_INLINE_HELPERS)
        )))]
        // SAFETY: By the type invariant `self.ptr()` is a valid `__percpu` `u64` pointer.
        unsafe {
            bindings::this_cpu_add_u64(self.ptr(), val)
        };
    }

    /// Adds one (wrapping) to the current CPU's copy.
    ///
    /// # Context
    ///
    /// Any context, interrupts included.
    #[doc(alias("this_cpu_inc"))]
    #[inline]
    pub fn inc(self) {
        #[cfg(all(
            target_arch = "x86_64",
            not(CONFIG_UML),
            not(CONFIG_RUST_INLINE_HELPERS)
        ))]
        // SAFETY: As in `add`, for the one instruction of `this_cpu_inc()`.
        unsafe {
            core::arch::asm!(
                "inc qword ptr gs:[{p} + {off}]",
                p = in(reg) self.base,
                off = const OFFSET,
                options(nostack),
            )
        };
        #[cfg(not(all(
            target_arch = "x86_64",
            not(CONFIG_UML),
            not(CONFIG_RUST_INLINE_HELPERS)
        )))]
        self.add(1);
    }

    /// Ors `val` into the current CPU's copy.
    ///
    /// # Context
    ///
    /// Any context, interrupts included.
    #[doc(alias("this_cpu_or"))]
    #[inline]
    pub fn or(self, val: u64) {
        #[cfg(all(
            target_arch = "x86_64",
            not(CONFIG_UML),
            not(CONFIG_RUST_INLINE_HELPERS)
        ))]
        // SAFETY: As in `add`, for the one instruction of `this_cpu_or()`.
        unsafe {
            core::arch::asm!(
                "or qword ptr gs:[{p} + {off}], {v}",
                p = in(reg) self.base,
                off = const OFFSET,
                v = in(reg) val,
                options(nostack),
            )
        };
        #[cfg(not(all(
            target_arch = "x86_64",
            not(CONFIG_UML),
            not(CONFIG_RUST_INLINE_HELPERS)
        )))]
        // SAFETY: By the type invariant `self.ptr()` is a valid `__percpu` `u64` pointer.
        unsafe {
            bindings::this_cpu_or_u64(self.ptr(), val)
        };
    }

    /// Returns `cpu`'s copy (`READ_ONCE(*per_cpu_ptr(p, cpu))`); 0 when `cpu` is not possible.
    ///
    /// # Context
    ///
    /// Any context.
    #[doc(alias("per_cpu"))]
    pub fn get(self, cpu: CpuId) -> u64 {
        if !cpu_possible(cpu) {
            return 0;
        }
        // SAFETY: By the type invariant `self.ptr()` is a valid `__percpu` pointer and `cpu` is a
        // possible CPU.
        let p = unsafe { bindings::per_cpu_ptr(self.ptr().cast(), cpu.as_u32()) };
        // SAFETY: `p` points to `cpu`'s valid, aligned `u64`, whose concurrent stores are
        // single-word per-CPU operations, which are atomic.
        // ORDERING: Relaxed, `READ_ONCE()`: a counter on its own.
        unsafe { atomic_load(p.cast::<u64>(), Relaxed) }
    }

    /// Returns the wrapping sum of the copies of all possible CPUs.
    ///
    /// # Context
    ///
    /// Any context.
    pub fn sum(self) -> u64 {
        possible_cpus().fold(0u64, |acc, cpu| acc.wrapping_add(self.get(cpu)))
    }
}

#[cfg(CONFIG_RUST_PERCPU_KUNIT_TEST)]
#[macros::kunit_tests(rust_percpu)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Zeroable)]
    struct Rec {
        a: u64,
        b: u64,
    }

    #[test]
    fn zeroed_and_sums() -> Result {
        let p = PerCpu::<Rec>::new_zeroed(GFP_KERNEL)?;
        let a = crate::percpu_u64!(p.as_ref(), Rec, a);
        let b = crate::percpu_u64!(p.as_ref(), Rec, b);
        for cpu in possible_cpus() {
            assert!(p.as_ref().cpu_ptr(cpu).is_some());
            assert_eq!((a.get(cpu), b.get(cpu)), (0, 0));
        }
        let cpu = {
            let guard = PreemptGuard::new();
            a.add(5);
            a.add(u64::MAX); // Wraps: 5 - 1.
            a.inc();
            // `b` is at offset 8: its updates land in `b`, not in `a`.
            b.or(0b100);
            b.or(0b001);
            b.inc();
            guard.cpu()
        };
        assert_eq!(a.sum(), 5);
        assert_eq!(b.sum(), 0b110);
        assert_eq!((a.get(cpu), b.get(cpu)), (5, 0b110));
        // The pointer of `cpu` is where its copy of the fields lives.
        let r = p.as_ref().cpu_ptr(cpu).ok_or(EINVAL)?;
        // SAFETY: `r` is `cpu`'s valid `Rec`, not written concurrently (only this test writes).
        let rb = unsafe { atomic_load(core::ptr::addr_of_mut!((*r).b), Relaxed) };
        assert_eq!(rb, 0b110);
        for other in possible_cpus().filter(|&c| c != cpu) {
            assert_eq!(a.get(other), 0);
        }
        Ok(())
    }

    #[test]
    fn possible_cpus_are_sorted_and_unique() {
        let mut prev: Option<u32> = None;
        for cpu in possible_cpus() {
            if let Some(p) = prev {
                assert!(p < cpu.as_u32());
            }
            prev = Some(cpu.as_u32());
        }
        assert!(prev.is_some());
    }
}
