//! Reads a malloc stats stream with many read sizes and checks that each read
//! sequence gives a complete stream that parses: the kernel must serve
//! consistent, untorn records whatever the reader's buffer size.
//!
//! The sizes: every size from 1 byte to the header and two records, each at
//! many offsets (one pass whose reads cycle through the sizes in ascending
//! order, one in descending order), and whole passes of one size each: the
//! smallest sizes, a record's size and its neighbours, a page and its, and
//! the whole stream and its. Every size up to the whole file, each a pass of
//! its own, would read the stream once per byte of it: with every kmalloc
//! charged to a type there are hundreds of types.
//!
//! Usage: `read_sizes [PATH]` (default `/proc/malloc_stats`). Prints the
//! number of sizes and passes checked; exits 1 on the first failure, naming
//! the pass.

use std::fs::File;
use std::io::Read;
use std::process::ExitCode;

/// The size of the stream's header and of a type's record without its per-CPU part.
const HEADER: usize = 16;
const TYPE_HEADER: usize = 128;
/// The size of one CPU's statistics in a record.
const CPU_STATS: usize = 64;

/// Reads `path` to its end, each read taking the next size of `sizes`, cycling.
fn read_with(path: &str, sizes: &[usize]) -> std::io::Result<Vec<u8>> {
    let mut f = File::open(path)?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; sizes.iter().copied().max().unwrap_or(1)];
    for &bs in sizes.iter().cycle() {
        let n = f.read(&mut buf[..bs])?;
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    Ok(out)
}

fn main() -> ExitCode {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| memstat::DEFAULT_PROC_PATH.to_string());
    let whole = match read_with(&path, &[1 << 20]) {
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
    // The header's second word is the number of CPUs each record holds.
    let maxcpus = whole
        .get(4..8)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .unwrap_or(0);
    let record = TYPE_HEADER + CPU_STATS * maxcpus;
    let span = HEADER + 2 * record;
    let ascending: Vec<usize> = (1..=span).collect();
    let descending: Vec<usize> = (1..=span).rev().collect();
    let mut passes: Vec<(String, Vec<usize>)> = vec![
        (format!("sizes 1 to {span}, ascending"), ascending),
        (format!("sizes {span} to 1, descending"), descending),
    ];
    let mut fixed = vec![1, 2, 3, 7, HEADER - 1, HEADER, HEADER + 1];
    fixed.extend([record - 1, record, record + 1, 4095, 4096, 4097]);
    fixed.extend([whole.len() - 1, whole.len(), whole.len() + 1]);
    fixed.retain(|&s| s > 0);
    fixed.sort_unstable();
    fixed.dedup();
    for s in fixed {
        passes.push((format!("size {s}"), vec![s]));
    }
    for (what, sizes) in &passes {
        let got = match read_with(&path, sizes) {
            Ok(g) => g,
            Err(e) => {
                eprintln!("read_sizes: {path}: read {what}: {e}");
                return ExitCode::FAILURE;
            }
        };
        if let Err(e) = memstat::stream::parse_stream(&got) {
            eprintln!("read_sizes: {path}: read {what}: {e}");
            return ExitCode::FAILURE;
        }
        if got.len() != whole.len() {
            eprintln!(
                "read_sizes: {path}: read {what}: {} bytes, expected {}",
                got.len(),
                whole.len()
            );
            return ExitCode::FAILURE;
        }
    }
    println!(
        "{} passes parsed: every read size from 1 to {span} bytes, and {} sizes a pass each \
         ({} bytes, {maxcpus} CPUs per record)",
        passes.len(),
        passes.len() - 2,
        whole.len()
    );
    ExitCode::SUCCESS
}
