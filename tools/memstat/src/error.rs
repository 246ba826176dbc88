//! Errors, in the spirit of libmemstat's `MEMSTAT_ERROR_*` codes and
//! `memstat_strerror(3)`.

use std::io;
use std::path::PathBuf;

/// The libmemstat error classes, without their payloads.
///
/// The `MEMSTAT_ERROR_KVM*` classes are the errors of a core (a vmcore or
/// `/proc/kcore`, [`crate::kvm`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// `MEMSTAT_ERROR_NOMEMORY`.
    NoMemory,
    /// `MEMSTAT_ERROR_VERSION`.
    Version,
    /// `MEMSTAT_ERROR_PERMISSION`.
    Permission,
    /// `MEMSTAT_ERROR_DATAERROR`.
    DataError,
    /// `MEMSTAT_ERROR_KVM`: a core that cannot be read as one.
    Kvm,
    /// `MEMSTAT_ERROR_KVM_NOSYMBOL`: a symbol (or layout) a core lacks.
    KvmNoSymbol,
    /// `MEMSTAT_ERROR_KVM_SHORTREAD`: memory a core does not hold.
    KvmShortRead,
    /// Any other I/O failure (no libmemstat counterpart).
    Io,
    /// An index or CPU argument out of range (libmemstat does no check).
    OutOfRange,
}

impl ErrorKind {
    /// The `memstat_strerror(3)` text of this class.
    pub fn strerror(self) -> &'static str {
        match self {
            ErrorKind::NoMemory => "Cannot allocate memory",
            ErrorKind::Version => "Version mismatch",
            ErrorKind::Permission => "Permission denied",
            ErrorKind::DataError => "Data format error",
            ErrorKind::Kvm => "KVM error",
            ErrorKind::KvmNoSymbol => "KVM unable to find symbol",
            ErrorKind::KvmShortRead => "KVM short read",
            ErrorKind::Io => "I/O error",
            ErrorKind::OutOfRange => "Index out of range",
        }
    }
}

/// Everything that can go wrong while reading statistics.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Memory for the data could not be had.
    #[error("Cannot allocate memory")]
    NoMemory,
    /// The data source speaks another version of the stream.
    #[error(
        "Version mismatch: stream version {found}, this library reads versions 1 to {expected}"
    )]
    Version {
        /// The version found in the stream header.
        found: u32,
        /// The newest version this library reads.
        expected: u32,
    },
    /// A core whose vmcoreinfo describes its malloc types in a version of
    /// that description (`NUMBER(MALLOC_TYPE_VMCOREINFO_VERSION)`) this
    /// library does not know ([`ErrorKind::Version`]).
    #[error(
        "Version mismatch: {}: the vmcoreinfo's NUMBER(MALLOC_TYPE_VMCOREINFO_VERSION) is \
         {found}, this library reads version {expected} (and the vmcoreinfo without it)",
        path_text(path)
    )]
    VmcoreinfoVersion {
        /// The core.
        path: PathBuf,
        /// The version the core's vmcoreinfo gives.
        found: u64,
        /// The version this library reads.
        expected: u64,
    },
    /// The source exists but the caller may not read it (EACCES/EPERM).
    #[error("{}: Permission denied", path_text(path))]
    Permission {
        /// The file that could not be read.
        path: PathBuf,
    },
    /// The data is not in the expected format.
    #[error("Data format error: {0}")]
    DataError(String),
    /// A core that is not one this library reads, or that contradicts
    /// itself (`MEMSTAT_ERROR_KVM`); the text says which file and why.
    #[error("KVM error: {0}")]
    Kvm(String),
    /// A symbol or a layout entry that neither the core's vmcoreinfo nor the
    /// kernel image has (`MEMSTAT_ERROR_KVM_NOSYMBOL`).
    #[error("KVM unable to find symbol {symbol}: {detail}")]
    KvmNoSymbol {
        /// The symbol (`malloc_type_list`) or vmcoreinfo entry (`OFFSET(...)`).
        symbol: String,
        /// Where it was looked for.
        detail: String,
    },
    /// Kernel memory that the core does not hold, or a core file shorter
    /// than its headers say (`MEMSTAT_ERROR_KVM_SHORTREAD`).
    #[error(
        "KVM short read: {len} bytes at {addr:#x} are not in {}",
        path_text(path)
    )]
    KvmShortRead {
        /// The kernel virtual address.
        addr: u64,
        /// The bytes wanted.
        len: usize,
        /// The core.
        path: PathBuf,
    },
    /// Another I/O error on `path`.
    #[error("{}: {}", path_text(.path), io_text(.source))]
    Io {
        /// The file or directory concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// An index (caller field, CPU, zone) beyond its limit.
    #[error("{what} {index} out of range (0..{limit})")]
    OutOfRange {
        /// What kind of index.
        what: &'static str,
        /// The index given.
        index: usize,
        /// One past the largest valid index.
        limit: usize,
    },
}

impl Error {
    /// The libmemstat class of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::NoMemory => ErrorKind::NoMemory,
            Error::Version { .. } | Error::VmcoreinfoVersion { .. } => ErrorKind::Version,
            Error::Permission { .. } => ErrorKind::Permission,
            Error::DataError(_) => ErrorKind::DataError,
            Error::Kvm(_) => ErrorKind::Kvm,
            Error::KvmNoSymbol { .. } => ErrorKind::KvmNoSymbol,
            Error::KvmShortRead { .. } => ErrorKind::KvmShortRead,
            Error::Io { .. } => ErrorKind::Io,
            Error::OutOfRange { .. } => ErrorKind::OutOfRange,
        }
    }

    /// Map an I/O error on `path` to [`Error::Permission`] (EACCES, EPERM),
    /// [`Error::NoMemory`] (ENOMEM) or [`Error::Io`].
    pub fn from_io(path: impl Into<PathBuf>, source: io::Error) -> Error {
        let path = path.into();
        match source.raw_os_error() {
            Some(libc::EACCES) | Some(libc::EPERM) => Error::Permission { path },
            Some(libc::ENOMEM) => Error::NoMemory,
            _ => match source.kind() {
                io::ErrorKind::PermissionDenied => Error::Permission { path },
                // What the standard library's reads report when a buffer cannot grow.
                io::ErrorKind::OutOfMemory => Error::NoMemory,
                _ => Error::Io { path, source },
            },
        }
    }

    pub(crate) fn data(msg: impl Into<String>) -> Error {
        Error::DataError(msg.into())
    }
}

/// A path as error messages write it: its bytes in text form ([`crate::text::as_text`]), so
/// that a file name from the kernel (a slab cache's directory) cannot drive a terminal.
pub fn path_text(path: &std::path::Path) -> std::borrow::Cow<'_, str> {
    use std::os::unix::ffi::OsStrExt;
    crate::text::as_text(path.as_os_str().as_bytes())
}

/// The text of an I/O error without Rust's " (os error N)" suffix.
pub fn io_text(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
