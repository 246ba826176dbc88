//! dtmalloc tracepoints read through tracefs: parsing `trace_pipe` lines,
//! the `dtmalloc-top` catalogue, and the dwatch knobs.
//!
//! A `dtmalloc:malloc` / `dtmalloc:free` line looks like
//!
//! ```text
//!           insmod-123     [001] .....   12.345678: malloc: probe=foo_bar size=4096 zindx=12 name='foo bar'
//! ```
//!
//! The task name may contain spaces and dashes, so the line is parsed from
//! the CPU column `[NNN]` outward: the token before it ends in `-PID`
//! (optionally followed by a `(TGID)` column), and after it come the
//! optional irq-flags column, the `SECONDS.MICROS:` timestamp, the event
//! name and its fields.
//!
//! A line is read as bytes. The kernel writes the `probe` and `name` fields
//! in text form ([`crate::text`]); a field that is not a text form (an older
//! kernel's raw bytes), and the task name, which is any bytes, are put in
//! text form ([`crate::text::as_text`]), so that every field of an
//! [`Event`] is printable ASCII and nothing is escaped twice.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fmt;
use std::os::unix::ffi::OsStrExt;

use crate::text::as_text;

/// Which probe fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Probe {
    /// `dtmalloc:malloc`.
    Malloc,
    /// `dtmalloc:free`.
    Free,
}

impl Probe {
    /// `malloc` or `free`.
    pub fn as_str(self) -> &'static str {
        match self {
            Probe::Malloc => "malloc",
            Probe::Free => "free",
        }
    }
}

/// One parsed dtmalloc event; its strings are printable ASCII (text forms).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Task name, in text form.
    pub comm: String,
    /// Process (thread) id.
    pub pid: u32,
    /// CPU the event fired on.
    pub cpu: u32,
    /// Trace timestamp as printed (seconds with fraction).
    pub timestamp: String,
    /// Which probe.
    pub probe: Probe,
    /// Probe name of the type (white space replaced by `_`), in text form.
    pub type_probe: String,
    /// Type name, in text form.
    pub name: String,
    /// Accounted bytes.
    pub size: u64,
    /// Size class index (-1: no kmalloc cache; 0 on free).
    pub zindx: i32,
}

/// A line of `trace_pipe`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// A dtmalloc event.
    Event(Event),
    /// `CPU:N [LOST M EVENTS]`: the ring buffer overflowed.
    Lost {
        /// CPU.
        cpu: u32,
        /// Events lost.
        count: u64,
    },
}

/// Why a line could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// What was wrong.
    pub reason: &'static str,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unrecognised trace line: {}", self.reason)
    }
}

impl std::error::Error for ParseError {}

fn err(reason: &'static str) -> ParseError {
    ParseError { reason }
}

fn all_digits(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(u8::is_ascii_digit)
}

/// `s` parsed as a number of type `T`.
fn number<T: std::str::FromStr>(s: &[u8]) -> Option<T> {
    std::str::from_utf8(s).ok()?.parse().ok()
}

/// `s` split around the first `b`.
fn split_once(s: &[u8], b: u8) -> Option<(&[u8], &[u8])> {
    let i = s.iter().position(|&c| c == b)?;
    Some((&s[..i], &s[i + 1..]))
}

/// Parse `CPU:N [LOST M EVENTS]`.
fn parse_lost(line: &[u8]) -> Option<Record> {
    let rest = line.trim_ascii().strip_prefix(b"CPU:")?;
    let (cpu, rest) = split_once(rest, b' ')?;
    let count = rest
        .trim_ascii()
        .strip_prefix(b"[LOST ")?
        .strip_suffix(b" EVENTS]")?;
    Some(Record::Lost {
        cpu: number(cpu)?,
        count: number(count)?,
    })
}

/// Split the head `comm-pid [(tgid)]` at the end of `head`.
fn parse_task(head: &[u8]) -> Option<(String, u32)> {
    let mut head = head.trim_ascii_end();
    // Optional "(  123)" or "(-------)" TGID column.
    if let Some(inner) = head.strip_suffix(b")") {
        let open = inner.iter().rposition(|&b| b == b'(')?;
        let tgid = inner[open + 1..].trim_ascii();
        if all_digits(tgid) || tgid.iter().all(|&b| b == b'-') {
            head = head[..open].trim_ascii_end();
        }
    }
    let dash = head.iter().rposition(|&b| b == b'-')?;
    let pid = &head[dash + 1..];
    if !all_digits(pid) {
        return None;
    }
    let comm = head[..dash].trim_ascii_start();
    Some((as_text(comm).into_owned(), number(pid)?))
}

