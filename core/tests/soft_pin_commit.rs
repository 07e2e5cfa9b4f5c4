//! docs/CONTRACT.md §4.3 through the master: one test per cell of the commit table
//! (committed before × action), asserting deadline, gauge and index.
mod common;
use common::*;
use mooncake_meta_core::*;

const TTL: u64 = 5_000;

/// Puts "k" so that its committed state is `before` at the time the
/// returned master's next End runs: None, Active, or StoredExpired.
#[derive(Clone, Copy, Debug)]
enum Before {
    None,
    Active,
    StoredExpired,
}

fn setup(before: Before) -> Master {
    let m = master();
    match before {
        Before::None => {
            put(&m, "k", 64, &preserve());
        }
        Before::Active => {
            put(&m, "k", 64, &enable(TTL));
        }
        Before::StoredExpired => {
            put(&m, "k", 64, &enable(TTL));
        }
    }
    if let Before::StoredExpired = before {
        m.advance_time(TTL).unwrap(); // now == deadline: expired, not cleaned
        assert_eq!(deadline(&m, "k"), Some(T0 + TTL));
    } else {
        m.advance_time(100).unwrap();
    }
    m
}

fn end_with(m: &Master, c: &WriteConfig) {
    upsert(m, "k", 64, c);
}

fn expect(m: &Master, d: Option<u64>, gauge_v: u64, registered: bool) {
    assert_eq!(deadline(m, "k"), d);
    assert_eq!(gauge(m), gauge_v);
    assert_eq!(m.index_sizes().1, registered as usize);
    inv(m);
}

#[test]
fn none_preserve_stays_none() {
    let m = setup(Before::None);
    end_with(&m, &preserve());
    expect(&m, None, 0, false);
}

#[test]
fn none_enable_commits_deadline_from_end() {
    let m = setup(Before::None);
    let now = m.now();
    end_with(&m, &enable(TTL));
    expect(&m, Some(now + TTL), 1, true);
}

#[test]
fn none_enable_zero_stays_none() {
    let m = setup(Before::None);
    end_with(&m, &enable(0));
    expect(&m, None, 0, false);
}

#[test]
fn none_disable_stays_none() {
    let m = setup(Before::None);
    end_with(&m, &disable());
    expect(&m, None, 0, false);
}

#[test]
fn active_preserve_keeps_deadline() {
    let m = setup(Before::Active);
    end_with(&m, &preserve());
    expect(&m, Some(T0 + TTL), 1, true);
}

#[test]
fn active_enable_replaces_even_when_shorter() {
    let m = setup(Before::Active);
    let now = m.now();
    end_with(&m, &enable(10));
    expect(&m, Some(now + 10), 1, true);
    // the old (longer) entry is stale: cleanup at the new deadline expires once
    let st = m.run_cleanup_at(now + 10);
    assert_eq!(st.expired, 1);
    let st = m.run_cleanup_at(T0 + TTL);
    assert_eq!((st.expired, st.stale_dropped), (0, 1));
    expect(&m, None, 0, false);
}

#[test]
fn active_enable_zero_clears() {
    let m = setup(Before::Active);
    end_with(&m, &enable(0));
    expect(&m, None, 0, false);
}

#[test]
fn active_disable_clears() {
    let m = setup(Before::Active);
    end_with(&m, &disable());
    expect(&m, None, 0, false);
}

#[test]
fn expired_preserve_drops_deadline() {
    let m = setup(Before::StoredExpired);
    end_with(&m, &preserve());
    expect(&m, None, 0, false);
}

#[test]
fn expired_enable_restarts_gauge_neutral() {
    let m = setup(Before::StoredExpired);
    let now = m.now();
    end_with(&m, &enable(TTL));
    expect(&m, Some(now + TTL), 1, true);
}

#[test]
fn expired_enable_zero_drops_deadline() {
    let m = setup(Before::StoredExpired);
    end_with(&m, &enable(0));
    expect(&m, None, 0, false);
}

#[test]
fn expired_disable_drops_deadline() {
    let m = setup(Before::StoredExpired);
    end_with(&m, &disable());
    expect(&m, None, 0, false);
}

#[test]
fn deadline_starts_at_end_not_start() {
    let m = master();
    let w = m.put_start(C1, k("k"), 64, &enable(TTL)).unwrap();
    m.advance_time(777).unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    assert_eq!(deadline(&m, "k"), Some(T0 + 777 + TTL));
}

#[test]
fn deadline_saturates_at_max_instant() {
    let c = MasterConfig {
        max_kv_soft_pin_ttl_ms: MAX_DURATION_MS,
        ..config()
    };
    let m = master_with(c, 1, 0, 1 << 20);
    m.set_time(MAX_INSTANT - 10).unwrap();
    put(&m, "k", 64, &enable(MAX_DURATION_MS));
    assert_eq!(deadline(&m, "k"), Some(MAX_INSTANT));
    m.set_time(MAX_INSTANT - 1).unwrap();
    assert_eq!(m.run_cleanup().expired, 0);
    assert_eq!(m.run_cleanup_at(MAX_INSTANT - 1).expired, 0);
    inv(&m);
}

#[test]
fn repeated_end_does_not_refresh() {
    let m = master();
    let w = m.put_start(C1, k("k"), 64, &enable(TTL)).unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    m.advance_time(1_000).unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::All, Some(w.token))
        .unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::Memory, None)
        .unwrap();
    assert_eq!(deadline(&m, "k"), Some(T0 + TTL));
    inv(&m);
}

#[test]
fn later_end_of_another_type_does_not_refresh() {
    let m = master();
    let c = WriteConfig {
        nof_ssd_replicas: 1,
        ..enable(TTL)
    };
    let w = m.put_start(C1, k("k"), 64, &c).unwrap();
    assert_eq!(w.replicas.len(), 2);
    m.put_end(C1, k("k"), ReplicaSelector::Memory, Some(w.token))
        .unwrap();
    assert_eq!(deadline(&m, "k"), Some(T0 + TTL));
    assert!(!m.has_pending_soft_pin(k("k")).unwrap());
    m.advance_time(1_000).unwrap();
    m.put_end(C1, k("k"), ReplicaSelector::NofSsd, Some(w.token))
        .unwrap();
    assert_eq!(deadline(&m, "k"), Some(T0 + TTL));
    assert_eq!(gauge(&m), 1);
    inv(&m);
}
