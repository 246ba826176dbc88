//! Kernel stacks of dtmalloc events, aggregated by stack: DTrace's
//! `dtmalloc::foo_bar:malloc { @[stack()] = sum(args[3]); }`.
//!
//! A tracefs instance with the `stacktrace` option writes a kernel stack trace after each event
//! it records, on the event's CPU:
//!
//! ```text
//!           insmod-61      [000] .....     4.339309: malloc: probe=sample_buf size=4096 zindx=12 name='sample buf'
//!           insmod-61      [000] .....     4.339315: <stack trace>
//!  => kmalloc_mt+0x3a/0x80
//!  => rust_malloc_types_init+0x21/0x400 [rust_malloc_types]
//!  => do_one_initcall+0x5c/0x230
//! ```
//!
//! [`StackReader`] pairs each stack with the last event of its CPU (lines of other CPUs may
//! come between the two) and [`Stacks`] sums the pairs by type, probe and stack, counting
//! events and accounted bytes. The leaf frames of the tracing machinery itself (the event's
//! own functions, the stack recorder) are left out ([`is_tracing_frame`]).
//!
//! Outputs: a report of the top stacks ([`Stacks::report`]), the folded format of
//! flamegraph.pl, inferno and speedscope ([`Stacks::folded`]), an SVG flame graph
//! ([`Stacks::svg`]) and a pprof profile ([`Stacks::pprof`], gzipped `profile.proto`, as
//! `go tool pprof`, Grafana Pyroscope and Parca read it).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::Write as _;

use crate::trace::{parse_line, parse_stack_frame, parse_stack_header, Event, Record};

/// One event with the kernel stack recorded after it, frames leaf first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// The event.
    pub event: Event,
    /// Its stack, the leaf (the allocator) first, as the kernel prints it.
    pub frames: Vec<String>,
}

/// What a line of `trace_pipe` was to a [`StackReader`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// An event (its stack may follow), a stack's first line or one of its frames.
    Part,
    /// `CPU:N [LOST M EVENTS]`.
    Lost(u64),
    /// Not a line of an event or of a stack.
    Unparsed,
}

/// Which events a [`StackReader`] keeps.
type Keep = Box<dyn Fn(&Event) -> bool>;

/// Pairs the events of `trace_pipe` with the stacks that follow them.
#[derive(Default)]
pub struct StackReader {
    /// The last event of each CPU whose stack has not come yet.
    pending: HashMap<u32, Event>,
    /// The stack being read: its event and the frames so far.
    current: Option<Sample>,
    /// Samples complete, not yet taken.
    done: Vec<Sample>,
    /// Events for which no stack came.
    unstacked: u64,
    /// Stacks (and frames) that came without an event before them.
    orphans: u64,
    /// Which events count; `None`: every one.
    keep: Option<Keep>,
}

impl std::fmt::Debug for StackReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StackReader")
            .field("pending", &self.pending)
            .field("current", &self.current)
            .field("done", &self.done)
            .field("unstacked", &self.unstacked)
            .field("orphans", &self.orphans)
            .finish_non_exhaustive()
    }
}

impl StackReader {
    /// A reader with nothing read.
    pub fn new() -> StackReader {
        StackReader::default()
    }

    /// A reader of the events for which `keep` is true only: the others, which another
    /// consumer's selection can let into the pipe, are read with their stacks and dropped,
    /// and count neither as samples nor as events without a stack.
    pub fn keeping(keep: impl Fn(&Event) -> bool + 'static) -> StackReader {
        StackReader {
            keep: Some(Box::new(keep)),
            ..StackReader::default()
        }
    }

    fn kept(&self, e: &Event) -> bool {
        self.keep.as_ref().is_none_or(|k| k(e))
    }

    fn finish_current(&mut self) {
        if let Some(s) = self.current.take() {
            if !self.kept(&s.event) {
                return;
            }
            if s.frames.is_empty() {
                self.unstacked += 1;
            } else {
                self.done.push(s);
            }
        }
    }

