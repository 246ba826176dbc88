//! Prometheus export: the malloc types of a [`MemoryTypeList`] in the
//! Prometheus text exposition format (version 0.0.4, what a Prometheus
//! server scrapes and `promtool check metrics` checks), for an HTTP exporter
//! or node exporter's textfile collector.
//!
//! One metric family per statistic, named by Prometheus conventions
//! (`malloc_type_` prefix, base units, counters ending in `_total`), with one
//! sample per type labelled by:
//!
//! * `type`: the type's name (`ks_shortdesc`);
//! * `probe`: its probe name (whitespace as `_`, as dtmalloc names it);
//! * `id`: its registration id, so that two types of the same name (which
//!   the kernel allows) stay two series;
//! * `zone`: its zone (`mti_zone`);
//! * `origin`: `vmlinux` or `module` (where the type is defined);
//! * `module`: the owning module's name, or `vmlinux` (absent when the
//!   source does not say: a version 1 stream).
//!
//! | family | type | statistic |
//! | --- | --- | --- |
//! | `malloc_type_requests_total` | counter | `mts_numallocs`, summed over the CPUs |
//! | `malloc_type_frees_total` | counter | `mts_numfrees` |
//! | `malloc_type_allocated_bytes_total` | counter | `mts_memalloced` |
//! | `malloc_type_freed_bytes_total` | counter | `mts_memfreed` |
//! | `malloc_type_in_use_allocations` | gauge | InUse: requests - frees (0 when racing reads make it negative) |
//! | `malloc_type_in_use_bytes` | gauge | MemUse in bytes |
//! | `malloc_type_size_classes_used` | gauge | how many kmalloc size classes the type has used |
//! | `malloc_type_failures_total` | counter | allocations that returned no memory (`mts_numfailures`) |
//! | `malloc_type_peak_bytes` | gauge | peak bytes in use, only for the types whose peak is tracked (`mth_peak`) |
//! | `malloc_types` | gauge | the number of malloc types |
//!
//! Only malloc types are exported; slab caches in the same list are left
//! out (node exporter's slab collector covers them).
//!
//! ```
//! use memstat::{openmetrics, stream, MemoryTypeList};
//! let s = stream::write_stream(1, &[stream::StreamType {
//!     name: "devbuf".into(), id: 7, zone: 0, flags: 0, peak: 0, owner: "vmlinux".into(),
//!     stats: vec![stream::CpuStats { memalloced: 4096, numallocs: 1, size: 1 << 11, ..Default::default() }],
//! }]);
//! let mut list = MemoryTypeList::new();
//! list.update_malloc_bytes(&s).unwrap();
//! let mut out = Vec::new();
//! openmetrics::write_metrics(&list, &mut out).unwrap();
//! let text = String::from_utf8(out).unwrap();
//! assert!(text.contains(
//!     "malloc_type_in_use_bytes{type=\"devbuf\",probe=\"devbuf\",id=\"7\",zone=\"0\",origin=\"vmlinux\",module=\"vmlinux\"} 4096\n"
//! ));
//! ```

use std::fmt::Write as _;
use std::io::{self, Write};

use crate::types::{Allocator, MemoryType, MemoryTypeList};

/// The `Content-Type` of the exposition, for an HTTP exporter.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// One family: name, type, help, and the value of a malloc type (`None`:
/// no sample for that type).
struct Family {
    name: &'static str,
    kind: &'static str,
    help: &'static str,
    value: fn(&MemoryType) -> Option<u64>,
}

