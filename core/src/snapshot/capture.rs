//! Capture: a consistent cut of the master into a [`SnapshotImage`]. Every
//! shard read lock (ascending) and the segment-table read lock are held
//! while copying, so no buffer can be freed in one shard and reused in
//! another within one image; reads keep running meanwhile. The group
//! retention registry is read under the same hold (after the shards), so
//! the image is one cut of objects and retention deadlines alike, and of
//! the change journal: the image's `journal_seq` is the last record it
//! includes. The writes in flight, tasks and discarded buffers of the same
//! shards are part of the cut (format 5), so a standby restored from the
//! image holds exactly this state.

use super::image::*;
use crate::clock::Instant;
use crate::error::Result;
use crate::journal::record::TaskImage;
use crate::key;
use crate::key::ScopedKey;
use crate::master::MasterCore;
use crate::object::Task;
use crate::segment::SegmentTable;
use crate::shard::ShardState;
use crate::types::ReplicaKind;
use hashbrown::HashMap;
use std::sync::atomic::Ordering;

impl MasterCore {
    /// Serialises the master (docs/CONTRACT.md §6). Deterministic for a given state.
    pub fn snapshot(&self) -> Result<Vec<u8>> {
        Ok(super::codec::encode(&self.capture()))
    }

    /// Captures the master into an image.
    pub fn capture(&self) -> SnapshotImage {
        // A standby's image is a cut between two applied records: its
        // journal sequence is the applied one, read under the apply mutex
        // (standby.rs), which a record's whole apply holds.
        let apply = self.is_standby().then(|| self.role.apply.lock());
        // With the journal on, mounts and unmounts are serialised with
        // one another and with captures too: an unmount takes its segment
        // out of the table before it drops the segment's replicas shard by
        // shard, and an image is never cut in between.
        let _serial = self.journal.as_ref().map(|_| self.segment_changes.lock());
        let guards: Vec<_> = self.shards.iter().map(|s| s.state.read()).collect();
        let states: Vec<&ShardState> = guards.iter().map(|g| &**g).collect();
        let retention = self.retention.map.read();
        let table = self.segments.read();
        // Every append happens under a shard lock, the table's write lock
        // or the registry's write lock, all excluded here, except the
        // deadline clears made under a shard read lock (cleanup, eviction's
        // normalisation). Read before any object: a clear recorded after
        // this sequence may or may not show in the image, and a standby
        // resuming after it applies that record again, to the same effect.
        let journal_seq = match apply {
            Some(_) if self.is_standby() => self.applied_seq(),
            _ => self.journal.as_ref().map_or(0, |j| j.last_seq()),
        };
        self.capture_locked(&states, &retention, &table, journal_seq)
    }

