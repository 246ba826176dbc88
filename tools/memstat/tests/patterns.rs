//! Patterns of probe names: the same test vector as the kernel's KUnit suite.

use memstat::pattern::{self, exact_pattern, Pattern, PATTERN_MAX};
use memstat::text::name_text;

include!("../../../rust/kernel/malloc_type/patterns.rs");
include!("../../../rust/kernel/malloc_type/probe_names.rs");

#[test]
fn shared_vector_matches() {
    for &(pat, probe, want) in PATTERN_MATCHES {
        let p = Pattern::new(pat).unwrap_or_else(|e| panic!("{}: {e}", name_text(pat)));
        assert_eq!(
            p.matches(probe),
            want,
            "{} against {}",
            name_text(pat),
            name_text(probe)
        );
        assert_eq!(pattern::matches(pat, probe), want);
    }
}

#[test]
fn shared_vector_refuses() {
    for &pat in BAD_PATTERNS {
        assert!(pattern::check(pat).is_err(), "{} accepted", name_text(pat));
        assert!(!pattern::matches(pat, pat));
    }
}

/// The vector's edge lengths are what it says: 124 bytes accepted, 125 refused.
#[test]
fn shared_vector_lengths() {
    let longest = PATTERN_MATCHES.iter().map(|p| p.0.len()).max();
    assert_eq!(longest, Some(PATTERN_MAX));
    let too_long: Vec<usize> = BAD_PATTERNS
        .iter()
        .map(|p| p.len())
        .filter(|&l| l > PATTERN_MAX)
        .collect();
    assert_eq!(too_long, [PATTERN_MAX + 1, PATTERN_MAX + 1]);
}

/// Each exact pattern is the vector's, matches its probe name and no other probe name of the
/// vectors, is a valid spec of `set_dtmalloc_probes`, and fits.
#[test]
fn shared_vector_exact_patterns() {
    let mut probes: Vec<&[u8]> = EXACT_PATTERNS.iter().map(|e| e.0).collect();
    probes.extend(PATTERN_MATCHES.iter().map(|m| m.1));
    probes.extend(PROBE_NAMES.iter().map(|p| p.1));
    for &(probe, exact) in EXACT_PATTERNS {
        assert_eq!(
            exact_pattern(probe).as_bytes(),
            exact,
            "{}",
            name_text(probe)
        );
    }
    for &probe in &probes {
        let exact = exact_pattern(probe);
        if probe.is_empty() {
            continue;
        }
        let p = Pattern::new(&exact).unwrap_or_else(|e| panic!("{exact}: {e}"));
        p.check_spec().unwrap();
        assert!(exact.len() <= 4 * probe.len());
        for &other in &probes {
            assert_eq!(
                p.matches(other),
                other == probe,
                "{exact} against {other:?}"
            );
        }
    }
}
