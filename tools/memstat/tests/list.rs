mod common;

use common::*;
use memstat::stream::write_stream;
use memstat::{Allocator, AllocatorFilter, ErrorKind, MemoryTypeList, ZoneSizes, MAXCALLER};

fn loaded() -> MemoryTypeList {
    let mut l = MemoryTypeList::new();
    l.update_malloc_bytes(&sample_stream()).unwrap();
    l
}

#[test]
fn totals_and_accessors() {
    let l = loaded();
    assert_eq!(l.len(), 7);
    assert_eq!(l.maxcpus(), 4);
    let t = l.find(AllocatorFilter::Malloc, "devbuf").unwrap();
    assert_eq!(t.allocator(), Allocator::Malloc);
    assert_eq!(t.memalloced(), 65536 + 4096);
    assert_eq!(t.memfreed(), 2048 + 1024);
    assert_eq!(t.numallocs(), 4);
    assert_eq!(t.numfrees(), 2);
    assert_eq!(t.bytes(), 65536 + 4096 - 3072);
    assert_eq!(t.count(), 2);
    assert_eq!(t.sizemask(), (1 << 12) | (1 << 9) | (1 << 10));
    // Two failures on CPU 1 (a version 2 stream counts them).
    assert_eq!(
        (t.countlimit(), t.byteslimit(), t.free(), t.failures()),
        (0, 0, 0, 2)
    );
    assert_eq!(t.percpu_failures(1).unwrap(), 2);
    assert_eq!((t.owner(), t.peak()), ("vmlinux", None));
    let temp = l.find(AllocatorFilter::Malloc, "temp").unwrap();
    assert_eq!(temp.peak(), Some(1016));
    let foo = l.find(AllocatorFilter::Malloc, "foo bar").unwrap();
    assert_eq!(foo.owner(), "foo_mod");
    assert_eq!(
        (t.sleeps(), t.xdomain(), t.zonefree(), t.kegfree()),
        (0, 0, 0, 0)
    );
    assert_eq!((t.size(), t.rsize()), (0, 0));
    assert_eq!(t.maxcpus(), 4);
    assert_eq!(t.percpu_memalloced(0).unwrap(), 65536);
    assert_eq!(t.percpu_memfreed(3).unwrap(), 1024);
    assert_eq!(t.percpu_numallocs(1).unwrap(), 3);
    assert_eq!(t.percpu_numfrees(1).unwrap(), 1);
    assert_eq!(t.percpu_sizemask(1).unwrap(), (1 << 9) | (1 << 10));
    assert_eq!(t.percpu_free(2).unwrap(), 0);
    let e = t.percpu_memalloced(4).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::OutOfRange);
    assert!(t.percpu_sizemask(usize::MAX).is_err());
    let fb = l.find(AllocatorFilter::Any, "foo bar").unwrap();
    assert_eq!(fb.probe_name(), "foo_bar");
    assert!(fb.is_module());
    assert_eq!(fb.zone(), 2);
    assert!(l.find(AllocatorFilter::Slab, "devbuf").is_none());
    assert!(l.find(AllocatorFilter::Any, "nope").is_none());
}

#[test]
fn negative_balances_clamp_to_zero() {
    let l = loaded();
    let t = l.find(AllocatorFilter::Any, "racy").unwrap();
    assert_eq!(t.memalloced(), 100);
    assert_eq!(t.memfreed(), 300);
    assert_eq!(t.bytes(), 0);
    assert_eq!(t.count(), 0);
}

#[test]
fn duplicate_names_are_distinct_entries() {
    let l = loaded();
    let d: Vec<_> = l.iter().filter(|t| t.name() == "dup").collect();
    assert_eq!(d.len(), 2);
    assert_eq!(l.find_id(6).unwrap().bytes(), 8);
    assert_eq!(l.find_id(7).unwrap().bytes(), 16384);
    // find returns the first in list order.
    assert_eq!(l.find(AllocatorFilter::Malloc, "dup").unwrap().id(), 6);
}

