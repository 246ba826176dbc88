// SPDX-License-Identifier: Apache-2.0
//! The bindings `build.rs` generates from `aidl/binderload/*.aidl`.
#![allow(missing_docs, reason = "generated code")]

rsbinder::include_aidl!("binderload_aidl");

pub use binderload::ICallback::{BnCallback, ICallback};
pub use binderload::ILoad::{BnLoad, ILoad};
pub use binderload::IToken::{BnToken, IToken};

/// The name the service is registered under with the service manager.
pub const SERVICE_NAME: &str = "binderload.ILoad";
