// SPDX-License-Identifier: GPL-2.0

//! The C API of malloc types: the functions behind `kmalloc_mt()` and its family.
//!
//! `include/linux/malloc_type.h` gives C code FreeBSD's `MALLOC_DEFINE()` and kmalloc-style
//! functions with the type last (`kmalloc_mt(size, flags, M_FOO)`, `kfree_mt(p, M_FOO)`, ...).
//! They are thin inline wrappers over the functions here, which are the Rust
//! implementation exported to C: the accounting, the zones and the tracepoints stay one
//! implementation, [`MallocType`]'s.
//!
//! The C conventions hold at this boundary: a zero-byte request returns `ZERO_SIZE_PTR`, a
//! failure returns NULL, `krealloc_mt()` to zero bytes frees, and the frees take NULL and
//! `ZERO_SIZE_PTR`. A NULL type is a bug of the caller: it warns, allocates nothing, and frees
//! without accounting (leaking the block would be worse).
//!
//! A block of the C API carries a record of its type (`malloc_type_obj_set()`,
//! `mm/malloc_type_slab.c`), so that `kfree()`, `kvfree()` and `kfree_rcu()` charge it back
//! too, and a free given another type charges back the type the block was charged to. The
//! functions here that take a block take its record off first and charge the recorded type
//! themselves; a block without a record is charged back to the type they are given.
//!
//! C header: [`include/linux/malloc_type.h`](srctree/include/linux/malloc_type.h)

use super::{
    alloc::zero_or_null,
    zindx,
    MallocType, //
};
use crate::{
    alloc::{
        Flags,
        NumaNode, //
    },
    bindings,
    ffi::{
        c_int,
        c_ulong,
        c_void, //
    },
    prelude::*,
};
use core::{
    alloc::Layout,
    ptr, //
};

/// C's `ZERO_SIZE_PTR`: what a zero-byte allocation returns.
fn zero_size_ptr() -> *mut c_void {
    ptr::without_provenance_mut(16)
}

/// Returns the type a C caller passed, or `None` with a warning for NULL.
///
/// # Safety
///
/// `mtp` is NULL or points to a `struct malloc_type` defined with `MALLOC_DEFINE()` (or
/// `kernel::malloc_define!`), which lives as long as the code that uses it.
unsafe fn type_of<'a>(mtp: *mut bindings::malloc_type) -> Option<&'a MallocType> {
    if crate::warn_on!(mtp.is_null()) {
        return None;
    }
    // SAFETY: `mtp` is a valid type for `'a` (safety requirements); `MALLOC_DEFINE()` checks the
    // length of the name at compile time and both descriptions are string literals.
    Some(unsafe { MallocType::from_raw(mtp) })
}

/// Turns a C node id (a node number or `NUMA_NO_NODE`) into a [`NumaNode`].
fn node_of(node: c_int) -> Result<NumaNode> {
    if node == bindings::NUMA_NO_NODE {
        Ok(NumaNode::NO_NODE)
    } else {
        NumaNode::new(node)
    }
}

/// Turns the result of a typed allocation into C's: the block, `ZERO_SIZE_PTR` for zero bytes,
/// NULL for a failure.
fn to_c<E>(r: Result<ptr::NonNull<[u8]>, E>) -> *mut c_void {
    match r {
        Ok(p) if p.is_empty() => zero_size_ptr(),
        Ok(p) => p.as_ptr().cast(),
        Err(_) => ptr::null_mut(),
    }
}

/// Records `t` as the type of `p`, a new block of the C API (nothing for NULL and
/// `ZERO_SIZE_PTR`), so that any free charges `t` back. A block that gets no record (of a type
/// that cannot outlive its module, or one that can have none) is charged back to the type its
/// free is given.
fn record(p: *mut c_void, t: &MallocType, flags: bindings::gfp_t) {
    if !zero_or_null(p) {
        // SAFETY: `p` is a live block of kmalloc, kvmalloc or memguard, just allocated or resized
        // and without a record; `t` is a valid type.
        let _ = unsafe { bindings::malloc_type_obj_set(p, t.as_raw(), flags) };
    }
}

