//! # mooncake_meta_core
//!
//! The metadata master of the Mooncake KV-cache store — segments and
//! allocation, objects and replicas, leases, pins, groups, eviction,
//! copy/move/promotion and snapshots — with the **fixed-lifecycle soft pin**
//! of the upstream RFC (Mooncake issue #3028): a soft pin is an
//! eviction-priority hint whose deadline starts when a write first becomes
//! readable and is never extended by reads, and a deadline index makes
//! expiration cost proportional to what is due.
//!
//! This is the pure-Rust core: the safe API is this crate ([`Master`]), with
//! no C types, and `unsafe` code only in one audited memory module (huge-page
//! mappings, fill buffers, prefetches; every block with its SAFETY argument).
//! The C ABI (`libmooncake_meta`, the
//! `mooncake_meta` crate at the repository root) is a thin layer over it, and
//! the sys crate's safe layer mirrors this crate's names, so a program moves
//! between linking the C library and compiling this crate in by changing one
//! `use` line.
//!
//! ```
//! use mooncake_meta_core::*;
//! let m = Master::new(MasterConfig::deterministic(1_000)).unwrap();
//! m.mount_segment(1, &SegmentSpec { name: "seg0".into(), base: 0x1000, size: 1 << 20, pool: Pool::Memory }).unwrap();
//! let cfg = WriteConfig::default().with_soft_pin(SoftPinRequest::enable_for(60_000));
//! m.put_start(1, Key::new("k"), 4096, &cfg).unwrap();
//! m.put_end(1, Key::new("k"), ReplicaSelector::All, None).unwrap();
//! assert_eq!(m.soft_pin_deadline(Key::new("k")).unwrap(), Some(61_000));
//! m.get_replica_list(Key::new("k")).unwrap(); // reads never extend the pin
//! assert_eq!(m.run_cleanup_at(61_000).expired, 1);
//! ```

// Unsafe code lives in one audited module (`memory.rs`) and nowhere else.
#![deny(unsafe_code)]

pub mod clock;
pub mod config;
pub mod error;
pub mod journal;
pub mod segment;
pub mod snapshot;
pub mod soft_pin;
pub mod types;

mod arena;
mod cleanup;
mod debug_dump;
mod debug_scan;
mod discarded;
mod eviction;
mod group;
mod hold_timer;
mod invariants;
mod key;
mod maintenance;
mod master;
#[allow(unsafe_code)]
mod memory;
mod metrics;
mod object;
mod object_ref;
mod ops;
mod quiesce;
mod replicas;
mod retention;
mod shard;
mod slot_index;
mod standby;
mod task_replicas;
mod tenants;
#[cfg(test)]
mod test_rng;

pub use cleanup::CleanupStats;
pub use clock::{ClockSource, Instant, WallSource, MAX_INSTANT};
pub use config::{MasterConfig, MAX_DURATION_MS, MAX_EXPECTED_OBJECTS, MAX_JOURNAL_CAPACITY_BYTES};
pub use debug_dump::{ObjectDump, StateDump};
pub use error::{Error, ErrorKind, Result};
pub use eviction::EvictionReport;
pub use journal::ApplyReport;
pub use master::{
    Master, MasterCore, CLEANUP_BATCH, ID_RESERVE, PIN_CLEANUP_BATCH, PIN_CLEANUP_PER_LOCK,
};
pub use metrics::{MetricsSnapshot, SegmentUsage};
pub use ops::{Bounded, KeyPage, UnmountReport, MAX_PATTERN_BYTES};
pub use quiesce::QuiesceGuard;
#[cfg(feature = "test-hooks")]
pub use quiesce::{RaceHook, RacePoint};
pub use snapshot::restore::RestoreReport;
pub use soft_pin::{SoftPinAction, SoftPinIntent, SoftPinRequest};
pub use standby::PromoteReport;
pub use types::*;
