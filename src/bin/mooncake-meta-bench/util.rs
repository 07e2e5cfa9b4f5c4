//! Shared pieces: the anchor's master and keys, memory probes, random
//! permutations, timed reader threads, latency percentiles, cache flushing
//! and the flat measurement record a child process prints.

use mooncake_meta_core::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant as Wall};

use crate::json::ObjWriter;

/// Manual-clock start of every master (ms).
pub const T0: u64 = 1_000_000;
/// The single writer client (segment owners are 1..=4).
pub const WRITER: ClientId = 100;
/// Object size of every write.
pub const SIZE: u64 = 1024;
/// Read lease (ms), as configured.
pub const LEASE: u64 = 10_000;
pub const MIN: u64 = 60_000;

/// The objects a benchmark master is presized for:
/// `MOONCAKE_META_BENCH_EXPECTED_OBJECTS` when set, else 0 (none).
pub fn expected_objects() -> u64 {
    std::env::var("MOONCAKE_META_BENCH_EXPECTED_OBJECTS").map_or(0, |v| {
        v.parse()
            .expect("MOONCAKE_META_BENCH_EXPECTED_OBJECTS is a count")
    })
}

/// Whether a presized benchmark master commits its tables at creation
/// (`commit_presized`): `MOONCAKE_META_BENCH_COMMIT_PRESIZED=1`.
pub fn commit_presized() -> bool {
    std::env::var("MOONCAKE_META_BENCH_COMMIT_PRESIZED").is_ok_and(|v| v == "1")
}

/// The anchor's master: manual clock, background work off, 4 memory
/// segments of 16 GiB with one owner client each.
pub fn master() -> Master {
    let m = Master::new(MasterConfig {
        expected_objects: expected_objects(),
        commit_presized: commit_presized(),
        ..MasterConfig::deterministic(T0)
    })
    .expect("master");
    for i in 0..4u64 {
        let spec = SegmentSpec {
            name: format!("mem{i}"),
            base: (i + 1) << 40,
            size: 16 << 30,
            pool: Pool::Memory,
        };
        m.mount_segment(i + 1, &spec).expect("mount");
    }
    m
}

/// `bench/key/%010d`, i = 0..n (20 bytes each).
pub fn keys(n: usize) -> Keys {
    keys_with("bench/key/", n)
}

/// `{prefix}%010d`, i = 0..n, in one flat buffer.
pub fn keys_with(prefix: &str, n: usize) -> Keys {
    assert!(
        n as u64 <= 10_000_000_000,
        "keys are numbered with 10 digits"
    );
    let width = prefix.len() + 10;
    let mut buf = String::with_capacity(n * width);
    for i in 0..n {
        let _ = write!(buf, "{prefix}{i:010}");
    }
    Keys { buf, width }
}

/// The harness's keys: all of one length, back to back in one contiguous
/// buffer (no allocation or pointer per key), key i at `i * width`.
pub struct Keys {
    buf: String,
    width: usize,
}

impl Keys {
    pub fn len(&self) -> usize {
        self.buf.len().checked_div(self.width).unwrap_or(0)
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        (0..self.len()).map(move |i| &self[i])
    }

    /// The first `n` keys, copied into a buffer of their own.
    pub fn head(&self, n: usize) -> Keys {
        Keys {
            buf: self.buf[..n * self.width].to_owned(),
            width: self.width,
        }
    }
}

impl std::ops::Index<usize> for Keys {
    type Output = str;

    #[inline]
    fn index(&self, i: usize) -> &str {
        &self.buf[i * self.width..(i + 1) * self.width]
    }
}

pub fn cfg(req: SoftPinRequest) -> WriteConfig {
    WriteConfig::default().with_soft_pin(req)
}

/// Whether throughput timings use the calling thread's CPU time instead of
/// wall time (`--cpu-time`, passed to children as MOONCAKE_BENCH_CLOCK=cpu):
/// on a shared machine, time spent descheduled then does not count.
pub fn cpu_clock() -> bool {
    static CPU: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *CPU.get_or_init(|| std::env::var("MOONCAKE_BENCH_CLOCK").is_ok_and(|v| v == "cpu"))
}

