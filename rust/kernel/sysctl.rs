// SPDX-License-Identifier: GPL-2.0

//! Read-only sysctls whose values are computed when they are read.
//!
//! C header: [`include/linux/sysctl.h`](srctree/include/linux/sysctl.h)
//!
//! This models a static `struct ctl_table[]` registered with `register_sysctl()`: a table of
//! [`Entry`]s is built at compile time, in a `static`, and a [`Registration`] registers it under
//! a path of `/proc/sys` with `register_sysctl_sz()` and unregisters it when dropped. Each entry
//! is made by [`ro_ints`] from a type implementing [`ReadInts`]: a read of the file calls
//! [`ReadInts::read`] and prints the values it returns as `proc_dointvec()` does (tab-separated,
//! newline-terminated). Writes fail with `EPERM`; the files have mode `0444`.
//!
//! As with every `proc_dointvec()` file, a read must fetch the whole value at once: a read at a
//! non-zero offset returns end-of-file. Reading allocates nothing: the values are collected in
//! an [`IntValues`] on the stack.

use crate::{
    bindings,
    error::{
        code::*,
        Result, //
    },
    ffi::{
        c_int,
        c_void, //
    },
    str::{
        CStr,
        CStrExt as _, //
    }, //
};
use core::ptr::NonNull;

/// Up to [`IntValues::CAPACITY`] integers, collected on the stack for a sysctl read.
pub struct IntValues {
    values: [c_int; IntValues::CAPACITY],
    len: usize,
}

impl IntValues {
    /// The largest number of values a sysctl of [`ro_ints`] can have.
    pub const CAPACITY: usize = 64;

    fn new() -> Self {
        Self {
            values: [0; Self::CAPACITY],
            len: 0,
        }
    }

    /// Appends `v`.
    ///
    /// # Errors
    ///
    /// `EOVERFLOW` when [`IntValues::CAPACITY`] values are already there.
    pub fn push(&mut self, v: i32) -> Result {
        let slot = self.values.get_mut(self.len).ok_or(EOVERFLOW)?;
        *slot = v;
        self.len += 1;
        Ok(())
    }

    /// Returns the values pushed so far.
    pub fn as_slice(&self) -> &[i32] {
        &self.values[..self.len]
    }
}

/// The values of a read-only integer sysctl, computed at each read.
pub trait ReadInts: 'static {
    /// Appends the current values to `out` (one value for a scalar sysctl).
    ///
    /// # Errors
    ///
    /// An error is returned to the reader as the result of its `read()`.
    fn read(out: &mut IntValues) -> Result;
}

/// One entry of a sysctl table, a `struct ctl_table`, made by [`ro_ints`].
///
/// # Invariants
///
/// `procname` points to a static NUL-terminated string, `proc_handler` is
/// `ro_ints_handler::<T>` for some `T: ReadInts`, and the other pointers are null.
#[repr(transparent)]
pub struct Entry(bindings::ctl_table);

// SAFETY: An `Entry` is never written after it is made (the sysctl core takes tables as
// `const`, and the handler reads a copy), and the string it points to is static and immutable.
unsafe impl Sync for Entry {}

/// Makes a read-only entry called `procname` whose values `T` computes at each read.
pub const fn ro_ints<T: ReadInts>(procname: &'static CStr) -> Entry {
    // INVARIANT: `procname` is static and NUL-terminated, the handler is `ro_ints_handler::<T>`,
    // and the other pointers are null.
    Entry(bindings::ctl_table {
        procname: crate::str::as_char_ptr_in_const_context(procname),
        data: core::ptr::null_mut(),
        maxlen: 0,
        mode: 0o444,
        proc_handler: Some(ro_ints_handler::<T>),
        poll: core::ptr::null_mut(),
        extra1: core::ptr::null_mut(),
        extra2: core::ptr::null_mut(),
    })
}

/// The `proc_handler` of [`ro_ints`] entries.
///
/// # Safety
///
/// Must only be called by the sysctl core as the handler of an entry made by [`ro_ints`], with
/// the arguments of a `proc_handler`.
unsafe extern "C" fn ro_ints_handler<T: ReadInts>(
    table: *const bindings::ctl_table,
    dir: c_int,
    buffer: *mut c_void,
    lenp: *mut usize,
    ppos: *mut bindings::loff_t,
) -> c_int {
    if dir != 0 {
        return EPERM.to_errno();
    }
    let mut values = IntValues::new();
    if let Err(e) = T::read(&mut values) {
        return e.to_errno();
    }
    let Ok(maxlen) = c_int::try_from(values.len * size_of::<c_int>()) else {
        return EOVERFLOW.to_errno();
    };
    // SAFETY: By the safety requirements `table` points to a valid entry. A copy of it that
    // points at `values` is what `proc_dointvec()` formats; nothing keeps the copy afterwards.
    let mut entry = unsafe { table.read() };
    entry.data = values.values.as_mut_ptr().cast();
    entry.maxlen = maxlen;
    // SAFETY: `entry` describes `values.len` integers at `entry.data`, which live until after
    // the call; the other arguments are the caller's, valid by the safety requirements.
    unsafe { bindings::proc_dointvec(&entry, dir, buffer, lenp, ppos) }
}

/// A static sysctl table registered under a path of `/proc/sys`, unregistered when dropped.
///
/// # Invariants
///
/// `header` was returned by `register_sysctl_sz()` for a static table of [`Entry`]s.
///
/// # Examples
///
/// ```
/// use kernel::sysctl::{ro_ints, Entry, IntValues, ReadInts, Registration};
///
/// struct Answer;
///
/// impl ReadInts for Answer {
///     fn read(out: &mut IntValues) -> Result {
///         out.push(42)
///     }
/// }
///
/// static TABLE: [Entry; 1] = [ro_ints::<Answer>(c"rust_doctest_answer")];
///
/// // `/proc/sys/debug/rust_doctest_answer` reads `42`, until `table` is dropped.
/// let table = Registration::register(c"debug", &TABLE)?;
/// drop(table);
/// # Ok::<(), Error>(())
/// ```
pub struct Registration {
    header: NonNull<bindings::ctl_table_header>,
}

impl Registration {
    /// Registers `entries` under `path` (for example `c"vm"` for `/proc/sys/vm`).
    ///
    /// # Context
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `EINVAL` for an empty table; `ENOMEM` when memory runs out or the sysctl core refuses the
    /// table (for example, a name that is already registered under `path`).
    pub fn register(path: &'static CStr, entries: &'static [Entry]) -> Result<Self> {
        if entries.is_empty() {
            return Err(EINVAL);
        }
        // SAFETY: `path` is NUL-terminated and static; `entries` are `entries.len()` valid
        // `struct ctl_table`s (`Entry` is `repr(transparent)`, and valid by its invariants) in
        // static memory, which outlives the registration.
        let header = unsafe {
            bindings::register_sysctl_sz(
                path.as_char_ptr(),
                entries.as_ptr().cast::<bindings::ctl_table>(),
                entries.len(),
            )
        };
        let header = NonNull::new(header).ok_or(ENOMEM)?;
        // INVARIANT: `header` was just returned by `register_sysctl_sz()` for `entries`, which
        // are static.
        Ok(Self { header })
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // SAFETY: By the type invariants `header` is registered; unregistering it waits for the
        // readers inside a handler.
        unsafe { bindings::unregister_sysctl_table(self.header.as_ptr()) };
    }
}

// SAFETY: The registration is only unregistered on drop, which may happen on any thread.
unsafe impl Send for Registration {}

// SAFETY: `&Registration` gives no access to the table.
unsafe impl Sync for Registration {}
