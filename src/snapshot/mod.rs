//! Snapshots: the image model, its binary codec and file I/O.

pub mod codec;
pub mod file;
pub mod image;
mod validate;
