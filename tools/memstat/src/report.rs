//! `vmstat -m` / `vmstat -z` style reports and their libxo JSON.
//!
//! Text layouts are FreeBSD 13/14's:
//!
//! * `-m`: header `"%13s %5s %6s %8s  Size(s)"`, rows
//!   `"%13s %5u %5uK %8u  "` plus the comma-separated size classes;
//!   MemUse is `ceil(bytes / 1024)` KiB. With [`Options::long`] (`-l`, ours),
//!   the columns Fails (allocations that returned no memory), HighUse (the
//!   peak KiB in use while it is tracked, else `-`) and Owner (the module
//!   that defines the type, or `vmlinux`) come before Size(s).
//! * `-z`: header `"%-20s %6s %6s %8s %8s %8s %8s %4s %4s"` (ITEM SIZE LIMIT
//!   USED FREE REQ FAIL SLEEP XDOMAIN) and a blank line, rows
//!   `"%-20s %6u, %6u,%8u,%8u,%8u,%4u,%4u,%4u"` with `name:`.
//!
//! JSON keys are those of `vmstat --libxo json`: `malloc-statistics` →
//! `memory` → {`type`, `in-use`, `memory-use` (KiB), `requests`, `size`},
//! plus ours where the stream has them: `failures`, `high-use` (KiB, only
//! while the peak is tracked) and `owner`; and
//! `memory-zone-statistics` → `zone` → {`name`, `size`, `limit`, `used`,
//! `free`, `requests`, `fail`, `sleep`, `xdomain`}.
//!
//! After the `-m` table of the running kernel (without `--name`), ours: the reconciliation of the
//! types against the kmalloc caches ([`crate::coverage`]), per size class, as text
//! ([`coverage_text`]) and as the JSON object `kmalloc-coverage` → {`size-class` → {`size`,
//! `cache-bytes`, `typed-bytes`, `untyped-bytes`}, `cache-bytes`, `typed-bytes`,
//! `untyped-bytes`, `slab-own-bytes`}.

use std::fmt::Write as _;

use serde::Serialize;

use crate::coverage::Coverage;
use crate::pattern::Pattern;
use crate::text::name_text;
use crate::types::{Allocator, MemoryType, MemoryTypeList};
use crate::zones::ZoneSizes;

/// Row order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortKey {
    /// List order (as vmstat prints).
    #[default]
    None,
    /// Name, ascending.
    Name,
    /// Items in use, descending.
    InUse,
    /// Bytes in use, descending.
    MemUse,
    /// Requests (allocations), descending.
    Requests,
}

/// What to print and how.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Print malloc types that were never used too.
    pub all: bool,
    /// Humanize numbers (text only).
    pub humanize: bool,
    /// Row order.
    pub sort: SortKey,
    /// The pattern ([`crate::pattern`]) a type's name or probe name must match, as bytes.
    pub name: Option<Pattern>,
    /// The long `-m` table: Fails, HighUse and Owner too.
    pub long: bool,
}

/// `humanize_number(3)`-like: at most `width` characters, `base` 1000 or
/// 1024, suffixes K M G T P E, one decimal below 10.
pub fn humanize(v: u64, base: u64, width: usize) -> String {
    let plain = v.to_string();
    if plain.len() <= width.saturating_sub(1).max(1) || v < base {
        return plain;
    }
    const UNITS: [&str; 6] = ["K", "M", "G", "T", "P", "E"];
    let mut x = v as f64;
    for u in UNITS {
        x /= base as f64;
        let s = if x < 9.95 {
            format!("{x:.1}{u}")
        } else {
            format!("{}{u}", x.round() as u64)
        };
        if s.len() <= width || x < base as f64 {
            return s;
        }
    }
    plain
}

/// `ceil(bytes / 1024)`.
pub fn kib(bytes: u64) -> u64 {
    bytes / 1024 + u64::from(bytes % 1024 != 0)
}

/// Whether a malloc type is listed without `-a`: as `vmstat -m`, a type that
/// allocated or holds something; and, here, one whose allocations failed.
fn active(t: &MemoryType) -> bool {
    t.numallocs() != 0 || t.count() != 0 || t.failures() != 0
}

fn selected<'a>(list: &'a MemoryTypeList, alloc: Allocator, o: &Options) -> Vec<&'a MemoryType> {
    let mut v: Vec<&MemoryType> = list
        .iter()
        .filter(|t| t.allocator() == alloc)
        .filter(|t| alloc != Allocator::Malloc || o.all || active(t))
        .filter(|t| match &o.name {
            Some(p) => t.all_names().any(|n| p.matches(n)) || p.matches(&t.probe_name_bytes()),
            None => true,
        })
        .collect();
    match o.sort {
        SortKey::None => {}
        SortKey::Name => v.sort_by(|a, b| a.name().cmp(b.name()).then(a.id().cmp(&b.id()))),
        SortKey::InUse => v.sort_by(|a, b| b.count().cmp(&a.count()).then(a.name().cmp(b.name()))),
        SortKey::MemUse => v.sort_by(|a, b| b.bytes().cmp(&a.bytes()).then(a.name().cmp(b.name()))),
        SortKey::Requests => v.sort_by(|a, b| {
            b.numallocs()
                .cmp(&a.numallocs())
                .then(a.name().cmp(b.name()))
        }),
    }
    v
}

