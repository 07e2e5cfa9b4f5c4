//! The primary's timeline in its journal (docs/CONTRACT.md sections 1 and
//! 12.3): a primary whose skew (timeline − wall) moved since it last
//! recorded one — a wall step — records a `Timeline` record (tag 13,
//! journal format 4) when it sets its wall (a manual clock) and at its
//! maintenance ticks; a standby that applies the journal from record 1,
//! installing no image, takes that skew, so promoted it reads the records'
//! instants on the primary's timeline; a chain of standbys hands it on; a
//! primary whose skew never moved records none; a restore's Reset stands
//! for the skew its image carries. The codec: the record round-trips in
//! format 4, is an unknown tag in a format-3 batch and is not written in
//! one.

mod common;

use common::*;
use mooncake_meta_core::journal::codec::{
    decode_batch, encode_batch, encode_batch_as, last_tag, FORMAT_VERSION, HEADER_LEN,
    TIMELINE_VERSION,
};
use mooncake_meta_core::journal::Record;
use mooncake_meta_core::*;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;
/// A soft pin's TTL.
const PIN: u64 = 10 * HOUR as u64;

fn journaling(cfg: MasterConfig) -> MasterConfig {
    MasterConfig {
        journal_capacity_bytes: 1 << 20,
        ..cfg
    }
}

/// A manual-clock primary at `T0` with a journal and two memory segments.
fn primary() -> Master {
    master_with(journaling(config()), 2, 0, 1 << 20)
}

/// A standby started from scratch (no snapshot) on `cfg`'s clock;
/// `journal`: it records what it applies (a chain).
fn standby_on(cfg: MasterConfig, journal: bool) -> Master {
    Master::new(MasterConfig {
        standby: true,
        journal_capacity_bytes: if journal { 1 << 20 } else { 0 },
        ..cfg
    })
    .unwrap()
}

/// Every record of `m`'s journal, from record 1.
fn records(m: &Master) -> Vec<Record> {
    let bytes = m.journal_read_to_vec(1).unwrap();
    if bytes.is_empty() {
        return Vec::new();
    }
    let b = decode_batch(&bytes).unwrap();
    assert_eq!(b.first_seq, 1);
    b.records
}

/// The skews of the Timeline records of `m`'s journal, in order.
fn timelines(m: &Master) -> Vec<i64> {
    records(m)
        .into_iter()
        .filter_map(|r| match r {
            Record::Timeline { skew_ms } => Some(skew_ms),
            _ => None,
        })
        .collect()
}

/// Applies `from`'s whole journal to `to`.
fn catch_up(from: &Master, to: &Master) {
    to.apply_journal(&from.journal_read_to_vec(to.applied_seq() + 1).unwrap())
        .unwrap();
    assert_eq!(to.applied_seq(), from.journal_stats().last_seq);
}

/// The soft-pin deadline of `key` that a fresh manual master at `T0`
/// whose wall reads its timeline (skew 0) holds after restoring `snap`,
/// as ms after its now: the lifetime `snap` gives a master elsewhere.
fn pin_left_elsewhere(snap: &[u8], key: &str) -> i64 {
    let fresh = Master::new(config()).unwrap();
    fresh.restore(snap).unwrap();
    deadline(&fresh, key).unwrap() as i64 - fresh.now() as i64
}

// ----- the codec -----------------------------------------------------------

#[test]
fn a_timeline_record_is_tag_13_of_format_4() {
    assert_eq!((FORMAT_VERSION, TIMELINE_VERSION), (4, 4));
    assert_eq!((last_tag(4), last_tag(3)), (13, 12));
    let recs: Vec<Record> = [0, 1, -1, HOUR, -DAY, i64::MAX, i64::MIN]
        .into_iter()
        .map(|skew_ms| Record::Timeline { skew_ms })
        .collect();
    let b = encode_batch(9, &recs).unwrap();
    assert_eq!(b[8..12], 4u32.to_le_bytes());
    // Tag, then the i64 in 8 bytes, little-endian two's complement.
    assert_eq!(b[HEADER_LEN], 13);
    assert_eq!(b[HEADER_LEN + 1..HEADER_LEN + 9], 0i64.to_le_bytes());
    assert_eq!(b.len(), HEADER_LEN + 9 * recs.len());
    let back = decode_batch(&b).unwrap();
    assert_eq!((back.first_seq, &back.records), (9, &recs));
    assert_eq!(encode_batch(9, &back.records).unwrap(), b);
    assert_eq!(Record::NAMES[12], "Timeline");
    assert_eq!(recs[0].tag(), 13);
}

