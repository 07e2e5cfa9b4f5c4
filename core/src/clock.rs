//! Time as the master sees it: unsigned milliseconds on the master's
//! timeline — anchored to the Unix epoch once, when the master is created,
//! then advanced by a monotonic clock — read from one injectable clock per
//! master. Only this module reads the system time; a manual clock makes
//! every deadline deterministic in tests. The wall clock is read beside the
//! timeline only for the skew metric, for snapshots and, with a journal,
//! once per maintenance tick to record a moved skew (a `Timeline` record,
//! `journal/capture.rs`) (docs/CONTRACT.md §1, §12.1).

use crate::error::{Error, ErrorKind, Result};
use std::fmt;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

/// Milliseconds on the master's timeline (since the Unix epoch at creation).
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
#[derive(Debug, Clone, PartialEq)]
pub enum ClockSource {
    /// The master's timeline: anchored to the operating system's real-time
    /// clock once, when the master is created, then advanced by the
    /// monotonic clock, so a step of the wall clock (NTP, an operator)
    /// changes no lifetime and `now` never goes backwards.
    System,
    /// The same timeline, with the wall clock read from `wall` instead of
    /// the operating system (the anchor, the skew metric and the wall
    /// record of a snapshot): how tests and simulations step the wall.
    SystemWithWall(WallSource),
    /// A clock that only moves when told to, starting at the given instant.
    /// It drives the timeline and the wall together (skew 0) unless the wall
    /// is set apart with `Master::set_wall_time` (which a primary with a
    /// journal records as a `Timeline` record).
    Manual { start_ms: Instant },
}

/// A wall clock read as milliseconds since the Unix epoch.
#[derive(Clone)]
pub struct WallSource(Arc<dyn Fn() -> Instant + Send + Sync>);

impl WallSource {
    /// A wall clock that calls `read` each time it is read.
    pub fn new(read: impl Fn() -> Instant + Send + Sync + 'static) -> Self {
        WallSource(Arc::new(read))
    }

    /// The operating system's real-time clock.
    pub fn os() -> Self {
        WallSource::new(os_wall_now)
    }

    fn read(&self) -> Instant {
        (self.0)().min(MAX_INSTANT - 1)
    }
}

impl fmt::Debug for WallSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WallSource(..)")
    }
}

/// Two wall sources are equal when they are the same source.
impl PartialEq for WallSource {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// One master's clock: the timeline its instants live on, and the wall
/// clock beside it (read only for the skew and for snapshots).
#[derive(Debug)]
pub enum Clock {
    System(Timeline),
    Manual {
        now: AtomicU64,
        /// `wall − timeline` in ms; 0 unless set with [`Clock::set_wall`].
        wall_offset: AtomicI64,
    },
}

/// A monotonic timeline anchored to the wall clock once. Kept in
/// nanoseconds and cut to milliseconds only when read, so its instants and
/// the skew against the wall are one reading each: a timeline and a wall
/// floored to milliseconds apart would put the skew at 0 or -1 ms by
/// chance, with no wall step at all.
#[derive(Debug)]
pub struct Timeline {
    /// The timeline's reading at `origin`, ns since the Unix epoch: the
    /// wall at creation, moved only by [`Clock::adopt_skew`] (a standby
    /// taking its primary's timeline).
    anchor_ns: AtomicU64,
    origin: std::time::Instant,
    /// `None` reads the operating system's wall clock directly.
    wall: Option<WallSource>,
}

/// Nanoseconds in a millisecond.
const NS_PER_MS: u64 = 1_000_000;

impl Timeline {
    fn new(wall: Option<WallSource>) -> Self {
        let wall_ns = wall_ns(wall.as_ref());
        Timeline {
            anchor_ns: AtomicU64::new(wall_ns),
            origin: std::time::Instant::now(),
            wall,
        }
    }

    /// Nanoseconds since `origin`, saturating.
    #[inline]
    fn elapsed_ns(&self) -> u64 {
        // Whole seconds and the nanosecond part in u64 (as_nanos is u128
        // arithmetic, a measurable share of a ~30 ns clock read).
        let d = self.origin.elapsed();
        d.as_secs()
            .saturating_mul(1_000_000_000)
            .saturating_add(u64::from(d.subsec_nanos()))
    }

    /// The timeline now, ns since the Unix epoch (saturating: u64 ns last
    /// until the year 2554, and the instants cut from it stay below
    /// `MAX_INSTANT` for ever after).
    #[inline]
    fn now_ns(&self) -> u64 {
        self.anchor_ns
            .load(Ordering::Relaxed)
            .saturating_add(self.elapsed_ns())
    }

