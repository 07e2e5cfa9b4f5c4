//! The master's timeline (docs/CONTRACT.md §1, §6): instants advance with a
//! monotonic clock anchored to the wall once, so a wall-clock step changes
//! no lifetime and no cleanup or eviction decision; the skew is a metric;
//! restore shifts stored instants by the change in skew, saturating, and
//! leaves equal-skew and format-1 snapshots verbatim.
mod common;

use common::*;
use mooncake_meta_core::snapshot::image::SnapshotImage;
use mooncake_meta_core::snapshot::remap::shift_instants;
use mooncake_meta_core::*;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;
/// A wall clock in the recent past, far from both ends of the range.
const WALL: u64 = 1_760_000_000_000;

/// A wall the test can step: `WALL + offset`, offset in ms.
fn steppable_wall() -> (WallSource, Arc<AtomicI64>) {
    let offset = Arc::new(AtomicI64::new(0));
    let o = offset.clone();
    let wall = WallSource::new(move || (WALL as i64 + o.load(Ordering::SeqCst)) as u64);
    (wall, offset)
}

/// A system-timeline master (background work off) reading `wall`.
fn system_master(wall: WallSource) -> Master {
    let cfg = MasterConfig {
        clock: ClockSource::SystemWithWall(wall),
        ..config()
    };
    master_with(cfg, 2, 0, 1 << 20)
}

/// (key, put_start, lease, soft-pin deadline) of every object.
type Instants = Vec<(String, u64, u64, Option<u64>)>;

/// Every instant the master stores, from a capture.
fn instants(m: &Master) -> Instants {
    m.capture()
        .objects
        .into_iter()
        .map(|o| (o.key, o.put_start, o.lease, o.soft_pin_deadline))
        .collect()
}

#[test]
fn wall_step_changes_no_lifetime() {
    for step in [HOUR, -HOUR, DAY, -DAY] {
        let (wall, offset) = steppable_wall();
        let m = system_master(wall);
        put(&m, "pinned", 4096, &enable(60_000));
        put(&m, "plain", 4096, &preserve());
        m.get_replica_list(k("pinned")).unwrap(); // a read lease
        let w = m.put_start(C1, k("in-flight"), 4096, &preserve()).unwrap();
        let before = instants(&m);
        let t_before = m.now();

        offset.store(step, Ordering::SeqCst);

        // The timeline moved only by the real time that passed (far less
        // than the step), and every stored instant is what it was.
        let t_after = m.now();
        assert!(
            t_after >= t_before,
            "now went backwards on a {step} ms step"
        );
        assert!(
            t_after - t_before < (step.unsigned_abs() / 2),
            "a {step} ms wall step moved the timeline by {} ms",
            t_after - t_before
        );
        assert_eq!(
            instants(&m),
            before,
            "a {step} ms wall step moved an instant"
        );

        // Decisions are those of an unstepped master: nothing is due, the
        // lease still blocks a plain Remove, the write is not stale, and
        // eviction's first pass leaves the pinned object alone.
        assert_eq!(m.run_cleanup().expired, 0);
        assert_eq!(deadline(&m, "pinned"), before[1].3);
        assert_eq!(
            code(m.remove(k("pinned"), false)),
            ErrorKind::ObjectHasLease
        );
        assert_eq!(m.sweep_stale_writes_at(m.now()), 0);
        assert_eq!(
            code(m.put_start(C2, k("in-flight"), 4096, &preserve())),
            ErrorKind::ObjectAlreadyExists
        );
        m.run_eviction(0.5, 0.0).unwrap();
        assert!(m.exist(k("pinned")).unwrap());
        m.put_end(C1, k("in-flight"), ReplicaSelector::All, Some(w.token))
            .unwrap();
        inv(&m);
    }
}