/// CPU time consumed by the calling thread.
pub fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; the clock id is a constant Linux supports.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Times a span of work on one thread: wall time, or the thread's CPU time
/// under `--cpu-time`. Latency probes always use wall time.
pub struct Stopwatch {
    wall: Wall,
    cpu: Duration,
}

impl Stopwatch {
    pub fn start() -> Self {
        Stopwatch {
            cpu: if cpu_clock() {
                thread_cpu()
            } else {
                Duration::ZERO
            },
            wall: Wall::now(),
        }
    }

    pub fn elapsed(&self) -> Duration {
        if cpu_clock() {
            thread_cpu().saturating_sub(self.cpu)
        } else {
            self.wall.elapsed()
        }
    }
}

/// PutStart + PutEnd(MEMORY) of one key; panics on failure (the harness
/// only writes what must succeed).
#[inline]
pub fn put(m: &MasterCore, key: &str, c: &WriteConfig) {
    m.put_start(WRITER, Key::new(key), SIZE, c)
        .expect("put_start");
    m.put_end(WRITER, Key::new(key), ReplicaSelector::Memory, None)
        .expect("put_end");
}

/// Items a block of an [`interleaved`] run holds before the other master's turn.
pub const BLOCK: usize = 4096;

/// The seed of [`costly_first`]'s order (fixed: every run, every build
/// puts the same pairs in the same order).
const ORDER_SEED: u64 = 0x0b1a_5ed0;

/// The two masters of an [`interleaved`] comparison: the reference
/// (unpinned, journal off) and the one whose extra cost is measured
/// (pinned, journal on). In an A/A run both are configured alike and the
/// names only tell them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Cheap,
    Costly,
}

/// For each of `pairs` block pairs, whether the costly master runs first in
/// it (arm 0) rather than second (arm 1): exactly half of the pairs (of an
/// odd count, one fewer), chosen by a fixed-seed shuffle. A fixed pattern
/// would line up with periodic work: alternating pair by pair (A0 A1 | A1
/// A0) put work the costly master does every second block pair (the pinned
/// index starts a new 8192-entry heap chunk every 2 blocks of 4096 keys)
/// always in the same arm, and ABBA over pairs would do the same to work
/// every 4th or 8th pair. A shuffle lines up with no period.
pub fn costly_first(pairs: usize) -> Vec<bool> {
    let mut order: Vec<bool> = (0..pairs).map(|i| i < pairs / 2).collect();
    let mut r = Rng::new(ORDER_SEED);
    for i in (1..pairs).rev() {
        let j = r.below(i + 1);
        order.swap(i, j);
    }
    order
}

/// Two masters over the same `n` items in one process: items `from..to`
/// go through both masters (`run(side, from, to)`, each call timed here),
/// a block of [`BLOCK`] at a time, one block pair after another. Within a
/// pair the two blocks run back to back; which master runs first (arm 0)
/// is [`costly_first`]'s choice for that pair, so each master holds each
/// arm in half of the pairs and the order is position-neutral. Both
/// masters are measured over the same stretch of time, so a change in the
/// machine's speed between two runs (this machine is shared) moves both
/// alike and their ratio keeps.
pub fn interleaved(n: usize, mut run: impl FnMut(Side, usize, usize)) -> Blocks {
    let mut timed = |side: Side, from: usize, to: usize| {
        let t = Stopwatch::start();
        run(side, from, to);
        t.elapsed()
    };
    let order = costly_first(n.div_ceil(BLOCK));
    let mut pairs = Vec::with_capacity(order.len());
    for (p, &costly_first) in order.iter().enumerate() {
        let (from, to) = (p * BLOCK, ((p + 1) * BLOCK).min(n));
        let (cheap, costly) = if costly_first {
            let costly = timed(Side::Costly, from, to);
            (timed(Side::Cheap, from, to), costly)
        } else {
            let cheap = timed(Side::Cheap, from, to);
            (cheap, timed(Side::Costly, from, to))
        };
        pairs.push(Pair {
            cheap,
            costly,
            costly_first,
        });
    }
    Blocks(pairs)
}

