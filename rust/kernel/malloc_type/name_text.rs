// SPDX-License-Identifier: GPL-2.0

// The text form of malloc type names, one test vector for both sides: the kernel's KUnit suite
// `rust_malloc_type_trace` (rust/kernel/malloc_type/trace.rs) and memstat's tests
// (tools/memstat/tests/name_text.rs) include this file.
//
// The rule: a name is up to 31 bytes of anything, kept as it is in the binary stream; every text
// output (/proc/malloc_types, the dtmalloc events' name and probe fields, dtmalloc_probes, the
// selection files, the tools' tables and event lines) writes it, and its probe name, with each
// byte that is not printable ASCII (below 0x20, 0x7f and above) and each backslash as a
// backslash and three octal digits, as seq_escape() writes the paths of /proc/mounts
// (string_escape_mem() with ESCAPE_OCTAL | ESCAPE_NAP | ESCAPE_APPEND and "\\"). A name then
// never splits a line, forges a row, moves a terminal's cursor or reverses its text, and two
// different names never look the same. The probe name is computed from the name's bytes first
// (probe_names.rs), then written the same way.

/// `(name, text form)` pairs, as bytes.
const NAME_TEXTS: &[(&[u8], &[u8])] = &[
    (b"foo bar", b"foo bar"),
    (b"devbuf", b"devbuf"),
    (b"nl\nrow 0 0 0", b"nl\\012row 0 0 0"),
    (b"esc\x1b[31mred", b"esc\\033[31mred"),
    (b"tab\there", b"tab\\011here"),
    (b"back\\slash", b"back\\134slash"),
    // A literal backslash-n and a real newline: two names, two texts.
    (b"a\\n", b"a\\134n"),
    (b"a\n", b"a\\012"),
    (b"del\x7f", b"del\\177"),
    (b"\x01", b"\\001"),
    (
        b"~!\"#$%&'()*+,-./:;<=>?@[]^_`{|}",
        b"~!\"#$%&'()*+,-./:;<=>?@[]^_`{|}",
    ),
    // "à la carte": 'à' is c3 a0.
    (b"\xc3\xa0 la carte", b"\\303\\240 la carte"),
    // U+202E (right-to-left override, e2 80 ae) would reverse the rest of a terminal's line.
    (b"rlo\xe2\x80\xaeevil", b"rlo\\342\\200\\256evil"),
    // Not UTF-8 at all.
    (b"\xff\xfe", b"\\377\\376"),
];
