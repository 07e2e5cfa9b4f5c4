//! `scale`: the scale issue's workload (the anchor's keys, 1 KiB objects, 1
//! memory replica, every 10th key pinned) at growing N, each case a fresh
//! process (bench/README.md, "Scale targets"):
//!
//! * `main` (manual clock): put pairs/s, memory per object with the key
//!   bytes, Exist / Get 1 thread on random keys, batch Exist / Get of 64
//!   keys a call, non-forced Remove in a random order; at the largest N the
//!   latency of one dependent random memory access (a pointer chase over a
//!   1 GiB random cycle) measured in the same process, and Exist in units
//!   of it: of a chase on 4 KiB pages for a master whose tables are on 4
//!   KiB pages, of one on huge pages for a master with committed tables
//!   (`commit_presized`, on huge pages where the kernel gives them).
//! * `sysclock`: the same reads on a master reading the system clock (Get
//!   grants a lease, so it reads the clock on every call).
//! * `cleanup` (scale run): every pin with a deadline of its own, the
//!   distinct deadlines dealt in a random order, one cycle at the instant
//!   all are due (ns per expired pin), the longest index-mutex hold while
//!   registering the pins, in the cycle and in TTL churn, and one eviction
//!   pass (ns per object examined) after the objects were given leases in
//!   a random order; a second process (`order=insertion`) measures the
//!   same wave with the deadlines in insertion order and the eviction with
//!   no lease given (victims the first objects inserted), reported as
//!   `..._in_insertion_order` and `..._clustered`.
//! * `footprint` (scale run, 10^8 objects): built only when a projection
//!   from a 10^6 pilot (its own process) and a reserve fit in
//!   MemAvailable; otherwise the figure says "not measured", why, and the
//!   projection. Every build also stops, reporting "not measured", when
//!   MemAvailable falls below the reserve, so no case is ever OOM-killed
//!   (a stopped footprint build still reports the bytes per object it
//!   measured up to where it stopped).
//!
//! A target stated at some N (bench/README.md, "Scale targets") is judged
//! only from that N on; below it the figure prints `met: null` and a note
//! saying at which N the target applies (see [`judged_from`]).
//!
//! The harness reads its keys from a buffer laid out in the order of the
//! calls (see [`Ordered`]), so that its own key fetch is a sequential
//! stream and not a second random memory access per call.

use crate::evict::scatter_leases;
use crate::report::{median, Better, Figure, Target};
use crate::util::*;
use crate::{Mode, Results, Scenario};
use mooncake_meta_core::*;
use std::fmt::Write as _;
use std::time::Duration;

pub const SCENARIO: Scenario = Scenario {
    name: "scale",
    about: "scale targets at 10^5..10^7 (10^8 footprint with --scale): reads, batch, puts, \
            removes, DRAM-access calibration, system-clock reads, cleanup, eviction",
    cases,
    child,
    figures,
};

const K: usize = 1_000;
const M: usize = 1_000_000;

/// Main-curve sizes; the largest one carries the pointer-chase calibration.
fn curve(mode: Mode) -> Vec<usize> {
    if mode.quick {
        vec![10 * K]
    } else if mode.scale {
        vec![100 * K, M, 10 * M]
    } else {
        vec![100 * K, M]
    }
}

/// Sizes of the system-clock read cases.
fn sysclock_sizes(mode: Mode) -> Vec<usize> {
    if mode.quick {
        vec![10 * K]
    } else if mode.scale {
        vec![M, 10 * M]
    } else {
        vec![M]
    }
}

/// Sizes of the cleanup/eviction cases (scale run only).
fn cleanup_sizes(mode: Mode) -> Vec<usize> {
    if mode.scale {
        vec![M, 10 * M]
    } else {
        Vec::new()
    }
}

/// The footprint-only size of the scale run.
const BIG: usize = 100 * M;
/// The pilot that projects the footprint at [`BIG`].
const PILOT: usize = M;

/// Reads per measurement: every key once per pass, max(1, 10^6 / N) passes
/// (as the anchor), but never more than 10^6 distinct keys per pass (the
/// first 10^6 of a permutation of all N); quick: 10^5.
fn reads(n: usize, mode: Mode) -> (usize, usize) {
    let calls = if mode.quick { 100 * K } else { M };
    let per_pass = n.min(calls);
    (per_pass, (calls / per_pass).max(1))
}

/// Removes timed per process: every key up to 10^6, then the first 10^6 of
/// a random order (the table still holds N - 10^6 when the last one goes):
/// the first half one call each, the second half in batches.
fn removes(n: usize) -> usize {
    n.min(M)
}

/// Of [`removes`], the ones made one call each (the first half of the
/// order); the rest go through `batch_remove`, [`BATCH`] keys a call.
fn single_removes(n: usize) -> usize {
    removes(n) / 2
}

/// Pointer-chase buffer, MiB: >= 1 GiB in a full run; quick mode uses a
/// small one (its figure then is not a DRAM latency, and says so).
fn chase_mib(mode: Mode) -> usize {
    if mode.quick {
        64
    } else {
        1024
    }
}

/// Dependent accesses timed per chase (after a warm-up of a tenth of it).
fn chase_steps(mode: Mode) -> usize {
    if mode.quick {
        M
    } else {
        2 * M
    }
}

/// Bytes of memory every build leaves to the rest of the machine: a build
/// stops (and reports "not measured") when MemAvailable falls below it.
const RESERVE: u64 = 2 << 30;
/// How often (objects) a build looks at MemAvailable.
const GUARD_EVERY: usize = 1 << 18;

fn cases(mode: Mode) -> Vec<Params> {
    let curve_sizes = curve(mode);
    let top = *curve_sizes.last().expect("a size");
    let mut v = Vec::new();
    for &n in &curve_sizes {
        let (per_pass, passes) = reads(n, mode);
        let chase = if n == top { chase_mib(mode) } else { 0 };
        v.push(Params::new(&[
            ("n", n.to_string()),
            ("kind", "main".into()),
            ("per_pass", per_pass.to_string()),
            ("passes", passes.to_string()),
            ("chase_mib", chase.to_string()),
            ("chase_steps", chase_steps(mode).to_string()),
            // The huge-page chase only in the scale run (make bench stays short).
            ("thp", if mode.scale { "1" } else { "0" }.into()),
        ]));
    }
    // The largest N again on a master presized for N with its tables
    // committed at creation (commit_presized).
    let (per_pass, passes) = reads(top, mode);
    v.push(Params::new(&[
        ("n", top.to_string()),
        ("kind", "committed".into()),
        ("per_pass", per_pass.to_string()),
        ("passes", passes.to_string()),
        ("chase_mib", chase_mib(mode).to_string()),
        ("chase_steps", chase_steps(mode).to_string()),
        // Its tables are on huge pages where the kernel gives them: its
        // Exist is divided by a chase on huge pages (the 4 KiB one beside).
        ("thp", "1".into()),
    ]));
    for n in sysclock_sizes(mode) {
        let (per_pass, passes) = reads(n, mode);
        let chase = if n == top { chase_mib(mode) } else { 0 };
        v.push(Params::new(&[
            ("n", n.to_string()),
            ("kind", "sysclock".into()),
            ("per_pass", per_pass.to_string()),
            ("passes", passes.to_string()),
            ("chase_mib", chase.to_string()),
            ("chase_steps", chase_steps(mode).to_string()),
            ("thp", "0".into()),
        ]));
    }
    for n in cleanup_sizes(mode) {
        for order in CLEANUP_ORDERS {
            v.push(Params::new(&[
                ("n", n.to_string()),
                ("kind", "cleanup".into()),
                ("order", order.into()),
            ]));
        }
    }
    if mode.scale {
        v.push(Params::new(&[
            ("n", BIG.to_string()),
            ("kind", "footprint".into()),
        ]));
    }
    v
}

