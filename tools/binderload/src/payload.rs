// SPDX-License-Identifier: Apache-2.0
//! The payloads of the workload and the line format the helper processes
//! report their counts in.
//!
//! Payloads are deterministic (a function of the client, the call and the
//! size), so the side that receives one can be checked against a fresh copy,
//! and FNV-1a gives both sides the same digest without a hashing crate.

use std::fmt;

/// Size of the small payloads: a few words, the smallest binder buffers.
pub const SMALL: usize = 48;
/// Size of the page-sized payloads (about 4 KiB once the parcel's header is added).
pub const PAGE: usize = 4096;
/// Size of the large payloads: 64 KiB, binder buffers that span many pages.
pub const LARGE: usize = 64 * 1024;
/// Size of the payloads hashed by `digest`: a large request, an 8-byte reply.
pub const DIGEST: usize = 16 * 1024;
/// Size of the content of the file descriptors `sendFd` passes: it fits a
/// pipe's buffer (64 KiB), so a client fills the pipe before sending it.
pub const FD_DATA: usize = 8 * 1024;

/// The kind of file descriptor a `sendFd` call passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FdKind {
    /// The read end of a pipe the client filled and closed its end of.
    Pipe,
    /// An unlinked temporary file the client wrote.
    File,
}

/// One call of a client's schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `echo` with a payload of this many bytes.
    Echo(usize),
    /// `digest` of a payload of this many bytes.
    Digest(usize),
    /// `newToken`, then `id()` on the token: a binder object from the service.
    Token,
    /// `callBack` with a new callback object and a payload of this many bytes:
    /// a binder object from the client, and a nested call back into it.
    CallBack(usize),
    /// `sendFd` with a file descriptor of this kind holding this many bytes:
    /// a file descriptor object the driver installs in the service.
    SendFd(FdKind, usize),
}

/// The number of calls in one cycle of the schedule.
const CYCLE: u64 = 8;

/// The call a client makes as its call number `seq`: the schedule cycles
/// through every size of echo, a digest, a token, a call-back and both kinds
/// of file descriptor (a quarter of the calls pass one), and the small
/// echo's size varies a little so that buffers of close sizes are used.
pub fn op(seq: u64) -> Op {
    match seq % CYCLE {
        0 => Op::Echo(SMALL + (seq / CYCLE % 16) as usize),
        1 => Op::Echo(PAGE),
        2 => Op::Echo(LARGE),
        3 => Op::Digest(DIGEST),
        4 => Op::Token,
        5 => Op::CallBack(PAGE),
        6 => Op::SendFd(FdKind::Pipe, FD_DATA),
        _ => Op::SendFd(FdKind::File, FD_DATA),
    }
}

/// The payload of `len` bytes for call `seq` of client `client`: an xorshift
/// stream seeded with both, so no two calls carry the same bytes.
pub fn payload(client: u32, seq: u64, len: usize) -> Vec<u8> {
    let mut state = (u64::from(client) << 32 ^ seq).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let take = (len - out.len()).min(8);
        out.extend_from_slice(&state.to_le_bytes()[..take]);
    }
    out
}

/// The 64-bit FNV-1a hash of `data`, as an AIDL `long`.
pub fn fnv1a(data: &[u8]) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in data {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash as i64
}

/// What one process did, as counts; sent to the parent as one line
/// `stats key=value ...` on the helper's standard output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// `echo` calls.
    pub echo: u64,
    /// `digest` calls.
    pub digest: u64,
    /// `newToken` calls (each returns a new binder object).
    pub tokens: u64,
    /// `id()` calls on tokens.
    pub token_calls: u64,
    /// `callBack` calls (each carries a new binder object).
    pub callbacks: u64,
    /// `ping` calls: the nested calls back into a client.
    pub pings: u64,
    /// `sendFd` calls (each carries a file descriptor).
    pub fds: u64,
    /// Payload bytes sent in requests (and through the passed fds).
    pub sent: u64,
    /// Payload bytes received in replies.
    pub received: u64,
    /// Service manager: services added.
    pub added: u64,
    /// Service manager: successful lookups.
    pub lookups: u64,
}

/// The accessor of one count of [`Stats`].
type Field = fn(&mut Stats) -> &mut u64;

/// The field names of [`Stats`] in its line format, in order, with accessors.
const FIELDS: [(&str, Field); 11] = [
    ("echo", |s| &mut s.echo),
    ("digest", |s| &mut s.digest),
    ("tokens", |s| &mut s.tokens),
    ("token_calls", |s| &mut s.token_calls),
    ("callbacks", |s| &mut s.callbacks),
    ("pings", |s| &mut s.pings),
    ("fds", |s| &mut s.fds),
    ("sent", |s| &mut s.sent),
    ("received", |s| &mut s.received),
    ("added", |s| &mut s.added),
    ("lookups", |s| &mut s.lookups),
];

