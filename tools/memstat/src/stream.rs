//! The binary stream of `/proc/malloc_stats`, as laid out by
//! `include/uapi/linux/malloc_type.h`: a 16-byte stream header, then for
//! each type a type header followed by `maxcpus` 64-byte per-CPU
//! statistics records, all in native byte order (little-endian on the
//! targets this is built for).
//!
//! Two versions are read: version 2 (today's kernels) has a 128-byte type
//! header with the peak bytes in use (`mth_peak`, with [`FLAG_PEAK`]) and
//! the owning module (`mth_owner`), and counts failures in each per-CPU
//! record (`mts_numfailures`); version 1 had a 64-byte type header, the
//! first 64 bytes of version 2's, with no peak and no owner, and no
//! failures (they read as 0, the owner as empty).
//!
//! [`parse_stream`] checks the header, the version and that the total length
//! is exactly the length the header announces *before* it looks at any
//! record or allocates anything proportional to the announced counts, so a
//! hostile or truncated stream costs neither memory nor a panic.
//! [`write_stream`] produces a stream from values (tests, fuzz seeds,
//! `memstat --save`).

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use crate::error::{Error, Result};

/// `MALLOC_TYPE_STREAM_VERSION`: the version [`write_stream`] writes.
pub const STREAM_VERSION: u32 = 2;
/// The oldest version read.
pub const STREAM_VERSION_MIN: u32 = 1;
/// `MALLOC_MAX_NAME`: bytes of a name in the stream, NUL included.
pub const MAX_NAME: usize = 32;
/// `MALLOC_MAX_OWNER`: bytes of an owner in the stream, NUL included.
pub const MAX_OWNER: usize = 64;
/// `sizeof(struct malloc_type_stream_header)`.
pub const STREAM_HEADER_SIZE: usize = 16;
/// `sizeof(struct malloc_type_header)` of [`STREAM_VERSION`].
pub const TYPE_HEADER_SIZE: usize = 128;
/// `sizeof(struct malloc_type_header)` of version 1.
pub const TYPE_HEADER_SIZE_V1: usize = 64;
/// `sizeof(struct malloc_type_stats)`.
pub const STATS_SIZE: usize = 64;
/// `MALLOC_TYPE_F_MODULE`: the type is defined in a loadable module.
pub const FLAG_MODULE: u32 = 1;
/// `MALLOC_TYPE_F_PEAK`: the type's peak bytes in use are tracked.
pub const FLAG_PEAK: u32 = 2;
/// `MALLOC_TYPE_F_GONE`: the type was unregistered (its module unloaded) between the read that
/// took the stream's set of types and the read of its record, which keeps its place with only
/// its id and this flag set. Parsing skips such records.
pub const FLAG_GONE: u32 = 4;
/// `MALLOC_TYPE_F_UNLOADED`: the type's module has unloaded while memory charged to the type was
/// still allocated; the type stays until that memory is freed.
pub const FLAG_UNLOADED: u32 = 8;

/// `sizeof(struct malloc_type_header)` in a stream of `version`, `None`
/// for a version this library does not read.
pub fn type_header_size(version: u32) -> Option<usize> {
    match version {
        1 => Some(TYPE_HEADER_SIZE_V1),
        2 => Some(TYPE_HEADER_SIZE),
        _ => None,
    }
}
/// Largest `mtsh_maxcpus` accepted (Linux's `NR_CPUS` tops out at 8192;
/// this leaves room and still bounds the work).
pub const MAX_CPUS: u32 = 1 << 16;

/// One CPU's counters of one type (`struct malloc_type_stats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuStats {
    /// `mts_memalloced`: bytes allocated on this CPU.
    pub memalloced: u64,
    /// `mts_memfreed`: bytes freed on this CPU.
    pub memfreed: u64,
    /// `mts_numallocs`: allocations on this CPU.
    pub numallocs: u64,
    /// `mts_numfrees`: frees on this CPU.
    pub numfrees: u64,
    /// `mts_size`: bitmask of the zindx values used.
    pub size: u64,
    /// `mts_numfailures`: allocations that returned no memory on this CPU
    /// (0 in a version 1 stream).
    pub numfailures: u64,
}

impl CpuStats {
    /// A record of these counters and no failures: what a stream writer (a test, a fixture)
    /// states for one CPU.
    pub const fn new(
        memalloced: u64,
        memfreed: u64,
        numallocs: u64,
        numfrees: u64,
        size: u64,
    ) -> CpuStats {
        CpuStats {
            memalloced,
            memfreed,
            numallocs,
            numfrees,
            size,
            numfailures: 0,
        }
    }
}