fn child(p: &Params) -> Sample {
    let n = p.usize("n");
    match p.str("kind") {
        "main" | "committed" => main_child(n, p),
        "sysclock" => sysclock_child(n, p),
        "cleanup" => cleanup_child(n, p.str("order") == "random"),
        "footprint" => footprint_child(n),
        "pilot" => pilot_child(n),
        other => panic!("unknown scale case kind {other}"),
    }
}

// ---------------------------------------------------------------------------
// Masters, builds and the memory guard.

/// Segment size for `n` objects of [`SIZE`] bytes: 16 GiB (the anchor's)
/// while 4 of them are at most a quarter full, else 64 GiB (10^8 objects
/// need 100 GB of buffers).
fn segment_bytes(n: usize) -> u64 {
    if (n as u64).saturating_mul(SIZE) <= 16 << 30 {
        16 << 30
    } else {
        64 << 30
    }
}

/// The anchor's master (4 memory segments, one owner client each) on the
/// given clock, every background task off; presized for
/// `MOONCAKE_META_BENCH_EXPECTED_OBJECTS` objects when that is set (as
/// [`util::master`](crate::util::master), through [`expected_objects`]).
fn scale_master(clock: ClockSource, n: usize) -> Master {
    scale_master_with(clock, n, expected_objects(), commit_presized())
}

/// [`scale_master`] presized for `expected` objects, its tables committed
/// at creation when `commit` (`commit_presized`).
fn scale_master_with(clock: ClockSource, n: usize, expected: u64, commit: bool) -> Master {
    let m = Master::new(MasterConfig {
        soft_pin_cleanup_interval_ms: 0,
        eviction_check_interval_ms: 0,
        sweep_interval_ms: 0,
        expected_objects: expected,
        commit_presized: commit,
        clock,
        ..MasterConfig::default()
    })
    .expect("master");
    for i in 0..4u64 {
        let spec = SegmentSpec {
            name: format!("mem{i}"),
            base: (i + 1) << 40,
            size: segment_bytes(n),
            pool: Pool::Memory,
        };
        m.mount_segment(i + 1, &spec).expect("mount");
    }
    m
}

fn manual() -> ClockSource {
    ClockSource::Manual { start_ms: T0 }
}

/// MemAvailable from /proc/meminfo, bytes.
fn mem_available() -> u64 {
    let info = std::fs::read_to_string("/proc/meminfo").expect("/proc/meminfo");
    info.lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("MemAvailable line")
        * 1024
}

/// A build stopped by the memory guard: `built` objects were written when
/// MemAvailable was `available` bytes.
struct Stopped {
    built: usize,
    available: u64,
}

impl Stopped {
    fn record(&self, s: &mut Sample) {
        s.set("not_measured", NOT_MEASURED_GUARD);
        s.set("stopped_at", self.built as f64);
        s.set("mem_available", self.available as f64);
    }
}

/// `not_measured` codes: the projection did not fit / the guard stopped it.
const NOT_MEASURED_PROJECTION: f64 = 1.0;
const NOT_MEASURED_GUARD: f64 = 2.0;

/// Runs `write(i)` for i in 0..n (one object each), looking at MemAvailable
/// every [`GUARD_EVERY`] objects (outside the timing); returns the time the
/// writes took, or where the guard stopped them.
fn build(n: usize, mut write: impl FnMut(usize)) -> Result<Duration, Stopped> {
    let mut spent = Duration::ZERO;
    let mut from = 0;
    while from < n {
        let available = mem_available();
        if available < RESERVE {
            return Err(Stopped {
                built: from,
                available,
            });
        }
        let to = n.min(from + GUARD_EVERY);
        let t = Stopwatch::start();
        for i in from..to {
            write(i);
        }
        spent += t.elapsed();
        from = to;
    }
    Ok(spent)
}

/// Every 10th object pinned (ENABLE, default TTL), as the anchor's `rw`.
fn ten_pct<'a>(
    enable: &'a WriteConfig,
    preserve: &'a WriteConfig,
) -> impl Fn(usize) -> &'a WriteConfig {
    move |i| if i % 10 == 0 { enable } else { preserve }
}

// ---------------------------------------------------------------------------
// Reads.

/// Keys laid out in the order the calls use them (call j reads key
/// `order[j]` at offset `j * width`): the harness's own key fetch is then a
/// sequential stream, so a measured call pays for the master's memory
/// accesses, not for a random access into the harness's key buffer.
struct Ordered {
    buf: String,
    width: usize,
}

impl Ordered {
    fn new(keys: &Keys, order: &[u32]) -> Self {
        let width = keys.iter().next().map_or(0, str::len);
        let mut buf = String::with_capacity(order.len() * width);
        for &i in order {
            buf.push_str(&keys[i as usize]);
        }
        Ordered { buf, width }
    }

    fn len(&self) -> usize {
        self.buf.len().checked_div(self.width).unwrap_or(0)
    }

    #[inline]
    fn key(&self, j: usize) -> Key<'_> {
        Key::new(&self.buf[j * self.width..(j + 1) * self.width])
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Exist,
    /// `get_replica_list_into`, reused buffer.
    Get,
    /// `batch_exist` of [`BATCH`] keys.
    BatchExist,
    /// `batch_get_replica_list` of [`BATCH`] keys.
    BatchGet,
}

/// Keys per batch call.
const BATCH: usize = 64;

const OPS: [(&str, Op); 4] = [
    ("exist_1t", Op::Exist),
    ("get_1t", Op::Get),
    ("batch_exist_64", Op::BatchExist),
    ("batch_get_64", Op::BatchGet),
];

/// One thread walks `ord` `passes` times with `op`; keys per second and the
/// calls that did not find a complete object. On a manual clock the clock
/// moves 1 ms before each pass (as a system clock would), so every read
/// really extends its lease.
fn read_rate(m: &MasterCore, ord: &Ordered, passes: usize, op: Op, manual: bool) -> (f64, u64) {
    let n = ord.len();
    let mut fails = 0u64;
    let mut buf = Vec::with_capacity(4);
    let mut batch: Vec<Key<'_>> = Vec::with_capacity(BATCH);
    let t = Stopwatch::start();
    for _ in 0..passes {
        if manual {
            m.advance_time(1).expect("manual clock");
        }
        match op {
            Op::Exist => {
                for j in 0..n {
                    fails += u64::from(!matches!(m.exist(ord.key(j)), Ok(true)));
                }
            }
            Op::Get => {
                for j in 0..n {
                    buf.clear();
                    let ok = m.get_replica_list_into(ord.key(j), &mut buf).is_ok();
                    fails += u64::from(!ok || buf.is_empty());
                }
            }
            Op::BatchExist | Op::BatchGet => {
                for from in (0..n).step_by(BATCH) {
                    batch.clear();
                    batch.extend((from..n.min(from + BATCH)).map(|j| ord.key(j)));
                    if op == Op::BatchExist {
                        fails += m
                            .batch_exist(&batch)
                            .iter()
                            .filter(|r| !matches!(r, Ok(true)))
                            .count() as u64;
                    } else {
                        fails += m
                            .batch_get_replica_list(&batch)
                            .iter()
                            .filter(|r| !r.as_ref().is_ok_and(|v| !v.is_empty()))
                            .count() as u64;
                    }
                }
            }
        }
    }
    let secs = t.elapsed().as_secs_f64();
    ((n * passes) as f64 / secs, fails)
}

