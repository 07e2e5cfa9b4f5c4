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
    t.res("ttl 0", m.retain_groups(DEFAULT_TENANT, &["prefix"], 0));
    t.res(
        "ttl above max",
        m.retain_groups(DEFAULT_TENANT, &["prefix"], 86_400_001),
    );
    t.res("empty tenant", m.retain_groups("", &["prefix"], 1));
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
