//! A synthetic kernel and its ELF core, for the tests of `memstat::kvm`: physical memory with
//! the kernel's page tables (x86_64 with 4 or 5 levels and 2 MiB pages, arm64 with 4 or 16 KiB
//! pages), a malloc type registry laid out as `mm/malloc_type.c` has it, per-CPU statistics
//! behind `__per_cpu_offset` (a `struct malloc_type_counters` as the vmcoreinfo describes it,
//! or the older kernels' `struct malloc_type_stats`: [`Record`]), the vmcoreinfo note that
//! describes it all, written either as QEMU's `dump-guest-memory` writes a core (physical
//! segments) or as `/proc/kcore` shows one (virtual segments).

use memstat::stream::CpuStats;

/// The page tables to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paging {
    /// x86_64 with 4 or 5 levels; `huge`: the direct map in 2 MiB pages.
    X86 { levels: u32, huge: bool },
    /// arm64 with pages of `1 << page_shift` bytes and `va_bits`-bit kernel addresses.
    Arm64 { page_shift: u32, va_bits: u32 },
}

/// One type of the synthetic registry.
#[derive(Debug, Clone)]
pub struct TypeSpec {
    pub name: String,
    pub id: u64,
    pub zone: u32,
    pub flags: u32,
    /// `None` for a type whose owner pointer is NULL.
    pub owner: Option<String>,
    /// Some(peak): the type's peak is tracked (`MALLOC_TYPE_EV_PEAK` in `mti_events`).
    pub peak: Option<i64>,
    /// One per CPU id.
    pub stats: Vec<CpuStats>,
    /// Defined in a module: the structure lives in module memory.
    pub in_module: bool,
}

/// The six counters of a per-CPU record, in the stream's order.
pub const COUNTERS: [&str; 6] = [
    "mts_memalloced",
    "mts_memfreed",
    "mts_numallocs",
    "mts_numfrees",
    "mts_size",
    "mts_numfailures",
];

/// How the per-CPU record of a type (what `mti_stats` points to) is laid out, and described in
/// the vmcoreinfo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record {
    /// The kernels before `NUMBER(MALLOC_TYPE_VMCOREINFO_VERSION)`: the record is the stream's
    /// `struct malloc_type_stats`, `SIZE(malloc_type_stats)=64`, the six counters first in the
    /// stream's order, then zeros.
    Legacy,
    /// Version 1: `struct malloc_type_counters` of `size` bytes with the counters (in the
    /// stream's order, [`COUNTERS`]) at `offsets`, its other bytes junk (`0xa5`).
    Counters { size: u64, offsets: [u64; 6] },
}

impl Record {
    /// What `mm/malloc_type.c` writes today: 48 bytes, the counters in the stream's order.
    pub const DEFAULT: Record = Record::Counters {
        size: 48,
        offsets: [0, 8, 16, 24, 32, 40],
    };

    /// The bytes of one record.
    pub fn size(&self) -> u64 {
        match self {
            Record::Legacy => 64,
            Record::Counters { size, .. } => *size,
        }
    }

    /// The offsets of the counters, in the stream's order.
    pub fn offsets(&self) -> [u64; 6] {
        match self {
            Record::Legacy => [0, 8, 16, 24, 32, 40],
            Record::Counters { offsets, .. } => *offsets,
        }
    }

    /// Its vmcoreinfo lines.
    pub fn lines(&self) -> Vec<String> {
        match self {
            Record::Legacy => vec!["SIZE(malloc_type_stats)=64".into()],
            Record::Counters { size, offsets } => {
                let mut v = vec![
                    "NUMBER(MALLOC_TYPE_VMCOREINFO_VERSION)=1".to_string(),
                    format!("SIZE(malloc_type_counters)={size}"),
                ];
                for (f, o) in COUNTERS.iter().zip(offsets) {
                    v.push(format!("OFFSET(malloc_type_counters.{f})={o}"));
                }
                v
            }
        }
    }

    /// The distance between two types' records in the per-CPU area: 64 bytes or more.
    fn stride(&self) -> u64 {
        self.size().max(64).div_ceil(16) * 16
    }
}

struct Region {
    va: u64,
    pa: u64,
    len: u64,
    used: u64,
}

