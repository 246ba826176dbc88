// SPDX-License-Identifier: Apache-2.0
//! The parent process: starts the helpers in order, collects what they
//! report, ends them in order and checks the totals.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use crate::aidl::SERVICE_NAME;
use crate::payload::{human, Stats};
use crate::Res;

/// What the workload is run with.
#[derive(Debug, Clone)]
pub struct Options {
    /// The binder device.
    pub device: String,
    /// Calls per client.
    pub calls: u64,
    /// Client processes.
    pub clients: u32,
    /// The time the whole workload may take.
    pub timeout: Duration,
}

/// A helper process: its standard input (closed to end it) and the lines
/// of its standard output, read by a thread of their own.
struct Helper {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    reaped: bool,
}

impl Helper {
    /// Starts `binderload [common args] ROLE...` as helper `name`.
    fn spawn(name: String, args: &[String]) -> Res<Helper> {
        let exe = std::env::current_exe()
            .map_err(|e| format!("finding this program to start the {name}: {e}"))?;
        let mut child = Command::new(&exe)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("starting the {name} ({}): {e}", exe.display()))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or("no pipe from a helper")?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Helper {
            name,
            child,
            stdin,
            lines,
            reaped: false,
        })
    }

    /// The next line of the helper, which must start with `word`.
    fn expect(&mut self, word: &str, deadline: Instant) -> Res<String> {
        let wait = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(wait) {
            Ok(line) if line.split_whitespace().next() == Some(word) => Ok(line),
            Ok(line) => Err(format!(
                "the {} said '{line}' where '{word}' was expected",
                self.name
            )),
            Err(RecvTimeoutError::Timeout) => Err(format!(
                "the {} did not say '{word}' in time (the workload's --timeout)",
                self.name
            )),
            Err(RecvTimeoutError::Disconnected) => Err(match self.wait(deadline) {
                Ok(()) => format!(
                    "the {} exited with status 0 before saying '{word}'",
                    self.name
                ),
                Err(e) => format!("{e} before saying '{word}'"),
            }),
        }
    }

    /// The counts the helper reports in its `stats` line.
    fn stats(&mut self, deadline: Instant) -> Res<Stats> {
        let line = self.expect("stats", deadline)?;
        Stats::parse(&line).map_err(|e| format!("the {}: {e}", self.name))
    }

    /// Closes the helper's standard input: the service manager and the
    /// service end when it closes.
    fn close_stdin(&mut self) {
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.flush();
        }
    }

    /// Waits for the helper to exit, which it must do with status 0.
    fn wait(&mut self, deadline: Instant) -> Res<()> {
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    self.reaped = true;
                    return if status.success() {
                        Ok(())
                    } else {
                        Err(format!("the {} failed ({status})", self.name))
                    };
                }
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                Ok(None) => return Err(format!("the {} did not exit in time", self.name)),
                Err(e) => return Err(format!("waiting for the {}: {e}", self.name)),
            }
        }
    }
}

impl Drop for Helper {
    /// A helper left running by a failure is killed, so that none outlives
    /// the run.
    fn drop(&mut self) {
        if !self.reaped {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Runs the workload and prints its summary.
pub fn run(opts: &Options) -> Res<()> {
    if !Path::new(&opts.device).exists() {
        return Err(format!(
            "no binder device {} (mount binderfs: mkdir -p /dev/binderfs && mount -t binder binder /dev/binderfs)",
            opts.device
        ));
    }
    let start = Instant::now();
    let deadline = start + opts.timeout;
    let common = |role: &[&str]| -> Vec<String> {
        let mut args = vec![
            "--device".to_owned(),
            opts.device.clone(),
            "--calls".to_owned(),
            opts.calls.to_string(),
        ];
        args.extend(role.iter().map(|s| (*s).to_owned()));
        args
    };

    let mut manager = Helper::spawn("service manager".into(), &common(&["manager"]))?;
    manager.expect("ready", deadline)?;
    let mut service = Helper::spawn("service".into(), &common(&["service"]))?;
    service.expect("ready", deadline)?;

    let mut clients = (1..=opts.clients)
        .map(|id| {
            let id = id.to_string();
            Helper::spawn(format!("client {id}"), &common(&["client", "--id", &id]))
        })
        .collect::<Res<Vec<_>>>()?;
    let mut total = Stats::default();
    for client in &mut clients {
        total.add(&client.stats(deadline)?);
        client.wait(deadline)?;
    }

    service.close_stdin();
    let served = service.stats(deadline)?;
    service.wait(deadline)?;
    // The service's process is gone: the manager's death notification fires.
    let died = manager.expect("died", deadline)?;
    if died != format!("died {SERVICE_NAME}") {
        return Err(format!(
            "the service manager said '{died}' for the service's death"
        ));
    }
    manager.close_stdin();
    let registry = manager.stats(deadline)?;
    manager.wait(deadline)?;
    let elapsed = start.elapsed();

    check_totals(opts, &total, &served, &registry)?;
    println!(
        "binderload: {}: a service manager, a service and {} client(s) x {} calls",
        opts.device, opts.clients, opts.calls
    );
    println!(
        "binderload: ok: {} transactions: {} calls (echo {}, digest {}, newToken {}, callBack {}, sendFd {}), {} token calls, {} nested calls back; {} binder objects and {} fds passed",
        total.transactions() + total.pings,
        total.load_calls(),
        total.echo,
        total.digest,
        total.tokens,
        total.callbacks,
        total.fds,
        total.token_calls,
        total.pings,
        total.tokens + total.callbacks,
        total.fds,
    );
    println!(
        "binderload: sent {}, received {} in {:.2} s; every process exited with status 0",
        human(total.sent),
        human(total.received),
        elapsed.as_secs_f64()
    );
    Ok(())
}

/// The clients' totals must be what the service served, and the service
/// manager must have seen one registration and a lookup per client.
fn check_totals(opts: &Options, clients: &Stats, served: &Stats, registry: &Stats) -> Res<()> {
    let expected_calls = opts.calls * u64::from(opts.clients);
    if clients.load_calls() != expected_calls {
        return Err(format!(
            "the clients made {} calls, expected {expected_calls}",
            clients.load_calls()
        ));
    }
    let pairs = [
        ("echo", clients.echo, served.echo),
        ("digest", clients.digest, served.digest),
        ("newToken", clients.tokens, served.tokens),
        ("token", clients.token_calls, served.token_calls),
        ("callBack", clients.callbacks, served.callbacks),
        ("ping", clients.pings, served.pings),
        ("sendFd", clients.fds, served.fds),
        ("payload byte", clients.sent, served.received),
    ];
    for (what, sent, got) in pairs {
        if sent != got {
            return Err(format!(
                "the clients counted {sent} {what}s, the service {got}"
            ));
        }
    }
    if registry.added != 1 || registry.lookups < u64::from(opts.clients) {
        return Err(format!(
            "the service manager saw {} registration(s) and {} lookup(s), expected 1 and {}",
            registry.added, registry.lookups, opts.clients
        ));
    }
    Ok(())
}
