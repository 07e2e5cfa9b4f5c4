//! The per-object soft-pin state machine (docs/CONTRACT.md §4.2–§4.3) as pure
//! functions. They never touch the index or the gauge: they return a
//! [`Delta`] that the master applies, so the table of transitions is tested
//! here without a master.

use super::action::SoftPinIntent;
use crate::clock::{saturating_deadline, Instant};

/// What the master must do to the deadline index after a transition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexOp {
    None,
    /// (Re-)register the key with this deadline.
    Register(Instant),
    /// Remove the key's registration.
    Unregister,
}

/// The side effects of one committed-state transition: the gauge change
/// (owned by whoever moves committed between none and some) and the index
/// mutation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delta {
    pub gauge: i64,
    pub index: IndexOp,
}

impl Delta {
    pub const NONE: Delta = Delta {
        gauge: 0,
        index: IndexOp::None,
    };
    /// A committed deadline disappears (cleared, normalised or object erased).
    pub const DROPPED: Delta = Delta {
        gauge: -1,
        index: IndexOp::Unregister,
    };
}

/// Commit rule (§4.3): the new committed deadline when `intent` commits at
/// `now` over `committed`, and the delta to apply.
pub fn commit(
    committed: Option<Instant>,
    intent: SoftPinIntent,
    now: Instant,
) -> (Option<Instant>, Delta) {
    match intent {
        SoftPinIntent::Enable { ttl_ms } if ttl_ms > 0 => {
            let deadline = saturating_deadline(now, ttl_ms);
            let gauge = if committed.is_some() { 0 } else { 1 };
            (
                Some(deadline),
                Delta {
                    gauge,
                    index: IndexOp::Register(deadline),
                },
            )
        }
        SoftPinIntent::Preserve => match committed {
            Some(d) if now < d => (Some(d), Delta::NONE),
            Some(_) => (None, Delta::DROPPED),
            None => (None, Delta::NONE),
        },
        // ENABLE with TTL 0 commits ordinary cache, exactly like DISABLE.
        SoftPinIntent::Enable { .. } | SoftPinIntent::Disable => match committed {
            Some(_) => (None, Delta::DROPPED),
            None => (None, Delta::NONE),
        },
    }
}

/// Carry rule (§4.5) for replacement metadata (case C, preemption → A):
/// an unexpired deadline is carried (gauge-neutral, stays registered), an
/// expired one is dropped.
pub fn carry(committed: Option<Instant>, now: Instant) -> (Option<Instant>, Delta) {
    match committed {
        Some(d) if now < d => (Some(d), Delta::NONE),
        Some(_) => (None, Delta::DROPPED),
        None => (None, Delta::NONE),
    }
}

/// Whether a committed deadline protects the object at `now` (§4.7).
#[inline]
pub fn is_active(committed: Option<Instant>, now: Instant) -> bool {
    matches!(committed, Some(d) if now < d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::MAX_INSTANT;
    use SoftPinIntent::*;

    const NOW: Instant = 1_000;

    fn reg(d: Instant) -> IndexOp {
        IndexOp::Register(d)
    }

    // §4.3 table, one test per cell: (committed before, intent) -> (after, gauge, index).
    #[test]
    fn commit_table_from_none() {
        assert_eq!(commit(None, Preserve, NOW), (None, Delta::NONE));
        assert_eq!(
            commit(None, Enable { ttl_ms: 5 }, NOW),
            (
                Some(1_005),
                Delta {
                    gauge: 1,
                    index: reg(1_005)
                }
            )
        );
        assert_eq!(commit(None, Enable { ttl_ms: 0 }, NOW), (None, Delta::NONE));
        assert_eq!(commit(None, Disable, NOW), (None, Delta::NONE));
    }

    #[test]
    fn commit_table_from_active() {
        let d = Some(2_000);
        assert_eq!(commit(d, Preserve, NOW), (d, Delta::NONE));
        // a later ENABLE replaces the deadline even when it is shorter
        assert_eq!(
            commit(d, Enable { ttl_ms: 5 }, NOW),
            (
                Some(1_005),
                Delta {
                    gauge: 0,
                    index: reg(1_005)
                }
            )
        );
        assert_eq!(commit(d, Enable { ttl_ms: 0 }, NOW), (None, Delta::DROPPED));
        assert_eq!(commit(d, Disable, NOW), (None, Delta::DROPPED));
    }

    #[test]
    fn commit_table_from_stored_expired() {
        let d = Some(NOW); // now >= deadline: expired
        assert_eq!(commit(d, Preserve, NOW), (None, Delta::DROPPED));
        assert_eq!(
            commit(d, Enable { ttl_ms: 7 }, NOW),
            (
                Some(1_007),
                Delta {
                    gauge: 0,
                    index: reg(1_007)
                }
            )
        );
        assert_eq!(commit(d, Enable { ttl_ms: 0 }, NOW), (None, Delta::DROPPED));
        assert_eq!(commit(d, Disable, NOW), (None, Delta::DROPPED));
    }

    #[test]
    fn commit_saturates_at_max_instant() {
        let (after, delta) = commit(None, Enable { ttl_ms: u64::MAX }, MAX_INSTANT - 1);
        assert_eq!(after, Some(MAX_INSTANT));
        assert_eq!(delta.index, reg(MAX_INSTANT));
    }

    #[test]
    fn carry_keeps_only_unexpired_deadlines() {
        assert_eq!(carry(Some(NOW + 1), NOW), (Some(NOW + 1), Delta::NONE));
        assert_eq!(carry(Some(NOW), NOW), (None, Delta::DROPPED));
        assert_eq!(carry(None, NOW), (None, Delta::NONE));
    }

    #[test]
    fn active_means_strictly_before_deadline() {
        assert!(is_active(Some(NOW + 1), NOW));
        assert!(!is_active(Some(NOW), NOW));
        assert!(!is_active(None, NOW));
    }
}