/// The synthetic machine.
pub struct Guest {
    pub paging: Paging,
    pub phys: Vec<u8>,
    next_pa: u64,
    root: u64,
    regions: Vec<Region>,
    /// Lines of the vmcoreinfo note.
    pub vmcoreinfo: Vec<String>,
    /// Structure offsets written to the vmcoreinfo: a test can move fields.
    pub mti_offset: u64,
    pub kernel_offset: u64,
    /// Where the malloc types' lines go in kernel memory, as the kernel keeps them
    /// (`malloc_type_vmcoreinfo[]`), the note pointing to them; `None`: in the note.
    pub malloc_text: Option<u64>,
    /// The types' addresses (their `struct malloc_type`).
    types: Vec<u64>,
}

const X86_MAP: u64 = 0xffff_ffff_8000_0000;

impl Guest {
    /// A machine of `mib` MiB with empty page tables.
    pub fn new(paging: Paging, mib: u64) -> Guest {
        let mut g = Guest {
            paging,
            phys: vec![0; (mib << 20) as usize],
            next_pa: 0x1_0000,
            root: 0,
            regions: Vec::new(),
            vmcoreinfo: Vec::new(),
            mti_offset: 16,
            kernel_offset: 0x1e0_0000,
            malloc_text: None,
            types: Vec::new(),
        };
        g.root = g.table();
        g
    }

    fn page_shift(&self) -> u32 {
        match self.paging {
            Paging::X86 { .. } => 12,
            Paging::Arm64 { page_shift, .. } => page_shift,
        }
    }

    /// A zeroed physical page for a table.
    fn table(&mut self) -> u64 {
        let page = 1u64 << self.page_shift();
        self.next_pa = self.next_pa.div_ceil(page) * page;
        let pa = self.next_pa;
        self.next_pa += page;
        assert!(
            self.next_pa <= self.phys.len() as u64,
            "guest memory exhausted"
        );
        pa
    }

    fn rd(&self, pa: u64) -> u64 {
        u64::from_le_bytes(self.phys[pa as usize..pa as usize + 8].try_into().unwrap())
    }

    fn wr(&mut self, pa: u64, v: u64) {
        self.phys[pa as usize..pa as usize + 8].copy_from_slice(&v.to_le_bytes());
    }

    /// Maps `va` to `pa` with a leaf at `leaf_level` (0: the smallest page).
    fn map_one(&mut self, va: u64, pa: u64, leaf_level: u32) {
        let (page_shift, levels, va_bits) = match self.paging {
            Paging::X86 { levels, .. } => (12, levels, 12 + 9 * levels),
            Paging::Arm64 {
                page_shift,
                va_bits,
            } => (
                page_shift,
                (va_bits - page_shift).div_ceil(page_shift - 3),
                va_bits,
            ),
        };
        let bits = page_shift - 3;
        let mut table = self.root;
        for level in (0..levels).rev() {
            let shift = page_shift + bits * level;
            let index = (va >> shift) & ((1 << bits.min(va_bits - shift)) - 1);
            let slot = table + index * 8;
            if level == leaf_level {
                let e = match self.paging {
                    Paging::X86 { .. } => pa | 0x63 | if level > 0 { 0x80 } else { 0 },
                    // The access flag; inner shareable (bits 9:8) but with FEAT_LPA2,
                    // where those are bits 51:50 of the address.
                    Paging::Arm64 { va_bits, .. } => {
                        let sh = if va_bits > 48 { 0 } else { 0x300 };
                        pa | if level > 0 { 0b01 } else { 0b11 } | 0x400 | sh
                    }
                };
                self.wr(slot, e);
                return;
            }
            let e = self.rd(slot);
            table = if e & 1 == 0 {
                let t = self.table();
                self.wr(slot, t | 0b11);
                t
            } else {
                e & 0x000f_ffff_ffff_f000 & !((1 << page_shift) - 1)
            };
        }
    }

    /// A region of `len` bytes at virtual `va`, mapped to fresh physical memory; with `huge`
    /// (x86 only), in 2 MiB pages.
    pub fn region(&mut self, va: u64, len: u64, huge: bool) {
        let (step, level) = if huge {
            (2 << 20, 1)
        } else {
            (1 << self.page_shift(), 0)
        };
        self.next_pa = self.next_pa.div_ceil(step) * step;
        let pa = self.next_pa;
        let len = len.div_ceil(step) * step;
        self.next_pa += len;
        assert!(
            self.next_pa <= self.phys.len() as u64,
            "guest memory exhausted"
        );
        let mut off = 0;
        while off < len {
            self.map_one(va + off, pa + off, level);
            off += step;
        }
        self.regions.push(Region {
            va,
            pa,
            len,
            used: 0,
        });
    }

