//! Fuzz the parsers of the kernel's small text files that memstat reads besides the stream:
//! `/proc/slabinfo`, `vm.malloc_zone_sizes` and `vm.malloc_zone_memuse`, and the reconciliation
//! of the kmalloc caches built from them, which must neither panic nor overflow.
//!
//! The input is split at its first NUL: the part before it is read as the two sysctls (one
//! after the other, split at the first newline), the part after as a slabinfo file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memstat::coverage::{parse_zone_memuse, Coverage};
use memstat::slab::parse_slabinfo;
use memstat::ZoneSizes;

fuzz_target!(|data: &[u8]| {
    let (sysctls, slabinfo) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let caches = parse_slabinfo(slabinfo).unwrap_or_default();
    let Ok(text) = std::str::from_utf8(sysctls) else {
        return;
    };
    let (sizes, memuse) = text.split_once('\n').unwrap_or((text, ""));
    let (Ok(zones), Ok(memuse)) = (ZoneSizes::parse(sizes), parse_zone_memuse(memuse)) else {
        return;
    };
    match Coverage::new(&zones, &memuse, &caches) {
        Ok(c) => {
            assert_eq!(c.classes.len(), zones.count());
            let typed = c.classes.iter().map(|k| u128::from(k.typed_bytes)).sum::<u128>();
            assert_eq!(u128::from(c.typed_bytes()), typed.min(u128::from(u64::MAX)));
            let _ = (c.untyped_bytes(), c.typed_percent());
            let _ = memstat::report::coverage_text(&c, true);
        }
        // The only inputs refused: a size class named twice (or out of order), or a count of
        // values that is not the count of classes.
        Err(e) => assert!(
            zones.sizes().windows(2).any(|w| w[0] >= w[1]) || memuse.len() != zones.count(),
            "{e}"
        ),
    }
});
