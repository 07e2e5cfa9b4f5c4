//! Mounting and unmounting segments. Unmount is synchronous and costs
//! O(replicas on that segment): the segment knows which object owns each of
//! its buffers, so no walk over all objects is needed.

use crate::error::Result;
use crate::master::MasterCore;
use crate::segment::{Mounted, Segment};
use crate::types::{ClientId, SegmentId, SegmentSpec};
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
    /// `SEGMENT_ALREADY_EXISTS`. Returns the segment id.
    pub fn mount_segment(&self, client: ClientId, spec: &SegmentSpec) -> Result<SegmentId> {
        let mounted = self.segments.write().mount(client, spec)?;
        Ok(match mounted {
            Mounted::New(s) | Mounted::Existing(s) => s.id,
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
        let seg = self.segments.write().unmount(client, name)?;
        Ok(self.drop_segment_replicas(&seg))
    }

    /// Unmounts every segment of `client`.
    pub fn unmount_client(&self, client: ClientId) -> Result<UnmountReport> {
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
        }
        Ok(report)
    }

    fn drop_segment_replicas(&self, seg: &Segment) -> UnmountReport {
        let mut owners: Vec<(usize, u64, u64)> = seg
            .live_buffers()
            .into_iter()
            .map(|(_, _, o)| {
                (
                    self.shard_index_of(o.object_hash),
                    o.object_hash,
                    o.replica_id,
                )
            })
            .collect();
        owners.sort_unstable();
        let mut report = UnmountReport::default();
        let mut i = 0;
        while i < owners.len() {
            let si = owners[i].0;
            let mut st = self.shards[si].state.write();
            while i < owners.len() && owners[i].0 == si {
                let (_, hash, replica_id) = owners[i];
                i += 1;
                // Discarded buffers have no owning replica any more.
                // Matched by segment too: a restore installed meanwhile may
                // hold a replica with this id on one of its own segments,
                // whose ids are never this one's (SegmentTable::reserve_ids).
                let Some(obj) = st.find_by_replica_mut(hash, seg.id, replica_id) else {
                    continue;
                };
                obj.replicas
                    .retain(|r| !(r.id == replica_id && r.segment == seg.id));
                report.replicas_dropped += 1;
                obj.apply_pending_rule();
                let (in_flight, empty, token, scoped) = (
                    obj.write_in_flight(),
                    obj.replicas.is_empty(),
                    obj.write_token,
                    obj.key.clone(),
                );
                if !in_flight {
                    st.in_flight.remove(&token);
                }
                if empty {
                    self.erase(&mut st, si, hash, &scoped, None);
                    report.objects_erased += 1;
                }
            }
        }
        // Buffers waiting for release on this segment went with it.
        for shard in self.shards.iter() {
            let mut st = shard.state.write();
            let before: i64 = st.discarded.iter().map(|d| d.len as i64).sum();
            st.discarded.retain(|d| d.segment != seg.id);
            let after: i64 = st.discarded.iter().map(|d| d.len as i64).sum();
            st.discarded_bytes -= before - after;
        }
        report
    }
}
