//! Prometheus export: the malloc types of a [`MemoryTypeList`] in the
//! Prometheus text exposition format (version 0.0.4, what a Prometheus
//! server scrapes and `promtool check metrics` checks), for an HTTP exporter
//! or node exporter's textfile collector.
//!
//! One metric family per statistic, named by Prometheus conventions
//! (`malloc_type_` prefix, base units, counters ending in `_total`), with one
//! sample per type labelled by:
//!
//! * `type`: the text form of the type's name (`ks_shortdesc`; [`crate::text::name_text`]:
//!   each byte that is not printable ASCII and each backslash as `\NNN`), so that two
//!   different names never give the same value and no value holds a control character;
//! * `probe`: the text form of its probe name (each white-space byte of the name as `_`, as
//!   dtmalloc names it);
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
//! out (node exporter's slab collector covers them). With the reconciliation of the types
//! against the kmalloc caches ([`Coverage`], read from the running kernel), six families more,
//! the first five with one sample per kmalloc size class, labelled `size` (its object size in
//! bytes):
//!
//! | family | type | value |
//! | --- | --- | --- |
//! | `malloc_type_kmalloc_cache_bytes` | gauge | bytes in use in the class's kmalloc caches |
//! | `malloc_type_kmalloc_typed_bytes` | gauge | bytes of the class charged to malloc types |
//! | `malloc_type_kmalloc_untyped_bytes` | gauge | the caches' bytes no type holds |
//! | `malloc_type_kmalloc_sheaf_bytes` | gauge | bytes of the free objects of the caches' sheaves |
//! | `malloc_type_kmalloc_quarantine_bytes` | gauge | bytes of the freed objects KASAN's quarantine holds |
//! | `malloc_type_slab_own_bytes` | gauge | bytes of the slab allocator's own caches |
//!
//! The text is written by the Prometheus project's `prometheus-client` crate
//! ([`prometheus_client::encoding::prometheus_text`]: the names, `# HELP` and
//! `# TYPE` lines, the escaping of label values and help texts, the number
//! formats). Its OpenMetrics encoder (`encoding::text`) is not used: node
//! exporter's textfile collector and `promtool check metrics` (2.42) parse the
//! text format 0.0.4, where an OpenMetrics counter's `# TYPE
//! malloc_type_requests counter` names no sample and its
//! `malloc_type_requests_total` samples are left untyped (promtool: "no help
//! text", exit status 3); a Prometheus server reads either. Ours are the
//! families and label sets below (a [`Collector`] of constant samples built
//! from the list on each call) and the textfile writer: no crate writes
//! node exporter's textfile.
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
//! openmetrics::write_metrics(&list, None, &mut out).unwrap();
//! let text = String::from_utf8(out).unwrap();
//! assert!(text.contains(
//!     "malloc_type_in_use_bytes{type=\"devbuf\",probe=\"devbuf\",id=\"7\",zone=\"0\",origin=\"vmlinux\",module=\"vmlinux\"} 4096\n"
//! ));
//! ```

