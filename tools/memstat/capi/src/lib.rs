// SPDX-License-Identifier: GPL-2.0

//! # libmemstat — FreeBSD's `<memstat.h>` for C programs
//!
//! The C interface of libmemstat(3) over the `memstat` crate: the functions, constants and
//! error codes of FreeBSD's `lib/libmemstat/memstat.h`, with the same argument and return types,
//! built as `libmemstat.so.1` and `libmemstat.a` (`capi/Makefile`). The header is
//! `capi/include/memstat.h`; a test (`tests/header.rs`) checks it against the functions this
//! crate exports, as cbindgen sees them.
//!
//! The model is the Rust crate's [`MemoryTypeList`]; this crate adds what C needs on top:
//!
//! * a stable `struct memory_type *` per entry, kept across updates for the entries that
//!   survive them (a malloc type is the same entry while its id and name are; a slab cache
//!   while its directory is), so that `memstat_mtl_next()` walks the list and a pointer a
//!   program holds stays valid until the entry goes away or the list is freed;
//! * NUL-terminated names owned by the list;
//! * errors as `MEMSTAT_ERROR_*` codes in the list, `errno` set as FreeBSD's sysctl-based
//!   calls leave it, and a message (`memstat_mtl_geterrmsg()`, a Linux addition);
//! * the zone table of `memstat_malloc_zone_get_count()` / `_get_size()`, which FreeBSD keeps
//!   in the library after a malloc query.
//!
//! Nothing here panics on bad input: NULL pointers, indexes and CPUs out of range get the
//! documented error or value. Every exported function that does more than call another runs
//! its body under [`std::panic::catch_unwind`] all the same, so that no unwinding crosses
//! into C (and an `extern "C"` function that a panic left would abort, not unwind).

#![allow(non_camel_case_types)]

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use memstat_lib::zones::DEFAULT_SYSCTL_DIR;
use memstat_lib::{
    kvm, Allocator, AllocatorFilter, Error, ErrorKind, MemoryType, MemoryTypeList, SlabSource,
    ZoneSizes, DEFAULT_PROC_PATH, MAXCALLER,
};

/// `ALLOCATOR_UNKNOWN`.
pub const ALLOCATOR_UNKNOWN: c_int = 0;
/// `ALLOCATOR_MALLOC`: malloc types.
pub const ALLOCATOR_MALLOC: c_int = 1;
/// `ALLOCATOR_UMA`: slab caches, the Linux counterpart of UMA zones.
pub const ALLOCATOR_UMA: c_int = 2;
/// `ALLOCATOR_ANY`.
pub const ALLOCATOR_ANY: c_int = 255;

/// `MEMSTAT_ERROR_UNDEFINED`.
pub const MEMSTAT_ERROR_UNDEFINED: c_int = 0;
/// `MEMSTAT_ERROR_NOMEMORY`.
pub const MEMSTAT_ERROR_NOMEMORY: c_int = 1;
/// `MEMSTAT_ERROR_VERSION`.
pub const MEMSTAT_ERROR_VERSION: c_int = 2;
/// `MEMSTAT_ERROR_PERMISSION`.
pub const MEMSTAT_ERROR_PERMISSION: c_int = 3;
/// `MEMSTAT_ERROR_DATAERROR`.
pub const MEMSTAT_ERROR_DATAERROR: c_int = 5;
/// `MEMSTAT_ERROR_KVM`.
pub const MEMSTAT_ERROR_KVM: c_int = 6;
/// `MEMSTAT_ERROR_KVM_NOSYMBOL`.
pub const MEMSTAT_ERROR_KVM_NOSYMBOL: c_int = 7;
/// `MEMSTAT_ERROR_KVM_SHORTREAD`.
pub const MEMSTAT_ERROR_KVM_SHORTREAD: c_int = 8;
/// Linux: a source that cannot be read for another reason than permission or memory (it
/// does not exist: a kernel without malloc types; an I/O error).
pub const MEMSTAT_ERROR_IO: c_int = 9;
/// Linux: an argument the library refuses (a NULL pointer, an index or CPU out of range,
/// unknown flags).
pub const MEMSTAT_ERROR_INVALID: c_int = 10;

/// The size of the buffer `memstat_kvm_open()` writes its error message to.
pub const MEMSTAT_KVM_ERRBUF_SIZE: usize = 256;

/// What tells an entry apart from one update to the next.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Malloc(u64, Vec<u8>),
    Slab(Vec<u8>),
}

fn key_of(t: &MemoryType) -> Key {
    match t.allocator() {
        Allocator::Malloc => Key::Malloc(t.id(), t.name_bytes().to_vec()),
        Allocator::Slab => Key::Slab(
            t.slab_details()
                .map_or_else(|| t.name_bytes().to_vec(), |s| s.cache.clone()),
        ),
    }
}

/// A C string of `s`, which has no NUL when it is a text form; one that has is cut there.
fn c_string(s: &str) -> CString {
    let end = s.find('\0').unwrap_or(s.len());
    CString::new(&s[..end]).unwrap_or_default()
}

/// `struct memory_type`: one entry of a list, as C sees it. Opaque to C.
pub struct memory_type {
    list: *mut memory_type_list,
    index: usize,
    next: *mut memory_type,
    key: Key,
    name: CString,
    owner: CString,
    probe: CString,
    /// Texts the entry had before an update changed them (a slab cache's first alias, a
    /// type's owner): a pointer a program took stays valid while the entry does, as the name
    /// inside FreeBSD's entry does.
    retired: Vec<CString>,
}

/// `struct memory_type_list`. Opaque to C.
pub struct memory_type_list {
    list: MemoryTypeList,
    /// One node per entry of `list`, in its order; boxed, so that a node's address, which C
    /// holds, does not move when the vector does.
    #[allow(clippy::vec_box)]
    nodes: Vec<Box<memory_type>>,
    error: c_int,
    message: CString,
}