/// Parse the optional irq-flags column and the `SECONDS.MICROS:` timestamp that follow the
/// `[CPU]` column: the timestamp, and what follows it.
fn parse_time(tail: &[u8]) -> Result<(String, &[u8]), ParseError> {
    let mut rest = tail.trim_ascii_start();
    // Optional flags column: a token that is not the timestamp.
    let (tok, after) = split_once(rest, b' ').ok_or(err("no timestamp"))?;
    let is_ts = |t: &[u8]| {
        t.strip_suffix(b":")
            .map(|n| {
                let (a, b) = split_once(n, b'.').unwrap_or((n, b"0"));
                all_digits(a) && all_digits(b)
            })
            .unwrap_or(false)
    };
    if !is_ts(tok) {
        rest = after.trim_ascii_start();
    }
    let (ts, after) = split_once(rest, b' ').ok_or(err("no timestamp"))?;
    if !is_ts(ts) {
        return Err(err("bad timestamp"));
    }
    // Digits, a dot and digits: ASCII.
    let ts = String::from_utf8_lossy(&ts[..ts.len() - 1]).into_owned();
    Ok((ts, after.trim_ascii_start()))
}

/// Parse what follows the `[CPU]` column of an event.
fn parse_tail(tail: &[u8]) -> Result<(String, Probe, &[u8]), ParseError> {
    let (ts, after) = parse_time(tail)?;
    let (ev, fields) = if let Some(f) = after.strip_prefix(b"malloc: ") {
        (Probe::Malloc, f)
    } else if let Some(f) = after.strip_prefix(b"free: ") {
        (Probe::Free, f)
    } else {
        return Err(err("not a dtmalloc event"));
    };
    Ok((ts, ev, fields))
}

/// Parse `probe=P size=S zindx=Z name='N'`.
fn parse_fields(fields: &[u8]) -> Result<(String, u64, i32, String), ParseError> {
    let rest = fields
        .strip_prefix(b"probe=")
        .ok_or(err("no probe field"))?;
    let (probe, rest) = split_once(rest, b' ').ok_or(err("no size field"))?;
    let rest = rest.strip_prefix(b"size=").ok_or(err("no size field"))?;
    let (size, rest) = split_once(rest, b' ').ok_or(err("no zindx field"))?;
    let size: u64 = number(size).ok_or(err("bad size"))?;
    let rest = rest.strip_prefix(b"zindx=").ok_or(err("no zindx field"))?;
    let (zindx, rest) = split_once(rest, b' ').ok_or(err("no name field"))?;
    let zindx: i32 = number(zindx).ok_or(err("bad zindx"))?;
    let name = rest
        .strip_prefix(b"name='")
        .and_then(|r| r.trim_ascii_end().strip_suffix(b"'"))
        .ok_or(err("bad name field"))?;
    Ok((
        as_text(probe).into_owned(),
        size,
        zindx,
        as_text(name).into_owned(),
    ))
}

