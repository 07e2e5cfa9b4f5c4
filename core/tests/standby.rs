//! Standby mode, journal apply and promote (docs/CONTRACT.md section 12.3).

mod common;

use common::*;
use mooncake_meta_core::*;

fn standby_config() -> MasterConfig {
    MasterConfig {
        standby: true,
        ..config()
    }
}

fn is_standby_err<T: std::fmt::Debug>(r: Result<T>, what: &str) {
    match r {
        Err(e) => {
            assert_eq!(
                e.kind(),
                ErrorKind::UnavailableInCurrentStatus,
                "{what}: {e}"
            );
            assert!(e.message().contains("standby"), "{what}: {}", e.message());
        }
        Ok(v) => panic!("{what} succeeded on a standby: {v:?}"),
    }
}

#[test]
fn every_client_operation_is_rejected_on_a_standby() {
    let m = Master::new(standby_config()).unwrap();
    assert!(m.is_standby());
    assert_eq!(m.applied_seq(), 0);
    let w = WriteConfig::default();
    let seg = spec("mem0", 0, 1 << 20, Pool::Memory);
    is_standby_err(m.mount_segment(C1, &seg), "mount_segment");
    is_standby_err(m.unmount_segment(C1, "mem0"), "unmount_segment");
    is_standby_err(m.unmount_client(C1), "unmount_client");
    is_standby_err(m.put_start(C1, k("a"), 64, &w), "put_start");
    is_standby_err(m.put_end(C1, k("a"), ReplicaSelector::All, None), "put_end");
    is_standby_err(
        m.put_revoke(C1, k("a"), ReplicaSelector::All, None),
        "put_revoke",
    );
    is_standby_err(m.upsert_start(C1, k("a"), 64, &w), "upsert_start");
    is_standby_err(
        m.upsert_start_bounded(C1, k("a"), 64, &w, 4),
        "upsert_start_bounded",
    );
    is_standby_err(
        m.upsert_end(C1, k("a"), ReplicaSelector::All, None),
        "upsert_end",
    );
    is_standby_err(
        m.upsert_revoke(C1, k("a"), ReplicaSelector::All, None),
        "upsert_revoke",
    );
    is_standby_err(m.validate_write_request(k("a"), 64, &w), "validate");
    is_standby_err(m.get_replica_list(k("a")), "get_replica_list");
    let mut out = Vec::new();
    is_standby_err(m.get_replica_list_into(k("a"), &mut out), "get_into");
    is_standby_err(m.get_replica_list_bounded(k("a"), 4), "get_bounded");
    is_standby_err(m.exist(k("a")), "exist");
    is_standby_err(m.list_keys("", "", None, 10), "list_keys");
    is_standby_err(m.remove(k("a"), true), "remove");
    is_standby_err(m.remove_by_regex(None, ".*", true), "remove_by_regex");
    is_standby_err(m.copy_start(k("a"), &["mem1"]), "copy_start");
    is_standby_err(m.copy_end(k("a")), "copy_end");
    is_standby_err(m.copy_revoke(k("a")), "copy_revoke");
    is_standby_err(m.move_start(k("a"), "mem0", "mem1"), "move_start");
    is_standby_err(m.move_end(k("a")), "move_end");
    is_standby_err(m.move_revoke(k("a")), "move_revoke");
    is_standby_err(m.promotion_start(k("a"), &[]), "promotion_start");
    is_standby_err(m.promotion_end(k("a"), true), "promotion_end");
    is_standby_err(m.add_local_disk_replica(C1, k("a"), 64), "local_disk");
    is_standby_err(m.run_eviction(0.5, 0.1), "run_eviction");
    is_standby_err(m.retain_groups("", &["g"], 1_000), "retain_groups");
    is_standby_err(m.release_groups("", &["g"]), "release_groups");
    is_standby_err(m.group_retention_deadline("", "g"), "retention_deadline");
    let keys = [k("a"), k("b")];
    for (what, rs) in [
        (
            "batch_put_start",
            m.batch_put_start(C1, &keys, &[64, 64], &w)
                .into_iter()
                .map(|r| r.map(|_| ()))
                .collect::<Vec<_>>(),
        ),
        (
            "batch_upsert_start",
            m.batch_upsert_start(C1, &keys, &[64, 64], &w)
                .into_iter()
                .map(|r| r.map(|_| ()))
                .collect(),
        ),
        (
            "batch_put_end",
            m.batch_put_end(C1, &keys, ReplicaSelector::All, None),
        ),
        (
            "batch_put_revoke",
            m.batch_put_revoke(C1, &keys, ReplicaSelector::All, None),
        ),
        (
            "batch_get",
            m.batch_get_replica_list(&keys)
                .into_iter()
                .map(|r| r.map(|_| ()))
                .collect(),
        ),
        (
            "batch_get_bounded",
            m.batch_get_replica_list_bounded(&keys, 8)
                .into_iter()
                .map(|r| r.map(|_| ()))
                .collect(),
        ),
        (
            "batch_exist",
            m.batch_exist(&keys)
                .into_iter()
                .map(|r| r.map(|_| ()))
                .collect(),
        ),
        ("batch_remove", m.batch_remove(&keys, true)),
    ] {
        assert_eq!(rs.len(), 2, "{what}");
        for r in rs {
            is_standby_err(r, what);
        }
    }
    // The calls without a Result answer as if nothing were stored.
    assert_eq!(m.readable_count(k("a")), 0);
    assert_eq!(m.batch_readable_count(&keys), vec![0, 0]);
    assert_eq!(m.remove_all(true), 0);
    assert_eq!(m.evict_if_needed(true), None);
    assert_eq!(m.run_cleanup_at(u64::MAX / 4), CleanupStats::default());
    assert_eq!(m.sweep_stale_writes_at(u64::MAX / 4), 0);
    assert_eq!(m.release_discarded_at(u64::MAX / 4), 0);
    m.run_maintenance_tick();
    // Snapshots, metrics and the clock stay available.
    let snap = m.snapshot().unwrap();
    assert!(!snap.is_empty());
    let metrics = m.metrics();
    assert!(metrics.standby);
    assert_eq!(metrics.journal_applied_seq, 0);
    let text = m.metrics_prometheus();
    assert!(text.contains("\nmaster_standby 1\n"), "{text}");
    assert!(text.contains("\nmaster_journal_applied_seq 0\n"), "{text}");
    m.advance_time(10).unwrap();
    assert_eq!(m.key_count(), 0);
}

