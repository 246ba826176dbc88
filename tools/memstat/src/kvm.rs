//! libmemstat's kvm side: the malloc types of a crash dump or of a live
//! memory image (`memstat_kvm_malloc(3)`, `vmstat -m -M core -N kernel`).
//!
//! [`Core::open`] reads an ELF core of a Linux kernel: a vmcore written by
//! QEMU's `dump-guest-memory`, by kdump (`/proc/vmcore` saved as ELF, for
//! example by `makedumpfile -E`) or the live `/proc/kcore`. The kernel's
//! vmcoreinfo note (the `VMCOREINFO` ELF note) says where everything is:
//!
//! * the registry (`SYMBOL(malloc_type_list)`), the layout of
//!   `struct malloc_type` (`OFFSET(malloc_type_internal.mti_stats)` and so
//!   on) and of the per-CPU record `mti_stats` points to, and the stream
//!   version they follow (`NUMBER(MALLOC_TYPE_STREAM_VERSION)`), which
//!   `malloc_type_vmcoreinfo_setup()` (`mm/malloc_type_vmcore.c`) writes in the
//!   same `KEY=VALUE` lines to kernel memory, at the address and of the
//!   length the note gives (`SYMBOL(malloc_type_vmcoreinfo)`,
//!   `LENGTH(malloc_type_vmcoreinfo)`): the note, one page shared by the
//!   whole kernel, only points to them (lines in the note itself are read
//!   too);
//! * the per-CPU offsets (`SYMBOL(__per_cpu_offset)`), the possible CPUs
//!   (`SYMBOL(__cpu_possible_mask)`), the number of CPU ids, the zones and
//!   the kmalloc size classes (`MALLOC_TYPE_ZONE_SIZES`);
//! * KASLR's offset (`KERNELOFFSET`) and the kernel's page tables
//!   (`SYMBOL(swapper_pg_dir)`, `NUMBER(phys_base)` and
//!   `NUMBER(pgtable_l5_enabled)` on x86_64; `NUMBER(kimage_voffset)`,
//!   `NUMBER(TCR_EL1_T1SZ)` or `NUMBER(VA_BITS)` and `PAGESIZE` on arm64:
//!   4, 16 or 64 KiB pages, up to 52-bit addresses), which translate the
//!   kernel's virtual addresses in a dump that holds physical memory.
//!
//! The per-CPU record is the kernel's own `struct malloc_type_counters`,
//! described by version [`VMCOREINFO_VERSION`] of these lines
//! (`NUMBER(MALLOC_TYPE_VMCOREINFO_VERSION)`): its size
//! (`SIZE(malloc_type_counters)`) and the offset of each of its six
//! counters (`OFFSET(malloc_type_counters.mts_memalloced)` and so on), in
//! whatever order and with whatever else the kernel puts in it. A
//! vmcoreinfo without that line is of the kernels before it, whose record
//! was the stream's `struct malloc_type_stats` (`SIZE(malloc_type_stats)`,
//! the six counters first, in the stream's order); a version this reader
//! does not know is refused ([`Error::VmcoreinfoVersion`]), never guessed.
//!
//! No debugging information is needed. A segment whose virtual address is
//! a kernel address (`/proc/kcore`, `dump-guest-memory` with paging) is read
//! directly; any other address goes through the page tables to the
//! segment holding its physical address. With a kernel image
//! ([`Core::open`]'s `kernel`, `-N`), its GNU build ID must be the core's
//! (`BUILD-ID`), and its symbol table (relocated by `KERNELOFFSET`) names
//! what the note does not.
//!
//! [`Core::read_malloc`] walks the registry as the kernel's
//! `/proc/malloc_stats` does and returns the same stream (version
//! [`STREAM_VERSION`]): the same types, in the same order, with the same
//! ids, counters, peaks and owners, and the kernel's zone sizes.
//!
//! The ELF layer (the file header, the program and section headers with
//! `PN_XNUM`, the notes, the symbol table and its strings) is the `object`
//! crate's. Kept here, where `object` has no such feature: the reading of
//! the memory a core holds (by physical address, `p_paddr`, or by kernel
//! address, `p_vaddr`, with the zeros past `p_filesz` up to `p_memsz`;
//! `object` looks segments up by `p_vaddr` only and gives their file bytes
//! only), done with `pread` rather than through `object`'s `ReadCache`, which
//! keeps every block read until it is dropped; the reading of a kernel
//! image's symbol table by `pread` into one buffer (the cache would hold a
//! second copy); the vmcoreinfo's `KEY=VALUE` text; and the page table walk.
//!
//! Everything read from the core is bounds-checked: a truncated or corrupt
//! core, a core of a kernel without malloc types, or the wrong kernel image
//! is an [`Error`] ([`Error::Kvm`], [`Error::KvmNoSymbol`],
//! [`Error::KvmShortRead`], [`Error::Version`], [`Error::VmcoreinfoVersion`]), never a panic. A problem is reported where
//! it is found, by what it is: a file that is not a regular file, a program
//! header (by its index) whose bytes are not in the file or whose addresses
//! cannot be, or overlap another's; a malformed note; a vmcoreinfo line
//! whose value is not a number (with the value); a section of the kernel
//! image; not as the later read that it would make fail (a short read, a
//! symbol said to be missing).
//!
//! What a core can make the reader allocate, or loop over, is bounded by
//! what it holds and by caps: program headers ([`MAX_PHNUM`]), notes
//! ([`MAX_NOTES`], a VMCOREINFO note [`MAX_VMCOREINFO`]) and a kernel image's
//! sections and symbol table ([`MAX_SHNUM`], [`MAX_SYMTAB`]) are read only
//! from bytes of the file; the vmcoreinfo text in memory is at most
//! [`MAX_MALLOC_VMCOREINFO`]; the number of CPU ids (at most
//! [`stream::MAX_CPUS`]) must be one past the last possible CPU of the
//! core's `__cpu_possible_mask`, and each possible CPU must have a per-CPU
//! offset of its own (a table of zeros has not); the list of types must
//! come back to its head (each node is seen once) within [`MAX_TYPES`]; and
//! the stream is at most [`MAX_STREAM`] bytes, which is checked as the list
//! is walked, before a per-CPU record is read or the stream allocated (with
//! `try_reserve`, so that a failure is [`Error::NoMemory`]). Segments are
//! looked up by binary search, and reads in one page reuse the last
//! translation, so that the time too is in proportion to the records read.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io;
use std::mem::size_of;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use object::elf::{self, FileHeader64, ProgramHeader64, SectionHeader64, Sym64};
use object::read::elf::{
    FileHeader as _, Note, NoteIterator, ProgramHeader as _, SectionHeader as _, Sym as _,
};
use object::read::{ReadCache, ReadCacheOps, ReadRef as _, StringTable};
use object::{pod, LittleEndian};

use crate::error::{Error, Result};
use crate::stream::{
    self, StreamType, MAX_NAME, MAX_OWNER, STATS_SIZE, STREAM_HEADER_SIZE, STREAM_VERSION,
    TYPE_HEADER_SIZE,
};
use crate::zones::{ZoneSizes, ZONE_COUNT_MAX};

/// Most program headers read (QEMU writes one per memory range).
pub const MAX_PHNUM: u32 = 1 << 20;
/// Most sections of a kernel image read.
pub const MAX_SHNUM: u32 = 1 << 16;
/// Most bytes of notes read: the vmcoreinfo is one page, the CPUs' notes a
/// few hundred bytes each.
pub const MAX_NOTES: u64 = 16 << 20;
/// Most bytes of a symbol table read from a kernel image.
pub const MAX_SYMTAB: u64 = 256 << 20;
/// Most types walked: a registry that seems longer is corrupt (a kernel
/// defines a few hundred).
pub const MAX_TYPES: usize = 1 << 16;
/// Most bytes of the stream [`Core::read_malloc`] builds, 64 MiB: 1000
/// types of 1024 CPU ids (a stream takes 128 bytes a type and 64 bytes a
/// type and CPU id; `memstat -M` peaks at about six times the stream, 380 MB
/// for those, while it makes its tables).
pub const MAX_STREAM: usize = 64 << 20;
/// Most bytes of a VMCOREINFO note: the kernel's is one page
/// (`VMCOREINFO_BYTES`), 64 KiB at most.
pub const MAX_VMCOREINFO: usize = 64 << 10;
/// Most CPU ids (as [`stream::MAX_CPUS`]).
const MAX_CPUS: u64 = stream::MAX_CPUS as u64;
/// Most bytes of the malloc types' vmcoreinfo text in kernel memory.
pub const MAX_MALLOC_VMCOREINFO: u64 = 64 << 10;
/// Most bytes of `struct malloc_type` and of the per-CPU record
/// (`struct malloc_type_counters`, or `struct malloc_type_stats` before it).
const MAX_STRUCT: u64 = 4096;
/// The version of the vmcoreinfo's description of the malloc types
/// (`NUMBER(MALLOC_TYPE_VMCOREINFO_VERSION)`) this reader follows: the
/// per-CPU record is `struct malloc_type_counters`, of `SIZE()` and
/// `OFFSET()` lines of its own. A vmcoreinfo without the line is read as
/// the kernels before it wrote theirs.
pub const VMCOREINFO_VERSION: u64 = 1;
/// The counters of `struct malloc_type_counters`, in the order of the stream's
/// `struct malloc_type_stats`.
const COUNTERS: [&str; 6] = [
    "mts_memalloced",
    "mts_memfreed",
    "mts_numallocs",
    "mts_numfrees",
    "mts_size",
    "mts_numfailures",
];

