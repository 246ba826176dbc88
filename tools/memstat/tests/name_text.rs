//! The text form of names: the same test vector as the kernel's KUnit suite
//! `rust_malloc_type_trace`.

use memstat::text::{is_name_text, name_text};

include!("../../../rust/kernel/malloc_type/name_text.rs");

#[test]
fn shared_vector() {
    for &(name, text) in NAME_TEXTS {
        let got = name_text(name);
        assert_eq!(got.as_bytes(), text, "text form of {name:?}");
        assert!(is_name_text(&got), "{got:?}");
    }
}

#[test]
fn text_form_is_one_line_of_printable_ascii() {
    for b in 0..=255u8 {
        let t = name_text(&[b]);
        assert!(
            t.bytes().all(|c| (0x20..0x7f).contains(&c)),
            "{b:#x}: {t:?}"
        );
    }
}

#[test]
fn text_form_is_injective() {
    let mut seen = std::collections::HashSet::new();
    for a in 0..=255u8 {
        for b in [b'0', b'\\', b'n', 0x0a, 0xff] {
            assert!(seen.insert(name_text(&[a, b])), "{a:#x} {b:#x}");
        }
    }
}
