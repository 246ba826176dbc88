// SPDX-License-Identifier: GPL-2.0

//! Malloc type statistics for userspace.
//!
//! - `/proc/malloc_types`: a table for people with the columns of FreeBSD's `vmstat -m` (Type,
//!   InUse, MemUse, Requests, Size(s)) and the type's zone, failures, peak and owner, behind a
//!   version line, as `/proc/slabinfo` and `/proc/allocinfo` are.
//! - `/proc/malloc_stats` (the binary stream for programs, laid out as FreeBSD's
//!   `kern.malloc_stats` sysctl) is made as it is read, in C: `mm/malloc_type_stream.c`.
//! - sysctls `kernel.malloc_count`, `vm.malloc_zone_count`, `vm.malloc_zone_sizes` and
//!   `vm.malloc_numzones`.
//!
//! Both files are readable by root only: they reveal the heap's layout.
//!
//! See `Documentation/core-api/malloc_types.rst`.

use core::{
    fmt::{
        self,
        Write, //
    },
    mem::MaybeUninit, //
};
use kernel::{
    malloc_type::{
        self,
        MallocType,
        Stats, //
    },
    prelude::*,
    proc_fs::{
        SingleFile,
        SingleShow, //
    },
    seq_file::SeqFile,
    sysctl::{
        self,
        ro_ints,
        IntValues,
        ReadInts, //
    }, //
};

module! {
    type: MallocTypeProc,
    name: "malloc_type_proc",
    authors: ["Seed b810a448 maintainers <maintainers@users.noreply.a-seed-b810a448.example>"],
    description: "Malloc type statistics in /proc and sysctls",
    license: "GPL",
}

/// Version of the `/proc/malloc_types` format, printed on its first line.
///
/// 1.1 added the columns Fails, HighUse and Owner after Zone.
const TYPES_VERSION: &str = "1.1";

struct MallocTypeProc {
    _types: SingleFile<TypesFile>,
    _kernel: sysctl::Registration,
    _vm: sysctl::Registration,
}

/// The sysctls under `/proc/sys/kernel`.
static KERNEL_TABLE: [sysctl::Entry; 1] = [ro_ints::<MallocCount>(c"malloc_count")];

/// The sysctls under `/proc/sys/vm`.
static VM_TABLE: [sysctl::Entry; 3] = [
    ro_ints::<ZoneCount>(c"malloc_zone_count"),
    ro_ints::<ZoneSizes>(c"malloc_zone_sizes"),
    ro_ints::<NumZones>(c"malloc_numzones"),
];

impl kernel::Module for MallocTypeProc {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        Ok(Self {
            _types: SingleFile::new(c"malloc_types", 0o400)?,
            _kernel: sysctl::Registration::register(c"kernel", &KERNEL_TABLE)?,
            _vm: sysctl::Registration::register(c"vm", &VM_TABLE)?,
        })
    }
}

/// Where the files' contents go: the seq_file of a reader, or a buffer in the tests.
///
/// Readers write straight into the seq_file, so that reading the files allocates nothing that
/// the files themselves count (Rust allocations are charged to the type "rust kmalloc").
trait Sink: Write {
    /// Appends `bytes`.
    fn put(&mut self, bytes: &[u8]) -> Result;
}

/// The seq_file of a reader.
struct SeqOut<'a>(&'a SeqFile);

impl Write for SeqOut<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.write(s.as_bytes());
        Ok(())
    }
}

impl Sink for SeqOut<'_> {
    fn put(&mut self, bytes: &[u8]) -> Result {
        self.0.write(bytes);
        Ok(())
    }
}

/// Writes the header of `/proc/malloc_types`: the version line and the legend.
fn write_types_header(out: &mut impl Write) -> fmt::Result {
    write!(out, "malloc_types - version: {TYPES_VERSION}\n")?;
    write!(
        out,
        "# {:>11} {:>5} {:>6} {:>8} {:>4} {:>5} {:>7} {:<12}  {}\n",
        "Type", "InUse", "MemUse", "Requests", "Zone", "Fails", "HighUse", "Owner", "Size(s)"
    )
}

/// The longest row of `/proc/malloc_types`: the text form of a name of [`malloc_type::NAME_MAX`]
/// bytes (four bytes each, 124), the columns with 20-digit counters, an owner of
/// [`malloc_type::OWNER_MAX`] bytes, and every size class: about 400 bytes.
const ROW_MAX: usize = 512;

