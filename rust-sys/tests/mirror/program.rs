// One program, compiled twice by tests/mirror.rs: once with
// `use mooncake_meta_core as mm;` (the core compiled in) and once with
// `use mooncake_meta_sys::safe as mm;` (the C library linked). It names
// only `mm::` items, so it compiles against both unchanged; each scenario
// returns a transcript (values, reports, replica lists, error kinds) that
// must be identical through both. Timings (`duration_ns`, lock holds) are
// zeroed; messages are left out (the C ABI's name the C function).

use self::mm::*;
use std::fmt::Debug;

const T0: u64 = 1_000_000;
const SIZE: u64 = 4096;

/// A deterministic master with one shard (so shard counts do not depend
/// on the per-master hash seed).
fn master_with(cfg: MasterConfig) -> Master {
    Master::new(MasterConfig {
        shard_count: 1,
        ..cfg
    })
    .unwrap()
}

fn master() -> Master {
    master_with(MasterConfig::deterministic(T0))
}

fn seg(name: &str, base: u64, size: u64, pool: Pool) -> SegmentSpec {
    SegmentSpec {
        name: name.into(),
        base,
        size,
        pool,
    }
}

/// `Ok(value)` as its Debug form, an error as its kind only.
fn show<T: Debug>(r: &Result<T>) -> String {
    match r {
        Ok(v) => format!("Ok({v:?})"),
        Err(e) => format!("Err({:?})", e.kind()),
    }
}

struct Transcript(Vec<String>);

impl Transcript {
    fn new() -> Self {
        Transcript(Vec::new())
    }
    fn note(&mut self, label: &str, value: impl Debug) {
        self.0.push(format!("{label}: {value:?}"));
    }
    fn res<T: Debug>(&mut self, label: &str, r: Result<T>) -> Option<T> {
        self.0.push(format!("{label}: {}", show(&r)));
        r.ok()
    }
    fn batch<T: Debug>(&mut self, label: &str, rs: Vec<Result<T>>) -> Vec<Result<T>> {
        let shown: Vec<String> = rs.iter().map(show).collect();
        self.0.push(format!("{label}: {shown:?}"));
        rs
    }
}

fn cleanup_view(s: CleanupStats) -> CleanupStats {
    CleanupStats {
        duration_ns: 0,
        longest_index_hold_ns: 0,
        ..s
    }
}

fn metrics_view(m: MetricsSnapshot) -> MetricsSnapshot {
    MetricsSnapshot {
        cleanup_last_duration_ns: 0,
        cleanup_longest_hold_ns: 0,
        ..m
    }
}

/// PutStart + PutEnd of `key` by client 1.
fn put(m: &Master, key: Key<'_>, cfg: &WriteConfig) -> StartedWrite {
    let w = m.put_start(1, key, SIZE, cfg).unwrap();
    m.put_end(1, key, ReplicaSelector::All, Some(w.token))
        .unwrap();
    w
}

fn pinned(ttl: u64) -> WriteConfig {
    WriteConfig::default().with_soft_pin(SoftPinRequest::enable_for(ttl))
}

/// The README's quick start: a soft-pinned write whose deadline starts at
/// End, reads that never extend it, and cleanup when it is due.
pub fn quick_start() -> Vec<String> {
    let mut t = Transcript::new();
    let m = Master::new(MasterConfig::deterministic(1_000)).unwrap();
    t.note("config", m.config().clone());
    t.res(
        "mount",
        m.mount_segment(1, &seg("seg0", 0x1000_0000, 64 << 20, Pool::Memory)),
    );
    t.note("segment 0", m.segment_name(0));
    t.note("segment 99", m.segment_name(99));
    let cfg = pinned(60_000);
    let w = t
        .res("put_start", m.put_start(1, Key::new("k"), SIZE, &cfg))
        .unwrap();
    t.res("pending", m.has_pending_soft_pin(Key::new("k")));
    t.res("deadline before End", m.soft_pin_deadline(Key::new("k")));
    // Time passes between Start and End: the deadline starts at End.
    t.res("advance", m.advance_time(500));
    t.res(
        "put_end",
        m.put_end(1, Key::new("k"), ReplicaSelector::All, Some(w.token)),
    );
    let deadline = m.soft_pin_deadline(Key::new("k")).unwrap();
    assert_eq!(deadline, Some(61_500));
    t.note("deadline", deadline);
    // A repeated End does not refresh it.
    t.res("advance", m.advance_time(1_000));
    t.res(
        "put_end again",
        m.put_end(1, Key::new("k"), ReplicaSelector::All, Some(w.token)),
    );
    t.res("deadline after 2nd End", m.soft_pin_deadline(Key::new("k")));
    t.res("advance", m.advance_time(57_000));
    t.res("replicas", m.get_replica_list(Key::new("k")));
    t.res("exist", m.exist(Key::new("k")));
    t.res("deadline after reads", m.soft_pin_deadline(Key::new("k")));
    t.note("now", m.now());
    t.note("cleanup early", cleanup_view(m.run_cleanup()));
    let stats = m.run_cleanup_at(61_500);
    assert_eq!(stats.expired, 1);
    t.note("cleanup due", cleanup_view(stats));
    t.res("deadline after cleanup", m.soft_pin_deadline(Key::new("k")));
    t.note("index", m.index_sizes());
    t.note("keys", m.key_count());
    t.note("invariants", m.check_invariants());
    t.0
}