#[test]
fn tag_13_is_unknown_before_format_4() {
    let rec = Record::Timeline { skew_ms: -HOUR };
    for v in 1..TIMELINE_VERSION {
        // Written as format 4, relabelled as `v` (checksum recomputed).
        let mut b = encode_batch(5, std::slice::from_ref(&rec)).unwrap();
        b[8..12].copy_from_slice(&v.to_le_bytes());
        let mut h = crc32fast::Hasher::new();
        h.update(&b[..36]);
        h.update(&b[HEADER_LEN..]);
        let crc = h.finalize();
        b[36..40].copy_from_slice(&crc.to_le_bytes());
        let e = decode_batch(&b).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::DeserializeFail);
        let known = last_tag(v);
        assert!(
            e.message()
                .contains("unknown record tag 13 for sequence 5 at byte 40")
                && e.message().contains(&format!("1..={known}")),
            "version {v}: {e}"
        );
        // And no older format writes it.
        let e = encode_batch_as(v, 5, std::slice::from_ref(&rec)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidParams);
        assert!(
            e.message().contains("Timeline") && e.message().contains("format 4 on"),
            "version {v}: {e}"
        );
    }
    // A format-3 batch of the other records is written and read as before.
    let counters = Record::Counters {
        next_replica_id: 1,
        next_write_token: 2,
        next_object_seq: 3,
    };
    let b = encode_batch_as(3, 5, std::slice::from_ref(&counters)).unwrap();
    assert_eq!(decode_batch(&b).unwrap().records, [counters]);
}

// ----- recording and applying: a manual clock --------------------------------

/// The primary's wall is set a day ahead after a standby was created from
/// scratch: the journal carries the skew, the standby takes it (its wall
/// and skew are the primary's), and promoted, its snapshot gives a master
/// elsewhere the pin's lifetime the primary's gives, and it judges the pin
/// and a lease at the primary's instants.
#[test]
fn a_scratch_standby_takes_the_wall_step_of_its_manual_primary() {
    let p = primary();
    let s = standby_on(config(), false);
    put(&p, "pinned", 4096, &enable(PIN));
    put(&p, "leased", 4096, &preserve());
    let before = records(&p).len();
    p.set_wall_time(p.now() + DAY as u64).unwrap();
    assert_eq!(p.clock_skew_ms(), -DAY);
    let recs = records(&p);
    assert_eq!(recs.len(), before + 1);
    assert_eq!(recs[before], Record::Timeline { skew_ms: -DAY });
    p.advance_time(1_000).unwrap();
    put(&p, "later", 4096, &enable(PIN));

    catch_up(&p, &s);
    s.set_time(p.now()).unwrap();
    assert_eq!(s.clock_skew_ms(), p.clock_skew_ms());
    assert_eq!(s.wall_time(), p.wall_time());
    // Its snapshot says what the primary's says: a master elsewhere gets
    // the same lifetimes from either.
    let (sp, ss) = (p.snapshot().unwrap(), s.snapshot().unwrap());
    for key in ["pinned", "later"] {
        let (via_p, via_s) = (pin_left_elsewhere(&sp, key), pin_left_elsewhere(&ss, key));
        assert_eq!(via_s, via_p, "{key}");
    }
    s.promote().unwrap();
    assert_eq!(s.clock_skew_ms(), p.clock_skew_ms());
    for m in [&p, &s] {
        m.advance_time(PIN - 1_001).unwrap();
        assert_eq!(m.run_cleanup().expired, 0);
        m.advance_time(2).unwrap();
        assert_eq!(m.run_cleanup().expired, 1);
    }
    assert_eq!(s.now(), p.now());
    assert_eq!(deadline(&s, "later"), deadline(&p, "later"));
    inv(&s);
}

/// A chain: the primary's Timeline records go through a journaling
/// standby, which records them again under the primary's numbering, to
/// the standby behind it.
#[test]
fn a_chain_of_standbys_hands_the_timeline_on() {
    let p = primary();
    let s1 = standby_on(config(), true);
    let s2 = standby_on(config(), false);
    put(&p, "pinned", 4096, &enable(PIN));
    p.set_wall_time(p.now() - 600_000).unwrap();
    p.advance_time(500).unwrap();
    p.set_wall_time(p.now() + DAY as u64).unwrap();
    assert_eq!(timelines(&p), [600_000, -DAY]);
    catch_up(&p, &s1);
    catch_up(&s1, &s2);
    assert_eq!(records(&s1), records(&p));
    for s in [&s1, &s2] {
        assert_eq!(s.clock_skew_ms(), -DAY);
        s.set_time(p.now()).unwrap();
        assert_eq!(s.wall_time(), p.wall_time());
    }
    let snap = p.snapshot().unwrap();
    s2.promote().unwrap();
    assert_eq!(
        pin_left_elsewhere(&s2.snapshot().unwrap(), "pinned"),
        pin_left_elsewhere(&snap, "pinned")
    );
}

