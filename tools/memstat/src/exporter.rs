//! The HTTP exporter of `memstat --listen`: serves the Prometheus exposition
//! ([`crate::openmetrics`]) to scrapers, and stays up whatever its clients do.
//!
//! | request | answer |
//! | --- | --- |
//! | `GET /metrics` | 200 with the exposition, read anew for each request; 503 with the error text when the read fails |
//! | `HEAD /metrics` | the same status and headers (`Content-Type`, `Content-Length`), no body |
//! | `GET /`, `HEAD /` | 200, a line pointing to `/metrics` |
//! | another method on `/metrics` or `/` | 405 with `Allow: GET, HEAD` |
//! | any other path | 404 |
//!
//! Bounds ([`Limits`]):
//!
//! * **connections**: at most [`Limits::max_connections`] are served at once.
//!   One more is accepted, answered `503 Service Unavailable` (if its socket
//!   takes the few bytes at once) and closed, so that a flood neither queues
//!   up in the kernel nor takes a file descriptor for long.
//! * **idle time**: a connection is closed when its client has made no
//!   progress for [`Limits::idle_timeout`] (no byte received nor sent while
//!   the exporter waits on it: an idle keep-alive connection, a client that
//!   stops reading its answer), or has not sent a whole request head within
//!   that time of when the exporter started waiting for it (a client that
//!   sends it a byte at a time). Time spent reading the kernel does not count.
//! * **request heads**: at most [`Limits::max_header_size`] bytes (request
//!   line and headers); a longer head is answered 431 and the connection is
//!   closed. A connection buffers at most that much (at least 8 KiB) of what
//!   its client sends, so the exporter's memory is bounded by the number of
//!   connections times that, plus one exposition per connection being
//!   answered.
//! * **accept failures** (no file descriptor left, no memory, a connection
//!   reset before it was accepted) are logged on standard error, at most one
//!   line per 10 s with the number of failures in between, and accepting
//!   goes on after a pause of 10 ms doubling up to 1 s, while the connections
//!   already open are served. Only a failure that says the listening socket
//!   itself is unusable (`EBADF`, `EINVAL`, `ENOTSOCK`, `EOPNOTSUPP`,
//!   `EFAULT`) ends [`Exporter::serve`] with an error: the exporter never
//!   stops serving and returns success.
//!
//! Built on hyper 1.x (HTTP/1.1) with a tokio current-thread runtime and
//! hyper-util, the Rust ecosystem's common HTTP stack: hyper bounds the head
//! (`max_buf_size`, `max_header_size`), times out slow heads
//! (`header_read_timeout`), answers `HEAD` without a body and closes
//! connections gracefully; the accept loop, the connection limit, the idle
//! timeout on reads and writes (hyper has none) and the logging are ours,
//! below. One thread serves the connections; the read of the kernel runs on
//! one more (tokio's blocking pool, at most one thread), so that a slow read
//! neither stalls the other connections nor runs twice at once.
//! `tiny_http` would not do: it has no limits and no timeouts, a connection
//! holds a thread for as long as its client likes and a request head grows
//! its buffer without end.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::io::{self, Write as _};
use std::net::{SocketAddr, ToSocketAddrs};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALLOW, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::time::Sleep;

use crate::error::io_text;
use crate::openmetrics;

/// Default of [`Limits::max_connections`].
pub const DEFAULT_MAX_CONNECTIONS: usize = 64;
/// Default of [`Limits::idle_timeout`].
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// Default of [`Limits::max_header_size`].
pub const DEFAULT_MAX_HEADER_SIZE: usize = 16 * 1024;
/// Smallest [`Limits::max_header_size`]: what a scraper's request needs, with room.
pub const MIN_MAX_HEADER_SIZE: usize = 1024;
/// Largest [`Limits::max_header_size`].
pub const MAX_MAX_HEADER_SIZE: usize = 1024 * 1024;