/// One type of the stream: its header and its per-CPU records.
///
/// The name and the owner are kept as the stream's bytes: a name is any bytes, and what a
/// text output shows of it is its text form ([`crate::text::name_text`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamType {
    /// `mth_name`, up to the first NUL.
    pub name: Vec<u8>,
    /// `mth_id`: the registration id.
    pub id: u64,
    /// `mth_zone`.
    pub zone: u32,
    /// `mth_flags` (`FLAG_*`).
    pub flags: u32,
    /// `mth_peak`: the peak bytes in use while [`FLAG_PEAK`] is set.
    pub peak: u64,
    /// `mth_owner`, up to the first NUL: the owning module or `vmlinux` (empty in a version 1
    /// stream).
    pub owner: Vec<u8>,
    /// One record per CPU id, `maxcpus` of them.
    pub stats: Vec<CpuStats>,
}

/// One type of a stream, borrowed from the stream's bytes: what [`StreamType`] holds, without
/// an allocation.
///
/// What [`crate::MemoryTypeList`]'s update reads: it compares the name and the owner with those
/// an entry has already, so that nothing of a type seen before is copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamTypeRef<'a> {
    /// `mth_name`, up to the first NUL.
    pub name: &'a [u8],
    /// `mth_id`: the registration id.
    pub id: u64,
    /// `mth_zone`.
    pub zone: u32,
    /// `mth_flags` (`FLAG_*`).
    pub flags: u32,
    /// `mth_peak`: the peak bytes in use while [`FLAG_PEAK`] is set.
    pub peak: u64,
    /// `mth_owner`, up to the first NUL (empty in a version 1 stream).
    pub owner: &'a [u8],
    /// The `maxcpus` records, [`STATS_SIZE`] bytes each.
    records: &'a [u8],
}

impl<'a> StreamTypeRef<'a> {
    /// The per-CPU records, one per CPU id.
    pub fn stats(&self) -> impl ExactSizeIterator<Item = CpuStats> + 'a {
        records_stats(self.records)
    }

    /// An owned copy.
    pub fn to_owned_type(&self) -> StreamType {
        StreamType {
            name: self.name.to_vec(),
            id: self.id,
            zone: self.zone,
            flags: self.flags,
            peak: self.peak,
            owner: self.owner.to_vec(),
            stats: self.stats().collect(),
        }
    }
}

/// The per-CPU records of `records`, [`STATS_SIZE`] bytes each.
fn records_stats(records: &[u8]) -> impl ExactSizeIterator<Item = CpuStats> + '_ {
    records.chunks_exact(STATS_SIZE).map(|r| {
        let at = |off: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&r[off..off + 8]);
            u64::from_ne_bytes(a)
        };
        CpuStats {
            memalloced: at(0),
            memfreed: at(8),
            numallocs: at(16),
            numfrees: at(24),
            size: at(32),
            numfailures: at(40),
        }
    })
}

/// A parsed stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stream {
    /// `mtsh_version`.
    pub version: u32,
    /// `mtsh_maxcpus`.
    pub maxcpus: u32,
    /// The types, in stream order.
    pub types: Vec<StreamType>,
}

fn u32_at(buf: &[u8], off: usize) -> Result<u32> {
    let b = buf
        .get(
            off..off
                .checked_add(4)
                .ok_or_else(|| Error::data("offset overflow"))?,
        )
        .ok_or_else(|| Error::data("read past the end of the stream"))?;
    let mut a = [0u8; 4];
    a.copy_from_slice(b);
    Ok(u32::from_ne_bytes(a))
}

fn u64_at(buf: &[u8], off: usize) -> Result<u64> {
    let b = buf
        .get(
            off..off
                .checked_add(8)
                .ok_or_else(|| Error::data("offset overflow"))?,
        )
        .ok_or_else(|| Error::data("read past the end of the stream"))?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Ok(u64::from_ne_bytes(a))
}

/// The exact length of a stream of [`STREAM_VERSION`] with `count` types of
/// `maxcpus` records each, or `None` if it does not fit in a `usize`.
pub fn expected_len(count: u32, maxcpus: u32) -> Option<usize> {
    expected_len_version(STREAM_VERSION, count, maxcpus)
}