#[test]
fn caller_fields_survive_updates_and_vanished_types_go() {
    let mut l = loaded();
    {
        let t = l.find_mut(AllocatorFilter::Malloc, "devbuf").unwrap();
        t.set_caller_pointer(0, 0xdead).unwrap();
        t.set_caller_uint64(15, 42).unwrap();
        t.set_percpu_caller_pointer(3, 1, 7).unwrap();
        t.set_percpu_caller_uint64(2, 15, 99).unwrap();
        assert!(t.set_caller_uint64(MAXCALLER, 1).is_err());
        assert!(t.set_percpu_caller_uint64(4, 0, 1).is_err());
        assert!(t.set_percpu_caller_pointer(0, MAXCALLER, 1).is_err());
        assert_eq!(t.caller_pointer(MAXCALLER), None);
    }
    l.find_id_mut(7).unwrap().set_caller_uint64(0, 7).unwrap();
    // Second snapshot: devbuf grew, "temp" and dup#6 vanished, "new" appeared.
    let mut types = sample_types();
    types[0].stats[2] = cpu(8192, 0, 2, 0, 1 << 12);
    types.retain(|t| t.name != b"temp" && t.id != 6);
    types.push(ty("new", 8, vec![cpu(32, 0, 1, 0, 1 << 2)]));
    l.update_malloc_bytes(&write_stream(4, &types)).unwrap();
    assert!(l.find(AllocatorFilter::Any, "temp").is_none());
    assert!(l.find_id(6).is_none());
    assert_eq!(l.find_id(7).unwrap().caller_uint64(0), Some(7));
    assert_eq!(l.len(), 6);
    assert_eq!(l.iter().last().unwrap().name(), "new");
    let t = l.find(AllocatorFilter::Malloc, "devbuf").unwrap();
    assert_eq!(t.numallocs(), 6);
    assert_eq!(t.percpu_memalloced(2).unwrap(), 8192);
    assert_eq!(t.caller_pointer(0), Some(0xdead));
    assert_eq!(t.caller_uint64(15), Some(42));
    assert_eq!(t.percpu_caller_pointer(3, 1).unwrap(), 7);
    assert_eq!(t.percpu_caller_uint64(2, 15).unwrap(), 99);
    assert_eq!(t.percpu_caller_uint64(0, 15).unwrap(), 0);
    let n = l.find(AllocatorFilter::Any, "new").unwrap();
    assert_eq!(n.caller_uint64(0), Some(0));
}

#[test]
fn failed_update_leaves_list_and_records_error() {
    let mut l = loaded();
    let e = l.update_malloc_bytes(&[1, 0, 0]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DataError);
    assert_eq!(l.error(), Some(ErrorKind::DataError));
    assert_eq!(l.len(), 7);
    l.update_malloc_bytes(&sample_stream()).unwrap();
    assert_eq!(l.error(), None);
}

#[test]
fn read_errors_name_the_path() {
    let mut l = MemoryTypeList::new();
    let e = l
        .read_malloc(std::path::Path::new("/nonexistent/malloc_stats"))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
    assert_eq!(
        e.to_string(),
        "/nonexistent/malloc_stats: No such file or directory"
    );
    let p = memstat::Error::from_io(
        "/proc/malloc_stats",
        std::io::Error::from_raw_os_error(libc_eacces()),
    );
    assert_eq!(p.kind(), ErrorKind::Permission);
    assert_eq!(p.to_string(), "/proc/malloc_stats: Permission denied");
    // A read whose buffer cannot grow reports OutOfMemory with no OS error.
    let m = memstat::Error::from_io(
        "/proc/malloc_stats",
        std::io::Error::from(std::io::ErrorKind::OutOfMemory),
    );
    assert_eq!(m.kind(), ErrorKind::NoMemory);
}

fn libc_eacces() -> i32 {
    13
}

#[test]
fn zones_from_sysctl_and_fallback() {
    let z = ZoneSizes::from_sysctl(&fixture("sysctl"));
    assert!(z.from_kernel());
    assert_eq!(z.count(), 13);
    assert_eq!(z.size(12), Some(8192));
    assert_eq!(z.size(13), None);
    let d = ZoneSizes::from_sysctl(std::path::Path::new("/nonexistent"));
    assert!(!d.from_kernel());
    assert_eq!(d.sizes(), &memstat::zones::DEFAULT_ZONE_SIZES);
    let l = loaded();
    let t = l.find(AllocatorFilter::Any, "devbuf").unwrap();
    assert!(z.used(t, 12));
    assert!(!z.used(t, 0));
    assert!(!z.used(t, 64));
    assert_eq!(z.sizes_in_mask(t.sizemask()), vec![1024, 2048, 8192]);
    assert!(ZoneSizes::parse("8\tx").is_err());
    assert!(ZoneSizes::new(vec![1; 65]).is_err());
}