#[test]
fn wall_step_is_reported_as_skew() {
    let (wall, offset) = steppable_wall();
    let m = system_master(wall);
    // Only milliseconds of real time pass in this test.
    assert!(m.clock_skew_ms().abs() < HOUR / 2);
    offset.store(-DAY, Ordering::SeqCst);
    let skew = m.metrics().clock_skew_ms;
    assert!(
        (skew - DAY).abs() < HOUR / 2,
        "skew {skew} after the wall went back a day"
    );
    assert_eq!(m.wall_time(), WALL - DAY as u64);
    let text = m.metrics_prometheus();
    assert!(text.contains("# TYPE master_clock_skew_ms gauge\nmaster_clock_skew_ms "));
    offset.store(HOUR, Ordering::SeqCst);
    let skew = m.clock_skew_ms();
    assert!(
        (skew + HOUR).abs() < HOUR / 2,
        "skew {skew} after the wall went on an hour"
    );
}

/// §1: the skew moves only when the wall is stepped or drifts. The timeline
/// and the wall are each read in ns and the skew is rounded to the ms, so on
/// the operating system's clocks, with no step, it stays 0 instead of
/// flipping between 0 and -1 ms as two readings cut to ms apart would; and a
/// master restoring its own snapshot shifts no instant (§6: equal skews
/// restore verbatim). (NTP slews a clock by at most 0.5 ms a second, so the
/// drift over this test's ~0.5 s stays under the half ms the rounding
/// allows.)
#[test]
fn an_unstepped_system_clock_keeps_its_skew_and_restores_its_own_snapshot_verbatim() {
    use std::time::Duration;
    let cfg = MasterConfig {
        clock: ClockSource::System,
        ..config()
    };
    let m = master_with(cfg, 1, 0, 1 << 20);
    put(&m, "k", 64, &enable(HOUR as u64));
    for i in 0..4_000u64 {
        assert_eq!(m.clock_skew_ms(), 0, "read {i}");
        std::thread::sleep(Duration::from_micros(37 + i % 97));
    }
    for i in 0..300u64 {
        let snap = m.snapshot().unwrap();
        std::thread::sleep(Duration::from_micros(53 + i % 89 * 7));
        let report = m.restore(&snap).unwrap();
        assert_eq!(report.clock_shift_ms, 0, "restore {i}");
    }
    inv(&m);
}

#[test]
fn system_timeline_is_anchored_to_the_wall_at_creation() {
    let (wall, _) = steppable_wall();
    let m = system_master(wall);
    let now = m.now();
    assert!((WALL..WALL + HOUR as u64).contains(&now), "{now}");
}

#[test]
fn now_never_goes_backwards_when_the_wall_does() {
    let (wall, offset) = steppable_wall();
    let m = system_master(wall);
    let mut last = m.now();
    for i in 0..10_000i64 {
        offset.store(-i * 1_000, Ordering::SeqCst);
        let t = m.now();
        assert!(t >= last, "now went from {last} to {t}");
        last = t;
    }
}

#[test]
fn manual_clock_moves_timeline_and_wall_together() {
    let m = master();
    assert_eq!((m.wall_time(), m.clock_skew_ms()), (T0, 0));
    m.advance_time(5_000).unwrap();
    assert_eq!((m.wall_time(), m.clock_skew_ms()), (T0 + 5_000, 0));
}

#[test]
fn manual_wall_set_apart_changes_no_lifetime() {
    let m = master();
    put(&m, "pinned", 4096, &enable(60_000));
    let before = instants(&m);
    m.set_wall_time(T0 + DAY as u64).unwrap();
    assert_eq!(m.clock_skew_ms(), -DAY);
    assert_eq!(m.now(), T0);
    assert_eq!(instants(&m), before);
    assert_eq!(m.run_cleanup().expired, 0);
    // The wall keeps its distance as the clock advances.
    m.advance_time(1_000).unwrap();
    assert_eq!(m.wall_time(), T0 + DAY as u64 + 1_000);
    assert_eq!(m.clock_skew_ms(), -DAY);
    // Bad walls are refused and change nothing.
    assert_eq!(code(m.set_wall_time(MAX_INSTANT)), ErrorKind::InvalidParams);
    assert_eq!(m.clock_skew_ms(), -DAY);
}

