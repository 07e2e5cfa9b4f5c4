//! The C-ABI call harness, drawing from the same entropy trait. A file of
//! its own (not an inline module of lib.rs): a `#[path]` inside an inline
//! module is resolved through a directory named after it, which has to
//! exist for the relative path to the harness to be found.

pub use crate::support::entropy;
#[path = "../../../tests/support/cabi.rs"]
pub mod cabi;
