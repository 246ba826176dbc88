//! dtmalloc: the dwatch `dtmalloc` / `dtmalloc-NAME` / `dtmalloc-top`
//! profiles on Linux, reading the `dtmalloc:malloc` and `dtmalloc:free`
//! tracepoints through a private tracefs instance.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, IsTerminal, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::{Parser, Subcommand};
use memstat::error::io_text;
use memstat::pattern::{exact_pattern, Pattern};
use memstat::probe_name;
use memstat::stacks::{Line, StackReader, Stacks, Weight};
use memstat::text::{as_text, name_from_text, name_text};
use memstat::trace::{self, Record, Top};

/// Watch typed kernel allocations and frees (the dwatch dtmalloc module).
///
/// Without a subcommand, prints one line per dtmalloc:malloc or
/// dtmalloc:free event of at least --min bytes:
/// `TIME COMM[PID]: malloc(9) type NAME SIZE bytes`.
#[derive(Parser, Debug)]
#[command(
    name = "dtmalloc",
    version,
    after_help = "Environment:\n  DWATCH_MALLOC_MIN   default of --min (65536); must be all digits\n\nExamples:\n  dtmalloc                        allocations and frees of 64 KiB or more\n  DWATCH_MALLOC_MIN=0 dtmalloc    every event\n  dtmalloc --type foo_bar --min 0 every event of type \"foo bar\"\n  dtmalloc -p 'binder_*' stacks   who allocates the binder types\n  dtmalloc top                    net bytes by type, refreshed every 3 s\n  dtmalloc top --duration 10 --once\n  dtmalloc -l                     the probes, as dtrace -l -P dtmalloc lists them"
)]
struct Args {
    /// Show only events of at least N bytes (default: $DWATCH_MALLOC_MIN or 65536; top: 0).
    #[arg(long, value_name = "N", global = true)]
    min: Option<u64>,
    /// Watch one type only, like dwatch dtmalloc-NAME: its name or probe name as memstat and
    /// dtmalloc -l show it (`\NNN` for a byte), or its bytes; white space becomes `_`. Exact:
    /// `*`, `?` and `[` are characters of the name. The type must be registered (in
    /// tracefs's dtmalloc_probes) when the watch starts, and the watch stops with an error
    /// when it goes away; -Z allows both.
    #[arg(short = 't', long = "type", value_name = "NAME", global = true)]
    type_: Option<OsString>,
    /// With --type, as `dtrace -Z`: a type that is not registered yet is waited for, and one
    /// that goes away (its module unloads) is watched until it comes back.
    #[arg(short = 'Z', long = "zero", global = true)]
    zero: bool,
    /// Watch the types whose probe names match PATTERN, as a probe description
    /// `dtmalloc::PATTERN:` does in dtrace: the pattern rule of tracefs's set_dtmalloc_probes
    /// and memstat --name (printable ASCII without spaces, `\NNN` for a byte, and the globs
    /// `*`, `?`, `[...]`). A type that matches must be registered when the watch starts (-Z:
    /// none needed); types that register later and match are watched too, and the watch goes
    /// on when matching types go away.
    #[arg(
        short = 'p',
        long = "probes",
        value_name = "PATTERN",
        global = true,
        conflicts_with = "type_"
    )]
    probes: Option<OsString>,
    /// tracefs mount point (default: /sys/kernel/tracing, else /sys/kernel/debug/tracing).
    #[arg(long, value_name = "PATH", global = true)]
    tracefs: Option<PathBuf>,
    /// Name of the tracefs instance to create (default: dtmalloc.PID).
    #[arg(long, value_name = "NAME", global = true)]
    instance: Option<String>,
    /// Stop after N events (top: after N refreshes; top --once: after N events); N >= 1, 0 is a usage error.
    #[arg(short = 'c', long, value_name = "N", global = true)]
    count: Option<u64>,
    /// Stop after SECONDS seconds.
    #[arg(short = 'd', long, value_name = "SECONDS", global = true)]
    duration: Option<f64>,
    /// Print the tracefs writes made.
    #[arg(short = 'v', long, global = true)]
    verbose: bool,
    /// List the dtmalloc probes, as `dtrace -l -P dtmalloc` does (tracefs's dtmalloc_probes).
    #[arg(short = 'l', long)]
    list: bool,
    /// Testing: treat --tracefs as a plain directory tree (see README).
    #[arg(long, hide = true, global = true)]
    fake_tracefs: bool,
    #[command(subcommand)]
    cmd: Option<Cmd>,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// dtmalloc-top: running catalogue of net bytes and outstanding
    /// allocations by type since the watch began, sorted by net bytes.
    Top {
        /// Seconds between refreshes.
        #[arg(short = 'i', long, value_name = "SECONDS", default_value_t = 3.0)]
        interval: f64,
        /// Print no periodic refresh: one table when the watch ends
        /// (--duration, --count of events, end of input or Ctrl-C).
        #[arg(long)]
        once: bool,
    },
    /// Kernel stacks of the allocations (and with --frees of the frees), summed by stack as
    /// DTrace's `@[stack()] = sum(args[3])` does: a report of the top stacks by bytes when the
    /// watch ends (--duration, --count of events, Ctrl-C), and on request the folded stacks,
    /// an SVG flame graph and a pprof profile.
    Stacks {
        /// Also the stacks of frees.
        #[arg(long)]
        frees: bool,
        /// Stacks in the report, most bytes first (0: all).
        #[arg(long, value_name = "N", default_value_t = 10)]
        top: usize,
        /// Write the folded stacks (`type:probe;outermost;...;leaf WEIGHT`) to FILE, `-` for
        /// standard output (then instead of the report).
        #[arg(long, value_name = "FILE")]
        folded: Option<PathBuf>,
        /// Write an SVG flame graph to FILE.
        #[arg(long, value_name = "FILE")]
        svg: Option<PathBuf>,
        /// Write a pprof profile (gzipped profile.proto; sample types allocations/count and
        /// bytes/bytes) to FILE.
        #[arg(long, value_name = "FILE")]
        pprof: Option<PathBuf>,
        /// What the folded stacks and the flame graph weigh: bytes or count.
        #[arg(long, value_name = "WHAT", default_value = "bytes", value_parser = ["bytes", "count"])]
        weight: String,
    },
}

