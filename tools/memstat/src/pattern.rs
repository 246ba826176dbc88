//! Patterns of probe names: what tracefs's `set_dtmalloc_probes`, `/proc/malloc_types_peak`,
//! `memstat --name` and `dtmalloc -t`'s selection take, one rule for the kernel and the tools.
//!
//! A pattern is 1 to [`PATTERN_MAX`] bytes of printable ASCII other than space (`0x21..=0x7e`).
//! `\NNN`, a backslash and three octal digits with a value from 001 to 377, stands for the byte
//! NNN (what the text form of a name writes, [`crate::text`]); a backslash not followed by three
//! such digits makes the pattern invalid. The rest is the kernel's `glob_match()` (lib/glob.c):
//! `*` any run of bytes, `?` one byte, `[...]` one byte of a class, `[!...]` one byte not in it,
//! `a-z` ranges, a `]` right after `[` or `[!` a member, and a `[` without a closing `]` is a
//! literal `[`. Matching is on bytes, against a probe name's bytes.
//!
//! The pattern is read as the kernel reads it: decoded into a `glob_match()` pattern, in which
//! a `\NNN` outside a class is the literal byte (even `*`, `?`, `[` or `\`), and a `\NNN`
//! inside a class is its byte put there as it is, read by the class as that byte would be had
//! it been written raw (`[\141-\172]` is `[a-z]`, `[\200-\377]` any byte from 0x80). Whether a
//! `[` opens a class is decided on the decoded bytes, as `glob_match()` decides it; after a `[`
//! without a closing `]`, what follows is read outside a class.
//!
//! The *exact pattern* of a probe name ([`exact_pattern`]) matches that probe name and no
//! other: its text form with `*`, `?`, `[`, `:` and `!` also written as `\NNN`. It is a valid
//! spec of `set_dtmalloc_probes` (no raw `:`, no leading `!`).
//!
//! The test vector `rust/kernel/malloc_type/patterns.rs` is shared with the kernel's KUnit
//! suite.
//!
//! ```
//! use memstat::pattern::{exact_pattern, Pattern};
//! let p = Pattern::new("dev*").unwrap();
//! assert!(p.matches(b"devbuf") && !p.matches(b"temp"));
//! let p = Pattern::new("[\\200-\\377]*").unwrap();
//! assert!(p.matches("à_la_carte".as_bytes()));
//! assert_eq!(exact_pattern(b"esc\x1b[1m"), "esc\\033\\1331m");
//! assert!(Pattern::new("foo bar").is_err());
//! ```

use std::fmt;

use crate::text::name_text;

/// The longest pattern, in bytes: the exact pattern of a 31-byte probe name whose every byte is
/// written `\NNN`.
pub const PATTERN_MAX: usize = 124;

/// Why a pattern is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatternError {
    /// No bytes at all.
    Empty,
    /// More than [`PATTERN_MAX`] bytes.
    TooLong {
        /// The pattern's length.
        len: usize,
    },
    /// A byte that is not printable ASCII, or a space.
    Byte {
        /// Its offset in the pattern.
        offset: usize,
        /// The byte.
        byte: u8,
    },
    /// A backslash that is not followed by three octal digits from 001 to 377.
    Escape {
        /// Its offset in the pattern.
        offset: usize,
    },
    /// A raw `:` in a spec of `set_dtmalloc_probes`, where it separates the probe.
    Colon {
        /// Its offset in the pattern.
        offset: usize,
    },
    /// A spec of `set_dtmalloc_probes` that starts with a raw `!`, which removes a spec.
    Bang,
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            PatternError::Empty => write!(f, "a pattern is 1 to {PATTERN_MAX} bytes, not empty"),
            PatternError::TooLong { len } => write!(
                f,
                "a pattern is 1 to {PATTERN_MAX} bytes, this one is {len} bytes long"
            ),
            PatternError::Byte { offset, byte } => write!(
                f,
                "{} at offset {offset}: a pattern is printable ASCII without spaces (write \\{byte:03o})",
                match byte {
                    b' ' => "a space".to_string(),
                    b => format!("byte {b:#04x}"),
                },
            ),
            PatternError::Escape { offset } => write!(
                f,
                "backslash at offset {offset}: a backslash starts \\NNN, three octal digits \
                 from 001 to 377 (a backslash itself is \\134)"
            ),
            PatternError::Colon { offset } => write!(
                f,
                "':' at offset {offset}: a ':' separates the probe in a spec (write \\072)"
            ),
            PatternError::Bang => {
                write!(f, "a leading '!' removes a spec (write \\041)")
            }
        }
    }
}

impl std::error::Error for PatternError {}

/// A byte of a pattern: written as it is, or decoded from `\NNN`.
#[derive(Debug, Clone, Copy)]
struct Unit {
    byte: u8,
    escaped: bool,
}

