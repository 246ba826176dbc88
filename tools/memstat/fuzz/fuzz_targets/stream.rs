//! Fuzz the /proc/malloc_stats stream parser and the list update on top.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = memstat::stream::parse_stream(data) {
        // What was parsed writes back to a valid stream with the same
        // records (names may differ: lossy UTF-8 is re-encoded).
        let again = memstat::stream::write_stream(s.maxcpus, &s.types);
        let t = memstat::stream::parse_stream(&again).expect("rewritten stream parses");
        assert_eq!(t.maxcpus, s.maxcpus);
        assert_eq!(t.types.len(), s.types.len());
        for (a, b) in t.types.iter().zip(&s.types) {
            assert_eq!(
                (a.id, a.zone, a.flags, &a.stats),
                (b.id, b.zone, b.flags, &b.stats)
            );
        }
    }
    let mut list = memstat::MemoryTypeList::new();
    let _ = list.update_malloc_bytes(data);
    for t in &list {
        let _ = (t.bytes(), t.count(), t.percpu_memalloced(usize::MAX));
    }
});