/// One block pair of an [`interleaved`] run: the same items through each
/// master, back to back.
#[derive(Debug, Clone, Copy)]
pub struct Pair {
    pub cheap: Duration,
    pub costly: Duration,
    /// The costly master ran first (arm 0); else second (arm 1).
    pub costly_first: bool,
}

impl Pair {
    /// The costly master's rate over the cheap one's in this pair.
    pub fn ratio(&self) -> f64 {
        self.cheap.as_secs_f64() / self.costly.as_secs_f64()
    }
}

/// Every block pair of an [`interleaved`] run, in run order.
pub struct Blocks(pub Vec<Pair>);

/// Where [`Blocks::sample`] puts its figures.
pub struct BlockNames<'a> {
    /// The cheap master's rate over all pairs (items/s).
    pub cheap_rate: &'a str,
    /// The costly master's rate over all pairs (items/s).
    pub costly_rate: &'a str,
    /// Costly ÷ cheap rate from the totals ([`Blocks::ratio`]).
    pub ratio: &'a str,
    /// Costly ÷ cheap rate, the median over all block pairs
    /// ([`Blocks::block_median_ratio`]).
    pub block_median: &'a str,
    /// The same median over the pairs the costly master ran first in.
    pub costly_arm0: &'a str,
    /// The same median over the pairs the costly master ran second in.
    pub costly_arm1: &'a str,
}

impl Blocks {
    /// Total time of (the cheap, the costly) master.
    pub fn totals(&self) -> (Duration, Duration) {
        (
            self.0.iter().map(|p| p.cheap).sum(),
            self.0.iter().map(|p| p.costly).sum(),
        )
    }

    /// The sample of a run over `n` items: both rates and the ratios under
    /// `names`, plus `block_pairs` and `block_pairs_costly_arm0` (how many
    /// pairs the costly master ran first in).
    pub fn sample(&self, n: usize, names: &BlockNames) -> Sample {
        let (cheap, costly) = self.totals();
        let (arm0, arm1) = self.position_medians();
        let mut s = Sample::default();
        s.set(names.cheap_rate, n as f64 / cheap.as_secs_f64());
        s.set(names.costly_rate, n as f64 / costly.as_secs_f64());
        s.set(names.ratio, self.ratio());
        s.set(names.block_median, self.block_median_ratio());
        s.set(names.costly_arm0, arm0);
        s.set(names.costly_arm1, arm1);
        s.set("block_pairs", self.0.len() as f64);
        s.set(
            "block_pairs_costly_arm0",
            self.0.iter().filter(|p| p.costly_first).count() as f64,
        );
        s
    }

    /// The costly master's rate over the cheap one's, from the totals
    /// (position-neutral: each master holds each arm in half of the pairs).
    pub fn ratio(&self) -> f64 {
        let (cheap, costly) = self.totals();
        cheap.as_secs_f64() / costly.as_secs_f64()
    }

    /// The same ratio as the median over the block pairs, each pair's two
    /// blocks taken one right after the other: a pair that lost a time
    /// slice to another process moves it no more than any other pair.
    pub fn block_median_ratio(&self) -> f64 {
        self.median_of(|_| true)
    }

    /// The block-pair median over the pairs the costly master ran first in
    /// (arm 0), and over those it ran second in (arm 1): apart, they show
    /// what the position alone does to the ratio.
    pub fn position_medians(&self) -> (f64, f64) {
        (
            self.median_of(|p| p.costly_first),
            self.median_of(|p| !p.costly_first),
        )
    }

    fn median_of(&self, keep: impl Fn(&Pair) -> bool) -> f64 {
        let r: Vec<f64> = self.0.iter().filter(|p| keep(p)).map(Pair::ratio).collect();
        // No pairs (a run of no items): no ratio.
        crate::report::median(&r).unwrap_or(f64::NAN)
    }
}

/// Writes every key with `cfg_of(i)`; returns the wall time.
pub fn put_all<'a>(
    m: &MasterCore,
    keys: &Keys,
    cfg_of: impl Fn(usize) -> &'a WriteConfig,
) -> Duration {
    let t = Stopwatch::start();
    for (i, k) in keys.iter().enumerate() {
        put(m, k, cfg_of(i));
    }
    t.elapsed()
}

/// VmRSS of this process, bytes.
pub fn vm_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmRSS line")
        * 1024
}

