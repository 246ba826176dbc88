mod common;

use common::*;
use memstat::stream::{self, parse_stream, write_stream, STREAM_HEADER_SIZE};
use memstat::text::name_text;
use memstat::ErrorKind;
use std::io::Read;

#[test]
fn roundtrip_multi_type_multi_cpu() {
    let buf = sample_stream();
    assert_eq!(buf.len(), stream::expected_len(7, 4).unwrap());
    let s = parse_stream(&buf).unwrap();
    assert_eq!(s.maxcpus, 4);
    assert_eq!(s.types.len(), 7);
    assert_eq!(s.types[0].name, b"devbuf");
    assert_eq!(s.types[0].stats.len(), 4);
    assert_eq!(
        s.types[0].stats[1],
        stream::CpuStats {
            numfailures: 2,
            ..cpu(4096, 2048, 3, 1, (1 << 9) | (1 << 10))
        }
    );
    assert_eq!(s.types[2].stats, vec![Default::default(); 4]);
    assert_eq!(s.types[3].name, b"foo bar");
    assert_eq!(s.types[3].zone, 2);
    assert_eq!(s.types[3].flags, stream::FLAG_MODULE);
    assert_eq!(s.types[6].id, 7);
    // Version 2's fields: the owner, the failures and a tracked peak.
    assert_eq!(s.version, 2);
    assert_eq!(s.types[3].owner, b"foo_mod");
    assert_eq!(s.types[0].owner, b"vmlinux");
    assert_eq!(s.types[0].stats[1].numfailures, 2);
    assert_eq!(
        (s.types[1].flags, s.types[1].peak),
        (stream::FLAG_PEAK, 1016)
    );
    // Writing what was parsed gives the same bytes.
    assert_eq!(write_stream(s.maxcpus, &s.types), buf);
}

#[test]
fn version_1_streams_are_read() {
    let v2 = parse_stream(&sample_stream()).unwrap();
    let buf = stream::write_stream_version(1, v2.maxcpus, &v2.types);
    assert_eq!(buf.len(), stream::expected_len_version(1, 7, 4).unwrap());
    assert_eq!(buf.len(), 16 + 7 * (64 + 4 * 64));
    let v1 = parse_stream(&buf).unwrap();
    assert_eq!(v1.version, 1);
    assert_eq!(v1.types.len(), v2.types.len());
    for (a, b) in v1.types.iter().zip(&v2.types) {
        // Everything but what version 2 added.
        assert_eq!((&a.name, a.id, a.zone), (&b.name, b.id, b.zone));
        assert_eq!(a.flags, b.flags & stream::FLAG_MODULE);
        assert_eq!((a.peak, a.owner.as_slice()), (0, &b""[..]));
        for (x, y) in a.stats.iter().zip(&b.stats) {
            assert_eq!(x.numfailures, 0);
            assert_eq!(
                (x.memalloced, x.memfreed, x.numallocs, x.numfrees, x.size),
                (y.memalloced, y.memfreed, y.numallocs, y.numfrees, y.size)
            );
        }
    }
    // Every truncation of a version 1 stream is an error too.
    for len in 0..buf.len() {
        assert_eq!(
            parse_stream(&buf[..len]).unwrap_err().kind(),
            ErrorKind::DataError
        );
    }
}

#[test]
fn unterminated_owner_is_an_error() {
    let mut buf = sample_stream();
    // The owner field of the first type: 64 bytes from byte 16 + 64.
    for b in &mut buf[16 + 64..16 + 128] {
        *b = b'x';
    }
    let e = parse_stream(&buf).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DataError);
    assert!(e.to_string().contains("owner is not NUL-terminated"), "{e}");
}

#[test]
fn every_truncation_is_an_error() {
    let buf = sample_stream();
    for len in 0..buf.len() {
        let e = parse_stream(&buf[..len]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::DataError, "len {len}: {e}");
    }
}

