// SPDX-License-Identifier: GPL-2.0

//! Malloc types: FreeBSD-style typed allocation accounting.
//!
//! A malloc type is a static, named object declared with [`malloc_define!`](crate::malloc_define)
//! (or `MALLOC_DEFINE()` in C, whose kmalloc-style functions are implemented in
//! `malloc_type/c_api.rs`).
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
//! - a failed allocation (an error, not a panic) counts in the type's `mts_numfailures` and
//!   changes no other counter;
//! - a `realloc` is accounted as a free of the old block and an allocation of the new one, even
//!   when the block is resized in place;
//! - an overflowing array allocation is an error ([`EOVERFLOW`]), not a panic;
//! - zero-byte requests follow Rust's allocator semantics: they allocate nothing, are accounted
//!   nowhere, and return a dangling pointer; `realloc` to zero bytes frees;
//! - the raw API's [`MallocType::free`] takes no size: the block tells what it was charged (the
//!   [`Allocator`](crate::alloc::Allocator) implementations keep their [`Layout`]).
//!
//! The accounted size of a block is the size it consumes: its kmalloc bucket size
//! (`kmalloc_size_roundup()`), or `PAGE_SIZE << get_order(size)` above
//! [`KMALLOC_MAX_CACHE_SIZE`].
//!
//! This file holds the type, [`malloc_define!`](crate::malloc_define) and the registry; the
//! rest is one file per concern:
//! - `malloc_type/alloc.rs`: the raw API ([`MallocType::malloc`], ..., [`MallocType::free`])
//!   and the allocators [`TypedAlloc`] and [`TypedKVAlloc`];
//! - `malloc_type/size_class.rs`: the kmalloc size classes, [`zindx`] and [`accounted_size`];
//! - `malloc_type/stats.rs`: the per-CPU statistics, their updates and their reads ([`Stats`],
//!   [`Snapshot`]);
//! - `malloc_type/trace.rs`: the `dtmalloc` tracepoints.
//!
//! The default types of untyped Rust allocations ([`static@M_RUST_KMALLOC`],
//! [`static@M_RUST_VMALLOC`], [`static@M_RUST_KVMALLOC`]) are defined with the allocators they
//! hook, in [`kernel::alloc::allocator`](crate::alloc::allocator).
//!
//! C header: [`include/linux/malloc_type.h`](srctree/include/linux/malloc_type.h)
//!
//! Reference: Documentation/core-api/malloc_types.rst
//!
//! [`Box`]: crate::alloc::Box
//! [`Vec`]: crate::alloc::Vec
//! [`Layout`]: core::alloc::Layout

use crate::{
    bindings,
    prelude::*,
    sync::atomic::{
        atomic_load,
        Relaxed, //
    },
    types::Opaque, //
};
use core::ptr;

mod alloc;
mod c_api;
mod page;
mod size_class;
mod stats;
mod trace;

#[doc(inline)]
pub use self::{
    alloc::{
        usable_size,
        MallocTypeTag,
        TypedAlloc,
        TypedKVAlloc, //
    },
    page::TypedPage,
    size_class::{
        accounted_size,
        zindx,
        zone_sizes,
        KMALLOC_MAX_CACHE_SIZE,
        KMALLOC_MAX_SIZE,
        ZONE_COUNT_MAX, //
    },
    stats::{
        Snapshot,
        Stats, //
    },
};

#[doc(inline)]
pub use crate::alloc::allocator::{
    M_RUST_KMALLOC,
    M_RUST_KVMALLOC,
    M_RUST_VMALLOC, //
};

pub(crate) use self::size_class::{
    page_rounded,
    vmalloc_shrink_moves, //
};

/// The longest name of a type, in bytes, without the terminating NUL.
pub const NAME_MAX: usize = 31;

const _: () = assert!(NAME_MAX + 1 == bindings::MALLOC_MAX_NAME as usize);

/// The longest owner (module name) the `/proc/malloc_stats` stream carries, in bytes, without
/// the terminating NUL (`MALLOC_MAX_OWNER - 1`; module names are shorter).
pub const OWNER_MAX: usize = 63;