use std::ffi::OsString;
use std::fs::Permissions;
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{prometheus_text, DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use crate::coverage::Coverage;
use crate::types::{Allocator, MemoryType, MemoryTypeList};

/// The `Content-Type` of the exposition, for an HTTP exporter.
pub const CONTENT_TYPE: &str = prometheus_text::CONTENT_TYPE;

/// One family: name (without the `_total` that the encoder adds to a counter's), type, help,
/// and the value of a malloc type (`None`: no sample for that type).
struct Family {
    name: &'static str,
    kind: MetricType,
    help: &'static str,
    value: fn(&MemoryType) -> Option<u64>,
}

const FAMILIES: &[Family] = &[
    Family {
        name: "malloc_type_requests",
        kind: MetricType::Counter,
        help: "Allocations charged to the malloc type (mts_numallocs summed over the CPUs).",
        value: |t| Some(t.numallocs()),
    },
    Family {
        name: "malloc_type_frees",
        kind: MetricType::Counter,
        help: "Frees charged to the malloc type (mts_numfrees summed over the CPUs).",
        value: |t| Some(t.numfrees()),
    },
    Family {
        name: "malloc_type_allocated_bytes",
        kind: MetricType::Counter,
        help: "Bytes allocated by the malloc type, as accounted (mts_memalloced).",
        value: |t| Some(t.memalloced()),
    },
    Family {
        name: "malloc_type_freed_bytes",
        kind: MetricType::Counter,
        help: "Bytes freed by the malloc type, as accounted (mts_memfreed).",
        value: |t| Some(t.memfreed()),
    },
    Family {
        name: "malloc_type_in_use_allocations",
        kind: MetricType::Gauge,
        help: "Allocations of the malloc type not freed (vmstat -m InUse).",
        value: |t| Some(t.count()),
    },
    Family {
        name: "malloc_type_in_use_bytes",
        kind: MetricType::Gauge,
        help: "Bytes of the malloc type in use (vmstat -m MemUse, in bytes).",
        value: |t| Some(t.bytes()),
    },
    Family {
        name: "malloc_type_size_classes_used",
        kind: MetricType::Gauge,
        help: "Kmalloc size classes the malloc type has allocated from (bits of mts_size).",
        value: |t| Some(u64::from(t.sizemask().count_ones())),
    },
    Family {
        name: "malloc_type_failures",
        kind: MetricType::Counter,
        help: "Allocations of the malloc type that returned no memory (mts_numfailures).",
        value: |t| Some(t.failures()),
    },
    Family {
        name: "malloc_type_peak_bytes",
        kind: MetricType::Gauge,
        help: "Peak bytes in use of the malloc type since its tracking started or was reset \
               (mth_peak; only types named in /proc/malloc_types_peak).",
        value: MemoryType::peak,
    },
];

/// A label set: `(name, value)` pairs in their order in the exposition.
type Labels = Vec<(&'static str, String)>;

/// The label set of a type: its name, probe name and owner in their text forms, as the library
/// gives them.
fn labels(t: &MemoryType) -> Labels {
    let mut l = vec![
        ("type", t.name().to_string()),
        ("probe", t.probe_name()),
        ("id", t.id().to_string()),
        ("zone", t.zone().to_string()),
        (
            "origin",
            if t.is_module() { "module" } else { "vmlinux" }.to_string(),
        ),
    ];
    if !t.owner().is_empty() {
        l.push(("module", t.owner().to_string()));
    }
    l
}

/// The malloc types of a list as the encoder takes them: each type's label set and its value
/// in each family of [`FAMILIES`], in list order.
#[derive(Debug)]
struct Snapshot {
    series: Vec<(Labels, Vec<Option<u64>>)>,
    coverage: Option<Coverage>,
}

/// The value of a size class in a family of the reconciliation.
type ClassValue = fn(&crate::coverage::ClassCoverage) -> i64;

/// The families of the reconciliation: name, help, and the value of a size class.
const COVERAGE_FAMILIES: [(&str, &str, ClassValue); 5] = [
    (
        "malloc_type_kmalloc_cache_bytes",
        "Bytes in use in the kmalloc caches of the size class (objects in use, not those free in the sheaves or KASAN's quarantine, times object size).",
        |k| i64::try_from(k.cache_bytes).unwrap_or(i64::MAX),
    ),
    (
        "malloc_type_kmalloc_typed_bytes",
        "Bytes of kmalloc blocks of the size class charged to malloc types (vm.malloc_zone_memuse).",
        |k| i64::try_from(k.typed_bytes).unwrap_or(i64::MAX),
    ),
    (
        "malloc_type_kmalloc_untyped_bytes",
        "Bytes in use in the kmalloc caches of the size class that no malloc type holds.",
        crate::coverage::ClassCoverage::untyped_bytes,
    ),
    (
        "malloc_type_kmalloc_sheaf_bytes",
        "Bytes of the free objects the sheaves of the kmalloc caches of the size class hold.",
        |k| i64::try_from(k.sheaf_bytes).unwrap_or(i64::MAX),
    ),
    (
        "malloc_type_kmalloc_quarantine_bytes",
        "Bytes of the freed objects of the kmalloc caches of the size class that KASAN's quarantine holds (0 without KASAN).",
        |k| i64::try_from(k.quarantine_bytes).unwrap_or(i64::MAX),
    ),
];

impl Collector for Snapshot {
    fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
        for (i, f) in FAMILIES.iter().enumerate() {
            let mut family = encoder.encode_descriptor(f.name, f.help, None, f.kind)?;
            for (labels, values) in &self.series {
                let Some(v) = values[i] else { continue };
                let sample = family.encode_family(labels)?;
                match f.kind {
                    MetricType::Counter => ConstCounter::new(v).encode(sample)?,
                    _ => ConstGauge::new(v).encode(sample)?,
                }
            }
        }
        let family = encoder.encode_descriptor(
            "malloc_types",
            "Malloc types registered.",
            None,
            MetricType::Gauge,
        )?;
        ConstGauge::new(self.series.len()).encode(family)?;
        let Some(c) = &self.coverage else {
            return Ok(());
        };
        for (name, help, value) in COVERAGE_FAMILIES {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for k in &c.classes {
                let labels: Labels = vec![("size", k.size.to_string())];
                ConstGauge::new(value(k)).encode(family.encode_family(&labels)?)?;
            }
        }
        let family = encoder.encode_descriptor(
            "malloc_type_slab_own_bytes",
            "Bytes in use in the slab allocator's own caches (kmalloc-no-objext-*).",
            None,
            MetricType::Gauge,
        )?;
        ConstGauge::new(i64::try_from(c.slab_own_bytes).unwrap_or(i64::MAX)).encode(family)
    }
}

/// The metrics of the malloc types of `list`, in the Prometheus text exposition format, in
/// list order within each family; then those of `coverage`, if given.
pub fn exposition(list: &MemoryTypeList, coverage: Option<&Coverage>) -> String {
    let series = list
        .iter()
        .filter(|t| t.allocator() == Allocator::Malloc)
        .map(|t| (labels(t), FAMILIES.iter().map(|f| (f.value)(t)).collect()))
        .collect();
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Snapshot {
        series,
        coverage: coverage.cloned(),
    }));
    let mut text = String::new();
    // The encoder fails only when its writer does, and a `String` does not.
    let _ = prometheus_text::encode(&mut text, &registry);
    text
}

