//! Fuzz the name rule and the pattern matcher: the text form of any bytes is printable ASCII
//! that decodes back to them, the exact pattern of a probe name matches it and no other, and
//! no pattern or name makes the checker or the matcher panic.
//!
//! The input is a name (its length in the first byte, at most 63) followed by bytes used as a
//! pattern and as another name.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memstat::pattern::{self, exact_pattern, Pattern, PATTERN_MAX};
use memstat::text::{as_text, is_name_text, name_from_text, name_text, probe_name};

fuzz_target!(|data: &[u8]| {
    let Some((&len, rest)) = data.split_first() else {
        return;
    };
    let len = usize::from(len & 63).min(rest.len());
    let (name, rest) = rest.split_at(len);

    // The text form: one line of printable ASCII, lossless, not escaped twice.
    let text = name_text(name);
    assert!(text.bytes().all(|b| (0x20..0x7f).contains(&b)), "{text:?}");
    assert!(is_name_text(&text));
    assert_eq!(name_from_text(&text).as_deref(), Some(name));
    assert_eq!(as_text(text.as_bytes()), text);

    // The exact pattern of the probe name of a name a type can have (1 to 31 bytes, no NUL:
    // a C string): valid, a spec, and it matches that probe name only.
    let probe = probe_name(name);
    let exact = exact_pattern(&probe);
    if !probe.is_empty() && probe.len() < memstat::stream::MAX_NAME && !probe.contains(&0) {
        assert!(exact.len() <= PATTERN_MAX, "{exact}");
        let p = Pattern::new(&exact).expect("an exact pattern is a pattern");
        p.check_spec().expect("an exact pattern is a spec");
        assert!(p.matches(&probe), "{exact}");
        let other = probe_name(&rest[..rest.len().min(31)]);
        assert_eq!(
            p.matches(&other),
            other == probe,
            "{exact} against {other:?}"
        );
    }

    // Any bytes as a pattern: checked or refused, and matched, without a panic.
    if let Ok(p) = Pattern::new(rest) {
        let _ = (p.matches(name), p.matches(&probe), p.check_spec());
        assert!(pattern::check(rest).is_ok());
    }
    let _ = pattern::glob_match(rest, name);
});