/// Times the calling thread has been descheduled involuntarily so far
/// (`nonvoluntary_ctxt_switches` of `/proc/thread-self/status`; 0 where it
/// cannot be read). The difference over a measured step tells a lock hold
/// stretched by a lost time slice from one that did more work.
pub fn preemptions() -> u64 {
    std::fs::read_to_string("/proc/thread-self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("nonvoluntary_ctxt_switches:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Bytes the C allocator has handed out (glibc `mallinfo2`): the heap
/// footprint without page-granularity and arena-retention noise.
pub fn heap_in_use() -> u64 {
    // SAFETY: mallinfo2 has no preconditions; it only reads allocator state.
    let mi = unsafe { libc::mallinfo2() };
    (mi.uordblks + mi.hblkhd) as u64
}

/// xorshift64*: deterministic, cheap, good enough for shuffles.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    #[inline]
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    #[inline]
    pub fn below(&mut self, n: usize) -> usize {
        (((self.next() >> 32) * n as u64) >> 32) as usize
    }
}

/// A random permutation of 0..n (Fisher–Yates).
pub fn permutation(n: usize, seed: u64) -> Vec<u32> {
    let mut p: Vec<u32> = (0..n as u32).collect();
    let mut r = Rng::new(seed);
    for i in (1..n).rev() {
        let j = (r.next() % (i as u64 + 1)) as usize;
        p.swap(i, j);
    }
    p
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadOp {
    Exist,
    /// `get_replica_list`: the allocating API, like upstream's vector.
    Get,
    /// `get_replica_list_into` with a reused buffer.
    GetInto,
}

pub struct ReadRun {
    pub ops: u64,
    pub secs: f64,
    pub failures: u64,
}

impl ReadRun {
    pub fn rate(&self) -> f64 {
        self.ops as f64 / self.secs
    }
}

/// `threads` threads each walk their own permutation `passes` times (the
/// manual clock moves 1 ms at the start of each pass); wall
/// time from a common start barrier to the last thread's end (under
/// `--cpu-time`: the largest CPU time of one thread). A call
/// "succeeds" when Exist says true / Get returns a readable replica.
pub fn read_run(
    m: &MasterCore,
    keys: &Keys,
    perms: &[Vec<u32>],
    threads: usize,
    passes: usize,
    op: ReadOp,
) -> ReadRun {
    assert!(perms.len() >= threads);
    let barrier = Barrier::new(threads + 1);
    let (secs, failures) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let perm = &perms[t];
                let barrier = &barrier;
                s.spawn(move || {
                    let mut fails = 0u64;
                    let mut buf = Vec::with_capacity(4);
                    barrier.wait();
                    let cpu = thread_cpu();
                    for _ in 0..passes {
                        // As a system clock would between passes: every read
                        // then really extends its lease (no same-instant
                        // shortcut), as upstream's reads do.
                        m.advance_time(1).expect("manual clock");
                        for &i in perm.iter() {
                            let k = Key::new(&keys[i as usize]);
                            let ok = match op {
                                ReadOp::Exist => matches!(m.exist(k), Ok(true)),
                                ReadOp::Get => m.get_replica_list(k).is_ok_and(|v| !v.is_empty()),
                                ReadOp::GetInto => {
                                    buf.clear();
                                    m.get_replica_list_into(k, &mut buf).is_ok()
                                }
                            };
                            fails += u64::from(!ok);
                        }
                    }
                    (fails, thread_cpu().saturating_sub(cpu))
                })
            })
            .collect();
        barrier.wait();
        let t = Wall::now();
        let (mut fails, mut cpu) = (0, Duration::ZERO);
        for h in handles {
            let (f, c) = h.join().unwrap();
            fails += f;
            cpu = cpu.max(c);
        }
        let wall = t.elapsed();
        (if cpu_clock() { cpu } else { wall }.as_secs_f64(), fails)
    });
    let ops = (threads * passes * perms[0].len()) as u64;
    ReadRun {
        ops,
        secs,
        failures,
    }
}

/// Latency percentile (0..=100) of unsorted samples, in ns.
pub fn percentile(samples: &mut [u64], p: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    samples.sort_unstable();
    let rank = ((p / 100.0) * (samples.len() - 1) as f64).round() as usize;
    samples[rank.min(samples.len() - 1)] as f64
}