impl memory_type_list {
    /// Give each entry of `list` its node: the node it had when the entry was there before,
    /// a new one otherwise; nodes of entries that went away are freed.
    fn sync(&mut self) {
        let me: *mut memory_type_list = self;
        let mut old: HashMap<Key, Box<memory_type>> = HashMap::with_capacity(self.nodes.len());
        for n in self.nodes.drain(..) {
            old.entry(n.key.clone()).or_insert(n);
        }
        for (i, t) in self.list.iter().enumerate() {
            let key = key_of(t);
            let mut node = old.remove(&key).unwrap_or_else(|| {
                Box::new(memory_type {
                    list: me,
                    index: 0,
                    next: std::ptr::null_mut(),
                    key,
                    name: CString::default(),
                    owner: CString::default(),
                    probe: CString::default(),
                    retired: Vec::new(),
                })
            });
            node.list = me;
            node.index = i;
            if node.name.as_bytes() != t.name().as_bytes() {
                let name = std::mem::replace(&mut node.name, c_string(t.name()));
                let probe = std::mem::replace(&mut node.probe, c_string(&t.probe_name()));
                node.retired
                    .extend([name, probe].into_iter().filter(|s| !s.is_empty()));
            }
            if node.owner.as_bytes() != t.owner().as_bytes() {
                let owner = std::mem::replace(&mut node.owner, c_string(t.owner()));
                node.retired.extend(Some(owner).filter(|s| !s.is_empty()));
            }
            self.nodes.push(node);
        }
        let mut next: *mut memory_type = std::ptr::null_mut();
        for n in self.nodes.iter_mut().rev() {
            n.next = next;
            next = &mut **n;
        }
    }

    /// Record `r`'s error, if any, as libmemstat does (a success leaves the last error), and
    /// return 0 or -1.
    fn done(&mut self, r: Result<(), Error>) -> c_int {
        match r {
            Ok(()) => {
                self.sync();
                0
            }
            Err(e) => {
                // An update that fails leaves the list as it was; the nodes still match it.
                self.fail(error_code(e.kind()), errno_of(&e), &e.to_string());
                -1
            }
        }
    }

    fn fail(&mut self, code: c_int, errno: c_int, message: &str) {
        self.error = code;
        self.message = c_string(message);
        set_errno(errno);
    }
}

fn error_code(k: ErrorKind) -> c_int {
    match k {
        ErrorKind::NoMemory => MEMSTAT_ERROR_NOMEMORY,
        ErrorKind::Version => MEMSTAT_ERROR_VERSION,
        ErrorKind::Permission => MEMSTAT_ERROR_PERMISSION,
        ErrorKind::DataError => MEMSTAT_ERROR_DATAERROR,
        ErrorKind::Kvm => MEMSTAT_ERROR_KVM,
        ErrorKind::KvmNoSymbol => MEMSTAT_ERROR_KVM_NOSYMBOL,
        ErrorKind::KvmShortRead => MEMSTAT_ERROR_KVM_SHORTREAD,
        ErrorKind::Io => MEMSTAT_ERROR_IO,
        ErrorKind::OutOfRange => MEMSTAT_ERROR_INVALID,
    }
}

/// The `errno` a failed call leaves: the system's error where there was one.
fn errno_of(e: &Error) -> c_int {
    match e {
        Error::NoMemory => libc::ENOMEM,
        Error::Permission { .. } => libc::EACCES,
        Error::Io { source, .. } => source.raw_os_error().unwrap_or(match source.kind() {
            std::io::ErrorKind::NotFound => libc::ENOENT,
            std::io::ErrorKind::PermissionDenied => libc::EACCES,
            std::io::ErrorKind::OutOfMemory => libc::ENOMEM,
            std::io::ErrorKind::InvalidData | std::io::ErrorKind::InvalidInput => libc::EINVAL,
            _ => libc::EIO,
        }),
        Error::OutOfRange { .. } => libc::EINVAL,
        Error::Version { .. } | Error::VmcoreinfoVersion { .. } | Error::DataError(_) => {
            libc::EINVAL
        }
        Error::Kvm(_) | Error::KvmNoSymbol { .. } | Error::KvmShortRead { .. } => libc::EINVAL,
    }
}

fn set_errno(e: c_int) {
    // SAFETY: `__errno_location()` returns the calling thread's `errno`, valid for the
    // thread's life, in glibc and musl alike.
    unsafe { *libc::__errno_location() = e };
}

/// Run `f`, returning `fallback` should it panic (it should not: see the crate's doc).
fn guard<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

/// The list a node belongs to and the node's entry.
///
/// # Safety
///
/// `mtp` is NULL or a pointer this library returned for a list that has not been freed,
/// whose entry has not gone away in an update since.
unsafe fn entry<'a>(mtp: *const memory_type) -> Option<(&'a mut memory_type_list, usize)> {
    // SAFETY: by the function's contract a non-NULL `mtp` points to a live node, and its
    // `list` to the live list that owns it.
    let node = unsafe { mtp.as_ref() }?;
    // SAFETY: as above.
    let list = unsafe { node.list.as_mut() }?;
    Some((list, node.index))
}

/// The entry of `mtp`, or None for NULL.
///
/// # Safety
///
/// As for [`entry`].
unsafe fn with<T>(mtp: *const memory_type, f: impl FnOnce(&MemoryType) -> T) -> Option<T> {
    // SAFETY: the caller's contract is `entry`'s.
    let (list, i) = unsafe { entry(mtp) }?;
    list.list.get(i).map(f)
}

/// A `uint64_t` accessor: `f` of the entry, 0 for NULL.
///
/// # Safety
///
/// As for [`entry`].
unsafe fn get_u64(mtp: *const memory_type, f: impl FnOnce(&MemoryType) -> u64) -> u64 {
    guard(0, || {
        // SAFETY: the caller's contract is `entry`'s.
        unsafe { with(mtp, f) }.unwrap_or_else(|| {
            set_errno(libc::EINVAL);
            0
        })
    })
}

/// A per-CPU (or caller slot) accessor: `f` of the entry, 0 with `MEMSTAT_ERROR_INVALID` in
/// the list and `errno` EINVAL when `f` refuses its index (or for NULL).
///
/// # Safety
///
/// As for [`entry`].
unsafe fn get_checked<T: Default>(
    mtp: *const memory_type,
    f: impl FnOnce(&MemoryType) -> memstat_lib::Result<T>,
) -> T {
    guard(T::default(), || {
        // SAFETY: the caller's contract is `entry`'s.
        let Some((list, i)) = (unsafe { entry(mtp) }) else {
            set_errno(libc::EINVAL);
            return T::default();
        };
        let r = match list.list.get(i) {
            Some(t) => f(t),
            None => return T::default(),
        };
        r.unwrap_or_else(|e| {
            list.fail(MEMSTAT_ERROR_INVALID, libc::EINVAL, &e.to_string());
            T::default()
        })
    })
}

