//! Probe names: the same test vector as the kernel's KUnit suite `rust_malloc_type_trace`.

use memstat::{is_probe_space, probe_name};

include!("../../../rust/kernel/malloc_type/probe_names.rs");

#[test]
fn shared_vector() {
    for &(name, probe) in PROBE_NAMES {
        let name = std::str::from_utf8(name).expect("the vector's names are UTF-8");
        assert_eq!(probe_name(name).as_bytes(), probe, "probe name of {name:?}");
        // A probe name can be put in a filter, unless it holds a control character.
        let p = std::str::from_utf8(probe).unwrap();
        assert_eq!(
            memstat::trace::valid_probe_name(p),
            !p.chars().any(|c| c.is_ascii_control()),
            "{p:?}"
        );
    }
}

#[test]
fn probe_space_is_ascii() {
    for c in [' ', '\t', '\n', '\x0b', '\x0c', '\r'] {
        assert!(is_probe_space(c));
    }
    for c in ['\u{a0}', '\u{85}', '\u{2028}', '\u{3000}', '_', 'a', '\x1f'] {
        assert!(!is_probe_space(c), "{c:?}");
    }
}