    /// The image of the state the caller holds locked: `states` every shard
    /// (ascending), `retention` the registry, `table` the segment table.
    pub(crate) fn capture_locked(
        &self,
        states: &[&ShardState],
        retention: &HashMap<ScopedKey, Instant>,
        table: &SegmentTable,
        journal_seq: u64,
    ) -> SnapshotImage {
        let retention = MasterCore::capture_retention(retention);
        let mut segments: Vec<SegmentRecord> = table
            .iter()
            .map(|s| SegmentRecord {
                name: s.name.to_string(),
                owner: s.owner,
                pool: s.pool as u8,
                base: s.base,
                size: s.size,
            })
            .collect();
        segments.sort_by(|a, b| a.name.cmp(&b.name));

        let mut groups = Vec::new();
        let mut seen_groups = hashbrown::HashSet::new();
        let mut objects = Vec::with_capacity(states.iter().map(|g| g.len()).sum());
        let (mut in_flight, mut tasks, mut discarded) = (Vec::new(), Vec::new(), Vec::new());
        for st in states {
            // A discarded buffer on a segment an unmount already took went
            // with it, like a replica there.
            for d in &st.discarded {
                let Some(seg) = table.get(d.segment) else {
                    continue;
                };
                discarded.push(DiscardedRecord {
                    segment: seg.name.to_string(),
                    address: d.addr,
                    len: d.len,
                    release_at: d.release_at,
                    replica: d.replica,
                });
            }
            for obj in st.iter() {
                let k = st.key_of(obj);
                if let Some(g) = obj.group() {
                    if seen_groups.insert(std::sync::Arc::as_ptr(g)) {
                        let gk = key::split(&g.id);
                        groups.push(GroupRecord {
                            tenant: gk.tenant.to_owned(),
                            name: gk.key.to_owned(),
                            lease: g.lease.load(Ordering::Acquire),
                        });
                    }
                }
                // An unmount removes its segment from the table first and
                // drops the segment's replicas shard by shard afterwards; a
                // replica whose segment is already gone is captured as
                // dropped, so the image never names an unlisted segment.
                let mut replicas: Vec<ReplicaRecord> = obj
                    .replicas
                    .iter()
                    .filter(|r| !r.has_buffer() || table.get(r.segment).is_some())
                    .map(|r| ReplicaRecord {
                        id: r.id,
                        kind: r.kind as u8,
                        status: r.status as u8,
                        location: if r.kind == ReplicaKind::LocalDisk {
                            LocationRecord::LocalDisk { client: r.addr }
                        } else {
                            LocationRecord::Buffer {
                                segment: table
                                    .get(r.segment)
                                    .map(|s| s.name.to_string())
                                    .expect("filtered above"),
                                address: r.addr,
                                len: obj.size,
                            }
                        },
                    })
                    .collect();
                replicas.sort_by_key(|r| r.id);
                let task = obj.task().map(|t| match t {
                    Task::Copy { source, targets } => TaskImage::Copy {
                        source: *source,
                        targets: targets.clone(),
                    },
                    Task::Move { source, target } => TaskImage::Move {
                        source: *source,
                        target: *target,
                    },
                    Task::Promotion { target } => TaskImage::Promotion { target: *target },
                });
                if let Some(task) = task {
                    tasks.push(TaskRecord {
                        tenant: k.tenant.to_owned(),
                        key: k.key.to_owned(),
                        task,
                    });
                }
                // The write in flight, while a replica of it is in the
                // image (an unmount in progress may have taken its last
                // one: the write then ends on the unmount's record).
                let writing = obj.replicas.iter().any(|r| {
                    r.is_write_processing() && (!r.has_buffer() || table.get(r.segment).is_some())
                });
                // (Checked first: most objects write nothing, and then the
                // in-flight table is not looked up.)
                if let Some(w) = writing.then(|| st.in_flight.get(obj.write_token)).flatten() {
                    in_flight.push(InFlightRecord {
                        tenant: k.tenant.to_owned(),
                        key: k.key.to_owned(),
                        pending: w.pending,
                    });
                }
                objects.push(ObjectRecord {
                    tenant: k.tenant.to_owned(),
                    key: k.key.to_owned(),
                    writer: obj.writer,
                    size: obj.size,
                    put_start: obj.put_start,
                    lease: obj.lease.load(Ordering::Acquire),
                    soft_pin_deadline: obj.committed(),
                    hard_pin: obj.hard_pin(),
                    group: obj.group().map(|g| g.name().to_owned()),
                    seq: obj.seq,
                    write_token: obj.write_token,
                    replicas,
                });
            }
        }
        objects.sort_unstable_by(|a, b| (&a.tenant, &a.key).cmp(&(&b.tenant, &b.key)));
        groups.sort_by(|a, b| (&a.tenant, &a.name).cmp(&(&b.tenant, &b.name)));
        in_flight.sort_unstable_by(|a: &InFlightRecord, b| {
            (&a.tenant, &a.key).cmp(&(&b.tenant, &b.key))
        });
        tasks.sort_unstable_by(|a: &TaskRecord, b| (&a.tenant, &a.key).cmp(&(&b.tenant, &b.key)));
        discarded.sort_unstable_by(|a: &DiscardedRecord, b| {
            (&a.segment, a.address).cmp(&(&b.segment, b.address))
        });
        // The timeline and the wall, read together: restore on a master
        // whose skew differs shifts every instant by the difference.
        let (created_at, wall) = self.clock.now_and_wall();
        let wall_at_capture = Some(wall);
        SnapshotImage {
            created_at,
            wall_at_capture,
            journal_seq,
            next_replica_id: self.next_replica_id.load(Ordering::Acquire),
            next_write_token: self.next_token.load(Ordering::Acquire),
            next_object_seq: self.next_seq.load(Ordering::Acquire),
            segments,
            groups,
            retention,
            objects,
            in_flight,
            tasks,
            discarded,
        }
    }
}