/// x86_64's `__START_KERNEL_map`: the kernel image's virtual base.
const X86_START_KERNEL_MAP: u64 = 0xffff_ffff_8000_0000;
/// x86_64's `PTE_PFN_MASK`: bits 12 to 51 of a page table entry.
const X86_PFN_MASK: u64 = 0x000f_ffff_ffff_f000;
/// arm64's output address bits 49 to 12 of a descriptor with 4 or 16 KiB pages (48 and 49
/// are RES0 without FEAT_LPA2).
const ARM64_OA_MASK: u64 = 0x0003_ffff_ffff_f000;
/// arm64's output address bits 47 to 16 of a descriptor with 64 KiB pages.
const ARM64_OA_MASK_64K: u64 = 0x0000_ffff_ffff_0000;

/// The architectures read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// x86_64, 4 or 5 page table levels.
    X86_64,
    /// arm64, 4, 16 or 64 KiB pages.
    Aarch64,
}

/// The vmcoreinfo note: `KEY=VALUE` lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VmcoreInfo {
    entries: HashMap<String, String>,
}

/// A number of the vmcoreinfo: decimal (`%d`, `%ld`, `%lu`, possibly
/// negative) or hexadecimal with `0x`, as a 64-bit value (a negative `%ld`
/// wraps, as in C).
fn parse_number(v: &str) -> Option<u64> {
    let v = v.trim();
    if let Some(h) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        return u64::from_str_radix(h, 16).ok();
    }
    let n = v.parse::<i128>().ok()?;
    if n < i128::from(i64::MIN) || n > i128::from(u64::MAX) {
        return None;
    }
    Some(n as u64)
}

/// A number of the vmcoreinfo that is not negative (an offset, a size, a length).
fn parse_unsigned(v: &str) -> Option<u64> {
    if v.trim().starts_with('-') {
        return None;
    }
    parse_number(v)
}

/// An address of the vmcoreinfo (`SYMBOL()`, `KERNELOFFSET`): hexadecimal, `0x` or not.
fn parse_address(v: &str) -> Option<u64> {
    let v = v.trim();
    let h = v.strip_prefix("0x").unwrap_or(v);
    if h.starts_with('+') {
        return None;
    }
    u64::from_str_radix(h, 16).ok()
}

/// A value of the core shown in a message: at most 40 characters, escaped.
fn shown(v: &str) -> String {
    let mut s: String = v.chars().take(40).collect();
    if s.len() < v.len() {
        s.push_str("...");
    }
    format!("{s:?}")
}

impl VmcoreInfo {
    /// Parses the text of a vmcoreinfo note; lines without `=` are ignored.
    pub fn parse(text: &str) -> VmcoreInfo {
        let entries = text
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.trim().to_string()))
            .collect();
        VmcoreInfo { entries }
    }

    /// The raw value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries.get(key).map(String::as_str)
    }

    /// The value of `key` as `parse` reads it: `Ok(None)` when there is no
    /// such line, an error that names the line when its value is not `what`.
    fn value(
        &self,
        key: &str,
        what: &str,
        parse: fn(&str) -> Option<u64>,
    ) -> std::result::Result<Option<u64>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => parse(v)
                .map(Some)
                .ok_or_else(|| format!("the vmcoreinfo's {key} is {}, not {what}", shown(v))),
        }
    }

    fn try_symbol(&self, name: &str) -> std::result::Result<Option<u64>, String> {
        self.value(&format!("SYMBOL({name})"), "an address", parse_address)
    }

    fn try_number(&self, name: &str) -> std::result::Result<Option<u64>, String> {
        self.value(&format!("NUMBER({name})"), "a number", parse_number)
    }

    fn try_offset(&self, field: &str) -> std::result::Result<Option<u64>, String> {
        self.value(&format!("OFFSET({field})"), "an offset", parse_unsigned)
    }

    fn try_size(&self, name: &str) -> std::result::Result<Option<u64>, String> {
        self.value(&format!("SIZE({name})"), "a size", parse_unsigned)
    }

    fn try_length(&self, name: &str) -> std::result::Result<Option<u64>, String> {
        self.value(&format!("LENGTH({name})"), "a length", parse_unsigned)
    }

    fn try_kernel_offset(&self) -> std::result::Result<u64, String> {
        Ok(self
            .value("KERNELOFFSET", "an address", parse_address)?
            .unwrap_or(0))
    }

    /// `SYMBOL(name)`: an address (hexadecimal); `None` when absent or not an address.
    pub fn symbol(&self, name: &str) -> Option<u64> {
        self.try_symbol(name).ok().flatten()
    }

    /// `NUMBER(name)`, as a 64-bit value (a negative `%ld` wraps, as in C);
    /// `None` when absent or not a number.
    pub fn number(&self, name: &str) -> Option<u64> {
        self.try_number(name).ok().flatten()
    }

    /// `OFFSET(field)` (`struct.member`), in bytes; `None` when absent or negative.
    pub fn offset(&self, field: &str) -> Option<u64> {
        self.try_offset(field).ok().flatten()
    }

    /// `SIZE(name)`, in bytes; `None` when absent or negative.
    pub fn size(&self, name: &str) -> Option<u64> {
        self.try_size(name).ok().flatten()
    }

    /// `LENGTH(name)`; `None` when absent or negative.
    pub fn length(&self, name: &str) -> Option<u64> {
        self.try_length(name).ok().flatten()
    }

    /// Adds the entries of `other` that this one does not have.
    fn merge(&mut self, other: VmcoreInfo) {
        for (k, v) in other.entries {
            self.entries.entry(k).or_insert(v);
        }
    }

    /// `KERNELOFFSET`: KASLR's offset of the kernel image (0 when absent or
    /// not an address).
    pub fn kernel_offset(&self) -> u64 {
        self.try_kernel_offset().unwrap_or(0)
    }
}

/// `p_paddr` of a segment without a physical address (`/proc/kcore`'s
/// vmalloc and module areas).
const NO_PADDR: u64 = u64::MAX;
/// Physical addresses are below 2^52 (x86_64 and arm64 with FEAT_LPA or FEAT_LPA2).
const PHYS_LIMIT: u64 = 1 << 52;

/// One `PT_LOAD` of the core.
#[derive(Debug, Clone, Copy)]
struct Segment {
    /// Its program header's index, for messages.
    index: usize,
    offset: u64,
    vaddr: u64,
    paddr: u64,
    filesz: u64,
    memsz: u64,
}

impl Segment {
    /// Whether it holds kernel addresses (the upper half).
    fn is_kernel(&self) -> bool {
        self.vaddr >> 63 == 1
    }

    /// Checks what the program header says against the file (of `len`
    /// bytes) and the address spaces: a segment that cannot be what it
    /// says is reported here, by its index, rather than as an address it
    /// fails to give later.
    fn check(&self, len: u64) -> std::result::Result<(), String> {
        let i = self.index;
        let (off, filesz, memsz) = (self.offset, self.filesz, self.memsz);
        if filesz > memsz {
            return Err(format!(
                "program header {i} (PT_LOAD): {filesz} bytes in the file, more than its \
                 {memsz} bytes of memory"
            ));
        }
        // QEMU writes p_offset -1 for memory it does not dump (p_filesz 0).
        if filesz > 0 && off.checked_add(filesz).is_none_or(|end| end > len) {
            return Err(format!(
                "program header {i} (PT_LOAD): its {filesz} bytes at offset {off:#x} end past \
                 the end of the file ({len} bytes): a truncated core?"
            ));
        }
        if memsz == 0 {
            return Ok(());
        }
        if self.is_kernel() && self.vaddr.checked_add(memsz - 1).is_none() {
            return Err(format!(
                "program header {i} (PT_LOAD): {memsz:#x} bytes at kernel address {:#x} \
                 go past the end of the address space",
                self.vaddr
            ));
        }
        if self.paddr != NO_PADDR
            && self
                .paddr
                .checked_add(memsz)
                .is_none_or(|end| end > PHYS_LIMIT)
        {
            return Err(format!(
                "program header {i} (PT_LOAD): {memsz:#x} bytes at physical address {:#x} \
                 go past the 52 bits of physical addresses",
                self.paddr
            ));
        }
        Ok(())
    }
}