/// Error kinds of bad requests, each leaving the master unchanged.
pub fn errors() -> Vec<String> {
    let mut t = Transcript::new();
    let bad_cfg = MasterConfig {
        eviction_ratio: 1.5,
        ..MasterConfig::deterministic(T0)
    };
    t.res("bad ratio validate", bad_cfg.validate());
    t.res("bad ratio master", Master::new(bad_cfg).map(|_| ()));
    t.res(
        "default ttl above max",
        Master::new(MasterConfig {
            default_kv_soft_pin_ttl_ms: 10,
            max_kv_soft_pin_ttl_ms: 5,
            ..MasterConfig::deterministic(T0)
        })
        .map(|_| ()),
    );
    let m = master_with(MasterConfig {
        max_kv_soft_pin_ttl_ms: 10_000,
        default_kv_soft_pin_ttl_ms: 5_000,
        ..MasterConfig::deterministic(T0)
    });
    t.res(
        "put with nothing mounted",
        m.put_start(1, Key::new("k"), SIZE, &WriteConfig::default()),
    );
    t.res("mount", m.mount_segment(1, &seg("mem0", 1 << 40, 1 << 20, Pool::Memory)));
    t.res(
        "remount identical",
        m.mount_segment(1, &seg("mem0", 1 << 40, 1 << 20, Pool::Memory)),
    );
    t.res(
        "remount different",
        m.mount_segment(1, &seg("mem0", 1 << 40, 2 << 20, Pool::Memory)),
    );
    t.res("mount empty name", m.mount_segment(1, &seg("", 0, 4096, Pool::Memory)));
    t.res("mount size 0", m.mount_segment(1, &seg("z", 0, 0, Pool::Memory)));
    t.res("unmount unknown", m.unmount_segment(1, "nope"));
    t.res("missing key", m.get_replica_list(Key::new("nope")));
    t.res("missing deadline", m.soft_pin_deadline(Key::new("nope")));
    t.res("empty key", m.exist(Key::new("")));
    t.res("empty tenant", m.exist(Key::scoped("", "k")));
    t.res("NUL tenant", m.exist(Key::scoped("a\0b", "k")));
    let preserve_ttl = WriteConfig::default().with_soft_pin(SoftPinRequest {
        action: SoftPinAction::Preserve,
        ttl_ms: Some(1),
    });
    t.res("preserve with ttl", m.put_start(1, Key::new("k"), SIZE, &preserve_ttl));
    let disable_ttl = WriteConfig::default().with_soft_pin(SoftPinRequest {
        action: SoftPinAction::Disable,
        ttl_ms: Some(1),
    });
    t.res("disable with ttl", m.put_start(1, Key::new("k"), SIZE, &disable_ttl));
    t.res("ttl above max", m.put_start(1, Key::new("k"), SIZE, &pinned(10_001)));
    t.res("size 0", m.put_start(1, Key::new("k"), 0, &WriteConfig::default()));
    let none = WriteConfig {
        memory_replicas: 0,
        ..WriteConfig::default()
    };
    t.res("no replicas", m.put_start(1, Key::new("k"), SIZE, &none));
    t.res(
        "empty group",
        m.put_start(1, Key::new("k"), SIZE, &WriteConfig::default().with_group("")),
    );
    t.res("validate ok", m.validate_write_request(Key::new("k"), SIZE, &pinned(10_000)));
    t.res("validate bad", m.validate_write_request(Key::new("k"), SIZE, &pinned(10_001)));
    t.res("resolve default", SoftPinRequest::enable().resolve(m.config()));
    t.res("resolve legacy", SoftPinRequest::from_legacy(false).resolve(m.config()));
    t.res("resolve bad", SoftPinRequest::enable_for(10_001).resolve(m.config()));
    t.res("action from raw", SoftPinAction::from_raw(3));
    t.note("keys after refusals", m.key_count());

    let w = m.put_start(1, Key::new("k"), SIZE, &pinned(10_000)).unwrap();
    t.res("put twice in flight", m.put_start(1, Key::new("k"), SIZE, &WriteConfig::default()));
    t.res(
        "end by another client",
        m.put_end(2, Key::new("k"), ReplicaSelector::All, Some(w.token)),
    );
    t.res(
        "end with a stale token",
        m.put_end(1, Key::new("k"), ReplicaSelector::All, Some(w.token + 1)),
    );
    t.res("read before End", m.get_replica_list(Key::new("k")));
    t.note("readable before End", m.readable_count(Key::new("k")));
    t.res(
        "end",
        m.put_end(1, Key::new("k"), ReplicaSelector::All, Some(w.token)),
    );
    t.res(
        "put existing",
        m.put_start(1, Key::new("k"), SIZE, &WriteConfig::default()),
    );
    t.res(
        "revoke with nothing in flight",
        m.put_revoke(1, Key::new("k"), ReplicaSelector::All, None),
    );
    t.res("remove with a lease", {
        m.exist(Key::new("k")).unwrap();
        m.remove(Key::new("k"), false)
    });
    t.res("clock backwards", m.set_time(T0 - 1));
    t.res("eviction ratio", m.run_eviction(2.0, 0.0));
    t.res("list empty tenant", m.list_keys("", "", None, 0));
    t.res("regex bad pattern", m.remove_by_regex(None, "(", false));
    t.res("regex empty tenant", m.remove_by_regex(Some(""), "k", false));
    t.res("copy without targets", m.copy_start(Key::new("k"), &[]));
    t.res("copy to unknown", m.copy_start(Key::new("k"), &["nope"]));
    t.res("copy end without task", m.copy_end(Key::new("k")));
    t.res("move end without task", m.move_end(Key::new("k")));
    t.res("promote without disk", m.promotion_start(Key::new("k"), &[]));
    t.res("disk replica size 0", m.add_local_disk_replica(3, Key::new("d"), 0));
    t.res("restore garbage", m.restore(b"not a snapshot"));
    t.res("restore nothing", m.restore_candidates(&[]));
    t.note("keys", m.key_count());
    t.res("deadline kept", m.soft_pin_deadline(Key::new("k")));
    t.note("invariants", m.check_invariants());

    let sys_clock = Master::new(MasterConfig {
        shard_count: 1,
        soft_pin_cleanup_interval_ms: 0,
        eviction_check_interval_ms: 0,
        sweep_interval_ms: 0,
        ..MasterConfig::default()
    })
    .unwrap();
    t.res("advance a system clock", sys_clock.advance_time(1).map(|_| ()));
    t.0
}

