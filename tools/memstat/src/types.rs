//! Memory types and lists of them: `struct memory_type` and
//! `struct memory_type_list` of libmemstat(3).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind, Result};
use crate::slab::{self, SlabCache, SlabSource};
use crate::stream::{self, CpuStats, Stream, StreamType, StreamTypeRef};
use crate::text::{self, name_text};
use crate::zones::ZoneSizes;

/// The hasher of the merge's map, whose keys are [`key_of`] hashes already:
/// they are used as they are, instead of being hashed again with SipHash
/// (which cost more than the rest of a merge). Nothing hostile chooses the
/// keys: they come from the kernel's type names.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Not used by `u64` keys; folded in FNV-1a style for completeness.
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn write_u64(&mut self, k: u64) {
        self.0 = k;
    }
}

type KeyMap = HashMap<u64, usize, BuildHasherDefault<KeyHasher>>;

/// The key under which [`MemoryTypeList`]'s merge looks an entry up: the id
/// and a hash of the name (FNV-1a), computed without allocating. Equal
/// entries have equal keys; entries with equal keys are told apart by
/// comparing id and name.
fn key_of(id: u64, name: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in name {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h ^ id.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Whether two names are equal, compared 8 bytes at a time: the merge compares
/// the name of every type on every update, and a byte-wise `memcmp()` (musl's)
/// made that the largest cost of an update.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let word = |w: &[u8; 8]| u64::from_ne_bytes(*w);
    let (mut x, mut y) = (a, b);
    while let (Some((wx, rx)), Some((wy, ry))) =
        (x.split_first_chunk::<8>(), y.split_first_chunk::<8>())
    {
        if word(wx) != word(wy) {
            return false;
        }
        (x, y) = (rx, ry);
    }
    if x.is_empty() {
        return true;
    }
    match (a.last_chunk::<8>(), b.last_chunk::<8>()) {
        // The last 8 bytes, which overlap the words compared above.
        (Some(wx), Some(wy)) => word(wx) == word(wy),
        // Shorter than a word.
        _ => x == y,
    }
}

/// A type of a stream, owned ([`StreamType`]) or borrowed from the stream's bytes
/// ([`StreamTypeRef`]), as the merge of malloc types reads it.
trait MallocRecord {
    fn id(&self) -> u64;
    /// The name's bytes.
    fn name(&self) -> &[u8];
    fn load_into(&self, t: &mut MemoryType);
}

impl MallocRecord for StreamType {
    fn id(&self) -> u64 {
        self.id
    }
    fn name(&self) -> &[u8] {
        &self.name
    }
    fn load_into(&self, t: &mut MemoryType) {
        t.load_malloc(self);
    }
}

impl MallocRecord for StreamTypeRef<'_> {
    fn id(&self) -> u64 {
        self.id
    }
    fn name(&self) -> &[u8] {
        self.name
    }
    fn load_into(&self, t: &mut MemoryType) {
        t.load_malloc_raw(self);
    }
}

/// `MEMSTAT_MAXCALLER`: caller-owned slots of each kind.
pub const MAXCALLER: usize = 16;
/// `MEMTYPE_MAXNAME`.
pub const MAXNAME: usize = 32;
/// Where the kernel serves the malloc type stream.
pub const DEFAULT_PROC_PATH: &str = "/proc/malloc_stats";

/// The allocator that owns a memory type (`ALLOCATOR_MALLOC`, `ALLOCATOR_UMA`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Allocator {
    /// A malloc type (`/proc/malloc_stats`).
    Malloc,
    /// A slab cache (`/sys/kernel/slab`, `/proc/slabinfo`), the analogue of
    /// a UMA zone.
    Slab,
}

/// Allocator argument of [`MemoryTypeList::find`] (`ALLOCATOR_ANY` included).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AllocatorFilter {
    /// Malloc types only.
    Malloc,
    /// Slab caches only.
    Slab,
    /// Either.
    Any,
}

impl AllocatorFilter {
    /// Whether `a` passes.
    pub fn matches(self, a: Allocator) -> bool {
        matches!(
            (self, a),
            (AllocatorFilter::Any, _)
                | (AllocatorFilter::Malloc, Allocator::Malloc)
                | (AllocatorFilter::Slab, Allocator::Slab)
        )
    }
}

impl From<Allocator> for AllocatorFilter {
    fn from(a: Allocator) -> Self {
        match a {
            Allocator::Malloc => AllocatorFilter::Malloc,
            Allocator::Slab => AllocatorFilter::Slab,
        }
    }
}

/// Caller-owned storage: 16 pointer-sized values and 16 `u64`s.
///
/// libmemstat stores `void *`; here the "pointer" slots are plain `usize`
/// values (an index into the caller's own table, an address, a handle), so
/// that a [`MemoryType`] stays `Clone + Send + Sync` and needs no `unsafe`.
/// All slots start at 0 and keep their values across updates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallerFields {
    pointers: [usize; MAXCALLER],
    uint64: [u64; MAXCALLER],
}