    /// Moves the timeline to read the wall plus `skew` ms from now on.
    fn adopt_skew(&self, skew: i64) {
        let target = i128::from(wall_ns(self.wall.as_ref())) + i128::from(skew) * 1_000_000;
        let anchor = (target - i128::from(self.elapsed_ns())).clamp(0, i128::from(u64::MAX));
        self.anchor_ns.store(anchor as u64, Ordering::Relaxed);
    }

    #[inline]
    fn now(&self) -> Instant {
        ms_of(self.now_ns())
    }

    fn wall(&self) -> Instant {
        ms_of(wall_ns(self.wall.as_ref()))
    }

    /// `timeline − wall` from one reading of each in ns, rounded to the
    /// nearest ms: 0 for as long as neither is stepped nor drifts.
    fn skew(&self) -> i64 {
        let t = self.now_ns();
        let w = wall_ns(self.wall.as_ref());
        let diff = i128::from(t) - i128::from(w);
        let ms = (diff + i128::from(NS_PER_MS / 2)).div_euclid(i128::from(NS_PER_MS));
        ms.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }
}

/// The wall now in ns since the Unix epoch: `source` (read in ms), or the
/// operating system's.
fn wall_ns(source: Option<&WallSource>) -> u64 {
    match source {
        Some(w) => w.read().saturating_mul(NS_PER_MS),
        None => match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            Ok(d) => d
                .as_secs()
                .saturating_mul(1_000_000_000)
                .saturating_add(u64::from(d.subsec_nanos())),
            Err(_) => 0,
        },
    }
}

/// The operating system's wall clock in ms, below `MAX_INSTANT`.
fn os_wall_now() -> Instant {
    ms_of(wall_ns(None))
}

/// The instant (ms, below `MAX_INSTANT`) of `ns` since the Unix epoch.
#[inline]
fn ms_of(ns: u64) -> Instant {
    (ns / NS_PER_MS).min(MAX_INSTANT - 1)
}

impl Clock {
    pub fn new(source: ClockSource) -> Result<Self> {
        match source {
            ClockSource::System => Ok(Clock::System(Timeline::new(None))),
            ClockSource::SystemWithWall(wall) => Ok(Clock::System(Timeline::new(Some(wall)))),
            ClockSource::Manual { start_ms } => {
                if start_ms >= MAX_INSTANT {
                    return Err(Error::invalid(format!(
                        "manual clock start {start_ms} must be below MAX_INSTANT"
                    )));
                }
                Ok(Clock::Manual {
                    now: AtomicU64::new(start_ms),
                    wall_offset: AtomicI64::new(0),
                })
            }
        }
    }

    /// The current instant on the master's timeline.
    #[inline]
    pub fn now(&self) -> Instant {
        match self {
            Clock::System(t) => t.now(),
            Clock::Manual { now, .. } => now.load(Ordering::Acquire),
        }
    }

    /// The wall clock now (ms since the Unix epoch), clamped to
    /// `[0, MAX_INSTANT)`. Never used for a deadline.
    pub fn wall(&self) -> Instant {
        match self {
            Clock::System(t) => t.wall(),
            Clock::Manual { now, wall_offset } => offset_instant(
                now.load(Ordering::Acquire),
                wall_offset.load(Ordering::Acquire),
            ),
        }
    }

    /// How far two readings of [`skew`](Self::skew) may differ with no
    /// wall step, in ms: 0 for a manual clock (its skew is exact); 1 for a
    /// system clock, whose wall may read in whole ms (an injected
    /// `WallSource`) while its timeline runs in ns, so their rounded
    /// difference can flip by one between readings.
    pub(crate) fn skew_resolution_ms(&self) -> u64 {
        match self {
            Clock::Manual { .. } => 0,
            Clock::System(_) => 1,
        }
    }

    /// `timeline − wall` in ms: how far the master's instants have drifted
    /// from the wall clock since it was created (0 for a manual clock whose
    /// wall was never set apart).
    pub fn skew(&self) -> i64 {
        match self {
            Clock::System(t) => t.skew(),
            // From one reading of the timeline and the wall as `wall()`
            // clamps it: a snapshot records that wall, so a restore on the
            // same clock shifts nothing even when the wall was set near its
            // bound (the negated offset alone is the skew only while the
            // wall is not clamped).
            Clock::Manual { now, wall_offset } => {
                let t = now.load(Ordering::Acquire);
                skew_of(t, offset_instant(t, wall_offset.load(Ordering::Acquire)))
            }
        }
    }

    /// A standby takes its primary's skew, read from an image of the
    /// primary's state it installs or from a `Timeline` record of the
    /// primary's journal (docs/CONTRACT.md section 12.1): a system
    /// timeline moves to read its wall plus `skew`, the primary's timeline
    /// as far as the two walls agree, so a promoted standby and its
    /// snapshots see the primary's instants as the primary did (its `now`
    /// may move either way: a standby decides nothing by it); a manual
    /// clock keeps its instant, which its test drives, and sets its wall
    /// `skew` apart, so its snapshots record the primary's skew.
    pub fn adopt_skew(&self, skew: i64) {
        match self {
            Clock::System(t) => t.adopt_skew(skew),
            Clock::Manual { wall_offset, .. } => {
                wall_offset.store(skew.saturating_neg(), Ordering::Release)
            }
        }
    }