/// A setter: `f` on the entry; a refused index is recorded as in [`get_checked`].
///
/// # Safety
///
/// As for [`entry`].
unsafe fn set_checked(
    mtp: *mut memory_type,
    f: impl FnOnce(&mut MemoryType) -> memstat_lib::Result<()>,
) {
    guard((), || {
        // SAFETY: the caller's contract is `entry`'s.
        let Some((list, i)) = (unsafe { entry(mtp) }) else {
            set_errno(libc::EINVAL);
            return;
        };
        let Some(t) = list.list.get_mut(i) else {
            return;
        };
        if let Err(e) = f(t) {
            list.fail(MEMSTAT_ERROR_INVALID, libc::EINVAL, &e.to_string());
        }
    })
}

fn index(i: c_int) -> usize {
    // A negative index is out of range like a too large one.
    usize::try_from(i).unwrap_or(usize::MAX)
}

/// A list from a C pointer.
///
/// # Safety
///
/// `list` is NULL or a list from `memstat_mtl_alloc()` not yet freed.
unsafe fn list_mut<'a>(list: *mut memory_type_list) -> Option<&'a mut memory_type_list> {
    // SAFETY: by the function's contract.
    unsafe { list.as_mut() }
}

/// The text of an error code.
///
/// Returns a static string for every code, "Unknown error" for one it does not know.
#[no_mangle]
pub extern "C" fn memstat_strerror(error: c_int) -> *const c_char {
    let s: &'static CStr = match error {
        MEMSTAT_ERROR_NOMEMORY => c"Cannot allocate memory",
        MEMSTAT_ERROR_VERSION => c"Version mismatch",
        MEMSTAT_ERROR_PERMISSION => c"Permission denied",
        MEMSTAT_ERROR_DATAERROR => c"Data format error",
        MEMSTAT_ERROR_KVM => c"KVM error",
        MEMSTAT_ERROR_KVM_NOSYMBOL => c"KVM unable to find symbol",
        MEMSTAT_ERROR_KVM_SHORTREAD => c"KVM short read",
        MEMSTAT_ERROR_IO => c"I/O error",
        MEMSTAT_ERROR_INVALID => c"Invalid argument",
        _ => c"Unknown error",
    };
    s.as_ptr()
}

/// A new, empty list; NULL with `errno` ENOMEM when memory is short.
#[no_mangle]
pub extern "C" fn memstat_mtl_alloc() -> *mut memory_type_list {
    guard(std::ptr::null_mut(), || {
        Box::into_raw(Box::new(memory_type_list {
            list: MemoryTypeList::new(),
            nodes: Vec::new(),
            error: MEMSTAT_ERROR_UNDEFINED,
            message: CString::default(),
        }))
    })
}

/// The first entry of `list`, NULL when it is empty (or NULL).
///
/// # Safety
///
/// `list` is NULL or a list from `memstat_mtl_alloc()` not yet freed.
#[no_mangle]
pub unsafe extern "C" fn memstat_mtl_first(list: *mut memory_type_list) -> *mut memory_type {
    guard(std::ptr::null_mut(), || {
        // SAFETY: by the function's contract.
        match unsafe { list_mut(list) } {
            Some(l) => l
                .nodes
                .first_mut()
                .map_or(std::ptr::null_mut(), |n| &mut **n),
            None => {
                set_errno(libc::EINVAL);
                std::ptr::null_mut()
            }
        }
    })
}

/// The entry after `mtp`, NULL after the last (or for NULL).
///
/// # Safety
///
/// `mtp` is NULL or an entry of a live list that is still in it.
#[no_mangle]
pub unsafe extern "C" fn memstat_mtl_next(mtp: *mut memory_type) -> *mut memory_type {
    guard(std::ptr::null_mut(), || {
        // SAFETY: by the function's contract a non-NULL `mtp` is a live node.
        unsafe { mtp.as_ref() }.map_or(std::ptr::null_mut(), |n| n.next)
    })
}

/// The first entry of `allocator` (`ALLOCATOR_MALLOC`, `ALLOCATOR_UMA` or `ALLOCATOR_ANY`)
/// named `name` (the name's text form; for a slab cache any name merged into it), or NULL.
///
/// # Safety
///
/// `list` is NULL or a live list; `name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn memstat_mtl_find(
    list: *mut memory_type_list,
    allocator: c_int,
    name: *const c_char,
) -> *mut memory_type {
    guard(std::ptr::null_mut(), || {
        // SAFETY: by the function's contract.
        let Some(l) = (unsafe { list_mut(list) }) else {
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        };
        if name.is_null() {
            l.fail(
                MEMSTAT_ERROR_INVALID,
                libc::EINVAL,
                "memstat_mtl_find: NULL name",
            );
            return std::ptr::null_mut();
        }
        // SAFETY: `name` is a NUL-terminated string by the function's contract.
        let name = unsafe { CStr::from_ptr(name) };
        let filter = match allocator {
            ALLOCATOR_MALLOC => AllocatorFilter::Malloc,
            ALLOCATOR_UMA => AllocatorFilter::Slab,
            ALLOCATOR_ANY => AllocatorFilter::Any,
            // No entry has another allocator, as in libmemstat.
            _ => return std::ptr::null_mut(),
        };
        // A text form is ASCII: a name that is not UTF-8 matches nothing.
        let Ok(name) = name.to_str() else {
            return std::ptr::null_mut();
        };
        match l.list.position(filter, name) {
            Some(i) => l
                .nodes
                .get_mut(i)
                .map_or(std::ptr::null_mut(), |n| &mut **n),
            None => std::ptr::null_mut(),
        }
    })
}

/// Free `list` and every entry in it; NULL is ignored.
///
/// # Safety
///
/// `list` is NULL or a live list, not used after this call, nor any of its entries.
#[no_mangle]
pub unsafe extern "C" fn memstat_mtl_free(list: *mut memory_type_list) {
    guard((), || {
        if !list.is_null() {
            // SAFETY: a live list came from `Box::into_raw` in `memstat_mtl_alloc`.
            drop(unsafe { Box::from_raw(list) });
        }
    })
}

/// The error code of the last call on `list` that failed; `MEMSTAT_ERROR_INVALID` for NULL.
///
/// # Safety
///
/// `list` is NULL or a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_mtl_geterror(list: *mut memory_type_list) -> c_int {
    guard(MEMSTAT_ERROR_INVALID, || {
        // SAFETY: by the function's contract.
        unsafe { list_mut(list) }.map_or(MEMSTAT_ERROR_INVALID, |l| l.error)
    })
}

