//! Every instant the master computes saturates at MAX_INSTANT (docs/CONTRACT.md
//! §1), so every snapshot it writes is one it can restore (§6): random
//! operations at random clock values (the last hours before MAX_INSTANT
//! included) with TTLs and timeouts up to u64::MAX, then snapshot → restore
//! must succeed and every stored instant must be ≤ MAX_INSTANT.
mod common;
use common::{spec, C1, C2};
use mooncake_meta_core::snapshot::codec;
use mooncake_meta_core::snapshot::image::SnapshotImage;
use mooncake_meta_core::*;
use proptest::prelude::*;

const HOUR_MS: u64 = 3_600_000;
const KEYS: [&str; 4] = ["a", "b", "g1", "g2"];

/// Keys "g1" and "g2" share group "g" (and so a group lease).
fn group_of(key: &str) -> Option<String> {
    key.starts_with('g').then(|| "g".to_string())
}

fn write(key: &str, mem: u32, nof: u32, pin: SoftPinRequest) -> WriteConfig {
    WriteConfig {
        memory_replicas: mem,
        nof_ssd_replicas: nof,
        soft_pin: pin,
        group: group_of(key),
        ..WriteConfig::default()
    }
}

/// A master reading a manual clock at `start` whose every duration is `d`
/// (release > discard kept), with two memory and one second-pool segment.
fn master_at(start: Instant, d: u64) -> Master {
    let cfg = MasterConfig {
        default_kv_lease_ttl_ms: d,
        default_kv_soft_pin_ttl_ms: d,
        max_kv_soft_pin_ttl_ms: d,
        put_start_discard_timeout_ms: d - 1,
        put_start_release_timeout_ms: d,
        shard_count: 4,
        ..MasterConfig::deterministic(start)
    };
    mounted(cfg)
}

fn mounted(cfg: MasterConfig) -> Master {
    let m = Master::new(cfg).unwrap();
    m.mount_segment(C1, &spec("m0", 0, 1 << 20, Pool::Memory))
        .unwrap();
    m.mount_segment(C1, &spec("m1", 1, 1 << 20, Pool::Memory))
        .unwrap();
    m.mount_segment(C1, &spec("n0", 2, 1 << 20, Pool::NofSsd))
        .unwrap();
    m
}

/// Every instant a snapshot holds.
fn instants(img: &SnapshotImage) -> Vec<(String, u64)> {
    let mut out = vec![("created_at".to_string(), img.created_at)];
    for g in &img.groups {
        out.push((format!("group {}/{} lease", g.tenant, g.name), g.lease));
    }
    for o in &img.objects {
        let who = format!("object {}/{}", o.tenant, o.key);
        out.push((format!("{who} put_start"), o.put_start));
        out.push((format!("{who} lease"), o.lease));
        if let Some(d) = o.soft_pin_deadline {
            out.push((format!("{who} soft_pin_deadline"), d));
        }
    }
    out
}

/// The rule under test: the master's snapshot holds no instant past
/// MAX_INSTANT and restores into a fresh master. (Restoring into the master
/// itself is an operation of its own: it drops writes in flight.)
fn assert_restorable(m: &Master) -> Result<(), TestCaseError> {
    let bytes = m.snapshot().unwrap();
    let img = codec::decode(&bytes).map_err(|e| TestCaseError::fail(format!("decode: {e}")))?;
    for (what, t) in instants(&img) {
        prop_assert!(t <= MAX_INSTANT, "{what} = {t} is beyond MAX_INSTANT");
    }
    let fresh = mounted(m.config().clone());
    fresh
        .restore(&bytes)
        .map_err(|e| TestCaseError::fail(format!("restore into a fresh master: {e}")))?;
    fresh
        .check_invariants()
        .map_err(|e| TestCaseError::fail(format!("after restore: {e}")))?;
    Ok(())
}

// ---------------------------------------------------------------- unit tests

/// The last millisecond the manual clock can show.
const LAST: Instant = MAX_INSTANT - 1;

