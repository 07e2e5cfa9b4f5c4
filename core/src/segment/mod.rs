//! Segments mounted by clients and the offset allocator that places replica
//! buffers inside each one and records each buffer's owner in its block.

mod adjacent;
pub mod allocator;
mod blocks;
mod chunked;
mod holes;
#[allow(clippy::module_inception)]
pub mod segment;
pub mod table;

pub use allocator::{AllocError, Block, BlockId, OffsetAllocator};
pub use segment::{BufferOwner, LiveBuffer, Segment};
pub use table::{Mounted, Placed, SegmentTable};
