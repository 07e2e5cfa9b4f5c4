//! Timing of lock holds, and the longest one recorded ([`LongestHold`]):
//! the deadline indexes' `longest_hold_ns` and the eviction's longest
//! shard-lock hold. Holds are timed on per-key paths too (one pinned
//! put's registration under the index mutex in
//! `soft_pin::index::REGISTER_TIMED_EVERY`), so reading the time must cost
//! little: the CPU's time-stamp counter (`memory::cycle_counter`, ~10 ns)
//! where it runs at a constant rate, calibrated once per process against
//! the monotonic clock; the monotonic clock itself (25–40 ns a read,
//! twice a hold) where there is no usable counter.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::memory::cycle_counter;

/// How ticks are read and what one is worth.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// The time-stamp counter, at this many nanoseconds a tick.
    Counter(f64),
    /// Nanoseconds since `origin()`.
    Monotonic,
}

static SOURCE: OnceLock<Source> = OnceLock::new();

/// Spin this long against the monotonic clock to calibrate the counter.
const CALIBRATION: Duration = Duration::from_micros(200);

/// Counter rates believed (nanoseconds a tick): 100 MHz to 100 GHz.
const PLAUSIBLE: std::ops::RangeInclusive<f64> = 0.01..=10.0;

fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

fn source() -> Source {
    *SOURCE.get_or_init(|| {
        // The counter's readings lie inside the clock's: a preemption
        // between two reads lengthens the clock's interval, so a skewed
        // calibration makes holds read longer, never shorter.
        let t0 = Instant::now();
        let Some(c0) = cycle_counter() else {
            origin();
            return Source::Monotonic;
        };
        while t0.elapsed() < CALIBRATION {
            std::hint::spin_loop();
        }
        let c1 = cycle_counter().unwrap_or(c0);
        let dt = t0.elapsed();
        let src = calibrated(c0, c1, dt);
        if matches!(src, Source::Monotonic) {
            origin();
        }
        src
    })
}

/// The source a calibration settles on: the counter at the rate it showed
/// (`c0` to `c1` over `dt` of the monotonic clock) if that rate is
/// plausible, else the monotonic clock. Pure.
fn calibrated(c0: u64, c1: u64, dt: Duration) -> Source {
    let ns_per_tick = dt.as_nanos() as f64 / c1.saturating_sub(c0).max(1) as f64;
    if PLAUSIBLE.contains(&ns_per_tick) {
        Source::Counter(ns_per_tick)
    } else {
        Source::Monotonic
    }
}

/// Nanoseconds from tick `start` to tick `end` of `src` (0 if the counter
/// went back, as it may between cores that disagree; saturating). Pure.
fn ns_between(src: Source, start: u64, end: u64) -> u64 {
    let d = end.saturating_sub(start);
    match src {
        Source::Counter(ns_per_tick) => (d as f64 * ns_per_tick) as u64,
        Source::Monotonic => d,
    }
}

/// Calibrates now (a 200 µs spin, once per process), so the first timed
/// hold does not: called where deadline indexes are made, outside every
/// lock.
pub(crate) fn calibrate() {
    source();
}

fn ticks(src: Source) -> u64 {
    match src {
        Source::Counter(_) => cycle_counter().unwrap_or(0),
        Source::Monotonic => u64::try_from(origin().elapsed().as_nanos()).unwrap_or(u64::MAX),
    }
}

/// The start of a hold; [`elapsed_ns`](Self::elapsed_ns) when it ends.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HoldTimer {
    src: Source,
    start: u64,
}

impl HoldTimer {
    pub(crate) fn start() -> Self {
        Self::start_with(source())
    }

    fn start_with(src: Source) -> Self {
        HoldTimer {
            src,
            start: ticks(src),
        }
    }

    /// Nanoseconds since `start` (0 if the counter went back, as it may
    /// between cores that disagree).
    pub(crate) fn elapsed_ns(&self) -> u64 {
        ns_between(self.src, self.start, ticks(self.src))
    }
}

/// The longest hold recorded since creation or the last reset (ns): a
/// high-water mark that any thread raises and reads without a lock.
#[derive(Debug, Default)]
pub(crate) struct LongestHold(AtomicU64);

