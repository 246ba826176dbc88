//! Slab caches, the Linux analogue of UMA zones: read from
//! `/sys/kernel/slab/<cache>/` (SLUB) or, failing that, `/proc/slabinfo`
//! (`slabinfo - version: 2.x`).

use std::fs;
use std::io::{self, Read};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::DirEntryExt;
use std::path::{Path, PathBuf};

use crate::error::{path_text, Error, Result};
use crate::text::as_text;

/// Default SLUB sysfs directory.
pub const DEFAULT_SLAB_DIR: &str = "/sys/kernel/slab";
/// Default slabinfo file.
pub const DEFAULT_SLABINFO: &str = "/proc/slabinfo";

/// Where to read slab caches from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlabSource {
    /// The SLUB sysfs directory; tried first when set.
    pub sys_dir: Option<PathBuf>,
    /// The slabinfo file; used when `sys_dir` is unset or missing.
    pub slabinfo: Option<PathBuf>,
}

impl Default for SlabSource {
    fn default() -> Self {
        SlabSource {
            sys_dir: Some(PathBuf::from(DEFAULT_SLAB_DIR)),
            slabinfo: Some(PathBuf::from(DEFAULT_SLABINFO)),
        }
    }
}

/// One slab cache's raw figures.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlabCache {
    /// Cache name (the sysfs directory name, e.g. `kmalloc-64` or `:0000024`), as bytes.
    pub name: Vec<u8>,
    /// `object_size` / `<objsize>`.
    pub object_size: u64,
    /// `slab_size` (object plus metadata and alignment); `<objsize>` from slabinfo.
    pub slab_size: u64,
    /// `objects` / `<active_objs>`: the objects the slabs have given out, which include the free
    /// ones the per-CPU sheaves and the barns hold (`sheaf_objs`).
    pub active_objs: u64,
    /// `sheaf_objects`: free objects held in the sheaves, counted in `active_objs`; read for the
    /// kmalloc coverage only (0 elsewhere, from slabinfo and for a kernel without the file).
    pub sheaf_objs: u64,
    /// `quarantine_objects`: freed objects generic KASAN's quarantine holds back from the slabs,
    /// counted in `active_objs`; read for the kmalloc coverage only (0 elsewhere, and for a
    /// kernel without KASAN or without the file).
    pub quarantine_objs: u64,
    /// `total_objects` / `<num_objs>`.
    pub total_objs: u64,
    /// `slabs` / `<num_slabs>`.
    pub slabs: u64,
    /// `objs_per_slab` / `<objperslab>`.
    pub objs_per_slab: u64,
    /// `order` (slabinfo: log2 of `<pagesperslab>`).
    pub order: u64,
    /// `aliases` (0 from slabinfo).
    pub aliases: u64,
    /// The names of the caches merged into this one, as bytes: the symbolic links of the SLUB
    /// sysfs directory that point to it, in the order the kernel made them, so that the first
    /// is the cache's own name, the one `/proc/slabinfo` and slabtop show.
    /// Empty for a cache that is not merged (its directory is its name) and from slabinfo.
    pub merged: Vec<Vec<u8>>,
    /// `alloc_fastpath + alloc_slowpath` when `CONFIG_SLUB_STATS` is on, else 0.
    pub allocs: u64,
    /// `free_fastpath + free_slowpath` when `CONFIG_SLUB_STATS` is on, else 0.
    pub frees: u64,
}

/// Parse a SLUB sysfs value: the first token of lines such as `2548` or
/// `2548 N0=2548 N1=0`.
pub fn parse_sys_value(text: &str) -> Option<u64> {
    text.split_whitespace().next()?.parse().ok()
}

/// A decimal number of ASCII digits.
fn parse_u64(b: &[u8]) -> Option<u64> {
    std::str::from_utf8(b).ok()?.parse().ok()
}

/// Most bytes read from one SLUB sysfs attribute file.
pub const MAX_SYS_VALUE_LEN: u64 = 64 * 1024;
/// Most bytes read from a slabinfo file.
pub const MAX_SLABINFO_LEN: u64 = 64 * 1024 * 1024;