fn put_complete(m: &Master, key: &str, pin: SoftPinRequest) {
    let w = m
        .put_start(C1, Key::new(key), 64, &write(key, 1, 0, pin))
        .unwrap();
    m.put_end(C1, Key::new(key), ReplicaSelector::All, Some(w.token))
        .unwrap();
}

fn stored(m: &Master, key: &str) -> mooncake_meta_core::snapshot::image::ObjectRecord {
    m.capture()
        .objects
        .into_iter()
        .find(|o| o.key == key)
        .unwrap()
}

#[test]
fn get_near_max_instant_keeps_snapshot_restorable() {
    let m = master_at(LAST - 5, 10_000);
    put_complete(&m, "a", SoftPinRequest::PRESERVE);
    m.get_replica_list(Key::new("a")).unwrap();
    assert_eq!(stored(&m, "a").lease, MAX_INSTANT);
    assert_restorable(&m).unwrap();
}

#[test]
fn exist_near_max_instant_keeps_snapshot_restorable() {
    let m = master_at(LAST, 10_000);
    put_complete(&m, "a", SoftPinRequest::PRESERVE);
    assert!(m.exist(Key::new("a")).unwrap());
    assert_eq!(stored(&m, "a").lease, MAX_INSTANT);
    assert_restorable(&m).unwrap();
}

#[test]
fn bounded_get_near_max_instant_keeps_snapshot_restorable() {
    let m = master_at(LAST, 10_000);
    put_complete(&m, "a", SoftPinRequest::PRESERVE);
    assert!(matches!(
        m.get_replica_list_bounded(Key::new("a"), 4).unwrap(),
        Bounded::Fits(_)
    ));
    assert_eq!(stored(&m, "a").lease, MAX_INSTANT);
    assert_restorable(&m).unwrap();
}

#[test]
fn grouped_get_near_max_instant_keeps_group_lease_restorable() {
    let m = master_at(LAST, 10_000);
    put_complete(&m, "g1", SoftPinRequest::PRESERVE);
    put_complete(&m, "g2", SoftPinRequest::PRESERVE);
    m.get_replica_list(Key::new("g1")).unwrap();
    let img = m.capture();
    assert_eq!(img.groups.len(), 1);
    assert_eq!(img.groups[0].lease, MAX_INSTANT);
    assert_restorable(&m).unwrap();
}

#[test]
fn maximum_lease_ttl_saturates_at_max_instant() {
    // MAX_DURATION_MS from any instant after 0 passes MAX_INSTANT.
    let m = master_at(common::T0, MAX_DURATION_MS);
    put_complete(&m, "a", SoftPinRequest::PRESERVE);
    put_complete(&m, "g1", SoftPinRequest::PRESERVE);
    m.get_replica_list(Key::new("a")).unwrap();
    m.exist(Key::new("g1")).unwrap();
    assert_eq!(stored(&m, "a").lease, MAX_INSTANT);
    assert_eq!(m.capture().groups[0].lease, MAX_INSTANT);
    assert_restorable(&m).unwrap();
}

#[test]
fn maximum_soft_pin_ttl_near_max_instant_saturates_and_never_expires() {
    let m = master_at(LAST, MAX_DURATION_MS);
    put_complete(&m, "a", SoftPinRequest::enable_for(MAX_DURATION_MS));
    assert_eq!(
        m.soft_pin_deadline(Key::new("a")).unwrap(),
        Some(MAX_INSTANT)
    );
    assert_eq!(m.run_cleanup_at(LAST).expired, 0);
    assert_restorable(&m).unwrap();
}

/// A master whose release timeout (and soft-pin maximum) is the largest
/// accepted, near the clock's end, where a stale write of "a" (by C1) was
/// just replaced by C2's: the replaced buffer's release instant saturated.
fn stale_write_replaced_at_the_maximum_release_timeout() -> Master {
    let discard = 1_000;
    let cfg = MasterConfig {
        put_start_discard_timeout_ms: discard,
        put_start_release_timeout_ms: MAX_DURATION_MS,
        max_kv_soft_pin_ttl_ms: MAX_DURATION_MS,
        ..MasterConfig::deterministic(LAST - 2 * discard)
    };
    let m = mounted(cfg);
    let key = Key::new("a");
    let wc = write("a", 1, 0, SoftPinRequest::PRESERVE);
    m.put_start(C1, key, 64, &wc).unwrap();
    m.advance_time(discard + 1).unwrap();
    m.put_start(C2, key, 64, &wc).unwrap();
    m
}

