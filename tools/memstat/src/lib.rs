//! # memstat — libmemstat(3) for Linux malloc types
//!
//! FreeBSD's libmemstat presents kernel allocator statistics as a list of
//! *memory types*, filled from the kernel and updated incrementally. This
//! crate does the same for the Linux malloc types subsystem
//! (`/proc/malloc_stats`, see `include/uapi/linux/malloc_type.h`) and for
//! slab caches (`/sys/kernel/slab`, `/proc/slabinfo`), the Linux analogue of
//! UMA zones, and reads the malloc types of a crash dump or of `/proc/kcore`
//! as libmemstat's kvm side does ([`kvm`]).
//!
//! | libmemstat | here |
//! | --- | --- |
//! | `memstat_mtl_alloc` / `_free` | [`MemoryTypeList::new`] / drop |
//! | `memstat_mtl_first` / `_next` | [`MemoryTypeList::iter`] |
//! | `memstat_mtl_find(list, ALLOCATOR_*, name)` | [`MemoryTypeList::find`] with [`AllocatorFilter`] |
//! | `memstat_mtl_geterror` / `memstat_strerror` | [`MemoryTypeList::error`] / [`ErrorKind::strerror`], [`Error`]'s `Display` |
//! | `memstat_sysctl_malloc` | [`MemoryTypeList::sysctl_malloc`] |
//! | `memstat_sysctl_uma` | [`MemoryTypeList::read_slab`] |
//! | `memstat_sysctl_all` | [`MemoryTypeList::sysctl_all`] |
//! | `memstat_kvm_malloc` (core) | [`MemoryTypeList::kvm_malloc`] with a [`kvm::Core`]; [`MemoryTypeList::read_malloc`] on a saved stream |
//! | `memstat_get_name` | [`MemoryType::name`]: the name's text form ([`text`]); [`MemoryType::name_bytes`]: its bytes |
//! | `memstat_get_*` | methods of [`MemoryType`] |
//! | `memstat_get_percpu_*` | `MemoryType::percpu_*`, returning an error for a CPU out of range |
//! | `memstat_malloc_zone_get_count` / `_get_size` / `_used` | [`ZoneSizes::count`] / [`ZoneSizes::size`] / [`ZoneSizes::used`] |
//! | (none: fleet export) | [`openmetrics::write_metrics`], [`openmetrics::write_textfile`], [`exporter::Exporter`] |
//!
//! Differences from libmemstat, on purpose:
//!
//! * Entries that the kernel no longer presents are **removed** on update
//!   (libmemstat's BUGS section says they linger until the list is freed).
//! * Malloc types are matched by registration id, not by name, so two types
//!   with the same name stay distinct.
//! * `bytes` and `count` are clamped at 0 when racy per-CPU sums go negative
//!   (libmemstat's malloc path wraps around to ~1.8e19), and every sum of
//!   counters saturates at `u64::MAX` instead of wrapping.
//! * Caller-owned "pointers" are `usize` values (see [`CallerFields`]).
//! * Indexes and CPUs are bounds-checked; nothing panics on bad input.
//! * A name is any bytes: [`MemoryType::name`] and every text output give its
//!   text form ([`text::name_text`]: printable ASCII as it is, other bytes and
//!   the backslash as `\NNN`), which is lossless and safe on a terminal, and
//!   [`MemoryType::name_bytes`] the bytes themselves.
//!
//! ```
//! use memstat::{stream, AllocatorFilter, MemoryTypeList};
//! let s = stream::write_stream(2, &[stream::StreamType {
//!     name: "devbuf".into(), id: 1, zone: 0, flags: 0, peak: 0, owner: "vmlinux".into(),
//!     stats: vec![stream::CpuStats { memalloced: 4096, numallocs: 1, size: 1 << 11, ..Default::default() }],
//! }]);
//! let mut list = MemoryTypeList::new();
//! list.update_malloc_bytes(&s).unwrap();
//! let t = list.find(AllocatorFilter::Any, "devbuf").unwrap();
//! assert_eq!((t.bytes(), t.count()), (4096, 1));
//! assert_eq!(list.zones().sizes_in_mask(t.sizemask()), vec![4096]);
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod cli;
pub mod coverage;
pub mod error;
pub mod exporter;
pub mod kvm;
pub mod openmetrics;
pub mod pattern;
pub mod report;
pub mod slab;
pub mod stacks;
pub mod stream;
pub mod text;
pub mod trace;
pub mod types;
pub mod zones;

pub use error::{Error, ErrorKind, Result};
pub use slab::{SlabCache, SlabSource};
pub use text::{is_probe_space, probe_name};
pub use types::{
    Allocator, AllocatorFilter, CallerFields, MemoryType, MemoryTypeList, PerCpu, SlabDetails,
    DEFAULT_PROC_PATH, MAXCALLER,
};
pub use zones::ZoneSizes;