    /// The timeline now and the wall that goes with it, for a snapshot's
    /// record: `now − skew` (clamped as [`wall`](Self::wall) clamps), so a
    /// restore on the same clock, whose skew has not moved, shifts nothing.
    /// Two separate readings, each cut to ms, could differ by one ms and
    /// shift every instant of such a restore by it.
    pub fn now_and_wall(&self) -> (Instant, Instant) {
        let now = self.now();
        (now, offset_instant(now, self.skew().saturating_neg()))
    }

    pub fn is_manual(&self) -> bool {
        matches!(self, Clock::Manual { .. })
    }

    /// Sets a manual clock. Moving it backwards, or onto `MAX_INSTANT`, is
    /// rejected and leaves it unchanged. The wall moves with it.
    pub fn set(&self, to: Instant) -> Result<()> {
        let Clock::Manual { now, .. } = self else {
            return Err(system_clock_error());
        };
        if to >= MAX_INSTANT {
            return Err(Error::invalid(format!(
                "manual clock cannot reach MAX_INSTANT ({MAX_INSTANT}); got {to}"
            )));
        }
        now.fetch_update(Ordering::AcqRel, Ordering::Acquire, |cur| {
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

    /// Advances a manual clock by `by_ms`; returns the new instant. The wall
    /// moves with it.
    pub fn advance(&self, by_ms: u64) -> Result<Instant> {
        let Clock::Manual { now, .. } = self else {
            return Err(system_clock_error());
        };
        now.fetch_update(Ordering::AcqRel, Ordering::Acquire, |cur| {
            cur.checked_add(by_ms).filter(|&n| n < MAX_INSTANT)
        })
        .map(|prev| prev + by_ms)
        .map_err(|cur| {
            Error::invalid(format!(
                "advancing the manual clock from {cur} by {by_ms} ms would reach MAX_INSTANT"
            ))
        })
    }

    /// Sets the wall clock of a manual clock apart from its timeline (a wall
    /// step, in a test): the timeline, and so every lifetime, is unchanged;
    /// only the skew, and the wall recorded in snapshots, move. The wall
    /// then keeps its distance from the timeline as the clock advances.
    pub fn set_wall(&self, wall: Instant) -> Result<()> {
        let Clock::Manual { now, wall_offset } = self else {
            return Err(Error::new(
                ErrorKind::ClockUnsupported,
                "this master reads the system clock; only a manual clock's wall can be set",
            ));
        };
        if wall >= MAX_INSTANT {
            return Err(Error::invalid(format!(
                "wall clock {wall} must be below MAX_INSTANT ({MAX_INSTANT})"
            )));
        }
        // Both below MAX_INSTANT = i64::MAX: the difference fits in i64.
        let offset = wall as i64 - now.load(Ordering::Acquire) as i64;
        wall_offset.store(offset, Ordering::Release);
        Ok(())
    }
}

/// `t + offset` clamped to `[0, MAX_INSTANT - 1]`.
fn offset_instant(t: Instant, offset: i64) -> Instant {
    let v = i128::from(t) + i128::from(offset);
    v.clamp(0, i128::from(MAX_INSTANT - 1)) as Instant
}

/// `timeline − wall`, saturating in i64.
pub(crate) fn skew_of(timeline: Instant, wall: Instant) -> i64 {
    (i128::from(timeline) - i128::from(wall)).clamp(i128::from(i64::MIN), i128::from(i64::MAX))
        as i64
}

/// Moves an instant stored under one skew onto a timeline with another:
/// `t + (skew_now − skew_then)`, saturating within `[0, MAX_INSTANT]`.
/// `MAX_INSTANT` itself means "never" (a saturated deadline) and stays.
pub fn remap_instant(t: Instant, delta: i64) -> Instant {
    if t >= MAX_INSTANT || delta == 0 {
        return t.min(MAX_INSTANT);
    }
    (i128::from(t) + i128::from(delta)).clamp(0, i128::from(MAX_INSTANT)) as Instant
}

/// The shift restore applies to a snapshot's instants: the skew now minus
/// the skew at capture (`created_at − wall_at_capture`), saturating.
pub fn restore_shift(skew_now: i64, created_at: Instant, wall_at_capture: Instant) -> i64 {
    let then = i128::from(created_at) - i128::from(wall_at_capture);
    (i128::from(skew_now) - then).clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

fn system_clock_error() -> Error {
    Error::new(
        ErrorKind::ClockUnsupported,
        "this master reads the system clock; only a manual clock can be set or advanced",
    )
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