#[test]
fn save_roundtrip() {
    let l = loaded();
    let mut l2 = MemoryTypeList::new();
    l2.update_malloc_bytes(&l.to_stream()).unwrap();
    let a: Vec<_> = l
        .iter()
        .map(|t| (t.name().to_string(), t.id(), t.bytes(), t.sizemask()))
        .collect();
    let b: Vec<_> = l2
        .iter()
        .map(|t| (t.name().to_string(), t.id(), t.bytes(), t.sizemask()))
        .collect();
    assert_eq!(a, b);
    assert_eq!(l.to_stream(), sample_stream());
}

/// The sysctls as sources that can vanish: `vm.malloc_zone_count` missing still gives the
/// kernel's table (fixture `sysctl-nocount`); a list that has read the kernel's table keeps it
/// when a later read of the sysctls fails instead of switching to the fallback table; a list
/// that never had one uses the fallback.
#[test]
fn zone_sysctls_that_vanish() {
    let z = ZoneSizes::try_from_sysctl(&fixture("sysctl-nocount")).unwrap();
    assert!(z.from_kernel());
    assert_eq!(z.count(), 13);

    let gone = std::path::Path::new("/nonexistent");
    let mut l = MemoryTypeList::new();
    l.update_zones(gone);
    assert!(!l.zones().from_kernel());
    assert_eq!(l.zones().sizes(), &memstat::zones::DEFAULT_ZONE_SIZES);
    l.update_zones(&fixture("sysctl"));
    assert!(l.zones().from_kernel());
    assert_eq!(l.zones().count(), 13);
    l.update_zones(gone);
    assert!(l.zones().from_kernel(), "the kernel's table is kept");
    assert_eq!(l.zones().size(12), Some(8192));
    let mut m = MemoryTypeList::new();
    m.sysctl_malloc(&fixture("no-such-stream"), &fixture("sysctl"))
        .unwrap_err();
    assert!(m.zones().from_kernel());
}

/// Two records with the same id (a crafted or corrupt stream) are refused: the update fails
/// with an error naming the id and leaves the list as it was, so that no two entries share an
/// id (and no two exported label sets are the same).
#[test]
fn records_with_the_same_id_are_refused() {
    let twins = |a: u64, b: u64| {
        vec![
            ty("twin", 9, vec![cpu(a, 0, 1, 0, 1 << 3)]),
            ty("twin", 9, vec![cpu(b, 0, 1, 0, 1 << 3)]),
        ]
    };
    let mut l = loaded();
    let e = l
        .update_malloc_bytes(&write_stream(1, &twins(64, 128)))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DataError);
    assert_eq!(
        e.to_string(),
        "Data format error: types 0 and 1 have the same id 9"
    );
    assert_eq!(l.error(), Some(ErrorKind::DataError));
    assert_eq!(l.len(), 7);
    // Not next to each other, ids neither rising nor falling, different names.
    let mut types = sample_types();
    types[5].id = 2;
    let e = l.update_malloc_bytes(&write_stream(4, &types)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Data format error: types 1 and 5 have the same id 2"
    );
    let s = memstat::stream::Stream {
        version: 2,
        maxcpus: 1,
        types: twins(1, 2),
    };
    assert!(l.update_malloc_stream(&s).is_err());
    assert_eq!(l.len(), 7);
    // Ids that fall, as the kernel lists its types, or rise: accepted.
    for ids in [[3, 2, 1], [1, 2, 3]] {
        let types: Vec<_> = ids.iter().map(|&i| ty("t", i, vec![])).collect();
        l.update_malloc_bytes(&write_stream(1, &types)).unwrap();
        assert_eq!(l.len(), 3);
    }
}

