//! Probe names: the same test vector as the kernel's KUnit suite `rust_malloc_type_trace`.

use memstat::text::{is_name_text, probe_name_text};
use memstat::{is_probe_space, probe_name};

include!("../../../rust/kernel/malloc_type/probe_names.rs");

#[test]
fn shared_vector() {
    for &(name, probe) in PROBE_NAMES {
        assert_eq!(probe_name(name), probe, "probe name of {name:?}");
        // Its text form is the text form of the probe name's bytes.
        let text = probe_name_text(name);
        assert!(is_name_text(&text), "{text:?}");
        assert_eq!(text, memstat::text::name_text(probe));
    }
}

#[test]
fn probe_space_is_ascii() {
    for b in [b' ', b'\t', b'\n', 0x0b, 0x0c, b'\r'] {
        assert!(is_probe_space(b));
    }
    // U+00A0 and U+0085 are c2 a0 and c2 85 in UTF-8: their bytes stay.
    for b in [0xa0, 0x85, 0xc2, b'_', b'a', 0x1f, 0x7f, 0] {
        assert!(!is_probe_space(b), "{b:#x}");
    }
}
