// SPDX-License-Identifier: Apache-2.0
//! Generates the Rust bindings of the workload's AIDL interfaces
//! (`aidl/binderload/*.aidl`) with rsbinder's AIDL compiler, a pure Rust
//! build dependency: no external `aidl` tool is needed.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=aidl");
    if let Err(err) = rsbinder_aidl::Builder::new()
        .source(PathBuf::from("aidl/binderload"))
        .set_async_support(false)
        .output(PathBuf::from("binderload_aidl.rs"))
        .generate()
    {
        eprintln!("binderload: generating the AIDL bindings failed: {err:?}");
        std::process::exit(1);
    }
}
