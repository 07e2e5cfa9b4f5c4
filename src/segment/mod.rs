//! Segments mounted by clients and the offset allocator that places replica
//! buffers inside each one.

pub mod allocator;

pub use allocator::{AllocError, OffsetAllocator};