/// hyper's smallest read buffer (`max_buf_size` may not be set lower).
const MIN_READ_BUFFER: usize = 8192;
/// At most one log line of a kind per this time.
const LOG_INTERVAL: Duration = Duration::from_secs(10);
/// The first pause after a failed `accept()`; it doubles up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(10);
/// The longest pause after failed `accept()`s.
const MAX_BACKOFF: Duration = Duration::from_secs(1);
/// The body of the answer to a connection over the limit.
const TOO_MANY: &str = "memstat: too many connections\n";

/// What the exporter bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Connections served at once (at least 1).
    pub max_connections: usize,
    /// How long a client may keep the exporter waiting (more than zero).
    pub idle_timeout: Duration,
    /// Bytes of a request head ([`MIN_MAX_HEADER_SIZE`] to [`MAX_MAX_HEADER_SIZE`]).
    pub max_header_size: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_header_size: DEFAULT_MAX_HEADER_SIZE,
        }
    }
}

/// Reads the metrics for one scrape: the exposition, or the text of the error.
pub type Scrape = Box<dyn FnMut() -> Result<Vec<u8>, String> + Send>;

/// A listening exporter, not serving yet.
#[derive(Debug)]
pub struct Exporter {
    runtime: tokio::runtime::Runtime,
    listener: TcpListener,
    addr: SocketAddr,
    limits: Limits,
}

impl Exporter {
    /// Listens on `addr` (`HOST:PORT`; port 0 picks a free one).
    ///
    /// Errors: an address that does not resolve, a socket that cannot be bound, a runtime that
    /// cannot be started; limits out of their ranges ([`io::ErrorKind::InvalidInput`]).
    pub fn bind(addr: &str, limits: Limits) -> io::Result<Exporter> {
        if limits.max_connections == 0
            || limits.idle_timeout.is_zero()
            || !(MIN_MAX_HEADER_SIZE..=MAX_MAX_HEADER_SIZE).contains(&limits.max_header_size)
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("limits out of range: {limits:?}"),
            ));
        }
        let addrs: Vec<SocketAddr> = addr.to_socket_addrs()?.collect();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .max_blocking_threads(1)
            .build()?;
        let listener = runtime.block_on(TcpListener::bind(&addrs[..]))?;
        let addr = listener.local_addr()?;
        Ok(Exporter {
            runtime,
            listener,
            addr,
            limits,
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves until `count` scrapes (`GET /metrics`) were answered, or for good when `count`
    /// is `None`; each scrape calls `scrape`. After the last scrape it stops accepting, lets
    /// the open connections finish their answers (for at most the idle timeout) and returns.
    ///
    /// Errors: a listening socket that became unusable (see the module documentation); the
    /// text names the address.
    pub fn serve(self, count: Option<u64>, scrape: Scrape) -> io::Result<()> {
        let Exporter {
            runtime,
            listener,
            addr,
            limits,
        } = self;
        let shared = Arc::new(Shared {
            scrape: Mutex::new(scrape),
            scrapes: AtomicU64::new(0),
            count,
            done: Notify::new(),
        });
        let r = runtime.block_on(accept_loop(listener, addr, limits, shared));
        // A read still running on the blocking pool is not waited for.
        runtime.shutdown_background();
        r
    }
}

/// What the connections share.
struct Shared {
    scrape: Mutex<Scrape>,
    /// Scrapes answered.
    scrapes: AtomicU64,
    /// Scrapes to answer before stopping.
    count: Option<u64>,
    /// Told when `count` scrapes were answered.
    done: Notify,
}

/// Writes `memstat: MSG` on standard error, ignoring a failure to write (a closed standard
/// error must not stop the exporter).
fn log(msg: fmt::Arguments<'_>) {
    let _ = writeln!(io::stderr(), "memstat: {msg}");
}

/// One kind of log line, written at most once per [`LOG_INTERVAL`]: the lines in between are
/// counted, and the count is written with the next line.
#[derive(Default)]
struct Throttle {
    last: Option<Instant>,
    suppressed: u64,
}

impl Throttle {
    fn log(&mut self, msg: fmt::Arguments<'_>) {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|t| now.duration_since(t) < LOG_INTERVAL)
        {
            self.suppressed += 1;
            return;
        }
        match self.suppressed {
            0 => log(msg),
            n => log(format_args!("{msg} ({n} more since the last such message)")),
        }
        self.last = Some(now);
        self.suppressed = 0;
    }
}

/// Whether a failure of `accept()` says that the listening socket itself is unusable, so
/// that trying again cannot help.
fn is_fatal(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EBADF | libc::EINVAL | libc::ENOTSOCK | libc::EOPNOTSUPP | libc::EFAULT)
    )
}