/// Evicts the CPU caches by writing over a buffer much larger than any LLC,
/// so the next measured cycle starts cold whatever ran before it.
pub fn flush_caches() {
    thread_local! {
        static BUF: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![1u8; 128 << 20]);
    }
    BUF.with(|b| {
        let mut b = b.borrow_mut();
        for i in (0..b.len()).step_by(64) {
            b[i] = b[i].wrapping_add(1);
        }
        std::hint::black_box(&*b);
    });
}

/// Phases of a background latency probe (writer or reader thread).
pub const WARMUP: u8 = 0;
pub const BASELINE: u8 = 1;
pub const DURING: u8 = 2;
pub const STOP: u8 = 3;

pub fn phase(p: &AtomicU8) -> u8 {
    p.load(Ordering::Acquire)
}

/// What one child process measured: flat name → number.
#[derive(Default, Debug, Clone)]
pub struct Sample(pub BTreeMap<String, f64>);

impl Sample {
    pub fn set(&mut self, k: &str, v: f64) {
        self.0.insert(k.to_owned(), v);
    }

    pub fn secs(&mut self, k: &str, d: Duration) {
        self.set(k, d.as_secs_f64());
    }

    pub fn get(&self, k: &str) -> f64 {
        self.0.get(k).copied().unwrap_or(f64::NAN)
    }

    pub fn to_json(&self) -> String {
        let mut w = ObjWriter::new();
        for (k, v) in &self.0 {
            w.num(k, *v);
        }
        w.finish()
    }
}

/// Child-process parameters (`key=value` arguments).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Params(pub Vec<(String, String)>);

impl Params {
    pub fn new(kv: &[(&str, String)]) -> Self {
        Params(
            kv.iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
        )
    }

    pub fn str(&self, k: &str) -> &str {
        self.0
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("missing parameter {k}"))
    }

    pub fn usize(&self, k: &str) -> usize {
        self.str(k)
            .parse()
            .unwrap_or_else(|_| panic!("parameter {k} is not an integer"))
    }

    pub fn args(&self) -> Vec<String> {
        self.0.iter().map(|(k, v)| format!("{k}={v}")).collect()
    }

    pub fn parse(args: &[String]) -> Self {
        Params(
            args.iter()
                .map(|a| {
                    let (k, v) = a.split_once('=').expect("key=value");
                    (k.to_owned(), v.to_owned())
                })
                .collect(),
        )
    }

    pub fn label(&self) -> String {
        self.args().join(" ")
    }

    /// As figure parameters.
    pub fn pairs(&self) -> Vec<(&str, String)> {
        self.0
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect()
    }
}

/// What taking every entry out of a bare `DeadlineIndex` cost
/// ([`bare_index_pop`]).
pub struct BareIndexPops {
    /// The whole wave, ns.
    pub total_ns: f64,
    /// Of which the `pop_due` calls (lock holds of at most `POP_PER_HOLD`
    /// pops and the waits between them), ns.
    pub pops_ns: f64,
    /// Lock holds that popped entries.
    pub pop_holds: usize,
}

