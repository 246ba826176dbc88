//! Fuzz the reader of cores (libmemstat's kvm side): the ELF headers, the notes, the vmcoreinfo,
//! the page table walk and the registry walk. Every input is written to a file, as a core is.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = std::env::temp_dir().join(format!("memstat-fuzz-core.{}", std::process::id()));
    if std::fs::write(&path, data).is_err() {
        return;
    }
    if let Ok(core) = memstat::kvm::Core::open(&path, None) {
        if let Ok(k) = core.read_malloc() {
            // What a core gives is a well-formed stream.
            memstat::stream::parse_stream(&k.stream).expect("a stream from a core parses");
        }
    }
});