/// Takes the record off `p` (`malloc_type_obj_take()`) and returns the type it was charged to,
/// which the caller charges back: the recorded type, else `t`; and whether there was a record.
///
/// # Safety
///
/// `p` is NULL, `ZERO_SIZE_PTR`, or a live block of `kmalloc_mt()` and friends.
unsafe fn take_record<'a>(p: *const c_void, t: &'a MallocType) -> (&'a MallocType, bool) {
    // SAFETY: By the safety requirements.
    let r = unsafe { bindings::malloc_type_obj_take(p, t.as_raw()) };
    if r.is_null() {
        (t, false)
    } else {
        // SAFETY: A recorded type stays registered while a block charged to it, as `p`, is
        // allocated (`mm/malloc_type_module.c`); the caller charges `p` back before it frees it.
        (unsafe { MallocType::from_raw(r) }, true)
    }
}

/// Frees `p` and charges back the type it was charged to: its record's, else `t`; with the one
/// lookup of the block that `kfree()` does (`kfree_size_mt()`).
///
/// # Safety
///
/// `p` is a live block of `kmalloc_mt()` and friends (not NULL or `ZERO_SIZE_PTR`), not used
/// again.
unsafe fn free_c(t: &MallocType, p: *const c_void) {
    // SAFETY: `p` is a live block, not used again (safety requirements).
    if let Some(size) = unsafe { super::alloc::free_guarded(p.cast()) } {
        t.account_free(size, zindx(size));
        return;
    }
    let mut mtp = t.as_raw();
    // SAFETY: `p` is a live kmalloc block outside memguard's arena, not used again (safety
    // requirements); `mtp` is a valid type.
    let size = unsafe { bindings::kfree_size_mt(p, &mut mtp) };
    // SAFETY: `mtp` is `t`, or the type recorded for `p`, which stays registered until the
    // charge back below (`mm/malloc_type_module.c`).
    unsafe { MallocType::from_raw(mtp) }.account_free(size, zindx(size));
}

/// Which allocator a new block of the C API comes from.
#[derive(Clone, Copy)]
enum Source {
    /// kmalloc, from the type's zone (`kmalloc_mt()` and friends).
    Kmalloc,
    /// kmalloc, falling back to vmalloc (`kvmalloc_mt()` and friends).
    KVmalloc,
}

/// A new block of `size` bytes on `node` from `from`, charged to `mtp`, in C's conventions.
///
/// # Safety
///
/// `mtp` is NULL or a malloc type that outlives the block (`MALLOC_DEFINE()`).
unsafe fn alloc_c(
    from: Source,
    size: usize,
    flags: bindings::gfp_t,
    node: c_int,
    mtp: *mut bindings::malloc_type,
) -> *mut c_void {
    // SAFETY: By the safety requirements.
    let Some(t) = (unsafe { type_of(mtp) }) else {
        return ptr::null_mut();
    };
    let (Ok(layout), Ok(nid)) = (Layout::from_size_align(size, 1), node_of(node)) else {
        t.account_failure();
        return ptr::null_mut();
    };
    let gfp = Flags::from_raw(flags);
    let p = to_c(match from {
        Source::Kmalloc => t.alloc_new(layout, gfp, nid),
        // SAFETY: `None` asks for a new block.
        Source::KVmalloc => unsafe { t.kvrealloc_layout(None, layout, layout, gfp, nid) },
    });
    record(p, t, flags);
    p
}

/// Allocates `size` bytes on `node` charged to `mtp`: `kmalloc_node_mt()`, `kmalloc_mt()`,
/// `kzalloc_mt()`, `kmalloc_array_mt()`, `kcalloc_mt()`.
///
/// Returns the block (from the type's zone), `ZERO_SIZE_PTR` for zero bytes (nothing charged),
/// or NULL when the memory cannot be allocated, `size` exceeds `KMALLOC_MAX_SIZE`, `node` is
/// not a valid node (a failure of the type), or `mtp` is NULL (a warning).
///
/// # Safety
///
/// `mtp` is NULL or a malloc type that outlives the block (`MALLOC_DEFINE()`).
///
/// # Context
///
/// As for `kmalloc()` with `flags`.
#[export]
unsafe extern "C" fn malloc_type_kmalloc_node(
    size: usize,
    flags: bindings::gfp_t,
    node: c_int,
    mtp: *mut bindings::malloc_type,
) -> *mut c_void {
    // SAFETY: By the safety requirements.
    unsafe { alloc_c(Source::Kmalloc, size, flags, node, mtp) }
}