/// A connection slot: counted in `active` while it lives.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

async fn accept_loop(
    listener: TcpListener,
    addr: SocketAddr,
    limits: Limits,
    shared: Arc<Shared>,
) -> io::Result<()> {
    let mut http = http1::Builder::new();
    // Title-case header names (`Content-Type`), as most servers write them, for scripts that
    // grep a response.
    http.timer(TokioTimer::new())
        .title_case_headers(true)
        .header_read_timeout(limits.idle_timeout)
        .max_buf_size(limits.max_header_size.max(MIN_READ_BUFFER))
        .max_header_size(limits.max_header_size);
    let graceful = GracefulShutdown::new();
    let active = Arc::new(AtomicUsize::new(0));
    let too_many = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{TOO_MANY}",
        TOO_MANY.len()
    );
    let mut accept_log = Throttle::default();
    let mut refuse_log = Throttle::default();
    let mut backoff = MIN_BACKOFF;
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            () = shared.done.notified() => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => {
                backoff = MIN_BACKOFF;
                stream
            }
            Err(e) if is_fatal(&e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("accept on {addr}: {}", io_text(&e)),
                ))
            }
            Err(e) => {
                accept_log.log(format_args!(
                    "accept on {addr}: {}; trying again",
                    io_text(&e)
                ));
                tokio::select! {
                    () = tokio::time::sleep(backoff) => {}
                    () = shared.done.notified() => break,
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            }
        };
        if active.load(Ordering::Relaxed) >= limits.max_connections {
            refuse_log.log(format_args!(
                "{addr}: {} connections open, the limit; closing new ones",
                limits.max_connections
            ));
            // Best effort: the socket is new, its send buffer empty. Dropping it closes it.
            let _ = stream.try_write(too_many.as_bytes());
            continue;
        }
        active.fetch_add(1, Ordering::Relaxed);
        let slot = Slot(Arc::clone(&active));
        let busy = Arc::new(AtomicBool::new(false));
        let io = TokioIo::new(Watched::new(stream, limits.idle_timeout, Arc::clone(&busy)));
        let conn_shared = Arc::clone(&shared);
        let service = service_fn(move |req| {
            let shared = Arc::clone(&conn_shared);
            let busy = Arc::clone(&busy);
            async move { Ok::<_, Infallible>(respond(req, &shared, &busy).await) }
        });
        let conn = graceful.watch(http.serve_connection(io, service));
        tokio::spawn(async move {
            let _slot = slot;
            // A client's failure (a reset, a timeout, a bad request) ends its connection only.
            let _ = conn.await;
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(limits.idle_timeout, graceful.shutdown()).await;
    Ok(())
}

/// A response with a body of `content_type`.
fn response(
    status: StatusCode,
    content_type: &'static str,
    body: impl Into<Bytes>,
) -> Response<Full<Bytes>> {
    let body: Bytes = body.into();
    let mut r = Response::new(Full::new(body.clone()));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    // Written out for HEAD, whose answer has no body to take it from.
    h.insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
    r
}

fn text(status: StatusCode, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    response(status, "text/plain; charset=utf-8", body)
}

/// Sets `flag` while it lives.
struct Busy<'a>(&'a AtomicBool);

impl<'a> Busy<'a> {
    fn new(flag: &'a AtomicBool) -> Busy<'a> {
        flag.store(true, Ordering::Relaxed);
        Busy(flag)
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Relaxed);
    }
}