#[test]
fn stale_write_replacement_at_the_maximum_release_timeout_keeps_the_old_buffer() {
    // The replaced write's buffer is released at now + release timeout,
    // saturated: never at once, so its stale writer never writes into memory
    // handed to someone else.
    let m = stale_write_replaced_at_the_maximum_release_timeout();
    let after = m.metrics();
    assert_eq!(after.discarded_staging_bytes, 64);
    assert_eq!(after.memory_allocated_bytes, 128);
    assert_eq!(m.release_discarded_at(LAST), 0);
    assert_eq!(m.sweep_stale_writes_at(LAST), 0);
    assert_eq!(m.metrics().memory_allocated_bytes, 128);
    m.check_invariants().unwrap();
    assert_restorable(&m).unwrap();
}

#[test]
fn maintenance_called_at_max_instant_or_beyond_finds_saturated_instants_due() {
    // §1: the clock stops short of MAX_INSTANT, so a saturated instant never
    // comes due on its own. The maintenance calls that take an explicit
    // instant compare it with the saturated instants as stored: called at
    // MAX_INSTANT (a release, a cleanup) or beyond it (a sweep, strict `<`),
    // they find them due. (Found by the model test, whose reference did not
    // saturate these two instants.)
    let m = stale_write_replaced_at_the_maximum_release_timeout();
    put_complete(&m, "b", SoftPinRequest::enable_for(MAX_DURATION_MS));
    assert_eq!(
        m.soft_pin_deadline(Key::new("b")).unwrap(),
        Some(MAX_INSTANT)
    );
    assert_eq!(m.release_discarded_at(MAX_INSTANT - 1), 0);
    assert_eq!(m.release_discarded_at(MAX_INSTANT), 1);
    assert_eq!(m.metrics().discarded_staging_bytes, 0);
    // C2's write, started at LAST - 999: its release instant saturates.
    assert_eq!(m.sweep_stale_writes_at(MAX_INSTANT), 0);
    assert_eq!(m.sweep_stale_writes_at(MAX_INSTANT + 1), 1);
    assert_eq!(m.run_cleanup_at(MAX_INSTANT - 1).expired, 0);
    assert_eq!(m.run_cleanup_at(MAX_INSTANT).expired, 1);
    m.check_invariants().unwrap();
    assert_restorable(&m).unwrap();
}

#[test]
fn release_timeout_beyond_the_maximum_is_rejected() {
    // A timeout so large that `now + timeout` would wrap a u64 is refused
    // up front, naming the field.
    let cfg = MasterConfig {
        put_start_release_timeout_ms: u64::MAX - 10,
        ..MasterConfig::deterministic(common::T0)
    };
    let e = Master::new(cfg).err().expect("accepted a wrapping timeout");
    assert_eq!(e.kind(), ErrorKind::InvalidParams);
    assert!(e.message().contains("put_start_release_timeout"), "{e}");
}

#[test]
fn lease_ttl_beyond_the_maximum_is_rejected() {
    let cfg = MasterConfig {
        default_kv_lease_ttl_ms: u64::MAX,
        ..MasterConfig::deterministic(common::T0)
    };
    let e = Master::new(cfg)
        .err()
        .expect("accepted an unbounded lease TTL");
    assert_eq!(e.kind(), ErrorKind::InvalidParams);
    assert!(e.message().contains("default_kv_lease_ttl"), "{e}");
}

// ------------------------------------------------------------ property test

#[derive(Debug, Clone)]
enum Op {
    /// PutStart, then PutEnd(ALL) at once when `end`.
    Put {
        key: usize,
        mem: u32,
        nof: u32,
        ttl: Option<u64>,
        end: bool,
    },
    Upsert {
        key: usize,
        size: u64,
        ttl: Option<u64>,
    },
    End {
        key: usize,
    },
    Revoke {
        key: usize,
    },
    Get {
        key: usize,
    },
    Exist {
        key: usize,
    },
    Remove {
        key: usize,
        force: bool,
    },
    Copy {
        key: usize,
    },
    Move {
        key: usize,
    },
    FinishTask {
        key: usize,
        end: bool,
    },
    AddLocalDisk {
        key: usize,
    },
    Promote {
        key: usize,
    },
    Advance {
        by: u64,
    },
    Maintenance,
    Evict,
    Restore,
}

