// SPDX-License-Identifier: GPL-2.0

// The probe names of malloc type names, one test vector for both sides: the kernel's KUnit suite
// `rust_malloc_type_trace` (rust/kernel/malloc_type/trace.rs) and memstat's tests
// (tools/memstat/tests/probe_names.rs) include this file.
//
// The rule, dtmalloc(4)'s: each byte that C's `isspace()` matches in the "C" locale (space, \t,
// \n, \v, \f, \r) becomes `_`; every other byte stays, those of UTF-8 characters included. The
// kernel's own `isspace()` also matches 0xa0 (and 0x85 is white space in Unicode): both are bytes
// of many UTF-8 characters, which must not be cut in half.

/// `(name, probe name)` pairs, as bytes.
const PROBE_NAMES: &[(&[u8], &[u8])] = &[
    (b"foo bar", b"foo_bar"),
    (b"devbuf", b"devbuf"),
    (b"tab\tand space", b"tab_and_space"),
    (b" \t\n\x0b\x0c\r", b"______"),
    (b"   ", b"___"),
    (b"a\x1fb\x7fc", b"a\x1fb\x7fc"),
    // "à la carte": 'à' is c3 a0.
    (b"\xc3\xa0 la carte", b"\xc3\xa0_la_carte"),
    // "Šárka": 'Š' is c5 a0.
    (b"\xc5\xa0\xc3\xa1rka", b"\xc5\xa0\xc3\xa1rka"),
    // U+00A0 (no-break space, c2 a0) and U+0085 (next line, c2 85): Unicode white space, kept.
    (b"no\xc2\xa0break", b"no\xc2\xa0break"),
    (b"next\xc2\x85line", b"next\xc2\x85line"),
    // "…" is e2 80 a6; "ą" is c4 85.
    (b"wait\xe2\x80\xa6 \xc4\x85", b"wait\xe2\x80\xa6_\xc4\x85"),
];
