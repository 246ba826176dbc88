// SPDX-License-Identifier: Apache-2.0
//! A client process: looks the service up through the service manager and
//! makes its calls, checking every reply.
//!
//! Protocol with the parent: `stats ...` (what it did) once every call has
//! succeeded, then it exits 0; on the first failure it says which call failed
//! and why on standard error and exits 1.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rsbinder::{hub, BinderResult, Interface, ProcessState, Status, StatusCode, Strong};

use crate::aidl::{BnCallback, ICallback, ILoad, SERVICE_NAME};
use crate::payload::{fnv1a, op, payload, Op, Stats};
use crate::{fds, report, Res};

/// How long a client waits for the service to be registered.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(10);

/// The object a client hands to the service with `callBack`: it checks the
/// payload the service sends back in the nested `ping`.
struct Callback {
    expected: Vec<u8>,
    pings: Arc<AtomicU64>,
}

impl Interface for Callback {}

impl ICallback for Callback {
    fn ping(&self, value: i64, payload: &[u8]) -> BinderResult<i64> {
        self.pings.fetch_add(1, Ordering::Relaxed);
        if payload != self.expected.as_slice() {
            return Err(Status::from(StatusCode::BadValue));
        }
        Ok(value + 1 + payload.len() as i64)
    }
}

/// Looks the service up, waiting while it is not registered yet.
fn lookup() -> Res<Strong<dyn ILoad>> {
    let start = Instant::now();
    loop {
        match hub::try_get_interface::<dyn ILoad>(SERVICE_NAME) {
            Ok(Some(service)) => return Ok(service),
            Ok(None) if start.elapsed() < LOOKUP_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Ok(None) => {
                return Err(format!(
                    "{SERVICE_NAME} is not registered after {}s",
                    LOOKUP_TIMEOUT.as_secs()
                ))
            }
            Err(e) => return Err(format!("looking {SERVICE_NAME} up: {e}")),
        }
    }
}

/// Where two payloads first differ, for the error message.
fn difference(got: &[u8], expected: &[u8]) -> String {
    if got.len() != expected.len() {
        return format!("{} bytes instead of {}", got.len(), expected.len());
    }
    let at = got
        .iter()
        .zip(expected)
        .position(|(a, b)| a != b)
        .unwrap_or(0);
    format!(
        "byte {at} is {:#04x} instead of {:#04x}",
        got[at], expected[at]
    )
}

/// Makes call `seq` of client `id`, adding what it did to `stats`.
fn call(
    load: &Strong<dyn ILoad>,
    id: u32,
    seq: u64,
    pings: &Arc<AtomicU64>,
    stats: &mut Stats,
) -> Res<()> {
    let binder_err = |e: Status| e.to_string();
    match op(seq) {
        Op::Echo(len) => {
            let data = payload(id, seq, len);
            let reply = load.echo(&data).map_err(binder_err)?;
            stats.echo += 1;
            stats.sent += len as u64;
            stats.received += reply.len() as u64;
            if reply != data {
                return Err(format!("wrong reply: {}", difference(&reply, &data)));
            }
        }
        Op::Digest(len) => {
            let data = payload(id, seq, len);
            let digest = load.digest(&data).map_err(binder_err)?;
            stats.digest += 1;
            stats.sent += len as u64;
            stats.received += 8;
            if digest != fnv1a(&data) {
                return Err(format!(
                    "wrong digest {digest:#x}, expected {:#x}",
                    fnv1a(&data)
                ));
            }
        }
        Op::Token => {
            let token_id = (seq as i32) ^ ((id as i32) << 20);
            let token = load.newToken(token_id).map_err(binder_err)?;
            stats.tokens += 1;
            let got = token.id().map_err(|e| format!("calling the token: {e}"))?;
            stats.token_calls += 1;
            if got != token_id {
                return Err(format!("the token answers {got}, expected {token_id}"));
            }
            // Dropping the token releases the client's reference: the
            // service's node goes with it.
        }
        Op::CallBack(len) => {
            let data = payload(id, seq, len);
            let cb = BnCallback::new_binder(Callback {
                expected: data.clone(),
                pings: Arc::clone(pings),
            });
            let value = ((seq as i64) << 8) | i64::from(id);
            let answer = load.callBack(&cb, value, &data).map_err(binder_err)?;
            stats.callbacks += 1;
            stats.sent += len as u64;
            stats.received += 8;
            let expected = value + 1 + len as i64;
            if answer != expected {
                return Err(format!(
                    "the call-back answered {answer}, expected {expected}"
                ));
            }
        }
        Op::SendFd(kind, len) => {
            let data = payload(id, seq, len);
            let fd = fds::make(kind, &data, seq)?;
            let length = i32::try_from(len).map_err(|_| format!("{len} bytes is too long"))?;
            let digest = load.sendFd(&fd, length).map_err(binder_err)?;
            stats.fds += 1;
            stats.sent += len as u64;
            stats.received += 8;
            if digest != fnv1a(&data) {
                return Err(format!(
                    "the service read the {kind:?}'s content as digest {digest:#x}, expected {:#x}",
                    fnv1a(&data)
                ));
            }
            // Dropping `fd` closes the client's end (the file goes with it).
        }
    }
    Ok(())
}

/// Runs client `id` on `device`: `calls` calls to the service.
pub fn run(device: &str, id: u32, calls: u64) -> Res<()> {
    // No thread pool: the nested `ping` comes back on the thread that is
    // waiting for the `callBack` reply.
    ProcessState::init(device, 0).map_err(|e| format!("opening {device}: {e}"))?;
    let load = lookup()?;
    let pings = Arc::new(AtomicU64::new(0));
    let mut stats = Stats::default();
    for seq in 0..calls {
        call(&load, id, seq, &pings, &mut stats)
            .map_err(|e| format!("call {seq} ({:?}): {e}", op(seq)))?;
    }
    stats.pings = pings.load(Ordering::Relaxed);
    if stats.pings != stats.callbacks {
        return Err(format!(
            "{} call-backs but {} pings came back",
            stats.callbacks, stats.pings
        ));
    }
    drop(load);
    report(&stats.to_string());
    Ok(())
}