const FAMILIES: &[Family] = &[
    Family {
        name: "malloc_type_requests_total",
        kind: "counter",
        help: "Allocations charged to the malloc type (mts_numallocs summed over the CPUs).",
        value: |t| Some(t.numallocs()),
    },
    Family {
        name: "malloc_type_frees_total",
        kind: "counter",
        help: "Frees charged to the malloc type (mts_numfrees summed over the CPUs).",
        value: |t| Some(t.numfrees()),
    },
    Family {
        name: "malloc_type_allocated_bytes_total",
        kind: "counter",
        help: "Bytes allocated by the malloc type, as accounted (mts_memalloced).",
        value: |t| Some(t.memalloced()),
    },
    Family {
        name: "malloc_type_freed_bytes_total",
        kind: "counter",
        help: "Bytes freed by the malloc type, as accounted (mts_memfreed).",
        value: |t| Some(t.memfreed()),
    },
    Family {
        name: "malloc_type_in_use_allocations",
        kind: "gauge",
        help: "Allocations of the malloc type not freed (vmstat -m InUse).",
        value: |t| Some(t.count()),
    },
    Family {
        name: "malloc_type_in_use_bytes",
        kind: "gauge",
        help: "Bytes of the malloc type in use (vmstat -m MemUse, in bytes).",
        value: |t| Some(t.bytes()),
    },
    Family {
        name: "malloc_type_size_classes_used",
        kind: "gauge",
        help: "Kmalloc size classes the malloc type has allocated from (bits of mts_size).",
        value: |t| Some(u64::from(t.sizemask().count_ones())),
    },
    Family {
        name: "malloc_type_failures_total",
        kind: "counter",
        help: "Allocations of the malloc type that returned no memory (mts_numfailures).",
        value: |t| Some(t.failures()),
    },
    Family {
        name: "malloc_type_peak_bytes",
        kind: "gauge",
        help: "Peak bytes in use of the malloc type since its tracking started or was reset \
               (mth_peak; only types named in /proc/malloc_types_peak).",
        value: MemoryType::peak,
    },
];

/// Appends `v` escaped as a label value: backslash, double quote and line
/// feed as `\\`, `\"` and `\n`.
fn escape_label(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// The label set of a type, `{...}`.
fn labels(t: &MemoryType) -> String {
    let mut l = String::with_capacity(96);
    l.push_str("{type=\"");
    escape_label(&mut l, t.name());
    l.push_str("\",probe=\"");
    escape_label(&mut l, &t.probe_name());
    // Writing to a `String` cannot fail.
    let _ = write!(
        l,
        "\",id=\"{}\",zone=\"{}\",origin=\"{}\"",
        t.id(),
        t.zone(),
        if t.is_module() { "module" } else { "vmlinux" }
    );
    if !t.owner().is_empty() {
        l.push_str(",module=\"");
        escape_label(&mut l, t.owner());
        l.push('"');
    }
    l.push('}');
    l
}

/// Writes the metrics of the malloc types of `list` to `out`, in the
/// Prometheus text exposition format, in list order within each family.
///
/// Errors: those of `out`.
pub fn write_metrics(list: &MemoryTypeList, out: &mut impl Write) -> io::Result<()> {
    let types: Vec<&MemoryType> = list
        .iter()
        .filter(|t| t.allocator() == Allocator::Malloc)
        .collect();
    let labels: Vec<String> = types.iter().map(|t| labels(t)).collect();
    let mut text = String::with_capacity(256 + types.len() * FAMILIES.len() * 128);
    for f in FAMILIES {
        let _ = writeln!(text, "# HELP {} {}", f.name, f.help);
        let _ = writeln!(text, "# TYPE {} {}", f.name, f.kind);
        for (t, l) in types.iter().zip(&labels) {
            if let Some(v) = (f.value)(t) {
                let _ = writeln!(text, "{}{} {}", f.name, l, v);
            }
        }
    }
    let _ = writeln!(text, "# HELP malloc_types Malloc types registered.");
    let _ = writeln!(text, "# TYPE malloc_types gauge");
    let _ = writeln!(text, "malloc_types {}", types.len());
    out.write_all(text.as_bytes())
}

/// Writes the metrics of `list` to `path` atomically, as node exporter's
/// textfile collector needs them: into a temporary file in the same
/// directory (`.NAME.tmp`), then renamed over `path`, so that a scrape never
/// sees half a file.
///
/// Errors: those of creating, writing or renaming the file.
pub fn write_textfile(list: &MemoryTypeList, path: &std::path::Path) -> io::Result<()> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file name"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(".tmp");
    let tmp = path.with_file_name(tmp_name);
    let r = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        write_metrics(list, &mut f)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}
