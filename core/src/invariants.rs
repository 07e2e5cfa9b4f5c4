//! `check_invariants()`: every invariant of docs/CONTRACT.md §8, checked against a
//! quiescent master (no cleanup batch in flight). Locks are taken in the
//! documented order: all shard read locks ascending, then the segment
//! table, then the index.

use crate::master::entry_is_valid;
use crate::master::MasterCore;
use crate::object::{Role, Task};
use crate::segment::{BlockId, BufferOwner};
use crate::soft_pin::PinTarget;
use hashbrown::{HashMap, HashSet};
use std::sync::atomic::Ordering;

impl MasterCore {
    /// Checks docs/CONTRACT.md §8; `Err` describes the first violation found.
    pub fn check_invariants(&self) -> Result<(), String> {
        // A rebuild the last index change asked for runs first (it takes
        // shard locks itself): the heap bound holds once it has.
        self.settle_index();
        let guards: Vec<_> = self.shards.iter().map(|s| s.state.read()).collect();
        // Lock order: the retention registry after the shards, before the
        // segment table.
        self.check_retention_invariants()?;
        let table = self.segments.read();
        table.check_indexes()?;
        let entries = self.index.entries();
        let idx = self.index.stats();

        let mut committed: Vec<(PinTarget, String)> = Vec::new();
        let mut replica_ids: HashSet<u64> = HashSet::new();
        // (segment, addr) -> what the metadata says the buffer there is.
        let mut buffers: HashMap<(u32, u64), Held> = HashMap::new();
        for (si, st) in guards.iter().enumerate() {
            st.check_index().map_err(|e| format!("shard {si}: {e}"))?;
            // Append before free: a deferred free never outlives the
            // operation that recorded it.
            if !st.pending_frees.is_empty() {
                return Err(format!(
                    "shard {si}: {} buffer(s) freed but not returned to their allocator",
                    st.pending_frees.len()
                ));
            }
            let mut pinned = 0i64;
            for (slot, obj) in st.iter_slots() {
                let key = crate::key::scoped(st.key_of(obj));
                let hash = self.hasher.hash_scoped(&key);
                if self.shard_index_of(hash) != si {
                    return Err(format!("{key:?} is in shard {si}, hashes elsewhere"));
                }
                // A standby holds one between two records of an unmount
                // that drops a client's segments one by one (promote erases
                // it, docs/CONTRACT.md §12.3).
                if obj.replicas.is_empty() && !self.is_standby() {
                    return Err(format!("{key:?} has no replica"));
                }
                if obj.committed().is_some() {
                    pinned += 1;
                    let at = PinTarget::new(si as u32, slot);
                    committed.push((at, key.to_string()));
                }
                // A pending intent lives in the write's in-flight entry, so
                // it never outlives the write.
                let in_flight = obj.write_in_flight();
                if in_flight
                    != st
                        .in_flight
                        .get(obj.write_token)
                        .is_some_and(|w| w.slot == slot)
                {
                    return Err(format!(
                        "{key:?}: write-in-flight set disagrees (in flight: {in_flight})"
                    ));
                }
                // What the lookups below and the operations rely on (binary
                // searches, merge walks): replicas strictly increasing by
                // id, a copy's targets strictly increasing.
                if obj.replicas.windows(2).any(|w| w[0].id >= w[1].id) {
                    return Err(format!("{key:?}: replica ids not strictly increasing"));
                }
                if let Some(Task::Copy { targets, .. }) = obj.task() {
                    if targets.is_empty() {
                        return Err(format!("{key:?}: a copy without targets"));
                    }
                    if targets.windows(2).any(|w| w[0] >= w[1]) {
                        return Err(format!("{key:?}: copy targets not strictly increasing"));
                    }
                }
                for r in &obj.replicas {
                    if !replica_ids.insert(r.id) {
                        return Err(format!("replica id {} appears twice", r.id));
                    }
                    if r.id >= self.next_replica_id.load(Ordering::Relaxed) {
                        return Err(format!("replica id {} is not below the counter", r.id));
                    }
                    if r.role == Role::TaskTarget && obj.task().is_none_or(|t| !t.uses(r.id)) {
                        return Err(format!("{key:?}: task target {} without its task", r.id));
                    }
                    if r.has_buffer() {
                        if table.get(r.segment).is_none() {
                            return Err(format!(
                                "{key:?}: replica {} on unmounted segment {}",
                                r.id, r.segment
                            ));
                        }
                        let held = Held {
                            len: obj.size,
                            block: r.block,
                            by: Holder::Replica(BufferOwner::object(hash)),
                        };
                        if buffers.insert((r.segment, r.addr), held).is_some() {
                            return Err(format!(
                                "two buffers at {:#x} on segment {}",
                                r.addr, r.segment
                            ));
                        }
                    }
                }
            }
            // The per-shard gauges (summed by the metrics) are exact per shard.
            if st.keys != st.len() as i64 {
                return Err(format!(
                    "shard {si}: key count {} != {} objects",
                    st.keys,
                    st.len()
                ));
            }
            let gauge = self.shards[si].soft_pin_keys.load(Ordering::Relaxed);
            if gauge != pinned {
                return Err(format!(
                    "shard {si}: soft-pin gauge {gauge} != {pinned} objects with a committed deadline"
                ));
            }
            let discarded: i64 = st.discarded.iter().map(|d| d.len as i64).sum();
            if st.discarded_bytes != discarded {
                return Err(format!(
                    "shard {si}: discarded-bytes gauge {} != {discarded} bytes of discarded buffers",
                    st.discarded_bytes
                ));
            }
            if st.in_flight.len() > st.len() {
                return Err(format!("shard {si}: more writes in flight than objects"));
            }
            for d in &st.discarded {
                let held = Held {
                    len: d.len,
                    block: d.block,
                    by: Holder::Discarded { shard: si },
                };
                if table.get(d.segment).is_some()
                    && buffers.insert((d.segment, d.addr), held).is_some()
                {
                    return Err(format!(
                        "discarded buffer {:#x} on segment {} is also live",
                        d.addr, d.segment
                    ));
                }
            }
        }
        // Deadline index: each committed deadline has exactly one valid
        // entry (the record's shard and slot, version and deadline), and
        // `live` counts them. (After 2^32 version changes of one slot a
        // stale entry of that slot could match again, docs/CONTRACT.md
        // §4.8: harmless for cleanup, reported here.)
        if entries.len() != idx.heap_len {
            return Err(format!(
                "index rebuild running: {} of {} heap entries detached",
                idx.heap_len - entries.len().min(idx.heap_len),
                idx.heap_len
            ));
        }
        if idx.live != committed.len() {
            return Err(format!(
                "{} registrations for {} committed deadlines",
                idx.live,
                committed.len()
            ));
        }
        let mut valid: HashMap<PinTarget, usize> = HashMap::new();
        for e in &entries {
            let Some(st) = guards.get(e.target.shard() as usize) else {
                return Err(format!("index entry {e:?} names no shard"));
            };
            if entry_is_valid(st, e) {
                *valid.entry(e.target).or_default() += 1;
            }
        }
        for (target, key) in &committed {
            match valid.get(target).copied().unwrap_or(0) {
                1 => {}
                n => {
                    return Err(format!(
                        "{key:?}: {n} valid index entries for its committed deadline"
                    ))
                }
            }
        }
        if idx.heap_len > 4096.max(2 * idx.live) {
            return Err(format!(
                "heap {} exceeds max(4096, 2 × {})",
                idx.heap_len, idx.live
            ));
        }

        // Allocator: allocated bytes == live replica buffers + unreleased
        // discarded buffers, and the blocks agree with them one for one:
        // same address, length and block id, a replica's block owned by
        // its object, a discarded buffer's by an object of the shard that
        // lists it (unmount looks for it there).
        for seg in table.iter() {
            let mine: Vec<(u64, Held)> = buffers
                .iter()
                .filter(|((s, _), _)| *s == seg.id)
                .map(|((_, a), h)| (*a, *h))
                .collect();
            let expected: u64 = mine.iter().map(|b| b.1.len).sum();
            if seg.allocated_bytes() != expected {
                return Err(format!(
                    "segment '{}': allocator says {} bytes, replicas + discarded hold {expected}",
                    seg.name,
                    seg.allocated_bytes()
                ));
            }
            let live = seg.live_buffers();
            if live.len() != mine.len() {
                return Err(format!(
                    "segment '{}': {} live buffers, metadata holds {}",
                    seg.name,
                    live.len(),
                    mine.len()
                ));
            }
            let mut prev_end = seg.base;
            for b in &live {
                let (addr, len) = (b.address, b.len);
                if addr < prev_end || addr + len > seg.base + seg.size {
                    return Err(format!(
                        "segment '{}': buffer {addr:#x}+{len} overlaps or is out of range",
                        seg.name
                    ));
                }
                prev_end = addr + len;
                let Some(held) = buffers.get(&(seg.id, addr)) else {
                    return Err(format!(
                        "segment '{}': buffer {addr:#x}+{len} is held by no replica \
                         and is not discarded",
                        seg.name
                    ));
                };
                if held.len != len || held.block != b.block {
                    return Err(format!(
                        "segment '{}': buffer {addr:#x} is {len} bytes in block {}, \
                         the metadata says {} bytes in block {}",
                        seg.name,
                        b.block.index(),
                        held.len,
                        held.block.index()
                    ));
                }
                let owned = match held.by {
                    Holder::Replica(owner) => b.owner == owner,
                    Holder::Discarded { shard } => {
                        self.shard_index_of(b.owner.object_hash()) == shard
                    }
                };
                if !owned {
                    return Err(format!(
                        "segment '{}': buffer {addr:#x} records owner {:?}, held as {:?}",
                        seg.name, b.owner, held.by
                    ));
                }
            }
        }
        Ok(())
    }

