//! # mooncake_meta
//!
//! The metadata master of the Mooncake KV-cache store — segments and
//! allocation, objects and replicas, leases, pins, groups, eviction,
//! copy/move/promotion and snapshots — with the **fixed-lifecycle soft pin**
//! of the upstream RFC (Mooncake issue #3028): a soft pin is an
//! eviction-priority hint whose deadline starts when a write first becomes
//! readable and is never extended by reads, and a deadline index makes
//! expiration cost proportional to what is due.
//!
//! The safe Rust API is this crate ([`Master`]); the C ABI lives in `ffi`
//! and is the only place with `unsafe` foreign-facing code.

pub mod clock;
pub mod config;
pub mod error;
pub mod ffi;
pub mod segment;
pub mod snapshot;
pub mod soft_pin;
pub mod types;

pub use clock::{ClockSource, Instant, MAX_INSTANT};
pub use config::MasterConfig;
pub use error::{Error, ErrorKind, Result};
pub use soft_pin::{SoftPinAction, SoftPinIntent, SoftPinRequest};
pub use types::*;
