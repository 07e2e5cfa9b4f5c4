//! # mooncake-meta-sys
//!
//! Raw declarations of libmooncake_meta's C ABI (`include/mooncake_meta.h`):
//! every function, struct, opaque type and constant of the header, under
//! the header's names, generated from it (see `tests/header_gen`), plus
//! [`safe`], a thin safe layer (RAII handles, `Result`s).
//!
//! Linking is the build script's business: the prebuilt shared library by
//! default, the static archive with feature `static`, or the core crate
//! compiled into the graph with feature `bundled` (see `build.rs`).
//!
//! Raw structs implement `Default` as all-zero with `struct_size` set to
//! their size; an extended write configuration should still start from
//! `mooncake_meta_write_config_init`, which fills the library's defaults.

#![allow(non_camel_case_types, non_upper_case_globals)]
#![deny(unsafe_op_in_unsafe_fn)]

// In bundled mode the core crate provides every `mooncake_meta_*` symbol.
#[cfg(feature = "bundled")]
extern crate mooncake_meta as _;

#[rustfmt::skip]
mod bindings;
pub use bindings::*;

pub mod safe;
