//! Concurrency soak. Four threads issue a weighted random mix of
//! every operation — all soft-pin actions with TTLs of 10–100 ms so pins
//! really expire, preempting upserts, copy/move, promotion, LOCAL_DISK
//! replicas, unmount/mount of a spare segment, removes, reads and batches —
//! against a system-clock master whose maintenance thread runs cleanup
//! (5 ms), eviction checks (5 ms) and the sweep (20 ms) with short
//! discard/release timeouts. Every second the workers park at a barrier and
//! the main thread runs `check_invariants()` (docs/CONTRACT.md §8) while holding
//! `quiesce()`, which keeps the maintenance thread between tasks: with the
//! workers parked and no cleanup batch, eviction or sweep in flight the
//! check is exact, never "retry until it passes".
//!
//! A watchdog aborts the process if the main thread stops making progress;
//! a worker that does not reach the barrier fails the test naming its
//! operation; with `--features deadlock-detection` a detector thread runs
//! parking_lot's deadlock check and aborts with the cycle's backtraces.
//!
//! Duration: `SOAK_SECS` if set (`make test` sets 60), else 60 s when `CI=true`, else 10 s — a
//! minimum: the run then goes on (barriers and checks included) until the
//! mix has exercised what it is for (pins expired by cleanup, writes
//! swept, keys evicted, each kind of task and write completed; see
//! [`COVERAGE`]), so a slow or starved machine runs longer instead of
//! failing; only [`COVERAGE_GRACE`] beyond the minimum is a failure.
//! `SOAK_MAX_OPS` caps the operation count; `SOAK_SEED` fixes the seed.
//! Run: `cargo test --release --features deadlock-detection --test soak -- --nocapture`.
mod support;

use mooncake_meta_core::*;
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant as WallInstant};
use support::entropy::{Entropy, XorShift};
use support::opseq::Tally;

const THREADS: usize = 4;
const TENANTS: [&str; 2] = [DEFAULT_TENANT, "t2"];
const KEYS_PER_TENANT: usize = 192;
const SIZES: [u64; 5] = [4096, 8192, 16_384, 32_768, 65_536];
/// Fixed segments (owner [`OWNER`]) and the spare one (owner [`SPARE_OWNER`]).
const SEGMENTS: [&str; 5] = ["mem0", "mem1", "mem2", "nof0", "spare"];
const OWNER: ClientId = 900;
const SPARE_OWNER: ClientId = 901;
const MAX_TTL: u64 = 10_000;
/// A worker that has not reached the barrier after this long is stuck (a
/// hang bound: one operation takes microseconds, even on a starved core).
const BARRIER_TIMEOUT: Duration = Duration::from_secs(120);
/// The main thread must make progress at least this often; above
/// BARRIER_TIMEOUT, so a stuck worker is reported by name first.
const WATCHDOG: Duration = Duration::from_secs(180);
/// How long past the minimum duration the run may go on to reach
/// [`COVERAGE`] before the missing items fail the test.
const COVERAGE_GRACE: Duration = Duration::from_secs(300);
/// (operation, result) pairs the mix must produce at least once.
const COVERAGE: [(&str, &str); 9] = [
    ("put_start", "OK"),
    ("upsert_start", "OK"),
    ("copy_end", "OK"),
    ("move_end", "OK"),
    ("promotion_end", "OK"),
    ("add_local_disk", "OK"),
    ("unmount_spare", "OK"),
    ("mount_spare", "OK"),
    ("remove", "OK"),
];

/// Bit i set: `tally` holds COVERAGE[i] at least once.
fn coverage_bits(tally: &Tally) -> u64 {
    COVERAGE
        .iter()
        .enumerate()
        .filter(|(_, key)| tally.0.get(*key).is_some_and(|&n| n > 0))
        .fold(0, |bits, (i, _)| bits | 1 << i)
}

/// What the run has not exercised yet: [`COVERAGE`] entries missing from
/// `seen` (bit i = entry i), then the maintenance counters still at zero.
fn missing_coverage(seen: u64, metrics: &MetricsSnapshot) -> Vec<String> {
    let mut missing: Vec<String> = COVERAGE
        .iter()
        .enumerate()
        .filter(|(i, _)| seen & (1 << i) == 0)
        .map(|(_, (op, code))| format!("no {op} ended in {code}"))
        .collect();
    for (what, n) in [
        ("soft pins expired by cleanup", metrics.cleanup_expired),
        ("writes swept", metrics.swept_writes),
        ("keys evicted", metrics.evicted_keys),
    ] {
        if n == 0 {
            missing.push(format!("no {what}"));
        }
    }
    missing
}

