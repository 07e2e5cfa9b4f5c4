//! The fixed-lifecycle soft pin: the write intent ([`action`]), the
//! per-object state machine ([`state`]), the master-level deadline index
//! ([`index`], entries naming a [`target`]) and the keyed flavour of that
//! index that group retention uses ([`keyed`]).

pub mod action;
pub mod index;
pub mod keyed;
pub mod state;
pub mod target;

pub use action::{SoftPinAction, SoftPinIntent, SoftPinRequest};
pub use index::{DeadlineIndex, Entry, IndexStats, PopOutcome};
pub use target::PinTarget;