    /// Committed soft-pin deadline of a key (`None` = none committed; may be
    /// stored-but-expired until normalised).
    pub fn soft_pin_deadline(&self, k: crate::Key<'_>) -> crate::Result<Option<u64>> {
        k.validate()?;
        let (hash, si) = self.locate(k);
        let st = self.shards[si].state.read();
        st.find(hash, k)
            .map(|o| o.committed())
            .ok_or_else(crate::Error::not_found)
    }

    /// Whether the key's write in flight carries a pending soft-pin intent.
    pub fn has_pending_soft_pin(&self, k: crate::Key<'_>) -> crate::Result<bool> {
        k.validate()?;
        let (hash, si) = self.locate(k);
        let st = self.shards[si].state.read();
        st.find(hash, k)
            .map(|o| {
                st.in_flight
                    .get(o.write_token)
                    .is_some_and(|w| w.pending.is_some())
            })
            .ok_or_else(crate::Error::not_found)
    }

    /// Deadline-index sizes: (heap entries incl. stale, live registrations).
    pub fn index_sizes(&self) -> (usize, usize) {
        let s = self.index.stats();
        (s.heap_len, s.live)
    }
}

/// A buffer as the metadata holds it.
#[derive(Debug, Clone, Copy)]
struct Held {
    len: u64,
    block: BlockId,
    by: Holder,
}