/// The bytes of pattern `p`, each `\NNN` decoded; `p` checked by the rule.
fn units(p: &[u8]) -> Result<Vec<Unit>, PatternError> {
    if p.is_empty() {
        return Err(PatternError::Empty);
    }
    if p.len() > PATTERN_MAX {
        return Err(PatternError::TooLong { len: p.len() });
    }
    let mut out = Vec::with_capacity(p.len());
    let mut i = 0;
    while i < p.len() {
        let b = p[i];
        if !(0x21..0x7f).contains(&b) {
            return Err(PatternError::Byte { offset: i, byte: b });
        }
        if b != b'\\' {
            out.push(Unit {
                byte: b,
                escaped: false,
            });
            i += 1;
            continue;
        }
        let digits = p.get(i + 1..i + 4).filter(|d| {
            (b'0'..=b'3').contains(&d[0]) && d[1..].iter().all(|c| (b'0'..=b'7').contains(c))
        });
        let byte = digits
            .map(|d| d.iter().fold(0u8, |v, c| (v << 3) | (c - b'0')))
            .filter(|&v| v != 0)
            .ok_or(PatternError::Escape { offset: i })?;
        out.push(Unit {
            byte,
            escaped: true,
        });
        i += 4;
    }
    Ok(out)
}

/// Matches byte `c` against the class that starts after a `[` in `cls` (a `glob_match()`
/// pattern): `Some((whether c is matched, the bytes of the class up to and with its closing
/// ']'))`, or `None` when the class has no closing `]` (the `[` is then a literal).
fn class_match(cls: &[u8], c: u8) -> Option<(bool, usize)> {
    let inverted = cls.first() == Some(&b'!');
    let mut i = usize::from(inverted);
    let mut matched = false;
    let mut a = cls.get(i).copied();
    i += 1;
    loop {
        let lo = a?;
        let mut hi = lo;
        if cls.get(i) == Some(&b'-') && cls.get(i + 1) != Some(&b']') {
            hi = *cls.get(i + 1)?;
            i += 2;
        }
        if lo <= c && c <= hi {
            matched = true;
        }
        a = cls.get(i).copied();
        i += 1;
        if a == Some(b']') {
            return Some((matched != inverted, i));
        }
    }
}

/// The kernel's `glob_match()` (lib/glob.c) on byte slices: whether `pat` matches all of `s`.
///
/// `*` matches any run of bytes, `?` one byte, `[...]` a class (`[!...]` inverted, ranges,
/// a leading `]` a member; without a closing `]` the `[` is literal), `\` makes the next byte
/// literal. The end of a slice is where `glob_match()` sees the string's NUL. At most
/// quadratic, as the kernel's.
pub fn glob_match(pat: &[u8], s: &[u8]) -> bool {
    enum Step {
        Next,
        Literal(Option<u8>),
        Backtrack,
    }
    let (mut p, mut i) = (0usize, 0usize);
    // Where to resume after a mismatch: the pattern after the last `*`, and the byte of `s`
    // that `*` stopped at.
    let mut back: Option<(usize, usize)> = None;
    loop {
        let c = s.get(i).copied();
        let d = pat.get(p).copied();
        p += 1;
        i += 1;
        let step = match d {
            Some(b'?') => {
                if c.is_none() {
                    return false;
                }
                Step::Next
            }
            Some(b'*') => {
                if p >= pat.len() {
                    return true;
                }
                i -= 1;
                back = Some((p, i));
                Step::Next
            }
            Some(b'[') => match c {
                None => return false,
                Some(c) => match class_match(pat.get(p..).unwrap_or_default(), c) {
                    Some((true, len)) => {
                        p += len;
                        Step::Next
                    }
                    Some((false, _)) => Step::Backtrack,
                    None => Step::Literal(d),
                },
            },
            Some(b'\\') => {
                let d = pat.get(p).copied();
                p += 1;
                Step::Literal(d)
            }
            d => Step::Literal(d),
        };
        match step {
            Step::Next => continue,
            Step::Literal(d) if c == d => {
                if d.is_none() {
                    return true;
                }
                continue;
            }
            Step::Literal(_) | Step::Backtrack => {}
        }
        match back {
            Some((bp, bi)) if c.is_some() => {
                p = bp;
                i = bi + 1;
                back = Some((bp, i));
            }
            _ => return false,
        }
    }
}

/// A checked pattern, ready to match probe names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    /// The pattern as written.
    text: String,
    /// Its `glob_match()` pattern.
    glob: Vec<u8>,
}