#[test]
fn trailing_bytes_are_an_error() {
    let mut buf = sample_stream();
    buf.push(0);
    let e = parse_stream(&buf).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DataError);
    assert!(e.to_string().starts_with("Data format error: "), "{e}");
    buf.extend_from_slice(&[0u8; 64 + 4 * 64 - 1]);
    assert!(parse_stream(&buf).is_err());
}

#[test]
fn wrong_version() {
    let mut buf = sample_stream();
    buf[0] = 3;
    let e = parse_stream(&buf).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Version);
    assert!(e.to_string().starts_with("Version mismatch"), "{e}");
    assert_eq!(e.kind().strerror(), "Version mismatch");
}

#[test]
fn zero_cpus() {
    let buf = write_stream(0, &[]);
    assert_eq!(buf.len(), STREAM_HEADER_SIZE);
    let e = parse_stream(&buf).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DataError);
    assert!(e.to_string().contains("zero CPUs"), "{e}");
}

#[test]
fn empty_stream_is_fine() {
    let s = parse_stream(&write_stream(8, &[])).unwrap();
    assert_eq!(s.maxcpus, 8);
    assert!(s.types.is_empty());
}

fn header(version: u32, maxcpus: u32, count: u32) -> Vec<u8> {
    let mut h = Vec::new();
    for v in [version, maxcpus, count, 0] {
        h.extend_from_slice(&v.to_ne_bytes());
    }
    h
}

#[test]
fn huge_counts_error_without_allocating() {
    // u32::MAX types of 65536 CPUs would be ~18 PB; must be refused from the
    // header alone.
    for (cpus, count) in [
        (1, u32::MAX),
        (65536, u32::MAX),
        (u32::MAX, 1),
        (u32::MAX, u32::MAX),
    ] {
        let mut buf = header(1, cpus, count);
        buf.extend_from_slice(&[0u8; 1024]);
        let e = parse_stream(&buf).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::DataError, "{cpus} {count}: {e}");
    }
}

#[test]
fn unterminated_name() {
    let mut buf = write_stream(1, &[ty("x", 1, vec![])]);
    for b in &mut buf[16..48] {
        *b = b'a';
    }
    let e = parse_stream(&buf).unwrap_err();
    assert!(e.to_string().contains("NUL"), "{e}");
}

/// A name is kept as its bytes, UTF-8 or not, and written back as they are.
#[test]
fn names_are_bytes_and_truncated_on_write() {
    let mut buf = write_stream(1, &[ty("x", 1, vec![])]);
    buf[16] = 0xff;
    let s = parse_stream(&buf).unwrap();
    assert_eq!(s.types[0].name, b"\xff");
    assert_eq!(write_stream(1, &s.types), buf);
    let long = "a".repeat(40);
    let s = parse_stream(&write_stream(1, &[ty(&long, 1, vec![])])).unwrap();
    assert_eq!(s.types[0].name.len(), 31);
}

#[test]
fn duplicate_names_kept_distinct() {
    let s = parse_stream(&sample_stream()).unwrap();
    let dups: Vec<_> = s
        .types
        .iter()
        .filter(|t| t.name == b"dup")
        .map(|t| t.id)
        .collect();
    assert_eq!(dups, vec![6, 7]);
}

