//! Snapshots: the image model, its binary codec, file I/O, capture and
//! restore.

pub mod capture;
pub mod codec;
pub mod file;
pub mod image;
pub mod remap;
pub mod restore;
mod validate;