    /// Reads one line (without or with its line end).
    pub fn line(&mut self, line: &[u8]) -> Line {
        if let Some(f) = parse_stack_frame(line) {
            return match &mut self.current {
                Some(s) => {
                    s.frames.push(f);
                    Line::Part
                }
                None => {
                    self.orphans += 1;
                    Line::Unparsed
                }
            };
        }
        self.finish_current();
        if let Some(cpu) = parse_stack_header(line) {
            match self.pending.remove(&cpu) {
                Some(event) => {
                    self.current = Some(Sample {
                        event,
                        frames: Vec::new(),
                    })
                }
                None => self.orphans += 1,
            }
            return Line::Part;
        }
        match parse_line(line) {
            Ok(Record::Event(e)) => {
                if let Some(old) = self.pending.insert(e.cpu, e) {
                    if self.kept(&old) {
                        self.unstacked += 1;
                    }
                }
                Line::Part
            }
            Ok(Record::Lost { count, .. }) => Line::Lost(count),
            Err(_) => Line::Unparsed,
        }
    }

    /// The samples completed since the last call.
    pub fn take(&mut self) -> Vec<Sample> {
        std::mem::take(&mut self.done)
    }

    /// Ends the input: a stack being read is complete, the events still waiting for one have
    /// none.
    pub fn finish(&mut self) -> Vec<Sample> {
        self.finish_current();
        let pending = std::mem::take(&mut self.pending);
        self.unstacked += pending.values().filter(|e| self.kept(e)).count() as u64;
        self.take()
    }

    /// Events for which no stack came (the stack did not fit the ring buffer, or the input
    /// ended between the two).
    pub fn unstacked(&self) -> u64 {
        self.unstacked
    }

    /// Stacks or frames that came without their event (lost, or read before the watch).
    pub fn orphans(&self) -> u64 {
        self.orphans
    }
}

/// Whether `frame` is a function of the tracing machinery that records the event or its
/// stack, which a stack trace of an event can begin with: the event's own functions
/// (`trace_event_raw_event_*`, `perf_trace_*`, `__traceiter_*`, `__bpf_trace_*`, and
/// `rust_do_trace_*`, the C helpers through which Rust fires the dtmalloc events) and the
/// stack recorder (`__ftrace_trace_stack`, `ftrace_trace_stack`, `__trace_stack`,
/// `trace_buffer_unlock_commit*`, `trace_event_buffer_commit`).
pub fn is_tracing_frame(frame: &str) -> bool {
    let f = function(frame);
    [
        "trace_event_raw_event_",
        "perf_trace_",
        "__traceiter_",
        "__bpf_trace_",
        "rust_do_trace_",
        "trace_buffer_unlock_commit",
    ]
    .iter()
    .any(|p| f.starts_with(p))
        || [
            "__ftrace_trace_stack",
            "ftrace_trace_stack",
            "__trace_stack",
            "trace_event_buffer_commit",
        ]
        .contains(&f.split(' ').next().unwrap_or(f))
}

/// The function of a frame as the kernel prints it: `name+0xOFF/0xSIZE [module]` becomes
/// `name [module]`; a frame without an offset is its own function.
pub fn function(frame: &str) -> &str {
    frame.split_once('+').map_or(frame, |(name, _)| name)
}

/// The function of a frame with its module: `name+0x1/0x2 [mod]` becomes `name [mod]`.
fn function_of(frame: &str) -> String {
    match frame.split_once('+') {
        Some((name, rest)) => match rest.find(" [") {
            Some(i) => format!("{name}{}", &rest[i..]),
            None => name.to_string(),
        },
        None => frame.to_string(),
    }
}

/// Count and accounted bytes of the events of one stack.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sum {
    /// Events.
    pub count: u64,
    /// Accounted bytes.
    pub bytes: u64,
}

/// What a flame graph or folded line weighs a stack by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weight {
    /// Accounted bytes (`sum(args[3])`).
    Bytes,
    /// Events (`count()`).
    Count,
}

impl Weight {
    fn of(self, s: &Sum) -> u64 {
        match self {
            Weight::Bytes => s.bytes,
            Weight::Count => s.count,
        }
    }
}

/// One stack of the aggregation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    /// The type's probe name, in text form.
    pub type_probe: String,
    /// `malloc` or `free`.
    pub probe: &'static str,
    /// The frames, leaf first, without the tracing machinery's.
    pub frames: Vec<String>,
}

/// Samples summed by type, probe and stack.
#[derive(Debug, Default)]
pub struct Stacks {
    sums: HashMap<Key, Sum>,
    total: Sum,
}

impl Stacks {
    /// No samples.
    pub fn new() -> Stacks {
        Stacks::default()
    }