#[test]
fn read_stream_is_bounded_by_the_header() {
    use std::path::Path;
    use stream::{read_stream, read_stream_file};
    // An endless source: fails at the header, whatever follows.
    let e = read_stream_file(Path::new("/dev/zero")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Version);
    let d = tmpdir("stream_sparse");
    // A 4 GiB sparse file of zeros.
    let p = d.join("zeros");
    let f = std::fs::File::create(&p).unwrap();
    f.set_len(1 << 32).unwrap();
    drop(f);
    let e = read_stream_file(&p).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Version);
    // A valid header followed by 4 GiB of zeros: at most one byte past the
    // announced length is read.
    let good = sample_stream();
    std::fs::write(&p, &good).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    f.set_len(1 << 32).unwrap();
    drop(f);
    let t = std::time::Instant::now();
    let e = read_stream_file(&p).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DataError);
    assert!(e.to_string().contains("more than"), "{e}");
    assert!(t.elapsed() < std::time::Duration::from_secs(5));
    let mut list = memstat::MemoryTypeList::new();
    assert_eq!(
        list.read_malloc(&p).unwrap_err().kind(),
        ErrorKind::DataError
    );
    let _ = std::fs::remove_file(&p);
    // The same through an endless reader.
    let endless = std::io::Cursor::new(good.clone()).chain(std::io::repeat(0));
    assert_eq!(
        read_stream(endless, &p).unwrap_err().kind(),
        ErrorKind::DataError
    );
    // One trailing byte is still an error.
    let mut long = good.clone();
    long.push(0);
    assert_eq!(
        read_stream(&long[..], &p).unwrap_err().kind(),
        ErrorKind::DataError
    );
    // Exact: the stream itself; short: returned for parse_stream to report.
    assert_eq!(read_stream(&good[..], &p).unwrap(), good);
    let short = read_stream(&good[..100], &p).unwrap();
    let e = parse_stream(&short).unwrap_err();
    assert!(e.to_string().contains("stream is 100 bytes"), "{e}");
    // A short header.
    let e = read_stream(&good[..10], &p).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DataError);
    assert!(e.to_string().contains("stream is 10 bytes, shorter"), "{e}");
}

/// A reader that hands out one byte per read: the header is read in a loop.
#[test]
fn read_stream_handles_short_reads() {
    struct OneByte<'a>(&'a [u8]);
    impl std::io::Read for OneByte<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.0.is_empty() || buf.is_empty() {
                return Ok(0);
            }
            buf[0] = self.0[0];
            self.0 = &self.0[1..];
            Ok(1)
        }
    }
    let good = sample_stream();
    let got = stream::read_stream(OneByte(&good), std::path::Path::new("x")).unwrap();
    assert_eq!(got, good);
}

#[test]
fn borrowed_parse_matches_the_owned_one() {
    let buf = sample_stream();
    let (maxcpus, types) = stream::parse_stream_ref(&buf).unwrap();
    let owned = parse_stream(&buf).unwrap();
    assert_eq!(maxcpus, owned.maxcpus);
    let back: Vec<_> = types.iter().map(|t| t.to_owned_type()).collect();
    assert_eq!(back, owned.types);
    assert_eq!(types[0].stats().len(), 4);
    // The name is borrowed from the stream, not copied.
    let name_field = STREAM_HEADER_SIZE..STREAM_HEADER_SIZE + 6;
    assert!(std::ptr::eq(types[0].name, &buf[name_field]));
    // The same errors as the owned parse, for every truncation.
    for len in 0..buf.len() {
        assert_eq!(
            stream::parse_stream_ref(&buf[..len])
                .map(|_| ())
                .unwrap_err()
                .kind(),
            parse_stream(&buf[..len]).unwrap_err().kind()
        );
    }
}

/// A name that is not UTF-8 is kept as its bytes (a lossy decoding would make two names one),
/// and shown in its text form.
#[test]
fn a_name_that_is_not_utf8_is_kept_as_bytes() {
    let mut buf = sample_stream();
    // The first type's name, "devbuf", gets an invalid byte.
    buf[STREAM_HEADER_SIZE + 1] = 0xff;
    let (_, types) = stream::parse_stream_ref(&buf).unwrap();
    assert_eq!(types[0].name, b"d\xffvbuf");
    assert_eq!(parse_stream(&buf).unwrap().types[0].name, b"d\xffvbuf");
    let mut l = memstat::MemoryTypeList::new();
    l.update_malloc_bytes(&buf).unwrap();
    let t = l.first().unwrap();
    assert_eq!(
        (t.name(), t.name_bytes()),
        ("d\\377vbuf", &b"d\xffvbuf"[..])
    );
}

