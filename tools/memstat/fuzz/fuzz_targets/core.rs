//! Fuzz the reader of cores (libmemstat's kvm side): the ELF headers, the notes, the vmcoreinfo,
//! the page table walk and the registry walk, and the bounds on what a core makes it allocate.
//! Every input is written to a file, as a core is. The seeds (`tests/seeds.rs`) are cores of the
//! synthetic kernel, among them cores that claim 65536 CPU ids over memory of zeros.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memstat::ErrorKind;

fuzz_target!(|data: &[u8]| {
    let path = std::env::temp_dir().join(format!("memstat-fuzz-core.{}", std::process::id()));
    if std::fs::write(&path, data).is_err() {
        return;
    }
    match memstat::kvm::Core::open(&path, None).and_then(|core| core.read_malloc()) {
        Ok(k) => {
            assert!(k.stream.len() <= memstat::kvm::MAX_STREAM);
            // What a core gives is a well-formed stream.
            memstat::stream::parse_stream(&k.stream).expect("a stream from a core parses");
        }
        Err(e) => {
            assert!(
                matches!(
                    e.kind(),
                    ErrorKind::Kvm
                        | ErrorKind::KvmNoSymbol
                        | ErrorKind::KvmShortRead
                        | ErrorKind::Version
                        | ErrorKind::NoMemory
                ),
                "{e}"
            );
            // One line, whatever the core holds.
            assert!(!e.to_string().contains(['\n', '\r']), "{e:?}");
        }
    }
});