/// Linux: the message of the last error on `list` (what failed, and where), owned by the list
/// until its next failure or until it is freed; "" when nothing failed or for NULL.
///
/// # Safety
///
/// `list` is NULL or a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_mtl_geterrmsg(list: *mut memory_type_list) -> *const c_char {
    guard(c"".as_ptr(), || {
        // SAFETY: by the function's contract.
        unsafe { list_mut(list) }.map_or(c"".as_ptr(), |l| l.message.as_ptr())
    })
}

/// Whether the environment may choose the sources (not in a set-user-ID or otherwise
/// secure-execution program, where it is the caller's).
fn env_trusted() -> bool {
    // SAFETY: `getauxval` reads the auxiliary vector; any type is a valid argument.
    unsafe { libc::getauxval(libc::AT_SECURE) == 0 }
}

fn env_path(var: &str) -> Option<PathBuf> {
    if !env_trusted() {
        return None;
    }
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The sources of the malloc types: the stream and the sysctl directory.
fn malloc_sources() -> (PathBuf, PathBuf) {
    (
        env_path("MEMSTAT_MALLOC_STATS").unwrap_or_else(|| PathBuf::from(DEFAULT_PROC_PATH)),
        env_path("MEMSTAT_SYSCTL_DIR").unwrap_or_else(|| PathBuf::from(DEFAULT_SYSCTL_DIR)),
    )
}

/// The sources of the slab caches: when either variable is set, only what is set.
fn slab_sources() -> SlabSource {
    let (dir, info) = (env_path("MEMSTAT_SLAB_DIR"), env_path("MEMSTAT_SLABINFO"));
    if dir.is_none() && info.is_none() {
        return SlabSource::default();
    }
    SlabSource {
        sys_dir: dir,
        slabinfo: info,
    }
}

/// The zone table of the last successful malloc query (`memstat_malloc_zone_get_*`).
static ZONES: Mutex<Option<ZoneSizes>> = Mutex::new(None);

fn publish_zones(z: &ZoneSizes) {
    if let Ok(mut g) = ZONES.lock() {
        *g = Some(z.clone());
    }
}

/// Run a query on a list: refuse NULL and flags, record the outcome; a query of the kernel's
/// malloc types (`zones`) publishes its zone table to `memstat_malloc_zone_get_*()`.
///
/// # Safety
///
/// `list` is NULL or a live list.
unsafe fn query(
    list: *mut memory_type_list,
    flags: c_int,
    what: &str,
    zones: bool,
    f: impl FnOnce(&mut MemoryTypeList) -> memstat_lib::Result<()>,
) -> c_int {
    guard(-1, || {
        // SAFETY: by the function's contract.
        let Some(l) = (unsafe { list_mut(list) }) else {
            set_errno(libc::EINVAL);
            return -1;
        };
        if flags != 0 {
            l.fail(
                MEMSTAT_ERROR_INVALID,
                libc::EINVAL,
                &format!("{what}: unknown flags {flags:#x}"),
            );
            return -1;
        }
        // A panic in the query (there should be none) fails it like bad data, not with the
        // error of an earlier call.
        let r = catch_unwind(AssertUnwindSafe(|| f(&mut l.list)))
            .unwrap_or_else(|_| Err(Error::DataError(format!("{what}: internal error"))));
        if r.is_ok() && zones {
            publish_zones(l.list.zones());
        }
        l.done(r)
    })
}

/// Read the malloc types and the slab caches; -1 at the first that fails.
///
/// # Safety
///
/// `list` is NULL or a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_sysctl_all(list: *mut memory_type_list, flags: c_int) -> c_int {
    // SAFETY: the contracts are the same.
    if unsafe { memstat_sysctl_malloc(list, flags) } < 0 {
        return -1;
    }
    // SAFETY: as above.
    unsafe { memstat_sysctl_uma(list, flags) }
}

/// Read the malloc types of the running kernel (`/proc/malloc_stats`, the zone sizes under
/// `/proc/sys`) into `list`. `flags` must be 0.
///
/// # Safety
///
/// `list` is NULL or a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_sysctl_malloc(list: *mut memory_type_list, flags: c_int) -> c_int {
    let (proc_path, sysctl_dir) = malloc_sources();
    // SAFETY: the contracts are the same.
    unsafe {
        query(list, flags, "memstat_sysctl_malloc", true, |l| {
            l.sysctl_malloc(&proc_path, &sysctl_dir)
        })
    }
}

/// Read the slab caches of the running kernel (`/sys/kernel/slab`, else `/proc/slabinfo`)
/// into `list`. `flags` must be 0.
///
/// # Safety
///
/// `list` is NULL or a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_sysctl_uma(list: *mut memory_type_list, flags: c_int) -> c_int {
    let src = slab_sources();
    // SAFETY: the contracts are the same.
    unsafe {
        query(list, flags, "memstat_sysctl_uma", false, |l| {
            l.read_slab(&src)
        })
    }
}

/// A path from a C string, or None for NULL.
///
/// # Safety
///
/// `p` is NULL or a NUL-terminated string.
unsafe fn c_path<'a>(p: *const c_char) -> Option<&'a Path> {
    use std::os::unix::ffi::OsStrExt;
    if p.is_null() {
        return None;
    }
    // SAFETY: by the function's contract.
    let s = unsafe { CStr::from_ptr(p) };
    Some(Path::new(std::ffi::OsStr::from_bytes(s.to_bytes())))
}

/// Linux: read the malloc types from a stream file (one `memstat --save` wrote, or a copy of
/// `/proc/malloc_stats`) into `list`. The zone table is not touched.
///
/// # Safety
///
/// `list` is NULL or a live list; `path` NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn memstat_file_malloc(
    list: *mut memory_type_list,
    path: *const c_char,
) -> c_int {
    // SAFETY: by the function's contract.
    let Some(path) = (unsafe { c_path(path) }) else {
        // SAFETY: as above.
        return unsafe { null_argument(list, "memstat_file_malloc: NULL path") };
    };
    // SAFETY: as above.
    unsafe {
        query(list, 0, "memstat_file_malloc", false, |l| {
            l.read_malloc(path)
        })
    }
}