    /// Adds a sample.
    pub fn add(&mut self, s: &Sample) {
        let frames: Vec<String> = s
            .frames
            .iter()
            .skip_while(|f| is_tracing_frame(f))
            .cloned()
            .collect();
        let key = Key {
            type_probe: s.event.type_probe.clone(),
            probe: s.event.probe.as_str(),
            frames,
        };
        let e = self.sums.entry(key).or_default();
        e.count = e.count.saturating_add(1);
        e.bytes = e.bytes.saturating_add(s.event.size);
        self.total.count = self.total.count.saturating_add(1);
        self.total.bytes = self.total.bytes.saturating_add(s.event.size);
    }

    /// The samples added.
    pub fn total(&self) -> Sum {
        self.total
    }

    /// The stacks, most bytes first (then most events, then by key: a stable order).
    pub fn sorted(&self) -> Vec<(&Key, &Sum)> {
        let mut v: Vec<_> = self.sums.iter().collect();
        v.sort_by(|a, b| {
            (b.1.bytes, b.1.count)
                .cmp(&(a.1.bytes, a.1.count))
                .then_with(|| a.0.cmp(b.0))
        });
        v
    }

    /// The report of the `top` stacks by bytes (all when `None`): per stack a line of bytes,
    /// events and share, then its frames, leaf first, as the kernel prints them.
    pub fn report(&self, top: Option<usize>) -> String {
        let mut s = String::new();
        let all = self.sorted();
        let shown = top.unwrap_or(all.len()).min(all.len());
        let _ = writeln!(
            s,
            "{} stacks, {} events, {} bytes{}",
            all.len(),
            self.total.count,
            self.total.bytes,
            if shown < all.len() {
                format!("; the top {shown} by bytes")
            } else {
                String::new()
            }
        );
        for (k, v) in &all[..shown] {
            let share = if self.total.bytes == 0 {
                0.0
            } else {
                v.bytes as f64 * 100.0 / self.total.bytes as f64
            };
            let _ = writeln!(
                s,
                "\n{}:{}  {} bytes in {} event{} ({share:.1}%)",
                k.type_probe,
                k.probe,
                v.bytes,
                v.count,
                if v.count == 1 { "" } else { "s" }
            );
            for f in &k.frames {
                let _ = writeln!(s, "    {f}");
            }
        }
        s
    }

    /// The root-first frame names of a stack for the folded format and the flame graph: the
    /// type and probe (`sample_buf:malloc`), then the functions, outermost first.
    fn path(k: &Key) -> Vec<String> {
        let mut p = Vec::with_capacity(k.frames.len() + 1);
        p.push(format!("{}:{}", k.type_probe, k.probe));
        p.extend(k.frames.iter().rev().map(|f| function_of(f)));
        // `;` separates frames: a type whose name holds one gets it escaped as the text form
        // escapes bytes.
        for f in &mut p {
            if f.contains(';') {
                *f = f.replace(';', "\\073");
            }
        }
        p
    }

    /// The folded format (`root;...;leaf WEIGHT` a line, sorted), as flamegraph.pl, inferno and
    /// speedscope read it.
    pub fn folded(&self, w: Weight) -> String {
        let mut lines: BTreeMap<String, u64> = BTreeMap::new();
        for (k, v) in &self.sums {
            let e = lines.entry(Self::path(k).join(";")).or_default();
            *e = e.saturating_add(w.of(v));
        }
        let mut s = String::new();
        for (stack, n) in lines {
            if n > 0 {
                let _ = writeln!(s, "{stack} {n}");
            }
        }
        s
    }

    /// An SVG flame graph of the stacks weighed by `w`: the roots (types) at the bottom, each
    /// frame as wide as its share, its name and figures in its tooltip.
    pub fn svg(&self, w: Weight, title: &str) -> String {
        let mut root = Node::default();
        for (k, v) in &self.sums {
            let n = w.of(v);
            if n == 0 {
                continue;
            }
            let mut node = &mut root;
            node.value = node.value.saturating_add(n);
            for f in Self::path(k) {
                node = node.children.entry(f).or_default();
                node.value = node.value.saturating_add(n);
            }
        }
        let depth = root.depth();
        let unit = match w {
            Weight::Bytes => "bytes",
            Weight::Count => "events",
        };
        let height = (depth + 3) as f64 * FRAME_H;
        let mut s = String::new();
        let _ = writeln!(
            s,
            r##"<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="monospace" font-size="12">
<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#f8f8f8"/>
<text x="{}" y="20" text-anchor="middle" font-size="16">{}</text>"##,
            WIDTH / 2.0,
            xml(title)
        );
        let _ = writeln!(
            s,
            r#"<text x="10" y="{}">{} {unit} in all</text>"#,
            height - 6.0,
            root.value
        );
        if root.value > 0 {
            let scale = (WIDTH - 20.0) / root.value as f64;
            let mut x = 10.0;
            for (name, child) in &root.children {
                child.draw(
                    &mut s,
                    name,
                    x,
                    height - 2.0 * FRAME_H,
                    scale,
                    root.value,
                    unit,
                );
                x += child.value as f64 * scale;
            }
        }
        s.push_str("</svg>\n");
        s
    }

