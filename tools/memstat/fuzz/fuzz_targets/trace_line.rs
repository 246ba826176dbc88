//! Fuzz the trace_pipe line parser: any bytes, as a line of trace_pipe is.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(memstat::trace::Record::Event(e)) = memstat::trace::parse_line(data) {
        // Every field shown is a text form: printable ASCII.
        let line = memstat::trace::format_event(&e);
        assert!(line.bytes().all(|b| (0x20..0x7f).contains(&b)), "{line:?}");
        for f in [&e.comm, &e.type_probe, &e.name] {
            assert!(memstat::text::is_name_text(f), "{f:?}");
        }
    }
});