/// Linux: read the slab caches from a SLUB sysfs directory or a slabinfo file into `list`.
///
/// # Safety
///
/// `list` is NULL or a live list; `path` NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn memstat_file_uma(
    list: *mut memory_type_list,
    path: *const c_char,
) -> c_int {
    // SAFETY: by the function's contract.
    let Some(path) = (unsafe { c_path(path) }) else {
        // SAFETY: as above.
        return unsafe { null_argument(list, "memstat_file_uma: NULL path") };
    };
    let src = if path.is_dir() {
        SlabSource {
            sys_dir: Some(path.to_path_buf()),
            slabinfo: None,
        }
    } else {
        SlabSource {
            sys_dir: None,
            slabinfo: Some(path.to_path_buf()),
        }
    };
    // SAFETY: as above.
    unsafe { query(list, 0, "memstat_file_uma", false, |l| l.read_slab(&src)) }
}

/// Record a NULL argument on `list` and return -1.
///
/// # Safety
///
/// `list` is NULL or a live list.
unsafe fn null_argument(list: *mut memory_type_list, message: &str) -> c_int {
    // SAFETY: by the function's contract.
    match unsafe { list_mut(list) } {
        Some(l) => l.fail(MEMSTAT_ERROR_INVALID, libc::EINVAL, message),
        None => set_errno(libc::EINVAL),
    }
    -1
}

const KVM_MAGIC: u64 = 0x6d65_6d73_7461_746b; // "memstatk"

/// Linux: the handle of a core that `memstat_kvm_*` read (FreeBSD passes libkvm's `kvm_t`).
/// Opaque to C.
pub struct memstat_kvm {
    magic: u64,
    core: kvm::Core,
}

/// Copy `msg` into the C buffer `buf` of `len` bytes, NUL-terminated and cut to fit.
///
/// # Safety
///
/// `buf` is NULL or points to `len` writable bytes.
unsafe fn write_errbuf(buf: *mut c_char, len: usize, msg: &str) {
    if buf.is_null() || len == 0 {
        return;
    }
    let n = msg.len().min(len - 1);
    // SAFETY: `buf` has `len` bytes and `n + 1 <= len`; `msg` has at least `n` bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(msg.as_ptr().cast::<c_char>(), buf, n);
        *buf.add(n) = 0;
    }
}

/// Linux: open a core for `memstat_kvm_malloc()`: `corefile` is a vmcore (QEMU's
/// `dump-guest-memory`, kdump's ELF `/proc/vmcore`) or `/proc/kcore`; `execfile` the kernel
/// image (`vmlinux`) or NULL. On failure returns NULL, with the reason in `errbuf` (of
/// `errbuflen` bytes, `MEMSTAT_KVM_ERRBUF_SIZE` is enough) as `kvm_openfiles(3)` does.
///
/// # Safety
///
/// `execfile` and `corefile` are NULL or NUL-terminated strings; `errbuf` is NULL or has
/// `errbuflen` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn memstat_kvm_open(
    execfile: *const c_char,
    corefile: *const c_char,
    errbuf: *mut c_char,
    errbuflen: usize,
) -> *mut memstat_kvm {
    guard(std::ptr::null_mut(), || {
        // SAFETY: by the function's contract.
        let (kernel, core) = unsafe { (c_path(execfile), c_path(corefile)) };
        let Some(core) = core else {
            set_errno(libc::EINVAL);
            // SAFETY: as above.
            unsafe { write_errbuf(errbuf, errbuflen, "memstat_kvm_open: NULL core file") };
            return std::ptr::null_mut();
        };
        match kvm::Core::open(core, kernel) {
            Ok(core) => Box::into_raw(Box::new(memstat_kvm {
                magic: KVM_MAGIC,
                core,
            })),
            Err(e) => {
                set_errno(errno_of(&e));
                // SAFETY: as above.
                unsafe { write_errbuf(errbuf, errbuflen, &e.to_string()) };
                std::ptr::null_mut()
            }
        }
    })
}

/// Linux: close a core from `memstat_kvm_open()`; NULL is ignored.
///
/// # Safety
///
/// `kd` is NULL or a handle from `memstat_kvm_open()` not yet closed.
#[no_mangle]
pub unsafe extern "C" fn memstat_kvm_close(kd: *mut memstat_kvm) {
    guard((), || {
        if !kd.is_null() {
            // SAFETY: a live handle came from `Box::into_raw` in `memstat_kvm_open`.
            let mut h = unsafe { Box::from_raw(kd) };
            h.magic = 0;
        }
    })
}

/// The core behind a `void *` handle, checked to be one of ours.
///
/// # Safety
///
/// `kvm_handle` is NULL or a handle from `memstat_kvm_open()` not yet closed.
unsafe fn kvm_core<'a>(kvm_handle: *mut c_void) -> Option<&'a kvm::Core> {
    // SAFETY: by the function's contract.
    let h = unsafe { kvm_handle.cast::<memstat_kvm>().as_ref() }?;
    (h.magic == KVM_MAGIC).then_some(&h.core)
}

/// Read the malloc types of a core, and its zone sizes, into `list`. `kvm_handle` is a handle
/// from `memstat_kvm_open()`.
///
/// # Safety
///
/// `list` is NULL or a live list; `kvm_handle` NULL or a live handle of `memstat_kvm_open()`.
#[no_mangle]
pub unsafe extern "C" fn memstat_kvm_malloc(
    list: *mut memory_type_list,
    kvm_handle: *mut c_void,
) -> c_int {
    // SAFETY: by the function's contract.
    let Some(core) = (unsafe { kvm_core(kvm_handle) }) else {
        // SAFETY: as above.
        return unsafe {
            null_argument(list, "memstat_kvm_malloc: not a memstat_kvm_open() handle")
        };
    };
    // SAFETY: as above.
    unsafe { query(list, 0, "memstat_kvm_malloc", true, |l| l.kvm_malloc(core)) }
}

