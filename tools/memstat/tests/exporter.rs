//! The HTTP exporter of `memstat --listen` against hostile and careless clients, on loopback:
//! idle connections past the open-file limit, failing `accept()`s, a request head without end,
//! a client that dribbles its head or does not read its answer, and the methods and paths.
//! Each test starts its own exporter on a free port and kills it at the end.
mod common;

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use memstat::stream::write_stream;

/// A running exporter; killed when dropped.
struct Exporter {
    child: Child,
    addr: String,
    /// What it wrote on standard error after its first line.
    log: Arc<Mutex<String>>,
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Exporter {
    /// Starts `memstat -f STREAM --listen 127.0.0.1:0 EXTRA...`, under `ulimit -n NOFILE` when
    /// given, and waits for its "serving" line.
    fn start(stream: &Path, nofile: Option<u32>, extra: &[&str]) -> Exporter {
        let bin = env!("CARGO_BIN_EXE_memstat");
        let mut cmd = match nofile {
            Some(n) => {
                let mut c = Command::new("sh");
                c.arg("-c")
                    .arg(format!("ulimit -n {n} && exec \"$0\" \"$@\""))
                    .arg(bin);
                c
            }
            None => Command::new(bin),
        };
        cmd.arg("-f")
            .arg(stream)
            .args(["--listen", "127.0.0.1:0"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("run memstat");
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        err.read_line(&mut line).unwrap();
        let addr = line
            .strip_prefix("memstat: serving http://")
            .and_then(|l| l.strip_suffix("/metrics\n"))
            .unwrap_or_else(|| panic!("exporter did not start: {line:?}"))
            .to_string();
        let log = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&log);
        thread::spawn(move || {
            let mut line = String::new();
            while err.read_line(&mut line).unwrap_or(0) > 0 {
                sink.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        Exporter { child, addr, log }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Asserts that it still runs.
    fn assert_running(&mut self) {
        assert_eq!(
            self.child.try_wait().unwrap(),
            None,
            "the exporter exited; it logged: {}",
            self.log()
        );
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// A field of its `/proc/PID/status`, in kB.
    fn status_kb(&self, field: &str) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        s.lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.trim().strip_suffix(" kB"))
            .unwrap_or_else(|| panic!("no {field} in {s}"))
            .parse()
            .unwrap()
    }

    /// Its open file descriptors.
    fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .unwrap()
            .count()
    }

    /// One request on a new connection (closed after the answer): the whole response.
    fn request(&self, method: &str, path: &str) -> String {
        let mut s = TcpStream::connect(&self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.addr
        )
        .unwrap();
        let mut r = Vec::new();
        s.read_to_end(&mut r).unwrap();
        String::from_utf8(r).unwrap()
    }

    /// `GET /metrics` until it is answered 200, for at most `within`: the answer.
    fn scrape_within(&self, within: Duration) -> String {
        let start = Instant::now();
        loop {
            let r = self.try_request("GET", "/metrics");
            match r {
                Some(r) if r.starts_with("HTTP/1.1 200 ") => return r,
                _ if start.elapsed() > within => {
                    panic!(
                        "no scrape answered within {within:?}: {r:?}; log: {}",
                        self.log()
                    )
                }
                _ => thread::sleep(Duration::from_millis(100)),
            }
        }
    }

    /// [`Exporter::request`], or `None` when the connection fails.
    fn try_request(&self, method: &str, path: &str) -> Option<String> {
        let mut s = TcpStream::connect(&self.addr).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.addr
        )
        .ok()?;
        let mut r = Vec::new();
        s.read_to_end(&mut r).ok()?;
        String::from_utf8(r).ok()
    }
}

fn sample_file(name: &str) -> PathBuf {
    let p = tmpdir(name).join("sample.stream");
    std::fs::write(&p, sample_stream()).unwrap();
    p
}

/// The body of a response.
fn body(r: &str) -> &str {
    r.split_once("\r\n\r\n").map_or("", |(_, b)| b)
}

/// The value of header `name` in a response.
fn header<'a>(r: &'a str, name: &str) -> Option<&'a str> {
    r.split_once("\r\n\r\n")?.0.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// How a connection that the exporter ends reads: what it got before the end, or `None` when
/// it was still open after `timeout`.
fn read_until_closed(s: &mut TcpStream, timeout: Duration) -> Option<Vec<u8>> {
    s.set_read_timeout(Some(timeout)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return Some(got),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return Some(got),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return None
            }
            Err(e) => panic!("read: {e}"),
        }
    }
}

