//! Mounting and unmounting segments. Unmount is synchronous and costs
//! O(buffers on that segment): each buffer's block records the object that
//! owns it, so no walk over all objects (or all discarded buffers) is needed.

use crate::error::Result;
use crate::journal::Record;
use crate::master::MasterCore;
use crate::segment::{BlockId, BufferOwner, Mounted, Segment};
use crate::types::{ClientId, SegmentId, SegmentSpec};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// What an unmount dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UnmountReport {
    /// Replicas that lived on the segment(s).
    pub replicas_dropped: u64,
    /// Objects erased because no replica was left.
    pub objects_erased: u64,
}

impl UnmountReport {
    fn add(&mut self, o: UnmountReport) {
        self.replicas_dropped += o.replicas_dropped;
        self.objects_erased += o.objects_erased;
    }
}

impl MasterCore {
    /// Mounts a segment owned by `client`. Re-mounting an identical segment
    /// is OK; the same name with another base, size, pool or owner is
    /// `SEGMENT_ALREADY_EXISTS`, and a range over bytes of a segment
    /// `client` has mounted in the same pool `INVALID_PARAMS`. Returns the
    /// segment id.
    pub fn mount_segment(&self, client: ClientId, spec: &SegmentSpec) -> Result<SegmentId> {
        self.ensure_primary()?;
        // Waits for a running unmount to drop every replica on its
        // segments: a segment mounted again never sits beside readable
        // replicas of the one it replaces.
        let _serial = self.segment_changes.lock();
        let mut table = self.segments.write();
        let mounted = table.mount(client, spec)?;
        Ok(match mounted {
            Mounted::New(s) => {
                // Under the table's write lock: before any placement on it.
                if self.journal.is_some() {
                    self.journal_append(&Record::SegmentMounted {
                        owner: client,
                        name: s.name.to_string(),
                        pool: s.pool,
                        base: s.base,
                        size: s.size,
                    });
                }
                s.id
            }
            Mounted::Existing(s) => s.id,
        })
    }

    /// Name of a mounted segment.
    pub fn segment_name(&self, id: SegmentId) -> Option<String> {
        self.segments.read().get(id).map(|s| s.name.to_string())
    }

    /// Unmounts a segment: every replica on it is dropped, objects left
    /// without a replica are erased (gauge −1 each if pinned) and the
    /// pending rule is re-applied.
    pub fn unmount_segment(&self, client: ClientId, name: &str) -> Result<UnmountReport> {
        self.ensure_primary()?;
        let report = {
            let _serial = self.segment_changes.lock();
            let _running = self.unmount_running();
            let seg = self.segments.write().unmount(client, name)?;
            let report = self.drop_segment_replicas(&seg);
            self.record_unmounted(&seg);
            report
        };
        // Pins of erased objects no longer count (§4.8).
        self.settle_pins();
        Ok(report)
    }