/// Slab caches are not read from cores: fails with `MEMSTAT_ERROR_KVM_NOSYMBOL` (`errno`
/// ENOTSUP), leaving the list as it was.
///
/// # Safety
///
/// `list` is NULL or a live list; `kvm_handle` NULL or a live handle of `memstat_kvm_open()`.
#[no_mangle]
pub unsafe extern "C" fn memstat_kvm_uma(
    list: *mut memory_type_list,
    kvm_handle: *mut c_void,
) -> c_int {
    guard(-1, || {
        // SAFETY: by the function's contract.
        if unsafe { kvm_core(kvm_handle) }.is_none() {
            // SAFETY: as above.
            return unsafe {
                null_argument(list, "memstat_kvm_uma: not a memstat_kvm_open() handle")
            };
        }
        // SAFETY: as above.
        match unsafe { list_mut(list) } {
            Some(l) => l.fail(
                MEMSTAT_ERROR_KVM_NOSYMBOL,
                libc::ENOTSUP,
                "memstat_kvm_uma: slab caches are not read from cores",
            ),
            None => set_errno(libc::EINVAL),
        }
        -1
    })
}

/// What a core holds: its malloc types (as `memstat_kvm_malloc()`; slab caches are not read
/// from cores).
///
/// # Safety
///
/// `list` is NULL or a live list; `kvm_handle` NULL or a live handle of `memstat_kvm_open()`.
#[no_mangle]
pub unsafe extern "C" fn memstat_kvm_all(
    list: *mut memory_type_list,
    kvm_handle: *mut c_void,
) -> c_int {
    // SAFETY: the contracts are the same.
    unsafe { memstat_kvm_malloc(list, kvm_handle) }
}

/// The number of malloc zones (kmalloc size classes) of the last malloc query; 0 before one.
#[no_mangle]
pub extern "C" fn memstat_malloc_zone_get_count() -> usize {
    guard(0, || {
        ZONES
            .lock()
            .ok()
            .and_then(|g| g.as_ref().map(ZoneSizes::count))
            .unwrap_or(0)
    })
}

/// The size of malloc zone `n` of the last malloc query; 0 for `n` out of range.
#[no_mangle]
pub extern "C" fn memstat_malloc_zone_get_size(n: usize) -> usize {
    guard(0, || {
        ZONES
            .lock()
            .ok()
            .and_then(|g| g.as_ref().and_then(|z| z.size(n)))
            .map_or(0, |s| usize::try_from(s).unwrap_or(usize::MAX))
    })
}

/// 1 if the malloc type `mtp` allocated from zone `n` (its size mask has bit `n`), else 0.
///
/// # Safety
///
/// `mtp` is NULL or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_malloc_zone_used(mtp: *const memory_type, n: usize) -> c_int {
    guard(0, || {
        // SAFETY: by the function's contract.
        let Some((list, i)) = (unsafe { entry(mtp) }) else {
            set_errno(libc::EINVAL);
            return 0;
        };
        let zones = list.list.zones();
        list.list
            .get(i)
            .map_or(0, |t| c_int::from(n < zones.count() && zones.used(t, n)))
    })
}

/// A text of the node `mtp`, "" with `errno` EINVAL for NULL.
///
/// # Safety
///
/// `mtp` is NULL or an entry of a live list.
unsafe fn text(mtp: *const memory_type, f: impl FnOnce(&memory_type) -> &CString) -> *const c_char {
    // SAFETY: by the function's contract a non-NULL `mtp` is a live node.
    match unsafe { mtp.as_ref() } {
        Some(n) => f(n).as_ptr(),
        None => {
            set_errno(libc::EINVAL);
            c"".as_ptr()
        }
    }
}

/// The name of `mtp`, owned by its entry and valid while the entry is in the list: the text
/// form of the name (printable ASCII as it is, other bytes and the backslash as `\NNN`); ""
/// with `errno` EINVAL for NULL.
///
/// # Safety
///
/// `mtp` is NULL or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_name(mtp: *const memory_type) -> *const c_char {
    // SAFETY: by the function's contract.
    guard(c"".as_ptr(), || unsafe { text(mtp, |n| &n.name) })
}

/// Linux: the owner of a malloc type (`vmlinux` or the module's name), in text form; "" for a
/// slab cache or NULL.
///
/// # Safety
///
/// `mtp` is NULL or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_owner(mtp: *const memory_type) -> *const c_char {
    // SAFETY: by the function's contract.
    guard(c"".as_ptr(), || unsafe { text(mtp, |n| &n.owner) })
}

/// Linux: the probe name of the type (its name with spaces as `_`, what the per-type probes
/// and `set_dtmalloc_probes` use), in text form; "" for NULL.
///
/// # Safety
///
/// `mtp` is NULL or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_probename(mtp: *const memory_type) -> *const c_char {
    // SAFETY: by the function's contract.
    guard(c"".as_ptr(), || unsafe { text(mtp, |n| &n.probe) })
}

/// `ALLOCATOR_MALLOC` or `ALLOCATOR_UMA`; `ALLOCATOR_UNKNOWN` for NULL.
///
/// # Safety
///
/// `mtp` is NULL or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_allocator(mtp: *const memory_type) -> c_int {
    guard(ALLOCATOR_UNKNOWN, || {
        // SAFETY: by the function's contract.
        unsafe {
            with(mtp, |t| match t.allocator() {
                Allocator::Malloc => ALLOCATOR_MALLOC,
                Allocator::Slab => ALLOCATOR_UMA,
            })
        }
        .unwrap_or_else(|| {
            set_errno(libc::EINVAL);
            ALLOCATOR_UNKNOWN
        })
    })
}

/// The limit on items in use: 0, there are none here.
///
/// # Safety
///
/// `mtp` is NULL (0 is returned) or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_countlimit(mtp: *const memory_type) -> u64 {
    // SAFETY: by the function's contract.
    unsafe { get_u64(mtp, |t| t.countlimit()) }
}

/// The limit on bytes in use: 0, there are none here.
///
/// # Safety
///
/// `mtp` is NULL (0 is returned) or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_byteslimit(mtp: *const memory_type) -> u64 {
    // SAFETY: by the function's contract.
    unsafe { get_u64(mtp, |t| t.byteslimit()) }
}

/// The malloc zones used, bit `n` for zone `n` (malloc types).
///
/// # Safety
///
/// `mtp` is NULL (0 is returned) or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_sizemask(mtp: *const memory_type) -> u64 {
    // SAFETY: by the function's contract.
    unsafe { get_u64(mtp, |t| t.sizemask()) }
}

/// The object size (slab caches).
///
/// # Safety
///
/// `mtp` is NULL (0 is returned) or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_size(mtp: *const memory_type) -> u64 {
    // SAFETY: by the function's contract.
    unsafe { get_u64(mtp, |t| t.size()) }
}

