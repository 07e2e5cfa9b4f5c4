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
        let Some(c0) = cycle_counter() else {
            origin();
            return Source::Monotonic;
        };
        let t0 = Instant::now();
        while t0.elapsed() < CALIBRATION {
            std::hint::spin_loop();
        }
        let (dt, c1) = (t0.elapsed(), cycle_counter().unwrap_or(c0));
        let ns_per_tick = dt.as_nanos() as f64 / c1.saturating_sub(c0).max(1) as f64;
        if PLAUSIBLE.contains(&ns_per_tick) {
            Source::Counter(ns_per_tick)
        } else {
            origin();
            Source::Monotonic
        }
    })
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
        let src = source();
        HoldTimer {
            src,
            start: ticks(src),
        }
    }

    /// Nanoseconds since `start` (0 if the counter went back, as it may
    /// between cores that disagree).
    pub(crate) fn elapsed_ns(&self) -> u64 {
        let d = ticks(self.src).saturating_sub(self.start);
        match self.src {
            Source::Counter(ns_per_tick) => (d as f64 * ns_per_tick) as u64,
            Source::Monotonic => d,
        }
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
    /// it: declared after the guards it times, it drops just before them.
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

    /// Against the monotonic clock around it: a timed 5 ms spin reads
    /// between 4 ms and the clock's own measure plus 20 % (calibration
    /// error and the reads around it).
    #[test]
    fn a_timed_spin_reads_its_length() {
        calibrate();
        let outer = Instant::now();
        let t = HoldTimer::start();
        while outer.elapsed() < Duration::from_millis(5) {
            std::hint::spin_loop();
        }
        let got = t.elapsed_ns();
        let wall = u64::try_from(outer.elapsed().as_nanos()).unwrap();
        assert!(got >= 4_000_000, "{got} ns for a 5 ms spin");
        assert!(
            got <= wall + wall / 5,
            "{got} ns against {wall} ns of the clock"
        );
        assert!(matches!(source(), Source::Counter(_)) || cfg!(not(target_arch = "x86_64")));
    }
}
