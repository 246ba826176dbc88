//! The text form of type names: what every text output writes for a name.
//!
//! A malloc type's name is up to 31 bytes of anything in the kernel's binary stream. Every text
//! output, the kernel's and the tools', writes it with each byte that is not printable ASCII
//! (below `0x20`, `0x7f` and above) and each backslash as a backslash and three octal digits, as
//! the kernel's `seq_escape()` writes the paths of `/proc/mounts`: a name then never splits a
//! line, forges a table row, moves a terminal's cursor or reverses its text, and two different
//! names never look the same. The kernel writes its text files and the dtmalloc events' fields
//! this way, so a name read from the stream and the same name read from an event compare equal
//! in text form. The test vector `rust/kernel/malloc_type/name_text.rs` is shared with the
//! kernel's KUnit suite.
//!
//! The probe name of a name (what dtmalloc's probes and the selection files name it by) is
//! computed from the name's bytes ([`probe_name`]) and then written in text form too
//! ([`probe_name_text`]).

use std::borrow::Cow;

/// Returns the text form of `name`'s bytes.
///
/// ```
/// assert_eq!(memstat::text::name_text(b"nl\nrow"), "nl\\012row");
/// assert_eq!(memstat::text::name_text(b"a\\n"), "a\\134n");
/// assert_eq!(memstat::text::name_text("foo bar".as_bytes()), "foo bar");
/// ```
pub fn name_text(name: &[u8]) -> String {
    let mut out = String::with_capacity(name.len());
    for &b in name {
        if (0x20..0x7f).contains(&b) && b != b'\\' {
            out.push(char::from(b));
        } else {
            out.push('\\');
            for shift in [6, 3, 0] {
                out.push(char::from(b'0' + ((b >> shift) & 7)));
            }
        }
    }
    out
}

/// Whether `s` could be the text form of some name: printable ASCII only, and each backslash
/// followed by three octal digits that make a byte.
///
/// ```
/// assert!(memstat::text::is_name_text("nl\\012row"));
/// assert!(!memstat::text::is_name_text("nl\nrow"));
/// assert!(!memstat::text::is_name_text("a\\n"));
/// ```
pub fn is_name_text(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => {
                let Some(d) = b.get(i + 1..i + 4) else {
                    return false;
                };
                if !(b'0'..=b'3').contains(&d[0])
                    || !d[1..].iter().all(|c| (b'0'..=b'7').contains(c))
                {
                    return false;
                }
                i += 4;
            }
            0x20..=0x7e => i += 1,
            _ => return false,
        }
    }
    true
}

/// The bytes of the name whose text form is `s`, or `None` when `s` is not a text form
/// ([`is_name_text`]): the inverse of [`name_text`].
///
/// ```
/// use memstat::text::{name_from_text, name_text};
/// assert_eq!(name_from_text("nl\\012row").as_deref(), Some(&b"nl\nrow"[..]));
/// assert_eq!(name_from_text(&name_text(b"\xff\\")).as_deref(), Some(&b"\xff\\"[..]));
/// assert_eq!(name_from_text("a\\n"), None);
/// ```
pub fn name_from_text(s: &str) -> Option<Vec<u8>> {
    if !is_name_text(s) {
        return None;
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            // `is_name_text` checked the three digits and that they make a byte.
            let v = b[i + 1..i + 4]
                .iter()
                .fold(0u32, |v, d| v * 8 + u32::from(d - b'0'));
            out.push(u8::try_from(v).ok()?);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(out)
}

/// `b` as text: as it is when it is a text form already ([`is_name_text`]), as the kernel
/// writes the names in its text files and events, or else in its text form ([`name_text`]),
/// as an older kernel's raw bytes need. What the tools show of a field or a line read from
/// the kernel, so that what is a text form already is not escaped twice and nothing else
/// reaches a terminal raw.
///
/// ```
/// use memstat::text::as_text;
/// assert_eq!(as_text(b"nl\\012row"), "nl\\012row");
/// assert_eq!(as_text(b"esc\x1b[0m"), "esc\\033[0m");
/// // Not a text form (a backslash without three digits): escaped whole.
/// assert_eq!(as_text(b"a\\n\\012"), "a\\134n\\134012");
/// ```
pub fn as_text(b: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(b) {
        Ok(s) if is_name_text(s) => Cow::Borrowed(s),
        _ => Cow::Owned(name_text(b)),
    }
}

/// Whether byte `b` becomes `_` in a probe name: the ASCII white space that C's `isspace()`
/// matches in the "C" locale (space, `\t`, `\n`, `\v`, `\f`, `\r`), as dtmalloc(4) and the
/// kernel's `dtmalloc` events use. Every other byte stays, those of UTF-8 characters such as
/// U+00A0 (`c2 a0`) or U+0085 (`c2 85`) included: the test vector
/// `rust/kernel/malloc_type/probe_names.rs` is shared with the kernel.
pub fn is_probe_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// The probe name of the name `name`, as bytes: every byte of ASCII white space
/// ([`is_probe_space`]) replaced by `_`.
///
/// ```
/// assert_eq!(memstat::probe_name(b"foo bar\n"), b"foo_bar_");
/// ```
pub fn probe_name(name: &[u8]) -> Vec<u8> {
    name.iter()
        .map(|&b| if is_probe_space(b) { b'_' } else { b })
        .collect()
}

/// The text form of the probe name of `name`: [`name_text`] of [`probe_name`].
///
/// ```
/// assert_eq!(memstat::text::probe_name_text(b"nl\nrow\x1b"), "nl_row\\033");
/// ```
pub fn probe_name_text(name: &[u8]) -> String {
    name_text(&probe_name(name))
}