/// [`expected_len`] for a stream of `version`; `None` also for a version
/// this library does not read.
pub fn expected_len_version(version: u32, count: u32, maxcpus: u32) -> Option<usize> {
    let per_type = (maxcpus as usize)
        .checked_mul(STATS_SIZE)?
        .checked_add(type_header_size(version)?)?;
    (count as usize)
        .checked_mul(per_type)?
        .checked_add(STREAM_HEADER_SIZE)
}

/// The offset of the first NUL byte of `field`, looked for a word at a time: a name or an owner
/// is a few words long, too short for a vectorized search to pay for its set-up (`memchr`
/// cost five times this).
#[inline]
fn nul_position(field: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    let mut rest = field;
    while let Some((w, r)) = rest.split_first_chunk::<8>() {
        let v = u64::from_le_bytes(*w);
        // Nonzero exactly when a byte of `v` is zero; its lowest set bit marks the first one
        // (a borrow from a zero byte can set the bit of a 0x01 above it, never one below).
        let zero = v.wrapping_sub(ONES) & !v & HIGHS;
        if zero != 0 {
            // CAST: `trailing_zeros()` of a nonzero u64 is below 64.
            return Some(field.len() - rest.len() + (zero.trailing_zeros() / 8) as usize);
        }
        rest = r;
    }
    let at = field.len() - rest.len();
    rest.iter().position(|&b| b == 0).map(|p| at + p)
}

/// The bytes of a NUL-terminated name field, `what`, before its NUL.
#[inline]
fn nul_terminated<'a>(field: &'a [u8], index: u32, what: &str) -> Result<&'a [u8]> {
    let end = nul_position(field).ok_or_else(|| {
        Error::data(format!(
            "type {index}: {what} is not NUL-terminated within {} bytes",
            field.len()
        ))
    })?;
    Ok(&field[..end])
}

fn short_header(len: usize) -> Error {
    Error::data(format!(
        "stream is {len} bytes, shorter than its {STREAM_HEADER_SIZE}-byte header"
    ))
}

/// Check a stream header (the first [`STREAM_HEADER_SIZE`] bytes of `buf`):
/// version, CPU count, and that the announced length fits in a `usize`.
/// Returns `(version, maxcpus, count, expected total length)`.
fn check_header(buf: &[u8]) -> Result<(u32, u32, u32, usize)> {
    let version = u32_at(buf, 0)?;
    if type_header_size(version).is_none() {
        return Err(Error::Version {
            found: version,
            expected: STREAM_VERSION,
        });
    }
    let maxcpus = u32_at(buf, 4)?;
    let count = u32_at(buf, 8)?;
    if maxcpus == 0 {
        return Err(Error::data("stream header announces zero CPUs"));
    }
    if maxcpus > MAX_CPUS {
        return Err(Error::data(format!(
            "stream header announces {maxcpus} CPUs, more than {MAX_CPUS}"
        )));
    }
    let expected = expected_len_version(version, count, maxcpus).ok_or_else(|| {
        Error::data(format!(
            "stream header announces {count} types of {maxcpus} CPUs: length overflows"
        ))
    })?;
    Ok((version, maxcpus, count, expected))
}

/// The most [`read_stream`] reserves before it has read the data: 16 MiB.
const RESERVE_MAX: usize = 16 << 20;

/// Read a stream from `r`, header first, never reading more than one byte
/// past the length the header announces: the 16-byte header is read (with
/// retries on short reads) and checked as [`parse_stream`] does, then the
/// rest is read through [`Read::take`]. A source that is endless or far
/// larger than announced (`/dev/zero`, a huge sparse file) thus fails fast
/// with [`Error::Version`] or [`Error::DataError`] instead of being read
/// whole. I/O errors are reported on `path`.
///
/// The bytes returned have exactly the announced length or are shorter
/// (truncated: [`parse_stream`] then reports the length mismatch).
pub fn read_stream<R: Read>(r: R, path: &Path) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    read_stream_into(r, path, &mut buf)?;
    Ok(buf)
}

