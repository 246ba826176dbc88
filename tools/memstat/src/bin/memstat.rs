//! memstat: `vmstat -m` and `vmstat -z` for Linux malloc types and slab caches.

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::builder::TypedValueParser as _;
use clap::parser::ValueSource;
use clap::{ArgGroup, ArgMatches, Parser, ValueEnum};
use memstat::coverage::Coverage;
use memstat::error::io_text;
use memstat::kvm::Core;
use memstat::report::{self, Options, SortKey};
use memstat::slab::{DEFAULT_SLABINFO, DEFAULT_SLAB_DIR};
use memstat::zones::DEFAULT_SYSCTL_DIR;
use memstat::{exporter, openmetrics, Error, MemoryTypeList, SlabSource, DEFAULT_PROC_PATH};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Sort {
    /// By name, ascending.
    Name,
    /// By items in use (InUse / USED), descending.
    Inuse,
    /// By bytes in use (MemUse), descending.
    Memuse,
    /// By allocations (Requests / REQ), descending.
    Requests,
}

/// The outputs of malloc types that are not a table or JSON: every type, in kernel order.
const EXPORTS: [&str; 4] = ["prometheus", "textfile", "listen", "save"];
/// The outputs that are not a table.
const NOT_TABLES: [&str; 5] = ["json", "prometheus", "textfile", "listen", "save"];