    /// A pprof profile (`profile.proto`, gzipped) with two sample types, `allocations`/`count`
    /// and `bytes`/`bytes`, and per sample the labels `type` and `probe`; each function a
    /// location of its own (kernel stacks carry no line numbers here), leaf first as pprof
    /// wants them. `duration_nanos` is how long the watch ran.
    pub fn pprof(&self, duration_nanos: i64) -> Vec<u8> {
        let mut strings = StringTable::default();
        strings.get("");
        let mut functions: HashMap<String, u64> = HashMap::new();
        let mut profile = Vec::new();
        let mut field = |n: u32, body: Vec<u8>| pb::bytes(&mut profile, n, &body);
        for (ty, unit) in [("allocations", "count"), ("bytes", "bytes")] {
            let mut vt = Vec::new();
            pb::int(&mut vt, 1, strings.get(ty));
            pb::int(&mut vt, 2, strings.get(unit));
            field(1, vt);
        }
        let (type_key, probe_key) = (strings.get("type"), strings.get("probe"));
        for (k, v) in self.sorted() {
            let mut sample = Vec::new();
            let ids: Vec<u64> = k
                .frames
                .iter()
                .map(|f| {
                    let name = function_of(f);
                    let next = functions.len() as u64 + 1;
                    *functions.entry(name).or_insert(next)
                })
                .collect();
            pb::packed(&mut sample, 1, &ids);
            pb::packed(&mut sample, 2, &[v.count, v.bytes]);
            for (key, val) in [(type_key, k.type_probe.as_str()), (probe_key, k.probe)] {
                let mut label = Vec::new();
                pb::int(&mut label, 1, key);
                pb::int(&mut label, 2, strings.get(val));
                pb::bytes(&mut sample, 3, &label);
            }
            field(2, sample);
        }
        let mut by_id: Vec<(u64, String)> = functions.into_iter().map(|(n, i)| (i, n)).collect();
        by_id.sort();
        for (id, _) in &by_id {
            let mut line = Vec::new();
            pb::int(&mut line, 1, *id);
            let mut loc = Vec::new();
            pb::int(&mut loc, 1, *id);
            pb::bytes(&mut loc, 4, &line);
            field(4, loc);
        }
        for (id, name) in &by_id {
            let n = strings.get(name);
            let mut func = Vec::new();
            pb::int(&mut func, 1, *id);
            pb::int(&mut func, 2, n);
            pb::int(&mut func, 3, n);
            field(5, func);
        }
        for s in &strings.list {
            pb::bytes(&mut profile, 6, s.as_bytes());
        }
        pb::int(&mut profile, 10, duration_nanos.max(0) as u64);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        // Writing to a Vec cannot fail.
        let _ = gz.write_all(&profile);
        gz.finish().unwrap_or_default()
    }
}

/// The pprof string table: each string once, by index.
#[derive(Default)]
struct StringTable {
    list: Vec<String>,
    index: HashMap<String, u64>,
}

impl StringTable {
    fn get(&mut self, s: &str) -> u64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.list.len() as u64;
        self.list.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}

/// The protobuf wire format of the few field kinds a profile has, written with the
/// `protobuf` crate's encoder.
mod pb {
    use protobuf::CodedOutputStream;