/// The example: under `ulimit -n 256`, 300 idle connections. The exporter serves at
/// most `--max-connections` (64 by default) at once, answers the others 503 and closes them,
/// logs that once, closes the idle ones after `--idle-timeout`, keeps running and answers a
/// scrape; its descriptors stay bounded. Each idle timeout frees up to 64 slots for connections
/// still waiting to be accepted, so the timeout (3 s) is long enough for the exporter to refuse
/// the waiting ones first even on a loaded machine (with 1 s, a `make check` running kernel builds
/// beside it saw three rounds of timeouts and only 131 refusals).
#[test]
fn idle_connections_past_the_open_file_limit() {
    let f = sample_file("exporter_idle");
    let mut e = Exporter::start(&f, Some(256), &["--idle-timeout", "3"]);
    let conns: Vec<TcpStream> = (0..300)
        .map(|_| TcpStream::connect(&e.addr).unwrap())
        .collect();
    thread::sleep(Duration::from_millis(300));
    e.assert_running();
    let fds = e.fds();
    assert!(fds <= 64 + 16, "{fds} descriptors open");
    let mut refused = 0;
    let mut closed = 0;
    for mut c in conns {
        let got = read_until_closed(&mut c, Duration::from_secs(5))
            .expect("an idle connection still open 5 s after --idle-timeout 3");
        closed += 1;
        if got.starts_with(b"HTTP/1.1 503 ") {
            assert!(body(&String::from_utf8_lossy(&got)).contains("too many connections"));
            refused += 1;
        }
    }
    assert_eq!(closed, 300);
    assert!(refused >= 300 - 2 * 64, "only {refused} refused");
    e.assert_running();
    let r = e.scrape_within(Duration::from_secs(5));
    assert!(body(&r).starts_with("# HELP malloc_type_requests_total "));
    // One line for all the refusals (at most one per 10 s).
    let log = e.log();
    assert_eq!(
        log.matches("connections open, the limit").count(),
        1,
        "{log}"
    );
    e.assert_running();
}

/// With fewer descriptors than connections (`ulimit -n 24`, `--max-connections 64`) `accept()`
/// fails with EMFILE: the exporter logs it once, goes on serving the connections it has, and
/// accepts again once descriptors are free.
#[test]
fn accept_failures_are_logged_and_survived() {
    let f = sample_file("exporter_emfile");
    let mut e = Exporter::start(
        &f,
        Some(24),
        &["--idle-timeout", "1", "--max-connections", "64"],
    );
    let conns: Vec<TcpStream> = (0..40)
        .map(|_| TcpStream::connect(&e.addr).unwrap())
        .collect();
    let start = Instant::now();
    while !e.log().contains("Too many open files") {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "no accept failure logged: {}",
            e.log()
        );
        thread::sleep(Duration::from_millis(50));
    }
    // Several failures (a retry at least every second), one line.
    thread::sleep(Duration::from_millis(1500));
    e.assert_running();
    let log = e.log();
    assert_eq!(log.lines().count(), 1, "{log}");
    assert!(
        log.starts_with(&format!(
            "memstat: accept on {}: Too many open files; trying again",
            e.addr
        )),
        "{log}"
    );
    drop(conns);
    let r = e.scrape_within(Duration::from_secs(5));
    assert!(body(&r).ends_with("malloc_types 7\n"), "{r}");
    e.assert_running();
}

/// Four clients each send a request head of up to 100 MiB without a line end: the exporter
/// stops reading each after `--max-header-size` (16 KiB by default), so its peak resident
/// memory grows by far less than what they send, and it keeps serving.
#[test]
fn a_request_head_without_end_is_cut_short() {
    const HOSTILE: usize = 100 << 20;
    let f = sample_file("exporter_header");
    let mut e = Exporter::start(&f, None, &[]);
    // A scrape first, so that the baseline holds what serving needs.
    e.scrape_within(Duration::from_secs(5));
    let before = e.status_kb("VmHWM");
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let addr = e.addr.clone();
            thread::spawn(move || {
                let mut s = TcpStream::connect(&addr).unwrap();
                s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
                s.write_all(b"GET /metrics HTTP/1.1\r\nX-Junk: ").unwrap();
                let chunk = vec![b'a'; 1 << 20];
                let mut sent = 0;
                while sent < HOSTILE {
                    match s.write(&chunk) {
                        Ok(n) => sent += n,
                        Err(_) => break,
                    }
                }
                sent
            })
        })
        .collect();
    for c in clients {
        let sent = c.join().unwrap();
        assert!(
            sent < HOSTILE,
            "the exporter read a 100 MiB request head whole"
        );
    }
    let after = e.status_kb("VmHWM");
    assert!(
        after - before < 8 * 1024,
        "peak resident memory grew by {} kB (from {before} kB)",
        after - before
    );
    e.assert_running();
    e.scrape_within(Duration::from_secs(5));
}