/// An entry is the same type as a record of the same id only when the names are the same
/// too: names that differ past their first eight bytes, or only in length, are other types
/// (an entry of a stream read before whose id now has another name is replaced).
#[test]
fn names_that_differ_past_eight_bytes_or_in_length_stay_distinct() {
    let names = ["abcdefgh-1", "abcdefgh-2", "abcdefgh"];
    let types = |names: [&str; 3]| -> Vec<memstat::stream::StreamType> {
        names
            .iter()
            .zip(1..)
            .map(|(n, id)| ty(n, id, vec![cpu(8 << id, 0, 1, 0, 1)]))
            .collect()
    };
    let mut l = MemoryTypeList::new();
    let got = |l: &MemoryTypeList| -> Vec<(String, u64, Option<u64>)> {
        l.iter()
            .map(|t| (t.name().to_string(), t.id(), t.caller_uint64(0)))
            .collect()
    };
    for _ in 0..2 {
        l.update_malloc_bytes(&write_stream(1, &types(names)))
            .unwrap();
        l.iter_mut()
            .for_each(|t| t.set_caller_uint64(0, t.id()).unwrap());
    }
    let e = |n: &str, id: u64, tag: u64| (n.to_string(), id, Some(tag));
    assert_eq!(
        got(&l),
        [e(names[0], 1, 1), e(names[1], 2, 2), e(names[2], 3, 3)]
    );
    // Each id now has the next name: three new entries.
    l.update_malloc_bytes(&write_stream(1, &types([names[1], names[2], names[0]])))
        .unwrap();
    assert_eq!(
        got(&l),
        [e(names[1], 1, 0), e(names[2], 2, 0), e(names[0], 3, 0)]
    );
}

/// An update matches records to entries by id and name whatever their order: records in the
/// list's order, then one that went, one that came between two others, and two that swapped
/// places, each entry keeping its caller fields and its place in the list, a slab cache between
/// the malloc types staying where it is, the new types at the end.
#[test]
fn updates_in_any_order_keep_each_entry() {
    let names = ["a", "b", "c", "d", "e", "f"];
    let types = |order: &[usize], memalloced: u64| -> Vec<memstat::stream::StreamType> {
        order
            .iter()
            .map(|&i| {
                ty(
                    names[i],
                    i as u64 + 1,
                    vec![cpu(memalloced + i as u64, 0, 1, 0, 1)],
                )
            })
            .collect()
    };
    let mut l = MemoryTypeList::new();
    l.update_malloc_bytes(&write_stream(1, &types(&[0, 1, 2], 0)))
        .unwrap();
    let slab = memstat::slab::parse_slabinfo(
        "slabinfo - version: 2.1\n# name <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> <sharedavail>\nkmalloc-64 10 20 64 64 1 : tunables 0 0 0 : slabdata 1 1 0\n",
    )
    .unwrap();
    l.update_slab_caches(&slab);
    l.update_malloc_bytes(&write_stream(1, &types(&[0, 1, 2, 3, 4], 0)))
        .unwrap();
    for (i, t) in l.iter_mut().enumerate() {
        t.set_caller_uint64(0, 100 + i as u64).unwrap();
    }
    let got = |l: &MemoryTypeList| -> Vec<(String, u64, Option<u64>)> {
        l.iter()
            .map(|t| (t.name().to_string(), t.bytes(), t.caller_uint64(0)))
            .collect()
    };
    let e = |n: &str, m: u64, c: u64| (n.to_string(), m, Some(c));
    assert_eq!(
        got(&l),
        [
            e("a", 0, 100),
            e("b", 1, 101),
            e("c", 2, 102),
            e("kmalloc-64", 640, 103),
            e("d", 3, 104),
            e("e", 4, 105)
        ]
    );
    // "b" went, "f" came after "a", "d" and "c" swapped.
    l.update_malloc_bytes(&write_stream(1, &types(&[0, 5, 3, 2, 4], 1000)))
        .unwrap();
    assert_eq!(
        got(&l),
        [
            e("a", 1000, 100),
            e("c", 1002, 102),
            e("kmalloc-64", 640, 103),
            e("d", 1003, 104),
            e("e", 1004, 105),
            ("f".to_string(), 1005, Some(0)),
        ]
    );
    // The same records again: nothing moves.
    l.update_malloc_bytes(&write_stream(1, &types(&[0, 5, 3, 2, 4], 2000)))
        .unwrap();
    assert_eq!(got(&l)[5], ("f".to_string(), 2005, Some(0)));
    assert_eq!(got(&l)[0], e("a", 2000, 100));
}