#[test]
fn a_primary_is_not_a_standby_and_cannot_be_promoted() {
    let m = master();
    assert!(!m.is_standby());
    assert!(!m.metrics().standby);
    assert!(m.metrics_prometheus().contains("\nmaster_standby 0\n"));
    let e = m.promote().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::UnavailableInCurrentStatus);
    assert!(e.message().contains("already a primary"), "{}", e.message());
}

#[test]
fn a_promoted_empty_standby_serves_operations() {
    let m = Master::new(standby_config()).unwrap();
    let report = m.promote().unwrap();
    assert_eq!(report, PromoteReport::default());
    assert!(!m.is_standby());
    m.mount_segment(C1, &spec("mem0", 0, 1 << 20, Pool::Memory))
        .unwrap();
    put(&m, "a", 64, &WriteConfig::default());
    assert_eq!(m.readable_count(k("a")), 1);
    // A second promote is refused.
    assert_eq!(
        m.promote().unwrap_err().kind(),
        ErrorKind::UnavailableInCurrentStatus
    );
}

/// The maintenance thread does nothing on a standby and starts at
/// promotion. The standby half waits (without asserting anything about
/// speed) until many cleanup intervals have passed on the wall clock, then
/// checks no cycle ran; the primary half waits for the first cycle with a
/// hang guard only.
#[test]
fn maintenance_thread_idles_on_a_standby_and_works_after_promote() {
    let cfg = MasterConfig {
        soft_pin_cleanup_interval_ms: 1,
        ..standby_config()
    };
    let m = Master::new(cfg).unwrap();
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_millis(30) {
        std::thread::yield_now();
    }
    assert_eq!(m.metrics().cleanup_cycles, 0, "a standby ran a cleanup");
    m.promote().unwrap();
    let hang = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while m.metrics().cleanup_cycles == 0 {
        assert!(
            std::time::Instant::now() < hang,
            "hang: no cleanup after promote"
        );
        std::thread::yield_now();
    }
}