    /// Counts an unmount as running (journal on) until the guard drops,
    /// after its last shard: see `MasterCore::unmounts_running`.
    fn unmount_running(&self) -> Option<UnmountRunning<'_>> {
        self.journal.as_ref().map(|_| {
            self.unmounts_running.fetch_add(1, Ordering::AcqRel);
            UnmountRunning(&self.unmounts_running)
        })
    }

    /// Appends the `SegmentUnmounted` of `seg` (journal on), last, after
    /// the records of the objects it took a replica from. Under the table's
    /// write lock, which a snapshot capture excludes by holding the read
    /// lock, so a capture's journal sequence never splits it.
    fn record_unmounted(&self, seg: &Segment) {
        if self.journal.is_some() {
            let _table = self.segments.write();
            self.journal_append(&Record::SegmentUnmounted {
                owner: seg.owner,
                name: seg.name.to_string(),
            });
        }
    }

    /// Unmounts every segment of `client`.
    pub fn unmount_client(&self, client: ClientId) -> Result<UnmountReport> {
        self.ensure_primary()?;
        let report = {
            let _serial = self.segment_changes.lock();
            let _running = self.unmount_running();
            let segs: Vec<Arc<Segment>> = {
                let mut table = self.segments.write();
                let names: Vec<String> = table
                    .segments_of(client)
                    .iter()
                    .map(|s| s.name.to_string())
                    .collect();
                names
                    .iter()
                    .map(|n| table.unmount(client, n))
                    .collect::<Result<_>>()?
            };
            let mut report = UnmountReport::default();
            for s in &segs {
                report.add(self.drop_segment_replicas(s));
                self.record_unmounted(s);
            }
            report
        };
        // Pins of erased objects no longer count (§4.8).
        self.settle_pins();
        Ok(report)
    }

    /// Drops what an unmounted segment held, in one walk over its buffers'
    /// owners and block ids (the blocks record them), grouped by shard so
    /// each shard lock is taken once, in ascending order.
    fn drop_segment_replicas(&self, seg: &Segment) -> UnmountReport {
        let (owners, bounds) = self.group_by_shard(seg.owners());
        let mut report = UnmountReport::default();
        for si in 0..self.shards.len() {
            let group = &owners[bounds[si]..bounds[si + 1]];
            if group.is_empty() {
                continue;
            }
            #[cfg(feature = "test-hooks")]
            self.race_point(crate::quiesce::RacePoint::UnmountShard { shard: si });
            let mut st = self.shards[si].state.write();
            let mut unowned = false;
            for &(owner, block) in group {
                let mark = st.discarded.len();
                let hash = owner.object_hash();
                // The replica naming this segment and block: while the block
                // is allocated no other buffer has its id here, and a restore
                // installed meanwhile holds replicas on segments of its own,
                // whose ids are never this one's (SegmentTable::reserve_ids).
                let Some(obj) = st.find_by_block_mut(hash, seg.id, block) else {
                    // A discarded buffer: no replica owns it any more.
                    unowned = true;
                    continue;
                };
                obj.replicas.retain(|r| !r.is_in(seg.id, block));
                report.replicas_dropped += 1;
                // The write ends (with its pending intent, §4.4) once no
                // replica of it is PROCESSING.
                let (in_flight, empty, token, seq) = (
                    obj.write_in_flight(),
                    obj.replicas.is_empty(),
                    obj.write_token,
                    obj.seq,
                );
                // The key, for the record once the object may be gone.
                let scoped = self.journal.is_some().then(|| {
                    crate::key::scoped(st.key_of(st.find_by_seq(hash, seq).expect("found above")))
                });
                if !in_flight {
                    st.in_flight.end(token);
                }
                if empty {
                    self.erase_seq(&mut st, si, hash, seq, None);
                    report.objects_erased += 1;
                }
                if let Some(scoped) = &scoped {
                    self.record_key(&mut st, hash, crate::key::split(scoped), mark);
                }
            }
            // Discarded buffers waiting for release on this segment went
            // with it. Each is listed by the shard of the object it came
            // from, whose hash its block still records, so only shards
            // with an unowned buffer here can hold one.
            if unowned {
                let gone = st.discarded.drop_segment(seg.id);
                st.discarded_bytes -= gone;
            }
        }
        report
    }

    /// Sorts `owners` (each with its block) by shard index in O(owners +
    /// shards) (a counting sort) and returns them with the bounds of each shard's run: shard
    /// `i`'s owners are `owners[bounds[i]..bounds[i + 1]]`.
    pub(crate) fn group_by_shard(
        &self,
        owners: Vec<(BufferOwner, BlockId)>,
    ) -> (Vec<(BufferOwner, BlockId)>, Vec<usize>) {
        let shard = |o: &(BufferOwner, BlockId)| self.shard_index_of(o.0.object_hash());
        let mut bounds = vec![0usize; self.shards.len() + 1];
        for o in &owners {
            bounds[shard(o) + 1] += 1;
        }
        for i in 0..self.shards.len() {
            bounds[i + 1] += bounds[i];
        }
        let Some(&any) = owners.first() else {
            return (owners, bounds);
        };
        let mut next = bounds.clone();
        let mut grouped = vec![any; owners.len()];
        for o in &owners {
            let s = shard(o);
            grouped[next[s]] = *o;
            next[s] += 1;
        }
        (grouped, bounds)
    }
}

/// An unmount counted in `MasterCore::unmounts_running`, until dropped
/// (a panic included).
struct UnmountRunning<'a>(&'a std::sync::atomic::AtomicUsize);

impl Drop for UnmountRunning<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
