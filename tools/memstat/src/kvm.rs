//! libmemstat's kvm side: the malloc types of a crash dump or of a live
//! memory image (`memstat_kvm_malloc(3)`, `vmstat -m -M core -N kernel`).
//!
//! [`Core::open`] reads an ELF core of a Linux kernel: a vmcore written by
//! QEMU's `dump-guest-memory`, by kdump (`/proc/vmcore` saved as ELF, for
//! example by `makedumpfile -E`) or the live `/proc/kcore`. The kernel's
//! vmcoreinfo note (the `VMCOREINFO` ELF note) says where everything is:
//!
//! * the registry (`SYMBOL(malloc_type_list)`), the layout of
//!   `struct malloc_type` and of `struct malloc_type_stats`
//!   (`OFFSET(malloc_type_internal.mti_stats)` and so on) and the stream
//!   version they follow (`NUMBER(MALLOC_TYPE_STREAM_VERSION)`), which
//!   `malloc_type_vmcoreinfo_setup()` (`mm/malloc_type.c`) writes in the
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
//! Everything read from the core is bounds-checked: a truncated or corrupt
//! core, a core of a kernel without malloc types, or the wrong kernel image
//! is an [`Error`] ([`Error::Kvm`], [`Error::KvmNoSymbol`],
//! [`Error::KvmShortRead`], [`Error::Version`]), never a panic, and costs
//! memory only in proportion to what it holds.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::stream::{self, CpuStats, StreamType, MAX_NAME, MAX_OWNER, STREAM_VERSION};
use crate::zones::ZoneSizes;

/// `EM_X86_64`.
const EM_X86_64: u16 = 62;
/// `EM_AARCH64`.
const EM_AARCH64: u16 = 183;
/// `ET_EXEC`, `ET_DYN` and `ET_CORE`.
const ET_EXEC: u16 = 2;
const ET_DYN: u16 = 3;
const ET_CORE: u16 = 4;
/// `PT_LOAD` and `PT_NOTE`.
const PT_LOAD: u32 = 1;
const PT_NOTE: u32 = 4;
/// `SHT_SYMTAB` and `SHT_NOTE`.
const SHT_SYMTAB: u32 = 2;
const SHT_NOTE: u32 = 7;
/// `NT_GNU_BUILD_ID`.
const NT_GNU_BUILD_ID: u32 = 3;
/// `PN_XNUM`: the real number of program headers is in section header 0.
const PN_XNUM: u16 = 0xffff;
/// `sizeof(Elf64_Ehdr)`, `sizeof(Elf64_Phdr)`, `sizeof(Elf64_Shdr)`, `sizeof(Elf64_Sym)`.
const EHDR_SIZE: usize = 64;
const PHDR_SIZE: usize = 56;
const SHDR_SIZE: usize = 64;
const SYM_SIZE: usize = 24;