impl LongestHold {
    /// Raises the mark to `ns` if it is longer. Almost every hold is
    /// shorter than the mark: a plain load then spares it a locked
    /// read-modify-write on this shared word.
    #[inline]
    pub(crate) fn record(&self, ns: u64) {
        if ns > self.0.load(Relaxed) {
            self.0.fetch_max(ns, Relaxed);
        }
    }

    pub(crate) fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }

    /// Times a hold from now until the returned value drops, then records
    /// it: declared just before the guards it times, it drops just after
    /// them.
    pub(crate) fn time(&self) -> TimedHold<'_> {
        TimedHold {
            timer: HoldTimer::start(),
            into: self,
        }
    }

    pub(crate) fn reset(&self) {
        self.0.store(0, Relaxed);
    }
}

/// A hold being timed ([`LongestHold::time`]), recorded when dropped.
pub(crate) struct TimedHold<'a> {
    timer: HoldTimer,
    into: &'a LongestHold,
}

impl Drop for TimedHold<'_> {
    fn drop(&mut self) {
        self.into.record(self.timer.elapsed_ns());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The conversion, with the rate injected: ticks times the calibrated
    /// rate, truncated; nothing when the counter went back; saturating.
    #[test]
    fn ticks_convert_at_the_calibrated_rate() {
        let c = |ns_per_tick| Source::Counter(ns_per_tick);
        assert_eq!(ns_between(c(0.5), 1_000, 3_000), 1_000);
        assert_eq!(ns_between(c(2.5), 7, 7 + 4_000_000), 10_000_000);
        assert_eq!(ns_between(c(0.25), 0, 10), 2, "2.5 ns truncated");
        assert_eq!(ns_between(c(0.5), 5, 5), 0);
        assert_eq!(ns_between(c(0.5), 3_000, 1_000), 0, "the counter went back");
        assert_eq!(ns_between(c(10.0), 0, u64::MAX), u64::MAX, "saturates");
        // The monotonic clock's ticks are nanoseconds already.
        assert_eq!(ns_between(Source::Monotonic, 1_000, 4_001_000), 4_000_000);
        assert_eq!(ns_between(Source::Monotonic, 9, 2), 0);
    }

    /// The calibration's decision, with the readings injected: the rate the
    /// counter showed over the clock's interval when plausible (100 MHz to
    /// 100 GHz), the monotonic clock otherwise.
    #[test]
    fn calibration_keeps_a_plausible_rate_and_falls_back_otherwise() {
        let dt = Duration::from_micros(200);
        let rate = |c0: u64, c1: u64| match calibrated(c0, c1, dt) {
            Source::Counter(ns_per_tick) => Some(ns_per_tick),
            Source::Monotonic => None,
        };
        // A 3 GHz counter: 600 000 ticks in 200 µs.
        assert_eq!(rate(1_000, 601_000), Some(200_000.0 / 600_000.0));
        // The plausible range's ends: 10 ns a tick (100 MHz), 0.01 (100 GHz).
        assert_eq!(rate(0, 20_000), Some(10.0));
        assert_eq!(rate(0, 20_000_000), Some(0.01));
        // Just outside them, a stuck counter, one that went back: the clock.
        assert_eq!(rate(0, 19_999), None, "slower than 100 MHz");
        assert_eq!(rate(0, 20_000_001), None, "faster than 100 GHz");
        assert_eq!(rate(5, 5), None, "a stuck counter");
        assert_eq!(rate(601_000, 1_000), None, "a counter that went back");
    }

    /// An order-of-magnitude check of a whole timing, with the source that
    /// cannot be miscalibrated (a preempted calibration skews a counter's
    /// rate): a timer over a 4 ms sleep reads at least 4 ms of the
    /// monotonic clock. Preemption and a slow machine only lengthen it.
    #[test]
    fn a_timer_over_a_sleep_reads_at_least_the_sleep() {
        let t = HoldTimer::start_with(Source::Monotonic);
        std::thread::sleep(Duration::from_millis(4));
        let got = t.elapsed_ns();
        assert!(got >= 4_000_000, "{got} ns for a 4 ms sleep");
    }
}