/// §6 (review finding): a manual wall set near its bound is clamped as the
/// clock advances; the skew is the timeline minus that clamped wall (the
/// wall a snapshot records), so a restore on the same master shifts
/// nothing: it shortened a pin by the clamped amount.
#[test]
fn a_clamped_manual_wall_keeps_restore_verbatim_on_the_same_master() {
    let m = master();
    m.set_wall_time(MAX_INSTANT - 1).unwrap();
    m.advance_time(10_000).unwrap();
    assert_eq!(m.wall_time(), MAX_INSTANT - 1, "the wall is clamped");
    assert_eq!(
        m.clock_skew_ms(),
        (m.now() as i64) - (MAX_INSTANT - 1) as i64
    );
    put(&m, "pinned", 4096, &enable(60_000));
    let before = instants(&m);
    let report = m.restore(&m.snapshot().unwrap()).unwrap();
    assert_eq!(report.clock_shift_ms, 0, "{report:?}");
    assert_eq!(instants(&m), before);
}

#[test]
fn set_wall_on_a_system_clock_is_unsupported() {
    let (wall, _) = steppable_wall();
    let m = system_master(wall);
    assert_eq!(code(m.set_wall_time(WALL)), ErrorKind::ClockUnsupported);
}

/// A manual master at `WALL` whose wall is `WALL − skew` (skew = timeline −
/// wall).
fn master_with_skew(skew: i64) -> Master {
    master_with_skew_and_lease(skew, LEASE)
}

fn master_with_skew_and_lease(skew: i64, lease_ms: u64) -> Master {
    let cfg = MasterConfig {
        default_kv_lease_ttl_ms: lease_ms,
        ..MasterConfig::deterministic(WALL)
    };
    let m = master_with(cfg, 2, 0, 1 << 20);
    m.set_wall_time((WALL as i64 - skew) as u64).unwrap();
    assert_eq!(m.clock_skew_ms(), skew);
    m
}

/// A snapshot of a master with skew `s1` holding a pinned (10 h), a leased
/// (`lease_ms`) and a hard-pinned object.
fn snapshot_with_skew(s1: i64, lease_ms: u64) -> (Vec<u8>, Instants) {
    let a = master_with_skew_and_lease(s1, lease_ms);
    put(&a, "pinned", 4096, &enable(10 * HOUR as u64));
    put(&a, "leased", 4096, &preserve());
    a.get_replica_list(k("leased")).unwrap();
    let hard = WriteConfig {
        hard_pin: true,
        ..preserve()
    };
    put(&a, "hard", 4096, &hard);
    (a.snapshot().unwrap(), instants(&a))
}

#[test]
fn restore_shifts_instants_by_the_change_in_skew() {
    for (s1, s2) in [(0, HOUR), (HOUR, 0), (-DAY, DAY), (DAY, 2 * DAY)] {
        // Leases of 3 days outlive every shift here: nothing is dropped.
        let (snap, before) = snapshot_with_skew(s1, 3 * DAY as u64);
        let b = master_with_skew(s2);
        let rep = b.restore(&snap).unwrap();
        let delta = s2 - s1;
        assert_eq!(rep.clock_shift_ms, delta);
        let shift = |t: u64| (t as i64 + delta).max(0) as u64;
        let expected: Vec<_> = before
            .iter()
            .map(|(key, ps, lease, pin)| (key.clone(), shift(*ps), shift(*lease), pin.map(shift)))
            .collect();
        assert_eq!(instants(&b), expected, "s1 {s1}, s2 {s2}");
        inv(&b);
    }
}

#[test]
fn restore_applies_the_survival_rules_after_the_shift() {
    // The lease (capture + 10 s) and the pin (capture + 10 h) end, on the
    // restoring timeline, most of a day before its now: both objects are
    // left with neither a live lease nor an active pin and are dropped; the
    // hard-pinned one survives. Without the shift both would survive.
    let (snap, _) = snapshot_with_skew(DAY, LEASE);
    let same = master_with_skew(DAY);
    let rep = same.restore(&snap).unwrap();
    assert_eq!((rep.objects_restored, rep.soft_pins_restored), (3, 1));
    let b = master_with_skew(0);
    let rep = b.restore(&snap).unwrap();
    assert_eq!(rep.clock_shift_ms, -DAY);
    assert_eq!((rep.objects_restored, rep.objects_dropped), (1, 2));
    assert_eq!(rep.soft_pins_restored, 0);
    assert!(!b.exist(k("leased")).unwrap());
    assert!(!b.exist(k("pinned")).unwrap());
    assert!(b.exist(k("hard")).unwrap());
    inv(&b);
}