/// Durations from tiny to u64::MAX, weighted towards the edges.
fn duration() -> impl Strategy<Value = u64> {
    prop_oneof![
        0..100_000u64,
        (0..HOUR_MS).prop_map(|x| MAX_DURATION_MS - x),
        Just(MAX_DURATION_MS),
        (0..HOUR_MS).prop_map(|x| u64::MAX - x),
        any::<u64>(),
    ]
}

/// Clock starts: ordinary instants and the last hours before MAX_INSTANT.
fn start() -> impl Strategy<Value = Instant> {
    prop_oneof![
        0..1_000_000_000u64,
        (1..4 * HOUR_MS).prop_map(|x| MAX_INSTANT - x),
        (1..1_000u64).prop_map(|x| MAX_INSTANT - x),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0..KEYS.len();
    let ttl = || prop::option::of(duration());
    prop_oneof![
        4 => (key.clone(), 0..3u32, 0..2u32, ttl(), any::<bool>())
            .prop_map(|(key, mem, nof, ttl, end)| Op::Put { key, mem, nof, ttl, end }),
        2 => (key.clone(), prop_oneof![Just(64u64), Just(128u64)], ttl())
            .prop_map(|(key, size, ttl)| Op::Upsert { key, size, ttl }),
        4 => key.clone().prop_map(|key| Op::End { key }),
        1 => key.clone().prop_map(|key| Op::Revoke { key }),
        3 => key.clone().prop_map(|key| Op::Get { key }),
        2 => key.clone().prop_map(|key| Op::Exist { key }),
        1 => (key.clone(), any::<bool>()).prop_map(|(key, force)| Op::Remove { key, force }),
        1 => key.clone().prop_map(|key| Op::Copy { key }),
        1 => key.clone().prop_map(|key| Op::Move { key }),
        1 => (key.clone(), any::<bool>()).prop_map(|(key, end)| Op::FinishTask { key, end }),
        1 => key.clone().prop_map(|key| Op::AddLocalDisk { key }),
        1 => key.prop_map(|key| Op::Promote { key }),
        2 => duration().prop_map(|by| Op::Advance { by }),
        1 => Just(Op::Maintenance),
        1 => Just(Op::Evict),
        1 => Just(Op::Restore),
    ]
}

/// A configuration from raw durations: a value above MAX_DURATION_MS must be
/// refused (INVALID_PARAMS naming it) and is then clamped to the maximum.
fn config(start: Instant, raw: [u64; 5]) -> Result<MasterConfig, TestCaseError> {
    let [lease, default_ttl, max_ttl, discard, release] = raw;
    let mut cfg = MasterConfig {
        default_kv_lease_ttl_ms: lease,
        default_kv_soft_pin_ttl_ms: default_ttl.min(max_ttl),
        max_kv_soft_pin_ttl_ms: max_ttl,
        put_start_discard_timeout_ms: discard.min(release.saturating_sub(1)),
        put_start_release_timeout_ms: release.max(1),
        shard_count: 4,
        ..MasterConfig::deterministic(start)
    };
    if let Err(e) = cfg.validate() {
        prop_assert_eq!(e.kind(), ErrorKind::InvalidParams);
        prop_assert!(
            raw.iter().any(|&d| d > MAX_DURATION_MS),
            "refused a configuration within the bounds: {}",
            e
        );
        for d in [
            &mut cfg.default_kv_lease_ttl_ms,
            &mut cfg.default_kv_soft_pin_ttl_ms,
            &mut cfg.max_kv_soft_pin_ttl_ms,
            &mut cfg.put_start_discard_timeout_ms,
            &mut cfg.put_start_release_timeout_ms,
        ] {
            *d = (*d).min(MAX_DURATION_MS);
        }
        if cfg.put_start_discard_timeout_ms >= cfg.put_start_release_timeout_ms {
            cfg.put_start_discard_timeout_ms = cfg.put_start_release_timeout_ms - 1;
        }
        cfg.validate().unwrap();
    }
    Ok(cfg)
}

fn pin(ttl: Option<u64>) -> SoftPinRequest {
    match ttl {
        Some(t) => SoftPinRequest::enable_for(t),
        None => SoftPinRequest::enable(),
    }
}

/// Errors the random operations may meet; anything else is a bug.
fn allowed(e: &Error) -> bool {
    !matches!(
        e.kind(),
        ErrorKind::Internal | ErrorKind::DeserializeFail | ErrorKind::SerializeFail
    )
}

fn apply(m: &Master, op: &Op) -> Result<(), TestCaseError> {
    let k = |i: usize| Key::new(KEYS[i]);
    let segs = ["m0", "m1"];
    let result: Result<()> = match op {
        Op::Put {
            key,
            mem,
            nof,
            ttl,
            end,
        } => m
            .put_start(C1, k(*key), 64, &write(KEYS[*key], *mem, *nof, pin(*ttl)))
            .and_then(|w| match end {
                true => m.put_end(C1, k(*key), ReplicaSelector::All, Some(w.token)),
                false => Ok(()),
            }),
        Op::Upsert { key, size, ttl } => m
            .upsert_start(C1, k(*key), *size, &write(KEYS[*key], 1, 0, pin(*ttl)))
            .map(drop),
        Op::End { key } => m.put_end(C1, k(*key), ReplicaSelector::All, None),
        Op::Revoke { key } => m.put_revoke(C1, k(*key), ReplicaSelector::All, None),
        Op::Get { key } => m.get_replica_list(k(*key)).map(drop),
        Op::Exist { key } => m.exist(k(*key)).map(drop),
        Op::Remove { key, force } => m.remove(k(*key), *force),
        Op::Copy { key } => m.copy_start(k(*key), &segs).map(drop),
        Op::Move { key } => m.move_start(k(*key), "m0", "m1").map(drop),
        Op::FinishTask { key, end } => {
            let r = if *end {
                m.copy_end(k(*key)).or_else(|_| m.move_end(k(*key)))
            } else {
                m.copy_revoke(k(*key)).or_else(|_| m.move_revoke(k(*key)))
            };
            r.or_else(|_| m.promotion_end(k(*key), *end))
        }
        Op::AddLocalDisk { key } => m.add_local_disk_replica(C2, k(*key), 64).map(drop),
        Op::Promote { key } => m.promotion_start(k(*key), &[]).map(drop),
        Op::Advance { by } => m.advance_time(*by).map(drop),
        Op::Maintenance => {
            let now = m.now();
            m.run_cleanup_at(now);
            m.sweep_stale_writes_at(now);
            m.release_discarded_at(now);
            Ok(())
        }
        Op::Evict => m.run_eviction(1.0, 0.0).map(drop),
        Op::Restore => {
            let bytes = m.snapshot().unwrap();
            m.restore(&bytes).map(drop)
        }
    };
    if let Err(e) = &result {
        prop_assert!(allowed(e), "{:?} failed with {}", op, e);
    }
    m.check_invariants()
        .map_err(|e| TestCaseError::fail(format!("after {op:?}: {e}")))?;
    Ok(())
}

/// Fixed seed and no failure files, as in model.rs: CI is deterministic and
/// writes nothing.
fn proptest_config() -> ProptestConfig {
    ProptestConfig {
        cases: 1024,
        failure_persistence: None,
        rng_algorithm: proptest::test_runner::RngAlgorithm::ChaCha,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x5a7_u64),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(proptest_config())]

    #[test]
    fn snapshots_stay_restorable_at_any_clock_and_ttl(
        start in start(),
        raw in prop::array::uniform5(duration()),
        ops in prop::collection::vec(op(), 1..40),
    ) {
        let m = mounted(config(start, raw)?);
        for op in &ops {
            apply(&m, op)?;
            assert_restorable(&m)?;
        }
    }
}
