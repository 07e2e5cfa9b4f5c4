//! Restore (docs/CONTRACT.md §6): decode and validate into a staging state, apply
//! the survival rule once at the restoring clock's now, then replace the
//! whole master state atomically under every lock. The live master is
//! untouched unless a candidate fully succeeds; the deadline index is
//! rebuilt from the surviving active deadlines. On a standby (and for a
//! journal reset) the image is staged verbatim instead, its writes in
//! flight, tasks and discarded buffers included (section 12.3).

use super::image::*;
use super::validate::{is_task_target, task_targets};
use crate::clock::MAX_INSTANT;
use crate::error::{Error, ErrorKind, Result};
use crate::group::Group;
use crate::journal::record::TaskImage;
use crate::key::scoped;
use crate::master::MasterCore;
use crate::object::{NewRecord, Object, Replica, Role, Task, LOCAL_DISK_SEGMENT};
use crate::segment::{BlockId, BufferOwner, SegmentTable};
use crate::shard::{Discarded, ShardState};
use crate::soft_pin::index::{Entry, PinTarget};
use crate::types::{Key, Pool, ReplicaKind, ReplicaStatus, SegmentId, SegmentSpec};
use hashbrown::HashMap;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What a restore did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RestoreReport {
    /// Index (in the caller's list) of the candidate that was restored.
    pub candidate: usize,
    /// The winning snapshot's creation instant.
    pub created_at: u64,
    pub objects_restored: u64,
    /// Objects dropped by the survival rule (nothing COMPLETE, or neither a
    /// live lease, an active pin nor a hard pin).
    pub objects_dropped: u64,
    /// PROCESSING replicas dropped (in-flight writes and task targets).
    pub replicas_dropped: u64,
    /// Surviving active soft pins (registered in the index).
    pub soft_pins_restored: u64,
    /// Expired deadlines normalised to none.
    pub soft_pins_normalised: u64,
    /// Why earlier (newer) candidates were rejected.
    pub rejected: Vec<(usize, String)>,
    /// How far every stored instant was shifted onto this master's timeline
    /// (its skew now minus the skew at capture; 0 for equal skews and for
    /// snapshots without a wall record: format 1, and formats 3 to 5 when
    /// it is absent).
    pub clock_shift_ms: i64,
}

/// How a snapshot is staged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StageMode {
    /// A restore (docs/CONTRACT.md section 6): expired deadlines normalised,
    /// PROCESSING replicas dropped, the survival rule applied at now.
    Restore,
    /// A restore on a standby or a journal reset (section 12): the image
    /// is a state another master holds, taken verbatim — every object,
    /// replica, deadline and retention as stored, and (format 5) every
    /// write in flight with its pending intent, task and discarded buffer;
    /// no instant shifted.
    Verbatim,
}

pub(crate) struct Staged {
    shards: Vec<ShardState>,
    /// Objects with a surviving active deadline, per shard (the shards'
    /// soft-pin gauges).
    soft_pin_keys: Vec<i64>,
    table: SegmentTable,
    groups: Vec<Arc<Group>>,
    registrations: Vec<Entry>,
    /// Surviving active group retention deadlines (group id, deadline).
    retention: Vec<(String, u64)>,
    counters: (u64, u64, u64),
    /// The shard listing each restored discarded buffer (segment id,
    /// address), for a standby's apply (`Role::discard_home`).
    discard_homes: Vec<((SegmentId, u64), usize)>,
}

/// A task of an image as the object holds it.
fn task_from(t: &TaskImage) -> Task {
    match t {
        TaskImage::Copy { source, targets } => Task::Copy {
            source: *source,
            targets: targets.clone(),
        },
        TaskImage::Move { source, target } => Task::Move {
            source: *source,
            target: *target,
        },
        TaskImage::Promotion { target } => Task::Promotion { target: *target },
    }
}

/// How many times a restore puts a candidate whose bytes changed back
/// into its order before refusing it.
const MAX_REORDERS: u8 = 2;