/// Read the file `p`, failing with a data error rather than reading
/// more than `cap` bytes.
fn read_capped(p: &Path, cap: u64) -> io::Result<std::result::Result<Vec<u8>, Error>> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut buf = Vec::new();
    // Without O_NONBLOCK, opening a FIFO put in place of a sysfs file would wait for a writer
    // forever; a regular file ignores the flag.
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(p)?
        .take(cap.saturating_add(1))
        .read_to_end(&mut buf)?;
    if buf.len() as u64 > cap {
        return Ok(Err(Error::data(format!(
            "{}: larger than {cap} bytes",
            path_text(p)
        ))));
    }
    Ok(Ok(buf))
}

fn read_value(dir: &Path, file: &str) -> Result<Option<u64>> {
    let p = dir.join(file);
    match read_capped(&p, MAX_SYS_VALUE_LEN) {
        Ok(t) => {
            let t = t?;
            std::str::from_utf8(&t)
                .ok()
                .and_then(parse_sys_value)
                .map(Some)
                .ok_or_else(|| {
                    Error::data(format!(
                        "{}: not a number: '{}'",
                        path_text(&p),
                        as_text(t.trim_ascii())
                    ))
                })
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::from_io(p, e)),
    }
}

/// Read one cache directory; `None` when the directory is gone (the cache was destroyed, for
/// example by a module unload, after the caller listed it), as FreeBSD's libmemstat tolerates a
/// zone list that changes while it is read.
pub fn read_sys_cache(dir: &Path, name: &[u8]) -> Result<Option<SlabCache>> {
    match read_sys_cache_files(dir, name) {
        // A file of the cache is missing: the whole cache vanished if its directory did.
        Err(Error::DataError(_)) | Err(Error::Io { .. }) if !dir.exists() => Ok(None),
        r => r.map(Some),
    }
}

/// Whether the caches of a SLUB sysfs directory have a `quarantine_objects` file: every cache
/// has one with generic KASAN, none without. Unknown until a cache has been looked at, so that
/// a read of many caches tries the file once on a kernel that has none.
#[derive(Default)]
pub struct QuarantineFiles(std::cell::Cell<Option<bool>>);

/// [`read_sys_cache`] of the object size, the objects in use and the free objects of the
/// sheaves and of KASAN's quarantine only, the figures of the kmalloc coverage
/// ([`crate::coverage`]): four files instead of a dozen, which a Prometheus scrape of a slow
/// machine reads for every kmalloc cache. `quarantine` says whether the caches have the
/// quarantine's file, and learns it from the first cache that is read.
pub fn read_sys_cache_objects(
    dir: &Path,
    name: &[u8],
    quarantine: &QuarantineFiles,
) -> Result<Option<SlabCache>> {
    let read = || -> Result<SlabCache> {
        let need = |f: &str| -> Result<u64> {
            read_value(dir, f)?
                .ok_or_else(|| Error::data(format!("{}: missing {f}", path_text(dir))))
        };
        let active_objs = need("objects")?;
        // Counting the sheaves takes the kernel a work item on every CPU: not for a cache
        // with no object out, whose sheaves and quarantined objects are none. Each read frees a
        // buffer of a page into the quarantine of a KASAN kernel; read right after `objects`,
        // the counts of the free objects miss few of them.
        let (sheaf_objs, quarantine_objs) = if active_objs == 0 {
            (0, 0)
        } else {
            let sheaf_objs = read_value(dir, "sheaf_objects")?.unwrap_or(0);
            let quarantine_objs = if quarantine.0.get() == Some(false) {
                0
            } else {
                let q = read_value(dir, "quarantine_objects")?;
                // A missing file says nothing of the others if the whole cache just went.
                if q.is_some() || dir.exists() {
                    quarantine.0.set(Some(q.is_some()));
                }
                q.unwrap_or(0)
            };
            (sheaf_objs, quarantine_objs)
        };
        Ok(SlabCache {
            name: name.to_vec(),
            object_size: need("object_size")?,
            active_objs,
            sheaf_objs,
            quarantine_objs,
            ..Default::default()
        })
    };
    match read() {
        Err(Error::DataError(_)) | Err(Error::Io { .. }) if !dir.exists() => Ok(None),
        r => r.map(Some),
    }
}