#[test]
fn equal_skews_restore_verbatim() {
    for s in [0, HOUR, -DAY] {
        let (snap, before) = snapshot_with_skew(s, LEASE);
        let b = master_with_skew(s);
        assert_eq!(b.restore(&snap).unwrap().clock_shift_ms, 0);
        assert_eq!(instants(&b), before);
        assert_eq!(
            b.snapshot().unwrap(),
            snap,
            "skew {s}: byte-identical round trip"
        );
    }
}

#[test]
fn restore_shift_saturates_at_the_ends_of_the_range() {
    let mut img = SnapshotImage::default();
    let mut o = snapshot_object();
    o.put_start = 5;
    o.lease = MAX_INSTANT - 5;
    o.soft_pin_deadline = Some(MAX_INSTANT);
    img.objects.push(o);
    let mut down = img.clone();
    shift_instants(&mut down, -10);
    assert_eq!(down.objects[0].put_start, 0);
    assert_eq!(down.objects[0].lease, MAX_INSTANT - 15);
    assert_eq!(
        down.objects[0].soft_pin_deadline,
        Some(MAX_INSTANT),
        "never stays never"
    );
    let mut up = img.clone();
    shift_instants(&mut up, i64::MAX);
    assert_eq!(up.objects[0].put_start, MAX_INSTANT);
    assert_eq!(up.objects[0].lease, MAX_INSTANT);
    let mut far_down = img;
    shift_instants(&mut far_down, i64::MIN);
    assert_eq!(far_down.objects[0].lease, 0);
}

fn snapshot_object() -> mooncake_meta_core::snapshot::image::ObjectRecord {
    mooncake_meta_core::snapshot::image::ObjectRecord {
        tenant: "default".into(),
        key: "k".into(),
        writer: 1,
        size: 1,
        put_start: 0,
        lease: 0,
        soft_pin_deadline: None,
        hard_pin: false,
        group: None,
        seq: 0,
        write_token: 0,
        replicas: Vec::new(),
    }
}

#[test]
fn format_1_snapshot_restores_verbatim() {
    // The committed format-1 fixture has no wall record: a master with any
    // skew restores its instants as stored.
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/snapshot_v1.bin"
    ))
    .expect("the format-1 fixture is committed");
    let img = mooncake_meta_core::snapshot::codec::decode(&bytes).unwrap();
    assert_eq!(img.wall_at_capture, None);
    for skew in [0, DAY, -DAY] {
        let m = Master::new(MasterConfig::deterministic(img.created_at)).unwrap();
        m.set_wall_time((img.created_at as i64 - skew) as u64)
            .unwrap();
        let rep = m.restore(&bytes).unwrap();
        assert_eq!(rep.clock_shift_ms, 0);
        let restored = m.capture();
        for o in &restored.objects {
            let stored = img
                .objects
                .iter()
                .find(|s| (&s.tenant, &s.key) == (&o.tenant, &o.key))
                .unwrap();
            // Pins already over at the fixture's capture are normalised by
            // the survival rules; every other instant is as stored.
            let active = stored.soft_pin_deadline.filter(|&d| d > img.created_at);
            assert_eq!(
                (o.put_start, o.soft_pin_deadline),
                (stored.put_start, active),
                "skew {skew}: {}",
                o.key
            );
        }
        assert!(!restored.objects.is_empty());
    }
}

/// A system-timeline master reading `wall`, in standby mode.
fn system_standby(wall: WallSource) -> Master {
    Master::new(MasterConfig {
        clock: ClockSource::SystemWithWall(wall),
        standby: true,
        ..config()
    })
    .unwrap()
}

/// The ms left to the soft-pin deadline of `key`, on `m`'s timeline.
fn pin_left(m: &Master, key: &str) -> i64 {
    deadline(m, key).unwrap() as i64 - m.now() as i64
}