fn config() -> MasterConfig {
    MasterConfig {
        default_kv_lease_ttl_ms: 20,
        default_kv_soft_pin_ttl_ms: 500,
        max_kv_soft_pin_ttl_ms: MAX_TTL,
        allow_evict_soft_pinned_objects: true,
        eviction_ratio: 0.1,
        eviction_high_watermark_ratio: 0.8,
        put_start_discard_timeout_ms: 30,
        put_start_release_timeout_ms: 100,
        max_group_retention_ttl_ms: 86_400_000,
        max_retained_groups: 65_536,
        soft_pin_cleanup_interval_ms: 5,
        eviction_check_interval_ms: 5,
        sweep_interval_ms: 20,
        shard_count: 16,
        // Presized and committed: the tables start in a huge-page region
        // and the churn grows them out of it onto the heap.
        expected_objects: 4_096,
        commit_presized: true,
        // Recording on, and small enough to drop: every operation of the
        // soak also runs its journal hooks (deferred frees included, which
        // the invariants check).
        journal_capacity_bytes: 1 << 20,
        clock: ClockSource::System,
        standby: false,
        // Threads interleave at random anyway: a fixed seed would replay nothing.
        seed: None,
    }
}

fn spec(name: &str) -> SegmentSpec {
    let (slot, size, pool) = match name {
        "mem0" => (1, 2 << 20, Pool::Memory),
        "mem1" => (2, 2 << 20, Pool::Memory),
        "mem2" => (3, 2 << 20, Pool::Memory),
        "nof0" => (4, 4 << 20, Pool::NofSsd),
        _ => (5, 1 << 20, Pool::Memory),
    };
    SegmentSpec {
        name: name.into(),
        base: slot << 36,
        size,
        pool,
    }
}

/// The key universe: (tenant, key, group). Every sixth key is in one of
/// four groups per tenant, fixed for its life.
struct Universe {
    keys: Vec<(String, String, Option<String>)>,
}

impl Universe {
    fn new() -> Self {
        let mut keys = Vec::new();
        for t in TENANTS {
            for i in 0..KEYS_PER_TENANT {
                let g = (i % 6 == 0).then(|| format!("g{}", (i / 6) % 4));
                keys.push((t.to_string(), format!("k{i:04}"), g));
            }
        }
        Universe { keys }
    }

    fn key(&self, i: usize) -> Key<'_> {
        let (t, k, _) = &self.keys[i];
        Key::scoped(t, k)
    }

    fn group(&self, i: usize) -> Option<String> {
        self.keys[i].2.clone()
    }
}

fn soft_pin(r: &mut XorShift) -> SoftPinRequest {
    match r.below(100) {
        0..=24 => SoftPinRequest::PRESERVE,
        25..=34 => SoftPinRequest::DISABLE,
        35..=74 => SoftPinRequest::enable_for(10 + r.below(91)),
        75..=84 => SoftPinRequest::enable(),
        85..=89 => SoftPinRequest::enable_for(0),
        90..=94 => SoftPinRequest::enable_for(r.below(2_000)),
        95..=96 => SoftPinRequest::enable_for(MAX_TTL + 1),
        97 => SoftPinRequest {
            action: SoftPinAction::Preserve,
            ttl_ms: Some(10),
        },
        _ => SoftPinRequest {
            action: SoftPinAction::Disable,
            ttl_ms: Some(0),
        },
    }
}

fn write_config(r: &mut XorShift, u: &Universe, key: usize) -> WriteConfig {
    let mut group = u.group(key);
    if r.chance(3) {
        // Naming another group (or one for an ungrouped key) is INVALID_PARAMS
        // on an Upsert of an existing object; naming none keeps its group.
        group = match group {
            Some(_) => None,
            None => Some("g0".into()),
        };
    }
    WriteConfig {
        memory_replicas: *r.pick(&[1, 1, 1, 1, 2]),
        nof_ssd_replicas: *r.pick(&[0, 0, 0, 1]),
        hard_pin: r.chance(2),
        preferred_segments: if r.chance(20) {
            vec![SEGMENTS[r.below(5) as usize].to_string()]
        } else {
            Vec::new()
        },
        soft_pin: soft_pin(r),
        group,
    }
}

