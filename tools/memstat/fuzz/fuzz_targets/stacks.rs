//! Fuzz `dtmalloc stacks`: any `trace_pipe` text (events, stack traces, their frames, anything
//! else) read line by line, the stacks summed and written in every output, without a panic;
//! the sums agree with the samples, and the folded lines with the sums.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memstat::stacks::{StackReader, Stacks, Weight};

fuzz_target!(|data: &[u8]| {
    let mut r = StackReader::new();
    let mut st = Stacks::new();
    let (mut count, mut bytes) = (0u64, 0u64);
    let mut add = |st: &mut Stacks, samples: Vec<memstat::stacks::Sample>| {
        for s in samples {
            assert!(!s.frames.is_empty());
            count += 1;
            bytes = bytes.saturating_add(s.event.size);
            st.add(&s);
        }
    };
    for line in data.split(|&b| b == b'\n') {
        r.line(line);
        add(&mut st, r.take());
    }
    add(&mut st, r.finish());
    assert_eq!((st.total().count, st.total().bytes), (count, bytes));
    let folded = st.folded(Weight::Count);
    let sum: u64 = folded
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert_eq!(sum, count);
    assert!(folded.bytes().all(|b| b == b'\n' || (0x20..0x7f).contains(&b)));
    let _ = st.report(Some(10));
    let svg = st.svg(Weight::Bytes, "fuzz");
    assert!(svg.ends_with("</svg>\n"));
    let _ = st.pprof(0);
});
