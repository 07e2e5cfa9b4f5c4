//! Bounded fuzz of what a standby takes in: mutated journal tails applied
//! to a standby that holds the records before them (docs/CONTRACT.md
//! section 12.3, "Applying"), and mutated snapshots restored on a standby
//! (section 6, "Failure", and 12.3, "Restore on a standby"). Each case
//! checks:
//!
//! - no panic, in the call or after it;
//! - the call fails only with DESERIALIZE_FAIL or (apply only)
//!   INVALID_PARAMS, and DESERIALIZE_FAIL changes nothing: the standby's
//!   state (snapshot image and the state a snapshot omits), its applied
//!   sequence and its own journal are exactly as before;
//! - a restore that succeeds leaves the standby at the snapshot's journal
//!   sequence;
//! - whatever the outcome, the standby then passes `check_invariants()`,
//!   its own snapshot restores on a fresh standby, it promotes, and the
//!   promoted master passes `check_invariants()`.
//!
//! The inputs are structure-aware mutations (fields set to extreme or
//! off-by-one values, records repeated, swapped, dropped or taken from
//! another journal, snapshot images edited and re-encoded) of journals and
//! snapshots of primaries driven by the operation-sequence driver; a
//! quarter of the journal tails also get byte edits, re-framed so they
//! reach the record parser.
//!
//! A failure names the seed, the case and the mutation, and shows the
//! case's inputs when they are short. The seed fixes every choice of the
//! test, but not the seed journals and snapshots exactly: a master picks
//! segments from a random starting point and seeds its key hash per
//! instance, so a rerun with the seed makes the same mutations of
//! equivalent, not identical, journals; the bytes shown are the replay.
//!
//! Environment: `APPLY_FUZZ_CASES` (default 60 000 tails),
//! `RESTORE_FUZZ_CASES` (default 60 000 snapshots), `APPLY_FUZZ_SEED`
//! (both tests; decimal or 0x-hex). The outcome-mix checks at the end need
//! at least 1 000 cases.

mod support;

use mooncake_meta_core::journal::{
    decode_batch, decode_batch_prefix, encode_batch, record, JournalStats, Record, TaskImage,
};
use mooncake_meta_core::snapshot::codec::{decode, encode};
use mooncake_meta_core::snapshot::image::{InFlightRecord, SnapshotImage, TaskRecord};
use mooncake_meta_core::*;
use std::collections::{HashMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use support::entropy::{Entropy, XorShift};
use support::opseq::{self, Driver};

const DEFAULT_APPLY_CASES: u64 = 60_000;
const DEFAULT_RESTORE_CASES: u64 = 60_000;
/// Fewer cases (a replay) skip the outcome-mix checks.
const MIX_CASES: u64 = 1_000;
const DEFAULT_SEED: u64 = 0x0061_7070_6c79_667a;
/// A failure shows a case's inputs when together they are at most this long.
const SHOW_BYTES: usize = 4096;

fn env(name: &str, default: u64) -> u64 {
    let Ok(v) = std::env::var(name) else {
        return default;
    };
    let parsed = match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => v.parse(),
    };
    parsed.unwrap_or_else(|_| panic!("{name}={v}: not a number"))
}

fn seed() -> u64 {
    env("APPLY_FUZZ_SEED", DEFAULT_SEED)
}

