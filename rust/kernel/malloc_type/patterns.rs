// SPDX-License-Identifier: GPL-2.0

// Patterns of probe names, one test vector for both sides: the kernel's KUnit suite and
// memstat's tests (tools/memstat/tests/patterns.rs) include this file.
//
// The rule: a pattern is 1 to 124 bytes of printable ASCII other than space (0x21..0x7e). `\NNN`,
// a backslash and three octal digits with a value from 001 to 377, stands for the byte NNN; a
// backslash not followed by three such digits makes the pattern invalid (`\000` too). The rest
// is glob_match() (lib/glob.c): `*` any run of bytes (also empty), `?` one byte, `[...]` one
// byte of a class, `[!...]` one byte not in it, `a-z` ranges, a `]` right after `[` or `[!` a
// member, and a `[` without a closing `]` matches itself. Matching is on bytes, against a
// probe name's bytes (probe_names.rs), as used by set_dtmalloc_probes, /proc/malloc_types_peak,
// `memstat --name` and `dtmalloc -t`.
//
// A pattern is read as its decoding into a glob_match() pattern: outside a class, a `\NNN` is
// the literal byte (`\` put in front of it), even when it is `*`, `?`, `[` or `\`; inside a
// class, the byte of a `\NNN` is put there as it is, and the class reads it as it reads that
// byte written raw: `[\141-\172]` is `[a-z]`, `[\200-\377]` any byte from 0x80, `[a\135` is
// `[a]` (the decoded `]` closes the class) and `[\041a]` is `[!a]`. Whether a `[` opens a class
// is decided on the decoded bytes, as glob_match() decides it; after a `[` without a closing
// `]`, what follows is read outside a class (`[\052` matches "[*" only).
//
// The exact pattern of a probe name matches that probe name and no other, and is a valid spec
// of set_dtmalloc_probes (which takes no raw `:` and no leading `!`): the probe name's text form
// (name_text.rs) with each of `*` `?` `[` `:` `!` also written as `\NNN`.

/// `(pattern, probe name, whether the pattern matches it)`, as bytes.
const PATTERN_MATCHES: &[(&[u8], &[u8], bool)] = &[
    // Literals: the whole probe name, bytes compared as they are.
    (b"devbuf", b"devbuf", true),
    (b"devbuf", b"devbu", false),
    (b"devbuf", b"devbufs", false),
    (b"devbuf", b"Devbuf", false),
    (b"foo_bar", b"foo_bar", true),
    (b"a:b", b"a:b", true),
    (b"!foo", b"!foo", true),
    (b"!foo", b"foo", false),
    (b"]", b"]", true),
    (b"-", b"-", true),
    (
        b"~\"#$%&'()+,-./;<=>@]^_`{|}",
        b"~\"#$%&'()+,-./;<=>@]^_`{|}",
        true,
    ),
    // `*`: any run of bytes, the empty one too.
    (b"*", b"a", true),
    (b"*", b"", true),
    (b"*", b"\xff\x01", true),
    (b"dev*", b"devbuf", true),
    (b"dev*", b"dev", true),
    (b"dev*", b"de", false),
    (b"*buf", b"devbuf", true),
    (b"*buf", b"bufx", false),
    (b"a*b*c", b"aXXbYYc", true),
    (b"a*b*c", b"aXXbYY", false),
    (b"a*b*c", b"abc", true),
    (b"**", b"x", true),
    (b"*a", b"aaaa", true),
    (b"*aaaaa", b"aaaaaaaaaa", true),
    (b"*aaaaa", b"aaaa", false),
    (
        b"*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b",
        b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        false,
    ),
    // `?`: exactly one byte, not one character.
    (b"?", b"a", true),
    (b"?", b"ab", false),
    (b"?", b"", false),
    (b"d?vbuf", b"devbuf", true),
    (b"?", b"\xc3\xa0", false),
    (b"??", b"\xc3\xa0", true),
    (b"?_la_carte", b"\xc3\xa0_la_carte", false),
    (b"??_la_carte", b"\xc3\xa0_la_carte", true),
    (b"*?", b"", false),
    // Classes: members, ranges, inverted, a `]` first.
    (b"[abc]", b"b", true),
    (b"[abc]", b"d", false),
    (b"[abc]", b"ab", false),
    (b"[a-c]x", b"bx", true),
    (b"[a-c]x", b"dx", false),
    (b"[!a-c]", b"d", true),
    (b"[!a-c]", b"b", false),
    (b"[!a-c]", b"", false),
    (b"[]]", b"]", true),
    (b"[]a]", b"a", true),
    (b"[]a]", b"b", false),
    (b"[!]]", b"]", false),
    (b"[!]]", b"x", true),
    (b"[]-a]", b"^", true),
    (b"[]-a]", b"b", false),
    (b"[a-]", b"-", true),
    (b"[a-]", b"b", false),
    (b"[-a]", b"-", true),
    (b"[!-]", b"-", false),
    (b"[z-a]", b"m", false),
    (b"[z-a]", b"z", false),
    (b"[*?]", b"?", true),
    (b"[*?]", b"x", false),
    (b"x[!0-9]*", b"xa1", true),
    (b"x[!0-9]*", b"x1a", false),
    // A `[` without a closing `]` matches itself; what follows is read outside a class.
    (b"[", b"[", true),
    (b"[abc", b"[abc", true),
    (b"[abc", b"a", false),
    (b"a[", b"a[", true),
    (b"[!", b"[!", true),
    (b"[]", b"[]", true),
    (b"[a-", b"[a-", true),
    (b"[*", b"[abc", true),
    (b"[?", b"[x", true),
    (b"esc\\033[31mred", b"esc\x1b[31mred", true),
    // `\NNN` outside a class: the literal byte, whatever it is.
    (b"\\052", b"*", true),
    (b"\\052", b"a", false),
    (b"\\077", b"?", true),
    (b"\\077", b"a", false),
    (b"\\133", b"[", true),
    (b"\\133a]", b"[a]", true),
    (b"\\133a]", b"a", false),
    (b"\\134", b"\\", true),
    (b"a\\134n", b"a\\n", true),
    (b"a\\134n", b"a_", false),
    (b"\\072", b":", true),
    (b"\\041foo", b"!foo", true),
    (b"\\135", b"]", true),
    (b"\\055", b"-", true),
    (b"\\141\\142", b"ab", true),
    (b"[\\052", b"[*", true),
    (b"[\\052", b"[x", false),
    // `\NNN` at the edges of its range: exactly three digits.
    (b"\\001", b"\x01", true),
    (b"\\001", b"\x02", false),
    (b"\\377", b"\xff", true),
    (b"\\377", b"\xfe", false),
    (b"\\0010", b"\x010", true),
    (b"\\1011", b"A1", true),
    (b"\\177", b"\x7f", true),
    (b"del\\177", b"del\x7f", true),
    // Bytes from 0x80, those of UTF-8 characters and others.
    (b"\\303\\240_la_carte", b"\xc3\xa0_la_carte", true),
    (b"rlo\\342\\200\\256evil", b"rlo\xe2\x80\xaeevil", true),
    (b"rlo*evil", b"rlo\xe2\x80\xaeevil", true),
    (b"rlo???evil", b"rlo\xe2\x80\xaeevil", true),
    (b"rlo?evil", b"rlo\xe2\x80\xaeevil", false),
    (b"\\377\\376", b"\xff\xfe", true),
    (b"*\\376", b"\xff\xfe", true),
    // `\NNN` inside a class: its byte, read by the class as it is.
    (b"[\\141-\\143]", b"b", true),
    (b"[\\141-\\143]", b"d", false),
    (b"[\\200-\\377]*", b"\xc3\xa0_la_carte", true),
    (b"[\\200-\\377]*", b"devbuf", false),
    (b"*[\\001-\\037\\177]*", b"esc\x1b[31mred", true),
    (b"*[\\001-\\037\\177]*", b"devbuf", false),
    (b"[\\052]", b"*", true),
    (b"[\\052]", b"a", false),
    (b"[\\134]", b"\\", true),
    (b"[\\135]", b"]", true),
    (b"[\\135", b"[]", true),
    (b"[a\\135x", b"ax", true),
    (b"[a\\135x", b"]x", false),
    (b"[\\041a]", b"b", true),
    (b"[\\041a]", b"a", false),
    (b"[a\\055c]", b"b", true),
    (b"[\\133]", b"[", true),
    // Probe names of names that break text formats.
    (b"nl_row_0_0_0", b"nl_row_0_0_0", true),
    (b"nl?row*", b"nl_row_0_0_0", true),
    (b"esc\\033\\13331mred", b"esc\x1b[31mred", true),
    (b"esc\\033\\13331mred", b"esc_[31mred", false),
    // The longest patterns: 124 bytes.
    (
        b"\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\
          \\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377",
        b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\
          \xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
        true,
    ),
    (
        b"****************************************************************\
          ***********************************************************a",
        b"a",
        true,
    ),
];