impl Pattern {
    /// Checks `p` by the rule and prepares it for matching.
    ///
    /// Errors: the first thing of `p` that breaks the rule ([`PatternError`]).
    pub fn new(p: impl AsRef<[u8]>) -> Result<Pattern, PatternError> {
        let p = p.as_ref();
        let units = units(p)?;
        let mut glob = Vec::with_capacity(2 * units.len());
        let mut k = 0;
        while k < units.len() {
            let u = units[k];
            k += 1;
            if u.escaped {
                // A literal byte, whatever it is.
                glob.extend_from_slice(&[b'\\', u.byte]);
                continue;
            }
            if u.byte != b'[' {
                glob.push(u.byte);
                continue;
            }
            // A class, if the decoded bytes after `[` close one: its bytes as they are.
            let rest: Vec<u8> = units[k..].iter().map(|u| u.byte).collect();
            match class_match(&rest, 0) {
                Some((_, len)) => {
                    glob.push(b'[');
                    glob.extend_from_slice(&rest[..len]);
                    k += len;
                }
                None => glob.extend_from_slice(b"\\["),
            }
        }
        Ok(Pattern {
            // Checked: printable ASCII.
            text: String::from_utf8_lossy(p).into_owned(),
            glob,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the pattern matches all of `name`, a probe name's (or a name's) bytes.
    pub fn matches(&self, name: &[u8]) -> bool {
        glob_match(&self.glob, name)
    }

    /// Checks that the pattern can be a spec of `set_dtmalloc_probes`: no raw `:` (which
    /// separates the probe, `PATTERN:malloc`) and no leading `!` (which removes a spec).
    ///
    /// Errors: [`PatternError::Colon`], [`PatternError::Bang`].
    pub fn check_spec(&self) -> Result<(), PatternError> {
        if self.text.starts_with('!') {
            return Err(PatternError::Bang);
        }
        match self.text.find(':') {
            Some(offset) => Err(PatternError::Colon { offset }),
            None => Ok(()),
        }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Checks `p` by the rule of patterns.
///
/// Errors: the first thing of `p` that breaks the rule ([`PatternError`]).
pub fn check(p: &[u8]) -> Result<(), PatternError> {
    units(p).map(|_| ())
}

/// Whether pattern `p` matches all of `name`; `false` for a pattern the rule refuses.
pub fn matches(p: &[u8], name: &[u8]) -> bool {
    Pattern::new(p).is_ok_and(|p| p.matches(name))
}

/// The exact pattern of the probe name `probe`: the pattern that matches it and no other
/// probe name, and a valid spec of `set_dtmalloc_probes`. Its text form ([`name_text`]) with
/// each of `*`, `?`, `[`, `:` and `!` also written as `\NNN` (and a space, which no probe name
/// holds, as `\040`), so at most [`PATTERN_MAX`] bytes for a probe name of up to 31. A probe
/// name holds no NUL (a name is a C string): a NUL would be `\000`, which no pattern has.
///
/// ```
/// use memstat::pattern::exact_pattern;
/// assert_eq!(exact_pattern(b"foo_bar"), "foo_bar");
/// assert_eq!(exact_pattern(b"!a:*?[b]"), "\\041a\\072\\052\\077\\133b]");
/// assert_eq!(exact_pattern(b"nl\n\\"), "nl\\012\\134");
/// ```
pub fn exact_pattern(probe: &[u8]) -> String {
    let mut out = String::with_capacity(probe.len());
    for &b in probe {
        match b {
            b'*' | b'?' | b'[' | b':' | b'!' | b' ' => {
                out.push('\\');
                for shift in [6, 3, 0] {
                    out.push(char::from(b'0' + ((b >> shift) & 7)));
                }
            }
            _ => out.push_str(&name_text(&[b])),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoded_globs() {
        let g = |p: &str| String::from_utf8(Pattern::new(p).unwrap().glob).unwrap();
        assert_eq!(g("a\\052b"), "a\\*b");
        assert_eq!(g("[\\141-\\143]"), "[a-c]");
        assert_eq!(g("[abc"), "\\[abc");
        assert_eq!(g("[\\052"), "\\[\\*");
        assert_eq!(g("[]]x"), "[]]x");
    }

    #[test]
    fn errors() {
        let e = |p: &[u8]| Pattern::new(p).unwrap_err().to_string();
        assert_eq!(
            e(b"foo bar"),
            "a space at offset 3: a pattern is printable ASCII without spaces (write \\040)"
        );
        assert_eq!(
            e(b"a\x1b"),
            "byte 0x1b at offset 1: a pattern is printable ASCII without spaces (write \\033)"
        );
        assert!(e(b"a\\n").starts_with("backslash at offset 1: "));
        assert_eq!(e(b""), "a pattern is 1 to 124 bytes, not empty");
        assert_eq!(
            e(&[b'a'; 125]),
            "a pattern is 1 to 124 bytes, this one is 125 bytes long"
        );
        let spec = |p: &str| Pattern::new(p).unwrap().check_spec();
        assert_eq!(spec("a:b"), Err(PatternError::Colon { offset: 1 }));
        assert_eq!(spec("!a"), Err(PatternError::Bang));
        assert_eq!(spec("a!\\072"), Ok(()));
    }
}
