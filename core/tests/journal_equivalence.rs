//! Journal equivalence (docs/CONTRACT.md section 12): random operation
//! sequences (every operation of the sequence driver in `support/opseq.rs`
//! — writes of every shape and soft-pin action, upserts, End/Revoke,
//! copy/move/promotion, local-disk replicas, removals, batches, mounts and
//! unmounts, restores, clock moves, cleanup, eviction, sweep and discard
//! release at random instants of a manual clock — plus group retention)
//! run on a primary with a journal; after every step the journal is applied
//! to a standby in random chunks, with repeats, and the two must agree on:
//!
//! - the snapshot image, leases zeroed (and the capture instants);
//! - the clock's skew (timeline − wall): the primary's wall is stepped at
//!   random steps, which its journal records (`Timeline`), and a standby
//!   takes the primary's skew from it;
//! - the state a snapshot omits ([`MasterCore::debug_dump`]): writes in
//!   flight with their pending intents, replica roles, tasks, discarded
//!   buffers with their release instants, allocator blocks and the gauges.
//!
//! Every other sequence, the standby journals what it applies and a second
//! standby applies that journal (a chain), and must agree with the primary
//! too. At the end the (first) standby is promoted and every write in flight is ended on
//! both masters at the same instant: the results and the states must agree
//! again (a promoted standby takes over in-flight writes).
//!
//! A second test starts a standby mid-sequence from a snapshot of the
//! primary (a restore on a standby, as a late HA standby does): it must
//! agree with the primary in the same way after every later step, and at
//! the end it is promoted and the writes in flight End on both (their
//! pending pins, carried by the snapshot, commit alike).
//!
//! Environment: `JOURNAL_EQ_CASES` (default 10 000 sequences), `JOURNAL_EQ_SEED`.

mod support;

use mooncake_meta_core::journal::{decode_batch, encode_batch};
use mooncake_meta_core::snapshot::image::SnapshotImage;
use mooncake_meta_core::*;
use support::entropy::{Entropy, XorShift};
use support::opseq::{self, Driver, Op};

