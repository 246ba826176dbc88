// SPDX-License-Identifier: GPL-2.0

//! Files in `/proc` whose contents are produced by a [`SeqFile`].
//!
//! C header: [`include/linux/proc_fs.h`](srctree/include/linux/proc_fs.h)
//!
//! This models `proc_create_single_data()`: a read of the file from offset 0 calls
//! [`SingleShow::show`] once, which writes the whole contents into the seq_file's buffer (the
//! seq_file core calls it again with a buffer twice as large if the contents did not fit), and
//! reads at later offsets are served from that buffer. A file whose size can be estimated says
//! so in [`SingleShow::size_hint`]: the buffer is then allocated with that size when the file is
//! opened (`single_open_size()`), and a large file is produced in one call instead of one per
//! doubling of a page-sized buffer. One sequence of `read()` calls on an open file
//! therefore sees one snapshot, whatever the sizes of the reads; a `pread()` at an offset other
//! than the current one makes a new snapshot.
//!
//! Files in `/proc` are for core kernel state (`/proc/slabinfo`, `/proc/allocinfo`); drivers
//! should use sysfs or debugfs instead.

use crate::{
    bindings,
    error::{
        code::{
            EINVAL,
            ENOMEM, //
        },
        Result, //
    },
    ffi::{
        c_int,
        c_void, //
    },
    seq_file::SeqFile,
    str::{
        CStr,
        CStrExt as _, //
    }, //
};
use core::{
    marker::PhantomData,
    ptr::{
        self,
        NonNull, //
    }, //
};

/// The contents of a `/proc` file created with [`SingleFile`].
pub trait SingleShow: 'static {
    /// Writes the whole contents of the file to `m`.
    ///
    /// It may be called several times for one read, each time from the beginning, when the
    /// contents did not fit in the seq_file's buffer.
    ///
    /// # Errors
    ///
    /// An error is returned to the reader as the result of its `read()`.
    fn show(m: &SeqFile) -> Result;

    /// Returns the size in bytes of the buffer to give [`SingleShow::show`] at the first read
    /// of a file just opened, or 0 for the seq_file core's default (a page, doubled as needed).
    ///
    /// An estimate of the whole contents, a little above rather than below: a hint too small
    /// costs one more call of `show` for each doubling, one too large only memory, and the
    /// reader may not ask for more than `MAX_RW_COUNT` bytes.
    ///
    /// # Context
    ///
    /// Process context (the `open()` of the file).
    fn size_hint() -> usize {
        0
    }
}

/// A file in `/proc`, removed when this is dropped.
///
/// # Invariants
///
/// `entry` is a live proc entry created by `proc_create()` with `Ops::<T>::OPS`, the callbacks
/// of a single-show seq_file whose show callback is `show_callback::<T>`.
///
/// # Examples
///
/// ```
/// use kernel::proc_fs::{SingleFile, SingleShow};
/// use kernel::seq_file::SeqFile;
/// use kernel::seq_print;
///
/// struct Answer;
///
/// impl SingleShow for Answer {
///     fn show(m: &SeqFile) -> Result {
///         seq_print!(m, "answer - version: 1.0\n42\n");
///         Ok(())
///     }
/// }
///
/// // `/proc/rust_doctest_answer`, readable by root only, until `file` is dropped.
/// let file = SingleFile::<Answer>::new(c"rust_doctest_answer", 0o400)?;
/// drop(file);
///
/// // Only permission bits are accepted.
/// assert_eq!(
///     SingleFile::<Answer>::new(c"rust_doctest_bad", 0o100644).err(),
///     Some(EINVAL)
/// );
/// # Ok::<(), Error>(())
/// ```
pub struct SingleFile<T: SingleShow> {
    entry: NonNull<bindings::proc_dir_entry>,
    _show: PhantomData<T>,
}

/// The show callback of a [`SingleFile<T>`].
///
/// # Safety
///
/// Must only be called by the seq_file core, with `m` a valid seq_file owned by the caller for
/// the duration of the call.
unsafe extern "C" fn show_callback<T: SingleShow>(
    m: *mut bindings::seq_file,
    _v: *mut c_void,
) -> c_int {
    // SAFETY: By the safety requirements, `m` is valid and not used by any other thread during
    // this call.
    let m = unsafe { SeqFile::from_raw(m) };
    match T::show(m) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// The open callback of a [`SingleFile<T>`]: `single_open()` or, with a size hint,
/// `single_open_size()`.
///
/// # Safety
///
/// Must only be called by procfs as the `proc_open` of an entry of [`SingleFile<T>`], with
/// `file` the file being opened.
unsafe extern "C" fn open_callback<T: SingleShow>(
    _inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    match T::size_hint() {
        // SAFETY: `file` is being opened (safety requirements); `show_callback::<T>` has the
        // signature of a show callback and uses no data.
        0 => unsafe { bindings::single_open(file, Some(show_callback::<T>), ptr::null_mut()) },
        // SAFETY: As above; `single_open_size()` fails with `ENOMEM` for a size it cannot
        // allocate, which then fails the `open()`.
        size => unsafe {
            bindings::single_open_size(file, Some(show_callback::<T>), ptr::null_mut(), size)
        },
    }
}

/// The `proc_ops` of a [`SingleFile<T>`], as procfs's own `proc_single_ops` with the open
/// callback of `T`.
struct Ops<T>(PhantomData<T>);

impl<T: SingleShow> Ops<T> {
    const OPS: bindings::proc_ops = bindings::proc_ops {
        proc_open: Some(open_callback::<T>),
        proc_read_iter: Some(bindings::seq_read_iter),
        proc_lseek: Some(bindings::seq_lseek),
        proc_release: Some(bindings::single_release),
        ..pin_init::zeroed()
    };
}

impl<T: SingleShow> SingleFile<T> {
    /// Creates `/proc/NAME` with the permission bits `mode` (for example `0o400`).
    ///
    /// # Context
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `EINVAL` if `mode` has bits other than permission bits; `ENOMEM` if procfs could not
    /// create the entry, which includes the case of a name that is already taken.
    pub fn new(name: &'static CStr, mode: u16) -> Result<Self> {
        if mode & !0o777 != 0 {
            return Err(EINVAL);
        }
        // SAFETY: `name` is a NUL-terminated string that outlives the entry, a null parent
        // means `/proc` itself, and `Ops::<T>::OPS` is a `proc_ops` in static memory whose
        // callbacks are those of a seq_file with `show_callback::<T>` as its show callback.
        let entry = unsafe {
            bindings::proc_create(name.as_char_ptr(), mode, ptr::null_mut(), &Ops::<T>::OPS)
        };
        let entry = NonNull::new(entry).ok_or(ENOMEM)?;
        // INVARIANT: `entry` was just created by `proc_create()` with the callbacks of a
        // single-show seq_file of `show_callback::<T>`, and is removed only when `Self` is
        // dropped.
        Ok(Self {
            entry,
            _show: PhantomData,
        })
    }
}

impl<T: SingleShow> Drop for SingleFile<T> {
    fn drop(&mut self) {
        // SAFETY: By the type invariants `entry` is live. `proc_remove()` waits for the readers
        // that are inside a callback of the entry to leave it, so no callback runs after this.
        unsafe { bindings::proc_remove(self.entry.as_ptr()) };
    }
}

// SAFETY: The entry is only handed to `proc_remove()`, which may be called from any thread.
unsafe impl<T: SingleShow> Send for SingleFile<T> {}

// SAFETY: `&SingleFile` gives no access to the entry.
unsafe impl<T: SingleShow> Sync for SingleFile<T> {}