/// §12.3: a standby takes its primary's timeline with the image it
/// installs. The primary started with a wall an hour fast, which NTP then
/// stepped back: its timeline runs an hour ahead of the (now correct) wall.
/// A standby started later on a host with the correct wall reads the wall
/// on its own timeline; restored from the primary's snapshot (or reset by
/// the primary's journal) it runs on the primary's, so promoted it keeps
/// the pin's 10 h, not 11, and its own snapshot restores as the primary's
/// does.
#[test]
fn a_standby_takes_its_primarys_timeline_with_the_image_it_installs() {
    let (wall_p, step_p) = steppable_wall();
    step_p.store(HOUR, Ordering::SeqCst);
    let p = system_master(wall_p);
    step_p.store(0, Ordering::SeqCst);
    assert!(
        (p.clock_skew_ms() - HOUR).abs() < 1_000,
        "{}",
        p.clock_skew_ms()
    );
    put(&p, "pinned", 4096, &enable(10 * HOUR as u64));
    let snap = p.snapshot().unwrap();

    let (wall_s, _) = steppable_wall();
    let s = system_standby(wall_s.clone());
    assert!(s.clock_skew_ms().abs() < 1_000);
    s.restore(&snap).unwrap();
    let (skew_p, skew_s) = (p.clock_skew_ms(), s.clock_skew_ms());
    assert!(
        (skew_s - skew_p).abs() < 1_000,
        "standby {skew_s}, primary {skew_p}"
    );
    assert!((s.now() as i64 - p.now() as i64).abs() < 1_000);
    // Its snapshot and the primary's give a master on the correct wall the
    // same lifetimes.
    let from = |bytes: &[u8]| {
        let (wall, _) = steppable_wall();
        let fresh = system_master(wall);
        fresh.restore(bytes).unwrap();
        pin_left(&fresh, "pinned")
    };
    let (via_p, via_s) = (from(&snap), from(&s.snapshot().unwrap()));
    assert!((via_p - 10 * HOUR).abs() < 1_000, "{via_p}");
    assert!((via_s - via_p).abs() < 1_000, "{via_s} against {via_p}");
    s.promote().unwrap();
    let left = pin_left(&s, "pinned");
    assert!(
        (left - 10 * HOUR).abs() < 1_000,
        "{left} ms left after promote"
    );
    inv(&s);
}

/// §12.3, a chain of standbys: the primary (an hour ahead of its wall)
/// restores its own snapshot, which its journal records as a Reset; a
/// journaling standby applies it and records its own Reset, which a standby
/// behind it applies. Each takes the primary's timeline, so the last one,
/// promoted, keeps the pin's 10 h.
#[test]
fn a_chained_standby_takes_its_primarys_timeline_through_reset_records() {
    let (wall_p, step_p) = steppable_wall();
    step_p.store(HOUR, Ordering::SeqCst);
    let p = master_with(
        MasterConfig {
            clock: ClockSource::SystemWithWall(wall_p),
            journal_capacity_bytes: 1 << 20,
            ..config()
        },
        2,
        0,
        1 << 20,
    );
    step_p.store(0, Ordering::SeqCst);
    put(&p, "pinned", 4096, &enable(10 * HOUR as u64));
    let snap = p.snapshot().unwrap();
    let mk = |journal: u64| {
        let (wall, _) = steppable_wall();
        Master::new(MasterConfig {
            clock: ClockSource::SystemWithWall(wall),
            standby: true,
            journal_capacity_bytes: journal,
            ..config()
        })
        .unwrap()
    };
    // The primary restores its own snapshot: a Reset in its journal.
    p.restore(&snap).unwrap();
    let s1 = mk(1 << 20);
    s1.apply_journal(&p.journal_read_to_vec(1).unwrap())
        .unwrap();
    let s2 = mk(0);
    s2.apply_journal(&s1.journal_read_to_vec(1).unwrap())
        .unwrap();
    assert!((s1.clock_skew_ms() - p.clock_skew_ms()).abs() < 1_000);
    assert!(
        (s2.clock_skew_ms() - p.clock_skew_ms()).abs() < 1_000,
        "chained standby skew {} primary {}",
        s2.clock_skew_ms(),
        p.clock_skew_ms()
    );
    s2.promote().unwrap();
    let left = pin_left(&s2, "pinned");
    assert!(
        (left - 10 * HOUR).abs() < 1_000,
        "{left} ms left after promote"
    );
}