/// Checks that no two segments hold the same kernel addresses with different
/// bytes of the file, and that no two of those without kernel addresses (a
/// dump of physical memory) hold the same physical addresses with different
/// bytes: a core where an address has two meanings is corrupt. (Kernel
/// addresses held twice with the same bytes are normal in `/proc/kcore`,
/// whose file offsets follow the addresses: on arm64 its kernel text lies
/// within its vmalloc area. Physical memory held twice by segments with
/// kernel addresses is normal too: kdump's kernel text and its RAM,
/// `/proc/kcore`'s text and direct map.)
fn check_overlaps(segments: &[Segment]) -> std::result::Result<(), String> {
    /// A segment's addresses in one space: first, last, and where the file holds the first.
    struct Span<'a> {
        first: u64,
        last: u64,
        file_delta: u64,
        s: &'a Segment,
    }
    fn span(s: &Segment, first: u64) -> Span<'_> {
        Span {
            first,
            last: first + (s.memsz - 1),
            file_delta: s.offset.wrapping_sub(first),
            s,
        }
    }
    let overlap = |mut spans: Vec<Span>, what: &str, same_bytes_allowed: bool| {
        spans.sort_unstable_by_key(|p| (p.first, p.s.index));
        // The span that reaches furthest so far: a later one that starts
        // before its end overlaps it.
        let mut far: Option<&Span> = None;
        for p in &spans {
            if let Some(f) = far {
                if p.first <= f.last {
                    if !(same_bytes_allowed && p.file_delta == f.file_delta) {
                        return Err(format!(
                            "program headers {} and {} (PT_LOAD) both hold {what} {:#x}",
                            f.s.index.min(p.s.index),
                            f.s.index.max(p.s.index),
                            p.first
                        ));
                    }
                    if p.last <= f.last {
                        continue;
                    }
                }
            }
            far = Some(p);
        }
        Ok(())
    };
    let kernel = segments
        .iter()
        .filter(|s| s.is_kernel())
        .map(|s| span(s, s.vaddr))
        .collect();
    overlap(kernel, "kernel address", true)?;
    let physical = segments
        .iter()
        .filter(|s| !s.is_kernel() && s.paddr != NO_PADDR)
        .map(|s| span(s, s.paddr))
        .collect();
    overlap(physical, "physical address", true)
}

/// Where the segments are, for a lookup in O(log n) whatever their number.
#[derive(Debug, Default)]
struct SegmentIndex {
    /// Kernel addresses, by address, in pieces that do not overlap: (first
    /// address, last address, segment). Where segments overlap, the one that
    /// starts lower holds the piece (the bytes are the same, or
    /// [`check_overlaps`] refused the core).
    kernel: Vec<(u64, u64, usize)>,
    /// Physical memory, by address, in pieces that do not overlap: (first
    /// address, last address, segment). Where segments overlap, the one
    /// that starts lower holds the piece (the bytes are the same, or
    /// [`check_overlaps`] refused the core).
    physical: Vec<(u64, u64, usize)>,
}

impl SegmentIndex {
    fn new(segments: &[Segment]) -> SegmentIndex {
        let kernel = Self::pieces(segments, |s| s.is_kernel(), |s| s.vaddr);
        let physical = Self::pieces(segments, |s| s.paddr != NO_PADDR, |s| s.paddr);
        SegmentIndex { kernel, physical }
    }

    /// The addresses of the segments that `has` says have them (`at` gives the first), in
    /// pieces that do not overlap, by address: where segments overlap, the one that starts
    /// lower holds the piece.
    fn pieces(
        segments: &[Segment],
        has: impl Fn(&Segment) -> bool,
        at: impl Fn(&Segment) -> u64,
    ) -> Vec<(u64, u64, usize)> {
        let mut by_addr: Vec<usize> = (0..segments.len())
            .filter(|&i| has(&segments[i]) && segments[i].memsz > 0)
            .collect();
        by_addr.sort_unstable_by_key(|&i| (at(&segments[i]), i));
        let mut out = Vec::with_capacity(by_addr.len());
        // The first address no piece holds yet; `None` once the address space is done.
        let mut free = Some(0u64);
        for i in by_addr {
            let Some(from) = free else { break };
            let s = &segments[i];
            // No wrap (Segment::check).
            let last = at(s) + (s.memsz - 1);
            let first = at(s).max(from);
            if first <= last {
                out.push((first, last, i));
                free = last.checked_add(1);
            }
        }
        out
    }

    /// The piece of `pieces` that holds address `a`: its segment and its last address.
    fn find(pieces: &[(u64, u64, usize)], a: u64) -> Option<(usize, u64)> {
        let n = pieces.partition_point(|&(first, _, _)| first <= a);
        let &(_, last, i) = pieces.get(n.checked_sub(1)?)?;
        (a <= last).then_some((i, last))
    }

    /// The segment that holds kernel address `a`, and the last address it holds there.
    fn kernel(&self, a: u64) -> Option<(usize, u64)> {
        Self::find(&self.kernel, a)
    }

    /// The segment that holds physical address `a`, and the last address it holds there.
    fn physical(&self, a: u64) -> Option<(usize, u64)> {
        Self::find(&self.physical, a)
    }
}

/// The last translation of a kernel address: the page or block that holds it.
#[derive(Debug, Default)]
struct Tlb(Option<(u64, u64, u64)>);

impl Tlb {
    /// The physical address of `va` and the size of its page, if `va` is in the page kept.
    fn get(&self, va: u64) -> Option<(u64, u64)> {
        let (base, size, pa) = self.0?;
        (va & !(size - 1) == base).then(|| (pa | (va & (size - 1)), size))
    }

    /// Keeps the translation of `va`: `t`, its physical address and the size of its page.
    fn set(&mut self, va: u64, (pa, size): (u64, u64)) {
        self.0 = Some((va & !(size - 1), size, pa & !(size - 1)));
    }
}

/// Opens `path`, which must be a regular file (`/proc/kcore` is one): a
/// directory would read as a file too short for an ELF header, a FIFO would
/// block. `what` names what the file should be.
fn open_regular(path: &Path, what: &str) -> Result<(File, u64)> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let not_regular = |ft: std::fs::FileType| {
        let kind = if ft.is_dir() {
            "a directory"
        } else if ft.is_fifo() {
            "a FIFO"
        } else if ft.is_socket() {
            "a socket"
        } else if ft.is_char_device() {
            "a character device"
        } else if ft.is_block_device() {
            "a block device"
        } else {
            "not a regular file"
        };
        Error::Kvm(format!("{}: {kind}, not {what}", path.display()))
    };
    let meta = std::fs::metadata(path).map_err(|e| Error::from_io(path, e))?;
    if !meta.is_file() {
        return Err(not_regular(meta.file_type()));
    }
    // Not blocking on a FIFO put in its place since.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| Error::from_io(path, e))?;
    let meta = file.metadata().map_err(|e| Error::from_io(path, e))?;
    if !meta.is_file() {
        return Err(not_regular(meta.file_type()));
    }
    // /proc/kcore reports a size of its own (past the highest address it
    // maps); a regular file's is its length.
    Ok((file, meta.len()))
}

/// How kernel virtual addresses become physical ones: the kernel's page tables.
#[derive(Debug, Clone, Copy)]
struct Walker {
    /// Physical address of the top-level table.
    root: u64,
    /// log2 of the page size.
    page_shift: u32,
    /// Table levels.
    levels: u32,
    /// Bits of a virtual address the tables translate.
    va_bits: u32,
    arch: Arch,
    /// Bits of an entry that are not address (x86_64's SME mask).
    clear: u64,
    /// arm64 with 4 or 16 KiB pages and 52-bit addresses (FEAT_LPA2, TCR_EL1.DS set): bits 9:8
    /// of a descriptor are bits 51:50 of its output address, not its shareability.
    lpa2: bool,
}

/// A kernel image (`-N`): its build ID and symbol table (its `SHT_SYMTAB`
/// and the strings it links to, as in the file: looked up a few times per
/// read, by a scan).
#[derive(Debug, Default)]
struct KernelImage {
    path: PathBuf,
    build_id: Option<String>,
    symtab: Vec<u8>,
    strtab: Vec<u8>,
}

/// An opened core: the file, its segments and its vmcoreinfo.
#[derive(Debug)]
pub struct Core {
    path: PathBuf,
    file: File,
    arch: Arch,
    segments: Vec<Segment>,
    index: SegmentIndex,
    /// Whether a segment holds kernel addresses (`/proc/kcore`, QEMU's paging dumps, kdump).
    virtual_segments: bool,
    vmcoreinfo: VmcoreInfo,
    kernel: Option<KernelImage>,
    walker: std::result::Result<Walker, String>,
}

/// What [`Core::read_malloc`] returns: the stream the kernel's
/// `/proc/malloc_stats` would have given, and the kernel's zone sizes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvmMalloc {
    /// A stream of version [`STREAM_VERSION`].
    pub stream: Vec<u8>,
    /// The kmalloc size classes a zindx names (`MALLOC_TYPE_ZONE_SIZES`).
    pub zones: ZoneSizes,
    /// The number of zones (`malloc_types.numzones=`).
    pub numzones: u32,
}

/// Where a type's per-CPU record has its counters ([`Core::counters_layout`]).
struct Record {
    /// The bytes read of each record, at most [`MAX_STRUCT`].
    size: usize,
    /// The offset of each counter, in the stream's order, each at most `size - 8`.
    offsets: [usize; COUNTERS.len()],
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[off..off + 4]);
    u32::from_le_bytes(a)
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(a)
}

/// The file under [`object`]'s parsers: [`ReadCacheOps`] by `pread` at the
/// length `fstat` gave (the size `/proc/kcore` reports, which its `lseek`
/// need not agree with), the last I/O error kept for the message.
struct Pread<'a> {
    file: &'a File,
    len: u64,
    pos: u64,
    error: &'a RefCell<Option<io::Error>>,
}

impl Pread<'_> {
    fn fail(&self, e: io::Error) {
        *self.error.borrow_mut() = Some(e);
    }
}

