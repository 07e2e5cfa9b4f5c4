//! The fixed-lifecycle soft pin on the manual clock: the deadline starts
//! when the write first becomes readable, reads never extend it, and
//! cleanup clears it exactly when it is due.

mod common;

use common::*;
use mooncake_meta_sys::safe::*;

// Reads before the deadline leave it alone; cleanup clears it at deadline, not a millisecond before.
#[test]
fn deadline_expires_at_ttl_and_reads_do_not_extend_it() {
    let m = master();
    let k = Key::new("k");
    put(&m, "k", &enable(Some(1_000)));
    assert_eq!(m.soft_pin_deadline(k).unwrap(), Some(T0 + 1_000));
    assert_eq!(m.metrics().soft_pin_key_count, 1);

    m.advance_time(500).unwrap();
    assert!(m.exist(k).unwrap());
    m.get_replica_list(k).unwrap();
    assert_eq!(m.soft_pin_deadline(k).unwrap(), Some(T0 + 1_000));

    assert_eq!(m.advance_time(499).unwrap(), T0 + 999);
    assert_eq!(m.run_cleanup().expired, 0);
    assert_eq!(m.soft_pin_deadline(k).unwrap(), Some(T0 + 1_000));

    m.advance_time(1).unwrap();
    let stats = m.run_cleanup();
    assert_eq!(stats.expired, 1);
    assert_eq!(m.soft_pin_deadline(k).unwrap(), None);
    assert_eq!(m.metrics().soft_pin_key_count, 0);
    assert_eq!(m.index_sizes().1, 0);
    assert!(m.exist(k).unwrap()); // expiry unpins; it does not remove
    m.check_invariants().unwrap();
}

// The deadline is counted from the End that makes the write readable, not from its Start.
#[test]
fn lifetime_starts_at_the_first_readable_end() {
    let m = master();
    let k = Key::new("k");
    let s = m.put_start(C1, k, SIZE, &enable(Some(1_000))).unwrap();
    assert!(m.has_pending_soft_pin(k).unwrap());
    assert_eq!(m.soft_pin_deadline(k).unwrap(), None);
    m.advance_time(300).unwrap();
    m.put_end(C1, k, ReplicaSelector::All, Some(s.token))
        .unwrap();
    assert!(!m.has_pending_soft_pin(k).unwrap());
    assert_eq!(m.soft_pin_deadline(k).unwrap(), Some(T0 + 300 + 1_000));
}

// run_cleanup_at judges at the given instant and leaves the clock where it was.
#[test]
fn cleanup_at_an_instant_does_not_move_the_clock() {
    let m = master();
    put(&m, "a", &enable(Some(1_000)));
    put(&m, "b", &enable(Some(2_000)));
    assert_eq!(m.run_cleanup_at(T0 + 1_000).expired, 1);
    assert_eq!(m.now(), T0);
    assert_eq!(m.soft_pin_deadline(Key::new("a")).unwrap(), None);
    assert_eq!(
        m.soft_pin_deadline(Key::new("b")).unwrap(),
        Some(T0 + 2_000)
    );
}

// A maintenance tick runs the cleanup that is due.
#[test]
fn maintenance_tick_expires_due_pins() {
    let m = master();
    put(&m, "k", &enable(Some(1_000)));
    m.set_time(T0 + 1_000).unwrap();
    m.run_maintenance_tick();
    assert_eq!(m.soft_pin_deadline(Key::new("k")).unwrap(), None);
}

// An expired pin no longer protects from eviction's first pass; an active one does.
#[test]
fn an_active_pin_is_evicted_last() {
    let m = master_from(MasterConfig {
        allow_evict_soft_pinned_objects: false,
        ..MasterConfig::deterministic(T0)
    });
    put(&m, "pinned", &enable(Some(10_000)));
    put(&m, "plain", &WriteConfig::default());
    let r = m.run_eviction(1.0, 1.0).unwrap();
    assert_eq!((r.evicted, r.evicted_pinned), (1, 0));
    assert!(m.exist(Key::new("pinned")).unwrap());

    m.set_time(T0 + 10_000 + 20_000).unwrap(); // past the pin and the read lease
    let r = m.run_eviction(1.0, 1.0).unwrap();
    assert_eq!(r.evicted, 1);
    assert!(!m.exist(Key::new("pinned")).unwrap());
}