/// A case's own entropy: its choices depend on the seed and its number only.
fn case_rng(seed: u64, case: u64) -> XorShift {
    XorShift::new(seed ^ case.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// A primary seeded by `master_seed` (its hashing and placements), so a
/// run's journals and images repeat for its seed.
fn primary_config(master_seed: u64) -> MasterConfig {
    MasterConfig {
        journal_capacity_bytes: 64 << 20,
        seed: Some(master_seed),
        ..opseq::config()
    }
}

/// A standby; one with a journal records what it applies (a chain of
/// standbys), which changes what a restore on it accepts.
fn standby(journal: bool) -> Master {
    Master::new(MasterConfig {
        standby: true,
        journal_capacity_bytes: if journal { 64 << 20 } else { 0 },
        shard_count: 3,
        ..opseq::config()
    })
    .expect("valid config")
}

/// What DESERIALIZE_FAIL must leave exactly as it was.
#[derive(Debug, PartialEq)]
struct Fingerprint {
    image: SnapshotImage,
    omitted: StateDump,
    applied_seq: u64,
    journal: JournalStats,
}

fn fingerprint(m: &Master) -> Fingerprint {
    Fingerprint {
        image: m.capture(),
        omitted: m.debug_dump(),
        applied_seq: m.applied_seq(),
        journal: m.journal_stats(),
    }
}

/// Runs one case's checks; a panic in them (an assertion or the library's)
/// becomes a panic that names the case and shows its inputs when short.
fn replayable<T>(
    what: &str,
    case: u64,
    mutation: &str,
    inputs: [(&str, &[u8]); 2],
    f: impl FnOnce() -> T,
) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| p.downcast_ref::<&str>().copied())
            .unwrap_or("(no message)");
        let short = inputs.iter().map(|(_, b)| b.len()).sum::<usize>() <= SHOW_BYTES;
        let shown: String = inputs
            .iter()
            .map(|(name, b)| {
                let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
                format!(
                    "\n  {name} ({} bytes): {}",
                    b.len(),
                    if short { &hex } else { "..." }
                )
            })
            .collect();
        panic!(
            "{what} case {case}, APPLY_FUZZ_SEED={}: {msg}\n  mutation: {mutation}{shown}",
            seed()
        )
    })
}

// ----- mutations ---------------------------------------------------------------

/// A value next to a boundary (0, `MAX_INSTANT`, `u64::MAX`, `v` ± 1) or
/// a small or random one.
fn interesting(e: &mut XorShift, v: u64) -> u64 {
    match e.below(10) {
        0 => 0,
        1 => u64::MAX,
        2 => u64::MAX - 1,
        3 => MAX_INSTANT,
        4 => MAX_INSTANT - 1,
        5 => v.wrapping_add(1),
        6 => v.wrapping_sub(1),
        7 => u64::from(u32::MAX),
        8 => e.below(64),
        _ => e.next_u64(),
    }
}

/// Sets `v` to an interesting value and says so.
fn set(e: &mut XorShift, what: &str, v: &mut u64) -> String {
    let old = *v;
    *v = interesting(e, old);
    format!("{what} {old} -> {v}")
}

/// One structure-aware edit of a journal tail (never left empty); says
/// what it did. `pool` holds records of every seed journal.
fn mutate_tail(e: &mut XorShift, recs: &mut Vec<Record>, pool: &[Record]) -> String {
    let i = e.below(recs.len() as u64) as usize;
    match e.below(8) {
        0 => {
            recs.insert(i, recs[i].clone());
            format!("record {i} ({}) repeated", recs[i].name())
        }
        1 => {
            let j = e.below(recs.len() as u64) as usize;
            recs.swap(i, j);
            format!("records {i} and {j} swapped")
        }
        2 => {
            recs.insert(i, e.pick(pool).clone());
            format!("a {} of another journal inserted at {i}", recs[i].name())
        }
        3 if recs.len() > 1 => format!("record {i} ({}) dropped", recs.remove(i).name()),
        _ => {
            let name = recs[i].name();
            format!(
                "record {i} ({name}): {}",
                mutate_record(e, &mut recs[i], pool)
            )
        }
    }
}