/// [`read_stream`] into `buf`, which is cleared first and whose capacity is
/// reused: a reader that updates in a loop allocates (and the kernel faults
/// in) its buffer once, not on every update.
pub fn read_stream_into<R: Read>(mut r: R, path: &Path, buf: &mut Vec<u8>) -> Result<()> {
    buf.clear();
    let mut header = [0u8; STREAM_HEADER_SIZE];
    let mut got = 0;
    while got < STREAM_HEADER_SIZE {
        match r.read(&mut header[got..]) {
            Ok(0) => return Err(short_header(got)),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::from_io(path, e)),
        }
    }
    let (_, maxcpus, count, expected) = check_header(&header)?;
    let remaining = (expected - STREAM_HEADER_SIZE) as u64;
    // Room for the whole stream up front, so that it is read in a few large reads (a stream
    // of 1000 types is 192 KiB on 2 CPUs), capped so that a header that announces a huge
    // stream costs nothing before the data runs out.
    buf.try_reserve(expected.min(RESERVE_MAX))
        .map_err(|_| Error::NoMemory)?;
    buf.extend_from_slice(&header);
    r.take(remaining.saturating_add(1))
        .read_to_end(buf)
        .map_err(|e| Error::from_io(path, e))?;
    if buf.len() > expected {
        return Err(Error::data(format!(
            "stream is more than {expected} bytes, header announces {count} types of {maxcpus} CPUs = {expected} bytes"
        )));
    }
    Ok(())
}

/// Open `path` and [`read_stream`] it.
pub fn read_stream_file(path: &Path) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    read_stream_file_into(path, &mut buf)?;
    Ok(buf)
}

/// Open `path` and [`read_stream_into`] `buf`.
pub fn read_stream_file_into(path: &Path, buf: &mut Vec<u8>) -> Result<()> {
    let f = File::open(path).map_err(|e| Error::from_io(path, e))?;
    read_stream_into(f, path, buf)
}

/// Parse a whole stream. The records of types that went while the stream was read
/// ([`FLAG_GONE`]) are left out.
///
/// Errors: [`Error::DataError`] for a short header, zero or too many CPUs,
/// a length that is not exactly the announced one, an unterminated name
/// or owner, or two types with the same id ([`check_unique_ids`]);
/// [`Error::Version`] for a version other than 1 and 2.
pub fn parse_stream(buf: &[u8]) -> Result<Stream> {
    let (maxcpus, types) = parse_stream_ref(buf)?;
    Ok(Stream {
        // `parse_stream_ref` checked it.
        version: u32_at(buf, 0)?,
        maxcpus,
        types: types.iter().map(StreamTypeRef::to_owned_type).collect(),
    })
}

/// Parse a whole stream into types borrowed from `buf`: `(maxcpus, types)`,
/// with the checks and errors of [`parse_stream`], and one allocation (the
/// vector of types) where [`parse_stream`] makes three per type.
pub fn parse_stream_ref(buf: &[u8]) -> Result<(u32, Vec<StreamTypeRef<'_>>)> {
    if buf.len() < STREAM_HEADER_SIZE {
        return Err(short_header(buf.len()));
    }
    let (version, maxcpus, count, expected) = check_header(buf)?;
    if buf.len() != expected {
        return Err(Error::data(format!(
            "stream is {} bytes, header announces {count} types of {maxcpus} CPUs = {expected} bytes",
            buf.len()
        )));
    }
    // From here on the buffer holds exactly `count` records of the right
    // size, so allocations below are bounded by the input's length.
    let mut types = Vec::new();
    types
        .try_reserve_exact(count as usize)
        .map_err(|_| Error::NoMemory)?;
    let header = type_header_size(version).ok_or_else(|| Error::data("unknown version"))?;
    let records = maxcpus as usize * STATS_SIZE;
    let per_type = header + records;
    let past_end = || Error::data("read past the end of the stream");
    // Whether the ids seen so far rise, or fall, strictly: the kernel lists its types newest
    // first, so ids fall, and a strictly monotonic list has no id twice.
    let (mut rising, mut falling) = (true, true);
    let mut prev = None;
    for i in 0..count {
        let base = STREAM_HEADER_SIZE + i as usize * per_type;
        let name_field = buf.get(base..base + MAX_NAME).ok_or_else(past_end)?;
        let name = nul_terminated(name_field, i, "name")?;
        let (peak, owner) = if version >= 2 {
            let field = buf
                .get(base + 64..base + 64 + MAX_OWNER)
                .ok_or_else(past_end)?;
            (u64_at(buf, base + 48)?, nul_terminated(field, i, "owner")?)
        } else {
            (0, &[][..])
        };
        let records = buf
            .get(base + header..base + per_type)
            .ok_or_else(past_end)?;
        let id = u64_at(buf, base + 32)?;
        if let Some(p) = prev {
            rising &= id > p;
            falling &= id < p;
        }
        prev = Some(id);
        let flags = u32_at(buf, base + 44)?;
        if flags & FLAG_GONE != 0 {
            continue;
        }
        types.push(StreamTypeRef {
            name,
            id,
            zone: u32_at(buf, base + 40)?,
            flags,
            peak,
            owner,
            records,
        });
    }
    if !rising && !falling {
        let ids = (0..count as usize).map(|i| u64_at(buf, STREAM_HEADER_SIZE + i * per_type + 32));
        check_unique_ids(ids.collect::<Result<Vec<u64>>>()?)?;
    }
    Ok((maxcpus, types))
}