/// Report kernel memory usage by malloc type (like FreeBSD's `vmstat -m`)
/// and by slab cache (like `vmstat -z`).
///
/// An option that the other options given would ignore is a usage error (exit status 2): each
/// one's help says where it applies.
#[derive(Parser, Debug)]
#[command(
    name = "memstat",
    group(ArgGroup::new("repeat").args(["wait", "listen"])),
    version,
    disable_help_flag = true,
    after_help = "Examples:\n  memstat                      malloc types, as vmstat -m\n  memstat -z                   slab caches, as vmstat -z\n  memstat -m --json            libxo-style JSON\n  memstat -m -l                with failures, peaks and owners\n  memstat -s memuse --name 'dev*'\n  memstat -w 1 -c 5            five reports, one second apart\n  memstat --save snap.bin      save a snapshot; read it back with -f snap.bin\n  memstat -M vmcore -N vmlinux the malloc types of a crash dump\n  memstat --prometheus         Prometheus metrics on standard output\n  memstat --listen 127.0.0.1:9725           an HTTP exporter for Prometheus\n  memstat --textfile /var/lib/node_exporter/malloc_types.prom -w 15"
)]
struct Args {
    /// Report malloc types (the default when neither -m nor -z is given).
    #[arg(short = 'm', long = "malloc")]
    malloc: bool,
    /// Report slab caches (vmstat -z).
    #[arg(short = 'z', long = "zones", conflicts_with = "save")]
    zones: bool,
    /// In the -m table or JSON, also show malloc types that were never used.
    #[arg(short = 'a', long, conflicts_with_all = EXPORTS)]
    all: bool,
    /// In the -m table, also show each type's failed allocations (Fails), peak KiB in use while
    /// it is tracked (HighUse; see /proc/malloc_types_peak) and owning module (Owner), JSON
    /// always has them; in the -z table, the names of the caches merged into each (MERGED).
    #[arg(short = 'l', long, conflicts_with_all = NOT_TABLES)]
    long: bool,
    /// Print JSON with the keys of `vmstat --libxo json` instead of a table.
    #[arg(long, conflicts_with = "save")]
    json: bool,
    /// Humanize the numbers of the tables (default when standard output is a terminal).
    #[arg(short = 'h', overrides_with = "no_humanize", conflicts_with_all = NOT_TABLES)]
    humanize: bool,
    /// Do not humanize the numbers of the tables.
    #[arg(short = 'H', overrides_with = "humanize", conflicts_with_all = NOT_TABLES)]
    no_humanize: bool,
    /// Sort the rows of the tables or JSON (default: kernel order for -m, name order for -z).
    #[arg(short = 's', long, value_enum, conflicts_with_all = EXPORTS)]
    sort: Option<Sort>,
    /// In the tables or JSON, show only types whose name or probe name matches PATTERN:
    /// printable ASCII without spaces, `\NNN` for any byte (`\040` a space), and the globs `*`,
    /// `?`, `[...]`.
    #[arg(long, value_name = "PATTERN", conflicts_with_all = EXPORTS)]
    name: Option<String>,
    /// Repeat the report every SECONDS seconds (until interrupted or -c).
    #[arg(
        short = 'w',
        long = "wait",
        value_name = "SECONDS",
        conflicts_with = "save"
    )]
    wait: Option<f64>,
    /// Number of reports with -w, or of scrapes with --listen, at least 1 (default: unlimited).
    #[arg(short = 'c', long = "count", value_name = "N", requires = "repeat")]
    count: Option<u64>,
    /// Read malloc types from a saved stream FILE instead of the kernel.
    #[arg(short = 'f', long = "stream", value_name = "FILE")]
    stream: Option<PathBuf>,
    /// Read malloc types from CORE, a crash dump (an ELF vmcore: QEMU's dump-guest-memory, kdump's
    /// /proc/vmcore saved as ELF) or /proc/kcore, instead of the running kernel.
    #[arg(short = 'M', long = "core", value_name = "CORE", conflicts_with_all = ["stream", "zones", "listen"])]
    core: Option<PathBuf>,
    /// With -M: the kernel image (vmlinux) of CORE; its build ID must be CORE's, and its symbols
    /// name what CORE's vmcoreinfo does not.
    #[arg(short = 'N', long = "kernel", value_name = "KERNEL", requires = "core")]
    kernel: Option<PathBuf>,
    /// Path of the kernel's malloc stream (not with -f or -M).
    #[arg(long = "proc", value_name = "PATH", default_value = DEFAULT_PROC_PATH,
          conflicts_with_all = ["stream", "core"])]
    proc_path: PathBuf,
    /// Root of the sysctl tree, for the size classes (vm/malloc_zone_sizes) of the -m table or
    /// JSON, and for the bytes the types hold of each (vm/malloc_zone_memuse) of the kmalloc
    /// coverage (not with -M, whose core has the classes).
    #[arg(long = "sysctl", value_name = "DIR", default_value = DEFAULT_SYSCTL_DIR,
          conflicts_with_all = ["core", "save"])]
    sysctl_dir: PathBuf,
    /// SLUB sysfs directory for -z, and for the kmalloc caches of the kmalloc coverage that ends
    /// the -m report of the running kernel.
    #[arg(long = "slab-dir", value_name = "DIR", default_value = DEFAULT_SLAB_DIR)]
    slab_dir: PathBuf,
    /// slabinfo file for -z, used when the slab directory is missing.
    #[arg(long = "slabinfo", value_name = "FILE", default_value = DEFAULT_SLABINFO, requires = "zones")]
    slabinfo: PathBuf,
    /// Save the malloc types read as a stream FILE and exit.
    #[arg(long = "save", value_name = "FILE")]
    save: Option<PathBuf>,
    /// Print the malloc types as Prometheus metrics (text exposition format) instead of a table.
    #[arg(long, conflicts_with_all = ["json", "zones", "save"])]
    prometheus: bool,
    /// Write the Prometheus metrics to FILE, atomically (for node exporter's textfile collector),
    /// instead of printing; with -w, on every report.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["json", "zones", "save", "prometheus"])]
    textfile: Option<PathBuf>,
    /// Serve the Prometheus metrics over HTTP at http://ADDR/metrics (e.g. 127.0.0.1:9725), reading
    /// the kernel on every scrape, until interrupted (or, with -c N, for N scrapes).
    #[arg(long, value_name = "ADDR", conflicts_with_all = ["json", "zones", "save", "prometheus", "textfile", "wait"])]
    listen: Option<String>,
    /// With --listen: connections served at once; one more is answered 503 and closed.
    #[arg(long, value_name = "N", requires = "listen", default_value_t = exporter::DEFAULT_MAX_CONNECTIONS,
          value_parser = clap::value_parser!(u32).range(1..).map(|n| n as usize))]
    max_connections: usize,
    /// With --listen: close a connection whose client keeps the exporter waiting for SECONDS (no
    /// byte sent or read, or no whole request head in that time).
    #[arg(long, value_name = "SECONDS", requires = "listen", default_value_t = exporter::DEFAULT_IDLE_TIMEOUT.as_secs_f64())]
    idle_timeout: f64,
    /// With --listen: the largest request head (request line and headers) in bytes, 1024 to
    /// 1048576; a longer one is answered 431.
    #[arg(long, value_name = "BYTES", requires = "listen", default_value_t = exporter::DEFAULT_MAX_HEADER_SIZE,
          value_parser = clap::value_parser!(u32)
              .range(exporter::MIN_MAX_HEADER_SIZE as i64..=exporter::MAX_MAX_HEADER_SIZE as i64)
              .map(|n| n as usize))]
    max_header_size: usize,
    /// Print help.
    #[arg(long = "help", action = clap::ArgAction::Help)]
    help: Option<bool>,
}