/// Time to take every entry out of a bare `DeadlineIndex` holding one entry
/// per element of `offsets` (entries name objects, not keys: the j-th names
/// target j, as a master's handles spread over 1024 shards), the j-th due
/// `offsets[j]` ms after `due`, all due at once, as cleanup takes them:
/// batches of `PIN_CLEANUP_BATCH` popped in holds of at most `POP_PER_HOLD`,
/// and once a share of the heap is popped the rest in one `take_due` pass
/// outside the lock. The index's share of a 100 %-due wave (cleanup's
/// validation under the shard locks is not in it). The cleanup scenario's
/// wave deals distinct offsets in a random order; the anchor's pins share
/// one deadline (all offsets 0).
pub fn bare_index_pop(due: u64, offsets: &[u32]) -> BareIndexPops {
    use mooncake_meta_core::soft_pin::{DeadlineIndex, PinTarget};
    let idx = DeadlineIndex::<PinTarget>::new();
    for (i, &off) in offsets.iter().enumerate() {
        let target = PinTarget::new((i % 1024) as u32, (i / 1024) as u32);
        idx.register(target, 1, due + u64::from(off), true);
    }
    let at = due + offsets.len() as u64;
    let mut out = Vec::with_capacity(PIN_CLEANUP_BATCH);
    flush_caches();
    let (mut pops_ns, mut pop_holds) = (0.0, 0);
    let t = Stopwatch::start();
    let mut popped = 0;
    loop {
        out.clear();
        let p = Stopwatch::start();
        let o = idx.pop_due(at, PIN_CLEANUP_BATCH, &mut out);
        pops_ns += p.elapsed().as_nanos() as f64;
        pop_holds += o.holds;
        popped += o.popped;
        if !o.more_due {
            break;
        }
        let mut taken = 0;
        idx.take_due(at, popped, &mut |_, due| taken += due.len());
        popped += taken;
    }
    let total_ns = t.elapsed().as_nanos() as f64;
    assert_eq!(popped, offsets.len());
    BareIndexPops {
        total_ns,
        pops_ns,
        pop_holds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_master_runs_first_in_half_of_the_pairs_in_no_period() {
        for pairs in [0, 1, 2, 3, 10, 245] {
            let order = costly_first(pairs);
            assert_eq!(order.len(), pairs);
            assert_eq!(order.iter().filter(|&&f| f).count(), pairs / 2);
            assert_eq!(order, costly_first(pairs), "a fixed order");
        }
        // Work every 2nd or 4th pair lands in both arms about equally.
        let order = costly_first(245);
        for period in [2, 4, 8] {
            for phase in 0..period {
                let hit: Vec<bool> = order.iter().skip(phase).step_by(period).copied().collect();
                let first = hit.iter().filter(|&&f| f).count() as f64 / hit.len() as f64;
                assert!(
                    (0.3..=0.7).contains(&first),
                    "period {period} phase {phase}: {first}"
                );
            }
        }
    }

    #[test]
    fn interleaved_runs_each_pair_on_the_same_items_in_the_chosen_order() {
        let n = 5 * BLOCK + 7;
        let mut calls = Vec::new();
        let blocks = interleaved(n, |side, from, to| calls.push((side, from, to)));
        let order = costly_first(6);
        assert_eq!(blocks.0.len(), 6);
        assert_eq!(calls.len(), 12);
        for (p, pair) in calls.chunks(2).enumerate() {
            let (from, to) = (p * BLOCK, ((p + 1) * BLOCK).min(n));
            let want = if order[p] {
                [(Side::Costly, from, to), (Side::Cheap, from, to)]
            } else {
                [(Side::Cheap, from, to), (Side::Costly, from, to)]
            };
            assert_eq!(pair, want);
            assert_eq!(blocks.0[p].costly_first, order[p]);
        }
    }

    #[test]
    fn ratios_are_costly_over_cheap_overall_and_by_arm() {
        let ms = Duration::from_millis;
        let pair = |cheap, costly, costly_first| Pair {
            cheap: ms(cheap),
            costly: ms(costly),
            costly_first,
        };
        // Costly first: rate ratios 0.5, 0.8, 1.0; second: 0.25, 0.4.
        let b = Blocks(vec![
            pair(5, 10, true),
            pair(4, 5, true),
            pair(10, 10, true),
            pair(1, 4, false),
            pair(2, 5, false),
        ]);
        assert_eq!(b.block_median_ratio(), 0.5);
        assert_eq!(b.position_medians(), (0.8, (0.25 + 0.4) / 2.0));
        assert!((b.ratio() - 22.0 / 34.0).abs() < 1e-12, "{}", b.ratio());
        let s = b.sample(
            10,
            &BlockNames {
                cheap_rate: "c",
                costly_rate: "d",
                ratio: "r",
                block_median: "m",
                costly_arm0: "m0",
                costly_arm1: "m1",
            },
        );
        assert_eq!(s.get("m0"), 0.8);
        assert_eq!(s.get("block_pairs"), 5.0);
        assert_eq!(s.get("block_pairs_costly_arm0"), 3.0);
        assert!(Blocks(Vec::new()).block_median_ratio().is_nan());
    }
}