/// Every read of [`OPS`] on the first `per_pass` keys of a random
/// permutation, `passes` times each.
fn all_reads(m: &MasterCore, keys: &Keys, p: &Params, manual: bool, s: &mut Sample) {
    let mut perm = permutation(keys.len(), 17);
    perm.truncate(p.usize("per_pass"));
    let ord = Ordered::new(keys, &perm);
    drop(perm);
    let mut failures = 0;
    for (name, op) in OPS {
        let (rate, fails) = read_rate(m, &ord, p.usize("passes"), op, manual);
        s.set(name, rate);
        failures += fails;
    }
    s.set("read_failures", failures as f64);
}

/// u32 slots per 64-byte cache line.
const LINE_SLOTS: usize = 16;

/// A random cyclic permutation of 0..len (Sattolo's algorithm): following
/// `i -> c[i]` from any `i` visits every index once before returning.
fn cycle(len: usize, seed: u64) -> Vec<u32> {
    assert!(len <= u32::MAX as usize);
    let mut c: Vec<u32> = (0..len as u32).collect();
    let mut rng = Rng::new(seed);
    for i in (1..len).rev() {
        // j < i strictly (Fisher-Yates would allow j = i and make fixed points).
        let j = rng.below(i);
        c.swap(i, j);
    }
    c
}