/// A write a worker started and may end later (or never: the sweep's job).
struct Open {
    key: usize,
    client: ClientId,
    token: u64,
}

/// The weighted operation mix: (name, weight).
const MIX: [(&str, u64); 28] = [
    ("put", 120),
    ("upsert", 100),
    ("end_open", 80),
    ("get", 160),
    ("exist", 60),
    ("batch_get", 20),
    ("batch_exist", 15),
    ("batch_put", 25),
    ("batch_upsert", 15),
    ("batch_end_open", 10),
    ("batch_remove", 8),
    ("remove", 60),
    ("remove_by_regex", 2),
    ("copy", 30),
    ("move", 25),
    ("promotion", 20),
    ("task_end", 25),
    ("add_local_disk", 30),
    ("mount_spare", 6),
    ("unmount_spare", 6),
    ("deadline_query", 15),
    ("list_keys", 2),
    ("metrics", 3),
    ("snapshot", 1),
    ("evict_forced", 3),
    ("cleanup", 3),
    ("sweep", 3),
    ("abandon", 2),
];

fn pick_op(r: &mut XorShift) -> usize {
    let total: u64 = MIX.iter().map(|m| m.1).sum();
    let mut x = r.below(total);
    for (i, (_, w)) in MIX.iter().enumerate() {
        if x < *w {
            return i;
        }
        x -= w;
    }
    unreachable!()
}

struct Worker {
    id: usize,
    rng: XorShift,
    tally: Tally,
    open: Vec<Open>,
    /// Keys with a copy/move/promotion this worker started and not ended.
    tasks: Vec<(usize, u8)>,
    /// Writes started on keys of their own and never ended.
    abandoned: u64,
}

impl Worker {
    fn client(&mut self) -> ClientId {
        10 * (self.id as u64 + 1) + self.rng.below(2)
    }

    fn track(&mut self, key: usize, client: ClientId, token: u64) {
        self.open.push(Open { key, client, token });
        if self.open.len() > 32 {
            // Forgotten: the sweep frees it after the release timeout.
            self.open.remove(0);
        }
    }

    /// Starts a write and, most of the time, finishes it one way or another.
    fn write(&mut self, m: &Master, u: &Universe, upsert: bool) {
        let key = self.rng.below(u.keys.len() as u64) as usize;
        let client = self.client();
        let size = *self.rng.pick(&SIZES);
        let cfg = write_config(&mut self.rng, u, key);
        let r = if upsert {
            m.upsert_start(client, u.key(key), size, &cfg)
        } else {
            m.put_start(client, u.key(key), size, &cfg)
        };
        self.tally
            .record(if upsert { "upsert_start" } else { "put_start" }, &r);
        let Ok(w) = r else { return };
        assert!(w
            .replicas
            .iter()
            .all(|d| d.status == ReplicaStatus::Processing));
        match self.rng.below(100) {
            0..=59 => {
                let r = m.put_end(client, u.key(key), ReplicaSelector::All, Some(w.token));
                self.tally.record("put_end", &r);
            }
            60..=69 => {
                let sel = *self
                    .rng
                    .pick(&[ReplicaSelector::Memory, ReplicaSelector::NofSsd]);
                let r = m.put_end(client, u.key(key), sel, Some(w.token));
                self.tally.record("put_end_partial", &r);
                self.track(key, client, w.token);
            }
            70..=79 => {
                let r = m.put_revoke(client, u.key(key), ReplicaSelector::All, Some(w.token));
                self.tally.record("put_revoke", &r);
            }
            _ => self.track(key, client, w.token),
        }
    }