/// Parse one `trace_pipe` line (with or without its line end), as bytes.
pub fn parse_line(line: impl AsRef<[u8]>) -> Result<Record, ParseError> {
    let mut line = line.as_ref();
    while let Some(l) = line
        .strip_suffix(b"\n")
        .or_else(|| line.strip_suffix(b"\r"))
    {
        line = l;
    }
    if let Some(r) = parse_lost(line) {
        return Ok(r);
    }
    // Try every "[digits]" in order; the first that has "comm-pid" before
    // it and a well-formed event after it wins.
    let mut last = err("no CPU column");
    let mut i = 0;
    while let Some(off) = line[i..].iter().position(|&b| b == b'[') {
        let open = i + off;
        i = open + 1;
        let Some(close_off) = line[open..].iter().position(|&b| b == b']') else {
            break;
        };
        let close = open + close_off;
        let cpu = &line[open + 1..close];
        if !all_digits(cpu) || open == 0 || line[open - 1] != b' ' {
            continue;
        }
        let Some((comm, pid)) = parse_task(&line[..open]) else {
            last = err("no task-pid before the CPU column");
            continue;
        };
        match parse_tail(&line[close + 1..]).and_then(|(ts, p, f)| Ok((ts, p, parse_fields(f)?))) {
            Ok((timestamp, probe, (type_probe, size, zindx, name))) => {
                return Ok(Record::Event(Event {
                    comm,
                    pid,
                    cpu: number(cpu).ok_or(err("bad CPU"))?,
                    timestamp,
                    probe,
                    type_probe,
                    name,
                    size,
                    zindx,
                }));
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// The CPU of a kernel stack trace's first line, `TASK-PID [CPU] FLAGS TIMESTAMP: <stack
/// trace>`, which the `stacktrace` option of a tracefs instance writes after each event; its
/// frames follow, a line each ([`parse_stack_frame`]).
pub fn parse_stack_header(line: impl AsRef<[u8]>) -> Option<u32> {
    let line = line.as_ref().trim_ascii_end();
    let before = line.strip_suffix(b"<stack trace>")?;
    let mut i = 0;
    while let Some(off) = before[i..].iter().position(|&b| b == b'[') {
        let open = i + off;
        i = open + 1;
        let close = open + before[open..].iter().position(|&b| b == b']')?;
        let cpu = &before[open + 1..close];
        if !all_digits(cpu) || open == 0 || before[open - 1] != b' ' {
            continue;
        }
        if parse_task(&before[..open]).is_none() {
            continue;
        }
        if let Ok((_, rest)) = parse_time(&before[close + 1..]) {
            if rest.is_empty() {
                return number(cpu);
            }
        }
    }
    None
}

/// The frame of a kernel stack trace's line ` => FRAME` (`FRAME` as the kernel prints a
/// symbol: `name`, `name+0xOFF/0xSIZE [module]` with the instance's `sym-offset` option, or an
/// address it could not name), in text form; `None` for another line.
pub fn parse_stack_frame(line: &[u8]) -> Option<String> {
    let f = line.trim_ascii_end().strip_prefix(b" => ")?;
    (!f.is_empty()).then(|| as_text(f).into_owned())
}

/// The dwatch event line: `TIME COMM[PID]: malloc(9) type NAME N bytes`, the task and the
/// probe name in text form.
pub fn format_event(e: &Event) -> String {
    format!(
        "{} {}[{}]: {}(9) type {} {} byte{}",
        e.timestamp,
        e.comm,
        e.pid,
        e.probe.as_str(),
        e.type_probe,
        e.size,
        if e.size == 1 { "" } else { "s" }
    )
}

/// The default of `DWATCH_MALLOC_MIN`.
pub const DEFAULT_MALLOC_MIN: u64 = 65536;

/// Validate `DWATCH_MALLOC_MIN` as dwatch does: unset or empty → 65536;
/// anything but digits (a value that is not UTF-8 included) → error.
pub fn malloc_min_from_env(v: Option<&OsStr>) -> Result<u64, String> {
    match v.map(OsStr::as_bytes) {
        None | Some(b"") => Ok(DEFAULT_MALLOC_MIN),
        Some(s) if all_digits(s) => {
            number(s).ok_or_else(|| "DWATCH_MALLOC_MIN must be a number".to_string())
        }
        Some(_) => Err("DWATCH_MALLOC_MIN must be a number".to_string()),
    }
}

/// The width of `dtmalloc top`'s header when `COLUMNS` does not give one.
pub const DEFAULT_COLUMNS: usize = 80;

/// The terminal width `COLUMNS` gives: unset or empty → [`DEFAULT_COLUMNS`]; digits from 1 to
/// 65535 (what a terminal's `ws_col` holds) → that width; anything else (a value that is not
/// UTF-8 included) → an error saying so.
pub fn columns_from_env(v: Option<&OsStr>) -> Result<usize, String> {
    match v.map(OsStr::as_bytes) {
        None | Some(b"") => Ok(DEFAULT_COLUMNS),
        Some(s) => number::<u16>(s)
            .filter(|&c| c > 0 && all_digits(s))
            .map(usize::from)
            .ok_or_else(|| format!("COLUMNS={} is not a width from 1 to 65535", as_text(s))),
    }
}

/// The tracefs filter: `size >= MIN` and, for one type, a test of the `probe` field against
/// `probe`, the text form of the type's probe name (what the kernel records in the field).
///
/// A tracefs filter string is quoted with `"` or `'` and has no escapes: a probe name without
/// `"` is compared as `probe == "NAME"`, one with `"` but no `'` as `probe == 'NAME'`. One
/// with both is matched with a glob, `probe ~ "GLOB"`, in which each `"` is `?` and `\`, `*`,
/// `?` and `[` are escaped with a backslash (and a leading digit or `!`, which tracefs would
/// read as an index or a negation, is `?`): it selects that probe name and the few that differ
/// from it where the glob has a `?`, and the caller keeps only the events of the probe name
/// itself ([`filter_is_exact`]).
///
/// ```
/// use memstat::trace::filter_string;
/// assert_eq!(filter_string(10, Some("foo_bar")), "size >= 10 && probe == \"foo_bar\"");
/// assert_eq!(filter_string(0, Some("a\"b")), "probe == 'a\"b'");
/// assert_eq!(filter_string(0, Some("1\"'\\134")), "probe ~ \"??'\\\\134\"");
/// ```
pub fn filter_string(min: u64, probe: Option<&str>) -> String {
    let probe = probe.map(probe_filter);
    match (min, probe) {
        (0, None) => "0".to_string(),
        (0, Some(p)) => p,
        (m, None) => format!("size >= {m}"),
        (m, Some(p)) => format!("size >= {m} && {p}"),
    }
}

/// Whether [`filter_string`]'s test of probe name `probe` (a text form) selects that probe
/// name only: false when it is a glob that the caller must follow with an exact comparison.
pub fn filter_is_exact(probe: &str) -> bool {
    !(probe.contains('"') && probe.contains('\''))
}

/// The test of the `probe` field of [`filter_string`].
fn probe_filter(probe: &str) -> String {
    if !probe.contains('"') {
        return format!("probe == \"{probe}\"");
    }
    if !probe.contains('\'') {
        return format!("probe == '{probe}'");
    }
    let mut glob = String::with_capacity(2 * probe.len());
    for (i, c) in probe.chars().enumerate() {
        match c {
            '"' => glob.push('?'),
            '0'..='9' | '!' if i == 0 => glob.push('?'),
            '\\' | '*' | '?' | '[' => {
                glob.push('\\');
                glob.push(c);
            }
            c => glob.push(c),
        }
    }
    format!("probe ~ \"{glob}\"")
}

/// One row of the `dtmalloc-top` catalogue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopRow {
    /// Probe name of the type, in text form.
    pub probe: String,
    /// Net bytes: allocated minus freed since the watch began.
    pub net: i64,
    /// Outstanding allocations: +1 per malloc of a positive size, -1 per
    /// free or zero-size malloc.
    pub balance: i64,
}

/// The cumulative `dtmalloc-top` aggregation.
#[derive(Debug, Clone, Default)]
pub struct Top {
    rows: HashMap<String, (i64, i64)>,
    events: u64,
    lost: u64,
}

impl Top {
    /// Empty catalogue.
    pub fn new() -> Top {
        Top::default()
    }
    /// Account one record.
    pub fn add(&mut self, r: &Record) {
        match r {
            Record::Lost { count, .. } => self.lost = self.lost.saturating_add(*count),
            Record::Event(e) => {
                self.events = self.events.saturating_add(1);
                let size = i64::try_from(e.size).unwrap_or(i64::MAX);
                let delta = match e.probe {
                    Probe::Malloc => size,
                    Probe::Free => -size,
                };
                let ent = self.rows.entry(e.type_probe.clone()).or_insert((0, 0));
                ent.0 = ent.0.saturating_add(delta);
                ent.1 = ent.1.saturating_add(if delta > 0 { 1 } else { -1 });
            }
        }
    }
    /// Events seen.
    pub fn events(&self) -> u64 {
        self.events
    }
    /// Events reported lost by `LOST EVENTS` lines.
    pub fn lost(&self) -> u64 {
        self.lost
    }
    /// Rows sorted by net bytes, largest first (ties by name).
    pub fn rows(&self) -> Vec<TopRow> {
        let mut v: Vec<TopRow> = self
            .rows
            .iter()
            .map(|(k, (n, b))| TopRow {
                probe: k.clone(),
                net: *n,
                balance: *b,
            })
            .collect();
        v.sort_by(|a, b| b.net.cmp(&a.net).then_with(|| a.probe.cmp(&b.probe)));
        v
    }
    /// The table: `"%14s %10s %s"` header and rows.
    pub fn table(&self) -> String {
        let mut s = format!("{:>14} {:>10} {}\n", "NET(B)", "BALANCE", "TYPE");
        for r in self.rows() {
            s.push_str(&format!("{:>14} {:>10} {}\n", r.net, r.balance, r.probe));
        }
        s
    }
}

/// Sum `overrun` and `dropped events` of a `per_cpu/cpuN/stats` file.
pub fn parse_cpu_stats(text: &str) -> (u64, u64) {
    let mut overrun = 0;
    let mut dropped = 0;
    for line in text.lines() {
        if let Some((k, v)) = line.split_once(':') {
            let v: u64 = v.trim().parse().unwrap_or(0);
            match k.trim() {
                "overrun" => overrun = u64::saturating_add(overrun, v),
                "dropped events" => dropped = u64::saturating_add(dropped, v),
                _ => {}
            }
        }
    }
    (overrun, dropped)
}