impl ReadCacheOps for Pread<'_> {
    fn len(&mut self) -> std::result::Result<u64, ()> {
        Ok(self.len)
    }

    fn seek(&mut self, pos: u64) -> std::result::Result<u64, ()> {
        self.pos = pos;
        Ok(pos)
    }

    fn read(&mut self, buf: &mut [u8]) -> std::result::Result<usize, ()> {
        loop {
            match self.file.read_at(buf, self.pos) {
                Ok(n) => {
                    self.pos += n as u64;
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.fail(e);
                    return Err(());
                }
            }
        }
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> std::result::Result<(), ()> {
        match self.file.read_exact_at(buf, self.pos) {
            Ok(()) => {
                self.pos += buf.len() as u64;
                Ok(())
            }
            Err(e) => {
                self.fail(e);
                Err(())
            }
        }
    }
}

/// An ELF file being parsed: the file and its parser's cache (which holds
/// what was read until it is dropped, at the end of [`Core::open`] or of
/// [`KernelImage::read`]).
struct ElfFile<'a> {
    path: &'a Path,
    file: &'a File,
    len: u64,
    cache: ReadCache<Pread<'a>>,
    io_error: &'a RefCell<Option<io::Error>>,
}

impl<'a> ElfFile<'a> {
    fn new(
        path: &'a Path,
        file: &'a File,
        len: u64,
        io_error: &'a RefCell<Option<io::Error>>,
    ) -> Self {
        ElfFile {
            path,
            file,
            len,
            cache: ReadCache::new(Pread {
                file,
                len,
                pos: 0,
                error: io_error,
            }),
            io_error,
        }
    }

    /// An error about this file: [`Error::Kvm`] with `why`, or the I/O
    /// error that made a read fail.
    fn bad(&self, why: impl std::fmt::Display) -> Error {
        match self.io_error.borrow_mut().take() {
            Some(e) => Error::from_io(self.path, e),
            None => Error::Kvm(format!("{}: {why}", self.path.display())),
        }
    }

    /// Reads and checks the ELF header: ELF64, little-endian, one of [`Arch`].
    fn header(&self) -> Result<&FileHeader64<LittleEndian>> {
        let h: &FileHeader64<LittleEndian> = (&self.cache).read_at(0).map_err(|()| {
            self.bad(format!(
                "not an ELF file ({} bytes, shorter than an ELF header)",
                self.len
            ))
        })?;
        if h.e_ident.magic != elf::ELFMAG {
            return Err(self.bad("not an ELF file"));
        }
        if h.e_ident.class != elf::ELFCLASS64 || h.e_ident.data != elf::ELFDATA2LSB {
            return Err(self.bad("not a 64-bit little-endian ELF file"));
        }
        if h.e_ident.version != elf::EV_CURRENT {
            return Err(self.bad(format!("ELF version {}", h.e_ident.version)));
        }
        FileHeader64::<LittleEndian>::parse(&self.cache).map_err(|e| self.bad(e))?;
        let machine = h.e_machine(LE);
        if machine != elf::EM_X86_64 && machine != elf::EM_AARCH64 {
            return Err(self.bad(format!(
                "ELF machine {machine}: only x86_64 and arm64 are read"
            )));
        }
        Ok(h)
    }

    /// Reads `len` bytes at `off`, or `None` past the end of the file.
    fn read_at(&self, off: u64, len: u64) -> Option<Vec<u8>> {
        if off.checked_add(len)? > self.len {
            return None;
        }
        let mut buf = vec![0u8; usize::try_from(len).ok()?];
        match self.file.read_exact_at(&mut buf, off) {
            Ok(()) => Some(buf),
            Err(e) => {
                *self.io_error.borrow_mut() = Some(e);
                None
            }
        }
    }
}

/// The endianness of the files read.
const LE: LittleEndian = LittleEndian;

impl Core {
    /// Opens the core at `core` (an ELF vmcore or `/proc/kcore`), with the
    /// kernel image `kernel` (an ELF `vmlinux`, `-N`) if given.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] or [`Error::Permission`] when a file cannot be read,
    /// [`Error::Kvm`] when the core is not an ELF core of an x86_64 or
    /// arm64 kernel, has no vmcoreinfo note, or `kernel` is not the core's
    /// kernel (another GNU build ID).
    pub fn open(core: &Path, kernel: Option<&Path>) -> Result<Core> {
        let (file, len) = open_regular(core, "a core file")?;
        let io_error = RefCell::new(None);
        let elf = ElfFile::new(core, &file, len, &io_error);
        let data = &elf.cache;
        let h = elf.header()?;
        let bad = |why: String| elf.bad(why);
        let etype = h.e_type(LE);
        if etype != elf::ET_CORE {
            return Err(bad(format!(
                "not a core file (ELF type {etype}: a kernel image?)"
            )));
        }
        let machine = h.e_machine(LE);
        let arch = if machine == elf::EM_X86_64 {
            Arch::X86_64
        } else {
            Arch::Aarch64
        };
        // PN_XNUM: the number is in section header 0.
        let phnum = h.phnum(LE, data).map_err(&bad_obj(&elf))?;
        if phnum == 0 || phnum > MAX_PHNUM {
            return Err(bad(format!("{phnum} program headers")));
        }
        if usize::from(h.e_phentsize(LE)) != size_of::<ProgramHeader64<LittleEndian>>() {
            return Err(bad("program headers of an unexpected size".into()));
        }
        let phdrs = h
            .program_headers(LE, data)
            .map_err(|_| bad("the program headers are past the end of the file".into()))?;
        let mut segments = Vec::new();
        let mut vmcoreinfo = None;
        let mut bad_note = None;
        let mut note_bytes = 0u64;
        for (i, ph) in phdrs.iter().enumerate() {
            match ph.p_type(LE) {
                elf::PT_LOAD => {
                    let s = Segment {
                        index: i,
                        offset: ph.p_offset(LE),
                        vaddr: ph.p_vaddr(LE),
                        paddr: ph.p_paddr(LE),
                        filesz: ph.p_filesz(LE),
                        memsz: ph.p_memsz(LE),
                    };
                    s.check(len).map_err(&bad)?;
                    if s.memsz > 0 {
                        segments.push(s);
                    }
                }
                elf::PT_NOTE if vmcoreinfo.is_none() => {
                    let (off, size) = (ph.p_offset(LE), ph.p_filesz(LE));
                    if off.checked_add(size).is_none_or(|end| end > len) {
                        return Err(bad(format!(
                            "program header {i} (PT_NOTE): its {size} bytes at offset {off:#x} \
                             end past the end of the file ({len} bytes): a truncated core?"
                        )));
                    }
                    note_bytes = note_bytes.saturating_add(size);
                    if note_bytes > MAX_NOTES {
                        return Err(bad(format!(
                            "more than {} MiB of notes, more than a core has",
                            MAX_NOTES >> 20
                        )));
                    }
                    let Some(mut notes) = ph
                        .notes(LE, data)
                        .map_err(|e| bad(format!("program header {i} (PT_NOTE): {e}")))?
                    else {
                        continue;
                    };
                    // A malformed note ends the segment's notes; it is the error only when
                    // no VMCOREINFO note is found at all.
                    let place = format!("program header {i} (PT_NOTE)");
                    if let Some(note) = find_note(&mut notes, &place, &mut bad_note, |note| {
                        note.name() == b"VMCOREINFO"
                    }) {
                        if note.desc().len() > MAX_VMCOREINFO {
                            return Err(bad(format!(
                                "{place}: a VMCOREINFO note of {} bytes, more than a kernel \
                                 writes ({} KiB)",
                                note.desc().len(),
                                MAX_VMCOREINFO >> 10
                            )));
                        }
                        let text = String::from_utf8_lossy(note.desc());
                        vmcoreinfo = Some(VmcoreInfo::parse(&text));
                    }
                }
                _ => {}
            }
        }
        let vmcoreinfo = vmcoreinfo.ok_or_else(|| match bad_note.take() {
            Some(why) => bad(format!("no VMCOREINFO note: {why}")),
            None => bad(concat!(
                "no VMCOREINFO note (a kernel without CONFIG_VMCORE_INFO, or, from QEMU, ",
                "a guest without -device vmcoreinfo or CONFIG_FW_CFG_SYSFS)"
            )
            .into()),
        })?;
        check_overlaps(&segments).map_err(&bad)?;
        let index = SegmentIndex::new(&segments);
        let kernel = match kernel {
            Some(k) => Some(KernelImage::read(k, machine, &vmcoreinfo, core)?),
            None => None,
        };
        let walker = Walker::new(arch, &vmcoreinfo);
        let virtual_segments = segments.iter().any(Segment::is_kernel);
        Ok(Core {
            path: core.to_path_buf(),
            file,
            arch,
            segments,
            index,
            virtual_segments,
            vmcoreinfo,
            kernel,
            walker,
        })
    }

    /// The core's architecture.
    pub fn arch(&self) -> Arch {
        self.arch
    }

    /// The core's vmcoreinfo.
    pub fn vmcoreinfo(&self) -> &VmcoreInfo {
        &self.vmcoreinfo
    }

    /// An [`Error::Kvm`] about the core.
    fn bad(&self, why: impl std::fmt::Display) -> Error {
        Error::Kvm(format!("{}: {why}", self.path.display()))
    }