/// No Timeline record while the skew does not move: ticks, a wall set to
/// where it is, and a system clock nobody steps (the journals of every
/// other test are unchanged).
#[test]
fn no_timeline_record_while_the_skew_stays() {
    let p = primary();
    put(&p, "a", 4096, &enable(PIN));
    for _ in 0..3 {
        p.run_maintenance_tick();
        p.advance_time(10).unwrap();
    }
    p.set_wall_time(p.now()).unwrap();
    assert_eq!(p.clock_skew_ms(), 0);
    assert_eq!(timelines(&p), []);
    // Stepped, then stepped back: two records, and ticks add none.
    p.set_wall_time(p.now() + 5).unwrap();
    p.set_wall_time(p.now() + 5).unwrap();
    p.run_maintenance_tick();
    p.set_wall_time(p.now()).unwrap();
    p.run_maintenance_tick();
    assert_eq!(timelines(&p), [-5, 0]);

    let sys = master_with(
        journaling(MasterConfig {
            clock: ClockSource::System,
            ..config()
        }),
        1,
        0,
        1 << 20,
    );
    put(&sys, "a", 4096, &preserve());
    for _ in 0..20 {
        sys.run_maintenance_tick();
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(sys.clock_skew_ms(), 0);
    assert_eq!(timelines(&sys), []);
}

/// A standby records nothing of a wall set of its own (its journal
/// numbers its primary's records); promoted, its first tick records the
/// skew it then has.
#[test]
fn a_standby_records_its_own_wall_step_only_once_promoted() {
    let p = primary();
    put(&p, "a", 4096, &preserve());
    let s = standby_on(config(), true);
    catch_up(&p, &s);
    let last = s.journal_stats().last_seq;
    s.set_wall_time(s.now() + 7).unwrap();
    s.run_maintenance_tick();
    assert_eq!(s.journal_stats().last_seq, last);
    s.promote().unwrap();
    s.run_maintenance_tick();
    assert_eq!(timelines(&s), [-7]);
}

/// A restore on the primary records a Reset whose image carries the skew:
/// the journal stands on it, so no Timeline record repeats it. (A manual
/// wall set near its bound is clamped as the clock advances, which moves
/// the skew with no wall set to record it.)
#[test]
fn a_reset_stands_for_the_skew_its_image_carries() {
    let p = primary();
    put(&p, "pinned", 4096, &enable(PIN));
    p.set_wall_time(MAX_INSTANT - 1).unwrap();
    p.advance_time(10_000).unwrap();
    let skew = p.clock_skew_ms();
    assert_eq!(timelines(&p), [skew - 10_000]);
    p.restore(&p.snapshot().unwrap()).unwrap();
    p.run_maintenance_tick();
    assert_eq!(timelines(&p), [skew - 10_000]);
    assert!(matches!(records(&p).last(), Some(Record::Reset { .. })));
    // Moved again: recorded at the next tick.
    p.advance_time(1).unwrap();
    p.run_maintenance_tick();
    assert_eq!(timelines(&p), [skew - 10_000, skew + 1]);
    // A standby from scratch ends on the primary's skew.
    let s = standby_on(config(), false);
    catch_up(&p, &s);
    assert_eq!(s.clock_skew_ms(), skew + 1);
}

/// A skew no timeline and wall within [0, MAX_INSTANT] can have is refused
/// as other out-of-range fields are: DESERIALIZE_FAIL, nothing of the
/// input applied. The extremes that fit are taken.
#[test]
fn a_skew_beyond_max_instant_is_refused_on_apply() {
    let p = primary();
    put(&p, "a", 4096, &preserve());
    let good = records(&p);
    let n = good.len() as u64;
    let s = standby_on(config(), false);
    let mut bad = good.clone();
    bad.push(Record::Timeline { skew_ms: i64::MIN });
    let e = s
        .apply_journal(&encode_batch(1, &bad).unwrap())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DeserializeFail, "{e}");
    assert!(
        e.message()
            .contains(&format!("journal record {} (Timeline)", n + 1))
            && e.message().contains("nothing applied"),
        "{e}"
    );
    assert_eq!((s.applied_seq(), s.clock_skew_ms()), (0, 0));
    for skew_ms in [-(MAX_INSTANT as i64), MAX_INSTANT as i64, -HOUR] {
        let mut ok = good.clone();
        ok.push(Record::Timeline { skew_ms });
        let s = standby_on(config(), false);
        s.apply_journal(&encode_batch(1, &ok).unwrap()).unwrap();
        assert_eq!(s.applied_seq(), n + 1);
        inv(&s);
        s.promote().unwrap();
        inv(&s);
    }
}