fn range(what: &'static str, index: usize, limit: usize) -> Error {
    Error::OutOfRange { what, index, limit }
}

impl CallerFields {
    /// `memstat_get_caller_pointer`.
    pub fn pointer(&self, i: usize) -> Option<usize> {
        self.pointers.get(i).copied()
    }
    /// `memstat_set_caller_pointer`.
    pub fn set_pointer(&mut self, i: usize, v: usize) -> Result<()> {
        let slot = self
            .pointers
            .get_mut(i)
            .ok_or_else(|| range("caller pointer", i, MAXCALLER))?;
        *slot = v;
        Ok(())
    }
    /// `memstat_get_caller_uint64`.
    pub fn uint64(&self, i: usize) -> Option<u64> {
        self.uint64.get(i).copied()
    }
    /// `memstat_set_caller_uint64`.
    pub fn set_uint64(&mut self, i: usize, v: u64) -> Result<()> {
        let slot = self
            .uint64
            .get_mut(i)
            .ok_or_else(|| range("caller uint64", i, MAXCALLER))?;
        *slot = v;
        Ok(())
    }
}

/// Per-CPU statistics of a memory type (`mt_percpu_alloc_s` plus the
/// cache's `mtp_free`) and the per-CPU caller fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PerCpu {
    /// Bytes allocated on the CPU.
    pub memalloced: u64,
    /// Bytes freed on the CPU.
    pub memfreed: u64,
    /// Allocations on the CPU.
    pub numallocs: u64,
    /// Frees on the CPU.
    pub numfrees: u64,
    /// Size classes used on the CPU.
    pub sizemask: u64,
    /// Allocations that returned no memory on the CPU (malloc types).
    pub failures: u64,
    /// Free items in the CPU's cache (always 0 here).
    pub free: u64,
    /// Caller-owned per-CPU fields.
    pub caller: CallerFields,
}

/// Slab-cache details that have no libmemstat accessor.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlabDetails {
    /// Slabs allocated.
    pub slabs: u64,
    /// Objects per slab.
    pub objs_per_slab: u64,
    /// Page order of a slab.
    pub order: u64,
    /// Number of caches merged into this one (`aliases`).
    pub aliases: u64,
    /// The cache's name in its source, as bytes: its SLUB sysfs directory (a unique id such as
    /// `:0000136` for a cache others can merge into) or its slabinfo name. What tells two
    /// caches apart from one update to the next.
    pub cache: Vec<u8>,
    /// The names of the caches merged into this one, as bytes, the one shown as the entry's
    /// name first ([`SlabCache::merged`]); empty when nothing is merged into it.
    pub merged: Vec<Vec<u8>>,
}

/// One memory type: a malloc type or a slab cache.
///
/// Library-owned fields are replaced on every update; caller-owned fields
/// ([`MemoryType::caller`], and those of each [`PerCpu`]) are kept.
///
/// A name is kept as its bytes ([`MemoryType::name_bytes`]), and shown as its text form
/// ([`MemoryType::name`], [`crate::text`]): printable ASCII as it is, every other byte and the
/// backslash as `\NNN`. The text form is what every table, JSON document and event line of the
/// tools shows; it is lossless (two names have two texts) and never drives a terminal.
#[derive(Debug, Clone, Default)]
pub struct MemoryType {
    allocator: Option<Allocator>,
    name: Vec<u8>,
    /// The text form of `name`.
    name_text: String,
    id: u64,
    zone: u32,
    flags: u32,
    peak: u64,
    owner: Vec<u8>,
    /// The text form of `owner`.
    owner_text: String,
    countlimit: u64,
    byteslimit: u64,
    sizemask: u64,
    size: u64,
    rsize: u64,
    memalloced: u64,
    memfreed: u64,
    numallocs: u64,
    numfrees: u64,
    bytes: u64,
    count: u64,
    free: u64,
    failures: u64,
    sleeps: u64,
    xdomain: u64,
    zonefree: u64,
    kegfree: u64,
    percpu: Vec<PerCpu>,
    slab: Option<SlabDetails>,
    caller: CallerFields,
    generation: u64,
}

/// The [`Header`] of `$t`, a [`StreamType`] or a [`StreamTypeRef`].
macro_rules! header_of {
    ($t:expr) => {
        Header {
            name: $t.name.as_ref(),
            id: $t.id,
            zone: $t.zone,
            flags: $t.flags,
            peak: $t.peak,
            owner: $t.owner.as_ref(),
        }
    };
}

/// The header fields of a malloc type in a stream; the name and the owner as the stream's
/// bytes.
struct Header<'a> {
    name: &'a [u8],
    id: u64,
    zone: u32,
    flags: u32,
    peak: u64,
    owner: &'a [u8],
}