const _: () = assert!(OWNER_MAX + 1 == bindings::MALLOC_MAX_OWNER as usize);

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
/// assert_eq!(t.memalloced, kernel::malloc_type::accounted_size(100) as u64);
/// // SAFETY: `p` was allocated by `M_EXAMPLE` with 100 bytes and is not used again.
/// unsafe { M_EXAMPLE.free(p.as_ptr().cast()) };
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
    ///
    /// # Context
    ///
    /// Any context.
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
    ///
    /// # Context
    ///
    /// Any context.
    #[inline]
    pub unsafe fn from_raw<'a>(ptr: *const bindings::malloc_type) -> &'a Self {
        // SAFETY: `MallocType` is a transparent wrapper of the C struct; validity by the safety
        // requirements.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// Returns the type's name (FreeBSD's short description, `ks_shortdesc`).
    ///
    /// # Context
    ///
    /// Any context.
    pub fn name(&self) -> &CStr {
        // SAFETY: By the type invariant `ks_shortdesc` is a valid C string that outlives `self`
        // and is never written after construction.
        unsafe { CStr::from_char_ptr((*self.as_raw()).ks_shortdesc) }
    }

    /// Returns the text form of the type's name, as every text output shows it: each byte that
    /// is not printable ASCII, and each backslash, as a backslash and three octal digits
    /// (`malloc_type_name_text()`); an empty string while the type is not registered.
    ///
    /// # Context
    ///
    /// Any context, while the type stays registered (the registry frees the text of a type it
    /// unregisters).
    pub fn name_text(&self) -> &CStr {
        // SAFETY: The registry stores `mti_nametext` with `WRITE_ONCE()` before it publishes the
        // statistics and clears it only after unregistering the type; a non-null value is
        // `ks_shortdesc` or a string the registry made, which lives while the type is registered
        // (the caller keeps it so).
        unsafe { self.registry_str(ptr::addr_of_mut!((*self.as_raw()).ks_mti.mti_nametext)) }
    }

    /// Returns the C string that a pointer field of the registry's part of the type
    /// (`ks_mti`) points to, or an empty string while the field is null.
    ///
    /// # Safety
    ///
    /// `field` points to such a field of `self`, which the registry stores with `WRITE_ONCE()`,
    /// and a non-null value of it is a C string that stays valid while the returned reference
    /// is used.
    ///
    /// # Context
    ///
    /// Any context.
    unsafe fn registry_str(&self, field: *mut *const crate::ffi::c_char) -> &CStr {
        // SAFETY: By the safety requirements the field is valid and aligned.
        // ORDERING: Relaxed, as in `id`.
        let p = unsafe { atomic_load(field, Relaxed) };
        if p.is_null() {
            return c"";
        }
        // SAFETY: By the safety requirements a non-null value is a C string that outlives the
        // returned reference.
        unsafe { CStr::from_char_ptr(p) }
    }

    /// Returns the type's long description (`ks_longdesc`).
    ///
    /// # Context
    ///
    /// Any context.
    pub fn description(&self) -> &CStr {
        // SAFETY: As in `name`.
        unsafe { CStr::from_char_ptr((*self.as_raw()).ks_longdesc) }
    }

    /// Returns the type's zone (`mti_zone`): 0 for the shared kmalloc caches, else the set of
    /// dedicated buckets that serves the type.
    ///
    /// # Context
    ///
    /// Any context.
    #[inline]
    pub fn zone(&self) -> u32 {
        // SAFETY: The field is valid and aligned; the registry stores it with `WRITE_ONCE()`.
        // ORDERING: Relaxed, as in `id`.
        unsafe { atomic_load(ptr::addr_of_mut!((*self.as_raw()).ks_mti.mti_zone), Relaxed) }
    }

    /// Returns the registration id: unique, increasing in registration order; 0 if the type is
    /// not registered.
    ///
    /// # Context
    ///
    /// Any context.
    pub fn id(&self) -> u64 {
        // SAFETY: The field is valid and aligned; the registry stores it with `WRITE_ONCE()`.
        // ORDERING: Relaxed, `READ_ONCE()`: the registry writes it before it publishes the
        // statistics, so a reader that saw them registered (an Acquire load) sees it too.
        unsafe { atomic_load(ptr::addr_of_mut!((*self.as_raw()).ks_mti.mti_id), Relaxed) }
    }

    /// Returns the name of the module that defines the type, `vmlinux` for the kernel's own
    /// types, and an empty string while the type is not registered.
    ///
    /// # Context
    ///
    /// Any context.
    ///
    /// # Examples
    ///
    /// ```
    /// kernel::malloc_define!(M_OWNER_DOC, "owner doc", "owner() example");
    ///
    /// // Doctests are built into the kernel.
    /// assert_eq!(M_OWNER_DOC.owner().to_bytes(), b"vmlinux");
    /// ```
    pub fn owner(&self) -> &CStr {
        // SAFETY: The registry stores `mti_owner` with `WRITE_ONCE()`; a non-null value is a
        // string literal or the name of the module that defines the type, which outlives the
        // type's code and so `self`'s uses by it.
        unsafe { self.registry_str(ptr::addr_of_mut!((*self.as_raw()).ks_mti.mti_owner)) }
    }

    /// Returns the type's peak bytes in use (accounted sizes) while its peak is tracked
    /// (`/proc/malloc_types_peak`, `mm/malloc_type_peak.c`), `None` otherwise.
    ///
    /// # Context
    ///
    /// Any context.
    pub fn peak(&self) -> Option<u64> {
        if !trace::peak_tracked(self) {
            return None;
        }
        // SAFETY: `mti_peak` is a valid, aligned `atomic64_t` of a live type.
        let v =
            unsafe { bindings::atomic64_read(ptr::addr_of_mut!((*self.as_raw()).ks_mti.mti_peak)) };
        // CAST: The peak is not negative: it starts at a clamped sum and only rises.
        Some(v.max(0) as u64)
    }

    /// Returns the type's `MALLOC_TYPE_F_*` flags (`mti_flags`).
    ///
    /// # Context
    ///
    /// Any context.
    pub(crate) fn flags(&self) -> u32 {
        // SAFETY: The field is valid and aligned; the registry stores it with `WRITE_ONCE()`.
        // ORDERING: Relaxed, as in `id`.
        unsafe {
            atomic_load(
                ptr::addr_of_mut!((*self.as_raw()).ks_mti.mti_flags),
                Relaxed,
            )
        }
    }

    /// Returns whether the type is defined in a loadable module.
    ///
    /// # Context
    ///
    /// Any context.
    pub fn is_module(&self) -> bool {
        self.flags() & bindings::MALLOC_TYPE_F_MODULE != 0
    }
}