    fn end_open(&mut self, m: &Master, u: &Universe) {
        if self.open.is_empty() {
            return self.tally.add("end_open", "OK");
        }
        let i = self.rng.below(self.open.len() as u64) as usize;
        let o = self.open.swap_remove(i);
        let k = u.key(o.key);
        let (name, r) = match self.rng.below(10) {
            0..=4 => (
                "end_open",
                m.upsert_end(o.client, k, ReplicaSelector::All, Some(o.token)),
            ),
            5 => (
                "end_open_no_token",
                m.put_end(o.client, k, ReplicaSelector::All, None),
            ),
            6 => (
                "end_open_other_client",
                m.put_end(o.client + 1000, k, ReplicaSelector::All, None),
            ),
            7 => (
                "end_open_stale_token",
                m.put_end(
                    o.client,
                    k,
                    ReplicaSelector::All,
                    Some(o.token.wrapping_sub(1)),
                ),
            ),
            _ => (
                "revoke_open",
                m.upsert_revoke(o.client, k, ReplicaSelector::All, Some(o.token)),
            ),
        };
        self.tally.record(name, &r);
    }

    fn keys(&mut self, u: &Universe) -> Vec<usize> {
        let n = 1 + self.rng.below(8);
        (0..n)
            .map(|_| self.rng.below(u.keys.len() as u64) as usize)
            .collect()
    }