impl MasterCore {
    /// Restores one snapshot.
    pub fn restore(&self, bytes: &[u8]) -> Result<RestoreReport> {
        self.restore_candidates(&[bytes])
    }

    /// Restores the newest candidate (by stored creation instant) that
    /// validates; reports which. If every candidate fails the master is
    /// unchanged and the error lists each failure.
    pub fn restore_candidates(&self, candidates: &[&[u8]]) -> Result<RestoreReport> {
        self.restore_newest(
            candidates.len(),
            |i| super::codec::peek_created_at(candidates[i]),
            |i| Ok(std::borrow::Cow::Borrowed(candidates[i])),
        )
    }

    /// [`Self::restore_candidates`] over snapshot files, read one at a
    /// time: each file's creation instant is peeked from its first bytes
    /// (its header checked against its length, [`super::file::peek_created_at`]),
    /// then files are read whole newest first, each only once the newer
    /// ones failed ([`super::file::load`]), so a restore holds one
    /// candidate in memory, not all. A file that cannot be read, or whose
    /// snapshot does not validate, is a failed candidate, named with its
    /// reason.
    pub fn restore_files(&self, paths: &[&std::path::Path]) -> Result<RestoreReport> {
        self.restore_newest(
            paths.len(),
            |i| super::file::peek_created_at(paths[i]),
            |i| super::file::load(paths[i]).map(std::borrow::Cow::Owned),
        )
    }