struct Failure {
    msg: String,
    code: u8,
}

fn fail(msg: impl Into<String>) -> Failure {
    Failure {
        msg: msg.into(),
        code: 1,
    }
}

fn usage(msg: impl Into<String>) -> Failure {
    Failure {
        msg: msg.into(),
        code: 2,
    }
}

/// A private tracefs instance, removed on drop.
struct Instance {
    root: PathBuf,
    dir: PathBuf,
    fake: bool,
    verbose: bool,
    enabled: Vec<PathBuf>,
    /// The specs (`PATTERN` or `PATTERN:PROBE`) this watch added to the kernel's per-type
    /// selection.
    selected: Vec<String>,
    removed: bool,
}

impl Instance {
    /// Says what is written to `path` (`-v`, as the shell command that does it, `>>` for an
    /// append) and, for a fake tracefs, logs it.
    fn log_write(&self, path: &Path, val: &str, append: bool) {
        if self.verbose {
            eprintln!(
                "dtmalloc: echo '{}' {} {}",
                val.replace('\'', "'\\''"),
                if append { ">>" } else { ">" },
                path.display()
            );
        }
        if self.fake {
            if let Ok(mut f) = OpenOptions::new()
                .create(true)
                .append(true)
                .open(self.root.join("fake-writes.log"))
            {
                let rel = path.strip_prefix(&self.root).unwrap_or(path);
                let _ = writeln!(f, "{} {}", rel.display(), val);
            }
        }
    }

    fn write(&self, rel: &str, val: &str) -> Result<(), Failure> {
        let p = self.dir.join(rel);
        self.log_write(&p, val, false);
        let mut f = OpenOptions::new()
            .write(true)
            .truncate(!self.fake)
            .create(self.fake)
            .open(&p)
            .map_err(|e| fail(format!("{}: {}", p.display(), io_text(&e))))?;
        f.write_all(format!("{val}\n").as_bytes())
            .map_err(|e| fail(format!("{}: {}", p.display(), io_text(&e))))
    }

    fn create(root: &Path, name: &str, fake: bool, verbose: bool) -> Result<Instance, Failure> {
        let events = root.join("events/dtmalloc");
        if !events.join("malloc").is_dir() {
            return Err(fail(format!(
                "{}: no dtmalloc tracepoints (kernel without malloc types, or tracefs not mounted?)",
                events.display()
            )));
        }
        let dir = root.join("instances").join(name);
        fs::create_dir(&dir).map_err(|e| {
            let hint = if e.kind() == io::ErrorKind::PermissionDenied {
                " (run as root)"
            } else {
                ""
            };
            fail(format!("{}: {}{hint}", dir.display(), io_text(&e)))
        })?;
        let inst = Instance {
            root: root.to_path_buf(),
            dir,
            fake,
            verbose,
            enabled: Vec::new(),
            selected: Vec::new(),
            removed: false,
        };
        if fake {
            inst.populate_fake()?;
        }
        Ok(inst)
    }

    /// Testing only: lay out what tracefs would create in a new instance.
    fn populate_fake(&self) -> Result<(), Failure> {
        let io = |e: io::Error| fail(format!("fake tracefs: {}", io_text(&e)));
        for ev in ["malloc", "free"] {
            fs::create_dir_all(self.dir.join("events/dtmalloc").join(ev)).map_err(io)?;
        }
        fs::create_dir_all(self.dir.join("options")).map_err(io)?;
        let src = self.root.join("trace_pipe");
        let fifo = fs::metadata(&src).is_ok_and(|m| m.file_type().is_fifo());
        if fifo {
            // A live pipe, fed by the test while the watch runs.
            std::os::unix::fs::symlink(&src, self.dir.join("trace_pipe")).map_err(io)?;
        } else if src.exists() {
            fs::copy(&src, self.dir.join("trace_pipe")).map_err(io)?;
        } else {
            File::create(self.dir.join("trace_pipe")).map_err(io)?;
        }
        let cpu0 = self.root.join("per_cpu/cpu0/stats");
        if cpu0.exists() {
            fs::create_dir_all(self.dir.join("per_cpu/cpu0")).map_err(io)?;
            fs::copy(&cpu0, self.dir.join("per_cpu/cpu0/stats")).map_err(io)?;
        }
        Ok(())
    }

