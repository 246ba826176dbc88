//! memstat: `vmstat -m` and `vmstat -z` for Linux malloc types and slab caches.

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use memstat::error::io_text;
use memstat::kvm::Core;
use memstat::report::{self, Options, SortKey};
use memstat::slab::{DEFAULT_SLABINFO, DEFAULT_SLAB_DIR};
use memstat::zones::DEFAULT_SYSCTL_DIR;
use memstat::{openmetrics, Error, MemoryTypeList, SlabSource, DEFAULT_PROC_PATH};

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

/// Report kernel memory usage by malloc type (like FreeBSD's `vmstat -m`)
/// and by slab cache (like `vmstat -z`).
#[derive(Parser, Debug)]
#[command(
    name = "memstat",
    version,
    disable_help_flag = true,
    after_help = "Examples:\n  memstat                      malloc types, as vmstat -m\n  memstat -z                   slab caches, as vmstat -z\n  memstat -m --json            libxo-style JSON\n  memstat -m -l                with failures, peaks and owners\n  memstat -s memuse --name 'dev*'\n  memstat -w 1 -c 5            five reports, one second apart\n  memstat --save snap.bin      save a snapshot; read it back with -f snap.bin\n  memstat -M vmcore -N vmlinux the malloc types of a crash dump\n  memstat --prometheus         Prometheus metrics on standard output\n  memstat --listen 127.0.0.1:9725           an HTTP exporter for Prometheus\n  memstat --textfile /var/lib/node_exporter/malloc_types.prom -w 15"
)]
struct Args {
    /// Report malloc types (the default when neither -m nor -z is given).
    #[arg(short = 'm', long = "malloc")]
    malloc: bool,
    /// Report slab caches (vmstat -z).
    #[arg(short = 'z', long = "zones")]
    zones: bool,
    /// Also show malloc types that were never used.
    #[arg(short = 'a', long)]
    all: bool,
    /// With -m, also show each type's failed allocations (Fails), peak KiB in use while it is
    /// tracked (HighUse; see /proc/malloc_types_peak) and owning module (Owner).
    #[arg(short = 'l', long)]
    long: bool,
    /// Print JSON with the keys of `vmstat --libxo json` instead of a table.
    #[arg(long)]
    json: bool,
    /// Humanize numbers (default when standard output is a terminal).
    #[arg(short = 'h', overrides_with = "no_humanize")]
    humanize: bool,
    /// Do not humanize numbers.
    #[arg(short = 'H', overrides_with = "humanize")]
    no_humanize: bool,
    /// Sort rows (default: kernel order for -m, name order for -z).
    #[arg(short = 's', long, value_enum)]
    sort: Option<Sort>,
    /// Show only types whose name or probe name matches PATTERN: printable ASCII without
    /// spaces, `\NNN` for any byte (`\040` a space), and the globs `*`, `?`, `[...]`.
    #[arg(long, value_name = "PATTERN")]
    name: Option<String>,
    /// Repeat the report every SECONDS seconds (until interrupted or -c).
    #[arg(short = 'w', long = "wait", value_name = "SECONDS")]
    wait: Option<f64>,
    /// Number of reports with -w, at least 1 (default: unlimited; 0 is a usage error).
    #[arg(short = 'c', long = "count", value_name = "N")]
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
    /// Path of the kernel's malloc stream.
    #[arg(long = "proc", value_name = "PATH", default_value = DEFAULT_PROC_PATH)]
    proc_path: PathBuf,
    /// Root of the sysctl tree (for vm/malloc_zone_sizes).
    #[arg(long = "sysctl", value_name = "DIR", default_value = DEFAULT_SYSCTL_DIR)]
    sysctl_dir: PathBuf,
    /// SLUB sysfs directory for -z.
    #[arg(long = "slab-dir", value_name = "DIR", default_value = DEFAULT_SLAB_DIR)]
    slab_dir: PathBuf,
    /// slabinfo file for -z, used when the slab directory is missing.
    #[arg(long = "slabinfo", value_name = "FILE", default_value = DEFAULT_SLABINFO)]
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
    let wait = match args.wait {
        Some(w) if w.is_finite() && w > 0.0 => Some(
            Duration::try_from_secs_f64(w).map_err(|_| usage("-w: the interval is too large"))?,
        ),
        Some(_) => {
            return Err(usage(
                "-w: the interval must be a positive number of seconds",
            ))
        }
        None => None,
    };
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
        return serve(args, addr, &mut list);
    }
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
                .map_err(|e| format!("{}: {e}", save.display()))?;
            return Ok(());
        }
        if let Some(path) = &args.textfile {
            openmetrics::write_textfile(&list, path)
                .map_err(|e| format!("{}: {}", path.display(), io_text(&e)))?;
        }
        let mut out = String::new();
        if args.textfile.is_some() {
            // Nothing on standard output.
        } else if args.prometheus {
            let mut b = Vec::new();
            openmetrics::write_metrics(&list, &mut b).map_err(|e| io_text(&e))?;
            out = String::from_utf8_lossy(&b).into_owned();
        } else if args.json {
            let doc = report::Document {
                malloc: want_m.then(|| report::malloc_rows(&list, list.zones(), &opts)),
                zone: want_z.then(|| report::zone_rows(&list, &opts)),
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

/// The HTTP exporter of `--listen`: `GET /metrics` reads the kernel (or the `-f` file) and
/// answers the Prometheus metrics, or 503 with the error when the read fails; `/` points to
/// `/metrics`; anything else is 404 (405 for another method).
fn serve(args: &Args, addr: &str, list: &mut MemoryTypeList) -> Result<(), Failure> {
    use tiny_http::{Header, Response, Server};

    let server = Server::http(addr).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let header = |v: &str| {
        Header::from_bytes(&b"Content-Type"[..], v.as_bytes())
            .map_err(|()| Failure::from("bad header".to_string()))
    };
    let metrics_type = header(openmetrics::CONTENT_TYPE)?;
    let text_type = header("text/plain; charset=utf-8")?;
    eprintln!("memstat: serving http://{}/metrics", server.server_addr());
    let path = args.stream.as_ref().unwrap_or(&args.proc_path);
    let mut scrapes = 0u64;
    for request in server.incoming_requests() {
        let url = request.url().split('?').next().unwrap_or("");
        let get = *request.method() == tiny_http::Method::Get;
        let response = match (get, url) {
            (true, "/metrics") => {
                scrapes += 1;
                list.update_zones(&args.sysctl_dir);
                match list.read_malloc(path) {
                    Ok(()) => {
                        let mut body = Vec::new();
                        openmetrics::write_metrics(list, &mut body).map_err(|e| io_text(&e))?;
                        Response::from_data(body).with_header(metrics_type.clone())
                    }
                    Err(e) => Response::from_string(format!("memstat: {}\n", describe(&e)))
                        .with_status_code(503)
                        .with_header(text_type.clone()),
                }
            }
            (true, "/") => {
                Response::from_string("malloc types: see /metrics\n").with_header(text_type.clone())
            }
            (true, _) => Response::from_string("not found\n")
                .with_status_code(404)
                .with_header(text_type.clone()),
            (false, _) => Response::from_string("method not allowed\n")
                .with_status_code(405)
                .with_header(text_type.clone()),
        };
        // A client that went away is its own problem, not the exporter's.
        let _ = request.respond(response);
        if args.count.is_some_and(|c| scrapes >= c) {
            break;
        }
    }
    Ok(())
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
    let args = Args::parse();
    match run(&args) {
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