    /// The restore of the newest of `count` candidates that validates:
    /// `peek(i)` gives candidate `i`'s creation instant (or why it is no
    /// candidate), `read(i)` its bytes, asked for newest first and only
    /// until one restores. Peeks, reads and decoding hold no lock (a large
    /// file on slow storage blocks no mount, unmount or journal apply);
    /// each candidate is staged and installed under the restore's locks.
    ///
    /// A candidate whose bytes state another instant than its peek did (a
    /// file replaced in between) goes back into the order at the instant
    /// it holds now, so the newest that validates still wins; one that
    /// keeps changing is refused after [`MAX_REORDERS`] such moves.
    fn restore_newest<'a>(
        &self,
        count: usize,
        peek: impl Fn(usize) -> Result<u64>,
        read: impl Fn(usize) -> Result<std::borrow::Cow<'a, [u8]>>,
    ) -> Result<RestoreReport> {
        if count == 0 {
            return Err(Error::new(
                ErrorKind::DeserializeFail,
                "no snapshot candidate given",
            ));
        }
        let mut rejected = Vec::new();
        // Newest first; ties keep the caller's order.
        let mut pending = std::collections::BinaryHeap::new();
        for i in 0..count {
            match peek(i) {
                Ok(t) => pending.push((t, std::cmp::Reverse(i))),
                Err(e) => rejected.push((i, e.message().to_owned())),
            }
        }
        let mut reorders = vec![0u8; count];
        while let Some((created_at, std::cmp::Reverse(i))) = pending.pop() {
            let img = match read(i).and_then(|bytes| super::codec::decode(&bytes)) {
                Ok(img) => img,
                Err(e) => {
                    rejected.push((i, e.message().to_owned()));
                    continue;
                }
            };
            if img.created_at != created_at {
                let now_at = (img.created_at, std::cmp::Reverse(i));
                if reorders[i] >= MAX_REORDERS {
                    rejected.push((
                        i,
                        format!(
                            "it kept changing while being restored (its creation instant read \
                             {created_at}, then {})",
                            img.created_at
                        ),
                    ));
                    continue;
                }
                reorders[i] += 1;
                // Still the newest: restored as read. Else read again in
                // its new place.
                if pending.peek().is_some_and(|next| *next > now_at) {
                    pending.push(now_at);
                    continue;
                }
            }
            // Never across a journal apply or a promote (standby.rs).
            let _apply = self.role.apply.lock();
            // With the journal on, no mount or unmount runs beside a
            // restore: an unmount's SegmentUnmounted, appended last, must
            // not follow the Reset of a state that has a segment of that
            // name.
            let _serial = self.journal.as_ref().map(|_| self.segment_changes.lock());
            let (mut shift, mut journal_seq, mut lenient) = (0, 0, false);
            let decoded_at = img.created_at;
            let mut primary_skew = None;
            // A standby holds its primary's state and timeline: it installs
            // the snapshot verbatim (docs/CONTRACT.md section 12.3).
            let standby = self.is_standby();
            let staged = (|mut img: SnapshotImage| {
                journal_seq = img.journal_seq;
                // An image of format 1 to 4 holds no writes in flight, tasks
                // or discarded buffers, and one an older library wrote may
                // have left them out: a standby restored from it skips the
                // records that only the missing state explains. A format-5
                // image is exact (docs/CONTRACT.md section 12.3).
                lenient = !img.has_live_state();
                // A standby's own journal numbers records as its primary's:
                // an image without a journal sequence leaves its reset no
                // number a later record of the primary would not take too
                // (a standby of this one that read the reset would then
                // miss that record, unawares).
                if standby && self.journal.is_some() && img.journal_seq == 0 {
                    return Err(Error::new(
                        ErrorKind::DeserializeFail,
                        "the snapshot carries no journal sequence (format 3 or older, or a \
                         master without a journal): a standby that keeps a journal numbers \
                         its records as its primary's and needs one",
                    ));
                }
                if standby {
                    primary_skew = super::remap::capture_skew(&img);
                    return self.stage(&img, StageMode::Verbatim);
                }
                shift = super::remap::shift_for(&img, self.clock.skew());
                super::remap::shift_instants(&mut img, shift);
                self.stage(&img, StageMode::Restore)
            })(img);
            match staged {
                Ok((staged, mut report)) => {
                    // A standby resumes after the snapshot's last record
                    // (docs/CONTRACT.md section 12.3); its own journal, if
                    // any, numbers the Reset the install appends as that
                    // record, as a standby of it would.
                    if let (true, Some(j), true) = (standby, &self.journal, journal_seq > 0) {
                        j.continue_at(journal_seq)?;
                    }
                    // A standby holds the primary's instants: it takes the
                    // primary's timeline too (docs/CONTRACT.md 12.1), before
                    // the install, whose Reset record (a journaling
                    // standby's) hands it on to the standbys behind it.
                    if let Some(skew) = primary_skew {
                        self.clock.adopt_skew(skew);
                    }
                    self.install(staged);
                    if standby {
                        self.role.set_applied_seq(journal_seq);
                        self.role.set_lenient(lenient);
                    }
                    report.clock_shift_ms = shift;
                    report.candidate = i;
                    report.created_at = decoded_at;
                    rejected.sort();
                    report.rejected = rejected;
                    return Ok(report);
                }
                Err(e) => rejected.push((i, e.message().to_owned())),
            }
        }
        rejected.sort();
        let detail: Vec<String> = rejected
            .iter()
            .map(|(i, m)| format!("candidate {i}: {m}"))
            .collect();
        Err(Error::new(ErrorKind::DeserializeFail, detail.join("; ")))
    }

    /// Stages `img` with segment ids reserved in the live table, so an
    /// unmount racing this restore never matches a restored segment; a
    /// failed stage gives them back (unless a mount took later ones).
    pub(crate) fn stage(
        &self,
        img: &SnapshotImage,
        mode: StageMode,
    ) -> Result<(Staged, RestoreReport)> {
        let n = img.segments.len();
        let first = self.segments.write().reserve_ids(n)?;
        let staged = self.stage_numbered(img, first, mode);
        if staged.is_err() {
            self.segments.write().release_ids(first, n);
        }
        staged
    }

    fn stage_numbered(
        &self,
        img: &SnapshotImage,
        first_segment_id: SegmentId,
        mode: StageMode,
    ) -> Result<(Staged, RestoreReport)> {
        let verbatim = mode == StageMode::Verbatim;
        counters_carry_on(
            img.next_replica_id,
            img.next_write_token,
            img.next_object_seq,
        )?;
        let now = self.clock.now();
        let mut report = RestoreReport::default();
        // A fixed seed places after a restore as it did from creation, so a
        // run that restores replays too; without one, the instant.
        let placement = match self.config.seed {
            Some(_) => Self::placement_seed(self.config.seed),
            None => now | 1,
        };
        let mut table = SegmentTable::starting_at(placement, first_segment_id)
            .with_block_region(Self::block_region(&self.config));
        let mut seg_ids = HashMap::new();
        for s in &img.segments {
            let pool = Pool::from_raw(s.pool as u32)
                .ok_or_else(|| Error::new(ErrorKind::DeserializeFail, "bad pool"))?;
            let spec = SegmentSpec {
                name: s.name.clone(),
                base: s.base,
                size: s.size,
                pool,
            };
            // Validation refuses every segment a mount would (its size,
            // range, name, overlap with its client's segments of its pool
            // and the mounted total): a failure here is kept
            // with the mount's own reason all the same.
            let seg = match table.mount(s.owner, &spec) {
                Ok(crate::segment::Mounted::New(seg)) => seg,
                Ok(crate::segment::Mounted::Existing(_)) => {
                    return Err(Error::new(
                        ErrorKind::DeserializeFail,
                        format!(
                            "segment '{}' cannot be mounted: the image lists it twice",
                            s.name
                        ),
                    ))
                }
                Err(e) => {
                    return Err(Error::new(
                        ErrorKind::DeserializeFail,
                        format!("segment '{}' cannot be mounted: {}", s.name, e.message()),
                    ))
                }
            };
            seg_ids.insert(s.name.as_str(), seg.id);
        }
        let mut groups: HashMap<(&str, &str), Arc<Group>> = HashMap::new();
        for g in &img.groups {
            groups.insert(
                (g.tenant.as_str(), g.name.as_str()),
                Arc::new(Group {
                    id: scoped(Key::scoped(&g.tenant, &g.name)),
                    lease: AtomicU64::new(g.lease),
                    members: Mutex::new(crate::group::Members::default()),
                }),
            );
        }
        // Staged shards are presized like a new master's, so a restored
        // master keeps the capacity `expected_objects` asked for.
        let mut shards: Vec<ShardState> = Self::empty_shards(&self.config, &self.hasher)?;
        let mut soft_pin_keys = vec![0i64; self.shards.len()];
        let mut registrations = Vec::new();
        let mut keys = 0i64;
        for o in &img.objects {
            let k = Key::scoped(&o.tenant, &o.key);
            let group = match &o.group {
                Some(name) => Some(
                    groups
                        .get(&(o.tenant.as_str(), name.as_str()))
                        .cloned()
                        .ok_or_else(|| {
                            Error::new(
                                ErrorKind::DeserializeFail,
                                format!("object {:?}: unknown group {name:?}", o.key),
                            )
                        })?,
                ),
                None => None,
            };
            // (1) an expired deadline is normalised to none.
            let committed = match o.soft_pin_deadline {
                Some(d) if verbatim || now < d => Some(d),
                Some(_) => {
                    report.soft_pins_normalised += 1;
                    None
                }
                None => None,
            };
            // (2) PROCESSING replicas are dropped, COMPLETE ones kept.
            let complete: Vec<&ReplicaRecord> = o
                .replicas
                .iter()
                .filter(|r| verbatim || r.status == 1)
                .collect();
            report.replicas_dropped += (o.replicas.len() - complete.len()) as u64;
            // (3) survival: live lease, active pin or hard pin.
            let lease = o.lease.max(
                group
                    .as_ref()
                    .map_or(0, |g| g.lease.load(Ordering::Relaxed)),
            );
            let survives = verbatim
                || (!complete.is_empty() && (now < lease || committed.is_some() || o.hard_pin));
            if !survives {
                report.objects_dropped += 1;
                continue;
            }
            let hash = self.hasher.hash(k);
            let si = self.shard_index_of(hash);
            // Format 5: the object's task and write in flight. A restore
            // on a primary keeps neither: survival rule 2 dropped their
            // PROCESSING replicas.
            let by_key = |t: &str, key: &str| (t, key).cmp(&(o.tenant.as_str(), o.key.as_str()));
            let task = verbatim
                .then(|| {
                    img.tasks
                        .binary_search_by(|t| by_key(&t.tenant, &t.key))
                        .ok()
                        .map(|i| &img.tasks[i].task)
                })
                .flatten();
            let targets = task.map_or(&[][..], task_targets);
            // An image of format 1 to 4 lists no writes in flight: a
            // standby takes an object with a PROCESSING replica of a write
            // as writing, with no pending intent (the lenient install of
            // docs/CONTRACT.md section 12.3), so its End, Revoke and the
            // stale-write sweep find the write as on any master.
            // (Validation refused two such writes sharing a token: the
            // in-flight set is keyed by it.) Targets are strictly
            // increasing: a binary search each, not a scan.
            let writing = || {
                !img.has_live_state()
                    && o.replicas
                        .iter()
                        .any(|r| r.status == 0 && !is_task_target(targets, r.id))
            };
            let write = verbatim
                .then(|| {
                    img.in_flight
                        .binary_search_by(|f| by_key(&f.tenant, &f.key))
                        .ok()
                        .map(|i| img.in_flight[i].pending)
                        .or_else(|| writing().then_some(None))
                })
                .flatten();
            let mut replicas = crate::object::Replicas::new();
            for r in complete {
                let kind = ReplicaKind::from_raw(r.kind as u32)
                    .ok_or_else(|| Error::new(ErrorKind::DeserializeFail, "bad replica kind"))?;
                let (segment, addr, block) = match &r.location {
                    LocationRecord::LocalDisk { client } => {
                        (LOCAL_DISK_SEGMENT, *client, BlockId::NONE)
                    }
                    LocationRecord::Buffer {
                        segment,
                        address,
                        len,
                    } => {
                        let id = *seg_ids.get(segment.as_str()).ok_or_else(|| {
                            Error::new(
                                ErrorKind::DeserializeFail,
                                format!("replica {} on unknown segment {segment:?}", r.id),
                            )
                        })?;
                        let seg = table.get(id).expect("staged segment");
                        let block = seg
                            .reserve(*address, *len, BufferOwner::object(hash))
                            .map_err(|e| {
                                Error::new(
                                    ErrorKind::DeserializeFail,
                                    format!(
                                    "replica {} buffer {address:#x}+{len} on {segment:?}: {e:?}",
                                    r.id
                                ),
                                )
                            })?;
                        (id, *address, block)
                    }
                };
                let status = if r.status == 1 {
                    ReplicaStatus::Complete
                } else {
                    ReplicaStatus::Processing
                };
                replicas.push(Replica {
                    id: r.id,
                    addr,
                    segment,
                    block,
                    kind,
                    status,
                    role: if is_task_target(targets, r.id) {
                        Role::TaskTarget
                    } else {
                        Role::Write
                    },
                });
            }
            let room = shards[si].reserve_insert()?;
            if let Some(g) = &group {
                g.members.lock().join(scoped(k));
            }
            let mut object = Object::new(NewRecord {
                key: k.key,
                size: o.size,
                writer: o.writer,
                put_start: o.put_start,
                seq: o.seq,
                write_token: o.write_token,
                lease: o.lease,
                committed,
                replicas,
                group,
                hard_pin: o.hard_pin,
            });
            object.set_task(task.map(task_from));
            let slot = shards[si].insert(room, k.tenant, hash, object);
            if let Some(pending) = write {
                shards[si].in_flight.start(o.write_token, slot, pending);
            }
            if let Some(d) = committed {
                // The entry names the record by its new slot, at the
                // version the record has there.
                let version = shards[si]
                    .slot(slot)
                    .expect("the record was just stored")
                    .pin_version;
                registrations.push(Entry {
                    deadline: d,
                    target: PinTarget::new(si as u32, slot),
                    version,
                });
                soft_pin_keys[si] += 1;
            }
            shards[si].keys += 1;
            keys += 1;
        }
        report.objects_restored = keys as u64;
        // Discarded buffers (format 5) wait for their release instants on a
        // standby as on its primary. A restore on a primary does not keep
        // them (docs/CONTRACT.md section 6): it starts from the cut, whose
        // PROCESSING buffers it frees at once as well.
        let mut discard_homes = Vec::new();
        for d in img.discarded.iter().filter(|_| verbatim) {
            let Some(&id) = seg_ids.get(d.segment.as_str()) else {
                return Err(Error::new(
                    ErrorKind::DeserializeFail,
                    format!("discarded buffer on unknown segment {:?}", d.segment),
                ));
            };
            let hash = self.hasher.hash_buffer(&d.segment, d.address);
            let si = self.shard_index_of(hash);
            let seg = table.get(id).expect("staged segment");
            let block = seg
                .reserve(d.address, d.len, BufferOwner::object(hash))
                .map_err(|e| {
                    Error::new(
                        ErrorKind::DeserializeFail,
                        format!(
                            "discarded buffer {:#x}+{} on {:?}: {e:?}",
                            d.address, d.len, d.segment
                        ),
                    )
                })?;
            shards[si].discarded.push(Discarded {
                segment: id,
                addr: d.address,
                block,
                len: d.len,
                release_at: d.release_at,
                replica: d.replica,
            });
            shards[si].discarded_bytes += d.len as i64;
            discard_homes.push(((id, d.address), si));
        }
        // Retention deadlines: expired ones are normalised, active ones
        // (groups without members included) registered; the admission
        // count is what survives, within max_retained_groups.
        let retention: Vec<(String, u64)> = img
            .retention
            .iter()
            .filter(|r| verbatim || now < r.deadline)
            .map(|r| {
                (
                    scoped(Key::scoped(&r.tenant, &r.group)).into_string(),
                    r.deadline,
                )
            })
            .collect();
        if !verbatim && retention.len() > self.config.max_retained_groups {
            return Err(Error::new(
                ErrorKind::DeserializeFail,
                format!(
                    "{} active group retention deadlines exceed max_retained_groups ({})",
                    retention.len(),
                    self.config.max_retained_groups
                ),
            ));
        }
        report.soft_pins_restored = registrations.len() as u64;
        let groups = groups
            .into_values()
            .filter(|g| !g.members.lock().is_empty())
            .collect();
        let counters = (
            img.next_replica_id,
            img.next_write_token,
            img.next_object_seq,
        );
        Ok((
            Staged {
                shards,
                soft_pin_keys,
                table,
                groups,
                registrations,
                retention,
                counters,
                discard_homes,
            },
            report,
        ))
    }

    /// Replaces the whole state under every lock, in lock order.
    pub(crate) fn install(&self, staged: Staged) {
        let mut guards: Vec<_> = self.shards.iter().map(|s| s.state.write()).collect();
        // The group domain comes before the segment table in the lock order,
        // and the retention registry after it.
        self.groups.install(&self.hasher, staged.groups);
        self.install_retention(staged.retention);
        let mut table = self.segments.write();
        // Each shard's gauges come with the state it gets: its key count
        // and discarded bytes in the state, its soft-pin gauge beside the
        // lock.
        for ((g, st), (shard, pins)) in guards
            .iter_mut()
            .zip(staged.shards)
            .zip(self.shards.iter().zip(staged.soft_pin_keys))
        {
            **g = st;
            shard.soft_pin_keys.store(pins, Ordering::Relaxed);
        }
        let live_next = table.next_id();
        *table = staged.table;
        table.raise_next_id(live_next);
        self.index.replace_all(staged.registrations);
        // The discarded buffers went with the replaced state; the restored
        // ones are listed where staging put them.
        {
            let mut homes = self.role.discard_home.lock();
            homes.clear();
            homes.extend(staged.discard_homes);
        }
        // Counters carry on, and never go backwards within this master.
        let (r, t, s) = staged.counters;
        self.next_replica_id.fetch_max(r, Ordering::AcqRel);
        self.next_token.fetch_max(t, Ordering::AcqRel);
        self.next_seq.fetch_max(s, Ordering::AcqRel);
        drop(table);
        if self.journal.is_some() {
            // The Reset carries the state installed, captured while every
            // shard stays write-locked and the registry and the table are
            // read-locked: no record can come between the install and it,
            // so its image includes everything up to the Reset itself (a
            // Timeline record neither: `record_reset`).
            let states: Vec<&ShardState> = guards.iter().map(|g| &**g).collect();
            let retention = self.retention.map.read();
            let table = self.segments.read();
            self.record_reset(|seq| self.capture_locked(&states, &retention, &table, seq));
        }
    }
}

