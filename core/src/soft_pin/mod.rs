//! The fixed-lifecycle soft pin: the write intent ([`action`]), the
//! per-object state machine ([`state`]) and the master-level deadline
//! index ([`index`]).

pub mod action;
pub mod index;
pub mod state;

pub use action::{SoftPinAction, SoftPinIntent, SoftPinRequest};
pub use index::{DeadlineIndex, DueEntry, IndexStats, PopOutcome};
