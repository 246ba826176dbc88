// SPDX-License-Identifier: Apache-2.0
//! binderload: a Binder IPC workload between separate processes, for the
//! malloc types guest tests (Rust Binder charges its allocations to malloc
//! types).
//!
//! `binderload` starts, by running itself again with a hidden subcommand, a
//! service manager (the binder context manager), a service that registers
//! the AIDL interface `binderload.ILoad` with it, and clients that look the
//! service up and call it with payloads of several sizes, pass binder objects
//! both ways and file descriptors to it, and take nested calls back; every
//! reply is checked. Then it ends
//! them in order (clients, service, service manager), checks that the
//! service manager heard of the service's death and that every process
//! exited with status 0, and prints a summary. Any failure is an error
//! message on standard error and exit status 1.

mod aidl;
mod client;
mod fds;
mod manager;
mod payload;
mod run;
mod service;

use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::OnceLock;

use clap::{Parser, Subcommand};

/// The result of the workload's steps: errors are messages for the user.
pub type Res<T> = Result<T, String>;

/// Runs a Binder IPC workload: a service manager, an AIDL service and
/// clients in separate processes on one binder device.
///
/// Each client makes CALLS calls, cycling through echo (48, 4096 and
/// 65536-byte payloads), digest (16 KiB), newToken (a binder object from
/// the service, called once), callBack (a binder object of the client,
/// called back by the service) and sendFd (a file descriptor, a pipe then a
/// file, whose content the service reads back). Every reply is checked; the
/// processes exit when the workload ends, and the exit status is 0 only if
/// all went well.
#[derive(Parser, Debug)]
#[command(name = "binderload", version)]
struct Cli {
    /// The binder device (mount binderfs first: `mount -t binder binder /dev/binderfs`)
    #[arg(short, long, global = true, value_name = "PATH", default_value = rsbinder::DEFAULT_BINDER_PATH)]
    device: String,

    /// Calls each client makes
    #[arg(short = 'n', long, global = true, value_name = "CALLS", default_value_t = 120,
          value_parser = clap::value_parser!(u64).range(1..))]
    calls: u64,

    /// Client processes, run at the same time
    #[arg(short, long, value_name = "N", default_value_t = 2,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    clients: u32,

    /// Seconds the whole workload may take before it is stopped as failed
    #[arg(short, long, value_name = "SECONDS", default_value_t = 120,
          value_parser = clap::value_parser!(u64).range(1..))]
    timeout: u64,

    /// The role of a helper process (internal: binderload runs itself with it)
    #[command(subcommand)]
    role: Option<Role>,
}

/// The helper processes' roles.
#[derive(Subcommand, Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// The service manager
    #[command(hide = true)]
    Manager,
    /// The service
    #[command(hide = true)]
    Service,
    /// A client
    #[command(hide = true)]
    Client {
        /// The client's number
        #[arg(long)]
        id: u32,
    },
}

/// The name of this process in its messages (`binderload`, `binderload client 1`, ...).
static WHO: OnceLock<String> = OnceLock::new();

fn who() -> &'static str {
    WHO.get().map_or("binderload", String::as_str)
}

/// Says `msg` on standard error and exits with status 1 (any thread).
pub fn fail(msg: &str) -> ! {
    eprintln!("{}: error: {msg}", who());
    std::process::exit(1)
}

/// Sends one line to the parent (a helper's standard output); a helper
/// whose parent is gone has nothing left to do, so it exits.
pub fn report(line: &str) {
    let mut out = io::stdout().lock();
    if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
        std::process::exit(1);
    }
}

/// Blocks until standard input closes: a helper's signal to end.
pub fn wait_for_eof() {
    let _ = io::copy(&mut io::stdin().lock(), &mut io::sink());
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let name = match cli.role {
        None => "binderload".to_owned(),
        Some(Role::Manager) => "binderload manager".to_owned(),
        Some(Role::Service) => "binderload service".to_owned(),
        Some(Role::Client { id }) => format!("binderload client {id}"),
    };
    let _ = WHO.set(name);
    let result = match cli.role {
        None => run::run(&run::Options {
            device: cli.device,
            calls: cli.calls,
            clients: cli.clients,
            timeout: std::time::Duration::from_secs(cli.timeout),
        }),
        Some(Role::Manager) => manager::run(&cli.device),
        Some(Role::Service) => service::run(&cli.device),
        Some(Role::Client { id }) => client::run(&cli.device, id, cli.calls),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn cli_defaults_and_roles() {
        let cli = Cli::try_parse_from(["binderload"]).unwrap();
        assert_eq!(cli.device, "/dev/binderfs/binder");
        assert_eq!((cli.calls, cli.clients, cli.role), (120, 2, None));
        let cli = Cli::try_parse_from([
            "binderload",
            "-d",
            "/dev/x",
            "-n",
            "7",
            "client",
            "--id",
            "3",
        ])
        .unwrap();
        assert_eq!(cli.device, "/dev/x");
        assert_eq!(cli.calls, 7);
        assert_eq!(cli.role, Some(Role::Client { id: 3 }));
        // The device and the number of calls also follow a role.
        let cli = Cli::try_parse_from([
            "binderload",
            "client",
            "--id",
            "1",
            "-d",
            "/dev/y",
            "-n",
            "5",
        ])
        .unwrap();
        assert_eq!((cli.device.as_str(), cli.calls), ("/dev/y", 5));
        assert!(Cli::try_parse_from(["binderload", "--clients", "0"]).is_err());
        assert!(Cli::try_parse_from(["binderload", "--calls", "0"]).is_err());
    }

    #[test]
    fn helper_roles_are_hidden_from_help() {
        let help = Cli::command().render_help().to_string();
        assert!(!help.contains("Commands:"), "{help}");
        assert!(help.contains("--clients"));
    }
}