    /// The physical address of `va` (from the regions, not from the tables).
    pub fn pa(&self, va: u64) -> u64 {
        let r = self
            .regions
            .iter()
            .find(|r| va >= r.va && va < r.va + r.len)
            .unwrap_or_else(|| panic!("{va:#x} is not mapped"));
        r.pa + (va - r.va)
    }

    /// Allocates `len` bytes, 16-aligned, in region `i`.
    pub fn alloc(&mut self, i: usize, len: u64) -> u64 {
        let r = &mut self.regions[i];
        r.used = r.used.div_ceil(16) * 16;
        let va = r.va + r.used;
        r.used += len;
        assert!(r.used <= r.len, "region {i} is full");
        va
    }

    pub fn write(&mut self, va: u64, bytes: &[u8]) {
        // Byte by byte: an object may cross into another page of its region.
        for (i, b) in bytes.iter().enumerate() {
            let pa = self.pa(va + i as u64) as usize;
            self.phys[pa] = *b;
        }
    }

    pub fn write_u64(&mut self, va: u64, v: u64) {
        self.write(va, &v.to_le_bytes());
    }

    pub fn string(&mut self, region: usize, s: &str) -> u64 {
        let va = self.alloc(region, s.len() as u64 + 1);
        let mut b = s.as_bytes().to_vec();
        b.push(0);
        self.write(va, &b);
        va
    }

    pub fn line(&mut self, l: impl Into<String>) {
        self.vmcoreinfo.push(l.into());
    }

    /// The addresses of the kernel image, the direct map, module memory and the per-CPU
    /// chunk of this architecture.
    fn bases(&self) -> [u64; 4] {
        match self.paging {
            Paging::X86 { levels: 5, .. } => [
                0xffff_ffff_8100_0000 + self.kernel_offset,
                0xff11_0000_0000_0000,
                0xffff_ffff_c000_0000,
                0xffa0_0000_0000_0000,
            ],
            Paging::X86 { .. } => [
                0xffff_ffff_8100_0000 + self.kernel_offset,
                0xffff_8880_0000_0000,
                0xffff_ffff_c000_0000,
                0xffff_c900_0000_0000,
            ],
            Paging::Arm64 { va_bits, .. } => {
                let top = u64::MAX << (va_bits - 1);
                [
                    top + 0x10_0000_0000 + self.kernel_offset,
                    u64::MAX << va_bits,
                    top + 0x0800_0000,
                    top + 0x20_0000_0000,
                ]
            }
        }
    }

    /// Builds a kernel with `types` registered, in that list order, and `ncpus` CPU ids of
    /// which `possible` are possible, and writes the vmcoreinfo that describes it.
    pub fn kernel(types: &[TypeSpec], ncpus: usize, possible: &[bool], paging: Paging) -> Guest {
        Guest::kernel_with_mti(types, ncpus, possible, paging, 16)
    }

    /// [`Guest::kernel`] with `ks_mti` at offset `mti` of `struct malloc_type`.
    pub fn kernel_with_mti(
        types: &[TypeSpec],
        ncpus: usize,
        possible: &[bool],
        paging: Paging,
        mti: u64,
    ) -> Guest {
        Guest::kernel_with(types, ncpus, possible, paging, mti, Record::DEFAULT)
    }

    /// [`Guest::kernel`] with per-CPU records laid out and described as `record` says.
    pub fn kernel_with_record(
        types: &[TypeSpec],
        ncpus: usize,
        possible: &[bool],
        paging: Paging,
        record: Record,
    ) -> Guest {
        Guest::kernel_with(types, ncpus, possible, paging, 16, record)
    }