impl Stats {
    /// The calls of the `ILoad` interface.
    pub fn load_calls(&self) -> u64 {
        self.echo + self.digest + self.tokens + self.callbacks + self.fds
    }

    /// Every transaction a client started (`ILoad` calls and token calls).
    pub fn transactions(&self) -> u64 {
        self.load_calls() + self.token_calls
    }

    /// Adds the counts of `other` to these.
    pub fn add(&mut self, other: &Stats) {
        let mut other = *other;
        for (_, field) in FIELDS {
            *field(self) += *field(&mut other);
        }
    }

    /// Parses a `stats key=value ...` line.
    pub fn parse(line: &str) -> Result<Stats, String> {
        let rest = line
            .strip_prefix("stats")
            .ok_or_else(|| format!("not a stats line: '{line}'"))?;
        let mut stats = Stats::default();
        for word in rest.split_whitespace() {
            let (key, value) = word
                .split_once('=')
                .ok_or_else(|| format!("bad word '{word}' in '{line}'"))?;
            let field = FIELDS
                .iter()
                .find(|(name, _)| *name == key)
                .ok_or_else(|| format!("unknown count '{key}' in '{line}'"))?
                .1;
            *field(&mut stats) = value
                .parse()
                .map_err(|_| format!("bad number '{value}' in '{line}'"))?;
        }
        Ok(stats)
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut copy = *self;
        write!(f, "stats")?;
        for (name, field) in FIELDS {
            write!(f, " {name}={}", field(&mut copy))?;
        }
        Ok(())
    }
}

/// `bytes` in bytes, KiB or MiB (one decimal), for the summary.
pub fn human(bytes: u64) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_known_values() {
        assert_eq!(fnv1a(b"") as u64, 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a") as u64, 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar") as u64, 0x8594_4171_f739_67e8);
    }

    #[test]
    fn payloads_are_deterministic_and_distinct() {
        for len in [0, 1, 7, 8, 9, SMALL, PAGE, LARGE] {
            let a = payload(1, 5, len);
            assert_eq!(a.len(), len);
            assert_eq!(a, payload(1, 5, len));
        }
        assert_ne!(payload(1, 5, PAGE), payload(1, 6, PAGE));
        assert_ne!(payload(1, 5, PAGE), payload(2, 5, PAGE));
        // Not a constant fill.
        let p = payload(0, 0, 256);
        assert!(p.iter().any(|&b| b != p[0]));
    }

    #[test]
    fn schedule_covers_every_op_and_size() {
        let ops: Vec<Op> = (0..8).map(op).collect();
        assert_eq!(
            ops,
            [
                Op::Echo(SMALL),
                Op::Echo(PAGE),
                Op::Echo(LARGE),
                Op::Digest(DIGEST),
                Op::Token,
                Op::CallBack(PAGE),
                Op::SendFd(FdKind::Pipe, FD_DATA),
                Op::SendFd(FdKind::File, FD_DATA),
            ]
        );
        assert_eq!(op(8), Op::Echo(SMALL + 1));
        // The guest test's 60 calls per client pass 14 fds, half of them
        // pipes: 2 x 14 fd transactions, each charging 2 `binder txn`
        // arrays (the fds to translate and their reservations).
        let fds: Vec<Op> = (0..60)
            .map(op)
            .filter(|o| matches!(o, Op::SendFd(..)))
            .collect();
        assert_eq!(fds.len(), 14);
        assert_eq!(
            fds.iter()
                .filter(|o| **o == Op::SendFd(FdKind::Pipe, FD_DATA))
                .count(),
            7
        );
    }

    #[test]
    fn stats_line_round_trip() {
        let stats = Stats {
            echo: 3,
            digest: 1,
            tokens: 1,
            token_calls: 1,
            callbacks: 1,
            pings: 1,
            fds: 1,
            sent: 70000,
            received: 69000,
            added: 1,
            lookups: 2,
        };
        let line = stats.to_string();
        assert_eq!(Stats::parse(&line), Ok(stats));
        assert_eq!(stats.load_calls(), 7);
        assert_eq!(stats.transactions(), 8);
        let mut sum = stats;
        sum.add(&stats);
        assert_eq!(sum.echo, 6);
        assert_eq!(sum.sent, 140000);
        assert!(Stats::parse("ready").is_err());
        assert!(Stats::parse("stats echo=x").is_err());
        assert!(Stats::parse("stats bogus=1").is_err());
        assert_eq!(Stats::parse("stats"), Ok(Stats::default()));
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human(48), "48 B");
        assert_eq!(human(2048), "2.0 KiB");
        assert_eq!(human(3 << 20), "3.0 MiB");
    }
}