const DEFAULT_CASES: u64 = 10_000;
const DEFAULT_SEED: u64 = 0x6a6f_7572_6e61_6c21;
/// Steps per sequence: short sequences, many of them.
const MAX_STEPS: u64 = 40;
/// A day in ms.
const DAY: u64 = 86_400_000;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A primary seeded by `master_seed` (its hashing and placements: a case
/// replays exactly).
fn primary_config(master_seed: u64) -> MasterConfig {
    MasterConfig {
        journal_capacity_bytes: 64 << 20,
        seed: Some(master_seed),
        ..opseq::config()
    }
}

fn standby_config(chained: bool, master_seed: u64) -> MasterConfig {
    MasterConfig {
        standby: true,
        // Half the standbys journal what they apply (a chain of standbys).
        journal_capacity_bytes: if chained { 64 << 20 } else { 0 },
        // Another shard count and seed: nothing may depend on where a key lands.
        shard_count: 3,
        seed: Some(!master_seed),
        ..opseq::config()
    }
}

/// The masters' seed of case `case` of a run seeded by `seed`.
fn master_seed(seed: u64, case: u64) -> u64 {
    seed ^ case.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

/// The snapshot image with what legitimately differs zeroed: leases (reads
/// are not journaled) and the capture instants.
fn image(m: &Master) -> SnapshotImage {
    let mut img = snapshot::codec::decode(&m.snapshot().unwrap()).unwrap();
    img.created_at = 0;
    img.wall_at_capture = None;
    for o in &mut img.objects {
        o.lease = 0;
    }
    for g in &mut img.groups {
        g.lease = 0;
    }
    img
}

/// The lines where two renderings differ, with a little context.
fn diff(a: &str, b: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let first = a
        .iter()
        .zip(&b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let from = first.saturating_sub(12);
    let to = |v: &Vec<&str>| v[from.min(v.len())..(first + 6).min(v.len())].join("\n");
    format!("primary:\n{}\n--- standby:\n{}", to(&a), to(&b))
}

fn compare(p: &Master, s: &Master, what: &str) -> Result<(), String> {
    let (mut ip, mut is) = (image(p), image(s));
    if !s.is_standby() {
        // A promoted master numbers its own records (if it journals).
        ip.journal_seq = 0;
        is.journal_seq = 0;
    }
    if p.clock_skew_ms() != s.clock_skew_ms() {
        return Err(format!(
            "{what}: skews differ: primary {} ms, standby {} ms",
            p.clock_skew_ms(),
            s.clock_skew_ms()
        ));
    }
    if ip != is {
        return Err(format!(
            "{what}: snapshot images differ\n{}",
            diff(&format!("{ip:#?}"), &format!("{is:#?}"))
        ));
    }
    let (dp, ds) = (p.debug_dump(), s.debug_dump());
    if dp != ds {
        return Err(format!(
            "{what}: internal state differs\n{}",
            diff(&format!("{dp:#?}"), &format!("{ds:#?}"))
        ));
    }
    s.check_invariants()
        .map_err(|e| format!("{what}: standby invariants: {e}"))
}

/// Brings the standby up to the primary's last record: the journal from a
/// little before the standby's position (repeats), split into random
/// batches, applied in one or more calls.
fn catch_up(p: &Master, s: &Master, e: &mut XorShift) -> Result<(), String> {
    let applied = s.applied_seq();
    let back = e.below(4);
    let from = (applied + 1).saturating_sub(back).max(1);
    let stats = p.journal_stats();
    let from = from.max(stats.first_seq);
    let bytes = p
        .journal_read_to_vec(from)
        .map_err(|e| format!("journal read from {from}: {e}"))?;
    if bytes.is_empty() {
        return Ok(());
    }
    let batch = decode_batch(&bytes).map_err(|e| format!("decode: {e}"))?;
    let mut calls: Vec<Vec<u8>> = vec![Vec::new()];
    let mut i = 0;
    while i < batch.records.len() {
        let n = 1 + e.below((batch.records.len() - i) as u64) as usize;
        let chunk = encode_batch(batch.first_seq + i as u64, &batch.records[i..i + n])
            .map_err(|e| format!("encode: {e}"))?;
        if e.chance(40) {
            calls.push(Vec::new());
        }
        calls.last_mut().unwrap().extend(chunk);
        i += n;
    }
    for c in &calls {
        s.apply_journal(c).map_err(|e| format!("apply: {e}"))?;
    }
    if s.applied_seq() != batch.last_seq() {
        return Err(format!(
            "applied up to {} of {}",
            s.applied_seq(),
            batch.last_seq()
        ));
    }
    // A repeat of everything read is a no-op.
    if e.chance(10) {
        let r = s
            .apply_journal(&bytes)
            .map_err(|e| format!("repeat: {e}"))?;
        if r.records_applied != 0 {
            return Err(format!("a repeat applied {} records", r.records_applied));
        }
    }
    p.journal_release(s.applied_seq())
        .map_err(|e| format!("release: {e}"))?;
    Ok(())
}

/// Group retention, which the sequence driver does not exercise.
fn retention_op(m: &Master, e: &mut XorShift) {
    let tenant = *e.pick(&[DEFAULT_TENANT, "t1"]);
    const CHOICES: [&[&str]; 3] = [&["g"], &["h"], &["g", "h"]];
    let groups = CHOICES[e.below(3) as usize];
    if e.chance(60) {
        let ttl = *e.pick(&[1, 100, 5_000, 60_000]);
        let _ = m.retain_groups(tenant, groups, ttl);
    } else {
        let _ = m.release_groups(tenant, groups);
    }
}

/// In three cases of four the primary's eviction runs keep 1–3
/// candidates of a side and read the rest again as their passes reach
/// them (docs/CONTRACT.md §5); what they evict, and so what they record,
/// is the same.
fn eviction_keep(m: &Master, case: u64) {
    m.debug_set_eviction_keep(match case % 4 {
        0 => None,
        k => Some(k as usize),
    });
}

fn run_case(case: u64, seed: u64) -> Result<(), String> {
    let mut e = XorShift::new(seed ^ case.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let ms = master_seed(seed, case);
    let mut d = Driver::with_config(primary_config(ms));
    eviction_keep(&d.m, case);
    let chained = case % 2 == 1;
    let s = Master::new(standby_config(chained, ms)).unwrap();
    // With a journaling standby, a standby of it too.
    let s2 = chained.then(|| Master::new(standby_config(false, ms.rotate_left(1))).unwrap());
    let steps = 1 + e.below(MAX_STEPS);
    let mut log: Vec<String> = Vec::new();
    // Wall steps of the primary, from their own entropy (the operation
    // sequences stay those of the seed): skews from a day behind to half
    // the clocks' start ahead, so a standby's manual wall, set that far
    // from its own instant, stays unclamped.
    let mut walls = XorShift::new(seed ^ case.wrapping_mul(0x5851_F42D_4C95_7F2D) ^ 0x7A11);
    for step in 0..steps {
        if walls.chance(10) {
            let skew = walls.below(DAY + opseq::T0 / 2) as i64 - DAY as i64;
            let wall = (d.m.now() as i64 - skew) as u64;
            d.m.set_wall_time(wall)
                .map_err(|e| format!("step {step}: set_wall_time: {e}"))?;
            log.push(format!("wall step: skew {skew}"));
        }
        if e.chance(8) {
            retention_op(&d.m, &mut e);
            log.push("retention".into());
        } else {
            let op = Op::draw(&mut e);
            log.push(format!("{op:?}"));
            d.step(&op)
                .map_err(|m| format!("step {step}: driver: {m}"))?;
        }
        catch_up(&d.m, &s, &mut e)
            .and_then(|()| compare(&d.m, &s, &format!("step {step}")))
            .and_then(|()| match &s2 {
                Some(s2) => catch_up(&s, s2, &mut e)
                    .and_then(|()| compare(&d.m, s2, &format!("step {step}, second standby"))),
                None => Ok(()),
            })
            .map_err(|m| format!("{m}\nops (last is the step): {log:#?}"))?;
    }
    promote_and_end(&d.m, &s, chained, &mut e, &log)
}

/// Promotes `s` at the primary's instant and ends (or revokes) every write
/// in flight on both at the same instant: the results and the states must
/// agree, pending soft pins committed alike (docs/CONTRACT.md section 12.3
/// promote).
fn promote_and_end(
    p: &Master,
    s: &Master,
    chained: bool,
    e: &mut XorShift,
    log: &[String],
) -> Result<(), String> {
    s.set_time(p.now()).map_err(|e| e.to_string())?;
    let report = s.promote().map_err(|e| format!("promote: {e}"))?;
    let img = p.capture();
    let dump = p.debug_dump();
    let in_flight: Vec<_> = dump
        .objects
        .iter()
        .filter(|o| o.in_flight.is_some())
        .collect();
    if report.writes_in_flight != in_flight.len() as u64 {
        return Err(format!(
            "promote took over {} writes, the primary has {}",
            report.writes_in_flight,
            in_flight.len()
        ));
    }
    for o in in_flight {
        let rec = img
            .objects
            .iter()
            .find(|r| r.tenant == o.tenant && r.key == o.key)
            .ok_or("an in-flight object is not in the snapshot")?;
        let k = Key::scoped(&o.tenant, &o.key);
        let sel = *e.pick(&[ReplicaSelector::All, ReplicaSelector::Memory]);
        let (rp, rs) = if e.chance(80) {
            (
                p.put_end(rec.writer, k, sel, Some(rec.write_token)),
                s.put_end(rec.writer, k, sel, Some(rec.write_token)),
            )
        } else {
            (
                p.put_revoke(rec.writer, k, sel, Some(rec.write_token)),
                s.put_revoke(rec.writer, k, sel, Some(rec.write_token)),
            )
        };
        if rp.as_ref().map_err(|e| e.kind()) != rs.as_ref().map_err(|e| e.kind()) {
            return Err(format!(
                "end of {k:?} after promote: primary {rp:?}, promoted standby {rs:?}\nops: {log:#?}"
            ));
        }
    }
    if chained {
        // The promoted master's own numbering goes on after what it applied.
        let stats = s.journal_stats();
        if stats.last_seq < report.applied_seq {
            return Err(format!(
                "promoted journal at {} before the applied {}",
                stats.last_seq, report.applied_seq
            ));
        }
        let next = s
            .journal_read_to_vec(report.applied_seq + 1)
            .map_err(|e| format!("promoted journal read: {e}"))?;
        if !next.is_empty() && decode_batch(&next).unwrap().first_seq != report.applied_seq + 1 {
            return Err("the promoted journal does not continue at applied_seq + 1".into());
        }
    }
    compare(p, s, "after promote and the ends").map_err(|m| format!("{m}\nops: {log:#?}"))
}

#[test]
fn a_standby_applying_the_journal_equals_the_primary() {
    let cases = env("JOURNAL_EQ_CASES", DEFAULT_CASES);
    let seed = env("JOURNAL_EQ_SEED", DEFAULT_SEED);
    for case in 0..cases {
        if let Err(msg) = run_case(case, seed) {
            panic!("case {case} (seed {seed:#x}): {msg}");
        }
    }
}

/// A second standby started mid-sequence from a snapshot of the primary
/// (docs/CONTRACT.md section 12.3: restored on a standby, it installs the
/// snapshot verbatim — writes in flight with their pending intents, tasks,
/// discarded buffers — and resumes at the snapshot's journal sequence + 1)
/// agrees with the primary after every later step, on the snapshot image
/// (leases zeroed) and on the internal state; at the end it is promoted and
/// the writes in flight End (or are revoked) on it as on the primary, their
/// pending pins committed alike.
/// Returns which kinds of format-5 state the restored snapshot held (writes
/// in flight, tasks, discarded buffers).
fn run_late_case(case: u64, seed: u64) -> Result<[bool; 3], String> {
    let mut e = XorShift::new(seed ^ case.wrapping_mul(0xD1B5_4A32_D192_ED03));
    let ms = master_seed(seed, case);
    let mut d = Driver::with_config(primary_config(ms));
    eviction_keep(&d.m, case);
    let chained = case % 2 == 1;
    let mut late: Option<Master> = None;
    let mut held = [false; 3];
    let steps = 1 + e.below(MAX_STEPS);
    let join_at = e.below(steps);
    let mut log: Vec<String> = Vec::new();
    for step in 0..steps {
        if step == join_at {
            let s = Master::new(standby_config(chained, ms)).unwrap();
            let snap = d.m.snapshot().map_err(|e| e.to_string())?;
            let img = snapshot::codec::decode(&snap).map_err(|e| e.to_string())?;
            held = [
                !img.in_flight.is_empty(),
                !img.tasks.is_empty(),
                !img.discarded.is_empty(),
            ];
            s.restore(&snap).map_err(|e| format!("restore: {e}"))?;
            compare(&d.m, &s, &format!("step {step}, restored"))
                .map_err(|m| format!("{m}\nops before the restore: {log:#?}"))?;
            late = Some(s);
        }
        if e.chance(8) {
            retention_op(&d.m, &mut e);
            log.push("retention".into());
        } else {
            let op = Op::draw(&mut e);
            log.push(format!("{op:?}"));
            d.step(&op)
                .map_err(|m| format!("step {step}: driver: {m}"))?;
        }
        if let Some(s) = &late {
            catch_up(&d.m, s, &mut e)
                .and_then(|()| compare(&d.m, s, &format!("step {step}, late standby")))
                .map_err(|m| format!("{m}\nops (last is the step): {log:#?}"))?;
        }
    }
    match &late {
        Some(s) => promote_and_end(&d.m, s, chained, &mut e, &log).map(|()| held),
        None => Ok(held),
    }
}

#[test]
fn a_standby_started_from_a_snapshot_catches_up() {
    let cases = env("JOURNAL_EQ_CASES", DEFAULT_CASES) / 5;
    let seed = env("JOURNAL_EQ_SEED", DEFAULT_SEED);
    let mut held = [0u64; 3];
    for case in 0..cases {
        match run_late_case(case, seed) {
            Ok(h) => (0..3).for_each(|i| held[i] += u64::from(h[i])),
            Err(msg) => panic!("late case {case} (seed {seed:#x}): {msg}"),
        }
    }
    println!(
        "late standbys restored from snapshots with writes in flight: {}, tasks: {}, \
         discarded buffers: {} (of {cases})",
        held[0], held[1], held[2]
    );
    // Not vacuous: the restored snapshots held every kind of that state.
    if cases >= 100 {
        assert!(held.iter().all(|&n| n > 0), "{held:?}");
    }
}