/// The error text, with a hint where one fits: "(run as root)" for a
/// `/proc` file or a SLUB sysfs file (root-only in Linux 7.3) we may not
/// read, "(kernel without malloc types?)" only for a missing default
/// `/proc/malloc_stats` (never for a user's file).
fn describe(e: &Error) -> String {
    match e {
        Error::Permission { path }
            if path.starts_with("/proc") || path.starts_with(DEFAULT_SLAB_DIR) =>
        {
            format!("{e} (run as root)")
        }
        Error::Io { source, path }
            if source.kind() == io::ErrorKind::NotFound
                && path.as_path() == Path::new(DEFAULT_PROC_PATH) =>
        {
            format!("{e} (kernel without malloc types?)")
        }
        _ => e.to_string(),
    }
}

struct Failure {
    msg: String,
    code: u8,
}

impl From<String> for Failure {
    fn from(msg: String) -> Failure {
        Failure { msg, code: 1 }
    }
}

fn usage(msg: &str) -> Failure {
    Failure {
        msg: msg.to_string(),
        code: 2,
    }
}

/// The combinations of options that clap cannot check: those of `-z` without `-m`, where the
/// options of the malloc types' table would be ignored (`-l` is not one: it adds the MERGED
/// column to `-z`), and those of the kmalloc coverage of the running kernel with a saved stream
/// or a core.
fn check_combinations(args: &Args, matches: &ArgMatches) -> Result<(), Failure> {
    let given = |id: &str| matches.value_source(id) == Some(ValueSource::CommandLine);
    // Without the running kernel's types there is no kmalloc coverage to read them for.
    let saved = args.stream.is_some() || args.core.is_some();
    if !args.zones && given("slab_dir") {
        let why = if saved {
            Some("a saved stream or a core does not have")
        } else if args.save.is_some() {
            Some("--save does not write")
        } else if args.name.is_some() {
            Some("--name does not show")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(usage(&format!(
                "--slab-dir applies to -z and to the kmalloc coverage of the running kernel, \
                 which {why}"
            )));
        }
    }
    let export = args.prometheus || args.textfile.is_some() || args.listen.is_some();
    if saved && export && given("sysctl_dir") {
        return Err(usage(
            "--sysctl applies to the metrics' kmalloc coverage of the running kernel, \
             which a saved stream does not have",
        ));
    }
    if !args.zones || args.malloc {
        return Ok(());
    }
    for (id, option) in [("all", "-a"), ("sysctl_dir", "--sysctl")] {
        if given(id) {
            return Err(usage(&format!(
                "{option} applies to the malloc types, which -z alone does not show (add -m)"
            )));
        }
    }
    Ok(())
}