    /// [`Guest::kernel`] with `ks_mti` at offset `mti` and per-CPU records as `record` says.
    pub fn kernel_with(
        types: &[TypeSpec],
        ncpus: usize,
        possible: &[bool],
        paging: Paging,
        mti: u64,
        record: Record,
    ) -> Guest {
        let mut g = Guest::new(paging, 8);
        g.mti_offset = mti;
        let [image, direct, module, percpu] = g.bases();
        let huge = matches!(paging, Paging::X86 { huge: true, .. });
        g.region(image, 256 << 10, false); // 0: the kernel image
        g.region(direct, 2 << 20, huge); // 1: the direct map
        g.region(module, 256 << 10, false); // 2: module memory
        g.region(percpu, (ncpus as u64) << 16, false); // 3: the per-CPU chunk
                                                       // The top-level table lives in the kernel image, as swapper_pg_dir does: the first
                                                       // page of the image (page-aligned) gets a copy of it, which then is the one walked.
        let size = 1usize << g.page_shift();
        let pgd = g.alloc(0, size as u64);
        let (old, new) = (g.root as usize, g.pa(pgd) as usize);
        let t = g.phys[old..old + size].to_vec();
        g.phys[new..new + size].copy_from_slice(&t);
        g.root = new as u64;

        g.malloc_text = Some(g.alloc(0, 4096));
        let mti = g.mti_offset;
        let type_size = mti + 112;
        let head = g.alloc(0, 16);
        let ncpu_off = g.alloc(0, 8 * ncpus as u64);
        let mask = g.alloc(0, 8 * ncpus.div_ceil(64) as u64);
        let mut bits = vec![0u8; 8 * ncpus.div_ceil(64)];
        for (c, &p) in possible.iter().enumerate() {
            if p {
                bits[c / 8] |= 1 << (c % 8);
            }
        }
        g.write(mask, &bits);
        // The per-CPU pointer P: CPU c's copy is at P + __per_cpu_offset[c].
        let p_base = 0x2_0000u64;
        for c in 0..ncpus {
            g.write_u64(
                ncpu_off + 8 * c as u64,
                percpu + ((c as u64) << 16) - p_base,
            );
        }
        let vmlinux = g.string(0, "vmlinux");
        let mut prev = head;
        let mut nodes = Vec::new();
        for (i, t) in types.iter().enumerate() {
            let region = if t.in_module { 2 } else { 1 };
            let mtp = g.alloc(region, type_size);
            g.types.push(mtp);
            let name = g.string(region, &t.name);
            let owner = match t.owner.as_deref() {
                None => 0,
                Some("vmlinux") => vmlinux,
                Some(o) => g.string(2, o),
            };
            let stride = record.stride();
            let stats = p_base + stride * i as u64;
            for (c, s) in t.stats.iter().enumerate() {
                let at = percpu + ((c as u64) << 16) + stride * i as u64;
                if let Record::Counters { size, .. } = record {
                    // What the record holds besides the counters: not to be read as them.
                    g.write(at, &vec![0xa5; size as usize]);
                }
                for (v, o) in [
                    s.memalloced,
                    s.memfreed,
                    s.numallocs,
                    s.numfrees,
                    s.size,
                    s.numfailures,
                ]
                .iter()
                .zip(record.offsets())
                {
                    g.write_u64(at + o, *v);
                }
            }
            g.write_u64(mtp, name);
            g.write(mtp + mti + 8, &t.zone.to_le_bytes());
            g.write(mtp + mti + 12, &t.flags.to_le_bytes());
            g.write_u64(mtp + mti + 16, stats);
            g.write_u64(mtp + mti + 24, t.id);
            g.write_u64(mtp + mti + 80, if t.peak.is_some() { 2 | 1 } else { 1 });
            g.write_u64(mtp + mti + 88, owner);
            g.write_u64(mtp + mti + 104, t.peak.unwrap_or(-1) as u64);
            let node = mtp + mti + 32;
            g.write_u64(prev, node);
            nodes.push(node);
            prev = node;
        }
        g.write_u64(prev, head);

        let page = 1u64 << g.page_shift();
        g.line("OSRELEASE=7.3.4-test");
        g.line("BUILD-ID=00112233445566778899aabbccddeeff00112233");
        g.line(format!("PAGESIZE={page}"));
        g.line(format!("SYMBOL(swapper_pg_dir)={pgd:x}"));
        match paging {
            Paging::X86 { levels, .. } => {
                let phys_base = g.pa(image).wrapping_sub(image - X86_MAP);
                g.line(format!("NUMBER(phys_base)={}", phys_base as i64));
                g.line(format!(
                    "NUMBER(pgtable_l5_enabled)={}",
                    u32::from(levels == 5)
                ));
            }
            Paging::Arm64 { va_bits, .. } => {
                g.line(format!("NUMBER(VA_BITS)={va_bits}"));
                g.line(format!(
                    "NUMBER(kimage_voffset)=0x{:x}",
                    image.wrapping_sub(g.pa(image))
                ));
                g.line("NUMBER(PHYS_OFFSET)=0x0");
                g.line(format!("NUMBER(TCR_EL1_T1SZ)=0x{:x}", 64 - va_bits));
            }
        }
        g.line(format!("KERNELOFFSET={:x}", g.kernel_offset));
        g.line("NUMBER(MALLOC_TYPE_STREAM_VERSION)=2");
        g.line(format!("SYMBOL(malloc_type_list)={head:x}"));
        g.line(format!("SIZE(malloc_type)={type_size}"));
        g.line("OFFSET(malloc_type.ks_shortdesc)=0");
        g.line(format!("OFFSET(malloc_type.ks_mti)={mti}"));
        for (f, o) in [
            ("mti_zone", 8),
            ("mti_flags", 12),
            ("mti_stats", 16),
            ("mti_id", 24),
            ("mti_list", 32),
            ("mti_events", 80),
            ("mti_owner", 88),
            ("mti_peak", 104),
        ] {
            g.line(format!("OFFSET(malloc_type_internal.{f})={o}"));
        }
        for l in record.lines() {
            g.line(l);
        }
        g.line("NUMBER(MALLOC_TYPE_EV_PEAK)=2");
        g.line(format!("SYMBOL(__per_cpu_offset)={ncpu_off:x}"));
        g.line(format!("SYMBOL(__cpu_possible_mask)={mask:x}"));
        g.line(format!("NUMBER(MALLOC_TYPE_NR_CPU_IDS)={ncpus}"));
        g.line("NUMBER(MALLOC_TYPE_NUMZONES)=1");
        g.line("MALLOC_TYPE_ZONE_SIZES=8,16,32,64,96,128,192,256,512,1024,2048,4096,8192");
        g
    }