    /// The runtime address of `name`: `SYMBOL(name)` of the vmcoreinfo, or
    /// the kernel image's symbol plus `KERNELOFFSET`.
    ///
    /// # Errors
    ///
    /// [`Error::KvmNoSymbol`] when neither has it, [`Error::Kvm`] when the
    /// vmcoreinfo's line for it (or `KERNELOFFSET`) is not an address.
    pub fn symbol(&self, name: &str) -> Result<u64> {
        if let Some(a) = self.vmcoreinfo.try_symbol(name).map_err(|e| self.bad(e))? {
            return Ok(a);
        }
        if let Some(a) = self.kernel.as_ref().and_then(|k| k.symbol(name)) {
            let offset = self
                .vmcoreinfo
                .try_kernel_offset()
                .map_err(|e| self.bad(e))?;
            return Ok(a.wrapping_add(offset));
        }
        Err(Error::KvmNoSymbol {
            symbol: name.to_string(),
            detail: match &self.kernel {
                Some(k) => format!(
                    "neither in the vmcoreinfo of {} nor in {}",
                    self.path.display(),
                    k.path.display()
                ),
                None => format!("not in the vmcoreinfo of {}", self.path.display()),
            },
        })
    }

    /// Reads `buf.len()` bytes of segment `s` at `at` (within its memory):
    /// its file bytes, then zeros past `p_filesz`.
    fn read_in(&self, s: &Segment, at: u64, buf: &mut [u8]) -> Result<()> {
        // CAST: the part in the file is at most buf.len().
        let in_file = s.filesz.saturating_sub(at).min(buf.len() as u64) as usize;
        if in_file > 0 {
            // The segment's file bytes are in the file (Segment::check).
            let off = s.offset + at;
            self.file
                .read_exact_at(&mut buf[..in_file], off)
                .map_err(|e| match e.kind() {
                    io::ErrorKind::UnexpectedEof => self.bad(format!(
                        "the file ends before byte {:#x} of program header {} (PT_LOAD): \
                         it was truncated while being read",
                        off + in_file as u64,
                        s.index
                    )),
                    _ => Error::from_io(&self.path, e),
                })?;
        }
        buf[in_file..].fill(0);
        Ok(())
    }

    /// Reads from the segment that holds `addr` (a physical address, or a
    /// kernel address of a segment with virtual addresses), as much as it
    /// holds up to `buf.len()`: the bytes read, `None` when no segment holds
    /// `addr`.
    fn read_segment(&self, addr: u64, buf: &mut [u8], physical: bool) -> Result<Option<usize>> {
        let found = if physical {
            self.index.physical(addr)
        } else {
            self.index.kernel(addr)
        };
        let Some((i, last)) = found else {
            return Ok(None);
        };
        let s = &self.segments[i];
        let at = addr - if physical { s.paddr } else { s.vaddr };
        // CAST: at most buf.len().
        let n = (last - addr).saturating_add(1).min(buf.len() as u64) as usize;
        self.read_in(s, at, &mut buf[..n])?;
        Ok(Some(n))
    }

    /// Reads physical memory: `false` when a byte of it is in no segment.
    fn read_phys(&self, pa: u64, buf: &mut [u8]) -> Result<bool> {
        let mut done = 0;
        while done < buf.len() {
            match self.read_segment(pa.wrapping_add(done as u64), &mut buf[done..], true)? {
                Some(n) => done += n,
                None => return Ok(false),
            }
        }
        Ok(true)
    }

    /// Reads kernel virtual memory at `va`.
    ///
    /// # Errors
    ///
    /// [`Error::KvmShortRead`] when a byte of it is in no segment of the
    /// core, [`Error::Kvm`] when an address must be translated and the
    /// vmcoreinfo lacks what for, [`Error::Io`] when the file cannot be read.
    pub fn read(&self, va: u64, buf: &mut [u8]) -> Result<()> {
        self.read_with(va, buf, &mut Tlb::default())
    }

    /// [`Core::read`], with the last translation kept in `tlb`: reads that
    /// follow one another in a page (the per-CPU records of a CPU) walk the
    /// page tables once.
    fn read_with(&self, va: u64, buf: &mut [u8], tlb: &mut Tlb) -> Result<()> {
        let mut done = 0;
        while done < buf.len() {
            let a = va.wrapping_add(done as u64);
            // A kernel address in a segment with virtual addresses (/proc/kcore).
            if a >> 63 == 1 {
                if let Some(n) = self.read_segment(a, &mut buf[done..], false)? {
                    done += n;
                    continue;
                }
            }
            let (pa, page) = match tlb.get(a) {
                Some(t) => t,
                None => {
                    let w = match &self.walker {
                        Ok(w) => w,
                        // A core with virtual segments holds the kernel's memory by
                        // address: one that is in none is not in the core.
                        Err(_) if self.virtual_segments => return Err(self.short(va, buf.len())),
                        Err(why) => return Err(self.bad(why)),
                    };
                    let t = w
                        .translate(self, a)?
                        .ok_or_else(|| self.short(va, buf.len()))?;
                    tlb.set(a, t);
                    t
                }
            };
            let n = usize::try_from(page - (a & (page - 1)))
                .unwrap_or(usize::MAX)
                .min(buf.len() - done);
            if !self.read_phys(pa, &mut buf[done..done + n])? {
                return Err(self.short(va, buf.len()));
            }
            done += n;
        }
        Ok(())
    }

    fn short(&self, va: u64, len: usize) -> Error {
        Error::KvmShortRead {
            addr: va,
            len,
            path: self.path.clone(),
        }
    }

