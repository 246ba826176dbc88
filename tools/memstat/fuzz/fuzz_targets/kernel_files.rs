//! Fuzz the parsers of the kernel's small text files that memstat reads besides the stream:
//! `/proc/slabinfo`, `vm.malloc_zone_sizes` and `vm.malloc_zone_memuse`, and the reconciliation
//! of the kmalloc caches built from them, which must neither panic nor overflow.
//!
//! The input is split at its first NUL: the part before it is read as the two sysctls (one
//! after the other, split at the first newline), the part after as a slabinfo file. Each cache's
//! `<num_objs>` and `<num_slabs>` stand for the free objects of its sheaves and of KASAN's
//! quarantine (SLUB's sysfs files, which slabinfo has not), any value the input gives.
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
    let mut caches = parse_slabinfo(slabinfo).unwrap_or_default();
    for c in &mut caches {
        (c.sheaf_objs, c.quarantine_objs) = (c.total_objs, c.slabs);
    }
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
            // What a class's caches give out is in use, free in the sheaves or quarantined:
            // never more nor less, whatever the counts of the free objects say.
            for k in &c.classes {
                let given: u128 = caches
                    .iter()
                    .filter(|s| {
                        s.object_size == k.size
                            && memstat::coverage::cache_kind(&s.name)
                                == Some(memstat::coverage::CacheKind::Kmalloc)
                    })
                    .map(|s| u128::from(s.active_objs) * u128::from(s.object_size))
                    .sum();
                let parts = [k.cache_bytes, k.sheaf_bytes, k.quarantine_bytes];
                if parts.iter().all(|&b| b < u64::MAX) {
                    assert_eq!(parts.iter().map(|&b| u128::from(b)).sum::<u128>(), given);
                }
            }
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