    /// Sets the instance's trace options (`options/NAME`) to 1: `stacktrace` records a
    /// kernel stack after each event, `sym-offset` prints its frames as `name+0xOFF/0xSIZE`.
    fn options(&self, names: &[&str]) -> Result<(), Failure> {
        for o in names {
            self.write(&format!("options/{o}"), "1")?;
        }
        Ok(())
    }

    fn enable(&mut self, filter: &str, events: &[&str]) -> Result<(), Failure> {
        for ev in events {
            self.write(&format!("events/dtmalloc/{ev}/filter"), filter)?;
        }
        for ev in events {
            let rel = format!("events/dtmalloc/{ev}/enable");
            self.write(&rel, "1")?;
            self.enabled.push(self.dir.join(rel));
        }
        Ok(())
    }

    /// Adds the probes `probes` (`malloc`, `free`) of the types `spec` matches (a pattern: a
    /// type's exact pattern, the pattern of --probes, or `*` for every type) to the kernel's
    /// per-type selection (tracefs's `set_dtmalloc_probes`), so that the events fire for those
    /// types, every other type pays nothing for the watch, and what other consumers select
    /// does not hide the watched types' events; taken out again when the instance is
    /// removed. A kernel without the file is left alone: the instance's filter and dtmalloc's
    /// own test of each event then pick the types.
    ///
    /// Only the probes of `probes` (`malloc`, `free`) that the selection does not hold for
    /// `spec` are added (`spec` for both, `spec:PROBE` for one) and taken out again (`!spec`,
    /// `!spec:PROBE`: the kernel keeps a probe mask per spec): a probe selected already, by a
    /// user or another watch, is left as it is, since taking it out at the end would end their
    /// selection too.
    fn select(&mut self, spec: String, probes: &[&str]) -> Result<(), Failure> {
        let p = self.root.join(SELECTION_FILE);
        if !p.exists() {
            return Ok(());
        }
        let current =
            read_small(&p).map_err(|e| fail(format!("{}: {}", p.display(), io_text(&e))))?;
        let has = |s: String| current.split(|&b| b == b'\n').any(|l| l == s.as_bytes());
        let missing: Vec<&str> = probes
            .iter()
            .copied()
            .filter(|probe| !has(format!("{spec}:{probe}")))
            .collect();
        let specs = match missing.as_slice() {
            [] => return Ok(()),
            ["malloc", "free"] => vec![spec],
            _ => missing
                .iter()
                .map(|probe| format!("{spec}:{probe}"))
                .collect(),
        };
        self.append_selection(&specs.join(" "))?;
        self.selected = specs;
        Ok(())
    }

    /// Appends specs (words) to the selection file (`>>`: the other specs stay).
    fn append_selection(&self, spec: &str) -> Result<(), Failure> {
        let p = self.root.join(SELECTION_FILE);
        self.log_write(&p, spec, true);
        let mut f = OpenOptions::new()
            .append(true)
            .open(&p)
            .map_err(|e| fail(format!("{}: {}", p.display(), io_text(&e))))?;
        f.write_all(format!("{spec}\n").as_bytes())
            .map_err(|e| fail(format!("{}: {}", p.display(), io_text(&e))))
    }

    fn open_pipe(&self) -> Result<File, Failure> {
        let p = self.dir.join("trace_pipe");
        OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&p)
            .map_err(|e| fail(format!("{}: {}", p.display(), io_text(&e))))
    }

    fn disable(&mut self) {
        for p in std::mem::take(&mut self.enabled) {
            self.log_write(&p, "0", false);
            if let Ok(mut f) = OpenOptions::new().write(true).open(&p) {
                let _ = f.write_all(b"0\n");
            }
        }
    }

    /// Sum of (overrun, dropped events) over the instance's CPUs.
    fn dropped(&self) -> (u64, u64) {
        let mut tot = (0, 0);
        if let Ok(rd) = fs::read_dir(self.dir.join("per_cpu")) {
            for ent in rd.flatten() {
                if let Ok(t) = read_small(&ent.path().join("stats")) {
                    let (o, d) = trace::parse_cpu_stats(&String::from_utf8_lossy(&t));
                    tot.0 = u64::saturating_add(tot.0, o);
                    tot.1 = u64::saturating_add(tot.1, d);
                }
            }
        }
        tot
    }

    fn remove(&mut self) -> Result<(), Failure> {
        if self.removed {
            return Ok(());
        }
        self.disable();
        let selected = std::mem::take(&mut self.selected);
        let deselected = if selected.is_empty() {
            Ok(())
        } else {
            let words: Vec<String> = selected.iter().map(|s| format!("!{s}")).collect();
            self.append_selection(&words.join(" "))
        };
        self.removed = true;
        let r = if self.fake {
            fs::remove_dir_all(&self.dir)
        } else {
            fs::remove_dir(&self.dir)
        };
        let removed = r.map_err(|e| fail(format!("{}: {}", self.dir.display(), io_text(&e))));
        // Both are tried; a selection left behind is a failure of the run, as is the instance.
        match (deselected, removed) {
            (Err(f), Err(g)) => {
                eprintln!("dtmalloc: {}", f.msg);
                Err(g)
            }
            (Err(f), Ok(())) | (Ok(()), Err(f)) => Err(f),
            (Ok(()), Ok(())) => Ok(()),
        }
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if let Err(f) = self.remove() {
            eprintln!("dtmalloc: {}", f.msg);
        }
    }
}