/// Writes the metrics of the malloc types of `list` (and of `coverage`) to `out`:
/// [`exposition`].
///
/// Errors: those of `out`.
pub fn write_metrics(
    list: &MemoryTypeList,
    coverage: Option<&Coverage>,
    out: &mut impl Write,
) -> io::Result<()> {
    out.write_all(exposition(list, coverage).as_bytes())
}

/// Writes the metrics of `list` (and of `coverage`) to `path` atomically, as node exporter's
/// textfile collector needs them: into a new temporary file in the same
/// directory, then renamed over `path`, so that a scrape never sees half a
/// file.
///
/// The tool runs as root into a directory that other users may write to, so
/// the temporary file is created under an unpredictable name
/// (`.NAME.XXXXXX.tmp`, which the collector does not read: it reads `*.prom`)
/// with `O_CREAT | O_EXCL`, which never follows a symbolic link and never
/// opens a file that exists (the `tempfile` crate; it tries other names on a
/// collision). Its mode is `0666` less the umask, as a plain `creat()` gives,
/// so that an unprivileged collector can read it. The rename replaces `path`
/// itself, also when it is a symbolic link (the link, not its target). On any
/// failure the temporary file is removed and `path` is left as it was.
///
/// Errors: those of creating, writing, syncing or renaming the file; a `path`
/// without a file name is [`io::ErrorKind::InvalidInput`].
pub fn write_textfile(
    list: &MemoryTypeList,
    coverage: Option<&Coverage>,
    path: &Path,
) -> io::Result<()> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file name"))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut prefix = OsString::from(".");
    prefix.push(name);
    prefix.push(".");
    let mut tmp = tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".tmp")
        .permissions(Permissions::from_mode(0o666))
        .tempfile_in(dir)?;
    write_metrics(list, coverage, tmp.as_file_mut())?;
    tmp.as_file().sync_all()?;
    // On an error the temporary file is dropped, which removes it.
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