    /// Reads a little-endian `u64` at `va`.
    pub fn read_u64(&self, va: u64) -> Result<u64> {
        let mut b = [0u8; 8];
        self.read(va, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// Reads a C string of at most `max - 1` bytes at `va` (the kernel's
    /// `strscpy()` into `max` bytes): reads up to the page end first, so
    /// that a short string at the end of mapped memory reads. Its bytes, as they are: a type's
    /// name is any bytes.
    fn read_c_string(&self, va: u64, max: usize) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut a = va;
        while out.len() < max - 1 {
            let chunk = (4096 - (a & 4095)) as usize;
            let mut b = vec![0u8; chunk.min(max - 1 - out.len())];
            self.read(a, &mut b)?;
            if let Some(n) = b.iter().position(|&c| c == 0) {
                out.extend_from_slice(&b[..n]);
                return Ok(out);
            }
            out.extend_from_slice(&b);
            a = a.wrapping_add(b.len() as u64);
        }
        Ok(out)
    }

    /// A layout value of the vmcoreinfo that must be there.
    fn layout(&self, what: &str, v: std::result::Result<Option<u64>, String>) -> Result<u64> {
        v.map_err(|e| self.bad(e))?
            .ok_or_else(|| Error::KvmNoSymbol {
                symbol: what.to_string(),
                detail: format!(
                    "not in the vmcoreinfo of {} (a kernel without malloc types?)",
                    self.path.display()
                ),
            })
    }

    /// `memstat_kvm_malloc`: the malloc types of the core, as the stream
    /// the kernel's `/proc/malloc_stats` would have given at the time of the
    /// core, with its zone sizes.
    ///
    /// # Errors
    ///
    /// [`Error::KvmNoSymbol`] when the core is of a kernel without malloc
    /// types (the vmcoreinfo names no registry), [`Error::Version`] when
    /// its types follow another stream version, [`Error::VmcoreinfoVersion`]
    /// when the vmcoreinfo describes them in a version of its own this
    /// reader does not know, [`Error::KvmShortRead`]
    /// when a part of them is not in the core, [`Error::Kvm`] for a
    /// registry that is corrupt (a list that loops, a type of an impossible
    /// size).
    pub fn read_malloc(&self) -> Result<KvmMalloc> {
        let vi = &self.malloc_vmcoreinfo()?;
        let symbol = |name: &str| match vi.try_symbol(name).map_err(|e| self.bad(e))? {
            Some(a) => Ok(a),
            None => self.symbol(name),
        };
        let head = match symbol("malloc_type_list") {
            Ok(a) => a,
            Err(Error::KvmNoSymbol { symbol, detail }) => {
                return Err(Error::KvmNoSymbol {
                    symbol,
                    detail: format!("{detail} (a kernel without malloc types?)"),
                })
            }
            Err(e) => return Err(e),
        };
        // The version of the description first: another one may say anything else otherwise.
        let record = self.counters_layout(vi)?;
        let version = self.layout(
            "NUMBER(MALLOC_TYPE_STREAM_VERSION)",
            vi.try_number("MALLOC_TYPE_STREAM_VERSION"),
        )?;
        if version != u64::from(STREAM_VERSION) {
            return Err(Error::Version {
                found: u32::try_from(version).unwrap_or(u32::MAX),
                expected: STREAM_VERSION,
            });
        }
        let off = |f: &str| self.layout(&format!("OFFSET({f})"), vi.try_offset(f));
        let type_size = self.layout("SIZE(malloc_type)", vi.try_size("malloc_type"))?;
        let mti = off("malloc_type.ks_mti")?;
        let f = |m: &str| off(&format!("malloc_type_internal.{m}")).map(|o| o.saturating_add(mti));
        let o_name = off("malloc_type.ks_shortdesc")?;
        let o_zone = f("mti_zone")?;
        let o_flags = f("mti_flags")?;
        let o_stats = f("mti_stats")?;
        let o_id = f("mti_id")?;
        let o_list = f("mti_list")?;
        let o_events = f("mti_events")?;
        let o_owner = f("mti_owner")?;
        let o_peak = f("mti_peak")?;
        let ev_peak = self.layout(
            "NUMBER(MALLOC_TYPE_EV_PEAK)",
            vi.try_number("MALLOC_TYPE_EV_PEAK"),
        )?;
        if type_size > MAX_STRUCT {
            return Err(self.bad(format!(
                "the vmcoreinfo's SIZE(malloc_type) is {type_size}, more than {MAX_STRUCT}"
            )));
        }
        for (field, o) in [
            ("malloc_type.ks_shortdesc", o_name),
            ("malloc_type_internal.mti_zone", o_zone),
            ("malloc_type_internal.mti_flags", o_flags),
            ("malloc_type_internal.mti_stats", o_stats),
            ("malloc_type_internal.mti_id", o_id),
            ("malloc_type_internal.mti_list", o_list),
            ("malloc_type_internal.mti_events", o_events),
            ("malloc_type_internal.mti_owner", o_owner),
            ("malloc_type_internal.mti_peak", o_peak),
        ] {
            if o.saturating_add(8) > type_size {
                return Err(self.bad(format!(
                    "the vmcoreinfo's SIZE(malloc_type) is {type_size}, too small for {field} \
                     at byte {o}"
                )));
            }
        }
        let ncpus = self.layout(
            "NUMBER(MALLOC_TYPE_NR_CPU_IDS)",
            vi.try_number("MALLOC_TYPE_NR_CPU_IDS"),
        )?;
        if ncpus == 0 || ncpus > MAX_CPUS {
            return Err(self.bad(format!(
                "the vmcoreinfo's NUMBER(MALLOC_TYPE_NR_CPU_IDS) is {ncpus}, not 1 to {MAX_CPUS}"
            )));
        }
        let cpus = self.percpu(
            ncpus,
            symbol("__per_cpu_offset"),
            symbol("__cpu_possible_mask"),
        )?;
        let numzones = match vi
            .try_number("MALLOC_TYPE_NUMZONES")
            .map_err(|e| self.bad(e))?
        {
            None => 1,
            Some(n) => u32::try_from(n).map_err(|_| {
                self.bad(format!(
                    "the vmcoreinfo's NUMBER(MALLOC_TYPE_NUMZONES) is {n}"
                ))
            })?,
        };
        let zones = match vi.get("MALLOC_TYPE_ZONE_SIZES") {
            Some(v) => self.zone_sizes(v)?,
            None => ZoneSizes::default(),
        };

        // The types, then their records: the stream's size is known before
        // it is allocated, and bounded as the types are found.
        // CAST: ncpus is at most MAX_CPUS.
        let per_type = TYPE_HEADER_SIZE + STATS_SIZE * ncpus as usize;
        let max_types = ((MAX_STREAM - STREAM_HEADER_SIZE) / per_type).min(MAX_TYPES);
        let mut types = Vec::new();
        let mut stats_of = Vec::new();
        let mut seen = HashSet::new();
        let mut tlb = Tlb::default();
        let mut node = self.read_u64(head)?;
        let mut rec = vec![0u8; type_size as usize];
        while node != head {
            if !seen.insert(node) {
                return Err(
                    self.bad("the list of malloc types does not come back to its head: it loops")
                );
            }
            if types.len() == max_types {
                return Err(self.bad(if max_types == MAX_TYPES {
                    format!("more than {MAX_TYPES} malloc types: a corrupt list")
                } else {
                    format!(
                        "more than {max_types} malloc types of {ncpus} CPU ids: their stream \
                         would be more than the {} MiB this reader builds",
                        MAX_STREAM >> 20
                    )
                }));
            }
            let mtp = node.wrapping_sub(o_list);
            self.read_with(mtp, &mut rec, &mut tlb)?;
            let at = |o: u64| u64_at(&rec, o as usize);
            let name = self.read_c_string(at(o_name), MAX_NAME)?;
            // `mti_flags` also holds bits of the kernel's own, which the stream does not show.
            let mut flags =
                u32_at(&rec, o_flags as usize) & (stream::FLAG_MODULE | stream::FLAG_UNLOADED);
            let mut peak = 0;
            if at(o_events) & ev_peak != 0 {
                flags |= stream::FLAG_PEAK;
                // The peak is not negative: it starts at a clamped sum and only rises.
                peak = (at(o_peak) as i64).max(0) as u64;
            }
            let owner = match at(o_owner) {
                0 => Vec::new(),
                p => self.read_c_string(p, MAX_OWNER)?,
            };
            stats_of.push(at(o_stats));
            types.push(StreamType {
                name,
                id: at(o_id),
                zone: u32_at(&rec, o_zone as usize),
                flags,
                peak,
                owner,
                // Written as zeros, then read in place.
                stats: Vec::new(),
            });
            node = at(o_list);
        }
        let len = STREAM_HEADER_SIZE + types.len() * per_type;
        let mut stream = Vec::new();
        stream.try_reserve_exact(len).map_err(|_| Error::NoMemory)?;
        // CAST: at most MAX_CPUS.
        stream::write_stream_into(&mut stream, ncpus as u32, &types);
        debug_assert_eq!(stream.len(), len);
        // CPU by CPU: the records of one CPU are near one another (its per-CPU
        // area), which the translation kept in `tlb` makes cheap.
        // At most MAX_STRUCT bytes (counters_layout).
        let mut r = vec![0u8; record.size];
        for &(cpu, offset) in &cpus {
            for (t, &stats) in stats_of.iter().enumerate() {
                if stats == 0 {
                    continue;
                }
                self.read_with(stats.wrapping_add(offset), &mut r, &mut tlb)?;
                let at = STREAM_HEADER_SIZE + t * per_type + TYPE_HEADER_SIZE + cpu * STATS_SIZE;
                // memalloced, memfreed, numallocs, numfrees, size, numfailures, each where
                // the record has it: little-endian in the core, native in the stream.
                for (k, &o) in record.offsets.iter().enumerate() {
                    let v = u64_at(&r, o).to_ne_bytes();
                    stream[at + 8 * k..at + 8 * k + 8].copy_from_slice(&v);
                }
            }
        }
        Ok(KvmMalloc {
            stream,
            zones,
            numzones,
        })
    }

    /// The per-CPU record of a type as the vmcoreinfo `vi` describes it: with
    /// `NUMBER(MALLOC_TYPE_VMCOREINFO_VERSION)` (which must be
    /// [`VMCOREINFO_VERSION`]), `struct malloc_type_counters` of
    /// `SIZE(malloc_type_counters)` bytes with each counter at its
    /// `OFFSET(malloc_type_counters.mts_*)`; without it, the layout before
    /// that line: `struct malloc_type_stats` (`SIZE(malloc_type_stats)`, at
    /// least 48 bytes), whose first 48 bytes are the six counters in the
    /// stream's order.
    fn counters_layout(&self, vi: &VmcoreInfo) -> Result<Record> {
        let version = vi
            .try_number("MALLOC_TYPE_VMCOREINFO_VERSION")
            .map_err(|e| self.bad(e))?;
        match version {
            None => {
                let size =
                    self.layout("SIZE(malloc_type_stats)", vi.try_size("malloc_type_stats"))?;
                if !(48..=MAX_STRUCT).contains(&size) {
                    return Err(self.bad(format!(
                        "the vmcoreinfo's SIZE(malloc_type_stats) is {size}, not 48 to {MAX_STRUCT}"
                    )));
                }
                Ok(Record {
                    size: 48,
                    offsets: [0, 8, 16, 24, 32, 40],
                })
            }
            Some(VMCOREINFO_VERSION) => {
                // A line of this version missing is no sign of a kernel without malloc types.
                let required = |key: String, v: std::result::Result<Option<u64>, String>| {
                    v.map_err(|e| self.bad(e))?
                        .ok_or_else(|| Error::KvmNoSymbol {
                            symbol: key,
                            detail: format!(
                                "not in the vmcoreinfo of {}, which says \
                                 NUMBER(MALLOC_TYPE_VMCOREINFO_VERSION)={VMCOREINFO_VERSION}",
                                self.path.display()
                            ),
                        })
                };
                let size = required(
                    "SIZE(malloc_type_counters)".into(),
                    vi.try_size("malloc_type_counters"),
                )?;
                if !(8..=MAX_STRUCT).contains(&size) {
                    return Err(self.bad(format!(
                        "the vmcoreinfo's SIZE(malloc_type_counters) is {size}, not 8 to \
                         {MAX_STRUCT}"
                    )));
                }
                let mut offsets = [0; COUNTERS.len()];
                for (o, name) in offsets.iter_mut().zip(COUNTERS) {
                    let field = format!("malloc_type_counters.{name}");
                    let v = required(format!("OFFSET({field})"), vi.try_offset(&field))?;
                    if v.saturating_add(8) > size {
                        return Err(self.bad(format!(
                            "the vmcoreinfo's SIZE(malloc_type_counters) is {size}, too small \
                             for {field} at byte {v}"
                        )));
                    }
                    // CAST: less than MAX_STRUCT.
                    *o = v as usize;
                }
                Ok(Record {
                    // CAST: at most MAX_STRUCT.
                    size: size as usize,
                    offsets,
                })
            }
            Some(found) => Err(Error::VmcoreinfoVersion {
                path: self.path.clone(),
                found,
                expected: VMCOREINFO_VERSION,
            }),
        }
    }

    /// The kmalloc size classes of `MALLOC_TYPE_ZONE_SIZES` (`v`): bytes by zindx,
    /// comma-separated.
    fn zone_sizes(&self, v: &str) -> Result<ZoneSizes> {
        let mut sizes = Vec::new();
        for s in v.split(',').filter(|s| !s.is_empty()) {
            if sizes.len() == ZONE_COUNT_MAX {
                return Err(self.bad(format!(
                    "the vmcoreinfo's MALLOC_TYPE_ZONE_SIZES has more than {ZONE_COUNT_MAX} sizes"
                )));
            }
            let size = s.trim().parse::<u64>().map_err(|_| {
                self.bad(format!(
                    "the vmcoreinfo's MALLOC_TYPE_ZONE_SIZES has {}, not a number of bytes",
                    shown(s)
                ))
            })?;
            sizes.push(size);
        }
        ZoneSizes::new_from_kernel(sizes)
    }

    /// The vmcoreinfo with the malloc types' lines from kernel memory
    /// (`SYMBOL(malloc_type_vmcoreinfo)`, `LENGTH(malloc_type_vmcoreinfo)`)
    /// added, when the note points to them.
    ///
    /// # Errors
    ///
    /// [`Error::KvmShortRead`] when they are not in the core, [`Error::Kvm`]
    /// for a length beyond any kernel's.
    pub fn malloc_vmcoreinfo(&self) -> Result<VmcoreInfo> {
        let mut vi = self.vmcoreinfo.clone();
        let at = vi
            .try_symbol("malloc_type_vmcoreinfo")
            .map_err(|e| self.bad(e))?;
        let len = vi
            .try_length("malloc_type_vmcoreinfo")
            .map_err(|e| self.bad(e))?;
        let (at, len) = match (at, len) {
            (Some(at), Some(len)) => (at, len),
            (None, None) => return Ok(vi),
            (Some(_), None) | (None, Some(_)) => {
                return Err(self.bad(
                    "the vmcoreinfo has only one of SYMBOL(malloc_type_vmcoreinfo) and \
                     LENGTH(malloc_type_vmcoreinfo)",
                ))
            }
        };
        if len > MAX_MALLOC_VMCOREINFO {
            return Err(self.bad(format!(
                "the vmcoreinfo's LENGTH(malloc_type_vmcoreinfo) is {len}, more than {} KiB",
                MAX_MALLOC_VMCOREINFO >> 10
            )));
        }
        let mut text = vec![0u8; len as usize];
        self.read(at, &mut text)?;
        vi.merge(VmcoreInfo::parse(&String::from_utf8_lossy(&text)));
        Ok(vi)
    }

    /// The possible CPUs among the `ncpus` CPU ids and their per-CPU
    /// offsets, from the addresses of `__per_cpu_offset` and
    /// `__cpu_possible_mask`. The kernel's invariants are checked, as they
    /// bound what is read: the last possible CPU is `nr_cpu_ids - 1`
    /// (`setup_nr_cpu_ids()`), and each possible CPU has its own per-CPU area.
    fn percpu(
        &self,
        ncpus: u64,
        per_cpu_offset: Result<u64>,
        possible_mask: Result<u64>,
    ) -> Result<Vec<(usize, u64)>> {
        // CAST: at most MAX_CPUS.
        let n = ncpus as usize;
        let possible: Vec<usize> = match possible_mask {
            Ok(a) => {
                let mut b = vec![0u8; n.div_ceil(64) * 8];
                self.read(a, &mut b)?;
                let possible: Vec<usize> =
                    (0..n).filter(|&c| b[c / 8] & (1 << (c % 8)) != 0).collect();
                match possible.last() {
                    None => {
                        return Err(self.bad(format!(
                            "__cpu_possible_mask has no possible CPU among the {n} CPU ids of \
                             NUMBER(MALLOC_TYPE_NR_CPU_IDS)"
                        )))
                    }
                    Some(&last) if last + 1 != n => {
                        return Err(self.bad(format!(
                            "NUMBER(MALLOC_TYPE_NR_CPU_IDS) is {n}, but the last possible CPU \
                             in __cpu_possible_mask is {last} (nr_cpu_ids is one more)"
                        )))
                    }
                    Some(_) => possible,
                }
            }
            Err(Error::KvmNoSymbol { .. }) => (0..n).collect(),
            Err(e) => return Err(e),
        };
        let offsets: Vec<u64> = match per_cpu_offset {
            Ok(a) => {
                let mut b = vec![0u8; n * 8];
                self.read(a, &mut b)?;
                b.chunks_exact(8).map(|c| u64_at(c, 0)).collect()
            }
            // A kernel without SMP: per_cpu_ptr() is the pointer itself.
            Err(Error::KvmNoSymbol { .. }) if ncpus == 1 => vec![0],
            Err(e) => return Err(e),
        };
        let cpus: Vec<(usize, u64)> = possible.into_iter().map(|c| (c, offsets[c])).collect();
        let mut by_offset: Vec<(u64, usize)> = cpus.iter().map(|&(c, o)| (o, c)).collect();
        by_offset.sort_unstable();
        if let Some(w) = by_offset.windows(2).find(|w| w[0].0 == w[1].0) {
            let (a, b) = (w[0].1.min(w[1].1), w[0].1.max(w[1].1));
            return Err(self.bad(format!(
                "CPUs {a} and {b} have the same per-CPU offset {:#x} in __per_cpu_offset",
                w[0].0
            )));
        }
        Ok(cpus)
    }
}

impl Walker {
    /// The walker of the kernel's page tables that the vmcoreinfo describes,
    /// or why there is none.
    fn new(arch: Arch, vi: &VmcoreInfo) -> std::result::Result<Walker, String> {
        let need = |what: &str| format!("the vmcoreinfo has no {what}: cannot translate addresses");
        let pgd = vi
            .try_symbol("swapper_pg_dir")?
            .ok_or_else(|| need("SYMBOL(swapper_pg_dir)"))?;
        match arch {
            Arch::X86_64 => {
                let phys_base = vi
                    .try_number("phys_base")?
                    .ok_or_else(|| need("NUMBER(phys_base)"))?;
                let levels = match vi.try_number("pgtable_l5_enabled")? {
                    Some(1) => 5,
                    None | Some(0) => 4,
                    Some(n) => {
                        return Err(format!(
                            "the vmcoreinfo's NUMBER(pgtable_l5_enabled) is {n}, not 0 or 1"
                        ))
                    }
                };
                Ok(Walker {
                    root: pgd
                        .wrapping_sub(X86_START_KERNEL_MAP)
                        .wrapping_add(phys_base),
                    page_shift: 12,
                    levels,
                    va_bits: 12 + 9 * levels,
                    arch,
                    clear: vi.try_number("sme_mask")?.unwrap_or(0),
                    lpa2: false,
                })
            }
            Arch::Aarch64 => {
                let voff = vi
                    .try_number("kimage_voffset")?
                    .ok_or_else(|| need("NUMBER(kimage_voffset)"))?;
                let page = vi
                    .value("PAGESIZE", "a number", parse_number)?
                    .ok_or_else(|| need("PAGESIZE"))?;
                let page_shift = match page {
                    4096 => 12,
                    16384 => 14,
                    65536 => 16,
                    _ => return Err(format!("arm64 pages of {page} bytes are not read")),
                };
                // The kernel half's size in use: TCR_EL1.T1SZ (a kernel built for 52-bit
                // addresses runs with 48 on a CPU without them), or VA_BITS.
                let va_bits = match vi.try_number("TCR_EL1_T1SZ")? {
                    Some(t1sz) if (12..=39).contains(&t1sz) => 64 - t1sz,
                    Some(t1sz) => {
                        return Err(format!(
                            "the vmcoreinfo's NUMBER(TCR_EL1_T1SZ) is {t1sz}, not 12 to 39"
                        ))
                    }
                    None => vi
                        .try_number("VA_BITS")?
                        .ok_or_else(|| need("NUMBER(VA_BITS)"))?,
                };
                if !(36..=52).contains(&va_bits) {
                    return Err(format!("arm64 with {va_bits}-bit addresses is not read"));
                }
                // CAST: 36 to 52.
                let va_bits = va_bits as u32;
                let bits = page_shift - 3;
                Ok(Walker {
                    root: pgd.wrapping_sub(voff),
                    page_shift,
                    levels: (va_bits - page_shift).div_ceil(bits),
                    va_bits,
                    arch,
                    clear: 0,
                    // 52-bit addresses with 4 or 16 KiB pages need FEAT_LPA2, which Linux
                    // then uses for the descriptors too.
                    lpa2: va_bits > 48 && page_shift < 16,
                })
            }
        }
    }