    /// Removes the vmcoreinfo lines that start with `prefix`.
    pub fn drop_lines(&mut self, prefix: &str) {
        self.vmcoreinfo.retain(|l| !l.starts_with(prefix));
    }

    /// Replaces the vmcoreinfo line that starts with `prefix`.
    pub fn set_line(&mut self, prefix: &str, line: &str) {
        self.drop_lines(prefix);
        self.line(line);
    }

    /// Whether the kernel keeps line `l` in `malloc_type_vmcoreinfo[]`.
    fn is_malloc_line(l: &str) -> bool {
        [
            "NUMBER(MALLOC_TYPE",
            "SYMBOL(malloc_type_list)",
            "SIZE(malloc_type",
            "OFFSET(malloc_type",
            "SYMBOL(__per_cpu_offset)",
            "SYMBOL(__cpu_possible_mask)",
            "MALLOC_TYPE_ZONE_SIZES",
        ]
        .iter()
        .any(|p| l.starts_with(p))
    }

    /// The vmcoreinfo note's text and the physical memory, with the malloc types' lines in
    /// memory when [`Guest::malloc_text`] says so.
    fn note_and_memory(&self) -> (String, Vec<u8>) {
        let mut phys = self.phys.clone();
        let mut note: Vec<&str> = self.vmcoreinfo.iter().map(String::as_str).collect();
        let mut extra = Vec::new();
        if let Some(at) = self.malloc_text {
            let text: String = note
                .iter()
                .filter(|l| Guest::is_malloc_line(l))
                .map(|l| format!("{l}\n"))
                .collect();
            note.retain(|l| !Guest::is_malloc_line(l));
            for (i, b) in text.bytes().enumerate() {
                phys[self.pa(at + i as u64) as usize] = b;
            }
            // A test's own value of either line stands.
            for l in [
                format!("SYMBOL(malloc_type_vmcoreinfo)={at:x}"),
                format!("LENGTH(malloc_type_vmcoreinfo)={}", text.len()),
            ] {
                let key = &l[..l.find('=').unwrap()];
                if !note.iter().any(|n| n.starts_with(key)) {
                    extra.push(l);
                }
            }
        }
        let mut s = note.join("\n");
        for l in extra {
            s.push('\n');
            s.push_str(&l);
        }
        s.push('\n');
        (s, phys)
    }

    /// The vmcoreinfo note's text.
    pub fn vmcoreinfo_text(&self) -> String {
        self.note_and_memory().0
    }