/// The kernel's per-type probe selection, in the root of tracefs.
const SELECTION_FILE: &str = "set_dtmalloc_probes";
/// The longest probe name: a type's name, 31 bytes.
const PROBE_NAME_MAX: usize = memstat::stream::MAX_NAME - 1;
/// The kernel's list of dtmalloc probes, in the root of tracefs.
const PROBES_FILE: &str = "dtmalloc_probes";

/// The largest probe list `dtmalloc -l` copies: 64 MiB (about 800,000 types).
const PROBES_MAX: u64 = 64 << 20;

/// How often a watch of one type checks that its type is still registered.
const TYPE_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// The kernel's probe list (tracefs's `dtmalloc_probes`), at most [`PROBES_MAX`] bytes of it.
///
/// Errors: the file cannot be read (with a hint for a missing file or permission), or it is
/// larger than [`PROBES_MAX`].
fn read_probe_list(root: &Path) -> Result<Vec<u8>, Failure> {
    let p = root.join(PROBES_FILE);
    let mut text = Vec::new();
    File::open(&p)
        .and_then(|f| f.take(PROBES_MAX + 1).read_to_end(&mut text))
        .map_err(|e| {
            let hint = match e.kind() {
                io::ErrorKind::NotFound => " (kernel without per-type dtmalloc probes?)",
                io::ErrorKind::PermissionDenied => " (run as root)",
                _ => "",
            };
            fail(format!("{}: {}{hint}", p.display(), io_text(&e)))
        })?;
    if text.len() as u64 > PROBES_MAX {
        return Err(fail(format!(
            "{}: larger than {PROBES_MAX} bytes",
            p.display()
        )));
    }
    Ok(text)
}

/// The probe names (text forms, as the FUNCTION column shows them) of the kernel's probe
/// list; `None` when there is no list (a kernel without per-type probes).
///
/// Errors: the list is there but cannot be read, or is larger than [`PROBES_MAX`].
fn listed_probes(root: &Path) -> Result<Option<Vec<String>>, Failure> {
    if fs::symlink_metadata(root.join(PROBES_FILE)).is_err() {
        return Ok(None);
    }
    read_probe_list(root).map(|list| Some(probes_list_functions(&list)))
}

/// The FUNCTION of a line of a `dtmalloc_probes` listing (`ID PROVIDER MODULE FUNCTION NAME`,
/// MODULE empty) whose NAME is `malloc` or `free`; `None` for the header, and for any line
/// whose ID is not a number.
fn probe_line_function(line: &[u8]) -> Option<&[u8]> {
    let words: Vec<&[u8]> = line
        .split(u8::is_ascii_whitespace)
        .filter(|w| !w.is_empty())
        .collect();
    match words.as_slice() {
        [id, .., function, name]
            if !id.is_empty()
                && id.iter().all(u8::is_ascii_digit)
                && (*name == b"malloc" || *name == b"free") =>
        {
            Some(function)
        }
        _ => None,
    }
}

/// The FUNCTIONs of a `dtmalloc_probes` listing (`ID PROVIDER MODULE FUNCTION NAME`, MODULE
/// empty) whose NAME is `malloc` or `free`, each once. The header, and any line whose ID is
/// not a number, names none.
fn probes_list_functions(list: &[u8]) -> Vec<String> {
    let mut functions: Vec<String> = list
        .split(|&b| b == b'\n')
        .filter_map(|line| probe_line_function(line).map(|f| as_text(f).into_owned()))
        .collect();
    functions.sort_unstable();
    functions.dedup();
    functions
}

/// `dtmalloc -l`: copies the kernel's probe list to standard output, each line as text
/// ([`as_text`]): a kernel that writes the probe names in text form has its list copied
/// byte for byte, an older kernel's raw bytes are escaped. With `-t` or `-p`, as `dtrace -l
/// -n`, only the probes of the watched types (and the lines that are not probes: the header).
fn list_probes(root: &Path, watched: &Watched) -> Result<(), Failure> {
    let text = read_probe_list(root)?;
    let mut shown = Vec::with_capacity(text.len());
    let mut first = true;
    for line in text.split(|&b| b == b'\n') {
        let listed = probe_line_function(line).is_none_or(|f| watched.wants(&as_text(f)));
        if !listed {
            continue;
        }
        if !first {
            shown.push(b'\n');
        }
        first = false;
        shown.extend_from_slice(as_text(line).as_bytes());
    }
    let mut out = io::stdout().lock();
    match out.write_all(&shown).and_then(|_| out.flush()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            Err(fail(format!("stdout: {}", io_text(&e))))
        }
        _ => Ok(()),
    }
}