/// Resizes `p` to `new_size` bytes, charged to `mtp`: `krealloc_mt()`.
///
/// NULL or `ZERO_SIZE_PTR` allocates; zero bytes frees `p` and returns `ZERO_SIZE_PTR`. Returns
/// NULL on failure, with `p` still allocated and a failure of the type counted.
///
/// # Safety
///
/// `p` is NULL, `ZERO_SIZE_PTR`, or a live block of `kmalloc_mt()` and friends (or of the Rust
/// raw API) charged to `mtp`, not used again after a successful call; `mtp` as for
/// [`malloc_type_kmalloc_node`].
///
/// # Context
///
/// As for `krealloc()` with `flags`.
#[export]
unsafe extern "C" fn malloc_type_krealloc(
    p: *const c_void,
    new_size: usize,
    flags: bindings::gfp_t,
    mtp: *mut bindings::malloc_type,
) -> *mut c_void {
    // SAFETY: By the safety requirements.
    let Some(t) = (unsafe { type_of(mtp) }) else {
        return ptr::null_mut();
    };
    // SAFETY: `p` is NULL, `ZERO_SIZE_PTR` or a live block of `kmalloc_mt()` and friends
    // (safety requirements).
    let (t, recorded) = unsafe { take_record(p, t) };
    // SAFETY: `p` is NULL, `ZERO_SIZE_PTR` or a live block of the raw API of `t`, without its
    // record.
    let r = to_c(unsafe {
        t.realloc_node(
            p.cast_mut().cast(),
            new_size,
            Flags::from_raw(flags),
            NumaNode::NO_NODE,
        )
    });
    if !r.is_null() {
        record(r, t, flags);
    } else if recorded {
        // The resize failed and `p` is still allocated: it keeps its record.
        record(p.cast_mut(), t, flags);
    }
    r
}

/// Resizes `p` to `new_size` bytes, charged to `mtp`, and frees `p` when that fails:
/// `kreallocf_mt()`, FreeBSD's `reallocf()`.
///
/// As [`malloc_type_krealloc`], but a failure returns NULL with `p` freed (a free of the type)
/// and the failure counted. A NULL `mtp` warns, frees `p` without accounting (the caller does
/// not use it again) and returns NULL.
///
/// # Safety
///
/// As for [`malloc_type_krealloc`]; `p` is not used again, whether the call succeeds or fails.
///
/// # Context
///
/// As for `krealloc()` with `flags`.
#[export]
unsafe extern "C" fn malloc_type_kreallocf(
    p: *const c_void,
    new_size: usize,
    flags: bindings::gfp_t,
    mtp: *mut bindings::malloc_type,
) -> *mut c_void {
    // SAFETY: By the safety requirements.
    let Some(t) = (unsafe { type_of(mtp) }) else {
        // SAFETY: `p` is NULL, `ZERO_SIZE_PTR` or a live kmalloc block, not used again (safety
        // requirements).
        unsafe { bindings::kfree(p) };
        return ptr::null_mut();
    };
    // SAFETY: `p` is NULL, `ZERO_SIZE_PTR` or a live block of `kmalloc_mt()` and friends
    // (safety requirements).
    let (t, _) = unsafe { take_record(p, t) };
    // SAFETY: `p` is NULL, `ZERO_SIZE_PTR` or a live block of the raw API of `t`, without its
    // record, not used again (safety requirements).
    let r = to_c(unsafe { t.reallocf(p.cast_mut().cast(), new_size, Flags::from_raw(flags)) });
    record(r, t, flags);
    r
}