    /// An ELF core as QEMU's dump-guest-memory writes one: physical memory in two segments
    /// (a hole at `hole`, 64 KiB, that nothing uses), no virtual addresses.
    pub fn physical_core(&self) -> Vec<u8> {
        let (note, phys) = self.note_and_memory();
        let (hole, end) = (0x8000usize, 0x10000usize);
        let segs = vec![
            (0u64, 0u64, phys[..hole].to_vec()),
            (0, end as u64, phys[end..].to_vec()),
        ];
        elf_core(self.machine(), &note, &segs)
    }

    /// An ELF core of physical memory in which pages of zeros take no file bytes, as
    /// makedumpfile leaves them out: one segment per run of pages that are not all zeros,
    /// whose memory goes on (`p_memsz > p_filesz`) over the zeros up to the next run.
    pub fn sparse_core(&self) -> Vec<u8> {
        let (note, phys) = self.note_and_memory();
        let page = 4096;
        let zero = |p: usize| phys[p * page..(p + 1) * page].iter().all(|&b| b == 0);
        let pages = phys.len() / page;
        let mut segs: Vec<Seg> = Vec::new();
        let mut p = 0;
        while p < pages {
            let start = p;
            while p < pages && !zero(p) {
                p += 1;
            }
            let data_end = p;
            while p < pages && zero(p) {
                p += 1;
            }
            segs.push(Seg {
                vaddr: 0,
                paddr: (start * page) as u64,
                bytes: phys[start * page..data_end * page].to_vec(),
                memsz: ((p - start) * page) as u64,
            });
        }
        elf_core_segs(self.machine(), &note, &segs)
    }

    /// The addresses of the types' `struct malloc_type`, in list order.
    pub fn type_addrs(&self) -> &[u64] {
        &self.types
    }

    /// An ELF core as /proc/kcore shows one: one segment per region at its virtual address.
    pub fn virtual_core(&self) -> Vec<u8> {
        let (note, phys) = self.note_and_memory();
        let segs = self
            .regions
            .iter()
            .map(|r| {
                (
                    r.va,
                    r.pa,
                    phys[r.pa as usize..(r.pa + r.len) as usize].to_vec(),
                )
            })
            .collect::<Vec<_>>();
        elf_core(self.machine(), &note, &segs)
    }

    pub fn machine(&self) -> u16 {
        match self.paging {
            Paging::X86 { .. } => 62,
            Paging::Arm64 { .. } => 183,
        }
    }
}

/// A sparse core (x86_64, zero pages take no file bytes) of `ntypes` types on `ncpus` CPU ids: the
/// possible CPUs `possible` (or, with `None`, no `__cpu_possible_mask`: all), the per-CPU
/// offsets `offsets` (by CPU; the others 0), and the types' statistics in zeros.
pub fn registry_core(
    ntypes: u64,
    ncpus: u64,
    possible: Option<&[u64]>,
    offsets: &[(u64, u64)],
) -> Vec<u8> {
    registry_core_with(Record::DEFAULT, ntypes, ncpus, possible, offsets)
}

/// [`registry_core`] with per-CPU records laid out and described as `record` says.
pub fn registry_core_with(
    record: Record,
    ntypes: u64,
    ncpus: u64,
    possible: Option<&[u64]>,
    offsets: &[(u64, u64)],
) -> Vec<u8> {
    let types: Vec<TypeSpec> = (0..ntypes)
        .map(|i| TypeSpec {
            name: format!("type{i}"),
            id: i,
            zone: 0,
            flags: 0,
            owner: Some("vmlinux".into()),
            peak: None,
            stats: vec![super::cpu(64, 0, 1, 0, 1 << 3)],
            in_module: false,
        })
        .collect();
    let mut g = Guest::kernel_with_record(
        &types,
        1,
        &[true],
        Paging::X86 {
            levels: 4,
            huge: false,
        },
        record,
    );
    // Zeros in the direct map: the per-CPU offsets, the possible mask, the statistics.
    let stride = record.stride();
    let table = g.alloc(1, 8 * ncpus);
    let mask = g.alloc(1, ncpus.div_ceil(64) * 8);
    let stats = g.alloc(1, stride * ntypes);
    let addrs = g.type_addrs().to_vec();
    for (i, mtp) in addrs.into_iter().enumerate() {
        g.write_u64(mtp + g.mti_offset + 16, stats + stride * i as u64);
    }
    for &c in possible.unwrap_or(&[]) {
        let at = mask + c / 8;
        let b = g.phys[g.pa(at) as usize] | 1 << (c % 8);
        g.write(at, &[b]);
    }
    for &(c, off) in offsets {
        g.write_u64(table + 8 * c, off);
    }
    g.set_line(
        "NUMBER(MALLOC_TYPE_NR_CPU_IDS)",
        &format!("NUMBER(MALLOC_TYPE_NR_CPU_IDS)={ncpus}"),
    );
    g.set_line(
        "SYMBOL(__per_cpu_offset)",
        &format!("SYMBOL(__per_cpu_offset)={table:x}"),
    );
    if possible.is_none() {
        g.drop_lines("SYMBOL(__cpu_possible_mask)");
    } else {
        g.set_line(
            "SYMBOL(__cpu_possible_mask)",
            &format!("SYMBOL(__cpu_possible_mask)={mask:x}"),
        );
    }
    g.sparse_core()
}