/// A row of `/proc/malloc_types`, built in a stack buffer so that it reaches the seq_file in
/// one write, without `core::fmt`'s per-argument machinery (which cost two thirds of a read).
///
/// The buffer is the caller's, borrowed: a `Row` that owned it was zeroed whole for every row
/// (LLVM turned the move of a struct whose buffer was uninitialized into a `memset()` of its
/// [`ROW_MAX`] bytes, which cost more than the rest of a row). The pieces of a row are written
/// in place: a piece of a size known at compile time, padding and digits are a few stores each,
/// not a call to `memcpy()` (which copies byte by byte, and which a row made twenty times).
///
/// # Invariants
///
/// The first `len` bytes of `buf` are initialized, and `len <= ROW_MAX`.
struct Row<'a> {
    buf: &'a mut [MaybeUninit<u8>; ROW_MAX],
    len: usize,
}

/// The spaces a [`Row`] writes at once for the padding of a column (past the padding, up to the
/// end of the chunk, the next piece overwrites them).
const PAD_CHUNK: usize = 16;

impl<'a> Row<'a> {
    fn new(buf: &'a mut [MaybeUninit<u8>; ROW_MAX]) -> Self {
        // INVARIANT: No byte is claimed to be initialized.
        Self { buf, len: 0 }
    }

    /// Appends `b`; what does not fit is dropped (no row comes near [`ROW_MAX`]).
    #[inline(always)]
    fn push(&mut self, b: &[u8]) {
        // By the type invariant `len <= ROW_MAX`: this does not wrap.
        if b.len() > ROW_MAX - self.len {
            self.push_truncated(b);
            return;
        }
        // SAFETY: `self.len + b.len() <= ROW_MAX` (type invariant and the test above), so the
        // destination is within `buf`, which `b`, a shared borrow, cannot overlap; `b` is valid
        // for reads of its length. For a `b` of a length known at compile time the copy is a
        // few moves.
        unsafe {
            core::ptr::copy_nonoverlapping(
                b.as_ptr(),
                self.buf.as_mut_ptr().cast::<u8>().add(self.len),
                b.len(),
            )
        };
        // INVARIANT: The `b.len()` bytes after the first `len` were just written.
        self.len += b.len();
    }

    /// Appends what fits of `b`.
    #[cold]
    fn push_truncated(&mut self, b: &[u8]) {
        // By the type invariant `len <= ROW_MAX`: this does not wrap.
        let n = b.len().min(ROW_MAX - self.len);
        for (slot, &c) in self.buf[self.len..self.len + n].iter_mut().zip(b) {
            slot.write(c);
        }
        // INVARIANT: The `n` bytes after the first `len` were just written, and
        // `len + n <= ROW_MAX`.
        self.len += n;
    }

    /// Appends `n` spaces.
    #[inline(always)]
    fn spaces(&mut self, n: usize) {
        const SPACES: [u8; PAD_CHUNK] = [b' '; PAD_CHUNK];
        // The padding of a column, with room for a whole chunk: two stores. Not a loop, which
        // LLVM would make a call to `memset()` of `n` bytes.
        if n <= PAD_CHUNK && ROW_MAX - self.len >= PAD_CHUNK {
            // SAFETY: `self.len + PAD_CHUNK <= ROW_MAX` (just checked), so the destination is
            // within `buf`; `SPACES` is a distinct constant.
            unsafe {
                core::ptr::copy_nonoverlapping(
                    SPACES.as_ptr(),
                    self.buf.as_mut_ptr().cast::<u8>().add(self.len),
                    PAD_CHUNK,
                )
            };
            // INVARIANT: `n <= PAD_CHUNK` bytes after the first `len` were just written.
            self.len += n;
        } else {
            self.spaces_slow(n);
        }
    }

    /// [`Row::spaces`] for wide padding or a row near its end.
    #[cold]
    fn spaces_slow(&mut self, n: usize) {
        let end = self.len.saturating_add(n).min(ROW_MAX);
        for slot in &mut self.buf[self.len..end] {
            slot.write(b' ');
        }
        // INVARIANT: The bytes up to `end <= ROW_MAX` were just written.
        self.len = end;
    }

