//! How much of the kmalloc caches' memory the malloc types hold: the reconciliation that ends
//! `memstat -m`.
//!
//! The kernel counts, per kmalloc size class, the bytes of kmalloc blocks in use charged to
//! types (`vm.malloc_zone_memuse`, by the `zindx` of `vm.malloc_zone_sizes`); SLUB's sysfs gives
//! the objects in use of each kmalloc cache. Per class, the caches' bytes (objects in use times
//! object size, over every kind of kmalloc cache of that size: normal, `cg`, `rcl`, `dma`, the
//! partitions `part-NN` and the bucket sets of `kmem_buckets_create()`) against the
//! types' bytes; the difference is what no type holds.
//!
//! SLUB counts the free objects its per-CPU sheaves and its barns hold for reuse as in use; a
//! kernel that says how many (a cache's `sheaf_objects` file) has them taken off, and shown
//! apart. Generic KASAN's quarantine also holds freed objects that count as in use until they
//! go back to their slabs, and no type holds them; a kernel that says how many (a cache's
//! `quarantine_objects` file) has them taken off and shown apart too. The caches
//! `kmalloc-no-objext-*` hold what the slab allocator
//! allocates for itself (the vectors of per-object records of the other caches): they are shown
//! apart, not as kmalloc memory.
//!
//! ```
//! use memstat::coverage::Coverage;
//! use memstat::{SlabCache, ZoneSizes};
//!
//! let zones = ZoneSizes::new(vec![8, 16, 32]).unwrap();
//! let cache = |name: &str, object_size, active_objs, sheaf_objs, quarantine_objs| SlabCache {
//!     name: name.into(), object_size, active_objs, sheaf_objs, quarantine_objs,
//!     ..Default::default()
//! };
//! let caches = [
//!     cache("kmalloc-16", 16, 100, 4, 2),
//!     cache("kmalloc-cg-16", 16, 10, 0, 0),
//!     cache("kmalloc-no-objext-32", 32, 4, 0, 0),
//!     cache("dentry", 192, 1000, 0, 0),
//! ];
//! let c = Coverage::new(&zones, &[0, 1600, 0], &caches).unwrap();
//! let k = &c.classes[1];
//! assert_eq!((k.cache_bytes, k.sheaf_bytes, k.quarantine_bytes), (1664, 64, 32));
//! assert_eq!(k.untyped_bytes(), 64);
//! assert_eq!((c.cache_bytes(), c.typed_bytes(), c.slab_own_bytes), (1664, 1600, 128));
//! ```

use std::io;
use std::path::Path;

use crate::error::{Error, Result};
use crate::slab::{read_sys_cache_objects, read_sys_dir_with, QuarantineFiles, SlabCache};
use crate::zones::{read_sysctl, ZoneSizes, ZONE_COUNT_MAX};

/// One kmalloc size class: what its caches hold and what the types hold of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassCoverage {
    /// The class's object size in bytes (`vm.malloc_zone_sizes`).
    pub size: u64,
    /// Bytes in use in the kmalloc caches of this size: objects in use (not those free in the
    /// sheaves or in KASAN's quarantine) times object size.
    pub cache_bytes: u64,
    /// Bytes of the free objects the sheaves of these caches hold.
    pub sheaf_bytes: u64,
    /// Bytes of the freed objects of these caches that KASAN's quarantine holds.
    pub quarantine_bytes: u64,
    /// Bytes of blocks of this class charged to malloc types (`vm.malloc_zone_memuse`).
    pub typed_bytes: u64,
}

impl ClassCoverage {
    /// The caches' bytes that no type holds; negative when the types hold more than the caches
    /// count (a KFENCE object is charged to its class but lives outside the caches' slabs).
    pub fn untyped_bytes(&self) -> i64 {
        signed_difference(self.cache_bytes, self.typed_bytes)
    }
}

/// `a - b` as an `i64`, saturating.
fn signed_difference(a: u64, b: u64) -> i64 {
    let d = i128::from(a) - i128::from(b);
    i64::try_from(d).unwrap_or(if d < 0 { i64::MIN } else { i64::MAX })
}

/// The reconciliation of the malloc types against the kmalloc caches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Coverage {
    /// One entry per size class, by `zindx`.
    pub classes: Vec<ClassCoverage>,
    /// Bytes in use in the caches `kmalloc-no-objext-*`: the slab allocator's own (the free
    /// objects of their sheaves and quarantine not included).
    pub slab_own_bytes: u64,
}

