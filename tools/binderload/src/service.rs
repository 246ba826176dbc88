// SPDX-License-Identifier: Apache-2.0
//! The service process: registers an `ILoad` with the service manager and
//! serves it from a binder thread pool.
//!
//! Protocol with the parent: `ready` once the service is registered, then
//! `stats ...` (what it served) when its standard input closes, after which
//! it exits; it fails instead if the file descriptors `sendFd` received are
//! not all closed by then.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rsbinder::{
    hub, BinderResult, ExceptionCode, Interface, ParcelFileDescriptor, ProcessState, Status,
    StatusCode, Strong,
};

use crate::aidl::{BnLoad, BnToken, ICallback, ILoad, IToken, SERVICE_NAME};
use crate::payload::{fnv1a, Stats};
use crate::{fds, report, wait_for_eof, Res};

/// How long the service waits for the received fds to be closed once the
/// clients are done (a binder thread may still be dropping the parcel of a
/// call it answered).
const FD_CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// Counts of what the service served, shared by its binder threads.
#[derive(Default)]
struct Counters {
    echo: AtomicU64,
    digest: AtomicU64,
    tokens: AtomicU64,
    token_calls: AtomicU64,
    callbacks: AtomicU64,
    fds: AtomicU64,
    received: AtomicU64,
    sent: AtomicU64,
}

impl Counters {
    fn stats(&self) -> Stats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Stats {
            echo: get(&self.echo),
            digest: get(&self.digest),
            tokens: get(&self.tokens),
            token_calls: get(&self.token_calls),
            callbacks: get(&self.callbacks),
            // The service's pings are the calls it made into the clients.
            pings: get(&self.callbacks),
            fds: get(&self.fds),
            sent: get(&self.sent),
            received: get(&self.received),
            ..Stats::default()
        }
    }
}

fn bump(counter: &AtomicU64, by: usize) {
    counter.fetch_add(by as u64, Ordering::Relaxed);
}

/// The `ILoad` service.
struct Load {
    counters: Arc<Counters>,
}

impl Interface for Load {}

impl ILoad for Load {
    fn echo(&self, data: &[u8]) -> BinderResult<Vec<u8>> {
        bump(&self.counters.echo, 1);
        bump(&self.counters.received, data.len());
        bump(&self.counters.sent, data.len());
        Ok(data.to_vec())
    }

    fn digest(&self, data: &[u8]) -> BinderResult<i64> {
        bump(&self.counters.digest, 1);
        bump(&self.counters.received, data.len());
        Ok(fnv1a(data))
    }

    fn newToken(&self, id: i32) -> BinderResult<Strong<dyn IToken>> {
        bump(&self.counters.tokens, 1);
        Ok(BnToken::new_binder(Token {
            id,
            counters: Arc::clone(&self.counters),
        }))
    }

    fn callBack(
        &self,
        cb: &Strong<dyn ICallback>,
        value: i64,
        payload: &[u8],
    ) -> BinderResult<i64> {
        bump(&self.counters.callbacks, 1);
        bump(&self.counters.received, payload.len());
        bump(&self.counters.sent, payload.len());
        let answer = cb.ping(value, payload)?;
        if answer != value + 1 + payload.len() as i64 {
            return Err(Status::from(StatusCode::BadValue));
        }
        Ok(answer)
    }

    fn sendFd(&self, fd: &ParcelFileDescriptor, length: i32) -> BinderResult<i64> {
        bump(&self.counters.fds, 1);
        let data = usize::try_from(length)
            .map_err(|_| format!("a negative length {length}"))
            .and_then(|length| fds::read(fd, length))
            .map_err(|e| Status::from((ExceptionCode::IllegalArgument, e.as_str())))?;
        bump(&self.counters.received, data.len());
        Ok(fnv1a(&data))
    }
}

/// A binder object made for one `newToken` call.
struct Token {
    id: i32,
    counters: Arc<Counters>,
}

impl Interface for Token {}

impl IToken for Token {
    fn id(&self) -> BinderResult<i32> {
        bump(&self.counters.token_calls, 1);
        Ok(self.id)
    }
}

/// Runs the service on `device` until standard input closes.
pub fn run(device: &str) -> Res<()> {
    ProcessState::init(device, rsbinder::DEFAULT_MAX_BINDER_THREADS)
        .map_err(|e| format!("opening {device}: {e}"))?;
    let counters = Arc::new(Counters::default());
    let service = BnLoad::new_binder(Load {
        counters: Arc::clone(&counters),
    });
    hub::add_service(SERVICE_NAME, service.as_binder())
        .map_err(|e| format!("registering {SERVICE_NAME} with the service manager: {e}"))?;
    ProcessState::start_thread_pool();
    let open = fds::open_fds();
    report("ready");
    wait_for_eof();
    check_fds_closed(open, counters.fds.load(Ordering::Relaxed), FD_CLOSE_TIMEOUT)?;
    report(&counters.stats().to_string());
    Ok(())
}

/// Fails if more fds are open than `before` (counted before the calls),
/// after waiting up to `timeout` for the last ones to close: some of the
/// `received` fds of `sendFd` would have leaked.
fn check_fds_closed(before: Option<usize>, received: u64, timeout: Duration) -> Res<()> {
    let Some(before) = before else { return Ok(()) };
    let start = Instant::now();
    loop {
        let now = fds::open_fds().unwrap_or(before);
        if now <= before {
            return Ok(());
        }
        if start.elapsed() >= timeout {
            return Err(format!(
                "{} more fd(s) open than before the calls ({now}, not {before}): of the {received} fd(s) sendFd received, some were not closed",
                now - before
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fds_left_open_are_an_error() {
        assert_eq!(check_fds_closed(None, 3, Duration::ZERO), Ok(()));
        let now = fds::open_fds().expect("/proc/self/fd");
        // Other tests' threads may open fds meanwhile: a wide margin.
        assert_eq!(check_fds_closed(Some(now + 100), 3, Duration::ZERO), Ok(()));
        let err = check_fds_closed(Some(0), 3, Duration::ZERO).unwrap_err();
        assert!(err.contains("of the 3 fd(s) sendFd received"), "{err}");
    }
}