#[derive(Debug, Clone, Copy)]
enum Holder {
    Replica(BufferOwner),
    /// In the discarded list of this shard.
    Discarded {
        shard: usize,
    },
}

#[cfg(test)]
mod tests {
    //! States no operation, snapshot or journal record makes (each refuses
    //! them), reached by changing a record under its shard lock: the check
    //! must report them before any lookup relies on the order.
    use crate::object::{Object, Task};
    use crate::*;

    /// A master with three memory segments and key "o" written (one
    /// replica, on "m0") and copied to "m1" and "m2" (targets running).
    fn copying() -> Master {
        let m = Master::new(MasterConfig::deterministic(1_000)).unwrap();
        for i in 0..3u64 {
            let seg = SegmentSpec {
                name: format!("m{i}"),
                base: (i + 1) << 40,
                size: 1 << 20,
                pool: Pool::Memory,
            };
            m.mount_segment(1, &seg).unwrap();
        }
        let cfg = WriteConfig {
            preferred_segments: vec!["m0".into()],
            ..WriteConfig::default()
        };
        m.put_start(1, Key::new("o"), 64, &cfg).unwrap();
        m.put_end(1, Key::new("o"), ReplicaSelector::All, None)
            .unwrap();
        m.copy_start(Key::new("o"), &["m1", "m2"]).unwrap();
        m.check_invariants().unwrap();
        m
    }

    /// Runs `f` on key "o"'s record under its shard's write lock.
    fn change(m: &Master, f: impl FnOnce(&mut Object)) {
        let k = Key::new("o");
        let (hash, si) = m.locate(k);
        let mut st = m.shards[si].state.write();
        f(st.find_mut(hash, k).expect("key o"));
    }

    /// Runs `f` on the targets of key "o"'s copy, in place.
    fn change_targets(m: &Master, f: impl FnOnce(&mut Vec<u64>)) {
        change(m, |obj| {
            let Some(Task::Copy {
                source,
                mut targets,
            }) = obj.set_task(None)
            else {
                panic!("a copy runs");
            };
            f(&mut targets);
            obj.set_task(Some(Task::Copy { source, targets }));
        });
    }

    #[test]
    fn unsorted_copy_targets_are_reported() {
        let m = copying();
        change_targets(&m, |targets| {
            assert_eq!(targets.len(), 2);
            targets.reverse();
        });
        let err = m.check_invariants().unwrap_err();
        assert_eq!(err, "\"default\\0o\": copy targets not strictly increasing");
    }

    #[test]
    fn repeated_copy_targets_are_reported() {
        let m = copying();
        change_targets(&m, |targets| targets[1] = targets[0]);
        let err = m.check_invariants().unwrap_err();
        assert_eq!(err, "\"default\\0o\": copy targets not strictly increasing");
    }

    #[test]
    fn a_copy_without_targets_is_reported() {
        let m = copying();
        change_targets(&m, Vec::clear);
        let err = m.check_invariants().unwrap_err();
        assert_eq!(err, "\"default\\0o\": a copy without targets");
    }

    #[test]
    fn unsorted_replicas_are_reported() {
        let m = copying();
        change(&m, |obj| {
            assert_eq!(obj.replicas.len(), 3);
            obj.replicas.swap(1, 2);
        });
        let err = m.check_invariants().unwrap_err();
        assert_eq!(err, "\"default\\0o\": replica ids not strictly increasing");
    }
}