/// Checks that no id of `ids`, the ids of a stream's types in stream order, is there twice.
///
/// Errors: [`Error::DataError`] naming the id and the two types (their indexes in the stream)
/// that have it: two records of one registration id would be two entries that nothing tells
/// apart, in every table and in every exported label set.
pub fn check_unique_ids(ids: impl IntoIterator<Item = u64>) -> Result<()> {
    let mut v: Vec<(u64, usize)> = ids.into_iter().zip(0..).collect();
    v.sort_unstable();
    match v.windows(2).find(|w| w[0].0 == w[1].0) {
        Some(w) => Err(Error::data(format!(
            "types {} and {} have the same id {}",
            w[0].1, w[1].1, w[0].0
        ))),
        None => Ok(()),
    }
}

/// Write a stream of [`STREAM_VERSION`] of `types`, each with exactly
/// `maxcpus` records: missing records are written as zeros and extra ones
/// are dropped. Names longer than 31 bytes and owners longer than 63 are
/// truncated (at a byte boundary, as the kernel does).
pub fn write_stream(maxcpus: u32, types: &[StreamType]) -> Vec<u8> {
    write_stream_version(STREAM_VERSION, maxcpus, types)
}

/// [`write_stream`] in the layout of `version`, 1 or 2 (any other writes
/// version 2's layout under that number, for tests of readers): version 1
/// drops the peak, the owner and the failures.
pub fn write_stream_version(version: u32, maxcpus: u32, types: &[StreamType]) -> Vec<u8> {
    let count = u32::try_from(types.len()).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(expected_len_version(version, count, maxcpus).unwrap_or(0));
    write_stream_version_into(&mut out, version, maxcpus, types);
    out
}

/// [`write_stream`] appended to `out`, whose room the caller may have reserved (with
/// `try_reserve`, to fail without an abort).
pub fn write_stream_into(out: &mut Vec<u8>, maxcpus: u32, types: &[StreamType]) {
    write_stream_version_into(out, STREAM_VERSION, maxcpus, types);
}

fn write_stream_version_into(out: &mut Vec<u8>, version: u32, maxcpus: u32, types: &[StreamType]) {
    let count = u32::try_from(types.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&version.to_ne_bytes());
    out.extend_from_slice(&maxcpus.to_ne_bytes());
    out.extend_from_slice(&count.to_ne_bytes());
    out.extend_from_slice(&0u32.to_ne_bytes());
    for t in types.iter().take(count as usize) {
        let mut name = [0u8; MAX_NAME];
        let n = t.name.len().min(MAX_NAME - 1);
        name[..n].copy_from_slice(&t.name[..n]);
        out.extend_from_slice(&name);
        out.extend_from_slice(&t.id.to_ne_bytes());
        out.extend_from_slice(&t.zone.to_ne_bytes());
        if version == 1 {
            out.extend_from_slice(&(t.flags & !FLAG_PEAK).to_ne_bytes());
            out.extend_from_slice(&[0u8; 16]);
        } else {
            out.extend_from_slice(&t.flags.to_ne_bytes());
            out.extend_from_slice(&t.peak.to_ne_bytes());
            out.extend_from_slice(&[0u8; 8]);
            let mut owner = [0u8; MAX_OWNER];
            let n = t.owner.len().min(MAX_OWNER - 1);
            owner[..n].copy_from_slice(&t.owner[..n]);
            out.extend_from_slice(&owner);
        }
        for cpu in 0..maxcpus as usize {
            let s = t.stats.get(cpu).copied().unwrap_or_default();
            let failures = if version == 1 { 0 } else { s.numfailures };
            for v in [
                s.memalloced,
                s.memfreed,
                s.numallocs,
                s.numfrees,
                s.size,
                failures,
            ] {
                out.extend_from_slice(&v.to_ne_bytes());
            }
            out.extend_from_slice(&[0u8; 16]);
        }
    }
}