/// A small file, at most 64 KiB of it.
fn read_small(p: &Path) -> io::Result<Vec<u8>> {
    let mut s = Vec::new();
    File::open(p)?.take(64 * 1024).read_to_end(&mut s)?;
    Ok(s)
}

/// The probe name of `--type NAME`'s argument: NAME is decoded when it is a text form (what
/// memstat and `dtmalloc -l` show) and taken as its bytes otherwise, then its white space
/// becomes `_`. A name is 1 to 31 bytes.
fn probe_of_arg(arg: &[u8]) -> Result<Vec<u8>, String> {
    let name = std::str::from_utf8(arg)
        .ok()
        .and_then(name_from_text)
        .unwrap_or_else(|| arg.to_vec());
    if name.is_empty() || name.len() > PROBE_NAME_MAX {
        return Err(format!(
            "--type '{}': a type's name is 1 to {PROBE_NAME_MAX} bytes",
            as_text(arg)
        ));
    }
    Ok(probe_name(&name))
}

/// The types a watch is of.
#[derive(Clone)]
enum Watched {
    /// Every type.
    All,
    /// One type (--type): its probe name's bytes and text form (what the events' probe field
    /// holds).
    Type { probe: Vec<u8>, text: String },
    /// The types whose probe names match a pattern (--probes).
    Probes(Pattern),
}

impl Watched {
    /// Whether an event's probe field (a text form) is of a watched type. The instance's
    /// filter does not decide it alone: it can let another probe name through
    /// (trace::filter_is_exact), and a pattern's globs are not the filter's.
    fn wants(&self, probe_field: &str) -> bool {
        match self {
            Watched::All => true,
            Watched::Type { text, .. } => probe_field == text,
            // A probe name is at most PROBE_NAME_MAX bytes: a longer field is no type's.
            Watched::Probes(p) => {
                let bytes =
                    name_from_text(probe_field).unwrap_or_else(|| probe_field.as_bytes().to_vec());
                bytes.len() <= PROBE_NAME_MAX && p.matches(&bytes)
            }
        }
    }

    /// The spec of the kernel's per-type selection that selects the watched types: `*` for every
    /// type. The selection is the kernel's, shared by every consumer of the events: while it
    /// names some types (another watch's `-t`, or a user's), only those fire, and a watch of
    /// every type that left it alone would miss the others' events.
    fn spec(&self) -> String {
        match self {
            Watched::All => "*".to_string(),
            Watched::Type { probe, .. } => exact_pattern(probe),
            Watched::Probes(p) => p.as_str().to_string(),
        }
    }

    /// The one probe name the instance's filter tests, if there is one.
    fn filter_probe(&self) -> Option<&str> {
        match self {
            Watched::Type { text, .. } => Some(text),
            Watched::All | Watched::Probes(_) => None,
        }
    }

    /// What the watch is of, for people: `every type`, a probe name or a pattern.
    fn label(&self) -> &str {
        match self {
            Watched::All => "every type",
            Watched::Type { text, .. } => text,
            Watched::Probes(p) => p.as_str(),
        }
    }
}

/// The watch of `--probes PATTERN`: the pattern checked by the rule and as a spec of
/// `set_dtmalloc_probes`.
fn probes_of_arg(arg: &[u8]) -> Result<Watched, String> {
    // A pattern is printable ASCII: shown as typed, or as text when it is not.
    let shown = if arg.iter().all(|b| (0x21..=0x7e).contains(b)) {
        String::from_utf8_lossy(arg).into_owned()
    } else {
        as_text(arg).into_owned()
    };
    let p = Pattern::new(arg).map_err(|e| format!("--probes '{shown}': {e}"))?;
    p.check_spec()
        .map_err(|e| format!("--probes '{shown}': {e}"))?;
    Ok(Watched::Probes(p))
}

/// `now + d`, or `None` (never) when that is past what `Instant` holds.
fn after(d: Duration) -> Option<Instant> {
    Instant::now().checked_add(d)
}

/// A failed write to stdout: quiet for a closed pipe (exit 0, as on
/// SIGPIPE), an error otherwise.
fn stdout_error(e: &io::Error) -> Result<(), Failure> {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Ok(())
    } else {
        Err(fail(format!("stdout: {}", io_text(e))))
    }
}

fn tracefs_root(arg: &Option<PathBuf>) -> PathBuf {
    if let Some(p) = arg {
        return p.clone();
    }
    let t = PathBuf::from("/sys/kernel/tracing");
    if t.join("instances").is_dir() {
        t
    } else {
        PathBuf::from("/sys/kernel/debug/tracing")
    }
}

/// Wall-clock time as dwatch's `%Y`: `2026 May 12 10:00:00` (local time).
#[allow(deprecated)] // libc::time_t on musl
fn wall_time() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let t = libc::time_t::try_from(secs).unwrap_or(0);
    // SAFETY: localtime_r only writes the tm we hand it.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let ok = unsafe { !libc::localtime_r(&t, &mut tm).is_null() };
    if !ok {
        return String::new();
    }
    const MON: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{} {} {:2} {:02}:{:02}:{:02}",
        tm.tm_year + 1900,
        MON.get(tm.tm_mon as usize).unwrap_or(&"???"),
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}