    /// Appends `b` right-aligned in `width` characters of which `b` is `chars`, as `{:>width}`.
    #[inline(always)]
    fn right(&mut self, width: usize, chars: usize, b: &[u8]) {
        self.spaces(width.saturating_sub(chars));
        self.push(b);
    }

    /// Appends `b` left-aligned in `width` characters of which `b` is `chars`, as `{:<width}`.
    #[inline(always)]
    fn left(&mut self, width: usize, chars: usize, b: &[u8]) {
        self.push(b);
        self.spaces(width.saturating_sub(chars));
    }

    /// Appends `v` in decimal, right-aligned in `width` characters.
    #[inline(always)]
    fn num(&mut self, width: usize, v: u64) {
        // CAST: `ilog10()` of a `u64` is at most 19.
        let digits = v.checked_ilog10().map_or(1, |l| l as usize + 1);
        self.spaces(width.saturating_sub(digits));
        let end = self.len + digits;
        if end > ROW_MAX {
            // Not in a row of this file; written whole or not at all.
            return;
        }
        let mut v = v;
        for slot in self.buf[self.len..end].iter_mut().rev() {
            // CAST: A decimal digit.
            slot.write(b'0' + (v % 10) as u8);
            v /= 10;
        }
        // INVARIANT: The `digits` bytes after the first `len` were just written, and
        // `end <= ROW_MAX`.
        self.len = end;
    }

    fn as_bytes(&self) -> &[u8] {
        // SAFETY: The first `len` bytes of `buf` are initialized (type invariant), and
        // `MaybeUninit<u8>` has the layout of `u8`.
        unsafe { core::slice::from_raw_parts(self.buf.as_ptr().cast::<u8>(), self.len) }
    }
}

/// What a row of `/proc/malloc_types` shows of a type.
struct RowData<'a> {
    /// The text form of the name (`MallocType::name_text`): printable ASCII.
    name: &'a [u8],
    /// The zone (`mti_zone`).
    zone: u32,
    /// The owning module, or `vmlinux`.
    owner: &'a [u8],
    /// The peak bytes in use, when tracked.
    peak: Option<u64>,
    /// The statistics summed over the possible CPUs.
    stats: Stats,
}

impl<'a> RowData<'a> {
    /// The row of registered type `t`.
    fn of(t: &'a MallocType) -> Self {
        Self {
            name: t.name_text().to_bytes(),
            zone: t.zone(),
            owner: t.owner().to_bytes(),
            peak: t.peak(),
            stats: t.stats(),
        }
    }
}

/// An owner as a row shows it, and its width in characters: the bytes themselves if they are
/// UTF-8 (tested a word at a time for the common ASCII string), else `?`.
fn shown(b: &[u8]) -> (&[u8], usize) {
    if b.is_ascii() {
        return (b, b.len());
    }
    match core::str::from_utf8(b) {
        Ok(s) => (b, s.chars().count()),
        Err(_) => (b"?", 1),
    }
}

/// Writes one row of `/proc/malloc_types` for the type `r` describes.
///
/// InUse is allocations minus frees and MemUse the bytes in use in KiB, rounded up, with a `K`
/// suffix, as `vmstat -m` prints them; both are clamped to 0 when racing per-CPU reads make them
/// negative. Fails counts the allocations that returned no memory; HighUse is the peak bytes in
/// use in KiB, rounded up, while it is tracked (`/proc/malloc_types_peak`), `-` otherwise; Owner
/// is the module that defines the type, or `vmlinux`. Size(s) lists the kmalloc size classes
/// the type has used, comma-separated, after the owner padded to 12 characters and two spaces;
/// a type that has used none ends its row at the owner, so that no row ends in white space. The
/// name, in its text form, is right-aligned in 13 characters (an owner that is not UTF-8 shows
/// as `?`).
fn write_type_row(out: &mut impl Sink, r: &RowData<'_>) -> Result {
    let s = &r.stats;
    // CAST: Clamped to be non-negative.
    let in_use = s.in_use().max(0) as u64;
    // CAST: Clamped to be non-negative just before.
    let mem_use_kib = (s.mem_use().max(0) as u64).div_ceil(1024);
    let (owner, owner_chars) = shown(r.owner);
    let mut buf = [MaybeUninit::uninit(); ROW_MAX];
    let mut row = Row::new(&mut buf);
    row.right(13, r.name.len(), r.name);
    row.push(b" ");
    row.num(5, in_use);
    row.push(b" ");
    row.num(5, mem_use_kib);
    row.push(b"K ");
    row.num(8, s.numallocs);
    row.push(b" ");
    row.num(4, u64::from(r.zone));
    row.push(b" ");
    row.num(5, s.numfailures);
    row.push(b" ");
    match r.peak {
        Some(peak) => {
            row.num(6, peak.div_ceil(1024));
            row.push(b"K");
        }
        None => row.right(7, 1, b"-"),
    }
    row.push(b" ");
    let zone_sizes = malloc_type::zone_sizes();
    let mut sizes = s.size & (u64::MAX >> (64 - zone_sizes.len().clamp(1, 64)));
    if sizes == 0 {
        row.push(owner);
    } else {
        row.left(12, owner_chars, owner);
    }
    // The classes of the set bits, lowest first: two spaces before the first, commas between.
    let mut first = true;
    while sizes != 0 {
        // CAST: Below 64.
        let i = sizes.trailing_zeros() as usize;
        sizes &= sizes - 1;
        if let Some(&size) = zone_sizes.get(i) {
            if first {
                row.push(b"  ");
                first = false;
            } else {
                row.push(b",");
            }
            // CAST: `usize` and `u64` have the same width on 64-bit kernels.
            row.num(0, size as u64);
        }
    }
    row.push(b"\n");
    out.put(row.as_bytes())
}