    /// The output address of an arm64 descriptor (a table's, a block's or a page's).
    fn arm64_oa(&self, e: u64) -> u64 {
        if self.page_shift == 16 {
            // FEAT_LPA: bits 51:48 in bits 15:12 (RES0 without it).
            (e & ARM64_OA_MASK_64K) | ((e >> 12) & 0xf) << 48
        } else if self.lpa2 {
            (e & ARM64_OA_MASK) | ((e >> 8) & 3) << 50
        } else {
            e & ARM64_OA_MASK
        }
    }

    /// The physical address of `va` and the size of the page or block that
    /// maps it, or `None` where nothing maps it.
    fn translate(&self, core: &Core, va: u64) -> Result<Option<(u64, u64)>> {
        let bits = self.page_shift - 3;
        let mut table = self.root;
        for level in (0..self.levels).rev() {
            let shift = self.page_shift + bits * level;
            // The top level indexes only what is left of the address bits.
            let index = (va >> shift) & ((1 << bits.min(self.va_bits - shift)) - 1);
            let mut e = [0u8; 8];
            if !core.read_phys(table.wrapping_add(index * 8), &mut e)? {
                return Ok(None);
            }
            let e = u64::from_le_bytes(e) & !self.clear;
            let size = 1u64 << shift;
            let (valid, leaf, addr) = match self.arch {
                // Present; a large page at the 1 GiB and 2 MiB levels (PSE).
                Arch::X86_64 => (
                    e & 1 != 0,
                    level == 0 || (e & 0x80 != 0 && level <= 2),
                    e & X86_PFN_MASK,
                ),
                // Valid; a block (bits 1:0 = 01) above the last level, a page at it.
                Arch::Aarch64 => (e & 1 != 0, level == 0 || e & 2 == 0, self.arm64_oa(e)),
            };
            if !valid {
                return Ok(None);
            }
            if leaf {
                let base = addr & !(size - 1);
                return Ok(Some((base | (va & (size - 1)), size)));
            }
            table = addr & !((1u64 << self.page_shift) - 1);
        }
        Ok(None)
    }
}

impl KernelImage {
    /// Reads the build ID and the symbols of the kernel image at `path`, and
    /// checks that it is the kernel of the core (`machine`, `vi`).
    fn read(
        path: &Path,
        machine: elf::Machine,
        vi: &VmcoreInfo,
        core: &Path,
    ) -> Result<KernelImage> {
        let (file, len) = open_regular(path, "a kernel image")?;
        let io_error = RefCell::new(None);
        let elf = ElfFile::new(path, &file, len, &io_error);
        let data = &elf.cache;
        let h = elf.header()?;
        let bad = |why: String| elf.bad(why);
        let etype = h.e_type(LE);
        if etype != elf::ET_EXEC && etype != elf::ET_DYN {
            return Err(bad(format!(
                "not a kernel image (ELF type {etype}: a core?)"
            )));
        }
        if h.e_machine(LE) != machine {
            return Err(bad(format!(
                "a kernel of another architecture than {}",
                core.display()
            )));
        }
        let shnum = h.shnum(LE, data).map_err(&bad_obj(&elf))?;
        if shnum > MAX_SHNUM {
            return Err(bad(format!("{shnum} sections")));
        }
        if shnum != 0
            && usize::from(h.e_shentsize(LE)) != size_of::<SectionHeader64<LittleEndian>>()
        {
            return Err(bad("section headers of an unexpected size".into()));
        }
        let shdrs = h
            .section_headers(LE, data)
            .map_err(|_| bad("the section headers are past the end of the file".into()))?;
        // The bytes of section `i`, which must be in the file and at most `max` bytes.
        let section = |i: usize, s: &SectionHeader64<LittleEndian>, what: &str, max: u64| {
            let (off, size) = (s.sh_offset(LE), s.sh_size(LE));
            if size > max {
                return Err(bad(format!(
                    "section {i} ({what}) is {size} bytes, more than the {} MiB read",
                    max >> 20
                )));
            }
            elf.read_at(off, size).ok_or_else(|| {
                bad(format!(
                    "section {i} ({what}): its {size} bytes at offset {off:#x} end past the \
                     end of the file ({len} bytes)"
                ))
            })
        };
        let mut img = KernelImage {
            path: path.to_path_buf(),
            ..Default::default()
        };
        let mut bad_note = None;
        for (i, s) in shdrs.iter().enumerate() {
            match s.sh_type(LE) {
                elf::SHT_NOTE if img.build_id.is_none() => {
                    let bytes = section(i, s, "SHT_NOTE", MAX_NOTES)?;
                    let align = s.sh_addralign(LE);
                    let mut notes =
                        NoteIterator::<FileHeader64<LittleEndian>>::new(LE, align, &bytes)
                            .map_err(|e| bad(format!("section {i} (SHT_NOTE): {e}")))?;
                    // A malformed note is the error only when no build ID is found.
                    let place = format!("section {i} (SHT_NOTE)");
                    if let Some(note) = find_note(&mut notes, &place, &mut bad_note, |note| {
                        note.name() == elf::ELF_NOTE_GNU && note.n_type(LE) == elf::NT_GNU_BUILD_ID
                    }) {
                        img.build_id =
                            Some(note.desc().iter().map(|b| format!("{b:02x}")).collect());
                    }
                }
                elf::SHT_SYMTAB => {
                    let link = s.sh_link(LE) as usize;
                    let strtab = shdrs
                        .get(link)
                        .filter(|t| t.sh_type(LE) == elf::SHT_STRTAB)
                        .ok_or_else(|| {
                            bad(format!(
                                "section {i} (SHT_SYMTAB) links to section {link}, which is not \
                                 a string table"
                            ))
                        })?;
                    img.symtab = section(i, s, "SHT_SYMTAB", MAX_SYMTAB)?;
                    img.strtab = section(link, strtab, "SHT_STRTAB", MAX_SYMTAB)?;
                }
                _ => {}
            }
        }
        if img.build_id.is_none() && vi.get("BUILD-ID").is_some() {
            if let Some(why) = bad_note {
                return Err(bad(format!(
                    "no GNU build ID to check against the one of {}: {why}",
                    core.display()
                )));
            }
        }
        match (vi.get("BUILD-ID"), &img.build_id) {
            (Some(want), Some(have)) if !want.eq_ignore_ascii_case(have) => Err(bad(format!(
                "not the kernel of {}: build ID {have}, the core's is {want}",
                core.display()
            ))),
            (Some(_), None) => Err(bad(format!(
                "no GNU build ID to check against the one of {}",
                core.display()
            ))),
            _ => Ok(img),
        }
    }