/// A name or an owner that is not UTF-8 is shown in its text form (`\NNN` for each byte that
/// is not printable ASCII), and the type stays the same entry from one update to the next; an
/// owner that changes is shown as it is now.
#[test]
fn names_and_owners_that_are_not_utf8_stay_one_entry() {
    use memstat::stream::STREAM_HEADER_SIZE;
    let mut t = ty("nam", 1, vec![cpu(8, 0, 1, 0, 1)]);
    t.owner = b"own".to_vec();
    let mut buf = write_stream(1, std::slice::from_ref(&t));
    buf[STREAM_HEADER_SIZE + 1] = 0xff;
    buf[STREAM_HEADER_SIZE + 64 + 1] = 0xfe;
    let mut l = MemoryTypeList::new();
    l.update_malloc_bytes(&buf).unwrap();
    l.iter_mut()
        .next()
        .unwrap()
        .set_caller_uint64(0, 5)
        .unwrap();
    for owner in [b'w', 0xfe, b'w'] {
        buf[STREAM_HEADER_SIZE + 64 + 1] = owner;
        l.update_malloc_bytes(&buf).unwrap();
        assert_eq!(l.len(), 1);
        let e = l.first().unwrap();
        let shown = if owner == b'w' { "own" } else { "o\\376n" };
        assert_eq!(
            (e.name(), e.owner(), e.caller_uint64(0)),
            ("n\\377m", shown, Some(5))
        );
        assert_eq!(e.owner_bytes(), [b'o', owner, b'n']);
    }
}

/// Sysctl values are read whole at every length below the limit: those that fill the first
/// read and are read again from the start with a larger buffer, and the longest; a value of
/// the limit or longer is refused.
#[test]
fn sysctl_values_of_every_size() {
    use memstat::zones::{read_sysctl, SYSCTL_READ_FIRST, SYSCTL_READ_MAX};
    let d = tmpdir("sysctl-sizes");
    let p = d.join("value");
    for len in [
        0,
        1,
        SYSCTL_READ_FIRST - 1,
        SYSCTL_READ_FIRST,
        SYSCTL_READ_FIRST + 1,
        SYSCTL_READ_FIRST * 4,
        SYSCTL_READ_FIRST * 4 + 1,
        SYSCTL_READ_MAX - 1,
    ] {
        let v: String = (0..len)
            .map(|i| char::from(b'0' + (i % 10) as u8))
            .collect();
        std::fs::write(&p, &v).unwrap();
        assert_eq!(read_sysctl(&p).unwrap(), v, "{len}");
    }
    std::fs::write(&p, "1".repeat(SYSCTL_READ_MAX)).unwrap();
    let e = read_sysctl(&p).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DataError);
    assert!(e.to_string().contains("larger than 65536 bytes"), "{e}");
    // A pipe cannot be read at an offset: it is read once.
    let fifo = d.join("fifo");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `c` is a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(fifo, "8 16 32\n").unwrap())
    };
    assert_eq!(read_sysctl(&fifo).unwrap(), "8 16 32\n");
    writer.join().unwrap();
}

/// Sums over the CPUs saturate at `u64::MAX` instead of wrapping: two CPUs at the largest
/// count sum to the largest count, not to 18446744073709551614.
#[test]
fn per_cpu_sums_saturate() {
    let max = u64::MAX;
    let mut s = cpu(max, max, max, max, 1);
    s.numfailures = max;
    let mut l = MemoryTypeList::new();
    l.update_malloc_bytes(&write_stream(2, &[ty("big", 1, vec![s, s])]))
        .unwrap();
    let t = l.first().unwrap();
    assert_eq!(
        (
            t.memalloced(),
            t.memfreed(),
            t.numallocs(),
            t.numfrees(),
            t.failures()
        ),
        (max, max, max, max, max)
    );
    assert_eq!((t.bytes(), t.count()), (0, 0));
}
