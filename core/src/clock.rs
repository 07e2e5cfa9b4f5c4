//! Time as the master sees it: unsigned milliseconds since the Unix epoch,
//! read from one injectable clock per master. Only this module reads the
//! system time; a manual clock makes every deadline deterministic in tests.

use crate::error::{Error, ErrorKind, Result};
use std::sync::atomic::{AtomicU64, Ordering};

/// Milliseconds since the Unix epoch.
pub type Instant = u64;

/// The largest representable instant; deadline and lease arithmetic saturates
/// here and a saturated deadline never becomes due (the manual clock cannot
/// reach it and the system clock will not for 292 million years).
pub const MAX_INSTANT: Instant = i64::MAX as u64;

/// The instant `ttl_ms` after `now`, saturated at [`MAX_INSTANT`] (not at
/// `u64::MAX`: a snapshot may only hold instants up to `MAX_INSTANT`, so an
/// instant past it would make the master's own snapshot unrestorable).
/// Every lease, deadline and release instant the master computes goes
/// through here; never add a duration to an instant directly.
#[inline]
pub fn saturating_deadline(now: Instant, ttl_ms: u64) -> Instant {
    now.saturating_add(ttl_ms).min(MAX_INSTANT)
}

/// Which clock a master reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockSource {
    /// The operating system's real-time clock.
    System,
    /// A clock that only moves when told to, starting at the given instant.
    Manual { start_ms: Instant },
}

/// One master's clock.
#[derive(Debug)]
pub enum Clock {
    System,
    Manual(AtomicU64),
}

impl Clock {
    pub fn new(source: ClockSource) -> Result<Self> {
        match source {
            ClockSource::System => Ok(Clock::System),
            ClockSource::Manual { start_ms } => {
                if start_ms >= MAX_INSTANT {
                    return Err(Error::invalid(format!(
                        "manual clock start {start_ms} must be below MAX_INSTANT"
                    )));
                }
                Ok(Clock::Manual(AtomicU64::new(start_ms)))
            }
        }
    }

    #[inline]
    pub fn now(&self) -> Instant {
        match self {
            Clock::System => system_now(),
            Clock::Manual(t) => t.load(Ordering::Acquire),
        }
    }

    pub fn is_manual(&self) -> bool {
        matches!(self, Clock::Manual(_))
    }

    /// Sets a manual clock. Moving it backwards, or onto `MAX_INSTANT`, is
    /// rejected and leaves it unchanged.
    pub fn set(&self, to: Instant) -> Result<()> {
        let Clock::Manual(t) = self else {
            return Err(system_clock_error());
        };
        if to >= MAX_INSTANT {
            return Err(Error::invalid(format!(
                "manual clock cannot reach MAX_INSTANT ({MAX_INSTANT}); got {to}"
            )));
        }
        t.fetch_update(Ordering::AcqRel, Ordering::Acquire, |cur| {
            (to >= cur).then_some(to)
        })
        .map(|_| ())
        .map_err(|cur| {
            Error::new(
                ErrorKind::ClockUnsupported,
                format!("manual clock is monotonic: cannot set {to} before current {cur}"),
            )
        })
    }

    /// Advances a manual clock by `by_ms`; returns the new instant.
    pub fn advance(&self, by_ms: u64) -> Result<Instant> {
        let Clock::Manual(t) = self else {
            return Err(system_clock_error());
        };
        t.fetch_update(Ordering::AcqRel, Ordering::Acquire, |cur| {
            cur.checked_add(by_ms).filter(|&n| n < MAX_INSTANT)
        })
        .map(|prev| prev + by_ms)
        .map_err(|cur| {
            Error::invalid(format!(
                "advancing the manual clock from {cur} by {by_ms} ms would reach MAX_INSTANT"
            ))
        })
    }
}

fn system_clock_error() -> Error {
    Error::new(
        ErrorKind::ClockUnsupported,
        "this master reads the system clock; only a manual clock can be set or advanced",
    )
}

fn system_now() -> Instant {
    match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => (d.as_millis() as u64).min(MAX_INSTANT - 1),
        Err(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_is_monotonic_and_bounded() {
        let c = Clock::new(ClockSource::Manual { start_ms: 100 }).unwrap();
        assert_eq!(c.advance(50).unwrap(), 150);
        assert_eq!(c.set(90).unwrap_err().kind(), ErrorKind::ClockUnsupported);
        assert_eq!(c.now(), 150);
        assert_eq!(
            c.set(MAX_INSTANT).unwrap_err().kind(),
            ErrorKind::InvalidParams
        );
        assert!(c.advance(MAX_INSTANT).is_err());
        assert_eq!(c.now(), 150);
        c.set(150).unwrap();
    }

    #[test]
    fn system_clock_rejects_manual_moves() {
        let c = Clock::new(ClockSource::System).unwrap();
        assert_eq!(
            c.advance(1).unwrap_err().kind(),
            ErrorKind::ClockUnsupported
        );
        assert!(c.now() > 1_600_000_000_000);
    }

    #[test]
    fn deadlines_saturate() {
        assert_eq!(saturating_deadline(MAX_INSTANT - 1, 10), MAX_INSTANT);
        assert_eq!(saturating_deadline(u64::MAX, 1), MAX_INSTANT);
        assert_eq!(saturating_deadline(5, 10), 15);
    }
}