fn mutate_record(e: &mut XorShift, r: &mut Record, pool: &[Record]) -> String {
    match r {
        Record::ObjectSet { image, discarded } => mutate_object_set(e, image, discarded),
        Record::ObjectStarted {
            size,
            seq,
            write_token,
            replicas,
            ..
        } => match (e.below(4), replicas.first_mut()) {
            (0, _) => set(e, "size", size),
            (1, _) => set(e, "seq", seq),
            (2, _) => set(e, "write_token", write_token),
            (_, Some(x)) => set(e, "first replica id", &mut x.id),
            (_, None) => set(e, "size", size),
        },
        Record::ObjectEnded {
            write_token,
            at,
            completed,
            commit,
            write_over,
            ..
        } => match e.below(5) {
            0 => set(e, "write_token", write_token),
            1 => set(e, "at", at),
            2 => match completed.first_mut() {
                Some(c) => set(e, "first completed id", c),
                None => {
                    completed.push(e.below(50));
                    format!("completed {completed:?}")
                }
            },
            3 => {
                let mut d = 0;
                let what = set(e, "commit", &mut d);
                *commit = Some(Some(d));
                what
            }
            _ => {
                *write_over = !*write_over;
                format!("write_over -> {write_over}")
            }
        },
        Record::Counters {
            next_replica_id,
            next_write_token,
            next_object_seq,
        } => match e.below(3) {
            0 => set(e, "next_replica_id", next_replica_id),
            1 => set(e, "next_write_token", next_write_token),
            _ => set(e, "next_object_seq", next_object_seq),
        },
        Record::Reset { image } => match decode(image) {
            Ok(mut img) => {
                let what = mutate_image(e, &mut img);
                *image = encode(&img);
                format!("its snapshot's {what}")
            }
            // An earlier edit left the snapshot invalid.
            Err(_) => replace(e, r, pool),
        },
        Record::SegmentMounted { base, size, .. } => match e.below(2) {
            0 => set(e, "base", base),
            _ => set(e, "size", size),
        },
        Record::DiscardReleased { at, buffers } => match (e.below(2), buffers.first_mut()) {
            (0, Some(b)) => set(e, "first buffer's len", &mut b.len),
            _ => set(e, "at", at),
        },
        Record::Timeline { skew_ms } => {
            let old = *skew_ms;
            *skew_ms = match e.below(4) {
                0 => i64::MIN,
                1 => skew_ms.wrapping_neg(),
                _ => interesting(e, old as u64) as i64,
            };
            format!("skew_ms {old} -> {skew_ms}")
        }
        _ => replace(e, r, pool),
    }
}

fn replace(e: &mut XorShift, r: &mut Record, pool: &[Record]) -> String {
    *r = e.pick(pool).clone();
    format!("replaced by a {} of another journal", r.name())
}

fn mutate_object_set(
    e: &mut XorShift,
    image: &mut record::ObjectImage,
    discarded: &mut Vec<record::DiscardedBuffer>,
) -> String {
    let first = image.replicas.first().map_or(1, |r| r.id);
    let last = image.replicas.last().map_or(1, |r| r.id);
    match e.below(12) {
        0 => set(e, "seq", &mut image.seq),
        1 => set(e, "write_token", &mut image.write_token),
        2 => set(e, "size", &mut image.size),
        3 => {
            let mut d = 0;
            let what = set(e, "committed", &mut d);
            image.committed = Some(d);
            what
        }
        4 => {
            image.in_flight = match image.in_flight {
                Some(_) => None,
                None => Some(record::InFlightImage { pending: None }),
            };
            format!("in_flight -> {:?}", image.in_flight)
        }
        5 => {
            image.task = match e.below(4) {
                0 => None,
                1 => Some(TaskImage::Promotion { target: last }),
                2 => Some(TaskImage::Move {
                    source: first,
                    target: last,
                }),
                _ => Some(TaskImage::Copy {
                    source: first,
                    targets: image.replicas.iter().skip(1).map(|r| r.id).collect(),
                }),
            };
            format!("task -> {:?}", image.task)
        }
        6 => {
            discarded.clear();
            "discarded buffers dropped".into()
        }
        7 => {
            let buffer = image.replicas.first().and_then(|r| match &r.place {
                record::Placement::Memory { segment, address }
                | record::Placement::NofSsd { segment, address } => Some(record::BufferRef {
                    segment: segment.clone(),
                    address: *address,
                    len: image.size,
                }),
                record::Placement::LocalDisk { .. } => None,
            });
            match (discarded.first_mut(), buffer) {
                (Some(d), _) => set(e, "first discarded buffer's release_at", &mut d.release_at),
                (None, Some(buffer)) => {
                    discarded.push(record::DiscardedBuffer {
                        buffer,
                        release_at: 5,
                    });
                    "first replica's buffer also listed as discarded".into()
                }
                (None, None) => set(e, "size", &mut image.size),
            }
        }
        k => {
            let Some(x) = image.replicas.last_mut() else {
                return set(e, "size", &mut image.size);
            };
            match k {
                8 => set(e, "last replica id", &mut x.id),
                9 => {
                    x.status = match x.status {
                        ReplicaStatus::Complete => ReplicaStatus::Processing,
                        _ => ReplicaStatus::Complete,
                    };
                    format!("last replica's status -> {:?}", x.status)
                }
                10 => {
                    x.role = match x.role {
                        record::ReplicaRole::Write => record::ReplicaRole::TaskTarget,
                        record::ReplicaRole::TaskTarget => record::ReplicaRole::Write,
                    };
                    format!("last replica's role -> {:?}", x.role)
                }
                _ => match &mut x.place {
                    record::Placement::Memory { address, .. }
                    | record::Placement::NofSsd { address, .. } => {
                        set(e, "last replica's address", address)
                    }
                    record::Placement::LocalDisk { client } => {
                        set(e, "last replica's client", client)
                    }
                },
            }
        }
    }
}

