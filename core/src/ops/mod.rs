//! The master's operations, one file per area. Each is an `impl MasterCore`
//! block; every rejection happens before any side effect.

mod batch;
mod journal;
mod promotion;
mod put;
mod read;
mod remove;
pub use remove::MAX_PATTERN_BYTES;
mod replication;
mod segments;
mod upsert;

pub use read::Bounded;
pub use read::KeyPage;
pub use segments::UnmountReport;