/// Zeroes the whole block `p` consumed, then frees it, charged to `mtp`: `kfree_sensitive_mt()`,
/// FreeBSD's `zfree()`. NULL and `ZERO_SIZE_PTR` are a no-op; the size comes from the block.
///
/// # Safety
///
/// As for [`malloc_type_kfree`].
///
/// # Context
///
/// Any context, as `kfree_sensitive()`.
#[export]
unsafe extern "C" fn malloc_type_kfree_sensitive(
    p: *const c_void,
    mtp: *mut bindings::malloc_type,
) {
    if zero_or_null(p) {
        return;
    }
    // SAFETY: By the safety requirements.
    match unsafe { type_of(mtp) } {
        Some(t) => {
            // SAFETY: `p` is a live block of `kmalloc_mt()` and friends (safety requirements).
            let (t, _) = unsafe { take_record(p, t) };
            // SAFETY: `p` is a live block of the raw API of `t`, without its record.
            unsafe { t.zfree(p.cast_mut().cast()) }
        }
        // SAFETY: `p` is a live kmalloc block (safety requirements), not used again.
        None => unsafe { bindings::kfree_sensitive(p) },
    }
}

/// Frees `p`, charged to `mtp`: `kfree_mt()`. NULL and `ZERO_SIZE_PTR` are a no-op; the size
/// comes from the block.
///
/// # Safety
///
/// `p` is NULL, `ZERO_SIZE_PTR`, or a live block of `kmalloc_mt()` and friends (or of the Rust
/// raw API) charged to `mtp`, not used again; `mtp` as for [`malloc_type_kmalloc_node`].
///
/// # Context
///
/// Any context, as `kfree()`.
#[export]
unsafe extern "C" fn malloc_type_kfree(p: *const c_void, mtp: *mut bindings::malloc_type) {
    if zero_or_null(p) {
        return;
    }
    // SAFETY: By the safety requirements.
    match unsafe { type_of(mtp) } {
        // SAFETY: `p` is a live block of `kmalloc_mt()` and friends, not used again (safety
        // requirements).
        Some(t) => unsafe { free_c(t, p) },
        // SAFETY: `p` is a live kmalloc block (safety requirements), not used again.
        None => unsafe { bindings::kfree(p) },
    }
}

/// Allocates `size` bytes on `node` charged to `mtp`, from kmalloc or else vmalloc:
/// `kvmalloc_node_mt()`, `kvmalloc_mt()`, `kvzalloc_mt()`, `kvmalloc_array_mt()`.
///
/// A kmalloc block (the shared caches) is charged its size class, a vmalloc block its size
/// rounded up to pages with zindx -1. Returns `ZERO_SIZE_PTR` for zero bytes, NULL as
/// [`malloc_type_kmalloc_node`] does.
///
/// # Safety
///
/// As for [`malloc_type_kmalloc_node`].
///
/// # Context
///
/// As for `kvmalloc()`.
#[export]
unsafe extern "C" fn malloc_type_kvmalloc_node(
    size: usize,
    flags: bindings::gfp_t,
    node: c_int,
    mtp: *mut bindings::malloc_type,
) -> *mut c_void {
    // SAFETY: By the safety requirements.
    unsafe { alloc_c(Source::KVmalloc, size, flags, node, mtp) }
}

/// Frees `p` of `kvmalloc_mt()` and friends, charged to `mtp`: `kvfree_mt()`. NULL and
/// `ZERO_SIZE_PTR` are a no-op; the size comes from the block, kmalloc or vmalloc.
///
/// # Safety
///
/// `p` is NULL, `ZERO_SIZE_PTR`, or a live block of `kvmalloc_mt()` and friends charged to
/// `mtp`, not used again; `mtp` as for [`malloc_type_kmalloc_node`].
///
/// # Context
///
/// As for `kvfree()`.
#[export]
unsafe extern "C" fn malloc_type_kvfree(p: *const c_void, mtp: *mut bindings::malloc_type) {
    if zero_or_null(p) {
        return;
    }
    // SAFETY: By the safety requirements.
    let t = unsafe { type_of(mtp) };
    // SAFETY: `p` is a live block of `kvmalloc_mt()` and friends (safety requirements).
    let t = t.map(|t| unsafe { take_record(p, t) }.0);
    // SAFETY: `p` is a live block (safety requirements), not used again.
    let (size, class) = match unsafe { super::alloc::free_guarded(p.cast()) } {
        // A kmalloc_mt() block memguard guards, freed with kvfree_mt().
        Some(size) => (size, zindx(size)),
        None => {
            // SAFETY: `p` is a live kmalloc or vmalloc block (safety requirements).
            let size = unsafe { bindings::malloc_type_block_size(p) };
            // vmalloc's blocks have no size class.
            // SAFETY: `is_vmalloc_addr()` only compares the address with the vmalloc range.
            let class = if unsafe { bindings::is_vmalloc_addr(p) } {
                -1
            } else {
                zindx(size)
            };
            // SAFETY: As above; it is not used again.
            unsafe { bindings::kvfree(p) };
            (size, class)
        }
    };
    if let Some(t) = t {
        t.account_free(size, class);
    }
}