/// Whether a master can go on from these id counters (a snapshot's, or a
/// journal record's): they carry on with plain (wrapping) `fetch_add`s, so a
/// counter near u64::MAX, which the codecs accept, would wrap after a few
/// operations and hand out ids and tokens again. Anything up to MAX_INSTANT
/// leaves 2^63 values of headroom. `DESERIALIZE_FAIL` otherwise.
pub(crate) fn counters_carry_on(replica: u64, token: u64, seq: u64) -> Result<()> {
    for (what, v) in [
        ("next_replica_id", replica),
        ("next_write_token", token),
        ("next_object_seq", seq),
    ] {
        if v > MAX_INSTANT {
            return Err(Error::new(
                ErrorKind::DeserializeFail,
                format!("{what} {v} is above {MAX_INSTANT}: the master could not carry on"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::{Master, MasterConfig, Pool, SegmentSpec};
    use std::borrow::Cow;
    use std::cell::Cell;

    fn master(start: u64) -> Master {
        let m = Master::new(MasterConfig::deterministic(start)).unwrap();
        let spec = SegmentSpec {
            name: "mem".into(),
            base: 1 << 40,
            size: 1 << 20,
            pool: Pool::Memory,
        };
        m.mount_segment(1, &spec).unwrap();
        m
    }

    // A candidate whose bytes hold another instant than its peek said (a
    // file replaced between the two reads) is put back in the order at
    // the instant it holds: the newest that validates still wins. Here
    // candidate 1 peeked newest (30) but reads as 10, older than
    // candidate 0 (20), which is restored; one that reads newer than its
    // peek but still the newest is restored as read; one that keeps
    // changing is refused after two moves.
    #[test]
    fn a_candidate_that_changed_after_its_peek_goes_back_in_the_order() {
        let snaps: Vec<Vec<u8>> = [10, 20, 30].map(|t| master(t).snapshot().unwrap()).to_vec();
        let r = master(40);
        let rep = r
            .restore_newest(
                2,
                |i| Ok([20, 30][i]),
                |i| Ok(Cow::Borrowed(&snaps[[1, 0][i]])),
            )
            .unwrap();
        assert_eq!((rep.candidate, rep.created_at), (0, 20));
        // Newer than its peek and still the newest: taken as read.
        let rep = r
            .restore_newest(
                2,
                |i| Ok([10, 20][i]),
                |i| Ok(Cow::Borrowed(&snaps[[0, 2][i]])),
            )
            .unwrap();
        assert_eq!((rep.candidate, rep.created_at), (1, 30));
        // A candidate whose instant moves on every read, below the next
        // one each time but for the last (the others fail): read three
        // times (the first read and two moves), then refused.
        let snaps: Vec<Vec<u8>> = [3, 10, 30].map(|t| master(t).snapshot().unwrap()).to_vec();
        let reads = Cell::new(0);
        let before = r.snapshot().unwrap();
        let e = r
            .restore_newest(
                3,
                |i| Ok([25, 30, 5][i]),
                |i| {
                    if i != 1 {
                        return Ok(Cow::Borrowed(&b"no snapshot"[..]));
                    }
                    reads.set(reads.get() + 1);
                    Ok(Cow::Borrowed(&snaps[[1, 0, 2][reads.get() - 1]]))
                },
            )
            .unwrap_err();
        assert_eq!(reads.get(), 3);
        assert!(
            e.message()
                .contains("candidate 1: it kept changing while being restored"),
            "{}",
            e.message()
        );
        assert_eq!(r.snapshot().unwrap(), before);
    }
}