/// AnonHugePages of this process (/proc/self/smaps_rollup), bytes: how
/// much of its anonymous memory the kernel backs with transparent huge
/// pages.
fn anon_huge_pages() -> u64 {
    std::fs::read_to_string("/proc/self/smaps_rollup")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("AnonHugePages:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .unwrap_or(0)
        * 1024
}

/// 2 MiB, the x86-64 huge page.
const HUGE_PAGE: usize = 2 << 20;

/// One dependent random access, timed: ns per load, and the bytes of the
/// buffer the kernel backed with transparent huge pages.
struct Chase {
    ns: f64,
    huge_bytes: u64,
}

/// A chase through a single random cycle over the cache lines of a `mib`
/// MiB buffer of u32 (Sattolo's algorithm over the line numbers; each
/// line's first slot holds the index of the next line's, and every line of
/// every page is written, so no page is the shared zero page). Each load's
/// address is the previous load's value, so no two accesses overlap, and
/// each touches a line of its own. With `huge`, the buffer is 2 MiB aligned
/// and advised MADV_HUGEPAGE before its first touch (the machine's THP
/// setting decides whether that is granted; `huge_bytes` says).
fn chase(mib: usize, steps: usize, huge: bool) -> Chase {
    let slots = mib << 18;
    let lines = slots / LINE_SLOTS;
    assert!(lines > 1 && slots <= u32::MAX as usize, "chase buffer size");
    let order = cycle(lines, 0x5A77_0010);
    // Room to start the buffer on a huge-page boundary; untouched, the
    // extra pages cost no memory.
    let pad = HUGE_PAGE / 4;
    let mut raw = vec![0u32; slots + pad];
    let off = raw.as_ptr().align_offset(HUGE_PAGE).min(pad);
    let next = &mut raw[off..off + slots];
    let huge0 = anon_huge_pages();
    if huge {
        // SAFETY: the range lies inside `next`, a live allocation this
        // function owns, starts on a page boundary (2 MiB aligned, or the
        // advice only fails) and madvise(MADV_HUGEPAGE) changes no byte of it.
        let rc = unsafe {
            libc::madvise(
                next.as_mut_ptr().cast(),
                slots * std::mem::size_of::<u32>(),
                libc::MADV_HUGEPAGE,
            )
        };
        // A kernel without THP refuses the advice: then the figure says 0
        // huge bytes, which is what was measured.
        let _ = rc;
    }
    for (line, &succ) in order.iter().enumerate() {
        next[line * LINE_SLOTS] = succ * LINE_SLOTS as u32;
    }
    drop(order);
    let huge_bytes = anon_huge_pages().saturating_sub(huge0);
    let mut at = 0u32;
    for _ in 0..steps / 10 {
        at = next[at as usize];
    }
    let t = Stopwatch::start();
    for _ in 0..steps {
        at = next[at as usize];
    }
    let ns = t.elapsed().as_nanos() as f64 / steps as f64;
    std::hint::black_box(at);
    Chase { ns, huge_bytes }
}

/// The chases of a case: on 4 KiB pages (the calibration, as the master's
/// tables are allocated) and, with `thp=1`, on transparent huge pages
/// where granted.
fn chases(p: &Params, s: &mut Sample) {
    let mib = p.usize("chase_mib");
    if mib == 0 {
        return;
    }
    s.set("chase_mib", mib as f64);
    let small = chase(mib, p.usize("chase_steps"), false);
    s.set("chase_ns", small.ns);
    s.set("chase_huge_bytes_4k", small.huge_bytes as f64);
    if p.str("thp") == "1" {
        let huge = chase(mib, p.usize("chase_steps"), true);
        s.set("chase_thp_ns", huge.ns);
        s.set("chase_huge_bytes_thp", huge.huge_bytes as f64);
    }
}

// ---------------------------------------------------------------------------
// Cases.

fn main_child(n: usize, p: &Params) -> Sample {
    let mut s = Sample::default();
    let keys = keys(n);
    let (enable, preserve) = (cfg(SoftPinRequest::enable()), cfg(SoftPinRequest::PRESERVE));
    let pin10 = ten_pct(&enable, &preserve);
    let (rss_before, huge_before) = (vm_rss(), anon_huge_pages());
    let created = Stopwatch::start();
    let committed = p.str("kind") == "committed";
    let m = if committed {
        scale_master_with(manual(), n, n as u64, true)
    } else {
        scale_master(manual(), n)
    };
    s.set("create_ms", created.elapsed().as_secs_f64() * 1e3);
    // What the master's creation made resident (commit_presized: its tables).
    s.set(
        "create_rss_bytes",
        vm_rss().saturating_sub(rss_before) as f64,
    );
    // What the master's creation got on huge pages (commit_presized).
    s.set(
        "create_huge_bytes",
        anon_huge_pages().saturating_sub(huge_before) as f64,
    );
    let (rss0, heap0) = (vm_rss(), heap_in_use());
    let took = match build(n, |i| put(&m, &keys[i], pin10(i))) {
        Ok(t) => t,
        Err(stop) => {
            stop.record(&mut s);
            std::mem::forget(m);
            return s;
        }
    };
    let (rss1, heap1) = (vm_rss(), heap_in_use());
    s.set("put_pairs_per_s", n as f64 / took.as_secs_f64());
    // A committed master's memory is taken at its creation: count it.
    let base = if committed { rss_before } else { rss0 };
    s.set("rss_per_object", (rss1 as f64 - base as f64) / n as f64);
    // With the master's creation: what presizing committed up front too.
    s.set(
        "rss_per_object_with_creation",
        (rss1 as f64 - rss_before as f64) / n as f64,
    );
    s.set("heap_per_object", (heap1 as f64 - heap0 as f64) / n as f64);

    all_reads(&m, &keys, p, true, &mut s);
    chases(p, &mut s);

    // Removes of min(N, 10^6) keys in a random order (a fixed-seed
    // permutation's first ones, drawn and laid out before the timing
    // starts). Nothing was evicted and no lease outlives the clock step
    // below, so every key is there to remove.
    m.advance_time(LEASE + 1).expect("manual clock");
    let mut order = permutation(n, 7);
    order.truncate(removes(n));
    let ord = Ordered::new(&keys, &order);
    drop(order);
    let single = single_removes(n);
    let t = Stopwatch::start();
    let mut failures = 0u64;
    for j in 0..single {
        failures += u64::from(m.remove(ord.key(j), false).is_err());
    }
    s.set("remove_per_s", single as f64 / t.elapsed().as_secs_f64());
    // The rest of the order, BATCH keys a call.
    let batches: Vec<Vec<Key<'_>>> = (single..ord.len())
        .step_by(BATCH)
        .map(|a| {
            (a..(a + BATCH).min(ord.len()))
                .map(|j| ord.key(j))
                .collect()
        })
        .collect();
    let t = Stopwatch::start();
    for b in &batches {
        failures += m
            .batch_remove(b, false)
            .iter()
            .filter(|r| r.is_err())
            .count() as u64;
    }
    s.set(
        "batch_remove_64",
        (ord.len() - single) as f64 / t.elapsed().as_secs_f64(),
    );
    s.set("remove_failures", failures as f64);
    // The process is thrown away: dropping a big master is not measured.
    std::mem::forget(m);
    s
}

fn sysclock_child(n: usize, p: &Params) -> Sample {
    let mut s = Sample::default();
    let keys = keys(n);
    let (enable, preserve) = (cfg(SoftPinRequest::enable()), cfg(SoftPinRequest::PRESERVE));
    let pin10 = ten_pct(&enable, &preserve);
    let m = scale_master(ClockSource::System, n);
    match build(n, |i| put(&m, &keys[i], pin10(i))) {
        Ok(took) => s.set("put_pairs_per_s", n as f64 / took.as_secs_f64()),
        Err(stop) => {
            stop.record(&mut s);
            std::mem::forget(m);
            return s;
        }
    }
    all_reads(&m, &keys, p, false, &mut s);
    chases(p, &mut s);
    std::mem::forget(m);
    s
}

/// Base TTL of the cleanup case's pins (the master's default).
const WAVE_TTL: u64 = 30 * MIN;

/// The cleanup case's two processes: `random`, the wave's distinct
/// deadlines dealt to the pins in a fixed-seed random order and the objects
/// given leases in a random order before the eviction run (the figures with
/// the targets); `insertion`, the j-th pin j ms late (popped in arena slot
/// order) and no lease given (the eviction's victims are the first objects
/// inserted), reported as `..._in_insertion_order` and `..._clustered`.
const CLEANUP_ORDERS: [&str; 2] = ["random", "insertion"];

/// Seeds of the cleanup case's deadline permutation and lease order.
const DEADLINE_SEED: u64 = 0xDEAD_1135;
const LEASE_SEED: u64 = 0xE71C_7001;

/// Re-enabling upserts of random pinned keys in the churn step.
fn churn_updates(n: usize) -> usize {
    (n / 10).max(1)
}

fn cleanup_child(n: usize, random: bool) -> Sample {
    let mut s = Sample::default();
    let keys = keys(n);
    let preserve = cfg(SoftPinRequest::PRESERVE);
    // The j-th pin (object 10 j) has a deadline of its own, WAVE_TTL +
    // offsets[j] ms: a random permutation of 0..pins, or j.
    let pins = n.div_ceil(10);
    let offsets: Vec<u32> = if random {
        permutation(pins, DEADLINE_SEED)
    } else {
        (0..pins as u32).collect()
    };
    let m = scale_master(manual(), n);
    m.debug_reset_index_hold();
    let mut pinned = cfg(SoftPinRequest::enable());
    let spent = build(n, |i| {
        if i % 10 == 0 {
            pinned.soft_pin = SoftPinRequest::enable_for(WAVE_TTL + u64::from(offsets[i / 10]));
            put(&m, &keys[i], &pinned);
        } else {
            put(&m, &keys[i], &preserve);
        }
    });
    let spent = match spent {
        Ok(t) => t,
        Err(stop) => {
            stop.record(&mut s);
            std::mem::forget(m);
            return s;
        }
    };
    s.set("put_pairs_per_s", n as f64 / spent.as_secs_f64());
    let now = m.now();
    // Nothing is due at `now`: the cycle only reports the longest hold
    // since the reset, i.e. of registering the pins (one registration
    // hold in 32 is timed, and every one that starts a heap chunk).
    s.set(
        "build_hold_ns",
        m.run_cleanup_at(now).longest_index_hold_ns as f64,
    );

    // Every pin due at once, no two sharing a deadline.
    let at = now + WAVE_TTL + pins as u64;
    flush_caches();
    m.debug_reset_index_hold();
    let switched = preemptions();
    let t = Stopwatch::start();
    let st = m.run_cleanup_at(at);
    s.set("wave_ns", t.elapsed().as_nanos() as f64);
    s.set("wave_preemptions", (preemptions() - switched) as f64);
    s.set("wave_expired", st.expired as f64);
    s.set("wave_expected", pins as f64);
    s.set("wave_hold_ns", st.longest_index_hold_ns as f64);
    drop(offsets);

    // One eviction pass: no pin is active any more and no lease is live,
    // so every object is a candidate. In the random case the objects were
    // first read in a random order (untimed), their leases expired since:
    // the (lease, sequence) order is random; else nothing was read and it
    // is slot order.
    if random {
        scatter_leases(&m, &keys, LEASE_SEED);
    }
    flush_caches();
    m.debug_reset_eviction_hold();
    let t = Stopwatch::start();
    let rep = m.run_eviction(0.05, 0.05).expect("eviction");
    s.set("evict_ns", t.elapsed().as_nanos() as f64);
    s.set("evict_hold_ns", m.debug_eviction_longest_hold_ns() as f64);
    s.set("evict_base", rep.base as f64);
    s.set("evicted", rep.evicted as f64);
    let [collect, order, passes] = m.debug_eviction_phases_ns();
    s.set("evict_collect_ns", collect as f64);
    s.set("evict_sort_ns", order as f64);
    s.set("evict_passes_ns", passes as f64);
    if !random {
        // The reference process measures only the wave and the eviction.
        std::mem::forget(m);
        return s;
    }

    // TTL churn: re-enabling upserts of random formerly pinned keys (an
    // evicted one is written anew), each a new index entry.
    let ttls: Vec<WriteConfig> = (1..=4)
        .map(|i| cfg(SoftPinRequest::enable_for(i * 10 * MIN)))
        .collect();
    let updates = churn_updates(n);
    let mut rng = Rng::new(11);
    m.debug_reset_index_hold();
    let t = Stopwatch::start();
    for u in 0..updates {
        let k = Key::new(&keys[10 * rng.below(pins)]);
        m.upsert_start(WRITER, k, SIZE, &ttls[u % 4])
            .expect("upsert_start");
        m.upsert_end(WRITER, k, ReplicaSelector::Memory, None)
            .expect("upsert_end");
    }
    s.set("churn_per_s", updates as f64 / t.elapsed().as_secs_f64());
    // Every TTL is >= 10 min from a clock at or after `now` (the lease
    // scatter moved it by seconds): nothing is due at `now`.
    s.set(
        "churn_hold_ns",
        m.run_cleanup_at(now).longest_index_hold_ns as f64,
    );
    std::mem::forget(m);
    s
}

/// The pilot of the footprint projection: RSS growth per object (key bytes
/// included) of `n` objects, 10 % pinned, on the segments of [`BIG`].
fn pilot_child(n: usize) -> Sample {
    let mut s = Sample::default();
    let (enable, preserve) = (cfg(SoftPinRequest::enable()), cfg(SoftPinRequest::PRESERVE));
    let pin10 = ten_pct(&enable, &preserve);
    let m = scale_master(manual(), BIG);
    let mut key = String::with_capacity(32);
    let rss0 = vm_rss();
    match build(n, |i| {
        key.clear();
        numbered(i, &mut key);
        put(&m, &key, pin10(i));
    }) {
        Ok(_) => s.set("rss_per_object", (vm_rss() as f64 - rss0 as f64) / n as f64),
        Err(stop) => stop.record(&mut s),
    }
    std::mem::forget(m);
    s
}

/// `bench/key/%010d` formatted on the fly (10^8 keys in a buffer would be
/// 2 GB of harness memory).
fn numbered(i: usize, buf: &mut String) {
    let _ = write!(buf, "bench/key/{i:010}");
}

/// Runs the pilot in a process of its own and returns its bytes per object.
fn run_pilot() -> Result<f64, String> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let out = std::process::Command::new(exe)
        .args(["--child", "scale", "kind=pilot"])
        .arg(format!("n={PILOT}"))
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run the pilot: {e}"))?;
    if !out.status.success() {
        return Err(format!("the pilot failed: {}", out.status));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or("");
    let v = crate::json::parse(line).map_err(|e| format!("unreadable pilot output: {e}"))?;
    v.get("rss_per_object")
        .and_then(crate::json::Value::num)
        .filter(|b| b.is_finite() && *b > 0.0)
        .ok_or_else(|| format!("the pilot measured nothing: {line}"))
}

fn footprint_child(n: usize) -> Sample {
    let mut s = Sample::default();
    let per_object = match run_pilot() {
        Ok(b) => b,
        Err(why) => panic!("footprint pilot: {why}"),
    };
    let projected = per_object * n as f64;
    let available = mem_available();
    s.set("pilot_rss_per_object", per_object);
    s.set("projected_bytes", projected);
    s.set("mem_available", available as f64);
    // No safety factor on the projection: the build's guard (`build`)
    // stops it before MemAvailable falls below the reserve, so a
    // projection that turns out short costs a stopped build, never the
    // machine, and a footprint that fits is measured rather than refused
    // for a guessed slack (10^8 objects measured 174.5 B each against the
    // pilot's 188).
    if projected + RESERVE as f64 > available as f64 {
        s.set("not_measured", NOT_MEASURED_PROJECTION);
        return s;
    }
    let (enable, preserve) = (cfg(SoftPinRequest::enable()), cfg(SoftPinRequest::PRESERVE));
    let pin10 = ten_pct(&enable, &preserve);
    let m = scale_master(manual(), n);
    let mut key = String::with_capacity(32);
    let rss0 = vm_rss();
    match build(n, |i| {
        key.clear();
        numbered(i, &mut key);
        put(&m, &key, pin10(i));
    }) {
        Ok(_) => {
            let grown = vm_rss() as f64 - rss0 as f64;
            s.set("rss_bytes", grown);
            s.set("rss_per_object", grown / n as f64);
        }
        Err(stop) => {
            stop.record(&mut s);
            // What the objects built so far measured, for the note.
            if stop.built > 0 {
                s.set(
                    "rss_per_object_at_stop",
                    (vm_rss() as f64 - rss0 as f64) / stop.built as f64,
                );
            }
        }
    }
    std::mem::forget(m);
    s
}

// ---------------------------------------------------------------------------
// Figures.

/// Exist / Get 1 thread: >= 3 M/s at 10^6, >= 2 M/s at 10^7; not judged
/// below 10^6.
fn read_target(f: Figure, n: usize) -> Figure {
    if n >= 10 * M {
        f.target(Target::AtLeast(2e6))
    } else {
        judged_from(f, Target::AtLeast(3e6), M, n)
    }
}

/// Put pairs (10 % pinned): >= 1 M/s at 10^6, >= 0.8 M/s at 10^7; not
/// judged below 10^6.
fn put_target(f: Figure, n: usize) -> Figure {
    if n >= 10 * M {
        f.target(Target::AtLeast(0.8e6))
    } else {
        judged_from(f, Target::AtLeast(1e6), M, n)
    }
}

/// batch Exist, 64 keys a call: >= 8 M keys/s at 10^7.
fn batch_exist_target(f: Figure, n: usize) -> Figure {
    judged_from(f, Target::AtLeast(8e6), 10 * M, n)
}

/// `f` with `more` appended to its note (or as its note).
fn add_note(f: Figure, more: impl Into<String>) -> Figure {
    let more = more.into();
    let note = match &f.note {
        Some(n) if !n.is_empty() => format!("{n}; {more}"),
        _ => more,
    };
    f.note(note)
}

/// `f` judged against `t`, a target bench/README.md states at N = `at`,
/// measured at N = `n`: the target is attached with the N it is stated at
/// ([`Figure::target_stated_at`]), so below `at` (smaller N is the easier
/// case: more of the tables fits the caches and the TLB) report.rs prints
/// `met: null`, "at larger N" in the table, and a note "target at 10^7";
/// at or above `at` the figure is judged as any other.
fn judged_from(f: Figure, t: Target, at: usize, n: usize) -> Figure {
    f.target(t).target_stated_at(at as u64, n as u64)
}

const GIB: f64 = (1u64 << 30) as f64;

fn gib(b: f64) -> String {
    format!("{:.1} GiB", b / GIB)
}

/// Why the samples of a case were not measured, from their numbers.
fn not_measured(samples: &[Sample]) -> Option<String> {
    let why: Vec<String> = samples
        .iter()
        .filter_map(|s| {
            let code = s.get("not_measured");
            if code == NOT_MEASURED_PROJECTION {
                Some(format!(
                    "not measured: projected {} ({:.0} B/object from a {PILOT}-object pilot) \
                     + {} reserve exceeds MemAvailable {}",
                    gib(s.get("projected_bytes")),
                    s.get("pilot_rss_per_object"),
                    gib(RESERVE as f64),
                    gib(s.get("mem_available")),
                ))
            } else if code == NOT_MEASURED_GUARD {
                let at_stop = s.get("rss_per_object_at_stop");
                Some(format!(
                    "not measured: the build stopped after {} objects, MemAvailable {} < {} reserve{}",
                    s.get("stopped_at"),
                    gib(s.get("mem_available")),
                    gib(RESERVE as f64),
                    if at_stop.is_finite() {
                        format!(" ({at_stop:.1} B/object measured up to there)")
                    } else {
                        String::new()
                    },
                ))
            } else {
                None
            }
        })
        .collect();
    if why.is_empty() {
        None
    } else {
        Some(format!(
            "{} of {} repetition(s) {}",
            why.len(),
            samples.len(),
            why.join("; ")
        ))
    }
}

/// Of the huge-page chase's buffer, the fraction the kernel must back with
/// huge pages for the chase to stand for a huge-page access: below it a
/// committed master's Exist is divided by the 4 KiB chase instead.
const THP_BACKED: f64 = 0.5;

/// `dram_access` and `exist_in_dram_accesses` of one case (n, clock); for a
/// committed master (`commit_presized`, tables on huge pages where the
/// kernel gives them) also `dram_access_thp` and the tables' huge pages,
/// and its Exist is divided by the huge-page chase, the same page size as
/// its tables (by the 4 KiB chase, with a note, in a repetition whose chase
/// buffer the kernel did not back with huge pages).
fn dram_figures(
    r: &Results,
    want: &[(&str, &str)],
    n: usize,
    clock: &str,
    committed: bool,
    mode: Mode,
) -> Vec<Figure> {
    let mib = chase_mib(mode).to_string();
    let buffer = (chase_mib(mode) << 20) as f64;
    let mut par = vec![("n", n.to_string())];
    if committed {
        par.push(("tables", "committed".to_owned()));
    }
    par.extend([("clock", clock.to_owned()), ("buffer_mib", mib.clone())]);
    let quick_note = if mode.quick {
        " (quick mode: a small buffer, partly cache-resident, not a DRAM latency)"
    } else {
        ""
    };
    let mut chase = Figure::new(
        "scale",
        "dram_access",
        &par,
        "ns",
        Better::Lower,
        r.values(want, "chase_ns"),
    );
    if clock == "manual" && !committed {
        chase = chase.note(format!(
            "one dependent random load: a pointer chase through one random cycle (Sattolo) over the cache lines of a {mib} MiB Vec<u32> (4 KiB pages, as the master's tables), in the same process as the reads, after them{quick_note}"
        ));
    }
    if committed {
        chase = chase.note("the chase on 4 KiB pages, kept beside: not the divisor of this master's exist_in_dram_accesses (its tables are on huge pages where the kernel gives them)");
    }
    let mut out = vec![chase];
    if !committed {
        let mut ratio = Figure::new(
            "scale",
            "exist_in_dram_accesses",
            &par,
            "x",
            Better::Lower,
            r.zip(want, "exist_1t", "chase_ns", |rate, chase| {
                1e9 / rate / chase
            }),
        );
        if clock == "manual" {
            ratio = ratio.note("ns per Exist (1 thread, random keys) / ns per dependent random access on 4 KiB pages (dram_access), the page size of this master's tables, both measured in the same process");
        }
        out.push(judged_from(ratio, Target::AtMost(2.0), 10 * M, n));
        return out;
    }
    // Committed tables: the huge-page chase, per repetition, where the
    // kernel backed its buffer with huge pages.
    let samples = r.samples(want);
    let backed = |s: &Sample| s.get("chase_huge_bytes_thp") / buffer;
    let mut fell_back = 0;
    let ratios: Vec<f64> = samples
        .iter()
        .map(|s| {
            let exist_ns = 1e9 / s.get("exist_1t");
            if backed(s) >= THP_BACKED {
                exist_ns / s.get("chase_thp_ns")
            } else {
                fell_back += 1;
                exist_ns / s.get("chase_ns")
            }
        })
        .collect();
    let fractions: Vec<f64> = samples.iter().map(backed).collect();
    let table_huge: Vec<f64> = samples.iter().map(|s| s.get("create_huge_bytes")).collect();
    let table_rss: Vec<f64> = samples.iter().map(|s| s.get("create_rss_bytes")).collect();
    let mib_of = |v: &[f64]| median(v).unwrap_or(f64::NAN) / (1u64 << 20) as f64;
    let tables = format!(
        "the master's creation made {:.0} MiB resident, {:.0} MiB of it on huge pages (medians)",
        mib_of(&table_rss),
        mib_of(&table_huge)
    );
    out.push(
        Figure::new(
            "scale",
            "dram_access_thp",
            &par,
            "ns",
            Better::Lower,
            r.values(want, "chase_thp_ns"),
        )
        .note(format!(
            "the same chase on a buffer advised MADV_HUGEPAGE, the page size of the committed tables; the kernel backed {:.0} % of its {mib} MiB with huge pages (median){quick_note}",
            median(&fractions).unwrap_or(f64::NAN) * 100.0
        )),
    );
    out.push(
        Figure::new(
            "scale",
            "tables_on_huge_pages",
            &par,
            "MiB",
            Better::Higher,
            table_huge.iter().map(|b| b / (1u64 << 20) as f64).collect(),
        )
        .note(format!(
            "AnonHugePages the committed master's creation added; {tables}"
        )),
    );
    let mut ratio = Figure::new(
        "scale",
        "exist_in_dram_accesses",
        &par,
        "x",
        Better::Lower,
        ratios,
    )
    .note(format!(
        "ns per Exist / ns per dependent random access on the page size of the tables: committed tables are on huge pages where the kernel gives them, so the divisor is the huge-page chase (dram_access_thp), not the 4 KiB one (dram_access, beside); {tables}"
    ));
    if fell_back > 0 {
        ratio = add_note(
            ratio,
            format!(
                "in {fell_back} of {} repetition(s) the kernel backed less than {:.0} % of the chase buffer with huge pages: there the divisor is the 4 KiB chase (dram_access), and the tables are then likely not on huge pages either (see tables_on_huge_pages)",
                samples.len(),
                THP_BACKED * 100.0
            ),
        );
    }
    out.push(judged_from(ratio, Target::AtMost(2.0), 10 * M, n));
    out
}

fn figures(r: &Results, mode: Mode) -> Vec<Figure> {
    let mut out = Vec::new();
    let curve_sizes = curve(mode);
    let top = *curve_sizes.last().expect("a size");
    let mut bad = Vec::new();
    let checks = |r: &Results, want: &[(&str, &str)], bad: &mut Vec<String>, label: &str| {
        for s in r.samples(want) {
            for f in ["read_failures", "remove_failures"] {
                if s.0.get(f).is_some_and(|&v| v != 0.0) {
                    bad.push(format!("{label}: {f} = {}", s.get(f)));
                }
            }
            if s.0.contains_key("wave_expected") && s.get("wave_expired") != s.get("wave_expected")
            {
                bad.push(format!(
                    "{label}: the wave expired {} of {} pins",
                    s.get("wave_expired"),
                    s.get("wave_expected")
                ));
            }
        }
    };
    let note_missing = |f: Figure, samples: &[Sample]| match not_measured(samples) {
        Some(why) => add_note(f, why),
        None => f,
    };

    let main_runs = curve_sizes
        .iter()
        .map(|&n| (n, "main"))
        .chain(std::iter::once((top, "committed")));
    for (n, kind) in main_runs {
        let ns = n.to_string();
        let want = [("n", ns.as_str()), ("kind", kind)];
        let samples = r.samples(&want);
        checks(r, &want, &mut bad, &format!("{kind} n={n}"));
        let committed = kind == "committed";
        let par = |extra: &[(&'static str, &str)]| {
            let mut v = vec![("n", ns.clone())];
            if committed {
                v.push(("tables", "committed".to_owned()));
            }
            v.extend(extra.iter().map(|(k, x)| (*k, (*x).to_owned())));
            v
        };
        let f = Figure::new(
            "scale",
            "put_pairs",
            &par(&[("pinned_pct", "10"), ("clock", "manual")]),
            "ops/s",
            Better::Higher,
            r.values(&want, "put_pairs_per_s"),
        );
        let f = if committed {
            f.note("a master presized for N (expected_objects) with commit_presized: its tables are allocated at its creation, resident, on huge pages where the kernel gives them; memory per object counts what the creation committed")
        } else {
            f
        };
        out.push(put_target(note_missing(f, samples), n));
        let mut f = Figure::new(
            "scale",
            "rss_per_object",
            &par(&[("pinned_pct", "10")]),
            "B",
            Better::Lower,
            r.values(&want, "rss_per_object"),
        )
        .target(Target::AtMost(100.0));
        if n == curve_sizes[0] {
            f = f.note("VmRSS growth / N over the puts, the master's copy of the 20 key bytes included (the harness's key buffer exists before the baseline)");
        }
        out.push(f);
        out.push(Figure::new(
            "scale",
            "heap_per_object",
            &par(&[("pinned_pct", "10")]),
            "B",
            Better::Lower,
            r.values(&want, "heap_per_object"),
        ));
        for (name, op) in OPS {
            let mut f = Figure::new(
                "scale",
                name,
                &par(&[("clock", "manual")]),
                if matches!(op, Op::BatchExist | Op::BatchGet) {
                    "keys/s"
                } else {
                    "ops/s"
                },
                Better::Higher,
                r.values(&want, name),
            );
            if n == curve_sizes[0] && op == Op::Get {
                f = f.note("get_replica_list_into with a reused buffer; random keys (a permutation's first 10^6 at most), read from a buffer laid out in call order");
            }
            if n == curve_sizes[0] && op == Op::BatchExist {
                f = f.note("batch_exist / batch_get_replica_list of 64 consecutive keys of the same random order, keys per second");
            }
            f = match op {
                Op::Exist | Op::Get => read_target(f, n),
                Op::BatchExist => batch_exist_target(f, n),
                Op::BatchGet => f,
            };
            out.push(f);
        }
        let mut f = Figure::new(
            "scale",
            "remove_not_forced",
            &par(&[
                ("pinned_pct", "10"),
                ("removes", &single_removes(n).to_string()),
            ]),
            "ops/s",
            Better::Higher,
            r.values(&want, "remove_per_s"),
        )
        .target(Target::AtLeast(2e6));
        if n == curve_sizes[0] {
            f = f.note(
                "the first half of min(N, 10^6) keys in a random order (fixed-seed shuffle drawn before timing), one call each",
            );
        }
        out.push(f);
        let mut f = Figure::new(
            "scale",
            "batch_remove_64",
            &par(&[
                ("pinned_pct", "10"),
                ("removes", &(removes(n) - single_removes(n)).to_string()),
            ]),
            "keys/s",
            Better::Higher,
            r.values(&want, "batch_remove_64"),
        );
        if n == curve_sizes[0] {
            f = f.note("the second half of that order, batch_remove of 64 consecutive keys a call");
        }
        out.push(f);
        if n == top {
            out.extend(dram_figures(r, &want, n, "manual", committed, mode));
        }
        if n == top && mode.scale && !committed {
            let mib = chase_mib(mode).to_string();
            let huge = median(&r.values(&want, "chase_huge_bytes_thp")).unwrap_or(f64::NAN);
            out.push(
                Figure::new(
                    "scale",
                    "dram_access_thp",
                    &[("n", ns.clone()), ("buffer_mib", mib.clone())],
                    "ns",
                    Better::Lower,
                    r.values(&want, "chase_thp_ns"),
                )
                .note(format!(
                    "the same chase on a buffer advised MADV_HUGEPAGE (no target: what huge pages would buy this master, whose tables are on 4 KiB pages); the kernel backed {:.0} of its {mib} MiB with huge pages (median)",
                    huge / (1u64 << 20) as f64
                )),
            );
        }
    }

    for n in sysclock_sizes(mode) {
        let ns = n.to_string();
        let want = [("n", ns.as_str()), ("kind", "sysclock")];
        checks(r, &want, &mut bad, &format!("sysclock n={n}"));
        let samples = r.samples(&want);
        let par = vec![("n", ns.clone()), ("clock", "system".to_owned())];
        for (name, op) in OPS {
            let mut f = Figure::new(
                "scale",
                name,
                &par,
                if matches!(op, Op::BatchExist | Op::BatchGet) {
                    "keys/s"
                } else {
                    "ops/s"
                },
                Better::Higher,
                r.values(&want, name),
            );
            if op == Op::Exist {
                if n == sysclock_sizes(mode)[0] {
                    f = f.note("a master on ClockSource::System (background tasks off): every Exist/Get reads the clock to grant its lease");
                }
                f = note_missing(f, samples);
            }
            f = match op {
                Op::Exist | Op::Get => read_target(f, n),
                Op::BatchExist => batch_exist_target(f, n),
                Op::BatchGet => f,
            };
            out.push(f);
        }
        if n == top {
            out.extend(dram_figures(r, &want, n, "system", false, mode));
        }
        out.push(Figure::new(
            "scale",
            "put_pairs",
            &[
                ("n", ns.clone()),
                ("pinned_pct", "10".to_owned()),
                ("clock", "system".to_owned()),
            ],
            "ops/s",
            Better::Higher,
            r.values(&want, "put_pairs_per_s"),
        ));
    }

    for n in cleanup_sizes(mode) {
        let ns = n.to_string();
        let want = [("n", ns.as_str()), ("kind", "cleanup"), ("order", "random")];
        let inserted = [
            ("n", ns.as_str()),
            ("kind", "cleanup"),
            ("order", "insertion"),
        ];
        checks(r, &want, &mut bad, &format!("cleanup n={n}"));
        checks(
            r,
            &inserted,
            &mut bad,
            &format!("cleanup n={n} order=insertion"),
        );
        let samples = r.samples(&want);
        let pins = n.div_ceil(10).to_string();
        let par = |extra: &[(&'static str, String)]| {
            let mut v = vec![("n", ns.clone()), ("pins", pins.clone())];
            v.extend(extra.iter().cloned());
            v
        };
        let ms = |m: &str| {
            r.values(&want, m)
                .into_iter()
                .map(|v| v * 1e-6)
                .collect::<Vec<_>>()
        };
        let mut f = Figure::new(
            "scale",
            "cleanup_per_expired_pin",
            &par(&[("due_pct", "100".into())]),
            "us",
            Better::Lower,
            r.zip(&want, "wave_ns", "wave_expected", |t, e| t / e * 1e-3),
        )
        .target(Target::AtMost(0.3));
        if n == cleanup_sizes(mode)[0] {
            f = f.note("every 10th object pinned, each pin with a TTL of 30 min + its own offset, the distinct offsets 0..pins ms dealt to the pins in a fixed-seed random order (so the wave pops objects in an order unrelated to their arena slots); one cycle at the instant all are due, after a cache flush");
        }
        f = note_missing(f, samples);
        out.push(f);
        let mut f = Figure::new(
            "scale",
            "cleanup_per_expired_pin_in_insertion_order",
            &par(&[("due_pct", "100".into())]),
            "us",
            Better::Lower,
            r.zip(&inserted, "wave_ns", "wave_expected", |t, e| t / e * 1e-3),
        );
        if n == cleanup_sizes(mode)[0] {
            f = f.note("the same wave in a process of its own (order=insertion) with the j-th pin 30 min + j ms: popped in insertion (arena slot) order, a page and TLB locality churned or varied-TTL pins would not have (flatters the figure; no target)");
        }
        f = note_missing(f, r.samples(&inserted));
        out.push(f);
        out.push(Figure::new(
            "scale",
            "cleanup_wave",
            &par(&[("due_pct", "100".into())]),
            "ms",
            Better::Lower,
            ms("wave_ns"),
        ));
        for (name, metric, what) in [
            (
                "longest_index_hold_register",
                "build_hold_ns",
                "registering every pin (the build)",
            ),
            (
                "longest_index_hold_wave",
                "wave_hold_ns",
                "the 100 %-due cycle",
            ),
            (
                "longest_index_hold_churn",
                "churn_hold_ns",
                "TTL churn: re-enabling upserts of random pinned keys",
            ),
        ] {
            let mut f = Figure::new("scale", name, &par(&[]), "ms", Better::Lower, ms(metric))
                .target(Target::AtMost(1.0));
            if n == cleanup_sizes(mode)[0] {
                f = f.note(format!(
                    "the longest single index-mutex hold during {what} (wall time inside the \
                     lock: on a loaded machine it includes time slices lost to preemption of \
                     the holder, multiples of the scheduler tick; of the registrations, one hold \
                     in 32 is timed, and every one that starts a heap chunk)"
                ));
            }
            out.push(f);
        }
        let mut f = Figure::new(
            "scale",
            "wave_preemptions",
            &par(&[]),
            "switches",
            Better::Lower,
            r.values(&want, "wave_preemptions"),
        );
        if n == cleanup_sizes(mode)[0] {
            f = f.note(
                "involuntary context switches of the cleaning thread during the 100 %-due cycle \
                 (/proc/thread-self/status): a longest_index_hold_wave above the target with \
                 switches here is a hold stretched by preemption",
            );
        }
        out.push(f);
        out.push(Figure::new(
            "scale",
            "churn_upserts",
            &par(&[("updates", churn_updates(n).to_string())]),
            "ops/s",
            Better::Higher,
            r.values(&want, "churn_per_s"),
        ));
        let mut f = Figure::new(
            "scale",
            "eviction_per_object_examined",
            &[("n", ns.clone())],
            "ns",
            Better::Lower,
            r.zip(&want, "evict_ns", "evict_base", |t, b| t / b),
        );
        if n == cleanup_sizes(mode)[0] {
            f = f.note("one run_eviction(0.05, 0.05) after the wave (no pin active, no live lease): pass time / objects in the eviction base, after a cache flush; before it (untimed) every object was read once in a fixed-seed random order, 64 a millisecond, and the clock moved past the last lease, so the (lease, sequence) eviction order is random and the victims are spread over the arena");
        }
        out.push(judged_from(f, Target::AtMost(20.0), 10 * M, n));
        let mut f = Figure::new(
            "scale",
            "eviction_per_object_examined_clustered",
            &[("n", ns.clone())],
            "ns",
            Better::Lower,
            r.zip(&inserted, "evict_ns", "evict_base", |t, b| t / b),
        );
        if n == cleanup_sizes(mode)[0] {
            f = f.note("the same run in the order=insertion process, nothing read before it: every lease equal, so the eviction order is slot order and the victims are the first objects inserted (flatters the pass; no target)");
        }
        out.push(f);
        out.push(Figure::new(
            "scale",
            "eviction_pass",
            &[("n", ns.clone())],
            "ms",
            Better::Lower,
            ms("evict_ns"),
        ));
        out.push(
            Figure::new(
                "scale",
                "eviction_longest_shard_lock_hold",
                &[("n", ns.clone())],
                "ms",
                Better::Lower,
                ms("evict_hold_ns"),
            )
            .target(Target::AtMost(1.0)),
        );
    }

    if mode.scale {
        let ns = BIG.to_string();
        let want = [("n", ns.as_str()), ("kind", "footprint")];
        let samples = r.samples(&want);
        let par = vec![("n", ns.clone()), ("pinned_pct", "10".to_owned())];
        let why = not_measured(samples);
        let mut total = Figure::new(
            "scale",
            "rss_total",
            &par,
            "GiB",
            Better::Lower,
            r.values(&want, "rss_bytes")
                .into_iter()
                .map(|b| b / GIB)
                .collect(),
        )
        .target(Target::AtMost(12.0));
        total = total.note(why.clone().unwrap_or_else(|| {
            "VmRSS growth over 10^8 puts (keys formatted on the fly, no harness key buffer)".into()
        }));
        out.push(total);
        let mut per = Figure::new(
            "scale",
            "rss_per_object",
            &par,
            "B",
            Better::Lower,
            r.values(&want, "rss_per_object"),
        );
        if let Some(w) = why {
            per = per.note(w);
        }
        out.push(per);
        out.push(
            Figure::new(
                "scale",
                "projected_rss_total",
                &par,
                "GiB",
                Better::Lower,
                r.values(&want, "projected_bytes")
                    .into_iter()
                    .map(|b| b / GIB)
                    .collect(),
            )
            .note(format!(
                "a projection, not a measurement: the RSS growth per object of a {PILOT}-object pilot (its own process) x 10^8"
            )),
        );
    }

    if !bad.is_empty() {
        out.push(
            Figure::new("scale", "CHECK_FAILED", &[], "", Better::Lower, vec![])
                .note(bad.join("; ")),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chase_is_one_cycle_through_every_line() {
        for len in [2, 3, 17, 1000] {
            let c = cycle(len, 9);
            let (mut at, mut steps) = (0usize, 0usize);
            loop {
                at = c[at] as usize;
                steps += 1;
                if at == 0 {
                    break;
                }
                assert!(steps < len, "a cycle shorter than {len} closed early");
            }
            assert_eq!(steps, len, "every index visited once");
        }
    }

    #[test]
    fn reads_never_exceed_a_million_distinct_keys_a_pass() {
        let full = Mode {
            quick: false,
            scale: true,
            reps: 1,
        };
        assert_eq!(reads(100 * K, full), (100 * K, 10));
        assert_eq!(reads(M, full), (M, 1));
        assert_eq!(reads(10 * M, full), (M, 1));
    }

    #[test]
    fn a_refused_projection_is_reported_with_its_numbers() {
        let mut s = Sample::default();
        s.set("not_measured", NOT_MEASURED_PROJECTION);
        s.set("projected_bytes", 50.0 * GIB);
        s.set("pilot_rss_per_object", 500.0);
        s.set("mem_available", 20.0 * GIB);
        let why = not_measured(&[s, Sample::default()]).expect("a reason");
        assert!(
            why.starts_with("1 of 2 repetition(s) not measured"),
            "{why}"
        );
        assert!(
            why.contains("50.0 GiB") && why.contains("20.0 GiB") && why.contains("500 B/object"),
            "{why}"
        );
        assert_eq!(not_measured(&[Sample::default()]), None);
    }

    #[test]
    fn a_stopped_build_is_reported_with_what_it_measured() {
        let mut s = Sample::default();
        Stopped {
            built: 70_000_000,
            available: 1 << 30,
        }
        .record(&mut s);
        let why = not_measured(&[s.clone()]).expect("a reason");
        assert!(why.contains("stopped after 70000000 objects"), "{why}");
        assert!(!why.contains("measured up to there"), "{why}");
        s.set("rss_per_object_at_stop", 181.25);
        let why = not_measured(&[s]).expect("a reason");
        assert!(
            why.contains("(181.2 B/object measured up to there)"),
            "{why}"
        );
    }

    #[test]
    fn committed_exist_is_divided_by_the_chase_on_its_page_size() {
        let mode = Mode {
            quick: false,
            scale: false,
            reps: 2,
        };
        let sample = |thp_bytes: f64| {
            let mut s = Sample::default();
            s.set("exist_1t", 1e9 / 300.0); // 300 ns per Exist
            s.set("chase_ns", 300.0);
            s.set("chase_thp_ns", 200.0);
            s.set("chase_huge_bytes_thp", thp_bytes);
            s.set("create_huge_bytes", 0.0);
            s.set("create_rss_bytes", 0.0);
            s
        };
        let params = Params::new(&[("n", M.to_string()), ("kind", "committed".into())]);
        let mut r = Results::default();
        // One repetition with the chase on huge pages, one without.
        r.cases.push((params, vec![sample(GIB), sample(0.0)]));
        let want = [("n", "1000000"), ("kind", "committed")];
        let figs = dram_figures(&r, &want, M, "manual", true, mode);
        let ratio = figs
            .iter()
            .find(|f| f.name == "exist_in_dram_accesses")
            .expect("the ratio");
        assert_eq!(ratio.values, vec![1.5, 1.0]);
        let note = ratio.note.as_deref().unwrap_or("");
        assert!(note.contains("in 1 of 2 repetition(s)"), "{note}");
        assert!(figs.iter().any(|f| f.name == "dram_access_thp"));
        assert!(figs.iter().any(|f| f.name == "dram_access"));
        // Below 10^7 the target is attached but not judged.
        assert_eq!(ratio.met(), None);
        assert!(ratio.target.is_some());
        // The default tables divide by the 4 KiB chase.
        let figs = dram_figures(&r, &want, M, "manual", false, mode);
        let ratio = figs
            .iter()
            .find(|f| f.name == "exist_in_dram_accesses")
            .expect("the ratio");
        assert_eq!(ratio.values, vec![1.0, 1.0]);
    }

    #[test]
    fn big_builds_get_segments_that_hold_them() {
        assert_eq!(segment_bytes(10 * M), 16 << 30);
        // 4 segments must hold 10^8 objects of SIZE bytes.
        assert!(4 * segment_bytes(BIG) >= BIG as u64 * SIZE);
    }
}