/// One edit of a snapshot image (it stays encodable, so it reaches
/// validation); says what it did.
fn mutate_image(e: &mut XorShift, img: &mut SnapshotImage) -> String {
    let kind = e.below(14);
    if kind < 4 || img.objects.is_empty() {
        return match kind % 4 {
            0 => set(e, "next_replica_id", &mut img.next_replica_id),
            1 => set(e, "next_write_token", &mut img.next_write_token),
            2 => set(e, "next_object_seq", &mut img.next_object_seq),
            _ => set(e, "journal_seq", &mut img.journal_seq),
        };
    }
    let i = e.below(img.objects.len() as u64) as usize;
    let ids: Vec<u64> = img.objects[i].replicas.iter().map(|r| r.id).collect();
    let first = ids.first().copied().unwrap_or(0);
    let last = ids.last().copied().unwrap_or(0);
    let o = &mut img.objects[i];
    match kind {
        4 => set(e, &format!("object {i}'s write_token"), &mut o.write_token),
        5 => set(e, &format!("object {i}'s seq"), &mut o.seq),
        6 => match o.replicas.first_mut() {
            Some(r) => {
                r.status ^= 1;
                format!("object {i}'s first replica's status -> {}", r.status)
            }
            None => set(e, &format!("object {i}'s seq"), &mut o.seq),
        },
        7 => {
            let mut d = 0;
            let what = set(e, &format!("object {i}'s soft_pin_deadline"), &mut d);
            o.soft_pin_deadline = Some(d);
            what
        }
        8 => {
            let task = match e.below(3) {
                0 => TaskImage::Promotion { target: last },
                1 => TaskImage::Move {
                    source: first,
                    target: last,
                },
                _ => TaskImage::Copy {
                    source: first,
                    targets: ids.iter().skip(1).copied().collect(),
                },
            };
            let what = format!("object {i} given task {task:?}");
            let t = TaskRecord {
                tenant: o.tenant.clone(),
                key: o.key.clone(),
                task,
            };
            upsert_by_key(&mut img.tasks, t, |t| (&t.tenant, &t.key));
            what
        }
        9 => {
            let mut ttl_ms = 0;
            let what = set(
                e,
                &format!("object {i} in flight, pending pin ttl"),
                &mut ttl_ms,
            );
            let f = InFlightRecord {
                tenant: o.tenant.clone(),
                key: o.key.clone(),
                pending: Some(SoftPinIntent::Enable { ttl_ms }),
            };
            upsert_by_key(&mut img.in_flight, f, |f| (&f.tenant, &f.key));
            what
        }
        10 => {
            img.tasks.clear();
            "tasks dropped".into()
        }
        11 => {
            img.in_flight.clear();
            "writes in flight dropped".into()
        }
        12 => match img.discarded.first_mut() {
            Some(d) => set(e, "first discarded buffer's replica", &mut d.replica),
            None => set(e, "next_replica_id", &mut img.next_replica_id),
        },
        _ => match img.segments.first_mut() {
            Some(s) => set(e, "first segment's size", &mut s.size),
            None => set(e, "next_replica_id", &mut img.next_replica_id),
        },
    }
}

/// Puts `x` in the list sorted by `key`, replacing an entry of that key.
fn upsert_by_key<T>(xs: &mut Vec<T>, x: T, key: fn(&T) -> (&str, &str)) {
    match xs.binary_search_by(|y| key(y).cmp(&key(&x))) {
        Ok(p) => xs[p] = x,
        Err(p) => xs.insert(p, x),
    }
}

// ----- after the call ------------------------------------------------------------