struct Watch {
    top: Top,
    unparsed: u64,
    printed: u64,
    refreshes: u64,
    /// The width of top's header.
    columns: usize,
}

enum Mode {
    Events,
    Top { interval: Duration, once: bool },
    Stacks(StacksOut),
}

/// What `dtmalloc stacks` writes when the watch ends.
struct StacksOut {
    frees: bool,
    top: usize,
    folded: Option<PathBuf>,
    svg: Option<PathBuf>,
    pprof: Option<PathBuf>,
    weight: Weight,
}

/// Writes `data` to `path` (`-`: standard output), saying which file failed.
fn write_output(path: &Path, data: &[u8]) -> Result<(), Failure> {
    if path == Path::new("-") {
        let mut out = io::stdout().lock();
        return match out.write_all(data).and_then(|_| out.flush()) {
            Err(e) => stdout_error(&e),
            Ok(()) => Ok(()),
        };
    }
    fs::write(path, data).map_err(|e| fail(format!("{}: {}", path.display(), io_text(&e))))
}

impl StacksOut {
    /// The report on standard output (unless the folded stacks go there) and the files asked
    /// for; `what` names the watch in the flame graph's title.
    fn write(&self, stacks: &Stacks, what: &str, ran: Duration) -> Result<(), Failure> {
        let folded_to_stdout = self.folded.as_deref() == Some(Path::new("-"));
        if !folded_to_stdout {
            let top = (self.top > 0).then_some(self.top);
            write_output(Path::new("-"), stacks.report(top).as_bytes())?;
        }
        if let Some(p) = &self.folded {
            write_output(p, stacks.folded(self.weight).as_bytes())?;
        }
        if let Some(p) = &self.svg {
            write_output(p, stacks.svg(self.weight, what).as_bytes())?;
        }
        if let Some(p) = &self.pprof {
            let nanos = i64::try_from(ran.as_nanos()).unwrap_or(i64::MAX);
            write_output(p, &stacks.pprof(nanos))?;
        }
        Ok(())
    }
}

fn render_top(w: &Watch, out: &mut impl Write, clear: bool) -> io::Result<()> {
    let cols = w.columns;
    let mut s = String::new();
    if clear {
        s.push_str("\x1b[H\x1b[J");
    }
    s.push_str(&format!(
        "{:<width$}{}\n",
        "dtmalloc:malloc, dtmalloc:free",
        wall_time(),
        width = cols.saturating_sub(20)
    ));
    s.push_str(&w.top.table());
    out.write_all(s.as_bytes())?;
    out.flush()
}