/// The `vmstat -m` table.
pub fn malloc_text(list: &MemoryTypeList, zones: &ZoneSizes, o: &Options) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "{:>13} {:>5} {:>6} {:>8}  ",
        "Type", "InUse", "MemUse", "Requests"
    );
    if o.long {
        let _ = write!(s, "{:>5} {:>7} {:<12}  ", "Fails", "HighUse", "Owner");
    }
    let _ = writeln!(s, "Size(s)");
    for t in selected(list, Allocator::Malloc, o) {
        let sizes: Vec<String> = zones
            .sizes_in_mask(t.sizemask())
            .iter()
            .map(u64::to_string)
            .collect();
        if o.humanize {
            let _ = write!(
                s,
                "{:>13} {:>5} {:>6} {:>8}  ",
                t.name(),
                humanize(t.count(), 1000, 5),
                humanize(t.bytes(), 1024, 5),
                humanize(t.numallocs(), 1000, 5)
            );
        } else {
            let _ = write!(
                s,
                "{:>13} {:>5} {:>5}K {:>8}  ",
                t.name(),
                t.count(),
                kib(t.bytes()),
                t.numallocs()
            );
        }
        if o.long {
            // A version 1 stream, which names no owner, counts no failures.
            let fails = if t.owner().is_empty() {
                "-".to_string()
            } else if o.humanize {
                humanize(t.failures(), 1000, 5)
            } else {
                t.failures().to_string()
            };
            let high = match t.peak() {
                Some(p) if o.humanize => humanize(p, 1024, 6),
                Some(p) => format!("{}K", kib(p)),
                None => "-".to_string(),
            };
            let owner = if t.owner().is_empty() { "-" } else { t.owner() };
            let _ = write!(s, "{:>5} {:>7} {:<12}  ", fails, high, owner);
        }
        let _ = writeln!(s, "{}", sizes.join(","));
    }
    s
}

/// The reconciliation that ends the `-m` table ([`Coverage`]): per kmalloc size class, the bytes
/// in use of its caches, the bytes the malloc types hold of it, the rest and the types' share;
/// then the totals, the slab allocator's own bytes, the free bytes of the caches' sheaves and,
/// on a KASAN kernel, the bytes of its quarantine.
pub fn coverage_text(c: &Coverage, humanize_numbers: bool) -> String {
    let num = |v: u64| {
        if humanize_numbers {
            humanize(v, 1024, 5)
        } else {
            v.to_string()
        }
    };
    let signed = |v: i64| {
        let n = num(v.unsigned_abs());
        if v < 0 {
            format!("-{n}")
        } else {
            n
        }
    };
    let pct = |typed: u64, cache: u64| {
        if cache == 0 {
            "-".to_string()
        } else {
            format!("{:.1}%", typed as f64 * 100.0 / cache as f64)
        }
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "kmalloc caches and malloc types, bytes in use by size class:"
    );
    let _ = writeln!(
        s,
        "{:>7} {:>12} {:>12} {:>12} {:>7}",
        "Size", "Caches", "Typed", "Untyped", "Typed%"
    );
    for k in &c.classes {
        let _ = writeln!(
            s,
            "{:>7} {:>12} {:>12} {:>12} {:>7}",
            k.size,
            num(k.cache_bytes),
            num(k.typed_bytes),
            signed(k.untyped_bytes()),
            pct(k.typed_bytes, k.cache_bytes)
        );
    }
    let _ = writeln!(
        s,
        "{:>7} {:>12} {:>12} {:>12} {:>7}",
        "Total",
        num(c.cache_bytes()),
        num(c.typed_bytes()),
        signed(c.untyped_bytes()),
        pct(c.typed_bytes(), c.cache_bytes())
    );
    let _ = writeln!(
        s,
        "The slab allocator's own (kmalloc-no-objext-*): {} bytes, not kmalloc blocks.",
        num(c.slab_own_bytes)
    );
    let _ = writeln!(
        s,
        "Free objects the kmalloc caches' sheaves hold: {} bytes, not in use.",
        num(c.sheaf_bytes())
    );
    // Only a KASAN kernel has a quarantine.
    if c.quarantine_bytes() != 0 {
        let _ = writeln!(
            s,
            "Freed objects KASAN's quarantine holds: {} bytes, not in use.",
            num(c.quarantine_bytes())
        );
    }
    s
}

