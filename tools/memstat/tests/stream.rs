mod common;

use common::*;
use memstat::stream::{self, parse_stream, write_stream, STREAM_HEADER_SIZE};
use memstat::ErrorKind;

#[test]
fn roundtrip_multi_type_multi_cpu() {
    let buf = sample_stream();
    assert_eq!(buf.len(), stream::expected_len(7, 4).unwrap());
    let s = parse_stream(&buf).unwrap();
    assert_eq!(s.maxcpus, 4);
    assert_eq!(s.types.len(), 7);
    assert_eq!(s.types[0].name, "devbuf");
    assert_eq!(s.types[0].stats.len(), 4);
    assert_eq!(
        s.types[0].stats[1],
        cpu(4096, 2048, 3, 1, (1 << 9) | (1 << 10))
    );
    assert_eq!(s.types[2].stats, vec![Default::default(); 4]);
    assert_eq!(s.types[3].name, "foo bar");
    assert_eq!(s.types[3].zone, 2);
    assert_eq!(s.types[3].flags, stream::FLAG_MODULE);
    assert_eq!(s.types[6].id, 7);
    // Writing what was parsed gives the same bytes.
    assert_eq!(write_stream(s.maxcpus, &s.types), buf);
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
    buf[0] = 2;
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

#[test]
fn names_are_lossy_utf8_and_truncated_on_write() {
    let mut buf = write_stream(1, &[ty("x", 1, vec![])]);
    buf[16] = 0xff;
    let s = parse_stream(&buf).unwrap();
    assert_eq!(s.types[0].name, "\u{fffd}");
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
        .filter(|t| t.name == "dup")
        .map(|t| t.id)
        .collect();
    assert_eq!(dups, vec![6, 7]);
}