#[test]
fn read_into_reuses_the_buffer() {
    let buf = sample_stream();
    let mut into = Vec::with_capacity(1 << 20);
    let cap = into.capacity();
    into.extend_from_slice(b"left over");
    stream::read_stream_into(&buf[..], std::path::Path::new("x"), &mut into).unwrap();
    assert_eq!(into, buf);
    assert_eq!(into.capacity(), cap);
    // An error leaves the buffer with whatever was read, never more than announced.
    let err = stream::read_stream_into(&buf[..10], std::path::Path::new("x"), &mut into);
    assert_eq!(err.unwrap_err().kind(), ErrorKind::DataError);
}

/// Names and owners of every length their fields hold, with bytes that look like a NUL to a
/// careless word-at-a-time search (0x80 and 0x01 next to each other, 0xff) before the NUL: each
/// is read up to its own NUL, by the borrowed parse and by a list update.
#[test]
fn names_and_owners_of_every_length() {
    for len in 0..stream::MAX_NAME {
        // The longest string of at most `bytes` bytes that cycles through `chars`.
        let fill = |chars: &str, bytes: usize| -> String {
            let mut s = String::new();
            for c in chars.chars().cycle() {
                if s.len() + c.len_utf8() > bytes {
                    break;
                }
                s.push(c);
            }
            s
        };
        let name = fill("a\u{80}\u{1}b", len);
        let name = name.as_bytes();
        let owner = fill("m\u{1}\u{7f}", len * 2);
        let owner = owner.as_bytes();
        let mut t = ty(name, 1, vec![cpu(8, 0, 1, 0, 1)]);
        t.owner = owner.to_vec();
        let buf = write_stream(1, std::slice::from_ref(&t));
        let (_, types) = stream::parse_stream_ref(&buf).unwrap();
        assert_eq!((types[0].name, types[0].owner), (name, owner), "{len}");
        let mut l = memstat::MemoryTypeList::new();
        for _ in 0..2 {
            l.update_malloc_bytes(&buf).unwrap();
            let e = l.first().unwrap();
            assert_eq!((e.name_bytes(), e.owner_bytes()), (name, owner), "{len}");
            assert_eq!(
                (e.name(), e.owner()),
                (name_text(name).as_str(), name_text(owner).as_str()),
                "{len}"
            );
        }
    }
    // A name field full but for its NUL, and bytes after the NUL that are not zero.
    let mut buf = write_stream(1, &[ty("n".repeat(31), 1, vec![])]);
    buf[STREAM_HEADER_SIZE + 64 + 5] = 0;
    buf[STREAM_HEADER_SIZE + 64 + 6..STREAM_HEADER_SIZE + 128].fill(0xff);
    let (_, types) = stream::parse_stream_ref(&buf).unwrap();
    assert_eq!((types[0].name.len(), types[0].owner.len()), (31, 5));
}

/// A type unregistered while the kernel's stream was read keeps its place as a record with only
/// its id and `MALLOC_TYPE_F_GONE`: the stream keeps its announced length, and the record is
/// left out of what is parsed and listed.
#[test]
fn records_of_types_gone_are_skipped() {
    let mut gone = ty("", 5, vec![stream::CpuStats::default(); 2]);
    gone.owner.clear();
    gone.flags = memstat::stream::FLAG_GONE;
    let types = vec![
        ty("a", 7, vec![cpu(64, 0, 1, 0, 1 << 3); 2]),
        gone,
        ty("b", 3, vec![cpu(32, 32, 1, 1, 1 << 2); 2]),
    ];
    let buf = write_stream(2, &types);
    assert_eq!(buf.len(), 16 + 3 * (128 + 2 * 64));
    let s = parse_stream(&buf).unwrap();
    let names: Vec<&[u8]> = s.types.iter().map(|t| &t.name[..]).collect();
    assert_eq!(names, [&b"a"[..], &b"b"[..]]);
    let mut list = memstat::MemoryTypeList::new();
    list.update_malloc_bytes(&buf).unwrap();
    let ids: Vec<u64> = list.iter().map(|t| t.id()).collect();
    assert_eq!(ids, [7, 3]);
}