/// Patterns that are refused.
const BAD_PATTERNS: &[&[u8]] = &[
    // Empty, and 125 bytes.
    b"",
    b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\
      aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    b"\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\
      \\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377a",
    // White space and bytes that are not printable ASCII.
    b"foo bar",
    b" ",
    b"tab\there",
    b"nl\nrow",
    b"\x1b[31m",
    b"del\x7f",
    b"\x00",
    b"\xc3\xa0",
    b"\xff",
    // A backslash that is not `\NNN` with NNN from 001 to 377.
    b"\\",
    b"a\\",
    b"\\0",
    b"\\01",
    b"\\000",
    b"\\0000",
    b"\\400",
    b"\\777",
    b"\\8",
    b"\\08",
    b"\\n",
    b"\\x41",
    b"\\1a1",
    b"\\\\",
    b"\\\\134",
    b"[\\]",
];

/// `(probe name, its exact pattern)`, as bytes.
const EXACT_PATTERNS: &[(&[u8], &[u8])] = &[
    (b"devbuf", b"devbuf"),
    (b"foo_bar", b"foo_bar"),
    (b"nl_row_0_0_0", b"nl_row_0_0_0"),
    (b"esc\x1b[31mred", b"esc\\033\\13331mred"),
    (b"a\\n", b"a\\134n"),
    (b"*?[", b"\\052\\077\\133"),
    (b"[a-z]", b"\\133a-z]"),
    (b"a:b", b"a\\072b"),
    (b"!x!", b"\\041x\\041"),
    (b"]-^", b"]-^"),
    (
        b"~\"#$%&'()+,-./;<=>@]^_`{|}",
        b"~\"#$%&'()+,-./;<=>@]^_`{|}",
    ),
    (b"\xc3\xa0_la_carte", b"\\303\\240_la_carte"),
    (b"rlo\xe2\x80\xaeevil", b"rlo\\342\\200\\256evil"),
    (b"\x01\x7f", b"\\001\\177"),
    (
        b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\
          \xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
        b"\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\
          \\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377\\377",
    ),
];
