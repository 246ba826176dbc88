//! Fuzz the /proc/malloc_stats stream parser and the list update on top.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = memstat::stream::parse_stream(data) {
        // What was parsed writes back to a valid stream with the same records, names
        // included (they are kept as bytes).
        let again = memstat::stream::write_stream(s.maxcpus, &s.types);
        let t = memstat::stream::parse_stream(&again).expect("rewritten stream parses");
        assert_eq!(t.maxcpus, s.maxcpus);
        assert_eq!(t.types.len(), s.types.len());
        for (a, b) in t.types.iter().zip(&s.types) {
            assert_eq!(
                (&a.name, a.id, a.zone, a.flags, &a.stats),
                (&b.name, b.id, b.zone, b.flags, &b.stats)
            );
        }
        // No two types of a parsed stream have the same id.
        let mut ids: Vec<u64> = s.types.iter().map(|t| t.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), s.types.len());
    }
    let mut list = memstat::MemoryTypeList::new();
    let _ = list.update_malloc_bytes(data);
    for t in &list {
        let _ = (t.bytes(), t.count(), t.percpu_memalloced(usize::MAX));
        // What a table shows of a name is its text form.
        assert!(memstat::text::is_name_text(t.name()));
        assert_eq!(t.name(), memstat::text::name_text(t.name_bytes()));
    }
    reorder(data);
});

/// Updates from the stream, then from its types in reverse order (the merge's hashed path),
/// then in the first order again (in step): each update keeps every entry, and each entry its
/// caller fields, as the same type (the same id and name).
fn reorder(data: &[u8]) {
    let Ok(s) = memstat::stream::parse_stream(data) else {
        return;
    };
    let mut list = memstat::MemoryTypeList::new();
    list.update_malloc_bytes(data)
        .expect("a stream that parses updates");
    let first: Vec<(u64, Vec<u8>)> = list
        .iter()
        .map(|t| (t.id(), t.name_bytes().to_vec()))
        .collect();
    for (i, t) in list.iter_mut().enumerate() {
        t.set_caller_uint64(0, i as u64 + 1).expect("slot 0 exists");
    }
    let mut reversed = s.types.clone();
    reversed.reverse();
    for types in [&reversed, &s.types] {
        let bytes = memstat::stream::write_stream(s.maxcpus, types);
        list.update_malloc_bytes(&bytes)
            .expect("a written stream updates");
        assert_eq!(list.len(), first.len());
        for t in &list {
            let tag = t.caller_uint64(0).expect("slot 0 exists");
            assert!(tag >= 1, "an entry lost its caller fields");
            let (id, name) = &first[tag as usize - 1];
            assert_eq!((t.id(), t.name_bytes()), (*id, name.as_slice()));
        }
    }
}