/// What a slab cache is to the reconciliation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheKind {
    /// A kmalloc cache, whose objects are kmalloc blocks.
    Kmalloc,
    /// A cache of the slab allocator's own allocations (`kmalloc-no-objext-*`).
    SlabOwn,
}

/// The prefixes of the names of kmalloc caches: the kmalloc caches themselves (every kind), and
/// the bucket sets that kernel code makes with `kmem_buckets_create()` and allocates from with
/// `kmem_buckets_alloc()`, a kmalloc with its own caches (`memdup_user()`'s, System V messages',
/// and the zones of `malloc_types.numzones`, `malloc-zoneN-`).
const KMALLOC_PREFIXES: [&[u8]; 4] = [b"kmalloc-", b"dma-kmalloc-", b"memdup_user-", b"msg_msg-"];

/// The prefix of the caches of the slab allocator's own allocations.
const SLAB_OWN_PREFIX: &[u8] = b"kmalloc-no-objext-";

/// The kind of the cache called `name` (a SLUB sysfs directory or link name, or a slabinfo
/// name), or `None` for a cache that is not kmalloc's.
///
/// ```
/// use memstat::coverage::{cache_kind, CacheKind};
/// assert_eq!(cache_kind(b"kmalloc-part-03-64"), Some(CacheKind::Kmalloc));
/// assert_eq!(cache_kind(b"malloc-zone2-1k"), Some(CacheKind::Kmalloc));
/// assert_eq!(cache_kind(b"kmalloc-no-objext-64"), Some(CacheKind::SlabOwn));
/// assert_eq!(cache_kind(b"malloc-zone-1k"), None);
/// assert_eq!(cache_kind(b"dentry"), None);
/// ```
pub fn cache_kind(name: &[u8]) -> Option<CacheKind> {
    if name.starts_with(SLAB_OWN_PREFIX) {
        return Some(CacheKind::SlabOwn);
    }
    if KMALLOC_PREFIXES.iter().any(|p| name.starts_with(p)) {
        return Some(CacheKind::Kmalloc);
    }
    // `malloc-zoneN-SIZE`, N a number.
    let zone = name.strip_prefix(b"malloc-zone")?;
    let digits = zone.iter().take_while(|b| b.is_ascii_digit()).count();
    (digits > 0 && zone.get(digits) == Some(&b'-')).then_some(CacheKind::Kmalloc)
}

/// The kind of a cache by its directory name and the names merged into it: kmalloc's if any of
/// them is (a cache that others were merged into holds their objects too, which no type can
/// hold, as the reconciliation then shows), else the slab allocator's own if any is.
fn kind_of(c: &SlabCache) -> Option<CacheKind> {
    let kinds = || {
        std::iter::once(&c.name)
            .chain(&c.merged)
            .map(|n| cache_kind(n))
    };
    if kinds().any(|k| k == Some(CacheKind::Kmalloc)) {
        Some(CacheKind::Kmalloc)
    } else {
        kinds().find(Option::is_some).flatten()
    }
}

/// Parses the text of `vm.malloc_zone_memuse`: unsigned integers separated by white space (as
/// `proc_doulongvec_minmax()` prints them), at most [`ZONE_COUNT_MAX`].
///
/// ```
/// use memstat::coverage::parse_zone_memuse;
/// assert_eq!(parse_zone_memuse("4096\t0\t128\n").unwrap(), vec![4096, 0, 128]);
/// assert!(parse_zone_memuse("12 -1").is_err());
/// ```
pub fn parse_zone_memuse(text: &str) -> Result<Vec<u64>> {
    let mut v = Vec::new();
    for tok in text.split_whitespace() {
        if v.len() == ZONE_COUNT_MAX {
            return Err(Error::data(format!(
                "malloc_zone_memuse: more than {ZONE_COUNT_MAX} values"
            )));
        }
        v.push(tok.parse().map_err(|_| {
            Error::data(format!(
                "malloc_zone_memuse: '{}' is not a number of bytes",
                crate::text::as_text(tok.as_bytes())
            ))
        })?);
    }
    Ok(v)
}

