//! Command-line parsing for the commands, on clap.
//!
//! clap's `Parser::parse` prints `--help` and `--version` and exits with status 0 even when
//! standard output cannot take them (`memstat --help > /dev/full`): a script that captures the
//! help would take an empty file for success. Here a failed write is an error, status 1, with a
//! one-line message; a closed pipe (`memstat --help | head -1` after `head` left) ends quietly
//! with status 0, as the commands' other output does.

use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{ArgMatches, Parser};

use crate::error::io_text;

/// Parses the command line into `P`; on `--help`, `--version` or a usage error, prints what
/// clap prints and returns the exit status (see the module documentation). `prog` prefixes
/// the message of a failed write.
pub fn parse<P: Parser>(prog: &str) -> Result<P, ExitCode> {
    parse_with_matches(prog).map(|(p, _)| p)
}

/// [`parse`], also returning clap's matches (which tell whether an option was given or took
/// its default).
pub fn parse_with_matches<P: Parser>(prog: &str) -> Result<(P, ArgMatches), ExitCode> {
    let matches = P::command().try_get_matches().map_err(|e| exit(prog, &e))?;
    let p = P::from_arg_matches(&matches).map_err(|e| exit(prog, &e.format(&mut P::command())))?;
    Ok((p, matches))
}

/// Prints `e` as clap does and returns its exit status, or 1 when the help or version could
/// not be written.
fn exit(prog: &str, e: &clap::Error) -> ExitCode {
    if !matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        // A usage error, on standard error; there is nothing to do when that fails.
        let _ = e.print();
        return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
    }
    let text = e.render();
    let text = if io::stdout().is_terminal() {
        text.ansi().to_string()
    } else {
        text.to_string()
    };
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(io::stderr(), "{prog}: stdout: {}", io_text(&e));
            ExitCode::FAILURE
        }
    }
}
