//! # mooncake-meta-sys
//!
//! Raw declarations of libmooncake_meta's C ABI (`include/mooncake_meta.h`):
//! every function, struct, opaque type and constant of the header, under
//! the header's names, generated from it (see `tests/header_gen`), plus
//! [`safe`], a safe layer that mirrors the core crate (`mooncake_meta_core`)
//! name for name, so a program moves between the two by changing one `use`
//! line.
//!
//! Linking is the build script's business: the prebuilt shared library by
//! default, the static archive with feature `static`, or the C-ABI crate (with
//! the core) compiled into the graph with feature `bundled` (see `build.rs`). A
//! dependent's binary finds the shared library at run time through an
//! rpath to `DEP_MOONCAKE_META_RPATH` (see README.md).
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