/// Most program headers read (QEMU writes one per memory range).
const MAX_PHNUM: u64 = 1 << 20;
/// Most bytes of notes read: the vmcoreinfo is one page, the CPUs' notes a
/// few hundred bytes each.
const MAX_NOTES: u64 = 16 << 20;
/// Most bytes of a symbol table read from a kernel image.
const MAX_SYMTAB: u64 = 256 << 20;
/// Most types walked: a registry that seems longer is corrupt.
const MAX_TYPES: usize = 1 << 20;
/// Most CPU ids (as [`stream::MAX_CPUS`]).
const MAX_CPUS: u64 = stream::MAX_CPUS as u64;
/// Most bytes of the malloc types' vmcoreinfo text in kernel memory.
const MAX_MALLOC_VMCOREINFO: u64 = 64 << 10;
/// Most bytes of `struct malloc_type` and of `struct malloc_type_stats`.
const MAX_STRUCT: u64 = 4096;

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
/// negative) or hexadecimal with `0x`.
fn parse_number(v: &str) -> Option<i128> {
    let v = v.trim();
    if let Some(h) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        return u64::from_str_radix(h, 16).ok().map(i128::from);
    }
    v.parse::<i128>().ok()
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

    /// `SYMBOL(name)`: an address (hexadecimal).
    pub fn symbol(&self, name: &str) -> Option<u64> {
        let v = self.get(&format!("SYMBOL({name})"))?;
        u64::from_str_radix(v.trim_start_matches("0x"), 16).ok()
    }

    /// `NUMBER(name)`, as a 64-bit value (a negative `%ld` wraps, as in C).
    pub fn number(&self, name: &str) -> Option<u64> {
        parse_number(self.get(&format!("NUMBER({name})"))?).map(|n| n as u64)
    }

    /// `OFFSET(field)` (`struct.member`), in bytes.
    pub fn offset(&self, field: &str) -> Option<u64> {
        parse_number(self.get(&format!("OFFSET({field})"))?).and_then(|n| u64::try_from(n).ok())
    }

    /// `SIZE(name)`, in bytes.
    pub fn size(&self, name: &str) -> Option<u64> {
        parse_number(self.get(&format!("SIZE({name})"))?).and_then(|n| u64::try_from(n).ok())
    }

    /// `LENGTH(name)`.
    pub fn length(&self, name: &str) -> Option<u64> {
        parse_number(self.get(&format!("LENGTH({name})"))?).and_then(|n| u64::try_from(n).ok())
    }

    /// Adds the entries of `other` that this one does not have.
    fn merge(&mut self, other: VmcoreInfo) {
        for (k, v) in other.entries {
            self.entries.entry(k).or_insert(v);
        }
    }

    /// `KERNELOFFSET`: KASLR's offset of the kernel image (0 when absent).
    pub fn kernel_offset(&self) -> u64 {
        self.get("KERNELOFFSET")
            .and_then(|v| u64::from_str_radix(v.trim_start_matches("0x"), 16).ok())
            .unwrap_or(0)
    }
}

