//! Reads a malloc stats stream with every read size from 1 byte to the
//! whole file and checks that each read sequence gives a complete stream
//! that parses: the kernel must serve consistent, untorn records whatever
//! the reader's buffer size.
//!
//! Usage: `read_sizes [PATH]` (default `/proc/malloc_stats`). Prints the
//! number of sizes checked; exits 1 on the first failure, naming the size.

use std::fs::File;
use std::io::Read;
use std::process::ExitCode;

fn read_with(path: &str, bs: usize) -> std::io::Result<Vec<u8>> {
    let mut f = File::open(path)?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; bs];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok(out);
        }
        out.extend_from_slice(&buf[..n]);
    }
}

fn main() -> ExitCode {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| memstat::DEFAULT_PROC_PATH.to_string());
    let whole = match read_with(&path, 1 << 20) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("read_sizes: {path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = memstat::stream::parse_stream(&whole) {
        eprintln!("read_sizes: {path}: whole file: {e}");
        return ExitCode::FAILURE;
    }
    for bs in 1..=whole.len() {
        let got = match read_with(&path, bs) {
            Ok(g) => g,
            Err(e) => {
                eprintln!("read_sizes: {path}: read size {bs}: {e}");
                return ExitCode::FAILURE;
            }
        };
        if let Err(e) = memstat::stream::parse_stream(&got) {
            eprintln!("read_sizes: {path}: read size {bs}: {e}");
            return ExitCode::FAILURE;
        }
        if got.len() != whole.len() {
            eprintln!(
                "read_sizes: {path}: read size {bs}: {} bytes, expected {}",
                got.len(),
                whole.len()
            );
            return ExitCode::FAILURE;
        }
    }
    println!("{} read sizes parsed", whole.len());
    ExitCode::SUCCESS
}