/// The documented way a standby's state can break (docs/CONTRACT.md
/// section 12.3, step 4): apply checks each record against the object it
/// names only — a standby does not index the whole state — so a journal
/// that repeats a replica id, a creation sequence or the write token of a
/// write in flight under two keys (which no primary writes) is installed,
/// and the invariant check or the restore of the standby's own snapshot
/// then fails. Each entry is how such a failure names the repeated value:
/// the text before it, what it is, the text after it.
const REUSE_FAILURES: [(&str, Named, &str); 4] = [
    ("replica id ", Named::ReplicaId, " appears twice"),
    ("replica id ", Named::ReplicaId, " is used by"),
    ("creation sequence ", Named::Seq, " is used by"),
    ("both writes in flight have write token ", Named::Token, ""),
];

/// A repeated write token of two keys in one shard shows as a key whose
/// write in flight is not the one its shard lists under its token.
const TOKEN_IN_SHARD: &str = ": write-in-flight set disagrees";

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Named {
    ReplicaId,
    Seq,
    Token,
}

/// The values the applied records name under more than one key.
#[derive(Default)]
struct Reused {
    seen: HashMap<(Named, u64), record::RecordKey>,
    values: HashSet<(Named, u64)>,
    /// The keys that share a write token with another key.
    token_keys: HashSet<record::RecordKey>,
}

impl Reused {
    fn of<'a>(records: impl IntoIterator<Item = &'a Record>) -> Reused {
        let mut r = Reused::default();
        for rec in records {
            r.add(rec);
        }
        r
    }

    fn note(&mut self, what: Named, v: u64, key: &record::RecordKey) {
        let Some(other) = self.seen.insert((what, v), key.clone()) else {
            return;
        };
        if other != *key {
            self.values.insert((what, v));
            if what == Named::Token {
                self.token_keys.extend([other, key.clone()]);
            }
        }
    }

    fn note_object(&mut self, key: &record::RecordKey, seq: u64, token: u64, ids: &[u64]) {
        self.note(Named::Seq, seq, key);
        self.note(Named::Token, token, key);
        for &id in ids {
            self.note(Named::ReplicaId, id, key);
        }
    }

    fn add(&mut self, rec: &Record) {
        match rec {
            Record::ObjectSet { image, .. } => {
                let ids: Vec<u64> = image.replicas.iter().map(|x| x.id).collect();
                self.note_object(&image.key, image.seq, image.write_token, &ids);
            }
            Record::ObjectStarted {
                key,
                seq,
                write_token,
                replicas,
                ..
            } => {
                let ids: Vec<u64> = replicas.iter().map(|x| x.id).collect();
                self.note_object(key, *seq, *write_token, &ids);
            }
            Record::Reset { image } => {
                // The state becomes the snapshot's, whose objects name
                // values of their own.
                self.seen.clear();
                let img = decode(image).expect("an applied reset decodes");
                for o in &img.objects {
                    let ids: Vec<u64> = o.replicas.iter().map(|r| r.id).collect();
                    let key = record::RecordKey::new(&o.tenant, &o.key);
                    self.note_object(&key, o.seq, o.write_token, &ids);
                }
            }
            _ => {}
        }
    }

    /// Whether `msg` is such a failure naming a value (or, in a shard, a
    /// key) that these records do repeat under two keys.
    fn explain(&self, msg: &str) -> bool {
        let names_value = REUSE_FAILURES.iter().any(|&(before, what, after)| {
            msg.match_indices(before).any(|(at, _)| {
                let rest = &msg[at + before.len()..];
                let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
                rest[digits..].starts_with(after)
                    && rest[..digits]
                        .parse()
                        .is_ok_and(|v| self.values.contains(&(what, v)))
            })
        });
        // The check names a key as it stores it: "tenant\0key", quoted.
        let names_key = self.token_keys.iter().any(|k| {
            msg.contains(&format!(
                "{:?}{TOKEN_IN_SHARD}",
                format!("{}\0{}", k.tenant, k.key)
            ))
        });
        names_value || names_key
    }
}

/// The last sequence a journal numbers (docs/CONTRACT.md section 12.2).
const LAST_SEQ: u64 = u64::MAX - 1;