/// Cleanup over several pins: due, stale and re-enabled entries.
pub fn cleanup() -> Vec<String> {
    let mut t = Transcript::new();
    let m = master();
    m.mount_segment(1, &seg("mem0", 1 << 40, 1 << 20, Pool::Memory))
        .unwrap();
    for (i, ttl) in [1_000u64, 2_000, 3_000, 0].into_iter().enumerate() {
        let key = format!("k{i}");
        put(&m, Key::new(&key), &pinned(ttl));
        t.res(&format!("deadline {key}"), m.soft_pin_deadline(Key::new(&key)));
    }
    put(&m, Key::new("plain"), &WriteConfig::default());
    // Re-enable k0 through an upsert (in place): its old entry goes stale.
    let w = m.upsert_start(1, Key::new("k0"), SIZE, &pinned(5_000)).unwrap();
    t.note("upsert in place replicas", w.replicas.len());
    t.res(
        "upsert end",
        m.upsert_end(1, Key::new("k0"), ReplicaSelector::All, Some(w.token)),
    );
    // DISABLE drops k1's pin.
    let w = m
        .upsert_start(1, Key::new("k1"), SIZE, &WriteConfig::default().with_soft_pin(SoftPinRequest::DISABLE))
        .unwrap();
    m.upsert_end(1, Key::new("k1"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    t.note("index", m.index_sizes());
    t.note("metrics", metrics_view(m.metrics()));
    for at in [T0 + 999, T0 + 1_000, T0 + 3_000, T0 + 5_000, u64::MAX] {
        t.note(&format!("cleanup at {at}"), cleanup_view(m.run_cleanup_at(at)));
        t.note("index", m.index_sizes());
    }
    for key in ["k0", "k1", "k2", "k3", "plain"] {
        t.res(&format!("deadline {key}"), m.soft_pin_deadline(Key::new(key)));
    }
    t.note("metrics", metrics_view(m.metrics()));
    t.note("invariants", m.check_invariants());
    t.0
}

/// Eviction: the first pass skips active pins, the second takes them only
/// when allowed; hard pins are never taken.
pub fn eviction() -> Vec<String> {
    let mut t = Transcript::new();
    for allow in [false, true] {
        let m = master_with(MasterConfig {
            allow_evict_soft_pinned_objects: allow,
            default_kv_lease_ttl_ms: 100,
            ..MasterConfig::deterministic(T0)
        });
        m.mount_segment(1, &seg("mem0", 1 << 40, 16 * SIZE, Pool::Memory))
            .unwrap();
        for i in 0..4 {
            put(&m, Key::new(&format!("plain{i}")), &WriteConfig::default());
            put(&m, Key::new(&format!("pin{i}")), &pinned(60_000));
        }
        let hard = WriteConfig {
            hard_pin: true,
            ..WriteConfig::default()
        };
        put(&m, Key::new("hard"), &hard);
        m.advance_time(1_000).unwrap();
        t.note(&format!("allow={allow} evict_if_needed"), m.evict_if_needed(false));
        t.res(&format!("allow={allow} evict 25%"), m.run_eviction(0.25, 0.25));
        t.res(&format!("allow={allow} evict all"), m.run_eviction(1.0, 1.0));
        let keys = m.list_keys(DEFAULT_TENANT, "", None, 0).unwrap();
        t.note(&format!("allow={allow} left"), keys);
        // Fill the segment: a failed start, then a forced trigger.
        let mut i = 0;
        while m
            .put_start(1, Key::new(&format!("fill{i}")), 4 * SIZE, &WriteConfig::default())
            .is_ok()
        {
            m.put_end(1, Key::new(&format!("fill{i}")), ReplicaSelector::All, None)
                .unwrap();
            i += 1;
        }
        t.note("fills", i);
        m.advance_time(1_000).unwrap();
        t.note(&format!("allow={allow} forced"), m.evict_if_needed(true));
        t.note("metrics", metrics_view(m.metrics()));
        t.note("invariants", m.check_invariants());
    }
    t.0
}

/// Snapshot and restore: deadlines survive, expired ones are normalised,
/// unleased unpinned objects are dropped, the newest valid candidate wins.
pub fn snapshot_restore() -> Vec<String> {
    let mut t = Transcript::new();
    let m = master();
    m.mount_segment(1, &seg("mem0", 1 << 40, 1 << 20, Pool::Memory))
        .unwrap();
    put(&m, Key::new("short"), &pinned(1_000));
    put(&m, Key::new("long"), &pinned(100_000));
    put(&m, Key::new("plain"), &WriteConfig::default());
    put(&m, Key::scoped("t1", "other"), &pinned(50_000));
    m.put_start(1, Key::new("inflight"), SIZE, &WriteConfig::default())
        .unwrap();
    let old = m.snapshot().unwrap();
    m.advance_time(10).unwrap();
    let new = m.snapshot().unwrap();
    t.note("snapshot sizes equal", old.len() == new.len());

    let copy = master_with(MasterConfig::deterministic(T0 + 20_000));
    let report = copy.restore(&new).unwrap();
    t.note(
        "restore",
        (
            report.candidate,
            report.created_at,
            report.objects_restored,
            report.objects_dropped,
            report.replicas_dropped,
            report.soft_pins_restored,
            report.soft_pins_normalised,
        ),
    );
    for key in [Key::new("short"), Key::new("long"), Key::new("plain"), Key::scoped("t1", "other")] {
        t.res(&format!("deadline {key:?}"), copy.soft_pin_deadline(key));
    }
    t.res("replicas long", copy.get_replica_list(Key::new("long")));
    t.note("index", copy.index_sizes());
    t.note("metrics", metrics_view(copy.metrics()));

    let third = master_with(MasterConfig::deterministic(T0 + 20_000));
    let garbage: &[u8] = b"garbage";
    let report = third
        .restore_candidates(&[garbage, &old, &new])
        .unwrap();
    t.note("candidates winner", (report.candidate, report.created_at, report.objects_restored));
    t.res("all bad", third.restore_candidates(&[garbage, garbage]));
    t.note("invariants", third.check_invariants());
    t.0
}

/// Metrics in both forms, with per-segment usage.
/// The timeline and the wall beside it: a wall set apart moves no lifetime,
/// only the skew; a snapshot restored under another skew shifts its
/// instants by the difference.
pub fn clock() -> Vec<String> {
    let mut t = Transcript::new();
    let a = master();
    a.mount_segment(1, &seg("mem0", 1 << 40, 1 << 20, Pool::Memory))
        .unwrap();
    put(&a, Key::new("pinned"), &pinned(3_600_000));
    t.note("wall, skew", (a.wall_time(), a.clock_skew_ms()));
    t.res("wall beyond MAX_INSTANT", a.set_wall_time(MAX_INSTANT));
    t.res("wall an hour back", a.set_wall_time(T0 - 600_000));
    t.note("now, wall, skew", (a.now(), a.wall_time(), a.clock_skew_ms()));
    t.res("deadline", a.soft_pin_deadline(Key::new("pinned")));
    t.note("cleanup", cleanup_view(a.run_cleanup()));
    a.advance_time(1_000).unwrap();
    t.note("after 1 s: wall, skew", (a.wall_time(), a.clock_skew_ms()));
    t.note("metrics skew", a.metrics().clock_skew_ms);
    let snap = a.snapshot().unwrap();
    let b = master_with(MasterConfig::deterministic(T0 + 1_000));
    let report = b.restore(&snap).unwrap();
    t.note("restore shift", report.clock_shift_ms);
    t.res("shifted deadline", b.soft_pin_deadline(Key::new("pinned")));
    t.0
}

pub fn metrics() -> Vec<String> {
    let mut t = Transcript::new();
    let m = master();
    m.mount_segment(1, &seg("mem \"0\"", 1 << 40, 1 << 20, Pool::Memory))
        .unwrap();
    m.mount_segment(2, &seg("ssd0", 2 << 40, 4 << 20, Pool::NofSsd))
        .unwrap();
    put(&m, Key::new("a"), &pinned(1_000));
    let two = WriteConfig {
        nof_ssd_replicas: 1,
        ..WriteConfig::default()
    };
    put(&m, Key::new("b"), &two);
    m.put_start(1, Key::new("c"), SIZE, &WriteConfig::default())
        .unwrap();
    m.run_cleanup_at(T0 + 1_000);
    m.run_maintenance_tick();
    let snap = metrics_view(m.metrics());
    assert_eq!(snap.segments.len(), 2);
    t.note("metrics", snap);
    let text: Vec<String> = m
        .metrics_prometheus()
        .lines()
        .filter(|l| !l.contains("duration") && !l.contains("hold"))
        .map(str::to_owned)
        .collect();
    t.note("prometheus", text);
    t.0
}

/// Batches: runs of tenants, a malformed key alone, shared refusals.
pub fn batches() -> Vec<String> {
    let mut t = Transcript::new();
    let m = master();
    m.mount_segment(1, &seg("mem0", 1 << 40, 1 << 20, Pool::Memory))
        .unwrap();
    let keys = [
        Key::new("a"),
        Key::new("b"),
        Key::scoped("t1", "a"),
        Key::new(""),
        Key::new("a"),
        Key::new("c"),
    ];
    let sizes = [SIZE, SIZE, SIZE, SIZE, SIZE, 0];
    t.batch(
        "mismatched sizes",
        m.batch_put_start(1, &keys, &sizes[..2], &WriteConfig::default()),
    );
    t.batch(
        "bad shared ttl",
        m.batch_put_start(1, &keys, &sizes, &pinned(u64::MAX)),
    );
    let started = t.batch("put_start", m.batch_put_start(1, &keys, &sizes, &pinned(2_000)));
    let tokens: Vec<u64> = started
        .iter()
        .map(|r| r.as_ref().map_or(0, |w| w.token))
        .collect();
    t.batch(
        "tokens mismatch",
        m.batch_put_end(1, &keys, ReplicaSelector::All, Some(&tokens[..1])),
    );
    t.batch(
        "put_end",
        m.batch_put_end(1, &keys, ReplicaSelector::All, Some(&tokens)),
    );
    t.batch("exist", m.batch_exist(&keys));
    t.batch("replicas", m.batch_get_replica_list(&keys));
    for k in &keys[..3] {
        t.res(&format!("deadline {k:?}"), m.soft_pin_deadline(*k));
    }
    let up = t.batch(
        "upsert_start",
        m.batch_upsert_start(1, &keys[..3], &[SIZE, 2 * SIZE, SIZE], &WriteConfig::default()),
    );
    let up_tokens: Vec<u64> = up.iter().map(|r| r.as_ref().map_or(0, |w| w.token)).collect();
    t.batch(
        "revoke",
        m.batch_put_revoke(1, &keys[..1], ReplicaSelector::All, Some(&up_tokens[..1])),
    );
    t.batch(
        "end without tokens",
        m.batch_put_end(1, &keys[1..3], ReplicaSelector::Memory, None),
    );
    m.advance_time(60_000).unwrap();
    t.batch("remove", m.batch_remove(&keys, false));
    t.note("keys", m.key_count());
    t.note("invariants", m.check_invariants());
    t.0
}

/// Upsert, copy, move, promotion, LOCAL_DISK, listing, removal, unmount,
/// stale writes.
pub fn lifecycle() -> Vec<String> {
    let mut t = Transcript::new();
    let m = master();
    for (i, name) in ["mem0", "mem1", "mem2"].into_iter().enumerate() {
        t.res(
            name,
            m.mount_segment(1, &seg(name, (i as u64 + 1) << 40, 1 << 20, Pool::Memory)),
        );
    }
    let on = |names: &[&str]| WriteConfig {
        preferred_segments: names.iter().map(|s| s.to_string()).collect(),
        ..WriteConfig::default()
    };
    let w = put(&m, Key::new("k"), &on(&["mem0"]));
    t.note("put replicas", w.replicas);
    t.res("bounded 0", m.get_replica_list_bounded(Key::new("k"), 0));
    t.res("bounded 1", m.get_replica_list_bounded(Key::new("k"), 1));
    let mut into = Vec::new();
    t.res("into", m.get_replica_list_into(Key::new("k"), &mut into));
    t.note("into list", into);
    t.res("copy", m.copy_start(Key::new("k"), &["mem1"]));
    t.res("copy busy", m.copy_start(Key::new("k"), &["mem2"]));
    t.res("copy end", m.copy_end(Key::new("k")));
    t.note("readable", m.readable_count(Key::new("k")));
    t.res("bounded 1 of 2", m.get_replica_list_bounded(Key::new("k"), 1));
    t.res("move", m.move_start(Key::new("k"), "mem1", "mem2"));
    t.res("move revoke", m.move_revoke(Key::new("k")));
    t.res("move", m.move_start(Key::new("k"), "mem1", "mem2"));
    t.res("move end", m.move_end(Key::new("k")));
    t.res("replicas", m.get_replica_list(Key::new("k")));
    // An in-place upsert returns the existing replicas (2 > 1 requested).
    t.res(
        "upsert bounded",
        m.upsert_start_bounded(1, Key::new("k"), SIZE, &WriteConfig::default(), 1),
    );
    let w = t
        .res("upsert", m.upsert_start(1, Key::new("k"), SIZE, &WriteConfig::default()))
        .unwrap();
    t.res(
        "upsert revoke",
        m.upsert_revoke(1, Key::new("k"), ReplicaSelector::All, Some(w.token)),
    );
    t.res("upsert resize", {
        let w = m
            .upsert_start(1, Key::new("k"), 2 * SIZE, &on(&["mem2"]))
            .unwrap();
        m.upsert_end(1, Key::new("k"), ReplicaSelector::Memory, Some(w.token))
            .map(|()| w.replicas)
    });

    t.res("disk", m.add_local_disk_replica(7, Key::new("d"), SIZE));
    t.res("disk again", m.add_local_disk_replica(7, Key::new("d"), SIZE));
    t.res("promote", m.promotion_start(Key::new("d"), &["mem1".to_string()]));
    t.res("promote end", m.promotion_end(Key::new("d"), true));
    t.res("disk replicas", m.get_replica_list(Key::new("d")));

    for i in 0..5 {
        put(&m, Key::new(&format!("list/{i}")), &on(&["mem0"]));
    }
    put(&m, Key::scoped("t2", "list/x"), &on(&["mem1"]));
    let mut after: Option<String> = None;
    loop {
        let page = m
            .list_keys(DEFAULT_TENANT, "list/", after.as_deref(), 2)
            .unwrap();
        t.note("page", &page);
        match page.next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    t.res("list t2", m.list_keys("t2", "", None, 0));
    m.advance_time(60_000).unwrap();
    t.res("regex t2", m.remove_by_regex(Some("t2"), "^list/", false));
    t.res("regex all", m.remove_by_regex(None, "^list/[0-2]$", false));
    t.note("keys", m.key_count());

    // Placement without preferred segments depends on the master's seed:
    // every write here names its segment.
    // A stale write: swept after the release timeout, its buffer released.
    m.put_start(1, Key::new("stale"), SIZE, &on(&["mem2"]))
        .unwrap();
    let release = m.config().put_start_release_timeout_ms;
    let now = m.now();
    t.note("sweep early", m.sweep_stale_writes_at(now + release));
    t.note("sweep", m.sweep_stale_writes_at(now + release + 1));
    t.note("release early", m.release_discarded_at(now + release - 1));
    t.note("release", m.release_discarded_at(now + release));
    t.note("release max", m.release_discarded_at(u64::MAX));
    t.res("stale gone", m.exist(Key::new("stale")));

    t.res("unmount mem2", m.unmount_segment(1, "mem2"));
    t.res("unmount client 1", m.unmount_client(1));
    t.note("keys", m.key_count());
    t.note("remove all", m.remove_all(true));
    t.note("keys", m.key_count());
    t.note("invariants", m.check_invariants());
    t.0
}

/// Group retention: retain (per-group results, the shared TTL checks, the
/// admission limit), a read that does not extend it, a member that joins
/// late, eviction skipping the group, release, expiry by cleanup, and a
/// snapshot round trip of a member-less retained group.
pub fn retention() -> Vec<String> {
    let mut t = Transcript::new();
    let m = master_with(MasterConfig {
        max_retained_groups: 3,
        ..MasterConfig::deterministic(T0)
    });
    m.mount_segment(1, &seg("mem0", 1 << 40, 16 * SIZE, Pool::Memory))
        .unwrap();
    let grouped = |g: &str| WriteConfig::default().with_group(g);
    put(&m, Key::new("prefix0"), &grouped("prefix"));
    // A bad shared argument fails every entry (kinds only: messages differ).
    let each = |rs: Vec<Result<Instant>>| rs.iter().map(show).collect::<Vec<_>>();
    t.res(
        "ttl 0",
        m.retain_groups(DEFAULT_TENANT, &["prefix", "y"], 0).map(each),
    );
    t.res(
        "ttl above max",
        m.retain_groups(DEFAULT_TENANT, &["prefix"], 86_400_001)
            .map(each),
    );
    t.res("empty tenant", m.retain_groups("", &["prefix", "", "y"], 1).map(each));
    t.res(
        "release empty tenant",
        m.release_groups("", &["prefix", ""])
            .map(|rs| rs.iter().map(show).collect::<Vec<_>>()),
    );
    t.note("count after refusals", m.retained_group_count());
    t.res(
        "retain",
        m.retain_groups(DEFAULT_TENANT, &["prefix", "", "bare", "x"], 60_000)
            .map(|rs| rs.iter().map(show).collect::<Vec<_>>()),
    );
    t.res(
        "full",
        m.retain_groups(DEFAULT_TENANT, &["y", "x"], 90_000)
            .map(|rs| rs.iter().map(show).collect::<Vec<_>>()),
    );
    m.advance_time(1_000).unwrap();
    t.res(
        "get",
        m.get_replica_list(Key::new("prefix0")).map(|r| r.len()),
    );
    t.res(
        "deadline after a read",
        m.group_retention_deadline(DEFAULT_TENANT, "prefix"),
    );
    put(&m, Key::new("prefix1"), &grouped("prefix"));
    put(&m, Key::new("plain"), &WriteConfig::default());
    m.advance_time(20_000).unwrap();
    t.res("evict", m.run_eviction(1.0, 0.0));
    t.note("left", m.list_keys(DEFAULT_TENANT, "", None, 0).unwrap());
    t.res(
        "release",
        m.release_groups(DEFAULT_TENANT, &["x", "nope", ""])
            .map(|rs| rs.iter().map(show).collect::<Vec<_>>()),
    );
    let bytes = m.snapshot().unwrap();
    t.note("snapshot version", &bytes[8..12]);
    let back = master_with(MasterConfig::deterministic(T0));
    t.res("restore", back.restore(&bytes).map(|r| r.objects_restored));
    t.res(
        "restored bare",
        back.group_retention_deadline(DEFAULT_TENANT, "bare"),
    );
    m.set_time(T0 + 60_000).unwrap();
    t.note("cleanup", cleanup_view(m.run_cleanup()));
    t.note("count after expiry", m.retained_group_count());
    t.res(
        "deadline after expiry",
        m.group_retention_deadline(DEFAULT_TENANT, "prefix"),
    );
    t.note("metrics", metrics_view(m.metrics()));
    t.note("invariants", m.check_invariants());
    t.note("restored invariants", back.check_invariants());
    t.0
}

/// The change journal: a primary's records applied to a standby (a repeat
/// skipped, a gap and client calls refused), the standby promoted, and the
/// write that was in flight ending on it with its pin; a full journal
/// drops its oldest records and reading them is an overrun.
pub fn journal() -> Vec<String> {
    let mut t = Transcript::new();
    let p = master_with(MasterConfig {
        journal_capacity_bytes: 1 << 20,
        ..MasterConfig::deterministic(T0)
    });
    p.mount_segment(1, &seg("mem0", 1 << 40, 1 << 20, Pool::Memory))
        .unwrap();
    put(&p, Key::new("done"), &pinned(5_000));
    let in_flight = p.put_start(1, Key::new("flying"), SIZE, &pinned(5_000)).unwrap();
    let stats = p.journal_stats();
    t.note("journal stats", stats);
    let bytes = p.journal_read_to_vec(1).unwrap();
    let mut small = [0u8; 8];
    t.res("read into 8 bytes", p.journal_read(1, &mut small));
    t.res("read past the end", p.journal_read(stats.last_seq + 2, &mut small));

    let s = master_with(MasterConfig {
        standby: true,
        journal_capacity_bytes: 1 << 20,
        ..MasterConfig::deterministic(T0)
    });
    t.note("standby", (s.is_standby(), s.applied_seq()));
    t.res("exist on the standby", s.exist(Key::new("done")));
    t.note("journal bytes", bytes.len());
    t.res("apply", s.apply_journal(&bytes));
    t.res("apply again", s.apply_journal(&bytes));
    // The calls with no status answer on a standby as if nothing were
    // stored (docs/CONTRACT.md section 12.3), though "done" is applied.
    t.note("readable on the standby", s.readable_count(Key::new("done")));
    t.note("remove all on the standby", s.remove_all(true));
    t.note("evict on the standby", s.evict_if_needed(true));
    t.note("cleanup on the standby", s.run_cleanup());
    t.note("sweep on the standby", s.sweep_stale_writes_at(u64::MAX));
    t.note("release on the standby", s.release_discarded_at(u64::MAX));
    s.run_maintenance_tick();
    t.res("apply garbage", s.apply_journal(&[1, 2, 3]));
    t.res("apply on the primary", p.apply_journal(&bytes));
    t.res("promote", s.promote());
    t.res("promote again", s.promote());
    t.note("standby", (s.is_standby(), s.applied_seq()));
    t.res("deadline", s.soft_pin_deadline(Key::new("done")));
    s.advance_time(2_000).unwrap();
    t.res(
        "end in flight",
        s.put_end(1, Key::new("flying"), ReplicaSelector::All, Some(in_flight.token)),
    );
    t.res("deadline in flight", s.soft_pin_deadline(Key::new("flying")));
    t.res("promoted journal from 1", s.journal_read_to_vec(1).map(|b| b.len()));
    t.note("promoted journal stats", s.journal_stats());

    let small_journal = master_with(MasterConfig {
        journal_capacity_bytes: 2048,
        ..MasterConfig::deterministic(T0)
    });
    small_journal
        .mount_segment(1, &seg("mem0", 1 << 40, 1 << 20, Pool::Memory))
        .unwrap();
    for i in 0..100 {
        put(&small_journal, Key::new(&format!("k{i:03}")), &WriteConfig::default());
    }
    let st = small_journal.journal_stats();
    t.note("full journal", st);
    t.res("read a dropped sequence", small_journal.journal_read_to_vec(1));
    t.res("release all", small_journal.journal_release(st.last_seq));
    t.res("release past the end", small_journal.journal_release(st.last_seq + 1));
    t.0
}

/// A write configuration preferring `names`, in order.
fn preferring(names: &[&str]) -> WriteConfig {
    WriteConfig {
        preferred_segments: names.iter().map(|n| n.to_string()).collect(),
        ..WriteConfig::default()
    }
}

/// Segment names with a NUL byte, which no mounted segment can have (mount
/// refuses them): a preferred one is skipped like any other unknown name
/// (same placements), a copy or move target is not mounted, at the point
/// of the checks where the core looks it up, and a promotion's preferred
/// one is skipped. Every placement here is decided by the preferred names
/// or by there being one segment with room (the segment choice past the
/// preferred ones is pseudo-random, seeded per master).
pub fn nul_segment_names() -> Vec<String> {
    let mut t = Transcript::new();
    let nul = "a\0b";
    // One memory segment: a list of NUL names only still places there.
    let one = master();
    one.mount_segment(1, &seg("solo", 1 << 40, 1 << 20, Pool::Memory))
        .unwrap();
    t.res(
        "validate preferring NUL",
        one.validate_write_request(Key::new("s0"), SIZE, &preferring(&[nul])),
    );
    t.res("put preferring NUL", one.put_start(1, Key::new("s0"), SIZE, &preferring(&[nul])));
    t.res(
        "upsert preferring NULs",
        one.upsert_start(1, Key::new("s1"), SIZE, &preferring(&[nul, "x\0"])),
    );
    t.batch(
        "batch put preferring NUL",
        one.batch_put_start(1, &[Key::new("s2"), Key::new("s3")], &[SIZE, SIZE], &preferring(&[nul])),
    );
    t.batch(
        "batch upsert preferring NUL",
        one.batch_upsert_start(1, &[Key::new("s4")], &[SIZE], &preferring(&[nul])),
    );
    t.res(
        "put bad ttl preferring NUL",
        one.put_start(1, Key::new("s5"), SIZE, &WriteConfig {
            soft_pin: SoftPinRequest::enable_for(u64::MAX),
            ..preferring(&[nul])
        }),
    );
    t.res(
        "put two replicas preferring NUL",
        one.put_start(1, Key::new("s6"), SIZE, &WriteConfig {
            memory_replicas: 2,
            ..preferring(&[nul])
        }),
    );
    t.res("disk replica", one.add_local_disk_replica(3, Key::new("sd"), SIZE));
    t.res(
        "promote preferring NUL",
        one.promotion_start(Key::new("sd"), &[nul.to_string()]),
    );
    t.res("promotion end", one.promotion_end(Key::new("sd"), true));
    for key in ["s0", "s1", "s2", "s3", "s4"] {
        t.res(
            &format!("end {key}"),
            one.put_end(1, Key::new(key), ReplicaSelector::All, None),
        );
    }
    for key in ["s0", "s1", "s2", "s3", "s4", "sd"] {
        t.res(&format!("replicas {key}"), one.get_replica_list(Key::new(key)));
    }
    t.note("keys", one.key_count());
    t.note("invariants", one.check_invariants());

    // Three memory segments, the NUL names among real ones.
    let m = master();
    t.res(
        "mount a NUL name",
        m.mount_segment(1, &seg(nul, 1 << 30, 1 << 20, Pool::Memory)),
    );
    for (i, name) in ["mem0", "mem1", "mem2"].into_iter().enumerate() {
        m.mount_segment(1, &seg(name, (i as u64 + 1) << 40, 1 << 20, Pool::Memory))
            .unwrap();
    }
    t.res(
        "put preferring NUL, mem2",
        m.put_start(1, Key::new("p1"), SIZE, &preferring(&[nul, "mem2"])),
    );
    let two = WriteConfig {
        memory_replicas: 2,
        ..preferring(&["mem1", nul, "x\0", "mem1", "mem0"])
    };
    t.res("put 2 preferring mem1, NULs, mem1, mem0", m.put_start(1, Key::new("p2"), SIZE, &two));
    t.res(
        "upsert preferring NUL, mem1",
        m.upsert_start(1, Key::new("p3"), SIZE, &preferring(&[nul, "mem1"])),
    );
    let bkeys = [Key::new("b0"), Key::new("b1"), Key::new("b2")];
    t.batch(
        "batch put preferring NUL, mem0",
        m.batch_put_start(1, &bkeys[..2], &[SIZE, SIZE], &preferring(&["x\0", "mem0"])),
    );
    t.batch(
        "batch upsert preferring NUL, mem2",
        m.batch_upsert_start(1, &bkeys[2..], &[SIZE], &preferring(&[nul, "mem2"])),
    );
    for key in ["p1", "p2", "p3", "b0", "b1", "b2"] {
        t.res(
            &format!("end {key}"),
            m.put_end(1, Key::new(key), ReplicaSelector::All, None),
        );
    }
    let in_flight = m.put_start(1, Key::new("w"), SIZE, &preferring(&["mem0"])).unwrap();

    // Copy: the core checks the key, the task, the source, then each
    // target in order.
    let p1 = Key::new("p1"); // on mem2
    t.res("copy missing key to NUL", m.copy_start(Key::new("nope"), &[nul]));
    t.res("copy empty key to NUL", m.copy_start(Key::new(""), &[nul]));
    t.res("copy unwritten key to NUL", m.copy_start(Key::new("w"), &[nul]));
    t.res("copy to NUL", m.copy_start(p1, &[nul]));
    t.res("copy to mem0, NUL", m.copy_start(p1, &["mem0", nul]));
    t.res("copy to mem2 (its own), NUL", m.copy_start(p1, &["mem2", nul]));
    t.res("copy to NUL, mem2 (its own)", m.copy_start(p1, &[nul, "mem2"]));
    t.res("copy to mem0, mem0, NUL", m.copy_start(p1, &["mem0", "mem0", nul]));
    t.res("copy to unknown, NUL", m.copy_start(p1, &["nope", nul]));
    t.res("copy to empty, NUL", m.copy_start(p1, &["", nul]));
    t.res("copy to NUL, empty", m.copy_start(p1, &[nul, ""]));
    t.res("replicas after refused copies", m.get_replica_list(p1));
    t.res("copy to mem0", m.copy_start(p1, &["mem0"]));
    t.res("copy during a copy to NUL", m.copy_start(p1, &[nul]));
    t.res("move during a copy from NUL", m.move_start(p1, nul, "mem1"));
    t.res("copy revoke", m.copy_revoke(p1));

    // Move: the source segment, then the target.
    t.res("move missing key from NUL", m.move_start(Key::new("nope"), nul, nul));
    t.res("move from NUL", m.move_start(p1, nul, "mem1"));
    t.res("move from mem2 to NUL", m.move_start(p1, "mem2", nul));
    t.res("move from mem0 (none there) to NUL", m.move_start(p1, "mem0", nul));
    t.res("move from mem2 to mem2", m.move_start(p1, "mem2", "mem2"));

    // Promotion: the object's replicas are checked before any placement.
    let nul_pref = [nul.to_string()];
    t.res("promote missing key preferring NUL", m.promotion_start(Key::new("nope"), &nul_pref));
    t.res("promote without disk preferring NUL", m.promotion_start(p1, &nul_pref));
    t.res("disk replica", m.add_local_disk_replica(3, Key::new("d"), SIZE));
    t.res(
        "promote preferring NUL, mem1",
        m.promotion_start(Key::new("d"), &[nul.to_string(), "mem1".to_string()]),
    );
    t.res("promote during a promotion", m.promotion_start(Key::new("d"), &nul_pref));
    t.res("promotion end", m.promotion_end(Key::new("d"), true));
    t.res("promote with memory preferring NUL", m.promotion_start(Key::new("d"), &nul_pref));

    t.res(
        "end in flight",
        m.put_end(1, Key::new("w"), ReplicaSelector::All, Some(in_flight.token)),
    );
    for key in ["p1", "p2", "p3", "b0", "b1", "b2", "d", "w"] {
        t.res(&format!("replicas {key}"), m.get_replica_list(Key::new(key)));
    }
    t.note("keys", m.key_count());
    t.note("metrics", metrics_view(m.metrics()));
    t.note("invariants", m.check_invariants());
    t.0
}

/// The messages of refusals that name a segment with a NUL byte, and of a
/// standby's validation: compared by tests/mirror.rs (the library's name
/// the C function first).
pub fn nul_segment_messages() -> Vec<String> {
    let m = master();
    for (i, name) in ["mem0", "mem1"].into_iter().enumerate() {
        m.mount_segment(1, &seg(name, (i as u64 + 1) << 40, 1 << 20, Pool::Memory))
            .unwrap();
    }
    put(&m, Key::new("k"), &preferring(&["mem0"]));
    let k = Key::new("k");
    let msg = |r: Result<Vec<ReplicaDescriptor>>| r.unwrap_err().message().to_string();
    let s = master_with(MasterConfig {
        standby: true,
        ..MasterConfig::deterministic(T0)
    });
    vec![
        msg(m.copy_start(k, &["a\0b"])),
        msg(m.copy_start(k, &["mem1", "x\0y", "a\0b"])),
        msg(m.copy_start(k, &["nope", "a\0b"])),
        msg(m.copy_start(k, &["", "a\0b"])),
        m.move_start(k, "mem0", "a\0b").unwrap_err().message().to_string(),
        m.move_start(k, "a\0b", "mem1").unwrap_err().message().to_string(),
        s.validate_write_request(k, SIZE, &WriteConfig::default())
            .unwrap_err()
            .message()
            .to_string(),
    ]
}

/// A standby validates no write request, well-formed or not
/// (docs/CONTRACT.md section 12.3), and refuses the calls with segment
/// names with a NUL byte as any other; once promoted it validates.
pub fn standby_validation() -> Vec<String> {
    let mut t = Transcript::new();
    let s = master_with(MasterConfig {
        standby: true,
        ..MasterConfig::deterministic(T0)
    });
    let k = Key::new("k");
    t.res("validate", s.validate_write_request(k, SIZE, &WriteConfig::default()));
    t.res("validate size 0", s.validate_write_request(k, 0, &WriteConfig::default()));
    t.res("validate bad ttl", s.validate_write_request(k, SIZE, &pinned(u64::MAX)));
    t.res(
        "validate NUL group",
        s.validate_write_request(k, SIZE, &WriteConfig::default().with_group("a\0b")),
    );
    t.res("validate empty key", s.validate_write_request(Key::new(""), SIZE, &WriteConfig::default()));
    t.res(
        "validate preferring NUL",
        s.validate_write_request(k, SIZE, &preferring(&["a\0b"])),
    );
    t.res("put preferring NUL", s.put_start(1, k, SIZE, &preferring(&["a\0b"])));
    t.res("copy to NUL", s.copy_start(k, &["a\0b"]));
    t.res("move to NUL", s.move_start(k, "mem0", "a\0b"));
    t.res("promote preferring NUL", s.promotion_start(k, &["a\0b".to_string()]));
    t.res("promote the standby", s.promote().map(|_| ()));
    t.res("validate on the primary", s.validate_write_request(k, SIZE, &WriteConfig::default()));
    t.res("validate size 0 on the primary", s.validate_write_request(k, 0, &WriteConfig::default()));
    t.0
}

/// Calls with malformed arguments on a standby: the core refuses each for
/// the role first (`UnavailableInCurrentStatus`); through the C ABI an
/// argument error comes first (rust-sys/README.md, "Where it differs").
/// tests/mirror.rs checks exactly which lines differ.
pub fn standby_malformed() -> Vec<String> {
    let mut t = Transcript::new();
    let s = master_with(MasterConfig {
        standby: true,
        ..MasterConfig::deterministic(T0)
    });
    let k = Key::new("k");
    let d = WriteConfig::default();
    // Argument errors.
    t.res("exist empty key", s.exist(Key::new("")));
    t.res("exist empty tenant", s.exist(Key::scoped("", "k")));
    t.res("exist NUL tenant", s.exist(Key::scoped("a\0b", "k")));
    t.res("put empty key", s.put_start(1, Key::new(""), SIZE, &d));
    t.res("put NUL group", s.put_start(1, k, SIZE, &d.clone().with_group("a\0b")));
    let huge = WriteConfig {
        memory_replicas: 70_000,
        ..WriteConfig::default()
    };
    t.res("put 70000 replicas", s.put_start(1, k, SIZE, &huge));
    t.res("copy empty key", s.copy_start(Key::new(""), &["mem0"]));
    t.res("list empty tenant", s.list_keys("", "", None, 0));
    t.res("regex empty tenant", s.remove_by_regex(Some(""), "k", false));
    // The first failure: the call's, else its first entry's (the safe layer
    // fails each entry for a bad tenant, the core the call for the role).
    fn first<T>(r: Result<Vec<Result<T>>>) -> Result<()> {
        r.and_then(|rs| rs.into_iter().try_for_each(|e| e.map(|_| ())))
    }
    t.res("retain empty tenant", first(s.retain_groups("", &["g"], 1_000)));
    t.res("release NUL tenant", first(s.release_groups("a\0b", &["g"])));
    t.res("retention deadline empty tenant", s.group_retention_deadline("", "g"));
    t.res("retention deadline empty group", s.group_retention_deadline("t", ""));
    t.res("retain empty group", s.retain_groups("t", &[""], 1_000).map(|_| ()));
    t.batch("batch exist empty key", s.batch_exist(&[Key::new(""), k]));
    t.batch("batch put sizes mismatch", s.batch_put_start(1, &[k, k], &[SIZE], &d));
    t.batch("batch put bad ttl", s.batch_put_start(1, &[k], &[SIZE], &pinned(u64::MAX)));
    let many = WriteConfig {
        memory_replicas: 2_000,
        ..WriteConfig::default()
    };
    t.batch("batch put 2000 replicas", s.batch_put_start(1, &[k], &[SIZE], &many));
    t.batch("batch put NUL group", s.batch_put_start(1, &[k], &[SIZE], &d.clone().with_group("a\0b")));
    t.batch(
        "batch end tokens mismatch",
        s.batch_put_end(1, &[k, k], ReplicaSelector::All, Some(&[1])),
    );
    // Not argument errors: refused for the role through both.
    t.res("exist", s.exist(k));
    t.res("put size 0", s.put_start(1, k, 0, &d));
    t.res("put bad ttl", s.put_start(1, k, SIZE, &pinned(u64::MAX)));
    t.res("put 2000 replicas", s.put_start(1, k, SIZE, &many));
    t.res("validate empty key", s.validate_write_request(Key::new(""), SIZE, &d));
    t.batch("batch exist", s.batch_exist(&[k, Key::scoped("t", "k")]));
    t.batch("batch put size 0", s.batch_put_start(1, &[k], &[0], &d));
    t.0
}