/// Charges `size` bytes that came from another allocator to `mtp`, as one allocation:
/// `malloc_type_allocated()`, FreeBSD's. Zero bytes charge nothing; a NULL `mtp` warns.
///
/// # Safety
///
/// `mtp` is NULL or a malloc type (`MALLOC_DEFINE()`) that outlives the call.
///
/// # Context
///
/// Any context.
#[export]
unsafe extern "C" fn malloc_type_allocated(mtp: *mut bindings::malloc_type, size: c_ulong) {
    // SAFETY: By the safety requirements.
    if let Some(t) = unsafe { type_of(mtp) } {
        t.allocated(size);
    }
}

/// Charges `mtp` one kmalloc block of `size` bytes, the object size of its cache or the pages of
/// a large kmalloc, with the size class of that size (`mts_size`), as the typed allocations
/// charge theirs: the charge of a default type, which the slab allocator makes for a `kmalloc()`
/// of a call site whose tag names the type (`mm/malloc_type_default.c`). The free hooks charge
/// the block back with `malloc_type_freed()`.
///
/// # Safety
///
/// As for [`malloc_type_allocated`].
///
/// # Context
///
/// Any context.
#[export]
unsafe extern "C" fn malloc_type_kmalloc_charged(mtp: *mut bindings::malloc_type, size: c_ulong) {
    // SAFETY: By the safety requirements.
    if let Some(t) = unsafe { type_of(mtp) } {
        t.account_alloc(size, zindx(size));
    }
}

/// Takes one kmalloc block of `size` bytes charged with `malloc_type_kmalloc_charged()` (or by
/// the slab allocator's kmalloc hook) off `mtp`, with the size class of that size: the free hooks'
/// charge back of a block whose record names `mtp`, where it is not made inline.
///
/// # Safety
///
/// As for [`malloc_type_allocated`].
///
/// # Context
///
/// Any context.
#[export]
unsafe extern "C" fn malloc_type_kmalloc_uncharged(mtp: *mut bindings::malloc_type, size: c_ulong) {
    // SAFETY: By the safety requirements.
    if let Some(t) = unsafe { type_of(mtp) } {
        t.account_free(size, zindx(size));
    }
}

/// Takes `size` bytes charged with `malloc_type_allocated()` off `mtp`, as one free:
/// `malloc_type_freed()`, FreeBSD's. Zero bytes change nothing; a NULL `mtp` warns.
///
/// # Safety
///
/// As for [`malloc_type_allocated`].
///
/// # Context
///
/// Any context.
#[export]
unsafe extern "C" fn malloc_type_freed(mtp: *mut bindings::malloc_type, size: c_ulong) {
    // SAFETY: By the safety requirements.
    if let Some(t) = unsafe { type_of(mtp) } {
        t.freed(size);
    }
}

/// Counts a failed allocation of another allocator on `mtp` (`malloc_type_failed()`): one
/// failure, no other counter. A NULL `mtp` warns.
///
/// # Safety
///
/// As for [`malloc_type_allocated`].
///
/// # Context
///
/// Any context.
#[export]
unsafe extern "C" fn malloc_type_failed(mtp: *mut bindings::malloc_type) {
    // SAFETY: By the safety requirements.
    if let Some(t) = unsafe { type_of(mtp) } {
        t.failed();
    }
}
