//! Snapshots: the image model, its binary codec and file I/O.

pub mod image;