    fn with(buf: &mut Vec<u8>, f: impl FnOnce(&mut CodedOutputStream<'_>) -> protobuf::Result<()>) {
        let mut os = CodedOutputStream::vec(buf);
        // Writing to a Vec cannot fail.
        let _ = f(&mut os).and_then(|_| os.flush());
    }

    /// A varint field (int64, uint64: the profile has no negative values).
    pub(super) fn int(buf: &mut Vec<u8>, field: u32, v: u64) {
        if v != 0 {
            with(buf, |os| os.write_uint64(field, v));
        }
    }

    /// A length-delimited field: a string, bytes or an embedded message.
    pub(super) fn bytes(buf: &mut Vec<u8>, field: u32, v: &[u8]) {
        with(buf, |os| os.write_bytes(field, v));
    }

    /// A packed repeated varint field.
    pub(super) fn packed(buf: &mut Vec<u8>, field: u32, v: &[u64]) {
        let mut body = Vec::new();
        with(&mut body, |os| {
            v.iter().try_for_each(|&x| os.write_raw_varint64(x))
        });
        bytes(buf, field, &body);
    }
}

/// The flame graph's width in pixels; frames span it but for 10 pixels each side.
pub const SVG_WIDTH: f64 = 1200.0;
const WIDTH: f64 = SVG_WIDTH;
/// The height of a frame in the flame graph, in pixels; the roots' row is the second from
/// the bottom.
pub const SVG_FRAME_HEIGHT: f64 = 16.0;
const FRAME_H: f64 = SVG_FRAME_HEIGHT;

/// A frame of the flame graph: its weight and its callees by name.
#[derive(Default)]
struct Node {
    value: u64,
    children: BTreeMap<String, Node>,
}

impl Node {
    fn depth(&self) -> usize {
        self.children
            .values()
            .map(|c| 1 + c.depth())
            .max()
            .unwrap_or(0)
    }

    #[allow(clippy::too_many_arguments)]
    fn draw(&self, s: &mut String, name: &str, x: f64, y: f64, scale: f64, total: u64, unit: &str) {
        let w = self.value as f64 * scale;
        if w < 0.5 {
            return;
        }
        let share = self.value as f64 * 100.0 / total as f64;
        let label = fit(name, w);
        let _ = writeln!(
            s,
            r#"<g><title>{} ({} {unit}, {share:.2}%)</title><rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{}" fill="{}" rx="2"/><text x="{:.1}" y="{:.1}">{}</text></g>"#,
            xml(name),
            self.value,
            FRAME_H - 1.0,
            color(name),
            x + 3.0,
            y + FRAME_H - 4.0,
            xml(&label)
        );
        let mut cx = x;
        for (n, c) in &self.children {
            c.draw(s, n, cx, y - FRAME_H, scale, total, unit);
            cx += c.value as f64 * scale;
        }
    }
}

/// As much of `name` as fits `width` pixels of 12-pixel monospace (7.2 pixels a character),
/// with `..` where it was cut; nothing below three characters.
fn fit(name: &str, width: f64) -> String {
    let room = ((width - 6.0) / 7.2).floor().max(0.0) as usize;
    if name.len() <= room {
        name.to_string()
    } else if room < 3 {
        String::new()
    } else {
        format!("{}..", &name[..room - 2])
    }
}

/// The fill of a frame in the flame graph: a warm colour (red, orange, yellow) of a hash of
/// its name, so that a function has the same colour wherever it is.
pub fn frame_color(name: &str) -> (u8, u8, u8) {
    let h = name.bytes().fold(2166136261u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(16777619)
    });
    // Each value is below 256.
    (
        (205 + h % 50) as u8,
        ((h >> 8) % 230) as u8,
        ((h >> 16) % 55) as u8,
    )
}

fn color(name: &str) -> String {
    let (r, g, b) = frame_color(name);
    format!("rgb({r},{g},{b})")
}

