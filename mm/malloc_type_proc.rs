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

use core::fmt::{
    self,
    Write, //
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

/// The seq_file of a reader, as a [`Write`] target.
///
/// Rows go straight into the seq_file's buffer, so that reading the file allocates nothing that
/// the file itself counts (Rust allocations are charged to the type "rust kmalloc").
struct SeqOut<'a>(&'a SeqFile);

impl Write for SeqOut<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.write(s.as_bytes());
        Ok(())
    }
}

/// Writes the header of `/proc/malloc_types`: the version line and the legend.
fn write_types_header(out: &mut impl Write) -> fmt::Result {
    writeln!(out, "malloc_types - version: {TYPES_VERSION}")?;
    writeln!(
        out,
        "# {:>11} {:>5} {:>6} {:>8} {:>4} {:>5} {:>7} {:<12}  Size(s)",
        "Type", "InUse", "MemUse", "Requests", "Zone", "Fails", "HighUse", "Owner"
    )
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

/// A row of `/proc/malloc_types` being written: its columns are gathered in a small buffer,
/// which goes to `out` whenever it is full and at the end of the row.
///
/// `write!` with widths (`{:>5}`) would format the same text, but it pads a column a character
/// at a time through `dyn Write`: reading the file at 1000 types takes 4.4 ms that way, against
/// 1.8 ms with this (the `readers` benchmark of `malloc_type_bench`).
struct Columns<O: FnMut(&[u8])> {
    out: O,
    buf: [u8; 256],
    len: usize,
}

impl<O: FnMut(&[u8])> Columns<O> {
    fn new(out: O) -> Self {
        Self {
            out,
            buf: [0; 256],
            len: 0,
        }
    }

    /// Appends `bytes`.
    fn put(&mut self, bytes: &[u8]) {
        if self.buf.len() - self.len < bytes.len() {
            self.flush();
            if self.buf.len() < bytes.len() {
                (self.out)(bytes);
                return;
            }
        }
        let end = self.len + bytes.len();
        self.buf[self.len..end].copy_from_slice(bytes);
        self.len = end;
    }

    /// Appends `n` spaces.
    fn spaces(&mut self, mut n: usize) {
        const SPACES: [u8; 32] = [b' '; 32];
        while n > 0 {
            let k = n.min(SPACES.len());
            self.put(&SPACES[..k]);
            n -= k;
        }
    }

    /// Appends `s`, right-aligned in `width` characters.
    fn right(&mut self, width: usize, s: &str) {
        self.spaces(width.saturating_sub(s.chars().count()));
        self.put(s.as_bytes());
    }

    /// Appends `s`, left-aligned in `width` characters.
    fn left(&mut self, width: usize, s: &str) {
        self.put(s.as_bytes());
        self.spaces(width.saturating_sub(s.chars().count()));
    }

    /// Appends `v` in decimal, right-aligned in `width` characters.
    fn num(&mut self, width: usize, mut v: u64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            // CAST: A digit, below 10.
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.spaces(width.saturating_sub(digits.len() - i));
        self.put(&digits[i..]);
    }

    /// Hands what is left of the row to `out`.
    fn flush(&mut self) {
        if self.len > 0 {
            (self.out)(&self.buf[..self.len]);
            self.len = 0;
        }
    }
}

/// Writes one row of `/proc/malloc_types` for the type `r` describes, in one call to `out` but
/// for rows of more than 256 bytes.
///
/// InUse is allocations minus frees and MemUse the bytes in use in KiB, rounded up, with a `K`
/// suffix, as `vmstat -m` prints them; both are clamped to 0 when racing per-CPU reads make them
/// negative. Fails counts the allocations that returned no memory; HighUse is the peak bytes in
/// use in KiB, rounded up, while it is tracked (`/proc/malloc_types_peak`), `-` otherwise; Owner
/// is the module that defines the type, or `vmlinux`. Size(s) lists the kmalloc size classes
/// the type has used, comma-separated, after the owner padded to 12 characters and two spaces;
/// a type that has used none ends its row at the owner, so that no row ends in white space. The
/// name, in its text form, is right-aligned in 13 characters; an owner that is not UTF-8 shows
/// as `?`.
fn write_type_row(out: impl FnMut(&[u8]), r: &RowData<'_>) {
    let s = &r.stats;
    let mut row = Columns::new(out);
    row.right(13, core::str::from_utf8(r.name).unwrap_or("?"));
    row.put(b" ");
    // CAST: Clamped to be non-negative.
    row.num(5, s.in_use().max(0) as u64);
    row.put(b" ");
    // CAST: Clamped to be non-negative.
    row.num(5, (s.mem_use().max(0) as u64).div_ceil(1024));
    row.put(b"K ");
    row.num(8, s.numallocs);
    row.put(b" ");
    row.num(4, r.zone.into());
    row.put(b" ");
    row.num(5, s.numfailures);
    row.put(b" ");
    match r.peak {
        Some(peak) => {
            row.num(6, peak.div_ceil(1024));
            row.put(b"K ");
        }
        None => row.put(b"      - "),
    }
    let owner = core::str::from_utf8(r.owner).unwrap_or("?");
    let zone_sizes = malloc_type::zone_sizes();
    let mut sizes = s.size & (u64::MAX >> (64 - zone_sizes.len().clamp(1, 64)));
    if sizes == 0 {
        row.put(owner.as_bytes());
    } else {
        row.left(12, owner);
        // The classes of the set bits, lowest first: two spaces before the first, commas
        // between.
        let mut sep: &[u8] = b"  ";
        while sizes != 0 {
            // CAST: Below 64.
            let i = sizes.trailing_zeros() as usize;
            sizes &= sizes - 1;
            if let Some(&size) = zone_sizes.get(i) {
                row.put(sep);
                // CAST: A size class, at most `KMALLOC_MAX_CACHE_SIZE`.
                row.num(0, size as u64);
                sep = b",";
            }
        }
    }
    row.put(b"\n");
    row.flush();
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
        // Once the buffer is full the seq_file core calls `show` again with one twice as large:
        // the remaining rows would be summed and formatted for nothing.
        let _ = malloc_type::try_for_each(|t: &MallocType| {
            if m.has_overflowed() {
                return Err(());
            }
            write_type_row(|row| m.write(row), &RowData::of(t));
            Ok(())
        });
        Ok(())
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
            self.0
                .extend_from_slice(s.as_bytes(), GFP_KERNEL)
                .map_err(|_| fmt::Error)
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
        let mut v = KVec::new();
        let mut res = Ok(());
        write_type_row(
            |b: &[u8]| {
                if res.is_ok() {
                    res = v.extend_from_slice(b, GFP_KERNEL);
                }
            },
            r,
        );
        res?;
        Ok(v)
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
        // A row longer than the buffer of `Columns`.
        let long = [b'n'; 300];
        let r = row(&long, 0, &s)?;
        assert_eq!(&r[..300], &long[..]);
        assert_eq!(
            &r[300..],
            b"     0     0K        0    0     0       - vmlinux\n"
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
        let mut len = text.0.len();
        malloc_type::try_for_each(|t: &MallocType| -> Result {
            len += row_of(&RowData::of(t))?.len();
            Ok(())
        })?;
        assert!(len <= TypesFile::size_hint());
        Ok(())
    }
}