    fn op(&mut self, m: &Master, u: &Universe, which: usize) {
        let key = self.rng.below(u.keys.len() as u64) as usize;
        let k = u.key(key);
        match MIX[which].0 {
            "put" => self.write(m, u, false),
            "upsert" => self.write(m, u, true),
            "end_open" => self.end_open(m, u),
            "abandon" => {
                // A write on a key no other operation names, never ended:
                // only the sweep (after the release timeout) can free it. On
                // the shared keys a later Put or Upsert usually replaces or
                // preempts a forgotten write first.
                self.abandoned += 1;
                let key = format!("abandoned/{}/{}", self.id, self.abandoned);
                let r = m.put_start(
                    self.client(),
                    Key::new(&key),
                    SIZES[0],
                    &WriteConfig::default(),
                );
                self.tally.record("abandon_start", &r);
            }
            "get" => {
                let r = m.get_replica_list(k);
                if let Ok(list) = &r {
                    assert!(!list.is_empty());
                    assert!(list.iter().all(|d| d.status == ReplicaStatus::Complete));
                }
                self.tally.record("get", &r);
            }
            "exist" => {
                let r = m.exist(k);
                self.tally.record("exist", &r);
            }
            "batch_get" | "batch_exist" => {
                let idx = self.keys(u);
                let keys: Vec<Key> = idx.iter().map(|&i| u.key(i)).collect();
                if MIX[which].0 == "batch_get" {
                    for r in m.batch_get_replica_list(&keys) {
                        self.tally.record("batch_get", &r);
                    }
                } else {
                    for r in m.batch_exist(&keys) {
                        self.tally.record("batch_exist", &r);
                    }
                }
            }
            "batch_put" | "batch_upsert" => {
                let idx = self.keys(u);
                let keys: Vec<Key> = idx.iter().map(|&i| u.key(i)).collect();
                let sizes = vec![*self.rng.pick(&SIZES); keys.len()];
                let cfg = write_config(&mut self.rng, u, idx[0]);
                let client = self.client();
                let upsert = MIX[which].0 == "batch_upsert";
                let rs = if upsert {
                    m.batch_upsert_start(client, &keys, &sizes, &cfg)
                } else {
                    m.batch_put_start(client, &keys, &sizes, &cfg)
                };
                assert_eq!(rs.len(), keys.len());
                let name = if upsert {
                    "batch_upsert_start"
                } else {
                    "batch_put_start"
                };
                let tokens: Vec<u64> = rs
                    .iter()
                    .map(|r| r.as_ref().map_or(0, |w| w.token))
                    .collect();
                for r in &rs {
                    self.tally.record(name, r);
                }
                if self.rng.chance(80) {
                    for r in m.batch_put_end(client, &keys, ReplicaSelector::All, Some(&tokens)) {
                        self.tally.record("batch_put_end", &r);
                    }
                } else {
                    for (i, t) in tokens.iter().enumerate() {
                        if *t != 0 {
                            self.track(idx[i], client, *t);
                        }
                    }
                }
            }
            "batch_end_open" => {
                let n = self.open.len().min(1 + self.rng.below(4) as usize);
                let group: Vec<Open> = self.open.drain(..n).collect();
                let Some(first) = group.first() else {
                    return self.tally.add("batch_put_end", "OK");
                };
                // One client per batch: only the entries of the first one's client.
                let client = first.client;
                let mine: Vec<&Open> = group.iter().filter(|o| o.client == client).collect();
                let keys: Vec<Key> = mine.iter().map(|o| u.key(o.key)).collect();
                let tokens: Vec<u64> = mine.iter().map(|o| o.token).collect();
                let revoke = self.rng.chance(30);
                let rs = if revoke {
                    m.batch_put_revoke(client, &keys, ReplicaSelector::All, Some(&tokens))
                } else {
                    m.batch_put_end(client, &keys, ReplicaSelector::All, Some(&tokens))
                };
                for r in rs {
                    self.tally.record(
                        if revoke {
                            "batch_put_revoke"
                        } else {
                            "batch_put_end"
                        },
                        &r,
                    );
                }
            }
            "batch_remove" => {
                let idx = self.keys(u);
                let keys: Vec<Key> = idx.iter().map(|&i| u.key(i)).collect();
                for r in m.batch_remove(&keys, self.rng.chance(50)) {
                    self.tally.record("batch_remove", &r);
                }
            }
            "remove" => {
                let r = m.remove(k, self.rng.chance(50));
                self.tally.record("remove", &r);
            }
            "remove_by_regex" => {
                // A narrow pattern: about one key in a hundred.
                let pat = format!("^k0{:02}[0-9]$", self.rng.below(20));
                let r = m.remove_by_regex(
                    Some(TENANTS[self.rng.below(2) as usize]),
                    &pat,
                    self.rng.chance(50),
                );
                self.tally.record("remove_by_regex", &r);
            }
            "copy" => {
                let a = SEGMENTS[self.rng.below(5) as usize];
                let b = SEGMENTS[self.rng.below(5) as usize];
                let targets: Vec<&str> = if self.rng.chance(30) {
                    vec![a, b]
                } else {
                    vec![a]
                };
                let r = m.copy_start(k, &targets);
                self.tally.record("copy_start", &r);
                if r.is_ok() {
                    self.finish_or_keep(m, u, key, 0);
                }
            }
            "move" => {
                let from = SEGMENTS[self.rng.below(5) as usize];
                let to = SEGMENTS[self.rng.below(5) as usize];
                let r = m.move_start(k, from, to);
                self.tally.record("move_start", &r);
                if r.is_ok() {
                    self.finish_or_keep(m, u, key, 1);
                }
            }
            "promotion" => {
                let r = m.promotion_start(k, &[]);
                self.tally.record("promotion_start", &r);
                if r.is_ok() {
                    self.finish_or_keep(m, u, key, 2);
                }
            }
            "task_end" => {
                // Mostly this worker's own open tasks, sometimes a random key
                // (usually OBJECT_NO_REPLICATION_TASK, sometimes someone else's).
                let (key, kind) = if !self.tasks.is_empty() && self.rng.chance(70) {
                    let i = self.rng.below(self.tasks.len() as u64) as usize;
                    self.tasks.swap_remove(i)
                } else {
                    (key, self.rng.below(3) as u8)
                };
                self.end_task(m, u, key, kind);
            }
            "add_local_disk" => {
                let r = m.add_local_disk_replica(self.client(), k, *self.rng.pick(&SIZES));
                self.tally.record("add_local_disk", &r);
            }
            "mount_spare" => {
                let r = m.mount_segment(SPARE_OWNER, &spec("spare"));
                self.tally.record("mount_spare", &r);
            }
            "unmount_spare" => {
                let r = m.unmount_segment(SPARE_OWNER, "spare");
                self.tally.record("unmount_spare", &r);
            }
            "deadline_query" => {
                let r = m.soft_pin_deadline(k);
                if let Ok(Some(d)) = r {
                    assert!(d > 0);
                }
                self.tally.record("soft_pin_deadline", &r);
                let r = m.has_pending_soft_pin(k);
                self.tally.record("has_pending_soft_pin", &r);
            }
            "list_keys" => {
                let r = m.list_keys(TENANTS[self.rng.below(2) as usize], "k00", None, 50);
                self.tally.record("list_keys", &r);
            }
            "metrics" => {
                let s = m.metrics();
                assert!(s.memory_allocated_bytes <= s.memory_capacity_bytes);
                let _ = m.metrics_prometheus();
                self.tally.add("metrics", "OK");
            }
            "snapshot" => {
                let r = m.snapshot();
                if let Ok(s) = &r {
                    snapshot::codec::decode(s).expect("a live master's snapshot decodes");
                }
                self.tally.record("snapshot", &r);
            }
            "evict_forced" => {
                m.evict_if_needed(true);
                self.tally.add("evict_forced", "OK");
            }
            "cleanup" => {
                m.run_cleanup();
                self.tally.add("cleanup", "OK");
            }
            "sweep" => {
                let now = m.now();
                m.sweep_stale_writes_at(now);
                m.release_discarded_at(now);
                self.tally.add("sweep", "OK");
            }
            other => unreachable!("{other}"),
        }
    }