macro_rules! getters {
    ($($(#[$m:meta])* $f:ident),* $(,)?) => {
        $( $(#[$m])* pub fn $f(&self) -> u64 { self.$f } )*
    };
}

impl MemoryType {
    /// `memstat_get_allocator`.
    pub fn allocator(&self) -> Allocator {
        self.allocator.unwrap_or(Allocator::Malloc)
    }
    /// `memstat_get_name`: the text form of the name ([`crate::text::name_text`]), what the
    /// tools show. The same for every name that is printable ASCII without a backslash.
    pub fn name(&self) -> &str {
        &self.name_text
    }
    /// The name's bytes, as the kernel has them.
    pub fn name_bytes(&self) -> &[u8] {
        &self.name
    }
    /// The text form of the name as a dtmalloc probe ([`crate::text::probe_name_text`]):
    /// every byte of ASCII white space replaced by `_`, then written as text.
    pub fn probe_name(&self) -> String {
        text::probe_name_text(&self.name)
    }
    /// The probe name's bytes ([`crate::probe_name`]).
    pub fn probe_name_bytes(&self) -> Vec<u8> {
        text::probe_name(&self.name)
    }
    /// Registration id of a malloc type (0 for a slab cache).
    pub fn id(&self) -> u64 {
        self.id
    }
    /// The malloc type's zone (`mti_zone`); 0 for a slab cache.
    pub fn zone(&self) -> u32 {
        self.zone
    }
    /// `MALLOC_TYPE_F_*` flags of a malloc type.
    pub fn flags(&self) -> u32 {
        self.flags
    }
    /// Whether the malloc type is defined in a loadable module.
    pub fn is_module(&self) -> bool {
        self.flags & stream::FLAG_MODULE != 0
    }
    /// Whether the malloc type's module has unloaded, the type staying while memory charged to
    /// it is allocated.
    pub fn is_unloaded(&self) -> bool {
        self.flags & stream::FLAG_UNLOADED != 0
    }
    /// The module that defines the malloc type, or `vmlinux`, in text form; empty when
    /// the source does not say (a version 1 stream, a slab cache).
    pub fn owner(&self) -> &str {
        &self.owner_text
    }
    /// The owner's bytes.
    pub fn owner_bytes(&self) -> &[u8] {
        &self.owner
    }
    /// The malloc type's peak bytes in use (accounted sizes) since its
    /// tracking started or was reset (`/proc/malloc_types_peak`); `None`
    /// while it is not tracked.
    pub fn peak(&self) -> Option<u64> {
        (self.flags & stream::FLAG_PEAK != 0).then_some(self.peak)
    }
    getters!(
        /// `memstat_get_countlimit`: 0, there are no limits here.
        countlimit,
        /// `memstat_get_byteslimit`: 0, there are no limits here.
        byteslimit,
        /// `memstat_get_sizemask`: zones used (malloc).
        sizemask,
        /// `memstat_get_size`: object size (slab).
        size,
        /// `memstat_get_rsize`: object size with metadata and alignment (slab).
        rsize,
        /// `memstat_get_memalloced`.
        memalloced,
        /// `memstat_get_memfreed`.
        memfreed,
        /// `memstat_get_numallocs`.
        numallocs,
        /// `memstat_get_numfrees`.
        numfrees,
        /// `memstat_get_bytes`: bytes in use, clamped at 0.
        bytes,
        /// `memstat_get_count`: items in use, clamped at 0.
        count,
        /// `memstat_get_free`: free items cached (slab: allocated objects not in use).
        free,
        /// `memstat_get_failures`: allocations that returned no memory (malloc
        /// types of a version 2 stream; 0 where not counted).
        failures,
        /// `memstat_get_sleeps` (0: not counted).
        sleeps,
        /// `memstat_get_xdomain` (0: not counted).
        xdomain,
        /// `memstat_get_zonefree`.
        zonefree,
        /// `memstat_get_kegfree`.
        kegfree,
    );

    /// Number of per-CPU records (`mtsh_maxcpus` for malloc types, 0 for
    /// slab caches).
    pub fn maxcpus(&self) -> usize {
        self.percpu.len()
    }
    /// All per-CPU records.
    pub fn percpu(&self) -> &[PerCpu] {
        &self.percpu
    }
    fn cpu(&self, cpu: usize) -> Result<&PerCpu> {
        self.percpu
            .get(cpu)
            .ok_or_else(|| range("cpu", cpu, self.percpu.len()))
    }
    fn cpu_mut(&mut self, cpu: usize) -> Result<&mut PerCpu> {
        let n = self.percpu.len();
        self.percpu.get_mut(cpu).ok_or_else(|| range("cpu", cpu, n))
    }
    /// `memstat_get_percpu_memalloced`.
    pub fn percpu_memalloced(&self, cpu: usize) -> Result<u64> {
        self.cpu(cpu).map(|c| c.memalloced)
    }
    /// `memstat_get_percpu_memfreed`.
    pub fn percpu_memfreed(&self, cpu: usize) -> Result<u64> {
        self.cpu(cpu).map(|c| c.memfreed)
    }
    /// `memstat_get_percpu_numallocs`.
    pub fn percpu_numallocs(&self, cpu: usize) -> Result<u64> {
        self.cpu(cpu).map(|c| c.numallocs)
    }
    /// `memstat_get_percpu_numfrees`.
    pub fn percpu_numfrees(&self, cpu: usize) -> Result<u64> {
        self.cpu(cpu).map(|c| c.numfrees)
    }
    /// `memstat_get_percpu_sizemask`.
    pub fn percpu_sizemask(&self, cpu: usize) -> Result<u64> {
        self.cpu(cpu).map(|c| c.sizemask)
    }
    /// Allocations that returned no memory on `cpu` (malloc types).
    pub fn percpu_failures(&self, cpu: usize) -> Result<u64> {
        self.cpu(cpu).map(|c| c.failures)
    }
    /// `memstat_get_percpu_free`.
    pub fn percpu_free(&self, cpu: usize) -> Result<u64> {
        self.cpu(cpu).map(|c| c.free)
    }
    /// Global caller-owned fields.
    pub fn caller(&self) -> &CallerFields {
        &self.caller
    }
    /// Global caller-owned fields, writable.
    pub fn caller_mut(&mut self) -> &mut CallerFields {
        &mut self.caller
    }
    /// `memstat_get_caller_pointer`.
    pub fn caller_pointer(&self, i: usize) -> Option<usize> {
        self.caller.pointer(i)
    }
    /// `memstat_set_caller_pointer`.
    pub fn set_caller_pointer(&mut self, i: usize, v: usize) -> Result<()> {
        self.caller.set_pointer(i, v)
    }
    /// `memstat_get_caller_uint64`.
    pub fn caller_uint64(&self, i: usize) -> Option<u64> {
        self.caller.uint64(i)
    }
    /// `memstat_set_caller_uint64`.
    pub fn set_caller_uint64(&mut self, i: usize, v: u64) -> Result<()> {
        self.caller.set_uint64(i, v)
    }
    /// `memstat_get_percpu_caller_pointer`.
    pub fn percpu_caller_pointer(&self, cpu: usize, i: usize) -> Result<usize> {
        self.cpu(cpu)?
            .caller
            .pointer(i)
            .ok_or_else(|| range("caller pointer", i, MAXCALLER))
    }
    /// `memstat_set_percpu_caller_pointer`.
    pub fn set_percpu_caller_pointer(&mut self, cpu: usize, i: usize, v: usize) -> Result<()> {
        self.cpu_mut(cpu)?.caller.set_pointer(i, v)
    }
    /// `memstat_get_percpu_caller_uint64`.
    pub fn percpu_caller_uint64(&self, cpu: usize, i: usize) -> Result<u64> {
        self.cpu(cpu)?
            .caller
            .uint64(i)
            .ok_or_else(|| range("caller uint64", i, MAXCALLER))
    }
    /// `memstat_set_percpu_caller_uint64`.
    pub fn set_percpu_caller_uint64(&mut self, cpu: usize, i: usize, v: u64) -> Result<()> {
        self.cpu_mut(cpu)?.caller.set_uint64(i, v)
    }
    /// Slab-cache details (slab caches only).
    pub fn slab_details(&self) -> Option<&SlabDetails> {
        self.slab.as_ref()
    }
    /// A slab cache's name in its source ([`SlabDetails::cache`]); the name otherwise.
    fn slab_cache(&self) -> &[u8] {
        self.slab.as_ref().map_or(&self.name, |s| &s.cache)
    }
    /// Whether one of the entry's names is `name` in text form: its name, and for a slab cache
    /// each name merged into it and its directory's.
    fn is_named(&self, name: &str) -> bool {
        self.name_text == name
            || self.slab.as_ref().is_some_and(|s| {
                std::iter::once(&s.cache)
                    .chain(&s.merged)
                    .any(|n| name_text(n) == name)
            })
    }
    /// The names of the entry as bytes: its name, and for a slab cache each name merged into it
    /// and its directory's.
    pub fn all_names(&self) -> impl Iterator<Item = &[u8]> {
        let slab = self
            .slab
            .iter()
            .flat_map(|s| std::iter::once(&s.cache).chain(&s.merged));
        std::iter::once(self.name.as_slice()).chain(slab.map(Vec::as_slice))
    }

    /// `_memstat_mt_reset_stats`: zero every library-owned field but the name
    /// and the owner (which the loads set) and resize the per-CPU array to
    /// `maxcpus`, keeping caller-owned fields (new CPU slots start with zeroed
    /// caller fields).
    fn reset_stats(&mut self, maxcpus: usize) {
        // Field by field, so that the caller fields (a quarter KiB per entry and per CPU) are
        // not copied out and back; the patterns name every field, so that a field added later
        // is not forgotten here.
        self.percpu.resize_with(maxcpus, PerCpu::default);
        for p in &mut self.percpu {
            let PerCpu {
                memalloced,
                memfreed,
                numallocs,
                numfrees,
                sizemask,
                failures,
                free,
                caller: _,
            } = p;
            for v in [
                memalloced, memfreed, numallocs, numfrees, sizemask, failures, free,
            ] {
                *v = 0;
            }
        }
        let MemoryType {
            allocator: _,
            name: _,
            name_text: _,
            id,
            zone,
            flags,
            peak,
            owner: _,
            owner_text: _,
            countlimit,
            byteslimit,
            sizemask,
            size,
            rsize,
            memalloced,
            memfreed,
            numallocs,
            numfrees,
            bytes,
            count,
            free,
            failures,
            sleeps,
            xdomain,
            zonefree,
            kegfree,
            percpu: _,
            slab,
            caller: _,
            generation: _,
        } = self;
        *zone = 0;
        *flags = 0;
        *slab = None;
        for v in [
            id, peak, countlimit, byteslimit, sizemask, size, rsize, memalloced, memfreed,
            numallocs, numfrees, bytes, count, free, failures, sleeps, xdomain, zonefree, kegfree,
        ] {
            *v = 0;
        }
    }

    /// Fill from one type of a malloc stream.
    fn load_malloc(&mut self, t: &StreamType) {
        let h = header_of!(t);
        self.load_malloc_fields(&h, t.stats.iter().copied());
    }

    /// Fill from one type of a malloc stream, as its bytes hold it.
    fn load_malloc_raw(&mut self, t: &StreamTypeRef<'_>) {
        let h = header_of!(t);
        self.load_malloc_fields(&h, t.stats());
    }

    fn load_malloc_fields(
        &mut self,
        h: &Header<'_>,
        stats: impl ExactSizeIterator<Item = CpuStats>,
    ) {
        self.reset_stats(stats.len());
        // The merge loads an entry whose name is `name` already, or a new, empty one.
        if self.name.is_empty() {
            self.name = h.name.to_vec();
            self.name_text = name_text(h.name);
        }
        debug_assert_eq!(self.name, h.name);
        self.id = h.id;
        self.zone = h.zone;
        self.flags = h.flags;
        self.peak = h.peak;
        // Most updates find the owner unchanged: it is neither copied nor written as text then.
        if !same_bytes(&self.owner, h.owner) {
            self.owner.clear();
            self.owner.extend_from_slice(h.owner);
            self.owner_text = name_text(h.owner);
        }
        for (p, s) in self.percpu.iter_mut().zip(stats) {
            p.memalloced = s.memalloced;
            p.memfreed = s.memfreed;
            p.numallocs = s.numallocs;
            p.numfrees = s.numfrees;
            p.sizemask = s.size;
            p.failures = s.numfailures;
            // Sums saturate: a counter that cannot be told is at its largest, never wrapped
            // round to a small number.
            self.failures = self.failures.saturating_add(s.numfailures);
            self.memalloced = self.memalloced.saturating_add(s.memalloced);
            self.memfreed = self.memfreed.saturating_add(s.memfreed);
            self.numallocs = self.numallocs.saturating_add(s.numallocs);
            self.numfrees = self.numfrees.saturating_add(s.numfrees);
            self.sizemask |= s.size;
        }
        // Racy per-CPU sums can make these negative: approximate with 0,
        // as the kernel's own text export does (libmemstat wraps instead).
        self.bytes = self.memalloced.saturating_sub(self.memfreed);
        self.count = self.numallocs.saturating_sub(self.numfrees);
    }

    /// Fill from a slab cache: named by its own name, the first of the names merged into it
    /// (what `/proc/slabinfo` shows), or else by its directory.
    fn load_slab(&mut self, c: &SlabCache) {
        self.reset_stats(0);
        let name = c.merged.first().unwrap_or(&c.name);
        if self.name != *name {
            self.name.clone_from(name);
            self.name_text = name_text(name);
        }
        self.owner.clear();
        self.owner_text.clear();
        self.size = c.object_size;
        self.rsize = c.slab_size;
        self.count = c.active_objs;
        self.free = c.total_objs.saturating_sub(c.active_objs);
        self.zonefree = self.free;
        self.bytes = c.active_objs.saturating_mul(c.object_size);
        self.numallocs = c.allocs;
        self.numfrees = c.frees;
        self.memalloced = c.allocs.saturating_mul(c.object_size);
        self.memfreed = c.frees.saturating_mul(c.object_size);
        self.slab = Some(SlabDetails {
            slabs: c.slabs,
            objs_per_slab: c.objs_per_slab,
            order: c.order,
            aliases: c.aliases,
            cache: c.name.clone(),
            merged: c.merged.clone(),
        });
    }

    /// A malloc type built straight from stream values (no list).
    pub fn from_stream_type(t: &StreamType) -> MemoryType {
        let mut mt = MemoryType {
            allocator: Some(Allocator::Malloc),
            ..MemoryType::default()
        };
        mt.load_malloc(t);
        mt
    }

    /// The stream record of this malloc type (for saving snapshots).
    pub fn to_stream_type(&self) -> StreamType {
        StreamType {
            name: self.name.clone(),
            id: self.id,
            zone: self.zone,
            flags: self.flags,
            peak: self.peak,
            owner: self.owner.clone(),
            stats: self
                .percpu
                .iter()
                .map(|p| stream::CpuStats {
                    memalloced: p.memalloced,
                    memfreed: p.memfreed,
                    numallocs: p.numallocs,
                    numfrees: p.numfrees,
                    size: p.sizemask,
                    numfailures: p.failures,
                })
                .collect(),
        }
    }
}

/// A list of memory types (`struct memory_type_list`).
///
/// Updating the list from a source updates existing entries in place (their
/// caller-owned fields survive), appends new ones in source order, and —
/// unlike libmemstat, whose manual lists this under BUGS — **removes**
/// entries of that allocator that the source no longer presents (an
/// unloaded module's malloc types, a destroyed slab cache).
///
/// Malloc types are identified by their registration id (names need not be
/// unique); slab caches by name.
#[derive(Debug, Clone, Default)]
pub struct MemoryTypeList {
    types: Vec<MemoryType>,
    error: Option<ErrorKind>,
    zones: ZoneSizes,
    maxcpus: u32,
    generation: u64,
    /// The buffer [`MemoryTypeList::read_malloc`] reads streams into.
    buf: Vec<u8>,
}

impl MemoryTypeList {
    /// `memstat_mtl_alloc`: an empty list, zone sizes defaulted.
    pub fn new() -> MemoryTypeList {
        MemoryTypeList::default()
    }

    /// Iterate in list order (`memstat_mtl_first` / `memstat_mtl_next`).
    pub fn iter(&self) -> std::slice::Iter<'_, MemoryType> {
        self.types.iter()
    }
    /// Iterate mutably (caller fields).
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, MemoryType> {
        self.types.iter_mut()
    }
    /// `memstat_mtl_first`.
    pub fn first(&self) -> Option<&MemoryType> {
        self.types.first()
    }
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.types.len()
    }
    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.types.is_empty()
    }
    /// Drop every entry (`_memstat_mtl_empty`).
    pub fn clear(&mut self) {
        self.types.clear();
    }
    /// The entry at `index` in list order.
    pub fn get(&self, index: usize) -> Option<&MemoryType> {
        self.types.get(index)
    }
    /// Mutable [`MemoryTypeList::get`].
    pub fn get_mut(&mut self, index: usize) -> Option<&mut MemoryType> {
        self.types.get_mut(index)
    }
    /// The position in list order of the entry [`MemoryTypeList::find`] returns.
    pub fn position(&self, allocator: AllocatorFilter, name: &str) -> Option<usize> {
        self.types
            .iter()
            .position(|t| allocator.matches(t.allocator()) && t.is_named(name))
    }
    /// `memstat_mtl_find`: the first entry of `allocator` whose name is `name`, in text form
    /// (what [`MemoryType::name`] returns); a merged slab cache is found by any of the names
    /// merged into it, and by its sysfs directory's (`:0000136`).
    pub fn find(&self, allocator: AllocatorFilter, name: &str) -> Option<&MemoryType> {
        self.types
            .iter()
            .find(|t| allocator.matches(t.allocator()) && t.is_named(name))
    }
    /// Mutable [`MemoryTypeList::find`].
    pub fn find_mut(&mut self, allocator: AllocatorFilter, name: &str) -> Option<&mut MemoryType> {
        self.types
            .iter_mut()
            .find(|t| allocator.matches(t.allocator()) && t.is_named(name))
    }
    /// The first entry of `allocator` whose name's bytes are `name`.
    pub fn find_bytes(&self, allocator: AllocatorFilter, name: &[u8]) -> Option<&MemoryType> {
        self.types
            .iter()
            .find(|t| allocator.matches(t.allocator()) && t.name == name)
    }
    /// The malloc type with registration id `id`.
    pub fn find_id(&self, id: u64) -> Option<&MemoryType> {
        self.types
            .iter()
            .find(|t| t.allocator() == Allocator::Malloc && t.id == id)
    }
    /// Mutable [`MemoryTypeList::find_id`].
    pub fn find_id_mut(&mut self, id: u64) -> Option<&mut MemoryType> {
        self.types
            .iter_mut()
            .find(|t| t.allocator() == Allocator::Malloc && t.id == id)
    }
    /// `memstat_mtl_geterror`: the class of the last failed update.
    pub fn error(&self) -> Option<ErrorKind> {
        self.error
    }
    /// The zone size table used for malloc types.
    pub fn zones(&self) -> &ZoneSizes {
        &self.zones
    }
    /// Replace the zone size table.
    pub fn set_zones(&mut self, zones: ZoneSizes) {
        self.zones = zones;
    }
    /// `mtsh_maxcpus` of the last malloc stream read.
    pub fn maxcpus(&self) -> u32 {
        self.maxcpus
    }

    fn record<T>(&mut self, r: Result<T>) -> Result<T> {
        match &r {
            Ok(_) => self.error = None,
            Err(e) => self.error = Some(e.kind()),
        }
        r
    }

    /// Merge `items` of `allocator` into the list. An existing entry is the
    /// same object as an item when `same` says so (each entry matches at
    /// most one item, the first in list order); `load` refreshes it. `key`
    /// of an entry and `item_key` of the same item must be equal (a hash of
    /// what `same` compares). Linear in the sizes of the list and of
    /// `items`. The items that come in the order of the entries, as the
    /// kernel's types do from one update to the next, are matched by walking
    /// both in step, with no key computed; from the first item that is not the
    /// next entry on, the remaining entries are found through a hash map of
    /// their keys, built once per update, with no allocation per entry
    /// (entries with the same key are chained through one array). Both ways
    /// give each item the first unmatched entry in list order that is the same.
    fn merge<I>(
        &mut self,
        allocator: Allocator,
        items: &[I],
        key: impl Fn(&MemoryType) -> u64,
        item_key: impl Fn(&I) -> u64,
        same: impl Fn(&MemoryType, &I) -> bool,
        load: impl Fn(&mut MemoryType, &I),
    ) {
        const NONE: usize = usize::MAX;
        self.generation = self.generation.wrapping_add(1);
        let gen = self.generation;
        // In step: while item `k` is the same as the next entry of this
        // allocator, that entry is its match (every entry before it is matched
        // already, so it is the first unmatched one in list order).
        let mut at = 0;
        let mut matched = 0;
        for item in items {
            while at < self.types.len() && self.types[at].allocator() != allocator {
                at += 1;
            }
            match self.types.get_mut(at) {
                Some(t) if same(t, item) => {
                    load(t, item);
                    t.generation = gen;
                    at += 1;
                    matched += 1;
                }
                _ => break,
            }
        }
        let items = &items[matched..];
        if items.is_empty() {
            self.types
                .retain(|t| t.allocator() != allocator || t.generation == gen);
            return;
        }
        // Unmatched entries of this allocator by key: the first of each key in
        // `heads`, the next one with the same key in `next`, in list order.
        let mut heads = KeyMap::with_capacity_and_hasher(self.types.len() - at, Default::default());
        let mut tails = KeyMap::default();
        let mut next = vec![NONE; self.types.len()];
        for (i, t) in self.types.iter().enumerate().skip(at) {
            if t.allocator() != allocator {
                continue;
            }
            let k = key(t);
            match heads.get(&k) {
                None => {
                    heads.insert(k, i);
                }
                Some(&head) => {
                    // A repeated key (rare): append to its chain.
                    let tail = tails.get(&k).copied().unwrap_or(head);
                    next[tail] = i;
                    tails.insert(k, i);
                }
            }
        }
        for item in items {
            let k = item_key(item);
            let mut pos = None;
            if let Some(head) = heads.get_mut(&k) {
                let (mut prev, mut cur) = (NONE, *head);
                while cur != NONE {
                    if same(&self.types[cur], item) {
                        // Unlink `cur`: it matches no other item.
                        if prev == NONE {
                            *head = next[cur];
                        } else {
                            next[prev] = next[cur];
                        }
                        pos = Some(cur);
                        break;
                    }
                    prev = cur;
                    cur = next[cur];
                }
            }
            match pos {
                Some(i) => {
                    let t = &mut self.types[i];
                    load(t, item);
                    t.generation = gen;
                }
                None => {
                    let mut t = MemoryType {
                        allocator: Some(allocator),
                        ..MemoryType::default()
                    };
                    load(&mut t, item);
                    t.allocator = Some(allocator);
                    t.generation = gen;
                    self.types.push(t);
                }
            }
        }
        self.types
            .retain(|t| t.allocator() != allocator || t.generation == gen);
    }

    /// Update the malloc types from a parsed stream. On error the list is
    /// left as it was.
    ///
    /// An entry is the same type as a stream record when both the
    /// registration id and the name are equal.
    ///
    /// Errors: [`Error::DataError`] for two records with the same id
    /// ([`stream::check_unique_ids`]), as [`stream::parse_stream`] refuses them.
    pub fn update_malloc_stream(&mut self, s: &Stream) -> Result<()> {
        let r = stream::check_unique_ids(s.types.iter().map(|t| t.id))
            .map(|()| self.merge_malloc(s.maxcpus, &s.types));
        self.record(r)
    }

    /// Update the malloc types from stream bytes. On error the list is left
    /// as it was.
    ///
    /// The types are read from `buf` in place (as [`stream::parse_stream_ref`]
    /// does, with its checks): an update allocates nothing per type but for
    /// the types that are new, and copies an owner only where it is not the
    /// entry's already.
    pub fn update_malloc_bytes(&mut self, buf: &[u8]) -> Result<()> {
        let r = stream::parse_stream_ref(buf).map(|(maxcpus, types)| {
            self.merge_malloc(maxcpus, &types);
        });
        self.record(r)
    }

    /// Merge the malloc types of a stream, owned or borrowed: an entry is
    /// the same type as a record when both the id and the name are equal.
    fn merge_malloc<I: MallocRecord>(&mut self, maxcpus: u32, types: &[I]) {
        self.maxcpus = maxcpus;
        self.merge(
            Allocator::Malloc,
            types,
            |t| key_of(t.id, &t.name),
            |st| key_of(st.id(), st.name()),
            |t, st| t.id == st.id() && same_bytes(st.name(), &t.name),
            |t, st| {
                st.load_into(t);
                t.allocator = Some(Allocator::Malloc);
            },
        );
    }

    /// Read a stream from `path` (`/proc/malloc_stats` or a saved stream
    /// file) and update the malloc types. Zone sizes are not touched.
    ///
    /// The list keeps the buffer it reads into from one update to the next.
    pub fn read_malloc(&mut self, path: &Path) -> Result<()> {
        let mut buf = std::mem::take(&mut self.buf);
        let r = stream::read_stream_file_into(path, &mut buf);
        let r = self.record(r).and_then(|()| self.update_malloc_bytes(&buf));
        self.buf = buf;
        r
    }

    /// `memstat_kvm_malloc`: update the malloc types and the zone sizes
    /// from a core (a vmcore or `/proc/kcore`, [`crate::kvm::Core`]). On
    /// error the list is left as it was, and [`MemoryTypeList::error`] says
    /// which class of error it was.
    pub fn kvm_malloc(&mut self, core: &crate::kvm::Core) -> Result<()> {
        let r = core.read_malloc();
        let k = self.record(r)?;
        self.update_malloc_bytes(&k.stream)?;
        self.zones = k.zones;
        Ok(())
    }

    /// `memstat_sysctl_malloc`: read the zone sizes under `sysctl_dir`
    /// (with fallback) and the stream at `proc_path`.
    pub fn sysctl_malloc(&mut self, proc_path: &Path, sysctl_dir: &Path) -> Result<()> {
        self.update_zones(sysctl_dir);
        self.read_malloc(proc_path)
    }

    /// Refresh the zone sizes from the sysctls under `sysctl_dir`.
    ///
    /// A table read from the kernel before is kept when the sysctls cannot be read now (a
    /// transient error, a file that vanished): the kernel's size classes do not change while
    /// it runs, and a silent switch to [`ZoneSizes::default`] would relabel every size column.
    /// Without an earlier kernel table the fallback is used, as [`ZoneSizes::from_sysctl`] does.
    pub fn update_zones(&mut self, sysctl_dir: &Path) {
        match ZoneSizes::try_from_sysctl(sysctl_dir) {
            Ok(z) => self.zones = z,
            Err(_) if self.zones.from_kernel() => {}
            Err(_) => self.zones = ZoneSizes::default(),
        }
    }

    /// Update the slab caches from already-read caches: an entry is the same cache as one
    /// read when their directories (or slabinfo names) are the same.
    pub fn update_slab_caches(&mut self, caches: &[SlabCache]) {
        self.merge(
            Allocator::Slab,
            caches,
            |t| key_of(0, t.slab_cache()),
            |c| key_of(0, &c.name),
            |t, c| t.slab_cache() == c.name,
            |t, c| {
                t.load_slab(c);
                t.allocator = Some(Allocator::Slab);
            },
        );
    }

    /// `memstat_sysctl_uma`: read the slab caches from `src` and update.
    pub fn read_slab(&mut self, src: &SlabSource) -> Result<()> {
        let r = slab::read_caches(src);
        let caches = self.record(r)?;
        self.update_slab_caches(&caches);
        Ok(())
    }

    /// `memstat_sysctl_all`: malloc types, then slab caches; stops at the
    /// first failure.
    pub fn sysctl_all(
        &mut self,
        proc_path: &Path,
        sysctl_dir: &Path,
        src: &SlabSource,
    ) -> Result<()> {
        self.sysctl_malloc(proc_path, sysctl_dir)?;
        self.read_slab(src)
    }

    /// The malloc types as a stream (for `memstat --save`).
    pub fn to_stream(&self) -> Vec<u8> {
        let types: Vec<StreamType> = self
            .types
            .iter()
            .filter(|t| t.allocator() == Allocator::Malloc)
            .map(MemoryType::to_stream_type)
            .collect();
        let maxcpus = if self.maxcpus == 0 { 1 } else { self.maxcpus };
        stream::write_stream(maxcpus, &types)
    }
}

impl<'a> IntoIterator for &'a MemoryTypeList {
    type Item = &'a MemoryType;
    type IntoIter = std::slice::Iter<'a, MemoryType>;
    fn into_iter(self) -> Self::IntoIter {
        self.types.iter()
    }
}

/// Convenience: a path buffer of the default proc file.
pub fn default_proc_path() -> PathBuf {
    PathBuf::from(DEFAULT_PROC_PATH)
}