fn read_sys_cache_files(dir: &Path, name: &[u8]) -> Result<SlabCache> {
    let need = |f: &str| -> Result<u64> {
        read_value(dir, f)?.ok_or_else(|| Error::data(format!("{}: missing {f}", path_text(dir))))
    };
    let opt = |f: &str| -> Result<u64> { Ok(read_value(dir, f)?.unwrap_or(0)) };
    let object_size = need("object_size")?;
    Ok(SlabCache {
        name: name.to_vec(),
        object_size,
        slab_size: read_value(dir, "slab_size")?.unwrap_or(object_size),
        active_objs: need("objects")?,
        // The coverage reads it (read_sys_cache_objects()); -z shows none.
        sheaf_objs: 0,
        quarantine_objs: 0,
        total_objs: need("total_objects")?,
        slabs: opt("slabs")?,
        objs_per_slab: opt("objs_per_slab")?,
        order: opt("order")?,
        aliases: opt("aliases")?,
        merged: Vec::new(),
        allocs: opt("alloc_fastpath")?.saturating_add(opt("alloc_slowpath")?),
        frees: opt("free_fastpath")?.saturating_add(opt("free_slowpath")?),
    })
}

/// Read every cache under a SLUB sysfs directory, sorted by the name of its directory. Each
/// cache appears once: the symbolic links are the names of the caches merged into one (whose
/// directory is a unique id such as `:0000136`), and give its [`SlabCache::merged`] names.
/// Caches destroyed between the listing and the reading of their files are skipped, as are
/// links that vanish or point to no cache.
pub fn read_sys_dir(dir: &Path) -> Result<Vec<SlabCache>> {
    read_sys_dir_with(dir, |_| true, read_sys_cache)
}

/// [`read_sys_dir`] of the caches a name `keep`s, each read with `read`: the directories whose
/// name it keeps, and those that a link whose name it keeps points to; only the links it keeps
/// are read and give [`SlabCache::merged`] names.
pub fn read_sys_dir_with(
    dir: &Path,
    keep: impl Fn(&[u8]) -> bool,
    read: impl Fn(&Path, &[u8]) -> Result<Option<SlabCache>>,
) -> Result<Vec<SlabCache>> {
    let rd = fs::read_dir(dir).map_err(|e| Error::from_io(dir, e))?;
    let mut dirs = Vec::new();
    // (the directory a link points to, the link's inode number, its name)
    let mut links: Vec<(Vec<u8>, u64, Vec<u8>)> = Vec::new();
    for ent in rd {
        let ent = ent.map_err(|e| Error::from_io(dir, e))?;
        let ft = match ent.file_type() {
            Ok(ft) => ft,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::from_io(ent.path(), e)),
        };
        if ft.is_symlink() {
            if !keep(ent.file_name().as_bytes()) {
                continue;
            }
            let target = match fs::read_link(ent.path()) {
                Ok(t) => t,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::from_io(ent.path(), e)),
            };
            // The directory's name, as tools/mm/slabinfo reads it: the target's last component.
            if let Some(to) = target.file_name() {
                links.push((
                    to.as_bytes().to_vec(),
                    ent.ino(),
                    ent.file_name().into_vec(),
                ));
            }
            continue;
        }
        if ft.is_dir() {
            dirs.push(ent.file_name().into_vec());
        }
    }
    dirs.sort();
    let linked: std::collections::BTreeSet<&[u8]> =
        links.iter().map(|(to, _, _)| to.as_slice()).collect();
    let mut out = Vec::new();
    for name in dirs {
        if !keep(&name) && !linked.contains(name.as_slice()) {
            continue;
        }
        if let Some(c) = read(&dir.join(std::ffi::OsStr::from_bytes(&name)), &name)? {
            out.push(c);
        }
    }
    // A cache's links in the order sysfs made them: kernfs numbers its nodes in the order it
    // creates them, and SLUB links a mergeable cache's own name right after its directory,
    // the names of the caches merged into it later.
    links.sort();
    for (to, _, name) in links {
        if let Ok(i) = out.binary_search_by(|c| c.name.as_slice().cmp(&to)) {
            out[i].merged.push(name);
        }
    }
    Ok(out)
}