/// A program header of an ELF64 file, as the tests change them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Phdr {
    pub p_type: u32,
    pub offset: u64,
    pub vaddr: u64,
    pub paddr: u64,
    pub filesz: u64,
    pub memsz: u64,
}

/// Program header `i` of the ELF64 file `elf`.
pub fn phdr(elf: &[u8], i: usize) -> Phdr {
    let phoff = u64::from_le_bytes(elf[32..40].try_into().unwrap()) as usize;
    let p = &elf[phoff + 56 * i..][..56];
    let q = |o: usize| u64::from_le_bytes(p[o..o + 8].try_into().unwrap());
    Phdr {
        p_type: u32::from_le_bytes(p[0..4].try_into().unwrap()),
        offset: q(8),
        vaddr: q(16),
        paddr: q(24),
        filesz: q(32),
        memsz: q(40),
    }
}

/// Writes program header `i` of the ELF64 file `elf`.
pub fn set_phdr(elf: &mut [u8], i: usize, h: Phdr) {
    let phoff = u64::from_le_bytes(elf[32..40].try_into().unwrap()) as usize;
    let p = &mut elf[phoff + 56 * i..][..56];
    p[0..4].copy_from_slice(&h.p_type.to_le_bytes());
    for (o, v) in [
        (8, h.offset),
        (16, h.vaddr),
        (24, h.paddr),
        (32, h.filesz),
        (40, h.memsz),
    ] {
        p[o..o + 8].copy_from_slice(&v.to_le_bytes());
    }
}

/// The number of program headers of the ELF64 file `elf` (`e_phnum`).
pub fn phnum(elf: &[u8]) -> usize {
    usize::from(u16::from_le_bytes([elf[56], elf[57]]))
}

fn note(name: &str, ntype: u32, desc: &[u8]) -> Vec<u8> {
    let mut n = Vec::new();
    n.extend_from_slice(&(name.len() as u32 + 1).to_le_bytes());
    n.extend_from_slice(&(desc.len() as u32).to_le_bytes());
    n.extend_from_slice(&ntype.to_le_bytes());
    n.extend_from_slice(name.as_bytes());
    n.push(0);
    while n.len() % 4 != 0 {
        n.push(0);
    }
    n.extend_from_slice(desc);
    while n.len() % 4 != 0 {
        n.push(0);
    }
    n
}

fn ehdr(etype: u16, machine: u16, phnum: u16, shoff: u64, shnum: u16) -> Vec<u8> {
    let mut h = vec![0u8; 64];
    h[..4].copy_from_slice(b"\x7fELF");
    h[4] = 2;
    h[5] = 1;
    h[6] = 1;
    h[16..18].copy_from_slice(&etype.to_le_bytes());
    h[18..20].copy_from_slice(&machine.to_le_bytes());
    h[20..24].copy_from_slice(&1u32.to_le_bytes());
    h[32..40].copy_from_slice(&64u64.to_le_bytes());
    h[40..48].copy_from_slice(&shoff.to_le_bytes());
    h[52..54].copy_from_slice(&64u16.to_le_bytes());
    h[54..56].copy_from_slice(&56u16.to_le_bytes());
    h[56..58].copy_from_slice(&phnum.to_le_bytes());
    h[58..60].copy_from_slice(&64u16.to_le_bytes());
    h[60..62].copy_from_slice(&shnum.to_le_bytes());
    h
}

/// One `PT_LOAD` to write: its addresses, its bytes in the file, and its size in memory (at
/// least `bytes.len()`; the rest reads as zeros).
pub struct Seg {
    pub vaddr: u64,
    pub paddr: u64,
    pub bytes: Vec<u8>,
    pub memsz: u64,
}