/// The object size with metadata and alignment (slab caches).
///
/// # Safety
///
/// `mtp` is NULL (0 is returned) or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_rsize(mtp: *const memory_type) -> u64 {
    // SAFETY: by the function's contract.
    unsafe { get_u64(mtp, |t| t.rsize()) }
}

/// Bytes allocated over the type's life.
///
/// # Safety
///
/// `mtp` is NULL (0 is returned) or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_memalloced(mtp: *const memory_type) -> u64 {
    // SAFETY: by the function's contract.
    unsafe { get_u64(mtp, |t| t.memalloced()) }
}

/// Bytes freed over the type's life.
///
/// # Safety
///
/// `mtp` is NULL (0 is returned) or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_memfreed(mtp: *const memory_type) -> u64 {
    // SAFETY: by the function's contract.
    unsafe { get_u64(mtp, |t| t.memfreed()) }
}

/// Allocations over the type's life.
///
/// # Safety
///
/// `mtp` is NULL (0 is returned) or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_numallocs(mtp: *const memory_type) -> u64 {
    // SAFETY: by the function's contract.
    unsafe { get_u64(mtp, |t| t.numallocs()) }
}

/// Frees over the type's life.
///
/// # Safety
///
/// `mtp` is NULL (0 is returned) or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_numfrees(mtp: *const memory_type) -> u64 {
    // SAFETY: by the function's contract.
    unsafe { get_u64(mtp, |t| t.numfrees()) }
}

/// Bytes in use.
///
/// # Safety
///
/// `mtp` is NULL (0 is returned) or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_bytes(mtp: *const memory_type) -> u64 {
    // SAFETY: by the function's contract.
    unsafe { get_u64(mtp, |t| t.bytes()) }
}

/// Items in use.
///
/// # Safety
///
/// `mtp` is NULL (0 is returned) or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_count(mtp: *const memory_type) -> u64 {
    // SAFETY: by the function's contract.
    unsafe { get_u64(mtp, |t| t.count()) }
}

/// Free items cached (slab caches: allocated objects not in use).
///
/// # Safety
///
/// `mtp` is NULL (0 is returned) or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_free(mtp: *const memory_type) -> u64 {
    // SAFETY: by the function's contract.
    unsafe { get_u64(mtp, |t| t.free()) }
}

/// Allocations that returned no memory.
///
/// # Safety
///
/// `mtp` is NULL (0 is returned) or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_failures(mtp: *const memory_type) -> u64 {
    // SAFETY: by the function's contract.
    unsafe { get_u64(mtp, |t| t.failures()) }
}

/// Sleeps: 0, not counted here.
///
/// # Safety
///
/// `mtp` is NULL (0 is returned) or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_sleeps(mtp: *const memory_type) -> u64 {
    // SAFETY: by the function's contract.
    unsafe { get_u64(mtp, |t| t.sleeps()) }
}

/// Cross-domain frees: 0, not counted here.
///
/// # Safety
///
/// `mtp` is NULL (0 is returned) or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_xdomain(mtp: *const memory_type) -> u64 {
    // SAFETY: by the function's contract.
    unsafe { get_u64(mtp, |t| t.xdomain()) }
}

/// Free items in the zone's buckets: 0 here.
///
/// # Safety
///
/// `mtp` is NULL (0 is returned) or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_zonefree(mtp: *const memory_type) -> u64 {
    // SAFETY: by the function's contract.
    unsafe { get_u64(mtp, |t| t.zonefree()) }
}

/// Free items in the keg: 0 here.
///
/// # Safety
///
/// `mtp` is NULL (0 is returned) or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_kegfree(mtp: *const memory_type) -> u64 {
    // SAFETY: by the function's contract.
    unsafe { get_u64(mtp, |t| t.kegfree()) }
}

/// Linux: the registration id of a malloc type (0 for a slab cache).
///
/// # Safety
///
/// `mtp` is NULL (0 is returned) or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_id(mtp: *const memory_type) -> u64 {
    // SAFETY: by the function's contract.
    unsafe { get_u64(mtp, |t| t.id()) }
}

/// Linux: the highest bytes in use of a malloc type whose peak is tracked
/// (`/proc/malloc_types_peak`), else 0.
///
/// # Safety
///
/// `mtp` is NULL (0 is returned) or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_peak(mtp: *const memory_type) -> u64 {
    // SAFETY: by the function's contract.
    unsafe { get_u64(mtp, |t| t.peak().unwrap_or(0)) }
}

/// Linux: the number of per-CPU records of the entry (the possible CPUs of the kernel for a
/// malloc type, 0 for a slab cache): the bound of the `cpu` argument of the per-CPU
/// accessors.
///
/// # Safety
///
/// `mtp` is NULL (0 is returned) or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_maxcpus(mtp: *const memory_type) -> c_int {
    // SAFETY: by the function's contract.
    let n = unsafe { get_u64(mtp, |t| t.maxcpus() as u64) };
    c_int::try_from(n).unwrap_or(c_int::MAX)
}

/// A caller-owned pointer; NULL for `index` outside `0..MEMSTAT_MAXCALLER` (recorded as
/// `MEMSTAT_ERROR_INVALID` in the list).
///
/// # Safety
///
/// `mtp` is NULL or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_caller_pointer(
    mtp: *const memory_type,
    index: c_int,
) -> *mut c_void {
    let i = self::index(index);
    // SAFETY: by the function's contract.
    let v = unsafe { get_checked(mtp, |t| t.caller_pointer(i).ok_or_else(|| caller_range(i))) };
    v as *mut c_void
}

fn caller_range(i: usize) -> Error {
    Error::OutOfRange {
        what: "caller index",
        index: i,
        limit: MAXCALLER,
    }
}

/// Set a caller-owned pointer; an `index` out of range is recorded, nothing is set.
///
/// # Safety
///
/// `mtp` is NULL or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_set_caller_pointer(
    mtp: *mut memory_type,
    index: c_int,
    value: *mut c_void,
) {
    let i = self::index(index);
    // SAFETY: by the function's contract.
    unsafe { set_checked(mtp, |t| t.set_caller_pointer(i, value as usize)) }
}

/// A caller-owned integer; 0 for `index` out of range (recorded).
///
/// # Safety
///
/// `mtp` is NULL or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_caller_uint64(mtp: *const memory_type, index: c_int) -> u64 {
    let i = self::index(index);
    // SAFETY: by the function's contract.
    unsafe { get_checked(mtp, |t| t.caller_uint64(i).ok_or_else(|| caller_range(i))) }
}