fn run(args: &Args) -> Result<(), Failure> {
    let watched = match (&args.type_, &args.probes) {
        (Some(t), _) => {
            let probe = probe_of_arg(t.as_bytes()).map_err(usage)?;
            let text = name_text(&probe);
            Watched::Type { probe, text }
        }
        (None, Some(p)) => probes_of_arg(p.as_bytes()).map_err(usage)?,
        (None, None) => Watched::All,
    };
    if args.list {
        return list_probes(&tracefs_root(&args.tracefs), &watched);
    }
    let mode = match &args.cmd {
        None => Mode::Events,
        Some(Cmd::Top { interval, once }) => {
            if !(interval.is_finite() && *interval > 0.0) {
                return Err(usage("--interval must be a positive number of seconds"));
            }
            Mode::Top {
                interval: Duration::try_from_secs_f64(*interval)
                    .map_err(|_| usage("--interval is too large"))?,
                once: *once,
            }
        }
        Some(Cmd::Stacks {
            frees,
            top,
            folded,
            svg,
            pprof,
            weight,
        }) => Mode::Stacks(StacksOut {
            frees: *frees,
            top: *top,
            folded: folded.clone(),
            svg: svg.clone(),
            pprof: pprof.clone(),
            weight: if weight == "count" {
                Weight::Count
            } else {
                Weight::Bytes
            },
        }),
    };
    let min = match (args.min, &mode) {
        (Some(m), _) => m,
        // dwatch applies DWATCH_MALLOC_MIN to every profile but dtmalloc-top; stacks are
        // wanted of every size unless --min says otherwise.
        (None, Mode::Top { .. } | Mode::Stacks(_)) => 0,
        (None, Mode::Events) => {
            let env = std::env::var_os("DWATCH_MALLOC_MIN");
            trace::malloc_min_from_env(env.as_deref()).map_err(usage)?
        }
    };
    if args.count == Some(0) {
        return Err(usage("--count must be at least 1"));
    }
    let deadline = match args.duration {
        Some(d) if d.is_finite() && d >= 0.0 => {
            let d = Duration::try_from_secs_f64(d).map_err(|_| usage("--duration is too large"))?;
            // Past what Instant can hold: no deadline.
            after(d)
        }
        Some(_) => return Err(usage("--duration must be a non-negative number of seconds")),
        None => None,
    };

    let stop = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .map_err(|e| fail(format!("signal handler: {e}")))?;
    }

    let root = tracefs_root(&args.tracefs);
    // dtrace refuses a probe description that matches no probe unless -Z is given.
    // Whether the probe list has a probe of the watched types (None: there is no list).
    let matched =
        |w: &Watched| listed_probes(&root).map(|l| l.map(|l| l.iter().any(|f| w.wants(f))));
    let at_start = match &watched {
        Watched::All => None,
        w => matched(w)?,
    };
    match &watched {
        Watched::Type { text: t, .. } if at_start == Some(false) => {
            if !args.zero {
                return Err(fail(format!(
                    "--type '{t}': no such type ({} has no probe {t}; -Z waits for one)",
                    root.join(PROBES_FILE).display()
                )));
            }
            eprintln!("dtmalloc: no type {t} yet: waiting for one (-Z)");
        }
        Watched::Probes(p) if at_start == Some(false) => {
            if !args.zero {
                return Err(fail(format!(
                    "--probes '{p}': no type matches ({} has no probe that matches; -Z waits for one)",
                    root.join(PROBES_FILE).display()
                )));
            }
            eprintln!("dtmalloc: no type matches {p} yet: waiting for one (-Z)");
        }
        _ => {}
    }
    let name = args
        .instance
        .clone()
        .unwrap_or_else(|| format!("dtmalloc.{}", std::process::id()));
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(usage(format!("--instance: bad name {name:?}")));
    }
    let mut inst = Instance::create(&root, &name, args.fake_tracefs, args.verbose)?;
    let events: &[&str] = match &mode {
        Mode::Stacks(o) if !o.frees => &["malloc"],
        _ => &["malloc", "free"],
    };
    // The instance's filter keeps the watch to its type whatever other consumers select; the
    // per-type selection keeps every other type from paying for it, and makes a watch of every
    // type see every type while others select some.
    inst.select(watched.spec(), events)?;
    if let Mode::Stacks(_) = mode {
        inst.options(&["stacktrace", "sym-offset"])?;
    }
    inst.enable(&trace::filter_string(min, watched.filter_probe()), events)?;
    let mut pipe = inst.open_pipe()?;

    let stdout = io::stdout();
    let mut out = stdout.lock();
    let tty = io::stdout().is_terminal();
    let mut w = Watch {
        top: Top::new(),
        unparsed: 0,
        printed: 0,
        refreshes: 0,
        columns: trace::DEFAULT_COLUMNS,
    };
    if let Mode::Top { .. } = mode {
        // A header of the wrong width is no reason to stop a watch: said, and the default used.
        match trace::columns_from_env(std::env::var_os("COLUMNS").as_deref()) {
            Ok(c) => w.columns = c,
            Err(e) => eprintln!("dtmalloc: {e}; using {}", trace::DEFAULT_COLUMNS),
        }
        if let Err(e) = writeln!(out, "Cataloging malloc(9) activity ...").and_then(|_| out.flush())
        {
            return stdout_error(&e);
        }
    }
    // None in top mode: the interval is past what Instant holds (refresh
    // only at end of input).
    let mut next_refresh = match mode {
        Mode::Top { interval, .. } => after(interval),
        Mode::Events | Mode::Stacks(_) => None,
    };
    let started = Instant::now();
    let mut reader = {
        let watched = watched.clone();
        StackReader::keeping(move |e| watched.wants(&e.type_probe))
    };
    let mut stacks = Stacks::new();
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let mut eof = false;
    // Whether the watch stopped before the end of what it had read (a count reached, stdout
    // closed): the rest of the buffer is lines not wanted, not a partial one.
    let mut cut = false;
    let mut result = Ok(());
    // Without -Z, a watch of one type ends when the type goes away: what the pipe holds
    // then is read, and the watch stops as at the end of its input.
    let mut next_type_check = watched
        .filter_probe()
        .filter(|_| !args.zero)
        .and(after(TYPE_CHECK_INTERVAL));
    let mut gone = false;
    'watch: loop {
        if stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        let got = match pipe.read(&mut chunk) {
            Ok(0) => {
                eof = true;
                0
            }
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                result = Err(fail(format!("trace_pipe: {}", io_text(&e))));
                break;
            }
        };
        if gone && got == 0 {
            eof = true;
        }
        buf.extend_from_slice(&chunk[..got]);
        let mut start = 0;
        while let Some(nl) = buf[start..].iter().position(|&b| b == b'\n') {
            let line = &buf[start..start + nl];
            start += nl + 1;
            if line.trim_ascii().is_empty() {
                continue;
            }
            if let Mode::Stacks(_) = mode {
                match reader.line(line) {
                    Line::Part => {}
                    Line::Lost(count) => w.top.add(&Record::Lost { cpu: 0, count }),
                    Line::Unparsed => {
                        w.unparsed = w.unparsed.saturating_add(1);
                        if args.verbose {
                            eprintln!("dtmalloc: not an event or a stack: {}", as_text(line));
                        }
                    }
                }
                for s in reader.take() {
                    w.top.add(&Record::Event(s.event.clone()));
                    stacks.add(&s);
                    if args.count.is_some_and(|c| w.top.events() >= c) {
                        cut = true;
                        break 'watch;
                    }
                }
                continue;
            }
            match trace::parse_line(line) {
                // Only the watched types' events count (Watched::wants).
                Ok(Record::Event(e)) if !watched.wants(&e.type_probe) => {}
                Ok(rec) => {
                    w.top.add(&rec);
                    if let Mode::Top { once: true, .. } = mode {
                        if args.count.is_some_and(|c| w.top.events() >= c) {
                            cut = true;
                            break 'watch;
                        }
                    }
                    if let (Mode::Events, Record::Event(e)) = (&mode, &rec) {
                        if let Err(e) = writeln!(out, "{}", trace::format_event(e)) {
                            result = stdout_error(&e);
                            cut = true;
                            break 'watch;
                        }
                        w.printed += 1;
                        if args.count.is_some_and(|c| w.printed >= c) {
                            cut = true;
                            break 'watch;
                        }
                    }
                }
                Err(e) => {
                    w.unparsed = w.unparsed.saturating_add(1);
                    if args.verbose {
                        eprintln!("dtmalloc: {e}: {}", as_text(line));
                    }
                }
            }
        }
        buf.drain(..start);
        if let Mode::Top { interval, once } = &mode {
            if !once && (next_refresh.is_some_and(|nr| Instant::now() >= nr) || eof) {
                if let Err(e) = render_top(&w, &mut out, tty) {
                    result = stdout_error(&e);
                    break;
                }
                w.refreshes += 1;
                next_refresh = after(*interval);
                if args.count.is_some_and(|c| w.refreshes >= c) {
                    break;
                }
            }
        }
        if eof {
            break;
        }
        if let Some(at) = next_type_check {
            if Instant::now() >= at {
                // A list that cannot be read now says nothing of the type.
                gone = matches!(matched(&watched), Ok(Some(false)));
                next_type_check = if gone {
                    None
                } else {
                    after(TYPE_CHECK_INTERVAL)
                };
                if gone {
                    continue;
                }
            }
        }
        if got == 0 {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    // A line without its newline when the input ended or the watch stopped: not parsed (the
    // rest of it may never have come), counted as unparsed.
    let partial = !cut && !buf.trim_ascii().is_empty();
    if partial {
        w.unparsed = w.unparsed.saturating_add(1);
        if args.verbose {
            eprintln!("dtmalloc: partial last line: {}", as_text(&buf));
        }
    }
    if let (Mode::Top { once: true, .. }, Ok(())) = (&mode, &result) {
        if let Err(e) = render_top(&w, &mut out, false) {
            result = stdout_error(&e);
        }
    }
    let mut unstacked = 0;
    if let Mode::Stacks(o) = &mode {
        if !cut {
            for s in reader.finish() {
                w.top.add(&Record::Event(s.event.clone()));
                stacks.add(&s);
            }
        }
        unstacked = reader.unstacked();
        if result.is_ok() {
            // Standard output's lock is reentrant: the report goes after what `out` wrote.
            let what = format!(
                "dtmalloc stacks: {}{}",
                watched.label(),
                if o.frees {
                    " (malloc and free)"
                } else {
                    " (malloc)"
                }
            );
            result = out
                .flush()
                .map_err(|e| fail(format!("stdout: {}", io_text(&e))))
                .and_then(|_| o.write(&stacks, &what, started.elapsed()));
        }
    }
    if let (Err(e), Ok(())) = (out.flush(), &result) {
        result = stdout_error(&e);
    }
    if let (true, Some(t)) = (gone, watched.filter_probe()) {
        result = result.and(Err(fail(format!(
            "--type '{t}': the type went away ({} has no probe {t} any more); stopped after {} events (-Z keeps watching)",
            root.join(PROBES_FILE).display(),
            w.top.events()
        ))));
    }
    drop(pipe);
    inst.disable();
    let (overrun, dropped) = inst.dropped();
    let removed = inst.remove();
    if let Mode::Stacks(_) = mode {
        eprintln!(
            "dtmalloc: {} events with a stack, {unstacked} without",
            w.top.events()
        );
    }
    // The pipe's `[LOST N EVENTS]` markers are the increments of the ring buffer's overrun
    // counter as the reader meets them (ring_buffer.c: `lost_events = overrun - last_overrun`):
    // the same events as `overrun`, counted once (the larger, should the stats be unreadable).
    // Dropped events (a full buffer that does not overwrite) are others.
    let lost = w.top.lost().max(overrun).saturating_add(dropped);
    eprintln!(
        "dtmalloc: {} events, {} lost (LOST EVENTS markers {}, overrun {}, dropped {}), {} unparsed lines{}",
        w.top.events(),
        lost,
        w.top.lost(),
        overrun,
        dropped,
        w.unparsed,
        if partial {
            " (the last one partial: no newline at its end)"
        } else {
            ""
        }
    );
    result.and(removed)
}

fn main() -> ExitCode {
    let args = match memstat::cli::parse::<Args>("dtmalloc") {
        Ok(args) => args,
        Err(code) => return code,
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("dtmalloc: {}", f.msg);
            ExitCode::from(f.code)
        }
    }
}
