//! `check_invariants()`: every invariant of docs/CONTRACT.md §8, checked against a
//! quiescent master (no cleanup batch in flight). Locks are taken in the
//! documented order: all shard read locks ascending, then the segment
//! table, then the index.

use crate::master::MasterCore;
use crate::object::Role;
use hashbrown::{HashMap, HashSet};
use std::sync::atomic::Ordering;

impl MasterCore {
    /// Checks docs/CONTRACT.md §8; `Err` describes the first violation found.
    pub fn check_invariants(&self) -> Result<(), String> {
        let guards: Vec<_> = self.shards.iter().map(|s| s.state.read()).collect();
        // Lock order: the retention registry after the shards, before the
        // segment table.
        self.check_retention_invariants()?;
        let table = self.segments.read();
        let regs = self.index.registrations();
        let idx = self.index.stats();

        let mut objects = 0i64;
        let mut pinned = 0i64;
        let mut committed: HashMap<Box<str>, (u64, u32)> = HashMap::new();
        let mut replica_ids: HashSet<u64> = HashSet::new();
        // (segment, addr) -> (len, owner replica id or 0 for discarded)
        let mut buffers: HashMap<(u32, u64), (u64, u64)> = HashMap::new();
        for (si, st) in guards.iter().enumerate() {
            st.check_index().map_err(|e| format!("shard {si}: {e}"))?;
            for (slot, _, obj) in st.iter_slots() {
                objects += 1;
                let key = crate::key::scoped(st.key_of(obj));
                if self.shard_index_of(obj.hash) != si {
                    return Err(format!("{key:?} is in shard {si}, hashes elsewhere"));
                }
                if self.hasher.hash_scoped(&key) != obj.hash {
                    return Err(format!("{key:?} has a stale cached hash"));
                }
                if obj.replicas.is_empty() {
                    return Err(format!("{key:?} has no replica"));
                }
                if let Some(d) = obj.committed() {
                    pinned += 1;
                    committed.insert(key.clone(), (d, si as u32));
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
                        if buffers
                            .insert((r.segment, r.addr), (obj.size, r.id))
                            .is_some()
                        {
                            return Err(format!(
                                "two buffers at {:#x} on segment {}",
                                r.addr, r.segment
                            ));
                        }
                    }
                }
            }
            if st.in_flight.len() > st.len() {
                return Err(format!("shard {si}: more writes in flight than objects"));
            }
            for d in &st.discarded {
                if table.get(d.segment).is_some()
                    && buffers.insert((d.segment, d.addr), (d.len, 0)).is_some()
                {
                    return Err(format!(
                        "discarded buffer {:#x} on segment {} is also live",
                        d.addr, d.segment
                    ));
                }
            }
        }
        let keys = self.metrics.keys.load(Ordering::Relaxed);
        if keys != objects {
            return Err(format!("key count {keys} != {objects} objects"));
        }
        let gauge = self.metrics.soft_pin_keys.load(Ordering::Relaxed);
        if gauge != pinned {
            return Err(format!(
                "soft-pin gauge {gauge} != {pinned} objects with a committed deadline"
            ));
        }
        if regs.len() != committed.len() {
            return Err(format!(
                "{} registrations for {} committed deadlines",
                regs.len(),
                committed.len()
            ));
        }
        for (k, shard, d) in &regs {
            match committed.get(&**k) {
                Some(&(cd, cs)) if cd == *d && cs == *shard => {}
                other => {
                    return Err(format!(
                        "registration {k:?} ({d}, shard {shard}) vs metadata {other:?}"
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
        // discarded buffers, and the segment's own owner map agrees.
        for seg in table.iter() {
            let mine: Vec<(u64, u64)> = buffers
                .iter()
                .filter(|((s, _), _)| *s == seg.id)
                .map(|((_, a), (l, _))| (*a, *l))
                .collect();
            let expected: u64 = mine.iter().map(|b| b.1).sum();
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
            for (addr, len, _) in &live {
                if *addr < prev_end || addr + len > seg.base + seg.size {
                    return Err(format!(
                        "segment '{}': buffer {addr:#x}+{len} overlaps or is out of range",
                        seg.name
                    ));
                }
                prev_end = addr + len;
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