/// An ELF core: a CPU note and the VMCOREINFO note (when `vmcoreinfo` is not empty) in one
/// PT_NOTE, then one PT_LOAD per (vaddr, paddr, bytes).
pub fn elf_core(machine: u16, vmcoreinfo: &str, segs: &[(u64, u64, Vec<u8>)]) -> Vec<u8> {
    let segs: Vec<Seg> = segs
        .iter()
        .map(|(vaddr, paddr, bytes)| Seg {
            vaddr: *vaddr,
            paddr: *paddr,
            bytes: bytes.clone(),
            memsz: bytes.len() as u64,
        })
        .collect();
    elf_core_segs(machine, vmcoreinfo, &segs)
}

/// [`elf_core`] with segments whose memory may be larger than their bytes in the file.
pub fn elf_core_segs(machine: u16, vmcoreinfo: &str, segs: &[Seg]) -> Vec<u8> {
    let mut notes = note("CORE", 1, &[0u8; 336]);
    if !vmcoreinfo.is_empty() {
        notes.extend(note("VMCOREINFO", 0, vmcoreinfo.as_bytes()));
    }
    let phnum = 1 + segs.len();
    let mut out = ehdr(4, machine, phnum as u16, 0, 0);
    let mut data_off = 64 + 56 * phnum as u64;
    let mut phdrs = Vec::new();
    let mut ph = |ptype: u32, off: u64, va: u64, pa: u64, len: u64, memsz: u64| {
        let mut p = vec![0u8; 56];
        p[0..4].copy_from_slice(&ptype.to_le_bytes());
        p[8..16].copy_from_slice(&off.to_le_bytes());
        p[16..24].copy_from_slice(&va.to_le_bytes());
        p[24..32].copy_from_slice(&pa.to_le_bytes());
        p[32..40].copy_from_slice(&len.to_le_bytes());
        p[40..48].copy_from_slice(&memsz.to_le_bytes());
        phdrs.extend(p);
    };
    let n = notes.len() as u64;
    ph(4, data_off, 0, 0, n, n);
    data_off += n;
    for s in segs {
        assert!(s.memsz >= s.bytes.len() as u64);
        ph(1, data_off, s.vaddr, s.paddr, s.bytes.len() as u64, s.memsz);
        data_off += s.bytes.len() as u64;
    }
    out.extend(phdrs);
    out.extend(notes);
    for s in segs {
        out.extend_from_slice(&s.bytes);
    }
    out
}

/// A kernel image (ET_EXEC) with a GNU build ID note and a symbol table of `symbols`.
pub fn elf_image(machine: u16, build_id: &[u8], symbols: &[(&str, u64)]) -> Vec<u8> {
    let bid = note("GNU", 3, build_id);
    let mut strtab = vec![0u8];
    let mut symtab = vec![0u8; 24];
    for (name, value) in symbols {
        let mut s = vec![0u8; 24];
        s[0..4].copy_from_slice(&(strtab.len() as u32).to_le_bytes());
        s[4] = 1; // STT_OBJECT
        s[8..16].copy_from_slice(&value.to_le_bytes());
        symtab.extend(s);
        strtab.extend_from_slice(name.as_bytes());
        strtab.push(0);
    }
    let data_off = 64u64;
    let bid_off = data_off;
    let sym_off = bid_off + bid.len() as u64;
    let str_off = sym_off + symtab.len() as u64;
    let shoff = str_off + strtab.len() as u64;
    let mut out = ehdr(2, machine, 0, shoff, 4);
    out.extend(&bid);
    out.extend(&symtab);
    out.extend(&strtab);
    let mut sh = |stype: u32, off: u64, size: u64, link: u32| {
        let mut s = vec![0u8; 64];
        s[4..8].copy_from_slice(&stype.to_le_bytes());
        s[24..32].copy_from_slice(&off.to_le_bytes());
        s[32..40].copy_from_slice(&size.to_le_bytes());
        s[40..44].copy_from_slice(&link.to_le_bytes());
        s[56..64].copy_from_slice(&24u64.to_le_bytes());
        out.extend(s);
    };
    sh(0, 0, 0, 0);
    sh(7, bid_off, bid.len() as u64, 0);
    sh(2, sym_off, symtab.len() as u64, 3);
    sh(3, str_off, strtab.len() as u64, 0);
    out
}