/// Returns the zone a type named `name` gets when there are `numzones` zones: a hash of the
/// name modulo `numzones`, 0 when `numzones <= 1`.
///
/// # Context
///
/// Any context.
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
///
/// # Context
///
/// Any context.
pub fn numzones() -> u32 {
    // SAFETY: No requirements.
    unsafe { bindings::malloc_type_numzones() }
}

/// Returns whether untyped Rust allocations ([`Kmalloc`], [`Vmalloc`] and [`KVmalloc`]) are
/// charged to the default types ("rust kmalloc", "rust vmalloc", "rust kvmalloc"): yes unless
/// the kernel was booted with `malloc_types.default_types=0`.
///
/// A static key (one patched instruction on the allocation paths), fixed before any Rust code
/// runs.
///
/// [`Kmalloc`]: crate::alloc::allocator::Kmalloc
/// [`Vmalloc`]: crate::alloc::allocator::Vmalloc
/// [`KVmalloc`]: crate::alloc::allocator::KVmalloc
///
/// # Context
///
/// Any context.
#[inline(always)]
pub fn default_types_charged() -> bool {
    // SAFETY: `malloc_type_default_types` is a static key defined by C (`mm/malloc_type.c`); it
    // is always okay to query it.
    let off = unsafe {
        crate::jump_label::static_branch_unlikely!(
            bindings::malloc_type_default_types,
            bindings::malloc_type_default_switch,
            off
        )
    };
    !off
}

/// Returns the number of registered types (`kernel.malloc_count`).
///
/// # Context
///
/// Any context.
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
/// See [`try_for_each`] for the locking.
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

/// An entry of the section `__malloc_types_ptrs`, where the registry finds the types: a
/// `struct malloc_type *`.
///
/// Made by [`malloc_define!`](crate::malloc_define) only.
#[doc(hidden)]
#[repr(transparent)]
pub struct SectionEntry(
    /// The type.
    pub *const MallocType,
);

// SAFETY: The entry is never written; it points to a `MallocType`, which is `Sync`.
unsafe impl Sync for SectionEntry {}

/// Declares a static malloc type (FreeBSD's `MALLOC_DEFINE`).
///
/// `malloc_define!(VIS NAME, "name", "description")` defines `VIS static NAME: MallocType`,
/// registered without any call: at boot in vmlinux, at load in a module (and removed at
/// unload, or once freed if a block charged to it outlives the module), and placed in the
/// section `malloc_types`. It also defines a type `NAME` implementing [`MallocTypeTag`], for
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
        #[link_section = "malloc_types"]
        $vis static $name: $crate::malloc_type::MallocType =
            $crate::malloc_type::MallocType::__new($crate::c_str!($short), $crate::c_str!($long));

        const _: () = {
            ::core::assert!(
                !$short.is_empty() && $short.len() <= $crate::malloc_type::NAME_MAX,
                "a malloc type name must have 1 to 31 bytes"
            );

            #[used(compiler)]
            #[link_section = "__malloc_types_ptrs"]
            static __MALLOC_TYPE_PTR: $crate::malloc_type::SectionEntry =
                $crate::malloc_type::SectionEntry(&raw const $name);
        };

        #[doc = ::core::concat!(
            "Allocator tag of [`static@",
            ::core::stringify!($name),
            "`]."
        )]
        #[allow(non_camel_case_types, dead_code)]
        $vis enum $name {}

        impl $crate::malloc_type::MallocTypeTag for $name {
            fn get() -> &'static $crate::malloc_type::MallocType {
                &$name
            }
        }
    };
}

#[cfg(CONFIG_RUST_MALLOC_TYPE_KUNIT_TEST)]
#[macros::kunit_tests(rust_malloc_type)]
mod tests {
    use super::*;
    use crate::alloc::flags::GFP_KERNEL;

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
    fn unregistered_type() {
        // A type that is not in the section has no statistics: it charges nothing.
        static UNREGISTERED: MallocType = MallocType::__new(c"kunit unregistered", c"Not listed");
        assert!(!UNREGISTERED.is_registered());
        assert_eq!((UNREGISTERED.id(), UNREGISTERED.zone()), (0, 0));
        assert!(!UNREGISTERED.is_module());
        let p = UNREGISTERED.malloc(64, GFP_KERNEL);
        assert!(p.is_ok());
        if let Ok(p) = p {
            // SAFETY: `p` came from `UNREGISTERED` with 64 bytes and is not used again.
            unsafe { UNREGISTERED.free(p.as_ptr().cast()) };
        }
        assert!(UNREGISTERED.stats() == Stats::default());
    }
}