/// `/proc/malloc_types`.
struct TypesFile;

/// The bytes of `/proc/malloc_types` estimated for one type: its row is at most 31 bytes of name,
/// 42 of columns, an owner (12 for most) and 53 of size classes (all 13 of x86_64), and usually
/// far less.
const TYPES_ROW_ESTIMATE: usize = 144;

/// Types that may register between the `open()` of a file and its read, allowed for in the size
/// hints.
const HINT_SLACK_TYPES: usize = 8;

impl SingleShow for TypesFile {
    fn size_hint() -> usize {
        // The two header lines, then one row per type.
        let types = (malloc_type::count() as usize).saturating_add(HINT_SLACK_TYPES);
        types.saturating_mul(TYPES_ROW_ESTIMATE).saturating_add(256)
    }

    fn show(m: &SeqFile) -> Result {
        let mut out = SeqOut(m);
        write_types_header(&mut out).map_err(|_| ENOMEM)?;
        let r = malloc_type::try_for_each(|t: &MallocType| {
            // Once the buffer is full the seq_file core calls `show` again with one twice as
            // large: summing and formatting the remaining rows would be wasted (it made a read
            // at 1000 types cost 19 times one at 100).
            if m.has_overflowed() {
                return Err(None);
            }
            write_type_row(&mut out, &RowData::of(t)).map_err(Some)
        });
        match r {
            Ok(()) | Err(None) => Ok(()),
            Err(Some(e)) => Err(e),
        }
    }
}

/// `kernel.malloc_count`: the number of registered types.
struct MallocCount;

impl ReadInts for MallocCount {
    fn read(out: &mut IntValues) -> Result {
        out.push(i32::try_from(malloc_type::count())?)
    }
}

/// `vm.malloc_zone_count`: the number of kmalloc size classes a zindx can name.
struct ZoneCount;

impl ReadInts for ZoneCount {
    fn read(out: &mut IntValues) -> Result {
        out.push(i32::try_from(malloc_type::zone_sizes().len())?)
    }
}

/// `vm.malloc_zone_sizes`: the size in bytes of the kmalloc size class of each zindx.
struct ZoneSizes;

impl ReadInts for ZoneSizes {
    fn read(out: &mut IntValues) -> Result {
        for &size in malloc_type::zone_sizes() {
            out.push(i32::try_from(size)?)?;
        }
        Ok(())
    }
}

/// `vm.malloc_numzones`: the number of zones (`malloc_types.numzones=`).
struct NumZones;

impl ReadInts for NumZones {
    fn read(out: &mut IntValues) -> Result {
        out.push(i32::try_from(malloc_type::numzones())?)
    }
}

#[cfg(CONFIG_MALLOC_TYPES_PROC_KUNIT_TEST)]
#[kunit_tests(malloc_type_proc)]
mod tests {
    use super::*;
    use kernel::{
        alloc::KVec,
        str::CString, //
    };

    /// A growable byte buffer to look at what the files would show.
    struct Buf(KVec<u8>);