/// One `PT_LOAD` of the core.
#[derive(Debug, Clone, Copy)]
struct Segment {
    offset: u64,
    vaddr: u64,
    paddr: u64,
    filesz: u64,
    memsz: u64,
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

/// A kernel image (`-N`): its build ID and symbol table.
#[derive(Debug, Default)]
struct KernelImage {
    path: PathBuf,
    build_id: Option<String>,
    symbols: HashMap<String, u64>,
}

/// An opened core: the file, its segments and its vmcoreinfo.
#[derive(Debug)]
pub struct Core {
    path: PathBuf,
    file: File,
    len: u64,
    arch: Arch,
    segments: Vec<Segment>,
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

fn u16_at(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([b[off], b[off + 1]])
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

/// The text of a C string in `b`: up to the first NUL, lossy UTF-8.
fn c_string(b: &[u8]) -> String {
    let n = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..n]).into_owned()
}

/// Rounds up to a multiple of 4 (ELF note alignment).
fn align4(n: u64) -> u64 {
    n.saturating_add(3) & !3
}

/// The notes in `data`: (name, type, descriptor).
fn notes(data: &[u8]) -> Vec<(String, u32, &[u8])> {
    let mut out = Vec::new();
    let mut off = 0u64;
    let len = data.len() as u64;
    while off + 12 <= len {
        let o = off as usize;
        let namesz = u64::from(u32_at(data, o));
        let descsz = u64::from(u32_at(data, o + 4));
        let ntype = u32_at(data, o + 8);
        let name_at = off + 12;
        let desc_at = name_at.saturating_add(align4(namesz));
        let end = desc_at.saturating_add(align4(descsz));
        if desc_at.saturating_add(descsz) > len {
            break;
        }
        let name = c_string(&data[name_at as usize..(name_at + namesz) as usize]);
        out.push((
            name,
            ntype,
            &data[desc_at as usize..(desc_at + descsz) as usize],
        ));
        off = end;
    }
    out
}

/// The ELF header's fields that are read, after the checks common to cores and images.
struct Ehdr {
    etype: u16,
    machine: u16,
    phoff: u64,
    phnum: u64,
    shoff: u64,
    shnum: u64,
}

/// Reads `len` bytes at `off` of `file` (of `file_len` bytes), or `None` past its end.
fn read_file_at(file: &File, file_len: u64, off: u64, len: u64) -> Option<Vec<u8>> {
    if off.checked_add(len)? > file_len {
        return None;
    }
    let mut buf = vec![0u8; usize::try_from(len).ok()?];
    file.read_exact_at(&mut buf, off).ok()?;
    Some(buf)
}

/// Reads and checks the ELF header of `file`: ELF64, little-endian, one of [`Arch`].
fn read_ehdr(file: &File, len: u64, what: &Path) -> Result<Ehdr> {
    let bad = |why: &str| Error::Kvm(format!("{}: {why}", what.display()));
    let h = read_file_at(file, len, 0, EHDR_SIZE as u64)
        .ok_or_else(|| bad("not an ELF file (shorter than an ELF header)"))?;
    if &h[..4] != b"\x7fELF" {
        return Err(bad("not an ELF file"));
    }
    if h[4] != 2 || h[5] != 1 {
        return Err(bad("not a 64-bit little-endian ELF file"));
    }
    let machine = u16_at(&h, 18);
    if machine != EM_X86_64 && machine != EM_AARCH64 {
        return Err(bad(&format!(
            "ELF machine {machine}: only x86_64 and arm64 are read"
        )));
    }
    let mut e = Ehdr {
        etype: u16_at(&h, 16),
        machine,
        phoff: u64_at(&h, 32),
        phnum: u64::from(u16_at(&h, 56)),
        shoff: u64_at(&h, 40),
        shnum: u64::from(u16_at(&h, 60)),
    };
    if usize::from(u16_at(&h, 54)) != PHDR_SIZE && e.phnum != 0 {
        return Err(bad("program headers of an unexpected size"));
    }
    if e.shnum != 0 && usize::from(u16_at(&h, 58)) != SHDR_SIZE {
        return Err(bad("section headers of an unexpected size"));
    }
    if e.phnum == u64::from(PN_XNUM) || (e.shnum == 0 && e.shoff != 0) {
        // The real counts are in section header 0 (sh_info, sh_size).
        let s0 = read_file_at(file, len, e.shoff, SHDR_SIZE as u64)
            .ok_or_else(|| bad("section header 0 is past the end of the file"))?;
        if e.phnum == u64::from(PN_XNUM) {
            e.phnum = u64::from(u32_at(&s0, 44));
        }
        if e.shnum == 0 {
            e.shnum = u64_at(&s0, 32);
        }
    }
    Ok(e)
}

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
        let file = File::open(core).map_err(|e| Error::from_io(core, e))?;
        // /proc/kcore reports a size of its own (the highest address); a
        // regular file's is its length.
        let len = file.metadata().map_err(|e| Error::from_io(core, e))?.len();
        let bad = |why: String| Error::Kvm(format!("{}: {why}", core.display()));
        let e = read_ehdr(&file, len, core)?;
        if e.etype != ET_CORE {
            return Err(bad(format!(
                "not a core file (ELF type {}; a kernel image goes with -N)",
                e.etype
            )));
        }
        let arch = if e.machine == EM_X86_64 {
            Arch::X86_64
        } else {
            Arch::Aarch64
        };
        if e.phnum == 0 || e.phnum > MAX_PHNUM {
            return Err(bad(format!("{} program headers", e.phnum)));
        }
        let phdrs = read_file_at(&file, len, e.phoff, e.phnum * PHDR_SIZE as u64)
            .ok_or_else(|| bad("the program headers are past the end of the file".into()))?;
        let mut segments = Vec::new();
        let mut vmcoreinfo = None;
        let mut note_bytes = 0u64;
        for ph in phdrs.chunks_exact(PHDR_SIZE) {
            let ptype = u32_at(ph, 0);
            let offset = u64_at(ph, 8);
            let filesz = u64_at(ph, 32);
            match ptype {
                PT_LOAD => segments.push(Segment {
                    offset,
                    vaddr: u64_at(ph, 16),
                    paddr: u64_at(ph, 24),
                    filesz,
                    memsz: u64_at(ph, 40),
                }),
                PT_NOTE if vmcoreinfo.is_none() => {
                    note_bytes = note_bytes.saturating_add(filesz);
                    if note_bytes > MAX_NOTES {
                        return Err(bad("more notes than a core has".into()));
                    }
                    let data = read_file_at(&file, len, offset, filesz)
                        .ok_or_else(|| bad("a note segment is past the end of the file".into()))?;
                    for (name, _, desc) in notes(&data) {
                        if name == "VMCOREINFO" {
                            vmcoreinfo = Some(VmcoreInfo::parse(&String::from_utf8_lossy(desc)));
                            break;
                        }
                    }
                }
                _ => {}
            }
        }
        let vmcoreinfo = vmcoreinfo.ok_or_else(|| {
            bad(concat!(
                "no VMCOREINFO note (a kernel without CONFIG_VMCORE_INFO, or, from QEMU, ",
                "a guest without -device vmcoreinfo or CONFIG_FW_CFG_SYSFS)"
            )
            .into())
        })?;
        let kernel = match kernel {
            Some(k) => Some(KernelImage::read(k, e.machine, &vmcoreinfo, core)?),
            None => None,
        };
        let walker = Walker::new(arch, &vmcoreinfo);
        Ok(Core {
            path: core.to_path_buf(),
            file,
            len,
            arch,
            segments,
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

    /// The runtime address of `name`: `SYMBOL(name)` of the vmcoreinfo, or
    /// the kernel image's symbol plus `KERNELOFFSET`.
    ///
    /// # Errors
    ///
    /// [`Error::KvmNoSymbol`] when neither has it.
    pub fn symbol(&self, name: &str) -> Result<u64> {
        if let Some(a) = self.vmcoreinfo.symbol(name) {
            return Ok(a);
        }
        if let Some(a) = self.kernel.as_ref().and_then(|k| k.symbols.get(name)) {
            return Ok(a.wrapping_add(self.vmcoreinfo.kernel_offset()));
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

    /// Reads from the file at `off`, `buf.len()` bytes.
    fn read_file(&self, off: u64, buf: &mut [u8]) -> bool {
        off.checked_add(buf.len() as u64)
            .is_some_and(|end| end <= self.len)
            && self.file.read_exact_at(buf, off).is_ok()
    }

    /// Reads from a segment found by `addr_of` (its virtual or its physical
    /// address) at `addr`, as much as that segment holds (at least 1 byte):
    /// the bytes read, or `None`.
    fn read_segment(&self, addr: u64, buf: &mut [u8], physical: bool) -> Option<usize> {
        let s = self.segments.iter().find(|s| {
            let base = if physical { s.paddr } else { s.vaddr };
            addr >= base && addr - base < s.memsz
        })?;
        let base = if physical { s.paddr } else { s.vaddr };
        let at = addr - base;
        let n = usize::try_from((s.memsz - at).min(buf.len() as u64)).ok()?;
        // The part past p_filesz is zeros (ELF).
        let in_file = usize::try_from(s.filesz.saturating_sub(at))
            .unwrap_or(usize::MAX)
            .min(n);
        if in_file > 0 && !self.read_file(s.offset.checked_add(at)?, &mut buf[..in_file]) {
            return None;
        }
        buf[in_file..n].fill(0);
        Some(n)
    }

    /// Reads physical memory.
    fn read_phys(&self, pa: u64, buf: &mut [u8]) -> bool {
        let mut done = 0;
        while done < buf.len() {
            match self.read_segment(pa.wrapping_add(done as u64), &mut buf[done..], true) {
                Some(n) if n > 0 => done += n,
                _ => return false,
            }
        }
        true
    }

    /// Reads kernel virtual memory at `va`.
    ///
    /// # Errors
    ///
    /// [`Error::KvmShortRead`] when a byte of it is in no segment of the
    /// core (or past the end of a truncated file), [`Error::Kvm`] when an
    /// address must be translated and the vmcoreinfo lacks what for.
    pub fn read(&self, va: u64, buf: &mut [u8]) -> Result<()> {
        let mut done = 0;
        while done < buf.len() {
            let a = va.wrapping_add(done as u64);
            // A kernel address in a segment with virtual addresses (/proc/kcore).
            let n = if a >> 63 == 1 {
                self.read_segment(a, &mut buf[done..], false)
            } else {
                None
            };
            let n = match n {
                Some(n) if n > 0 => n,
                _ => {
                    let w = self.walker.as_ref().map_err(|e| Error::Kvm(e.clone()))?;
                    let (pa, page) = w
                        .translate(self, a)
                        .ok_or_else(|| self.short(va, buf.len()))?;
                    let n = usize::try_from(page - (a & (page - 1)))
                        .unwrap_or(usize::MAX)
                        .min(buf.len() - done);
                    if !self.read_phys(pa, &mut buf[done..done + n]) {
                        return Err(self.short(va, buf.len()));
                    }
                    n
                }
            };
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
    fn layout(&self, what: &str, v: Option<u64>) -> Result<u64> {
        v.ok_or_else(|| Error::KvmNoSymbol {
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
    /// its types follow another stream version, [`Error::KvmShortRead`]
    /// when a part of them is not in the core, [`Error::Kvm`] for a
    /// registry that is corrupt (a list that loops, a type of an impossible
    /// size).
    pub fn read_malloc(&self) -> Result<KvmMalloc> {
        let vi = &self.malloc_vmcoreinfo()?;
        let symbol = |name: &str| match vi.symbol(name) {
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
        let version = self.layout(
            "NUMBER(MALLOC_TYPE_STREAM_VERSION)",
            vi.number("MALLOC_TYPE_STREAM_VERSION"),
        )?;
        if version != u64::from(STREAM_VERSION) {
            return Err(Error::Version {
                found: u32::try_from(version).unwrap_or(u32::MAX),
                expected: STREAM_VERSION,
            });
        }
        let off = |f: &str| self.layout(&format!("OFFSET({f})"), vi.offset(f));
        let type_size = self.layout("SIZE(malloc_type)", vi.size("malloc_type"))?;
        let stats_size = self.layout("SIZE(malloc_type_stats)", vi.size("malloc_type_stats"))?;
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
            vi.number("MALLOC_TYPE_EV_PEAK"),
        )?;
        let fields = [
            o_name, o_zone, o_flags, o_stats, o_id, o_list, o_events, o_owner, o_peak,
        ];
        if type_size > MAX_STRUCT
            || fields.iter().any(|&o| o.saturating_add(8) > type_size)
            || !(48..=MAX_STRUCT).contains(&stats_size)
        {
            return Err(Error::Kvm(format!(
                "{}: the vmcoreinfo gives an impossible layout of struct malloc_type",
                self.path.display()
            )));
        }
        let ncpus = self.layout(
            "NUMBER(MALLOC_TYPE_NR_CPU_IDS)",
            vi.number("MALLOC_TYPE_NR_CPU_IDS"),
        )?;
        if ncpus == 0 || ncpus > MAX_CPUS {
            return Err(Error::Kvm(format!(
                "{}: {ncpus} CPU ids in the vmcoreinfo",
                self.path.display()
            )));
        }
        let (offsets, possible) = self.percpu(
            ncpus,
            symbol("__per_cpu_offset"),
            symbol("__cpu_possible_mask"),
        )?;
        let numzones = u32::try_from(vi.number("MALLOC_TYPE_NUMZONES").unwrap_or(1)).unwrap_or(1);
        let zones = match vi.get("MALLOC_TYPE_ZONE_SIZES") {
            Some(v) => {
                let sizes = v.split(',').filter(|s| !s.is_empty()).map(|s| {
                    s.trim()
                        .parse::<u64>()
                        .map_err(|_| Error::Kvm(format!("MALLOC_TYPE_ZONE_SIZES: {s:?}")))
                });
                ZoneSizes::new_from_kernel(sizes.collect::<Result<Vec<_>>>()?)?
            }
            None => ZoneSizes::default(),
        };

        let mut types = Vec::new();
        let mut seen = HashSet::new();
        let mut node = self.read_u64(head)?;
        let mut rec = vec![0u8; type_size as usize];
        let mut srec = vec![0u8; stats_size as usize];
        while node != head {
            if types.len() >= MAX_TYPES || !seen.insert(node) {
                return Err(Error::Kvm(format!(
                    "{}: the list of malloc types does not come back to its head",
                    self.path.display()
                )));
            }
            let mtp = node.wrapping_sub(o_list);
            self.read(mtp, &mut rec)?;
            let at = |o: u64| u64_at(&rec, o as usize);
            let name = self.read_c_string(at(o_name), MAX_NAME)?;
            let stats = at(o_stats);
            let mut flags = u32_at(&rec, o_flags as usize);
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
            let mut cpus = Vec::with_capacity(ncpus as usize);
            for (cpu, &pcpu) in offsets.iter().enumerate() {
                if !possible[cpu] || stats == 0 {
                    cpus.push(CpuStats::default());
                    continue;
                }
                self.read(stats.wrapping_add(pcpu), &mut srec)?;
                cpus.push(CpuStats {
                    memalloced: u64_at(&srec, 0),
                    memfreed: u64_at(&srec, 8),
                    numallocs: u64_at(&srec, 16),
                    numfrees: u64_at(&srec, 24),
                    size: u64_at(&srec, 32),
                    numfailures: u64_at(&srec, 40),
                });
            }
            types.push(StreamType {
                name,
                id: at(o_id),
                zone: u32_at(&rec, o_zone as usize),
                flags,
                peak,
                owner,
                stats: cpus,
            });
            node = at(o_list);
        }
        // CAST: at most MAX_CPUS.
        let stream = stream::write_stream(ncpus as u32, &types);
        Ok(KvmMalloc {
            stream,
            zones,
            numzones,
        })
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
        let (Some(at), Some(len)) = (
            vi.symbol("malloc_type_vmcoreinfo"),
            vi.length("malloc_type_vmcoreinfo"),
        ) else {
            return Ok(vi);
        };
        if len > MAX_MALLOC_VMCOREINFO {
            return Err(Error::Kvm(format!(
                "{}: LENGTH(malloc_type_vmcoreinfo)={len}",
                self.path.display()
            )));
        }
        let mut text = vec![0u8; len as usize];
        self.read(at, &mut text)?;
        vi.merge(VmcoreInfo::parse(&String::from_utf8_lossy(&text)));
        Ok(vi)
    }

    /// The per-CPU offsets of the `ncpus` CPU ids and whether each is possible,
    /// from the addresses of `__per_cpu_offset` and `__cpu_possible_mask`.
    fn percpu(
        &self,
        ncpus: u64,
        per_cpu_offset: Result<u64>,
        possible_mask: Result<u64>,
    ) -> Result<(Vec<u64>, Vec<bool>)> {
        let n = ncpus as usize;
        let offsets = match per_cpu_offset {
            Ok(a) => {
                let mut b = vec![0u8; n * 8];
                self.read(a, &mut b)?;
                b.chunks_exact(8).map(|c| u64_at(c, 0)).collect()
            }
            // A kernel without SMP: per_cpu_ptr() is the pointer itself.
            Err(_) if ncpus == 1 => vec![0],
            Err(e) => return Err(e),
        };
        let possible = match possible_mask {
            Ok(a) => {
                let mut b = vec![0u8; n.div_ceil(64) * 8];
                self.read(a, &mut b)?;
                (0..n).map(|c| b[c / 8] & (1 << (c % 8)) != 0).collect()
            }
            Err(_) => vec![true; n],
        };
        Ok((offsets, possible))
    }
}

impl Walker {
    /// The walker of the kernel's page tables that the vmcoreinfo describes,
    /// or why there is none.
    fn new(arch: Arch, vi: &VmcoreInfo) -> std::result::Result<Walker, String> {
        let need = |what: &str| format!("the vmcoreinfo has no {what}: cannot translate addresses");
        let pgd = vi
            .symbol("swapper_pg_dir")
            .ok_or_else(|| need("SYMBOL(swapper_pg_dir)"))?;
        match arch {
            Arch::X86_64 => {
                let phys_base = vi
                    .number("phys_base")
                    .ok_or_else(|| need("NUMBER(phys_base)"))?;
                let levels = if vi.number("pgtable_l5_enabled") == Some(1) {
                    5
                } else {
                    4
                };
                Ok(Walker {
                    root: pgd
                        .wrapping_sub(X86_START_KERNEL_MAP)
                        .wrapping_add(phys_base),
                    page_shift: 12,
                    levels,
                    va_bits: 12 + 9 * levels,
                    arch,
                    clear: vi.number("sme_mask").unwrap_or(0),
                    lpa2: false,
                })
            }
            Arch::Aarch64 => {
                let voff = vi
                    .number("kimage_voffset")
                    .ok_or_else(|| need("NUMBER(kimage_voffset)"))?;
                let page = vi
                    .get("PAGESIZE")
                    .and_then(parse_number)
                    .ok_or_else(|| need("PAGESIZE"))?;
                let page_shift = match page {
                    4096 => 12,
                    16384 => 14,
                    65536 => 16,
                    _ => return Err(format!("arm64 pages of {page} bytes are not read")),
                };
                // The kernel half's size in use: TCR_EL1.T1SZ (a kernel built for 52-bit
                // addresses runs with 48 on a CPU without them), or VA_BITS.
                let va_bits = match vi.number("TCR_EL1_T1SZ") {
                    Some(t1sz) if (12..=39).contains(&t1sz) => 64 - t1sz as u32,
                    _ => vi
                        .number("VA_BITS")
                        .ok_or_else(|| need("NUMBER(VA_BITS)"))? as u32,
                };
                if !(36..=52).contains(&va_bits) {
                    return Err(format!("arm64 with {va_bits}-bit addresses is not read"));
                }
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
    fn translate(&self, core: &Core, va: u64) -> Option<(u64, u64)> {
        let bits = self.page_shift - 3;
        let mut table = self.root;
        for level in (0..self.levels).rev() {
            let shift = self.page_shift + bits * level;
            // The top level indexes only what is left of the address bits.
            let index = (va >> shift) & ((1 << bits.min(self.va_bits - shift)) - 1);
            let mut e = [0u8; 8];
            if !core.read_phys(table.wrapping_add(index * 8), &mut e) {
                return None;
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
                return None;
            }
            if leaf {
                let base = addr & !(size - 1);
                return Some((base | (va & (size - 1)), size));
            }
            table = addr & !((1u64 << self.page_shift) - 1);
        }
        None
    }
}

impl KernelImage {
    /// Reads the build ID and the symbols of the kernel image at `path`, and
    /// checks that it is the kernel of the core (`machine`, `vi`).
    fn read(path: &Path, machine: u16, vi: &VmcoreInfo, core: &Path) -> Result<KernelImage> {
        let file = File::open(path).map_err(|e| Error::from_io(path, e))?;
        let len = file.metadata().map_err(|e| Error::from_io(path, e))?.len();
        let bad = |why: String| Error::Kvm(format!("{}: {why}", path.display()));
        let e = read_ehdr(&file, len, path)?;
        if e.etype != ET_EXEC && e.etype != ET_DYN {
            return Err(bad(format!(
                "not a kernel image (ELF type {}; the core goes with -M)",
                e.etype
            )));
        }
        if e.machine != machine {
            return Err(bad(format!(
                "a kernel of another architecture than {}",
                core.display()
            )));
        }
        if e.shnum > 1 << 16 {
            return Err(bad(format!("{} sections", e.shnum)));
        }
        let shdrs = read_file_at(&file, len, e.shoff, e.shnum * SHDR_SIZE as u64)
            .ok_or_else(|| bad("the section headers are past the end of the file".into()))?;
        let shdr = |i: u64| shdrs.chunks_exact(SHDR_SIZE).nth(i as usize);
        let mut img = KernelImage {
            path: path.to_path_buf(),
            ..Default::default()
        };
        for s in shdrs.chunks_exact(SHDR_SIZE) {
            let (stype, off, size, link) = (
                u32_at(s, 4),
                u64_at(s, 24),
                u64_at(s, 32),
                u64::from(u32_at(s, 40)),
            );
            if stype == SHT_NOTE && img.build_id.is_none() && size <= MAX_NOTES {
                if let Some(data) = read_file_at(&file, len, off, size) {
                    img.build_id = notes(&data)
                        .into_iter()
                        .find(|(n, t, _)| n == "GNU" && *t == NT_GNU_BUILD_ID)
                        .map(|(_, _, d)| d.iter().map(|b| format!("{b:02x}")).collect());
                }
            }
            if stype == SHT_SYMTAB && size <= MAX_SYMTAB {
                let strtab =
                    shdr(link).ok_or_else(|| bad("a symbol table without strings".into()))?;
                let (soff, ssize) = (u64_at(strtab, 24), u64_at(strtab, 32));
                let syms = read_file_at(&file, len, off, size);
                let strs = if ssize <= MAX_SYMTAB {
                    read_file_at(&file, len, soff, ssize)
                } else {
                    None
                };
                let (Some(syms), Some(strs)) = (syms, strs) else {
                    return Err(bad("the symbol table is past the end of the file".into()));
                };
                for sym in syms.chunks_exact(SYM_SIZE) {
                    let name = u32_at(sym, 0) as usize;
                    let value = u64_at(sym, 8);
                    if name == 0 || name >= strs.len() || value == 0 {
                        continue;
                    }
                    let n = c_string(&strs[name..]);
                    img.symbols.entry(n).or_insert(value);
                }
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
}
