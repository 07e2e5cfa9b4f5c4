//! Segments mounted by clients and the offset allocator that places replica
//! buffers inside each one.

pub mod allocator;
#[allow(clippy::module_inception)]
pub mod segment;
pub mod table;

pub use allocator::{AllocError, OffsetAllocator};
pub use segment::{BufferOwner, Segment};
pub use table::{Mounted, SegmentTable};