/// A client that sends its request head a byte at a time is cut off after `--idle-timeout`
/// although it makes progress; one that stays connected after an answer (keep-alive) is closed
/// after it too.
#[test]
fn slow_and_idle_clients_are_cut_off() {
    let f = sample_file("exporter_slow");
    let mut e = Exporter::start(&f, None, &["--idle-timeout", "1"]);
    let mut slow = TcpStream::connect(&e.addr).unwrap();
    slow.write_all(b"GET /metrics HTTP/1.1\r\nX-Slow: ")
        .unwrap();
    slow.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let start = Instant::now();
    let mut buf = [0u8; 256];
    loop {
        assert!(
            start.elapsed() < Duration::from_secs(4),
            "a head sent a byte every 200 ms still read after 4 s"
        );
        if slow.write_all(b"a").is_err() {
            break;
        }
        match slow.read(&mut buf) {
            Ok(_) => break,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
    }
    let mut idle = TcpStream::connect(&e.addr).unwrap();
    write!(idle, "GET / HTTP/1.1\r\nHost: {}\r\n\r\n", e.addr).unwrap();
    let got = read_until_closed(&mut idle, Duration::from_secs(4))
        .expect("a keep-alive connection still open 4 s after --idle-timeout 1");
    assert!(got.starts_with(b"HTTP/1.1 200 "));
    e.assert_running();
}

/// A client that asks for a large answer and does not read it holds its connection only until
/// `--idle-timeout`: with `--max-connections 1`, the exporter then serves others again.
#[test]
fn a_client_that_does_not_read_is_cut_off() {
    // Some 13 MB of exposition: more than the socket buffers of both ends hold.
    let types: Vec<_> = (0..12_000u64)
        .map(|i| ty(format!("type {i}"), i + 1, vec![cpu(8, 0, 1, 0, 1)]))
        .collect();
    let f = tmpdir("exporter_stall").join("big.stream");
    std::fs::write(&f, write_stream(1, &types)).unwrap();
    let mut e = Exporter::start(&f, None, &["--idle-timeout", "1", "--max-connections", "1"]);
    let mut stalled = TcpStream::connect(&e.addr).unwrap();
    write!(stalled, "GET /metrics HTTP/1.1\r\nHost: {}\r\n\r\n", e.addr).unwrap();
    // While it holds the only slot, others are closed at once (with a 503 when the closing
    // socket does not reset the connection: it does when the request was there unread).
    thread::sleep(Duration::from_millis(300));
    let r = e.try_request("GET", "/").unwrap_or_default();
    assert!(r.is_empty() || r.starts_with("HTTP/1.1 503 "), "{r}");
    let start = Instant::now();
    loop {
        let r = e.try_request("GET", "/").unwrap_or_default();
        if r.starts_with("HTTP/1.1 200 ") {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(6),
            "the stalled client still holds the connection: {r:?}"
        );
        thread::sleep(Duration::from_millis(200));
    }
    e.assert_running();
    drop(stalled);
}

/// `HEAD /metrics` answers the headers of `GET /metrics` without the body; every 405 says
/// which methods are allowed; other paths are 404 whatever the method.
#[test]
fn methods_and_paths() {
    let f = sample_file("exporter_methods");
    let mut e = Exporter::start(&f, None, &[]);
    let get = e.request("GET", "/metrics");
    assert!(get.starts_with("HTTP/1.1 200 "), "{get}");
    let head = e.request("HEAD", "/metrics");
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    assert_eq!(body(&head), "");
    assert_eq!(
        header(&head, "Content-Type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    assert_eq!(
        header(&head, "Content-Length"),
        Some(body(&get).len().to_string().as_str())
    );
    let head = e.request("HEAD", "/");
    assert!(
        head.starts_with("HTTP/1.1 200 ") && body(&head).is_empty(),
        "{head}"
    );
    for (method, path) in [
        ("POST", "/metrics"),
        ("PUT", "/metrics"),
        ("DELETE", "/"),
        ("OPTIONS", "/metrics"),
    ] {
        let r = e.request(method, path);
        assert!(r.starts_with("HTTP/1.1 405 "), "{method} {path}: {r}");
        assert_eq!(header(&r, "Allow"), Some("GET, HEAD"), "{method} {path}");
    }
    for (method, path) in [
        ("GET", "/nothing"),
        ("POST", "/nothing"),
        ("GET", "/metrics/"),
    ] {
        let r = e.request(method, path);
        assert!(r.starts_with("HTTP/1.1 404 "), "{method} {path}: {r}");
    }
    let r = e.request("GET", "/metrics?x=1");
    assert_eq!(body(&r), body(&get));
    let r = e.request("GET", "/");
    assert_eq!(body(&r), "malloc types: see /metrics\n");
    e.assert_running();
}