/// Parse `/proc/slabinfo` (versions 2.0 and 2.1). Sorted by name, one entry per cache
/// name (the last line of a name that appears twice). A cache's name is read as its bytes
/// (white space ends it, as it ends every field of the file).
pub fn parse_slabinfo(text: impl AsRef<[u8]>) -> Result<Vec<SlabCache>> {
    let mut lines = text.as_ref().split(|&b| b == b'\n');
    let first = lines
        .next()
        .filter(|l| !l.is_empty())
        .ok_or_else(|| Error::data("slabinfo: empty"))?;
    let version = first
        .strip_prefix(b"slabinfo - version: ")
        .ok_or_else(|| Error::data(format!("slabinfo: bad first line '{}'", as_text(first))))?;
    if !version.trim_ascii().starts_with(b"2.") {
        return Err(Error::Version {
            found: 0,
            expected: 2,
        });
    }
    let mut out = Vec::new();
    for (n, line) in lines.enumerate() {
        if line.starts_with(b"#") || line.trim_ascii().is_empty() {
            continue;
        }
        let f: Vec<&[u8]> = line
            .split(u8::is_ascii_whitespace)
            .filter(|f| !f.is_empty())
            .collect();
        let num = |i: usize| -> Result<u64> {
            f.get(i).and_then(|s| parse_u64(s)).ok_or_else(|| {
                Error::data(format!(
                    "slabinfo line {}: field {} missing or not a number",
                    n + 2,
                    i + 1
                ))
            })
        };
        let name = f
            .first()
            .ok_or_else(|| Error::data(format!("slabinfo line {}: empty", n + 2)))?;
        let pages = num(5)?;
        // ": slabdata <active_slabs> <num_slabs> <sharedavail>"
        let slabs = f
            .iter()
            .position(|s| *s == b"slabdata")
            .and_then(|i| f.get(i + 2))
            .and_then(|s| parse_u64(s))
            .unwrap_or(0);
        out.push(SlabCache {
            name: name.to_vec(),
            active_objs: num(1)?,
            sheaf_objs: 0,
            quarantine_objs: 0,
            total_objs: num(2)?,
            object_size: num(3)?,
            slab_size: num(3)?,
            objs_per_slab: num(4)?,
            order: if pages == 0 {
                0
            } else {
                u64::from(pages.ilog2())
            },
            slabs,
            aliases: 0,
            merged: Vec::new(),
            allocs: 0,
            frees: 0,
        });
    }
    // `/proc/slabinfo` is a seq_file over the list of caches: when a cache is created or
    // destroyed between two read() calls, the walk resumes by position and a cache can appear
    // twice. Keep its last line, the later of the two snapshots.
    out.reverse();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out.dedup_by(|later, kept| later.name == kept.name);
    Ok(out)
}

/// Read caches from `src`: the sysfs directory if it exists, otherwise the
/// slabinfo file.
pub fn read_caches(src: &SlabSource) -> Result<Vec<SlabCache>> {
    if let Some(d) = &src.sys_dir {
        if d.is_dir() {
            return read_sys_dir(d);
        }
    }
    if let Some(p) = &src.slabinfo {
        let text = read_capped(p, MAX_SLABINFO_LEN).map_err(|e| Error::from_io(p, e))??;
        return parse_slabinfo(text);
    }
    let p = src
        .sys_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(DEFAULT_SLAB_DIR));
    Err(Error::Io {
        path: p,
        source: io::Error::from(io::ErrorKind::NotFound),
    })
}