    impl Write for Buf {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            self.put(s.as_bytes()).map_err(|_| fmt::Error)
        }
    }

    impl Sink for Buf {
        fn put(&mut self, bytes: &[u8]) -> Result {
            Ok(self.0.extend_from_slice(bytes, GFP_KERNEL)?)
        }
    }

    fn row(name: &[u8], zone: u32, s: &Stats) -> Result<KVec<u8>> {
        row_of(&RowData {
            name,
            zone,
            owner: b"vmlinux",
            peak: None,
            stats: *s,
        })
    }

    fn row_of(r: &RowData<'_>) -> Result<KVec<u8>> {
        let mut buf = Buf(KVec::new());
        write_type_row(&mut buf, r).map_err(|_| ENOMEM)?;
        Ok(buf.0)
    }

    #[test]
    fn header() -> Result {
        let mut buf = Buf(KVec::new());
        write_types_header(&mut buf).map_err(|_| ENOMEM)?;
        assert_eq!(
            &buf.0[..],
            b"malloc_types - version: 1.1\n#        Type InUse MemUse Requests Zone Fails HighUse \
              Owner         Size(s)\n"
        );
        Ok(())
    }

    /// `prefix`, then the size classes of the bits of `size` (`zone_sizes()`, the running
    /// kernel's) separated by commas, then a newline: the end of a row.
    fn with_sizes(prefix: &[u8], size: u64) -> Result<KVec<u8>> {
        let mut v = KVec::new();
        v.extend_from_slice(prefix, GFP_KERNEL)?;
        let mut sep: &[u8] = b"  ";
        for (i, &z) in malloc_type::zone_sizes().iter().enumerate() {
            if size & (1 << i) != 0 {
                let n = CString::try_from_fmt(fmt!("{z}"))?;
                v.extend_from_slice(sep, GFP_KERNEL)?;
                v.extend_from_slice(n.to_bytes(), GFP_KERNEL)?;
                sep = b",";
            }
        }
        v.push(b'\n', GFP_KERNEL)?;
        Ok(v)
    }

    /// A [`Row`] near its end: a piece that does not fit is cut at [`ROW_MAX`] (bytes and
    /// padding) or left out (a number), and padding wider than a chunk is written whole.
    #[test]
    fn row_pieces_at_the_end_of_the_buffer() -> Result {
        let mut buf = [MaybeUninit::uninit(); ROW_MAX];
        let mut row = Row::new(&mut buf);
        row.right(40, 1, b"x");
        assert_eq!(row.as_bytes().len(), 40);
        assert!(row.as_bytes()[..39].iter().all(|&c| c == b' '));
        row.num(24, 1234567890123456789);
        assert_eq!(&row.as_bytes()[40..], b"     1234567890123456789");
        while row.as_bytes().len() + 8 < ROW_MAX {
            row.push(b"abcdefgh");
        }
        // 504 bytes: 8 left, of which a 20-digit number does not fit and 10 spaces fill all.
        row.num(0, u64::MAX);
        assert_eq!(row.as_bytes().len(), ROW_MAX - 8);
        row.push(b"12345");
        row.spaces(10);
        assert_eq!(row.as_bytes().len(), ROW_MAX);
        assert_eq!(&row.as_bytes()[ROW_MAX - 8..], b"12345   ");
        row.push(b"y");
        row.spaces(1);
        row.num(0, 0);
        assert_eq!(row.as_bytes().len(), ROW_MAX);
        Ok(())
    }

    #[test]
    fn row_columns_and_sizes() -> Result {
        // 3 allocations of 9 KiB in all, in the second, fifth and thirteenth size classes
        // (16, 96 and 8192 bytes with 4 KiB pages), one of them freed.
        let s = Stats {
            memalloced: 16 + 96 + 8192,
            memfreed: 16,
            numallocs: 3,
            numfrees: 1,
            size: (1 << 1) | (1 << 4) | (1 << 12),
            numfailures: 0,
        };
        assert_eq!(
            &row(b"devbuf", 0, &s)?[..],
            &with_sizes(
                b"       devbuf     2     9K        3    0     0       - vmlinux     ",
                s.size
            )?[..]
        );
        Ok(())
    }

    #[test]
    fn row_rounds_kib_up() -> Result {
        let one = Stats {
            memalloced: 1,
            numallocs: 1,
            ..Default::default()
        };
        assert_eq!(
            &row(b"t", 2, &one)?[..],
            b"            t     1     1K        1    2     0       - vmlinux\n"
        );
        let exact = Stats {
            memalloced: 2048,
            numallocs: 1,
            size: 1 << 10,
            ..Default::default()
        };
        assert_eq!(
            &row(b"t", 0, &exact)?[..],
            b"            t     1     2K        1    0     0       - vmlinux       2048\n"
        );
        Ok(())
    }

    #[test]
    fn row_clamps_negative_balances() -> Result {
        // Racing per-CPU reads can see a free before its allocation.
        let s = Stats {
            memalloced: 64,
            memfreed: 128,
            numallocs: 1,
            numfrees: 2,
            size: 1 << 3,
            numfailures: 0,
        };
        assert_eq!(
            &row(b"racy", 0, &s)?[..],
            b"         racy     0     0K        1    0     0       - vmlinux       64\n"
        );
        Ok(())
    }

    #[test]
    fn long_names_push_columns_right() -> Result {
        let s = Stats::default();
        assert_eq!(
            &row(b"a name longer than 13", 0, &s)?[..],
            b"a name longer than 13     0     0K        0    0     0       - vmlinux\n"
        );
        Ok(())
    }

    #[test]
    fn rows_of_every_width() -> Result {
        // Counters wider than their columns push the rest right, as `{:>N}` does; a name that is
        // not ASCII is aligned by characters; every size class fits.
        let s = Stats {
            // CAST: The largest balances that are not negative.
            memalloced: i64::MAX as u64,
            numallocs: i64::MAX as u64,
            size: u64::MAX >> (64 - malloc_type::zone_sizes().len()),
            ..Default::default()
        };
        assert_eq!(
            &row(b"caf\\303\\251", 15, &s)?[..],
            &with_sizes(
                concat!(
                    "  caf\\303\\251 9223372036854775807 9007199254740992K 9223372036854775807",
                    "   15     0       - vmlinux     "
                )
                .as_bytes(),
                s.size
            )?[..]
        );
        Ok(())
    }

    /// A name with a newline, an escape sequence and a backslash is one row of printable ASCII:
    /// its text form, which the tools write the same way (`name_text.rs`).
    #[test]
    fn hostile_name_is_one_row() -> Result {
        kernel::malloc_define!(M_ROW_HOSTILE, "nl\nrow 0 0 0\x1b[2J\\n", "A hostile name");
        let row = row_of(&RowData::of(&M_ROW_HOSTILE))?;
        let text = b"nl\\012row 0 0 0\\033[2J\\134n ";
        assert_eq!(&row[..text.len()], text);
        assert_eq!(row.iter().position(|&c| c == b'\n'), Some(row.len() - 1));
        assert!(row[..row.len() - 1]
            .iter()
            .all(|c| (0x20..0x7f).contains(c)));
        Ok(())
    }

    #[test]
    fn row_failures_peak_and_owner() -> Result {
        let s = Stats {
            memalloced: 4096,
            numallocs: 1,
            size: 0,
            numfailures: 3,
            ..Default::default()
        };
        let r = RowData {
            name: b"binder",
            zone: 0,
            owner: b"rust_binder",
            peak: Some(8193),
            stats: s,
        };
        assert_eq!(
            &row_of(&r)?[..],
            b"       binder     1     4K        1    0     3      9K rust_binder\n"
        );
        let r = RowData {
            owner: b"a_module_name_longer_than_twelve",
            stats: Stats { size: 1, ..s },
            ..r
        };
        assert_eq!(
            &row_of(&r)?[..],
            &with_sizes(
                concat!(
                    "       binder     1     4K        1    0     3      9K ",
                    "a_module_name_longer_than_twelve"
                )
                .as_bytes(),
                1
            )?[..]
        );
        Ok(())
    }

    /// The size hint covers the whole file, so that one `show` call produces it.
    #[test]
    fn size_hint_covers_the_file() -> Result {
        let mut text = Buf(KVec::new());
        write_types_header(&mut text).map_err(|_| ENOMEM)?;
        malloc_type::try_for_each(|t: &MallocType| {
            write_type_row(&mut text, &RowData::of(t)).map_err(|_| ENOMEM)
        })?;
        assert!(text.0.len() <= TypesFile::size_hint());
        Ok(())
    }
}