/// The text forms of the names of the caches merged into slab cache `t`, its own first, when
/// there are two or more.
fn merged_texts(t: &MemoryType) -> Vec<String> {
    match t.slab_details() {
        Some(d) if d.merged.len() > 1 => d.merged.iter().map(|n| name_text(n)).collect(),
        _ => Vec::new(),
    }
}

/// The `vmstat -z` table of slab caches. A cache that others are merged into is named by its
/// own name (what `/proc/slabinfo` shows) and `+N`, N the number of the others; with
/// [`Options::long`], a last column lists all the names merged into it.
pub fn zone_text(list: &MemoryTypeList, o: &Options) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "{:<20} {:>6} {:>6} {:>8} {:>8} {:>8} {:>8} {:>4} {:>4}",
        "ITEM", "SIZE", "LIMIT", "USED", "FREE", "REQ", "FAIL", "SLEEP", "XDOMAIN"
    );
    let _ = writeln!(s, "{}\n", if o.long { "  MERGED" } else { "" });
    for t in selected(list, Allocator::Slab, o) {
        let merged = merged_texts(t);
        let name = match merged.len() {
            0 => format!("{}:", t.name()),
            n => format!("{}+{}:", t.name(), n - 1),
        };
        let h = |v: u64, w: usize| {
            if o.humanize {
                humanize(v, 1000, w)
            } else {
                v.to_string()
            }
        };
        let _ = write!(
            s,
            "{:<20} {:>6}, {:>6},{:>8},{:>8},{:>8},{:>4},{:>4},{:>4}",
            name,
            t.size(),
            t.countlimit(),
            h(t.count(), 5),
            h(t.free(), 5),
            h(t.numallocs(), 5),
            t.failures(),
            t.sleeps(),
            t.xdomain()
        );
        if o.long {
            let merged = if merged.is_empty() {
                "-".to_string()
            } else {
                merged.join(",")
            };
            let _ = write!(s, "  {merged}");
        }
        s.push('\n');
    }
    s
}

/// One `memory` instance of `malloc-statistics`.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct MallocRow {
    /// Type name.
    #[serde(rename = "type")]
    pub type_: String,
    /// Allocations outstanding.
    #[serde(rename = "in-use")]
    pub in_use: u64,
    /// KiB in use, rounded up.
    #[serde(rename = "memory-use")]
    pub memory_use: u64,
    /// Allocations ever.
    pub requests: u64,
    /// Size classes used.
    pub size: Vec<u64>,
    /// Allocations that returned no memory (ours; absent from a version 1
    /// stream).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failures: Option<u64>,
    /// Peak KiB in use, rounded up, while it is tracked (ours).
    #[serde(rename = "high-use", skip_serializing_if = "Option::is_none")]
    pub high_use: Option<u64>,
    /// The module that defines the type, or `vmlinux` (ours; absent from a
    /// version 1 stream).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The owner has unloaded, and the type stays while memory charged to it is allocated
    /// (ours; only when true).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unloaded: bool,
}

/// One `zone` instance of `memory-zone-statistics`.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct ZoneRow {
    /// Cache name (no colon).
    pub name: String,
    /// Object size.
    pub size: u64,
    /// Count limit (0).
    pub limit: u64,
    /// Objects in use.
    pub used: u64,
    /// Objects allocated but free.
    pub free: u64,
    /// Allocations (with `CONFIG_SLUB_STATS`, else 0).
    pub requests: u64,
    /// Failures (0).
    pub fail: u64,
    /// Sleeps (0).
    pub sleep: u64,
    /// Cross-domain frees (0).
    pub xdomain: u64,
    /// The names of the caches merged into this one, its own (`name`) first (ours; only for a
    /// cache with others merged into it).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub merged: Vec<String>,
}

/// `{"memory": [...]}`.
#[derive(Debug, Serialize)]
pub struct MallocStatistics {
    /// Rows.
    pub memory: Vec<MallocRow>,
}

/// `{"zone": [...]}`.
#[derive(Debug, Serialize)]
pub struct ZoneStatistics {
    /// Rows.
    pub zone: Vec<ZoneRow>,
}

/// The whole JSON document.
#[derive(Debug, Serialize, Default)]
pub struct Document {
    /// `-m` part.
    #[serde(rename = "malloc-statistics", skip_serializing_if = "Option::is_none")]
    pub malloc: Option<MallocStatistics>,
    /// `-z` part.
    #[serde(
        rename = "memory-zone-statistics",
        skip_serializing_if = "Option::is_none"
    )]
    pub zone: Option<ZoneStatistics>,
    /// The reconciliation of `-m` against the kmalloc caches, when the kernel gives it.
    #[serde(rename = "kmalloc-coverage", skip_serializing_if = "Option::is_none")]
    pub coverage: Option<CoverageStatistics>,
}

