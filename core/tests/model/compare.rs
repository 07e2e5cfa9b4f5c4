//! After every step: the master's invariants (docs/CONTRACT.md §8) hold, and its
//! whole observable state equals the model's — every key's replicas (ids,
//! kinds, status, locations), writer, size, put_start, lease, committed
//! deadline, pending flag, hard pin, group and token; group leases; the
//! creation order; segments and their allocated bytes; discarded bytes; the
//! key count, the soft-pin gauge and the index's live registrations. Reads
//! here use only side-effect-free introspection (`capture`, metrics).

use super::harness::check_eq;
use super::ops::KEYS;
use super::reference::*;
use mooncake_meta_core::snapshot::image::{LocationRecord, ReplicaRecord};
use mooncake_meta_core::{Key, Master, Pool};

fn record(model: &Model, r: &Rep, size: u64) -> ReplicaRecord {
    ReplicaRecord {
        id: r.id,
        kind: r.kind as u8,
        status: r.complete as u8,
        location: match r.loc {
            Loc::Buf { seg, addr } => LocationRecord::Buffer {
                segment: model
                    .seg_by_id(seg)
                    .map_or("?".into(), |s| s.name.to_string()),
                address: addr,
                len: size,
            },
            Loc::Disk { client } => LocationRecord::LocalDisk { client },
        },
    }
}

pub fn compare(m: &Master, model: &mut Model) -> Res {
    m.check_invariants()
        .map_err(|e| format!("check_invariants: {e}"))?;
    check_eq("clock", m.now(), model.now)?;
    let img = m.capture();

    let mut want_segs: Vec<_> = model
        .segs
        .iter()
        .map(|s| (s.name.to_string(), s.owner, s.pool as u8, s.base, s.size))
        .collect();
    want_segs.sort();
    let got_segs: Vec<_> = img
        .segments
        .iter()
        .map(|s| (s.name.clone(), s.owner, s.pool, s.base, s.size))
        .collect();
    check_eq("segments", got_segs, want_segs)?;

    let want_groups: Vec<_> = model
        .glease
        .iter()
        .map(|((t, g), l)| (t.clone(), g.clone(), *l))
        .collect();
    let got_groups: Vec<_> = img
        .groups
        .iter()
        .map(|g| (g.tenant.clone(), g.name.clone(), g.lease))
        .collect();
    check_eq("groups and their leases", got_groups, want_groups)?;

    let want_retained: Vec<_> = model
        .retained
        .iter()
        .map(|((t, g), d)| (t.clone(), g.clone(), *d))
        .collect();
    let got_retained: Vec<_> = img
        .retention
        .iter()
        .map(|r| (r.tenant.clone(), r.group.clone(), r.deadline))
        .collect();
    check_eq("group retention deadlines", got_retained, want_retained)?;
    for ((t, g), &d) in &model.retained {
        let want = (model.now < d).then_some(d);
        check_eq(
            "group_retention_deadline",
            m.group_retention_deadline(t, g)
                .map_err(|e| e.to_string())?,
            want,
        )?;
    }

    let got_keys: Vec<(String, String)> = img
        .objects
        .iter()
        .map(|o| (o.tenant.clone(), o.key.clone()))
        .collect();
    let mut want_keys: Vec<(String, String)> = model
        .objs
        .keys()
        .map(|&k| (KEYS[k].0.to_owned(), KEYS[k].1.to_owned()))
        .collect();
    want_keys.sort();
    check_eq("keys", got_keys, want_keys)?;

    let mut seqs: Vec<(u64, u64)> = Vec::new();
    for rec in &img.objects {
        let k = KEYS
            .iter()
            .position(|(t, n)| *t == rec.tenant && *n == rec.key)
            .unwrap();
        if model.objs[&k].token.is_none() {
            model.adopt_token(k, rec.write_token)?;
        }
        let o = &model.objs[&k];
        let what = |f: &str| format!("{}/{} {f}", rec.tenant, rec.key);
        check_eq(&what("writer"), rec.writer, o.writer)?;
        check_eq(&what("size"), rec.size, o.size)?;
        check_eq(&what("put_start"), rec.put_start, o.put_start)?;
        check_eq(&what("lease"), rec.lease, o.lease)?;
        check_eq(
            &what("committed deadline"),
            rec.soft_pin_deadline,
            o.committed,
        )?;
        check_eq(&what("hard pin"), rec.hard_pin, o.hard_pin)?;
        check_eq(&what("group"), rec.group.as_deref(), o.group.as_deref())?;
        check_eq(&what("write token"), Some(rec.write_token), o.token)?;
        let mut want: Vec<ReplicaRecord> =
            o.reps.iter().map(|r| record(model, r, o.size)).collect();
        want.sort_by_key(|r| r.id);
        check_eq(&what("replicas"), &rec.replicas, &want)?;
        let pending = m
            .has_pending_soft_pin(Key::scoped(KEYS[k].0, KEYS[k].1))
            .map_err(|e| format!("has_pending_soft_pin: {e}"))?;
        check_eq(&what("pending"), pending, o.pending.is_some())?;
        seqs.push((o.seq, rec.seq));
    }
    // Creation order (eviction's tie-break) matches the model's.
    seqs.sort();
    if seqs.windows(2).any(|w| w[0].1 >= w[1].1) {
        return Err(format!("creation order differs: (model, real) = {seqs:?}"));
    }

    let met = m.metrics();
    check_eq("key_count", met.key_count, model.objs.len() as u64)?;
    check_eq("soft_pin_key_count", met.soft_pin_key_count, model.gauge())?;
    check_eq(
        "live index registrations",
        m.index_sizes().1 as u64,
        model.gauge(),
    )?;
    let mut want_alloc: Vec<(String, u64)> = model
        .segs
        .iter()
        .map(|s| (s.name.to_string(), s.allocated()))
        .collect();
    want_alloc.sort();
    let mut got_alloc: Vec<(String, u64)> = met
        .segments
        .iter()
        .map(|s| (s.name.clone(), s.allocated))
        .collect();
    got_alloc.sort();
    check_eq("allocated bytes per segment", got_alloc, want_alloc)?;
    let (cap, used) = model.memory_usage();
    check_eq(
        "memory capacity/allocated",
        (met.memory_capacity_bytes, met.memory_allocated_bytes),
        (cap, used),
    )?;
    let nof: u64 = model
        .segs
        .iter()
        .filter(|s| s.pool == Pool::NofSsd)
        .map(Seg::allocated)
        .sum();
    check_eq("nof allocated", met.nof_ssd_allocated_bytes, nof)?;
    let discarded: u64 = model.disc.iter().map(|d| d.len).sum();
    check_eq("discarded bytes", met.discarded_staging_bytes, discarded)?;
    Ok(())
}