    fn finish_or_keep(&mut self, m: &Master, u: &Universe, key: usize, kind: u8) {
        if self.rng.chance(70) {
            self.end_task(m, u, key, kind);
        } else {
            self.tasks.push((key, kind));
        }
    }

    fn end_task(&mut self, m: &Master, u: &Universe, key: usize, kind: u8) {
        let k = u.key(key);
        let ok = self.rng.chance(80);
        let (name, r) = match (kind, ok) {
            (0, true) => ("copy_end", m.copy_end(k)),
            (0, false) => ("copy_revoke", m.copy_revoke(k)),
            (1, true) => ("move_end", m.move_end(k)),
            (1, false) => ("move_revoke", m.move_revoke(k)),
            _ => ("promotion_end", m.promotion_end(k, ok)),
        };
        self.tally.record(name, &r);
    }
}

/// Pause protocol: the main thread raises `pause`; workers park until the
/// epoch moves on. A worker that exits (done or panicked) leaves `running`.
#[derive(Default)]
struct Control {
    pause: AtomicBool,
    stop: AtomicBool,
    state: Mutex<(usize, usize, u64)>, // (running, parked, epoch)
    cv: Condvar,
    ops: AtomicU64,
    /// Per worker: index into MIX of the operation in progress (+1), 0 = idle.
    current: [AtomicUsize; THREADS],
    /// Bit i: some worker's tally holds COVERAGE[i] (published at barriers).
    covered: AtomicU64,
}

impl Control {
    /// Records which COVERAGE entries `tally` holds (before parking, so the
    /// main thread sees them once every worker is parked).
    fn publish(&self, tally: &Tally) {
        self.covered.fetch_or(coverage_bits(tally), SeqCst);
    }

    fn park(&self) {
        let mut s = self.state.lock().unwrap();
        s.1 += 1;
        let epoch = s.2;
        self.cv.notify_all();
        while s.2 == epoch {
            s = self.cv.wait(s).unwrap();
        }
        s.1 -= 1;
    }

    /// Waits until every running worker is parked; Err names the stragglers.
    fn wait_parked(&self) -> Result<(), String> {
        let deadline = WallInstant::now() + BARRIER_TIMEOUT;
        let mut s = self.state.lock().unwrap();
        while s.1 < s.0 {
            let left = deadline.saturating_duration_since(WallInstant::now());
            if left.is_zero() {
                let busy: Vec<String> = self
                    .current
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.load(SeqCst) != 0)
                    .map(|(i, c)| format!("worker {i} in {}", MIX[c.load(SeqCst) - 1].0))
                    .collect();
                return Err(format!(
                    "{} of {} workers parked after {BARRIER_TIMEOUT:?}: hang ({})",
                    s.1,
                    s.0,
                    busy.join(", ")
                ));
            }
            s = self.cv.wait_timeout(s, left).unwrap().0;
        }
        Ok(())
    }

    fn release(&self) {
        self.pause.store(false, SeqCst);
        self.state.lock().unwrap().2 += 1;
        self.cv.notify_all();
    }

    fn leave(&self) {
        self.state.lock().unwrap().0 -= 1;
        self.cv.notify_all();
    }
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// Aborts the process when `heartbeat` stops moving: a hang of the main
/// thread (e.g. in check_invariants or quiesce) cannot fail the test any
/// other way.
fn watchdog(heartbeat: Arc<AtomicU64>, done: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut last = (heartbeat.load(SeqCst), WallInstant::now());
        while !done.load(SeqCst) {
            std::thread::sleep(Duration::from_millis(200));
            let beat = heartbeat.load(SeqCst);
            if beat != last.0 {
                last = (beat, WallInstant::now());
            } else if last.1.elapsed() > WATCHDOG {
                eprintln!("soak watchdog: no progress for {WATCHDOG:?} (step {beat}): hang");
                std::process::abort();
            }
        }
    })
}

