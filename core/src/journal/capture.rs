//! Recording: the journal records of an operation's outcome, built from the
//! state it left ([`ObjectImage`]s, discarded buffers by segment name), and
//! the deferred frees that keep **append before free**: while the journal
//! is on, a buffer an operation frees waits in its shard's `pending_frees`
//! until the record that frees it is appended, under the same shard lock,
//! so a placement reusing it (recorded under another shard's lock) always
//! comes later in the journal (docs/CONTRACT.md §12.1).
//!
//! Nothing here runs with the journal off: every caller checks
//! `self.journal.is_some()` first, so a master without a journal builds no
//! image and defers no free.

use super::record::*;
use crate::master::{free_block, MasterCore};
use crate::object::{Object, Role, Task};
use crate::segment::SegmentTable;
use crate::shard::{Discarded, ShardState};
use crate::types::{Key, ReplicaKind};
use std::sync::atomic::Ordering;

impl MasterCore {
    /// Appends `rec` (journal on). An append fails only once the sequence
    /// space (`u64::MAX - 1` records) is exhausted, which no master
    /// reaches; the change it records has happened either way, so the
    /// operation goes on.
    pub(crate) fn journal_append(&self, rec: &Record) {
        if let Some(j) = &self.journal {
            let _ = j.append(rec);
        }
    }

    /// Records what the operation holding `st` (the shard of `k`, whose
    /// hash is `hash`) left of the key: an [`Record::ObjectSet`] of the
    /// object, or an [`Record::ObjectErased`] when there is none any more,
    /// with the buffers the operation pushed onto the shard's discarded
    /// list since `discard_mark` (`st.discarded.len()` when it took the
    /// lock). Then frees the buffers the operation deferred. Journal on.
    #[inline]
    pub(crate) fn record_key(
        &self,
        st: &mut ShardState,
        hash: u64,
        k: Key<'_>,
        discard_mark: usize,
    ) {
        if self.journal.is_some() {
            self.record_key_on(st, hash, k, discard_mark);
        }
    }

    fn record_key_on(&self, st: &mut ShardState, hash: u64, k: Key<'_>, discard_mark: usize) {
        let Some(j) = &self.journal else {
            return;
        };
        #[cfg(feature = "test-hooks")]
        self.race_point(crate::quiesce::RacePoint::BeforeRecord);
        let table = self.segments.read();
        let discarded = discarded_since(&table, st, discard_mark);
        let rec = match st.find(hash, k) {
            Some(obj) => Record::ObjectSet {
                image: Box::new(object_image(&table, st, obj)),
                discarded,
            },
            None => Record::ObjectErased {
                key: RecordKey::new(k.tenant, k.key),
                discarded,
            },
        };
        let _ = j.append(&rec);
        free_pending(&table, st);
    }

    /// Records `obj` (stored in `st`) as it stands, for a change made
    /// under the shard's *read* lock (a committed deadline cleared by
    /// compare-and-swap: cleanup's expiry, eviction's normalisation), which
    /// discards and frees nothing. Journal on.
    #[inline]
    pub(crate) fn record_read_locked(&self, st: &ShardState, obj: &Object) {
        if let Some(j) = &self.journal {
            let table = self.segments.read();
            let _ = j.append(&Record::ObjectSet {
                image: Box::new(object_image(&table, st, obj)),
                discarded: Vec::new(),
            });
        }
    }

    /// Records the id counters as they stand (journal on): after an
    /// operation that reserved ids, a token or a sequence and failed
    /// without giving them back, so a standby's counters (and snapshot)
    /// stay equal to the primary's.
    pub(crate) fn record_counters(&self) {
        if self.journal.is_some() {
            self.journal_append(&Record::Counters {
                next_replica_id: self.next_replica_id.load(Ordering::Acquire),
                next_write_token: self.next_token.load(Ordering::Acquire),
                next_object_seq: self.next_seq.load(Ordering::Acquire),
            });
        }
    }
}

/// A buffer of a mounted segment by name; `None` once its segment is gone
/// from the table (an unmount in progress, whose `SegmentUnmounted`, still
/// to come, drops whatever was left on it).
fn buffer_ref(table: &SegmentTable, d: &Discarded) -> Option<BufferRef> {
    let seg = table.get(d.segment)?;
    Some(BufferRef {
        segment: seg.name.to_string(),
        address: d.addr,
        len: d.len,
    })
}