fn run(args: &Args) -> Result<(), Failure> {
    let want_m = args.malloc || !args.zones || args.save.is_some();
    let want_z = args.zones;
    let humanize = if args.humanize {
        true
    } else if args.no_humanize {
        false
    } else {
        io::stdout().is_terminal()
    };
    let opts = Options {
        all: args.all,
        humanize,
        sort: match args.sort {
            None => SortKey::None,
            Some(Sort::Name) => SortKey::Name,
            Some(Sort::Inuse) => SortKey::InUse,
            Some(Sort::Memuse) => SortKey::MemUse,
            Some(Sort::Requests) => SortKey::Requests,
        },
        name: match &args.name {
            Some(p) => Some(memstat::pattern::Pattern::new(p).map_err(|e| Failure {
                msg: format!("--name '{}': {e}", memstat::text::as_text(p.as_bytes())),
                code: 2,
            })?),
            None => None,
        },
        long: args.long,
    };
    let wait = args.wait.map(|w| seconds("-w", w)).transpose()?;
    if args.count == Some(0) {
        return Err(usage("-c: the count must be at least 1"));
    }
    let slab_src = SlabSource {
        sys_dir: Some(args.slab_dir.clone()),
        slabinfo: Some(args.slabinfo.clone()),
    };
    let mut list = MemoryTypeList::new();
    let core = match &args.core {
        Some(c) => Some(Core::open(c, args.kernel.as_deref()).map_err(|e| describe(&e))?),
        None => None,
    };
    if let Some(addr) = &args.listen {
        return serve(args, addr, list);
    }
    // The reconciliation against the kmalloc caches is the running kernel's.
    let live = core.is_none() && args.stream.is_none() && args.save.is_none();
    let mut n = 0u64;
    let stdout = io::stdout();
    loop {
        if let Some(core) = &core {
            tolerate(n, list.kvm_malloc(core))?;
        } else if want_m {
            let path = args.stream.as_ref().unwrap_or(&args.proc_path);
            list.update_zones(&args.sysctl_dir);
            tolerate(n, list.read_malloc(path))?;
        }
        if want_z {
            tolerate(n, list.read_slab(&slab_src))?;
        }
        if let Some(save) = &args.save {
            std::fs::write(save, list.to_stream())
                .map_err(|e| format!("{}: {}", save.display(), io_text(&e)))?;
            return Ok(());
        }
        // Shown for every type only: not read for a report of the types `--name` selects.
        let coverage = if want_m && live && opts.name.is_none() {
            read_coverage(args)
        } else {
            None
        };
        if let Some(path) = &args.textfile {
            openmetrics::write_textfile(&list, coverage.as_ref(), path)
                .map_err(|e| format!("{}: {}", path.display(), io_text(&e)))?;
        }
        let mut out = String::new();
        if args.textfile.is_some() {
            // Nothing on standard output.
        } else if args.prometheus {
            out = openmetrics::exposition(&list, coverage.as_ref());
        } else if args.json {
            let doc = report::Document {
                malloc: want_m.then(|| report::malloc_rows(&list, list.zones(), &opts)),
                zone: want_z.then(|| report::zone_rows(&list, &opts)),
                coverage: coverage.as_ref().map(report::coverage_rows),
            };
            out = serde_json::to_string(&doc).map_err(|e| e.to_string())?;
            out.push('\n');
        } else {
            // The blank line between reports of -w.
            if n > 0 {
                out.push('\n');
            }
            if want_m {
                out.push_str(&report::malloc_text(&list, list.zones(), &opts));
                if let Some(c) = &coverage {
                    out.push('\n');
                    out.push_str(&report::coverage_text(c, humanize));
                }
            }
            if want_z {
                if want_m {
                    out.push('\n');
                }
                let mut zo = opts.clone();
                if zo.sort == SortKey::None {
                    zo.sort = SortKey::Name;
                }
                out.push_str(&report::zone_text(&list, &zo));
            }
        }
        let mut lock = stdout.lock();
        if let Err(e) = lock.write_all(out.as_bytes()).and_then(|_| lock.flush()) {
            if e.kind() == io::ErrorKind::BrokenPipe {
                return Ok(());
            }
            return Err(format!("stdout: {}", io_text(&e)).into());
        }
        drop(lock);
        n += 1;
        let Some(w) = wait else { break };
        if args.count.is_some_and(|c| n >= c) {
            break;
        }
        std::thread::sleep(w);
    }
    Ok(())
}