#[cfg(feature = "deadlock-detection")]
fn deadlock_detector(done: Arc<AtomicBool>) -> Option<std::thread::JoinHandle<u64>> {
    Some(std::thread::spawn(move || {
        let mut checks = 0;
        while !done.load(SeqCst) {
            std::thread::sleep(Duration::from_millis(100));
            checks += 1;
            let cycles = parking_lot::deadlock::check_deadlock();
            if !cycles.is_empty() {
                eprintln!("soak: {} deadlock cycle(s) detected", cycles.len());
                for (i, threads) in cycles.iter().enumerate() {
                    for t in threads {
                        eprintln!(
                            "cycle {i}, thread {:?}:\n{:?}",
                            t.thread_id(),
                            t.backtrace()
                        );
                    }
                }
                std::process::abort();
            }
        }
        checks
    }))
}

#[cfg(not(feature = "deadlock-detection"))]
fn deadlock_detector(_done: Arc<AtomicBool>) -> Option<std::thread::JoinHandle<u64>> {
    None
}

#[test]
fn soak_mixed_operations_keep_every_invariant_under_maintenance() {
    // docs/CONTRACT.md §8 under concurrency: the invariants hold at every barrier, no
    // deadlock or hang, every result a defined code.
    let secs = env_u64("SOAK_SECS").unwrap_or(if std::env::var("CI").as_deref() == Ok("true") {
        60
    } else {
        10
    });
    let max_ops = env_u64("SOAK_MAX_OPS").unwrap_or(u64::MAX);
    let seed = env_u64("SOAK_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
    });
    println!(
        "soak: {secs} s, max {max_ops} ops, {THREADS} threads, seed {seed} (SOAK_SEED), \
         deadlock detection {}",
        if cfg!(feature = "deadlock-detection") {
            "on"
        } else {
            "off (--features deadlock-detection)"
        }
    );

    let m = Arc::new(Master::new(config()).unwrap());
    for s in ["mem0", "mem1", "mem2", "nof0"] {
        m.mount_segment(OWNER, &spec(s)).unwrap();
    }
    m.mount_segment(SPARE_OWNER, &spec("spare")).unwrap();
    let u = Arc::new(Universe::new());
    let ctl = Arc::new(Control::default());
    ctl.state.lock().unwrap().0 = THREADS;
    let done = Arc::new(AtomicBool::new(false));
    let heartbeat = Arc::new(AtomicU64::new(0));
    let dog = watchdog(heartbeat.clone(), done.clone());
    let detector = deadlock_detector(done.clone());

    let workers: Vec<_> = (0..THREADS)
        .map(|id| {
            let (m, u, ctl) = (m.clone(), u.clone(), ctl.clone());
            std::thread::Builder::new()
                .name(format!("soak-{id}"))
                .spawn(move || {
                    let mut w = Worker {
                        id,
                        rng: XorShift::new(seed ^ (id as u64).wrapping_mul(0x9E37_79B9)),
                        tally: Tally::default(),
                        open: Vec::new(),
                        tasks: Vec::new(),
                        abandoned: 0,
                    };
                    let run = catch_unwind(AssertUnwindSafe(|| {
                        while !ctl.stop.load(SeqCst) {
                            if ctl.pause.load(SeqCst) {
                                ctl.publish(&w.tally);
                                ctl.park();
                                continue;
                            }
                            if ctl.ops.fetch_add(1, Relaxed) >= max_ops {
                                break;
                            }
                            let which = pick_op(&mut w.rng);
                            ctl.current[id].store(which + 1, SeqCst);
                            w.op(&m, &u, which);
                            ctl.current[id].store(0, SeqCst);
                        }
                    }));
                    ctl.leave();
                    match run {
                        Ok(()) => w.tally,
                        Err(p) => std::panic::resume_unwind(p),
                    }
                })
                .unwrap()
        })
        .collect();

    let start = WallInstant::now();
    let min_run = Duration::from_secs(secs);
    let mut checks = 0u64;
    let mut failure: Option<String> = None;
    let mut missing = missing_coverage(0, &m.metrics());
    let mut extended = false;
    while ctl.ops.load(Relaxed) < max_ops {
        let elapsed = start.elapsed();
        if elapsed >= min_run {
            if missing.is_empty() || elapsed >= min_run + COVERAGE_GRACE {
                break;
            }
            if !extended {
                extended = true;
                println!(
                    "soak: after {elapsed:.1?} still {}: going on (at most {COVERAGE_GRACE:?} more)",
                    missing.join(", ")
                );
            }
        }
        std::thread::sleep(Duration::from_secs(1).min(Duration::from_secs(secs)));
        heartbeat.fetch_add(1, SeqCst);
        ctl.pause.store(true, SeqCst);
        if let Err(e) = ctl.wait_parked() {
            failure = Some(e);
            break;
        }
        heartbeat.fetch_add(1, SeqCst);
        let result = {
            let _quiet = m.quiesce();
            m.check_invariants()
        };
        // Every worker published its tally before parking.
        missing = missing_coverage(ctl.covered.load(SeqCst), &m.metrics());
        ctl.release();
        match result {
            Ok(()) => checks += 1,
            Err(e) => {
                failure = Some(format!("invariant violated at check {}: {e}", checks + 1));
                break;
            }
        }
        if ctl.state.lock().unwrap().0 < THREADS {
            failure = Some("a worker exited early (panicked)".into());
            break;
        }
    }
    ctl.stop.store(true, SeqCst);
    ctl.release();
    let mut tally = Tally::default();
    let mut panics = Vec::new();
    for w in workers {
        match w.join() {
            Ok(t) => tally.merge(&t),
            Err(p) => panics.push(
                p.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default(),
            ),
        }
    }
    heartbeat.fetch_add(1, SeqCst);
    // Final check with everything stopped but the maintenance thread.
    if failure.is_none() && panics.is_empty() {
        let _quiet = m.quiesce();
        match m.check_invariants() {
            Ok(()) => checks += 1,
            Err(e) => failure = Some(format!("invariant violated at the final check: {e}")),
        }
    }
    done.store(true, SeqCst);
    dog.join().unwrap();
    let detector_checks = detector.map(|d| d.join().unwrap());
    let elapsed = start.elapsed().as_secs_f64();

    let metrics = m.metrics();
    let total = tally.total();
    let mut by_code: BTreeMap<&str, u64> = BTreeMap::new();
    for ((_, r), n) in &tally.0 {
        *by_code.entry(r).or_default() += n;
    }
    println!(
        "soak: {total} results from {} ops in {elapsed:.1} s ({:.0} ops/s), \
         {checks} invariant checks passed{}",
        ctl.ops.load(Relaxed).min(max_ops),
        ctl.ops.load(Relaxed).min(max_ops) as f64 / elapsed,
        detector_checks.map_or(String::new(), |n| format!(", {n} deadlock checks clean"))
    );
    println!(
        "per operation (total, then per result code):\n{}",
        tally.render()
    );
    println!("per result code: {by_code:?}");
    println!(
        "maintenance: cleanup cycles {} expired {} stale {}, evicted keys {} (attempts {}), \
         swept writes {}, put-start failures {}, maintenance panics {}; end state: {} keys, \
         {} soft pins, memory {}/{} bytes, discarded {} bytes",
        metrics.cleanup_cycles,
        metrics.cleanup_expired,
        metrics.cleanup_stale_dropped,
        metrics.evicted_keys,
        metrics.eviction_attempts,
        metrics.swept_writes,
        metrics.put_start_failures,
        metrics.maintenance_task_panics,
        metrics.key_count,
        metrics.soft_pin_key_count,
        metrics.memory_allocated_bytes,
        metrics.memory_capacity_bytes,
        metrics.discarded_staging_bytes,
    );

    assert!(panics.is_empty(), "worker panicked: {panics:?}");
    if let Some(f) = failure {
        panic!("{f}");
    }
    assert!(tally.forbidden().is_empty(), "{:?}", tally.forbidden());
    assert_eq!(metrics.maintenance_task_panics, 0);
    assert!(checks >= 2, "only {checks} invariant checks ran");
    // The mix really exercised what it is for: pins expired by cleanup,
    // abandoned writes swept, memory pressure evicted, tasks completed
    // (the run went on until it did, up to COVERAGE_GRACE).
    let missing = missing_coverage(coverage_bits(&tally), &metrics);
    assert!(
        missing.is_empty(),
        "the soak did not exercise its mix in {elapsed:.0} s: {}",
        missing.join(", ")
    );
}