/// Answers one request; `busy` is set while the kernel is read for it.
async fn respond(
    req: Request<Incoming>,
    shared: &Arc<Shared>,
    busy: &AtomicBool,
) -> Response<Full<Bytes>> {
    let method = req.method().clone();
    let readable = method == Method::GET || method == Method::HEAD;
    match req.uri().path() {
        "/metrics" if readable => {
            let result = {
                let _busy = Busy::new(busy);
                let s = Arc::clone(shared);
                tokio::task::spawn_blocking(move || {
                    let mut scrape = s.scrape.lock().unwrap_or_else(PoisonError::into_inner);
                    scrape()
                })
                .await
                .unwrap_or_else(|e| Err(format!("the read failed: {e}")))
            };
            if method == Method::GET {
                let n = shared.scrapes.fetch_add(1, Ordering::Relaxed) + 1;
                if shared.count.is_some_and(|c| n >= c) {
                    shared.done.notify_one();
                }
            }
            match result {
                Ok(body) => response(StatusCode::OK, openmetrics::CONTENT_TYPE, body),
                Err(e) => text(StatusCode::SERVICE_UNAVAILABLE, format!("memstat: {e}\n")),
            }
        }
        "/" if readable => text(StatusCode::OK, "malloc types: see /metrics\n"),
        "/metrics" | "/" => {
            let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
            r.headers_mut()
                .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
            r
        }
        _ => text(StatusCode::NOT_FOUND, "not found\n"),
    }
}

/// A connection's socket that fails with [`io::ErrorKind::TimedOut`] when a read or a write
/// has waited for the idle timeout with no byte moved either way, unless `busy` says that the
/// exporter itself is working on the connection's request.
struct Watched {
    io: TcpStream,
    idle: Duration,
    timer: Pin<Box<Sleep>>,
    /// Whether `timer` runs: since the first read or write that had to wait.
    armed: bool,
    busy: Arc<AtomicBool>,
}

impl Watched {
    fn new(io: TcpStream, idle: Duration, busy: Arc<AtomicBool>) -> Watched {
        Watched {
            io,
            idle,
            timer: Box::pin(tokio::time::sleep(idle)),
            armed: false,
            busy,
        }
    }

    /// Passes on the result of a read or a write, timing the waits.
    fn watch<T>(&mut self, cx: &mut Context<'_>, r: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if r.is_ready() {
            self.armed = false;
            return r;
        }
        if !self.armed {
            self.timer
                .as_mut()
                .reset(tokio::time::Instant::now() + self.idle);
            self.armed = true;
        }
        while self.timer.as_mut().poll(cx).is_ready() {
            if !self.busy.load(Ordering::Relaxed) {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the client kept the connection idle",
                )));
            }
            self.timer
                .as_mut()
                .reset(tokio::time::Instant::now() + self.idle);
        }
        Poll::Pending
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_read(cx, buf);
        this.watch(cx, r)
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_write(cx, buf);
        this.watch(cx, r)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        this.watch(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_flush(cx);
        this.watch(cx, r)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_shutdown(cx);
        this.watch(cx, r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fatal_accept_errors() {
        for e in [libc::EBADF, libc::EINVAL, libc::ENOTSOCK] {
            assert!(is_fatal(&io::Error::from_raw_os_error(e)));
        }
        for e in [
            libc::EMFILE,
            libc::ENFILE,
            libc::ENOBUFS,
            libc::ENOMEM,
            libc::ECONNABORTED,
            libc::EPERM,
        ] {
            assert!(!is_fatal(&io::Error::from_raw_os_error(e)));
        }
    }

    #[test]
    fn limits_are_checked() {
        let bad = [
            Limits {
                max_connections: 0,
                ..Limits::default()
            },
            Limits {
                idle_timeout: Duration::ZERO,
                ..Limits::default()
            },
            Limits {
                max_header_size: MIN_MAX_HEADER_SIZE - 1,
                ..Limits::default()
            },
            Limits {
                max_header_size: MAX_MAX_HEADER_SIZE + 1,
                ..Limits::default()
            },
        ];
        for l in bad {
            let e = Exporter::bind("127.0.0.1:0", l).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{l:?}");
        }
        let e = Exporter::bind("127.0.0.1:0", Limits::default()).unwrap();
        assert!(e.local_addr().ip().is_loopback());
        assert_ne!(e.local_addr().port(), 0);
    }
}
