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

/// Items a block of an [`interleaved`] run holds before the other arm's turn.
pub const BLOCK: usize = 4096;

/// Two arms over the same `n` items in one process: items `from..to` go
/// through arm 0 and then arm 1 (`run(arm, from, to)`, timed here), a
/// block of [`BLOCK`] at a time, and which arm goes first alternates from
/// block to block. Both arms are measured over the same stretch of time,
/// so a change in the machine's speed between two runs (this machine is
/// shared) moves both alike and their ratio keeps.
pub fn interleaved(n: usize, mut run: impl FnMut(usize, usize, usize)) -> Blocks {
    let mut timed = |arm: usize, from: usize, to: usize| {
        let t = Stopwatch::start();
        run(arm, from, to);
        t.elapsed()
    };
    let mut pairs = Vec::with_capacity(n.div_ceil(BLOCK));
    let mut start = 0;
    while start < n {
        let end = (start + BLOCK).min(n);
        pairs.push(if pairs.len() % 2 == 0 {
            let t0 = timed(0, start, end);
            (t0, timed(1, start, end))
        } else {
            let t1 = timed(1, start, end);
            (timed(0, start, end), t1)
        });
        start = end;
    }
    Blocks(pairs)
}

/// Each block's (arm 0, arm 1) times of an [`interleaved`] run.
pub struct Blocks(pub Vec<(Duration, Duration)>);

impl Blocks {
    /// Total time of each arm.
    pub fn totals(&self) -> (Duration, Duration) {
        (
            self.0.iter().map(|b| b.0).sum(),
            self.0.iter().map(|b| b.1).sum(),
        )
    }

    /// The sample of a run over `n` items: arm 0's and arm 1's rates, and
    /// arm 1's over arm 0's as [`ratio`](Self::ratio) and as
    /// [`block_median_ratio`](Self::block_median_ratio), under the four
    /// `names` in that order.
    pub fn sample(&self, n: usize, names: [&str; 4]) -> Sample {
        let (t0, t1) = self.totals();
        let mut s = Sample::default();
        s.set(names[0], n as f64 / t0.as_secs_f64());
        s.set(names[1], n as f64 / t1.as_secs_f64());
        s.set(names[2], self.ratio());
        s.set(names[3], self.block_median_ratio());
        s
    }

    /// Arm 1's rate over arm 0's, from the totals.
    pub fn ratio(&self) -> f64 {
        let (t0, t1) = self.totals();
        t0.as_secs_f64() / t1.as_secs_f64()
    }

    /// The same ratio as the median over the blocks (each block's two
    /// times taken one right after the other): a block that lost a time
    /// slice to another process moves it no more than any other block.
    pub fn block_median_ratio(&self) -> f64 {
        let mut r: Vec<f64> = self
            .0
            .iter()
            .map(|(a, b)| a.as_secs_f64() / b.as_secs_f64())
            .collect();
        r.sort_by(f64::total_cmp);
        // No blocks (a run of no items): no ratio.
        r.get(r.len() / 2).copied().unwrap_or(f64::NAN)
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

/// Time to pop every entry of a bare `DeadlineIndex` holding one entry per
/// key of `keys` (entries name objects, not keys: the i-th key's entry names
/// target i) all due at once, in batches as cleanup does: the index's share
/// of a 100 %-due wave (cleanup's validation under the shard locks is not
/// in it). With `distinct`
/// the i-th key's deadline is i ms after the first (as the cleanup
/// scenario's wave pins); otherwise all share one deadline (as the anchor's
/// pins, written at one manual-clock instant).
pub fn bare_index_pop_ns(keys: &[&str], distinct: bool) -> f64 {
    use mooncake_meta_core::soft_pin::{DeadlineIndex, PinTarget};
    let idx = DeadlineIndex::<PinTarget>::new();
    for i in 0..keys.len() as u64 {
        // As a master's handles: spread over 1024 shards, dense slots.
        let target = PinTarget::new((i % 1024) as u32, (i / 1024) as u32);
        let deadline = T0 + 30 * MIN + if distinct { i } else { 0 };
        idx.register(target, 1, deadline, true);
    }
    let mut out = Vec::with_capacity(CLEANUP_BATCH);
    flush_caches();
    let t = Stopwatch::start();
    let mut popped = 0;
    loop {
        out.clear();
        let o = idx.pop_due(T0 + 31 * MIN + keys.len() as u64, CLEANUP_BATCH, &mut out);
        popped += o.popped;
        if !o.more_due {
            break;
        }
    }
    let ns = t.elapsed().as_nanos() as f64;
    assert_eq!(popped, keys.len());
    ns
}