/// Set a caller-owned integer; an `index` out of range is recorded, nothing is set.
///
/// # Safety
///
/// `mtp` is NULL or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_set_caller_uint64(
    mtp: *mut memory_type,
    index: c_int,
    value: u64,
) {
    let i = self::index(index);
    // SAFETY: by the function's contract.
    unsafe { set_checked(mtp, |t| t.set_caller_uint64(i, value)) }
}

/// Bytes allocated on `cpu`.
///
/// 0 for a `cpu` outside `0..memstat_get_maxcpus(mtp)`, recorded as `MEMSTAT_ERROR_INVALID` in
/// the list.
///
/// # Safety
///
/// `mtp` is NULL or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_percpu_memalloced(mtp: *const memory_type, cpu: c_int) -> u64 {
    let cpu = index(cpu);
    // SAFETY: by the function's contract.
    unsafe { get_checked(mtp, |t| t.percpu_memalloced(cpu)) }
}

/// Bytes freed on `cpu`.
///
/// 0 for a `cpu` outside `0..memstat_get_maxcpus(mtp)`, recorded as `MEMSTAT_ERROR_INVALID` in
/// the list.
///
/// # Safety
///
/// `mtp` is NULL or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_percpu_memfreed(mtp: *const memory_type, cpu: c_int) -> u64 {
    let cpu = index(cpu);
    // SAFETY: by the function's contract.
    unsafe { get_checked(mtp, |t| t.percpu_memfreed(cpu)) }
}

/// Allocations on `cpu`.
///
/// 0 for a `cpu` outside `0..memstat_get_maxcpus(mtp)`, recorded as `MEMSTAT_ERROR_INVALID` in
/// the list.
///
/// # Safety
///
/// `mtp` is NULL or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_percpu_numallocs(mtp: *const memory_type, cpu: c_int) -> u64 {
    let cpu = index(cpu);
    // SAFETY: by the function's contract.
    unsafe { get_checked(mtp, |t| t.percpu_numallocs(cpu)) }
}

/// Frees on `cpu`.
///
/// 0 for a `cpu` outside `0..memstat_get_maxcpus(mtp)`, recorded as `MEMSTAT_ERROR_INVALID` in
/// the list.
///
/// # Safety
///
/// `mtp` is NULL or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_percpu_numfrees(mtp: *const memory_type, cpu: c_int) -> u64 {
    let cpu = index(cpu);
    // SAFETY: by the function's contract.
    unsafe { get_checked(mtp, |t| t.percpu_numfrees(cpu)) }
}

/// Zones used on `cpu`.
///
/// 0 for a `cpu` outside `0..memstat_get_maxcpus(mtp)`, recorded as `MEMSTAT_ERROR_INVALID` in
/// the list.
///
/// # Safety
///
/// `mtp` is NULL or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_percpu_sizemask(mtp: *const memory_type, cpu: c_int) -> u64 {
    let cpu = index(cpu);
    // SAFETY: by the function's contract.
    unsafe { get_checked(mtp, |t| t.percpu_sizemask(cpu)) }
}

/// Free items in `cpu`'s cache: 0 here.
///
/// 0 for a `cpu` outside `0..memstat_get_maxcpus(mtp)`, recorded as `MEMSTAT_ERROR_INVALID` in
/// the list.
///
/// # Safety
///
/// `mtp` is NULL or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_percpu_free(mtp: *const memory_type, cpu: c_int) -> u64 {
    let cpu = index(cpu);
    // SAFETY: by the function's contract.
    unsafe { get_checked(mtp, |t| t.percpu_free(cpu)) }
}

/// Linux: allocations on `cpu` that returned no memory.
///
/// 0 for a `cpu` outside `0..memstat_get_maxcpus(mtp)`, recorded as `MEMSTAT_ERROR_INVALID` in
/// the list.
///
/// # Safety
///
/// `mtp` is NULL or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_percpu_failures(mtp: *const memory_type, cpu: c_int) -> u64 {
    let cpu = index(cpu);
    // SAFETY: by the function's contract.
    unsafe { get_checked(mtp, |t| t.percpu_failures(cpu)) }
}

/// A caller-owned per-CPU pointer; NULL for a `cpu` or `index` out of range (recorded).
///
/// # Safety
///
/// `mtp` is NULL or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_percpu_caller_pointer(
    mtp: *const memory_type,
    cpu: c_int,
    index: c_int,
) -> *mut c_void {
    let (cpu, i) = (self::index(cpu), self::index(index));
    // SAFETY: by the function's contract.
    let v = unsafe { get_checked(mtp, |t| t.percpu_caller_pointer(cpu, i)) };
    v as *mut c_void
}

/// Set a caller-owned per-CPU pointer; a `cpu` or `index` out of range is recorded, nothing
/// is set.
///
/// # Safety
///
/// `mtp` is NULL or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_set_percpu_caller_pointer(
    mtp: *mut memory_type,
    cpu: c_int,
    index: c_int,
    value: *mut c_void,
) {
    let (cpu, i) = (self::index(cpu), self::index(index));
    // SAFETY: by the function's contract.
    unsafe { set_checked(mtp, |t| t.set_percpu_caller_pointer(cpu, i, value as usize)) }
}

/// A caller-owned per-CPU integer; 0 for a `cpu` or `index` out of range (recorded).
///
/// # Safety
///
/// `mtp` is NULL or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_get_percpu_caller_uint64(
    mtp: *const memory_type,
    cpu: c_int,
    index: c_int,
) -> u64 {
    let (cpu, i) = (self::index(cpu), self::index(index));
    // SAFETY: by the function's contract.
    unsafe { get_checked(mtp, |t| t.percpu_caller_uint64(cpu, i)) }
}

/// Set a caller-owned per-CPU integer; a `cpu` or `index` out of range is recorded, nothing
/// is set.
///
/// # Safety
///
/// `mtp` is NULL or an entry of a live list.
#[no_mangle]
pub unsafe extern "C" fn memstat_set_percpu_caller_uint64(
    mtp: *mut memory_type,
    cpu: c_int,
    index: c_int,
    value: u64,
) {
    let (cpu, i) = (self::index(cpu), self::index(index));
    // SAFETY: by the function's contract.
    unsafe { set_checked(mtp, |t| t.set_percpu_caller_uint64(cpu, i, value)) }
}