impl Coverage {
    /// The reconciliation of `memuse` (`vm.malloc_zone_memuse`, one value per size class of
    /// `zones`) against `caches`. A kmalloc cache whose object size is no class's counts in no
    /// class (a kernel whose sizes the table does not describe).
    ///
    /// Errors: [`Error::DataError`] when `memuse` has not one value per class, or the classes'
    /// sizes do not increase (the kernel's do: a size would name two classes).
    pub fn new(zones: &ZoneSizes, memuse: &[u64], caches: &[SlabCache]) -> Result<Coverage> {
        if zones.sizes().windows(2).any(|w| w[0] >= w[1]) {
            return Err(Error::data("malloc_zone_sizes: the sizes do not increase"));
        }
        if memuse.len() != zones.count() {
            return Err(Error::data(format!(
                "malloc_zone_memuse has {} values for {} size classes",
                memuse.len(),
                zones.count()
            )));
        }
        let mut classes: Vec<ClassCoverage> = zones
            .sizes()
            .iter()
            .zip(memuse)
            .map(|(&size, &typed_bytes)| ClassCoverage {
                size,
                cache_bytes: 0,
                sheaf_bytes: 0,
                quarantine_bytes: 0,
                typed_bytes,
            })
            .collect();
        let mut slab_own_bytes = 0u64;
        for c in caches {
            // The files are read one after the other: never more free than given out.
            let sheaf = c.sheaf_objs.min(c.active_objs);
            let quarantine = c.quarantine_objs.min(c.active_objs - sheaf);
            let in_use = c.active_objs - sheaf - quarantine;
            let bytes = in_use.saturating_mul(c.object_size);
            match kind_of(c) {
                Some(CacheKind::SlabOwn) => slab_own_bytes = slab_own_bytes.saturating_add(bytes),
                Some(CacheKind::Kmalloc) => {
                    if let Some(k) = classes.iter_mut().find(|k| k.size == c.object_size) {
                        k.cache_bytes = k.cache_bytes.saturating_add(bytes);
                        k.sheaf_bytes = k
                            .sheaf_bytes
                            .saturating_add(sheaf.saturating_mul(c.object_size));
                        k.quarantine_bytes = k
                            .quarantine_bytes
                            .saturating_add(quarantine.saturating_mul(c.object_size));
                    }
                }
                None => {}
            }
        }
        Ok(Coverage {
            classes,
            slab_own_bytes,
        })
    }

    /// Reads the running kernel's reconciliation: the size classes and `vm.malloc_zone_memuse`
    /// under `sysctl_dir`, the kmalloc caches under `slab_dir` (SLUB's sysfs; only their
    /// directories are read). `None` for a kernel without `vm.malloc_zone_memuse` or without
    /// `slab_dir`.
    ///
    /// Errors: those of reading the files, or their contents.
    pub fn read(sysctl_dir: &Path, slab_dir: &Path) -> Result<Option<Coverage>> {
        let p = sysctl_dir.join("vm/malloc_zone_memuse");
        let text = match read_sysctl(&p) {
            Ok(t) => t,
            Err(Error::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                return Ok(None)
            }
            Err(e) => return Err(e),
        };
        let memuse = parse_zone_memuse(&text)?;
        let zones = ZoneSizes::try_from_sysctl(sysctl_dir)?;
        let caches = match read_kmalloc_caches(slab_dir) {
            // A kernel without SLUB's sysfs (`CONFIG_SLUB_SYSFS`).
            Err(Error::Io { source, .. })
                if source.kind() == io::ErrorKind::NotFound && !slab_dir.exists() =>
            {
                return Ok(None)
            }
            r => r?,
        };
        Coverage::new(&zones, &memuse, &caches).map(Some)
    }

    /// The sum of a field of every class, saturating.
    fn total(&self, field: fn(&ClassCoverage) -> u64) -> u64 {
        self.classes
            .iter()
            .fold(0, |s, k| s.saturating_add(field(k)))
    }

    /// Bytes in use in the kmalloc caches of every class.
    pub fn cache_bytes(&self) -> u64 {
        self.total(|k| k.cache_bytes)
    }

    /// Bytes of the free objects the sheaves of the kmalloc caches hold, over every class.
    pub fn sheaf_bytes(&self) -> u64 {
        self.total(|k| k.sheaf_bytes)
    }

    /// Bytes of the freed objects of the kmalloc caches KASAN's quarantine holds, over every
    /// class.
    pub fn quarantine_bytes(&self) -> u64 {
        self.total(|k| k.quarantine_bytes)
    }

    /// Bytes of kmalloc blocks charged to types, over every class.
    pub fn typed_bytes(&self) -> u64 {
        self.total(|k| k.typed_bytes)
    }

    /// [`Coverage::cache_bytes`] that no type holds.
    pub fn untyped_bytes(&self) -> i64 {
        signed_difference(self.cache_bytes(), self.typed_bytes())
    }