/// `s` with XML's special characters as entities (names are printable ASCII already).
fn xml(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '&' => o.push_str("&amp;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c => o.push(c),
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "\
          insmod-61      [000] .....     4.339309: malloc: probe=sample_buf size=4096 zindx=12 name='sample buf'
          insmod-62      [001] .....     4.339310: malloc: probe=sample_buf size=64 zindx=3 name='sample buf'
          insmod-61      [000] .....     4.339315: <stack trace>
 => trace_event_raw_event_malloc+0x10/0x20
 => kmalloc_mt+0x3a/0x80
 => init_one+0x21/0x400 [sample]
 => do_one_initcall+0x5c/0x230
          insmod-62      [001] .....     4.339316: <stack trace>
 => kmalloc_mt+0x3a/0x80
 => init_two+0x1/0x10 [sample]
 => do_one_initcall+0x5c/0x230
          insmod-61      [000] .....     4.339400: malloc: probe=sample_buf size=4096 zindx=12 name='sample buf'
          insmod-61      [000] .....     4.339401: <stack trace>
 => kmalloc_mt+0x3a/0x80
 => init_one+0x21/0x400 [sample]
 => do_one_initcall+0x5c/0x230
          insmod-61      [000] .....     4.339500: malloc: probe=sample_buf size=32 zindx=2 name='sample buf'
";

    fn read(t: &str) -> (StackReader, Stacks) {
        let mut r = StackReader::new();
        let mut st = Stacks::new();
        for l in t.lines() {
            r.line(l.as_bytes());
        }
        for s in r.finish() {
            st.add(&s);
        }
        (r, st)
    }

    /// Events a reader does not keep are read with their stacks and dropped: no sample, no
    /// event without a stack, no orphan stack.
    #[test]
    fn keeps_only_the_events_asked_for() {
        for (dropped, samples, unstacked) in [(64, 2, 1), (32, 3, 0)] {
            let mut r = StackReader::keeping(move |e| e.size != dropped);
            let mut n = 0;
            for l in TRACE.lines() {
                r.line(l.as_bytes());
                n += r.take().len();
            }
            n += r.finish().len();
            assert_eq!(
                (n, r.unstacked(), r.orphans()),
                (samples, unstacked, 0),
                "{dropped}"
            );
        }
    }

    #[test]
    fn pairs_stacks_with_their_cpus_events() {
        let (r, st) = read(TRACE);
        assert_eq!(r.unstacked(), 1);
        assert_eq!(r.orphans(), 0);
        assert_eq!(
            st.total(),
            Sum {
                count: 3,
                bytes: 8256
            }
        );
        let v = st.sorted();
        assert_eq!(v.len(), 2);
        assert_eq!(
            *v[0].1,
            Sum {
                count: 2,
                bytes: 8192
            }
        );
        assert_eq!(
            v[0].0.frames,
            [
                "kmalloc_mt+0x3a/0x80",
                "init_one+0x21/0x400 [sample]",
                "do_one_initcall+0x5c/0x230"
            ]
        );
        assert_eq!(
            *v[1].1,
            Sum {
                count: 1,
                bytes: 64
            }
        );
    }

    #[test]
    fn folded_is_root_first_by_function() {
        let (_, st) = read(TRACE);
        assert_eq!(
            st.folded(Weight::Bytes),
            "sample_buf:malloc;do_one_initcall;init_one [sample];kmalloc_mt 8192\n\
             sample_buf:malloc;do_one_initcall;init_two [sample];kmalloc_mt 64\n"
        );
        assert_eq!(
            st.folded(Weight::Count),
            "sample_buf:malloc;do_one_initcall;init_one [sample];kmalloc_mt 2\n\
             sample_buf:malloc;do_one_initcall;init_two [sample];kmalloc_mt 1\n"
        );
    }

    #[test]
    fn report_lists_top_stacks_by_bytes() {
        let (_, st) = read(TRACE);
        let r = st.report(Some(1));
        assert!(
            r.starts_with("2 stacks, 3 events, 8256 bytes; the top 1 by bytes\n"),
            "{r}"
        );
        assert!(
            r.contains("sample_buf:malloc  8192 bytes in 2 events (99.2%)\n"),
            "{r}"
        );
        assert!(r.contains("    init_one+0x21/0x400 [sample]\n"), "{r}");
        assert!(!r.contains("init_two"), "{r}");
    }

    #[test]
    fn orphans_and_lost_are_counted() {
        let mut r = StackReader::new();
        assert_eq!(r.line(b" => kmalloc_mt"), Line::Unparsed);
        assert_eq!(
            r.line(b"   insmod-1 [000] .....  1.000000: <stack trace>"),
            Line::Part
        );
        assert_eq!(r.line(b"CPU:1 [LOST 3 EVENTS]"), Line::Lost(3));
        assert_eq!(r.line(b"garbage"), Line::Unparsed);
        assert_eq!(r.orphans(), 2);
    }

    #[test]
    fn svg_has_a_frame_per_function_with_its_share() {
        let (_, st) = read(TRACE);
        let svg = st.svg(Weight::Bytes, "dtmalloc <stacks>");
        assert!(svg.starts_with("<?xml"));
        assert!(svg.contains("dtmalloc &lt;stacks&gt;"));
        assert!(
            svg.contains("<title>init_one [sample] (8192 bytes, 99.22%)</title>"),
            "{svg}"
        );
        assert!(svg.contains("<title>sample_buf:malloc (8256 bytes, 100.00%)</title>"));
        // The background, the type, do_one_initcall, init_one and init_two, a kmalloc_mt each.
        assert_eq!(svg.matches("<rect").count(), 1 + 1 + 1 + 2 + 2);
        assert!(svg.trim_end().ends_with("</svg>"));
    }

    #[test]
    fn type_names_with_semicolons_stay_one_frame() {
        let mut st = Stacks::new();
        let ev = match parse_line(
            "  a-1 [000] .....  1.000000: malloc: probe=a;b size=8 zindx=0 name='a;b'",
        ) {
            Ok(Record::Event(e)) => e,
            other => panic!("{other:?}"),
        };
        st.add(&Sample {
            event: ev,
            frames: vec!["f".into()],
        });
        assert_eq!(st.folded(Weight::Bytes), "a\\073b:malloc;f 8\n");
    }

    /// Decodes the fields of one protobuf message: (field, varint or bytes).
    fn fields(b: &[u8]) -> Vec<(u32, Result<u64, Vec<u8>>)> {
        let mut out = Vec::new();
        let mut is = protobuf::CodedInputStream::from_bytes(b);
        while !is.eof().unwrap() {
            let tag = is.read_raw_varint32().unwrap();
            let v = match tag & 7 {
                0 => Ok(is.read_raw_varint64().unwrap()),
                2 => Err(is.read_bytes().unwrap()),
                w => panic!("wire type {w}"),
            };
            out.push((tag >> 3, v));
        }
        out
    }

    #[test]
    fn pprof_decodes_to_the_stacks() {
        use std::io::Read;
        let (_, st) = read(TRACE);
        let gz = st.pprof(1_000_000_000);
        let mut raw = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut raw)
            .unwrap();
        let f = fields(&raw);
        let strings: Vec<String> = f
            .iter()
            .filter(|(n, _)| *n == 6)
            .map(|(_, v)| String::from_utf8(v.clone().unwrap_err()).unwrap())
            .collect();
        assert_eq!(strings[0], "");
        let s = |i: u64| strings[i as usize].clone();
        let types: Vec<(String, String)> = f
            .iter()
            .filter(|(n, _)| *n == 1)
            .map(|(_, v)| {
                let vt = fields(v.as_ref().unwrap_err());
                (s(vt[0].1.clone().unwrap()), s(vt[1].1.clone().unwrap()))
            })
            .collect();
        assert_eq!(
            types,
            [
                ("allocations".into(), "count".into()),
                ("bytes".into(), "bytes".into())
            ]
        );
        let funcs: HashMap<u64, String> = f
            .iter()
            .filter(|(n, _)| *n == 5)
            .map(|(_, v)| {
                let fu = fields(v.as_ref().unwrap_err());
                (fu[0].1.clone().unwrap(), s(fu[1].1.clone().unwrap()))
            })
            .collect();
        let samples: Vec<_> = f.iter().filter(|(n, _)| *n == 2).collect();
        assert_eq!(samples.len(), 2);
        let first = fields(samples[0].1.as_ref().unwrap_err());
        let packed = |v: &Result<u64, Vec<u8>>| {
            let b = v.as_ref().unwrap_err().clone();
            let mut is = protobuf::CodedInputStream::from_bytes(&b);
            let mut o = Vec::new();
            while !is.eof().unwrap() {
                o.push(is.read_raw_varint64().unwrap());
            }
            o
        };
        let names: Vec<String> = packed(&first[0].1)
            .iter()
            .map(|i| funcs[i].clone())
            .collect();
        assert_eq!(
            names,
            ["kmalloc_mt", "init_one [sample]", "do_one_initcall"]
        );
        assert_eq!(packed(&first[1].1), [2, 8192]);
        assert!(f.contains(&(10, Ok(1_000_000_000))));
    }

    #[test]
    fn tracing_frames_are_known_by_function() {
        assert!(is_tracing_frame("trace_event_raw_event_malloc+0x1/0x2"));
        assert!(is_tracing_frame("__ftrace_trace_stack+0x1/0x2"));
        assert!(is_tracing_frame("rust_do_trace_malloc+0x1/0x2"));
        assert!(!is_tracing_frame(
            "trace_test_init+0x1/0x2 [malloc_type_trace_test]"
        ));
        assert_eq!(function_of("f+0x1/0x2 [m]"), "f [m]");
        assert_eq!(function_of("0xffffffff81000000"), "0xffffffff81000000");
    }
}