/// What a standby must still do after any call: pass its invariant check,
/// have its own snapshot restore on a fresh standby (one without a journal,
/// which also takes a snapshot of no journal sequence, section 12.3),
/// promote, and pass the check as a primary. `Err` says what failed first.
fn still_works(m: &Master, journal: bool) -> Result<(), String> {
    m.check_invariants()
        .map_err(|e| format!("invariants: {e}"))?;
    let snap = m.snapshot().map_err(|e| format!("snapshot: {e}"))?;
    standby(false)
        .restore(&snap)
        .map_err(|e| format!("its own snapshot does not restore: {e}"))?;
    match m.promote() {
        Ok(_) => {}
        // Section 12.3, "Promote": a journal cannot number past its last
        // sequence, so that standby stays one.
        Err(e)
            if journal
                && m.applied_seq() == LAST_SEQ
                && e.kind() == ErrorKind::InvalidParams
                && m.is_standby() =>
        {
            return Ok(())
        }
        Err(e) => return Err(format!("promote: {e}")),
    }
    m.check_invariants()
        .map_err(|e| format!("invariants after promote: {e}"))
}

// ----- journal tails ---------------------------------------------------------------

/// The record lists of journals of driven primaries (each starts at 1).
fn seed_journals(seed: u64) -> Vec<Vec<Record>> {
    (0..6)
        .map(|s| {
            let mut d = Driver::with_config(primary_config(seed ^ (0xAB00 + s)));
            d.run(&mut XorShift::new(seed ^ (0xAB00 + s)), 120);
            // Wall steps, recorded as Timeline records: the timeline an
            // hour ahead of the wall, then a day behind it.
            let now = d.m.now();
            d.m.set_wall_time(now.saturating_sub(3_600_000))
                .expect("a manual clock");
            d.m.set_wall_time(now + 86_400_000).expect("a manual clock");
            let b = decode_batch(&d.m.journal_read_to_vec(1).expect("held")).expect("decodes");
            assert_eq!(b.first_seq, 1);
            b.records
        })
        .collect()
}

/// The records an apply call installed: those of `bytes` numbered after
/// `before` up to `after`, the first of each sequence (repeats are skipped).
fn installed(mut bytes: &[u8], before: u64, after: u64) -> Vec<Record> {
    let mut out = Vec::new();
    let mut next = before + 1;
    while let Ok((batch, used)) = decode_batch_prefix(bytes) {
        for (seq, rec) in (batch.first_seq..).zip(batch.records) {
            if seq == next && seq <= after {
                out.push(rec);
                next += 1;
            }
        }
        bytes = &bytes[used..];
    }
    out
}

#[derive(Default, Debug)]
struct ApplyTally {
    applied: u64,
    rejected: u64,
    misfit: u64,
    /// Broken by a documented cross-key repeat: not checked further.
    skipped: u64,
}

fn apply_case(seed: u64, case: u64, journals: &[Vec<Record>], pool: &[Record], t: &mut ApplyTally) {
    let mut e = case_rng(seed, case);
    let j = e.below(journals.len() as u64) as usize;
    let recs = &journals[j];
    let k = e.below(recs.len() as u64) as usize;
    let n = 1 + e.below((recs.len() - k).min(20) as u64) as usize;
    let journal = e.chance(50);
    let mut tail = recs[k..k + n].to_vec();
    let mut mutation: Vec<String> = (0..1 + e.below(2))
        .map(|_| mutate_tail(&mut e, &mut tail, pool))
        .collect();
    let mut bytes = encode_batch(k as u64 + 1, &tail).expect("valid span");
    if e.chance(25) {
        bytes = support::journalmut::mutated(&mut e, &bytes, true);
        mutation.push("byte edits, re-framed".into());
    }
    let mutation = format!(
        "journal {j} applied up to record {k} (standby journal: {journal}), then \
         its records {}..={} with: {}",
        k + 1,
        k + n,
        mutation.join("; ")
    );
    // (Empty input applies nothing.)
    let prefix = match k {
        0 => Vec::new(),
        _ => encode_batch(1, &recs[..k]).expect("valid span"),
    };
    let inputs = [("applied first", &prefix[..]), ("input", &bytes[..])];
    replayable("apply", case, &mutation, inputs, || {
        let m = standby(journal);
        m.apply_journal(&prefix)
            .expect("a primary's journal applies");
        let before = fingerprint(&m);
        match m.apply_journal(&bytes) {
            Ok(_) => t.applied += 1,
            Err(err) if err.kind() == ErrorKind::DeserializeFail => {
                assert!(
                    fingerprint(&m) == before,
                    "DESERIALIZE_FAIL changed the standby: {err}"
                );
                t.rejected += 1;
            }
            Err(err) => {
                assert_eq!(err.kind(), ErrorKind::InvalidParams, "{err}");
                t.misfit += 1;
            }
        }
        if let Err(msg) = still_works(&m, journal) {
            let tail = installed(&bytes, k as u64, m.applied_seq());
            let reused = Reused::of(recs[..k].iter().chain(&tail));
            assert!(reused.explain(&msg), "after the call: {msg}");
            t.skipped += 1;
        }
    });
}