    /// The value of the first defined symbol `name` of the symbol table.
    fn symbol(&self, name: &str) -> Option<u64> {
        let n = self.symtab.len() / size_of::<Sym64<LittleEndian>>();
        let (syms, _) = pod::slice_from_bytes::<Sym64<LittleEndian>>(&self.symtab, n).ok()?;
        let strings = StringTable::new(&self.strtab[..], 0, self.strtab.len() as u64);
        syms.iter()
            .filter(|s| s.st_name(LE) != 0 && s.st_value(LE) != 0)
            .find(|s| s.name(LE, strings) == Ok(name.as_bytes()))
            .map(|s| s.st_value(LE))
    }
}

/// An [`object`] error as an error about `elf`'s file.
/// The first of `notes` that `wanted` accepts, or `None` at their end or at a malformed note, whose
/// error (`PLACE: note N is malformed (...)`) goes to `bad_note` unless it holds one already.
fn find_note<'data>(
    notes: &mut NoteIterator<'data, FileHeader64<LittleEndian>>,
    place: &str,
    bad_note: &mut Option<String>,
    wanted: impl Fn(&Note<'data, FileHeader64<LittleEndian>>) -> bool,
) -> Option<Note<'data, FileHeader64<LittleEndian>>> {
    for n in 0.. {
        match notes.next() {
            Ok(Some(note)) if wanted(&note) => return Some(note),
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(e) => {
                bad_note.get_or_insert(format!("{place}: note {n} is malformed ({e})"));
                break;
            }
        }
    }
    None
}

fn bad_obj<'a>(elf: &'a ElfFile<'a>) -> impl Fn(object::Error) -> Error + 'a {
    move |e| elf.bad(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(index: usize, offset: u64, vaddr: u64, memsz: u64) -> Segment {
        Segment {
            index,
            offset,
            vaddr,
            paddr: NO_PADDR,
            filesz: memsz,
            memsz,
        }
    }

    /// `/proc/kcore` holds kernel addresses twice with the same bytes (its file offsets follow
    /// the addresses; on arm64 its kernel text lies within its vmalloc area): not an overlap,
    /// and every address is found in a segment that holds it, at the same file offset. Kernel
    /// addresses held twice with other bytes are refused.
    #[test]
    fn kernel_addresses_held_twice_alike() {
        const BASE: u64 = 0xffff_8000_0000_0000;
        // The file offset of an address is `address - BASE + 0x1000`, as kcore's are.
        let at = |va: u64| va - BASE + 0x1000;
        let vmalloc = seg(1, at(BASE), BASE, 0x10_0000);
        let text = seg(2, at(BASE + 0x4_0000), BASE + 0x4_0000, 0x2_0000);
        let after = seg(3, at(BASE + 0x10_0000), BASE + 0x10_0000, 0x1000);
        let segments = [text, vmalloc, after];
        assert_eq!(check_overlaps(&segments), Ok(()));
        let index = SegmentIndex::new(&segments);
        for va in [
            BASE,
            BASE + 0x4_0000,
            BASE + 0x5_ffff,
            BASE + 0xf_ffff,
            BASE + 0x10_0fff,
        ] {
            let (i, last) = index.kernel(va).unwrap();
            let s = &segments[i];
            assert!(s.vaddr <= va && va <= last && last <= s.vaddr + (s.memsz - 1));
            assert_eq!(s.offset + (va - s.vaddr), at(va));
        }
        assert_eq!(index.kernel(BASE + 0x10_1000), None);
        assert_eq!(index.kernel(BASE - 1), None);

        let other = seg(2, 0x50_0000, BASE + 0x4_0000, 0x2_0000);
        let e = check_overlaps(&[segments[1], other]).unwrap_err();
        assert!(e.contains("both hold kernel address"), "{e}");
    }
}