// ----- recording and applying: a system clock --------------------------------

/// The operating system's wall clock in ms plus an offset the test steps.
fn stepped_wall() -> (WallSource, Arc<AtomicI64>) {
    let offset = Arc::new(AtomicI64::new(0));
    let o = offset.clone();
    let wall = WallSource::new(move || {
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        (ms + o.load(Ordering::SeqCst)) as u64
    });
    (wall, offset)
}

fn system(wall: WallSource) -> MasterConfig {
    MasterConfig {
        clock: ClockSource::SystemWithWall(wall),
        ..config()
    }
}

/// A system-clock primary started with a wall an hour fast, which was then
/// stepped back to the correct time: its timeline runs an hour ahead of
/// its wall. Its next maintenance tick records the skew, and a standby
/// started from scratch on a correct wall, an hour behind the primary's
/// timeline, takes it: its now is the primary's, and promoted it keeps
/// the pin's lifetime, not an hour more. (A wall read in ms beside a
/// timeline kept in ns reads the skew to within a ms.)
#[test]
fn a_system_primary_records_a_wall_step_at_its_tick() {
    let (wall_p, step_p) = stepped_wall();
    step_p.store(HOUR, Ordering::SeqCst);
    let p = master_with(journaling(system(wall_p)), 2, 0, 1 << 20);
    put(&p, "pinned", 4096, &enable(PIN));
    let (wall_s, _) = stepped_wall();
    let s = standby_on(system(wall_s), false);
    step_p.store(0, Ordering::SeqCst);
    assert!((p.clock_skew_ms() - HOUR).abs() <= 1);
    p.run_maintenance_tick();
    let t = timelines(&p);
    assert_eq!(t.len(), 1, "{t:?}");
    assert!((t[0] - HOUR).abs() <= 1, "{t:?}");
    assert!((s.now() as i64 + HOUR - p.now() as i64).abs() < 1_000);
    catch_up(&p, &s);
    assert!((s.clock_skew_ms() - p.clock_skew_ms()).abs() <= 2);
    assert!((s.now() as i64 - p.now() as i64).abs() < 1_000);
    s.promote().unwrap();
    let left = deadline(&s, "pinned").unwrap() as i64 - s.now() as i64;
    let left_p = deadline(&p, "pinned").unwrap() as i64 - p.now() as i64;
    assert!((left - left_p).abs() < 1_000, "{left} against {left_p}");
}

/// The maintenance thread's ticks (at the configured intervals) record it
/// too (a primary started with its wall a day slow, then corrected: its
/// timeline a day behind the wall), and the standby takes it. (The skew
/// of a wall read in ms may also move by a ms between ticks, which is
/// within the system clock's resolution and not recorded.)
#[test]
fn the_maintenance_thread_records_a_wall_step() {
    let (wall_p, step_p) = stepped_wall();
    step_p.store(-DAY, Ordering::SeqCst);
    let p = master_with(
        journaling(MasterConfig {
            sweep_interval_ms: 5,
            ..system(wall_p)
        }),
        1,
        0,
        1 << 20,
    );
    step_p.store(0, Ordering::SeqCst);
    let seen = p.debug_maintenance_ticks();
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while p.debug_maintenance_ticks() < seen + 2 {
        assert!(std::time::Instant::now() < give_up, "no tick ran");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let t = timelines(&p);
    assert!(t.iter().any(|s| (s + DAY).abs() <= 1), "{t:?}");
    assert!((t.last().unwrap() + DAY).abs() <= 1, "{t:?}");
    let (wall_s, _) = stepped_wall();
    let s = standby_on(system(wall_s), false);
    assert!((s.now() as i64 - DAY - p.now() as i64).abs() < 1_000);
    // What the journal holds now (the thread may append more meanwhile).
    s.apply_journal(&p.journal_read_to_vec(1).unwrap()).unwrap();
    assert!((s.clock_skew_ms() + DAY).abs() <= 2);
    assert!((s.now() as i64 - p.now() as i64).abs() < 1_000);
}

/// A system clock whose wall reads in whole ms jitters its skew by a ms
/// from tick to tick with no wall step: no Timeline record for that (the
/// whole-change review counted 439 in 1 000 ticks).
#[test]
fn a_wall_read_in_ms_jitters_no_timeline_record() {
    let p = master_with(
        journaling(MasterConfig {
            clock: ClockSource::SystemWithWall(WallSource::os()),
            ..config()
        }),
        1,
        0,
        1 << 20,
    );
    for _ in 0..300 {
        p.run_maintenance_tick();
        std::thread::sleep(std::time::Duration::from_micros(137));
    }
    assert_eq!(timelines(&p), Vec::<i64>::new());
}