#[test]
fn mutated_journal_tails_apply_or_fail_cleanly() {
    let cases = env("APPLY_FUZZ_CASES", DEFAULT_APPLY_CASES);
    let seed = seed();
    let journals = seed_journals(seed);
    let pool: Vec<Record> = journals.concat();
    let mut t = ApplyTally::default();
    for case in 0..cases {
        apply_case(seed, case, &journals, &pool, &mut t);
    }
    println!(
        "apply fuzz: {cases} tails, {} seed records: {t:?}",
        pool.len()
    );
    if cases < MIX_CASES {
        return;
    }
    // Every outcome is reached, and the cross-key repeats the checks
    // cannot judge stay rare.
    assert!(t.applied > cases / 20, "only {} applied", t.applied);
    assert!(t.rejected > cases / 20, "only {} rejected", t.rejected);
    assert!(t.misfit > cases / 20, "only {} did not fit", t.misfit);
    assert!(t.skipped < cases / 20, "{} of {cases} skipped", t.skipped);
}

// ----- snapshots -----------------------------------------------------------------

/// Snapshot images of driven primaries, four along each run.
fn seed_images(seed: u64) -> Vec<SnapshotImage> {
    let mut out = Vec::new();
    for s in 0..6 {
        let mut d = Driver::with_config(primary_config(seed ^ (0xCD00 + s)));
        let mut e = XorShift::new(seed ^ (0xCD00 + s));
        for _ in 0..4 {
            d.run(&mut e, 60);
            out.push(decode(&d.m.snapshot().expect("snapshot")).expect("decodes"));
        }
    }
    out
}

#[derive(Default, Debug)]
struct RestoreTally {
    restored: u64,
    rejected: u64,
}

fn restore_case(seed: u64, case: u64, images: &[SnapshotImage], t: &mut RestoreTally) {
    let mut e = case_rng(seed, case);
    let base = e.below(images.len() as u64) as usize;
    let mut img = images[base].clone();
    let mutation: Vec<String> = (0..1 + e.below(3))
        .map(|_| mutate_image(&mut e, &mut img))
        .collect();
    let held = e.below(images.len() as u64) as usize;
    let journal = e.chance(50);
    let mutation = format!(
        "image {base} restored on a standby (journal: {journal}) holding image {held}: {}",
        mutation.join("; ")
    );
    let (first, bytes) = (encode(&images[held]), encode(&img));
    let inputs = [("restored first", &first[..]), ("input", &bytes[..])];
    replayable("restore", case, &mutation, inputs, || {
        // The standby holds a state of its own that a failure must keep.
        let m = standby(journal);
        m.restore(&first).expect("a primary's snapshot restores");
        let before = fingerprint(&m);
        match m.restore(&bytes) {
            Ok(_) => {
                assert_eq!(m.applied_seq(), img.journal_seq, "the applied sequence");
                t.restored += 1;
            }
            Err(err) => {
                assert_eq!(err.kind(), ErrorKind::DeserializeFail, "{err}");
                assert!(
                    fingerprint(&m) == before,
                    "DESERIALIZE_FAIL changed the standby: {err}"
                );
                t.rejected += 1;
            }
        }
        // A restore validates what spans objects too, so nothing here is
        // excused as in the apply test.
        if let Err(msg) = still_works(&m, journal) {
            panic!("after the restore: {msg}");
        }
    });
}

#[test]
fn mutated_snapshots_restore_on_a_standby_or_fail_cleanly() {
    let cases = env("RESTORE_FUZZ_CASES", DEFAULT_RESTORE_CASES);
    let seed = seed();
    let images = seed_images(seed);
    let mut t = RestoreTally::default();
    for case in 0..cases {
        restore_case(seed, case, &images, &mut t);
    }
    println!("restore fuzz: {cases} snapshots: {t:?}");
    if cases < MIX_CASES {
        return;
    }
    assert!(t.restored > cases / 10, "only {} restored", t.restored);
    assert!(t.rejected > cases / 10, "only {} rejected", t.rejected);
}
