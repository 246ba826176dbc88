//! Fuzz the trace_pipe line parser.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let line = String::from_utf8_lossy(data);
    if let Ok(memstat::trace::Record::Event(e)) = memstat::trace::parse_line(&line) {
        let _ = memstat::trace::format_event(&e);
    }
});