/// The discarded buffers pushed onto `st`'s list since `mark`.
fn discarded_since(table: &SegmentTable, st: &ShardState, mark: usize) -> Vec<DiscardedBuffer> {
    st.discarded
        .get(mark..)
        .unwrap_or_default()
        .iter()
        .filter_map(|d| {
            Some(DiscardedBuffer {
                buffer: buffer_ref(table, d)?,
                release_at: d.release_at,
            })
        })
        .collect()
}

/// The buffers of a release pass, by name (see [`buffer_ref`]).
pub(crate) fn released_buffers(table: &SegmentTable, due: &[Discarded]) -> Vec<BufferRef> {
    due.iter().filter_map(|d| buffer_ref(table, d)).collect()
}

/// Frees the buffers `st`'s operations deferred, now that their record is
/// in the journal.
pub(crate) fn free_pending(table: &SegmentTable, st: &mut ShardState) {
    for d in st.pending_frees.drain(..) {
        free_block(table, d.segment, d.block, d.addr, d.len);
    }
}

/// The whole state of `obj` (stored in `st`). A replica whose segment is
/// no longer in the table (an unmount in progress) is left out, as a
/// snapshot leaves it out: its unmount drops it.
pub(crate) fn object_image(table: &SegmentTable, st: &ShardState, obj: &Object) -> ObjectImage {
    let k = st.key_of(obj);
    let mut replicas: Vec<ReplicaImage> = obj
        .replicas
        .iter()
        .filter_map(|r| {
            let place = match r.kind {
                ReplicaKind::LocalDisk => Placement::LocalDisk { client: r.addr },
                kind => {
                    let segment = table.get(r.segment)?.name.to_string();
                    if kind == ReplicaKind::Memory {
                        Placement::Memory {
                            segment,
                            address: r.addr,
                        }
                    } else {
                        Placement::NofSsd {
                            segment,
                            address: r.addr,
                        }
                    }
                }
            };
            Some(ReplicaImage {
                id: r.id,
                status: r.status,
                role: match r.role {
                    Role::Write => ReplicaRole::Write,
                    Role::TaskTarget => ReplicaRole::TaskTarget,
                },
                place,
            })
        })
        .collect();
    replicas.sort_unstable_by_key(|r| r.id);
    ObjectImage {
        key: RecordKey::new(k.tenant, k.key),
        size: obj.size,
        writer: obj.writer,
        put_start: obj.put_start,
        lease: obj.lease.load(Ordering::Acquire),
        seq: obj.seq,
        write_token: obj.write_token,
        hard_pin: obj.hard_pin(),
        group: obj.group().map(|g| g.name().to_owned()),
        committed: obj.committed(),
        in_flight: st
            .in_flight
            .get(obj.write_token)
            .map(|w| InFlightImage { pending: w.pending }),
        task: obj.task().map(|t| match t {
            Task::Copy { source, targets } => TaskImage::Copy {
                source: *source,
                targets: targets.clone(),
            },
            Task::Move { source, target } => TaskImage::Move {
                source: *source,
                target: *target,
            },
            Task::Promotion { target } => TaskImage::Promotion { target: *target },
        }),
        replicas,
    }
}

#[cfg(test)]
mod tests {
    use crate::journal::codec::decode_batch;
    use crate::journal::Record;
    use crate::{Master, MasterConfig};

    // docs/CONTRACT.md §12.1: ids a failed operation reserved and cannot
    // give back (another operation took ids since) are recorded as the
    // counters; ids given back change nothing and are not.
    #[test]
    fn ids_a_failed_operation_cannot_give_back_are_recorded() {
        let m = Master::new(MasterConfig {
            journal_capacity_bytes: 1 << 16,
            ..MasterConfig::deterministic(0)
        })
        .unwrap();
        let first = m.replica_ids(2);
        m.return_replica_ids(first, 2);
        assert_eq!(m.journal_stats().records_appended, 0);
        let first = m.replica_ids(2);
        let other = m.replica_ids(1);
        m.return_replica_ids(first, 2);
        let b = decode_batch(&m.journal_read_to_vec(1).unwrap()).unwrap();
        assert_eq!(
            b.records,
            [Record::Counters {
                next_replica_id: other + 1,
                next_write_token: 1,
                next_object_seq: 1,
            }]
        );
    }
}