/// Bytes in use of kmalloc caches and of the types, for a size class or in total.
#[derive(Debug, Serialize)]
pub struct CoverageBytes {
    /// Bytes in use in the kmalloc caches.
    #[serde(rename = "cache-bytes")]
    pub cache_bytes: u64,
    /// Bytes charged to malloc types.
    #[serde(rename = "typed-bytes")]
    pub typed_bytes: u64,
    /// The caches' bytes no type holds (negative when the types hold more).
    #[serde(rename = "untyped-bytes")]
    pub untyped_bytes: i64,
    /// Bytes of the free objects the caches' sheaves hold (not in `cache-bytes`).
    #[serde(rename = "sheaf-bytes")]
    pub sheaf_bytes: u64,
    /// Bytes of the freed objects KASAN's quarantine holds (not in `cache-bytes`; 0 without
    /// KASAN).
    #[serde(rename = "quarantine-bytes")]
    pub quarantine_bytes: u64,
}

/// One size class of `kmalloc-coverage`.
#[derive(Debug, Serialize)]
pub struct CoverageRow {
    /// Object size in bytes.
    pub size: u64,
    /// The class's bytes.
    #[serde(flatten)]
    pub bytes: CoverageBytes,
}

/// `{"kmalloc-coverage": {...}}`: the size classes and the totals.
#[derive(Debug, Serialize)]
pub struct CoverageStatistics {
    /// One row per size class.
    #[serde(rename = "size-class")]
    pub size_class: Vec<CoverageRow>,
    /// The bytes of every class.
    #[serde(flatten)]
    pub total: CoverageBytes,
    /// Bytes in use in the slab allocator's own caches (`kmalloc-no-objext-*`).
    #[serde(rename = "slab-own-bytes")]
    pub slab_own_bytes: u64,
}

/// The `kmalloc-coverage` object of `c`.
pub fn coverage_rows(c: &Coverage) -> CoverageStatistics {
    CoverageStatistics {
        size_class: c
            .classes
            .iter()
            .map(|k| CoverageRow {
                size: k.size,
                bytes: CoverageBytes {
                    cache_bytes: k.cache_bytes,
                    typed_bytes: k.typed_bytes,
                    untyped_bytes: k.untyped_bytes(),
                    sheaf_bytes: k.sheaf_bytes,
                    quarantine_bytes: k.quarantine_bytes,
                },
            })
            .collect(),
        total: CoverageBytes {
            cache_bytes: c.cache_bytes(),
            typed_bytes: c.typed_bytes(),
            untyped_bytes: c.untyped_bytes(),
            sheaf_bytes: c.sheaf_bytes(),
            quarantine_bytes: c.quarantine_bytes(),
        },
        slab_own_bytes: c.slab_own_bytes,
    }
}

/// Rows of `malloc-statistics`.
pub fn malloc_rows(list: &MemoryTypeList, zones: &ZoneSizes, o: &Options) -> MallocStatistics {
    MallocStatistics {
        memory: selected(list, Allocator::Malloc, o)
            .into_iter()
            .map(|t| MallocRow {
                type_: t.name().to_string(),
                in_use: t.count(),
                memory_use: kib(t.bytes()),
                requests: t.numallocs(),
                size: zones.sizes_in_mask(t.sizemask()),
                // A version 2 stream names every type's owner.
                failures: (!t.owner().is_empty()).then(|| t.failures()),
                high_use: t.peak().map(kib),
                owner: (!t.owner().is_empty()).then(|| t.owner().to_string()),
                unloaded: t.is_unloaded(),
            })
            .collect(),
    }
}

/// Rows of `memory-zone-statistics`.
pub fn zone_rows(list: &MemoryTypeList, o: &Options) -> ZoneStatistics {
    ZoneStatistics {
        zone: selected(list, Allocator::Slab, o)
            .into_iter()
            .map(|t| ZoneRow {
                name: t.name().to_string(),
                size: t.size(),
                limit: t.countlimit(),
                used: t.count(),
                free: t.free(),
                requests: t.numallocs(),
                fail: t.failures(),
                sleep: t.sleeps(),
                xdomain: t.xdomain(),
                merged: merged_texts(t),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn humanized() {
        assert_eq!(humanize(999, 1000, 5), "999");
        assert_eq!(humanize(1500, 1000, 4), "1.5K");
        assert_eq!(humanize(123_456, 1000, 5), "123K");
        assert_eq!(humanize(1024, 1024, 6), "1024");
        assert_eq!(humanize(10 * 1024 * 1024, 1024, 5), "10M");
        assert_eq!(kib(0), 0);
        assert_eq!(kib(1), 1);
        assert_eq!(kib(1024), 1);
        assert_eq!(kib(1025), 2);
    }
}
