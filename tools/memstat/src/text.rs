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