    /// The share of the caches' bytes the types hold, in percent (`None` for empty caches).
    pub fn typed_percent(&self) -> Option<f64> {
        let c = self.cache_bytes();
        (c != 0).then(|| self.typed_bytes() as f64 * 100.0 / c as f64)
    }
}

/// Reads the kmalloc caches (and the slab allocator's own) of a SLUB sysfs directory: every
/// directory whose name, or the name of a link to it, [`cache_kind`] knows, with the names of
/// those links; their object sizes and objects in use only.
fn read_kmalloc_caches(dir: &Path) -> Result<Vec<SlabCache>> {
    let quarantine = QuarantineFiles::default();
    read_sys_dir_with(
        dir,
        |n| cache_kind(n).is_some(),
        |d, n| read_sys_cache_objects(d, n, &quarantine),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::path::PathBuf;

    fn cache(name: &str, object_size: u64, active_objs: u64) -> SlabCache {
        SlabCache {
            name: name.into(),
            object_size,
            active_objs,
            ..Default::default()
        }
    }

    #[test]
    fn every_kind_of_kmalloc_cache_counts_in_its_class() {
        let zones = ZoneSizes::new(vec![8, 64, 96, 1024]).unwrap();
        let caches = [
            cache("kmalloc-64", 64, 10),
            cache("kmalloc-cg-64", 64, 1),
            cache("kmalloc-rcl-64", 64, 1),
            cache("dma-kmalloc-64", 64, 1),
            cache("kmalloc-part-15-64", 64, 1),
            cache("malloc-zone3-64", 64, 1),
            cache("memdup_user-1k", 1024, 2),
            cache("msg_msg-96", 96, 3),
            cache("kmalloc-no-objext-96", 96, 5),
            cache("pid", 64, 1000),
            cache("malloc-zoneX-64", 64, 1000),
        ];
        let c = Coverage::new(&zones, &[8, 700, 96, 0], &caches).unwrap();
        let bytes: Vec<u64> = c.classes.iter().map(|k| k.cache_bytes).collect();
        assert_eq!(bytes, [0, 15 * 64, 3 * 96, 2048]);
        assert_eq!(c.slab_own_bytes, 5 * 96);
        assert_eq!(c.classes[0].untyped_bytes(), -8);
        assert_eq!(c.classes[1].untyped_bytes(), 15 * 64 - 700);
        assert_eq!(c.cache_bytes(), 15 * 64 + 3 * 96 + 2048);
        assert_eq!(c.typed_bytes(), 8 + 700 + 96);
        assert_eq!(
            c.untyped_bytes(),
            (15 * 64 + 3 * 96 + 2048) - (8 + 700 + 96)
        );
    }

    #[test]
    fn a_cache_merged_into_another_counts_by_any_of_its_names() {
        let zones = ZoneSizes::new(vec![64]).unwrap();
        let mut merged = cache(":0000064", 64, 4);
        merged.merged = vec![b"kmalloc-64".to_vec(), b"pid".to_vec()];
        let c = Coverage::new(&zones, &[128], &[merged]).unwrap();
        assert_eq!(c.classes[0].cache_bytes, 256);
    }

    #[test]
    fn a_kmalloc_name_wins_over_the_slab_allocator_s_own() {
        let zones = ZoneSizes::new(vec![64]).unwrap();
        for names in [
            [b"kmalloc-no-objext-64".to_vec(), b"kmalloc-64".to_vec()],
            [b"kmalloc-64".to_vec(), b"kmalloc-no-objext-64".to_vec()],
        ] {
            let mut merged = cache(":0000064", 64, 4);
            merged.merged = names.to_vec();
            let c = Coverage::new(&zones, &[0], &[merged]).unwrap();
            assert_eq!((c.classes[0].cache_bytes, c.slab_own_bytes), (256, 0));
        }
    }

    #[test]
    fn the_free_objects_of_the_sheaves_are_not_in_use() {
        let zones = ZoneSizes::new(vec![64, 128]).unwrap();
        let mut kmalloc = cache("kmalloc-64", 64, 10);
        kmalloc.sheaf_objs = 3;
        let mut own = cache("kmalloc-no-objext-128", 128, 5);
        own.sheaf_objs = 1;
        // Read after `objects`, the count of the sheaves may exceed it: all of it free.
        let mut racing = cache("kmalloc-cg-128", 128, 2);
        racing.sheaf_objs = 7;
        let c = Coverage::new(&zones, &[448, 0], &[kmalloc, own, racing]).unwrap();
        assert_eq!(
            (c.classes[0].cache_bytes, c.classes[0].sheaf_bytes),
            (448, 192)
        );
        assert_eq!(
            (c.classes[1].cache_bytes, c.classes[1].sheaf_bytes),
            (0, 256)
        );
        assert_eq!(c.classes[0].untyped_bytes(), 0);
        assert_eq!((c.sheaf_bytes(), c.slab_own_bytes), (448, 4 * 128));
    }

    #[test]
    fn the_objects_of_kasan_s_quarantine_are_not_in_use() {
        let zones = ZoneSizes::new(vec![64, 128]).unwrap();
        let mut kmalloc = cache("kmalloc-64", 64, 10);
        (kmalloc.sheaf_objs, kmalloc.quarantine_objs) = (3, 4);
        let mut own = cache("kmalloc-no-objext-128", 128, 5);
        own.quarantine_objs = 2;
        // Read after `objects` and `sheaf_objects`: never more free than given out, the
        // sheaves' counted first.
        let mut racing = cache("kmalloc-cg-128", 128, 6);
        (racing.sheaf_objs, racing.quarantine_objs) = (2, 9);
        let c = Coverage::new(&zones, &[192, 0], &[kmalloc, own, racing]).unwrap();
        let k = &c.classes[0];
        assert_eq!(
            (k.cache_bytes, k.sheaf_bytes, k.quarantine_bytes),
            (192, 192, 256)
        );
        assert_eq!(k.untyped_bytes(), 0);
        let k = &c.classes[1];
        assert_eq!(
            (k.cache_bytes, k.sheaf_bytes, k.quarantine_bytes),
            (0, 256, 512)
        );
        assert_eq!((c.quarantine_bytes(), c.slab_own_bytes), (768, 3 * 128));
    }

    #[test]
    fn sizes_must_increase() {
        let zones = ZoneSizes::new(vec![64, 64]).unwrap();
        assert!(Coverage::new(&zones, &[1, 1], &[]).is_err());
    }

    /// A kernel's files in a temporary directory: the sysctls of one size class of 16 bytes,
    /// `memuse` of them typed, under `sys`; an empty SLUB sysfs directory `slab`.
    fn one_class_kernel(memuse: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let (sys, slab) = (d.path().join("sys"), d.path().join("slab"));
        fs::create_dir_all(sys.join("vm")).unwrap();
        fs::create_dir_all(&slab).unwrap();
        fs::write(sys.join("vm/malloc_zone_sizes"), "16\n").unwrap();
        fs::write(sys.join("vm/malloc_zone_memuse"), memuse).unwrap();
        (d, sys, slab)
    }

    #[test]
    fn a_fifo_in_place_of_a_sysfs_file_does_not_hang() {
        let (_d, sys, slab) = one_class_kernel("0\n");
        let c = slab.join("kmalloc-16");
        fs::create_dir_all(&c).unwrap();
        fs::write(c.join("object_size"), "16\n").unwrap();
        let mkfifo = |p: &Path| {
            let st = std::process::Command::new("mkfifo")
                .arg(p)
                .status()
                .unwrap();
            assert!(st.success());
        };
        mkfifo(&c.join("objects"));
        assert!(Coverage::read(&sys, &slab).is_err());
    }

    /// The sysfs directory of a cache of 16-byte objects under `slab`, with the files
    /// `objects`, `sheaf_objects` and, if given, `quarantine_objects`.
    fn cache_files(slab: &Path, name: &str, objects: &str, sheaf: &str, quarantine: Option<&str>) {
        let c = slab.join(name);
        fs::create_dir_all(&c).unwrap();
        fs::write(c.join("object_size"), "16\n").unwrap();
        fs::write(c.join("objects"), objects).unwrap();
        fs::write(c.join("sheaf_objects"), sheaf).unwrap();
        if let Some(q) = quarantine {
            fs::write(c.join("quarantine_objects"), q).unwrap();
        }
    }

    /// `sheaf_objects` and `quarantine_objects` are read for a cache with objects out only
    /// (counting the sheaves costs the kernel a work item per CPU): a cache with none is read
    /// without them. A kernel without KASAN has no `quarantine_objects`.
    #[test]
    fn the_sheaves_of_an_empty_cache_are_not_read() {
        let (_d, sys, slab) = one_class_kernel("32\n");
        cache_files(&slab, "kmalloc-16", "6\n", "3\n", Some("1\n"));
        cache_files(&slab, "kmalloc-cg-16", "0\n", "bad\n", Some("bad\n"));
        cache_files(&slab, "kmalloc-rcl-16", "1\n", "0\n", None);
        let c = Coverage::read(&sys, &slab).unwrap().unwrap();
        assert_eq!(
            (
                c.classes[0].cache_bytes,
                c.sheaf_bytes(),
                c.quarantine_bytes()
            ),
            (48, 48, 16)
        );
        fs::write(slab.join("kmalloc-cg-16/objects"), "1\n").unwrap();
        assert!(Coverage::read(&sys, &slab).is_err());
        fs::write(slab.join("kmalloc-cg-16/sheaf_objects"), "0\n").unwrap();
        assert!(Coverage::read(&sys, &slab).is_err());
        fs::write(slab.join("kmalloc-cg-16/quarantine_objects"), "1\n").unwrap();
        assert_eq!(
            Coverage::read(&sys, &slab)
                .unwrap()
                .unwrap()
                .quarantine_bytes(),
            32
        );
    }

    /// On a kernel without generic KASAN no cache has `quarantine_objects`: the read tries the
    /// file of the first cache with objects out and no other (a directory in place of the
    /// second's would fail the read).
    #[test]
    fn a_kernel_without_the_quarantine_s_file_is_asked_once() {
        let (_d, sys, slab) = one_class_kernel("32\n");
        for name in ["kmalloc-16", "kmalloc-cg-16"] {
            cache_files(&slab, name, "2\n", "1\n", None);
        }
        fs::create_dir_all(slab.join("kmalloc-cg-16/quarantine_objects")).unwrap();
        let c = Coverage::read(&sys, &slab).unwrap().unwrap();
        assert_eq!(
            (
                c.classes[0].cache_bytes,
                c.sheaf_bytes(),
                c.quarantine_bytes()
            ),
            (32, 32, 0)
        );
        // With the file in the first cache, the second's is read: a directory fails it.
        fs::write(slab.join("kmalloc-16/quarantine_objects"), "0\n").unwrap();
        assert!(Coverage::read(&sys, &slab).is_err());
    }

    #[test]
    fn memuse_must_match_the_classes() {
        let zones = ZoneSizes::new(vec![8, 16]).unwrap();
        assert!(Coverage::new(&zones, &[1], &[]).is_err());
        assert!(parse_zone_memuse(&"1 ".repeat(ZONE_COUNT_MAX + 1)).is_err());
        assert!(parse_zone_memuse("18446744073709551616").is_err());
        assert_eq!(parse_zone_memuse("").unwrap(), Vec::<u64>::new());
    }

    #[test]
    fn empty_caches_have_no_percentage() {
        let zones = ZoneSizes::new(vec![8]).unwrap();
        let c = Coverage::new(&zones, &[0], &[]).unwrap();
        assert_eq!(c.typed_percent(), None);
        let c = Coverage::new(&zones, &[4], &[cache("kmalloc-8", 8, 1)]).unwrap();
        assert_eq!(c.typed_percent(), Some(50.0));
    }

    #[test]
    fn reads_a_sysfs_tree() {
        let d = tempfile::tempdir().unwrap();
        let sys = d.path().join("sys");
        let slab = d.path().join("slab");
        fs::create_dir_all(sys.join("vm")).unwrap();
        fs::write(sys.join("vm/malloc_zone_sizes"), "8\t16\n").unwrap();
        fs::write(sys.join("vm/malloc_zone_count"), "2\n").unwrap();
        for (name, size, objs) in [("kmalloc-16", 16, 3), ("dentry", 192, 9)] {
            let c = slab.join(name);
            fs::create_dir_all(&c).unwrap();
            fs::write(c.join("object_size"), format!("{size}\n")).unwrap();
            fs::write(c.join("objects"), format!("{objs} N0={objs}\n")).unwrap();
            fs::write(c.join("total_objects"), format!("{objs}\n")).unwrap();
        }
        std::os::unix::fs::symlink("kmalloc-16", slab.join("kmalloc-cg-16")).unwrap();
        assert_eq!(Coverage::read(&sys, &slab).unwrap(), None);
        fs::write(sys.join("vm/malloc_zone_memuse"), "0\t32\n").unwrap();
        let c = Coverage::read(&sys, &slab).unwrap().unwrap();
        assert_eq!(c.classes[1].cache_bytes, 48);
        assert_eq!(c.classes[1].typed_bytes, 32);
        fs::write(sys.join("vm/malloc_zone_memuse"), "0\tx\n").unwrap();
        assert!(Coverage::read(&sys, &slab).is_err());
    }
}