/// The HTTP exporter of `--listen` ([`exporter`]): each scrape reads the kernel (or the `-f`
/// file) into `list`.
fn serve(args: &Args, addr: &str, mut list: MemoryTypeList) -> Result<(), Failure> {
    let limits = exporter::Limits {
        max_connections: args.max_connections,
        idle_timeout: seconds("--idle-timeout", args.idle_timeout)?,
        max_header_size: args.max_header_size,
    };
    let server = exporter::Exporter::bind(addr, limits)
        .map_err(|e| format!("cannot listen on {addr}: {}", io_text(&e)))?;
    eprintln!("memstat: serving http://{}/metrics", server.local_addr());
    let path = args
        .stream
        .clone()
        .unwrap_or_else(|| args.proc_path.clone());
    let live = args.stream.is_none();
    let (sysctl_dir, slab_dir) = (args.sysctl_dir.clone(), args.slab_dir.clone());
    let scrape = move || {
        list.read_malloc(&path).map_err(|e| describe(&e))?;
        let coverage = if live {
            coverage_of(&sysctl_dir, &slab_dir)
        } else {
            None
        };
        Ok(openmetrics::exposition(&list, coverage.as_ref()).into_bytes())
    };
    server
        .serve(args.count, Box::new(scrape))
        .map_err(|e| format!("{}; the exporter stopped", io_text(&e)).into())
}

/// The reconciliation of the running kernel's malloc types against its kmalloc caches
/// ([`Coverage`]), for the `-m` report and the exports; `None`, with the reason on standard
/// error, when it cannot be read (the report goes on without it), and `None` silently for a
/// kernel that does not give it.
fn read_coverage(args: &Args) -> Option<Coverage> {
    coverage_of(&args.sysctl_dir, &args.slab_dir)
}

/// [`read_coverage`] from the sysctl tree `sysctl_dir` and the SLUB sysfs directory `slab_dir`.
fn coverage_of(sysctl_dir: &Path, slab_dir: &Path) -> Option<Coverage> {
    match Coverage::read(sysctl_dir, slab_dir) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("memstat: kmalloc coverage: {}", describe(&e));
            None
        }
    }
}

/// The duration of `secs` seconds given to `option`: a positive number that a [`Duration`]
/// holds, else a usage error.
fn seconds(option: &str, secs: f64) -> Result<Duration, Failure> {
    if !(secs.is_finite() && secs > 0.0) {
        return Err(usage(&format!(
            "{option}: must be a positive number of seconds"
        )));
    }
    Duration::try_from_secs_f64(secs)
        .map_err(|_| usage(&format!("{option}: too large for a duration")))
}

/// Judges the result of one update of a source for report number `n` (from 0).
///
/// The first report has nothing to show without its sources, so an error ends the run. Later
/// reports of `-w` go on: a source can fail for a moment while the kernel changes under it (a
/// module unloaded in the middle of a read, memory short), and the list keeps the figures of
/// its last good update, which the report shows; the error is printed on stderr, marked as such.
fn tolerate(n: u64, r: memstat::Result<()>) -> Result<(), Failure> {
    match r {
        Ok(()) => Ok(()),
        Err(e) if n == 0 => Err(describe(&e).into()),
        Err(e) => {
            eprintln!(
                "memstat: {}; showing the figures of the last update",
                describe(&e)
            );
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    let (args, matches) = match memstat::cli::parse_with_matches::<Args>("memstat") {
        Ok(parsed) => parsed,
        Err(code) => return code,
    };
    match check_combinations(&args, &matches).and_then(|()| run(&args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("memstat: {}", f.msg);
            ExitCode::from(f.code)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_hints() {
        let hint = |p: &str| {
            describe(&Error::Permission {
                path: PathBuf::from(p),
            })
        };
        assert!(hint("/proc/malloc_stats").ends_with(" (run as root)"));
        // The SLUB sysfs files are root-only in Linux 7.3, as /proc/slabinfo is.
        assert!(hint("/sys/kernel/slab/kmalloc-64/objects").ends_with(" (run as root)"));
        assert!(!hint("/home/user/saved.stream").contains("root"));
    }
}
