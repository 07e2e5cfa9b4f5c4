//! Structural rules a snapshot image must satisfy before restore may use it
//! (docs/CONTRACT.md §6 "Failure"), plus the ordering rules that make its encoding
//! canonical. Re-exported as [`super::codec::validate`].

use super::codec::fail;
use super::image::{
    GroupRecord, LocationRecord, ObjectRecord, ReplicaRecord, SegmentRecord, SnapshotImage,
    TaskImage,
};
use crate::clock::MAX_INSTANT;
use crate::error::Result;
use crate::task_replicas::{self, TaskReplica};
use crate::types::{Pool, ReplicaKind, ReplicaStatus, MAX_MOUNTED_BYTES};
use std::fmt;

/// Checks every structural rule; the first violation fails with
/// `DESERIALIZE_FAIL` naming the record. Runs in O(n log n) in the size of
/// the image (its records, replicas and task targets): sorts for duplicate
/// ids, creation sequences, write tokens and buffer overlap, binary searches
/// for the segment, group, task and write in flight a record names, and one
/// binary search in its task's (strictly increasing) targets per replica.
///
/// An image that passes round-trips exactly: `decode(&encode(i)) == Ok(i)`.
pub fn validate(image: &SnapshotImage) -> Result<()> {
    check_instant("snapshot created_at", image.created_at)?;
    if let Some(wall) = image.wall_at_capture {
        check_instant("snapshot wall_at_capture", wall)?;
    }
    // A standby restored from the image resumes at the record after it,
    // and a sequence past the last one a journal can number names none.
    if image.journal_seq > crate::journal::codec::MAX_SEQ {
        return Err(fail(format!(
            "snapshot journal_seq {} is beyond the last journal sequence {}",
            image.journal_seq,
            crate::journal::codec::MAX_SEQ
        )));
    }
    validate_segments(&image.segments)?;
    validate_groups(image)?;
    validate_retention(image)?;
    validate_objects(image)?;
    validate_live_state(image)
}

fn check_instant(what: impl fmt::Display, v: u64) -> Result<()> {
    if v > MAX_INSTANT {
        return Err(fail(format!(
            "{what} {v} is beyond MAX_INSTANT ({MAX_INSTANT})"
        )));
    }
    Ok(())
}

/// Names (tenants, groups, segments) are non-empty and NUL-free, like
/// `types::validate_name`; keys may hold any byte but must not be empty.
/// Every string must fit the format's u32 length prefix.
fn string_problem(s: &str, nul_allowed: bool) -> Option<&'static str> {
    if s.is_empty() {
        Some("is empty")
    } else if s.len() > u32::MAX as usize {
        Some("is longer than u32::MAX bytes")
    } else if !nul_allowed && s.contains('\0') {
        Some("contains NUL")
    } else {
        None
    }
}

fn check_string(owner: impl fmt::Display, field: &str, s: &str, nul_allowed: bool) -> Result<()> {
    match string_problem(s, nul_allowed) {
        None => Ok(()),
        Some(problem) => Err(fail(format!("{owner}: {field} {problem}"))),
    }
}

/// Segments: what a mount accepts (`SegmentTable::mount`), so restore can
/// mount every one: a valid name and pool, a size above 0, a range that
/// does not overflow, no two of one client in one pool over the same
/// bytes, and all of them together at most [`MAX_MOUNTED_BYTES`]; sorted
/// by name.
fn validate_segments(segments: &[SegmentRecord]) -> Result<()> {
    let mut mounted: u64 = 0;
    for (i, s) in segments.iter().enumerate() {
        let who = Seg(i, s);
        check_string(&who, "name", &s.name, false)?;
        if Pool::from_raw(u32::from(s.pool)).is_none() {
            return Err(fail(format!("{who}: pool {} is not 0 or 1", s.pool)));
        }
        if s.size == 0 {
            return Err(fail(format!("{who}: size is 0")));
        }
        if s.base.checked_add(s.size).is_none() {
            return Err(fail(format!(
                "{who}: base {} + size {} overflows",
                s.base, s.size
            )));
        }
        mounted = match mounted.checked_add(s.size) {
            Some(t) if t <= MAX_MOUNTED_BYTES => t,
            _ => {
                return Err(fail(format!(
                    "{who}: size {} brings the mounted total above {MAX_MOUNTED_BYTES} bytes",
                    s.size
                )))
            }
        };
        if i > 0 {
            ordered(&segments[i - 1].name, &s.name, || who.to_string())?;
        }
    }
    // Sorted by (owner, pool, base), two ranges that overlap have an
    // overlapping pair among neighbours.
    let mut by_range: Vec<&SegmentRecord> = segments.iter().collect();
    by_range.sort_unstable_by_key(|s| (s.owner, s.pool, s.base));
    for w in by_range.windows(2) {
        let (a, b) = (w[0], w[1]);
        // Each range was checked not to overflow above.
        if a.owner == b.owner && a.pool == b.pool && b.base < a.base + a.size {
            return Err(fail(format!(
                "segments {:?} [{:#x}, {:#x}) and {:?} [{:#x}, {:#x}) of client {} overlap in \
                 pool {}",
                a.name,
                a.base,
                a.base + a.size,
                b.name,
                b.base,
                b.base + b.size,
                a.owner,
                a.pool
            )));
        }
    }
    Ok(())
}

fn validate_groups(image: &SnapshotImage) -> Result<()> {
    let groups = &image.groups;
    for (i, g) in groups.iter().enumerate() {
        let who = Grp(i, g);
        check_string(&who, "tenant", &g.tenant, false)?;
        check_string(&who, "name", &g.name, false)?;
        check_instant(format_args!("{who}: lease"), g.lease)?;
        if i > 0 {
            let prev = &groups[i - 1];
            ordered(
                (prev.tenant.as_str(), prev.name.as_str()),
                (g.tenant.as_str(), g.name.as_str()),
                || who.to_string(),
            )?;
        }
    }
    Ok(())
}

fn validate_retention(image: &SnapshotImage) -> Result<()> {
    let list = &image.retention;
    for (i, r) in list.iter().enumerate() {
        let who = format_args!("retention {i} (tenant {:?}, group {:?})", r.tenant, r.group);
        check_string(who, "tenant", &r.tenant, false)?;
        check_string(who, "group", &r.group, false)?;
        check_instant(format_args!("{who}: deadline"), r.deadline)?;
        if i > 0 {
            let prev = &list[i - 1];
            ordered(
                (prev.tenant.as_str(), prev.group.as_str()),
                (r.tenant.as_str(), r.group.as_str()),
                || who.to_string(),
            )?;
        }
    }
    Ok(())
}

/// Strict ascending order: equal means a duplicate, smaller means unsorted.
/// Both would make the encoding non-canonical; duplicates also break restore.
fn ordered<T: Ord>(prev: T, cur: T, who: impl FnOnce() -> String) -> Result<()> {
    match prev.cmp(&cur) {
        std::cmp::Ordering::Less => Ok(()),
        std::cmp::Ordering::Equal => Err(fail(format!("{}: duplicate of its predecessor", who()))),
        std::cmp::Ordering::Greater => Err(fail(format!(
            "{}: not sorted (comes after its successor)",
            who()
        ))),
    }
}

// Record names for messages, formatted only on failure.

struct Seg<'a>(usize, &'a SegmentRecord);

impl fmt::Display for Seg<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "segment {} ({:?})", self.0, self.1.name)
    }
}

struct Grp<'a>(usize, &'a GroupRecord);

impl fmt::Display for Grp<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "group {} (tenant {:?}, name {:?})",
            self.0, self.1.tenant, self.1.name
        )
    }
}

struct Rep<'a>(&'a Obj<'a>, usize, u64);

impl fmt::Display for Rep<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} replica {} (id {})", self.0, self.1, self.2)
    }
}

struct Obj<'a>(usize, &'a ObjectRecord);

impl fmt::Display for Obj<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "object {} (tenant {:?}, key {:?})",
            self.0, self.1.tenant, self.1.key
        )
    }
}

/// A buffer as the overlap sweep sees it: (segment index, start, end). Kept
/// to 24 bytes, like the bare ids, because both lists are sorted and hold
/// one entry per replica (millions); owners are looked up again only to
/// word an error.
type Placed = (usize, u64, u64);

/// Position (object, replica) of the first replica matching `hit`, other
/// than `skip`. Only used on the error path.
fn find_replica(
    image: &SnapshotImage,
    skip: Option<(usize, usize)>,
    hit: impl Fn(&ReplicaRecord) -> bool,
) -> (usize, usize) {
    image
        .objects
        .iter()
        .enumerate()
        .flat_map(|(i, o)| o.replicas.iter().enumerate().map(move |(j, r)| (i, j, r)))
        .find(|&(i, j, r)| Some((i, j)) != skip && hit(r))
        .map_or((0, 0), |(i, j, _)| (i, j))
}

fn buffer_at(r: &ReplicaRecord, name: &str, start: u64, end: u64) -> bool {
    matches!(&r.location, LocationRecord::Buffer { segment, address, len }
        if segment == name && *address == start && address.checked_add(*len) == Some(end))
}

fn validate_objects(image: &SnapshotImage) -> Result<()> {
    let total: usize = image.objects.iter().map(|o| o.replicas.len()).sum();
    let mut ids: Vec<u64> = Vec::with_capacity(total);
    let mut placed: Vec<Placed> = Vec::with_capacity(total);

    for (i, o) in image.objects.iter().enumerate() {
        let who = Obj(i, o);
        check_string(&who, "tenant", &o.tenant, false)?;
        check_string(&who, "key", &o.key, true)?;
        if i > 0 {
            let prev = &image.objects[i - 1];
            ordered(
                (prev.tenant.as_str(), prev.key.as_str()),
                (o.tenant.as_str(), o.key.as_str()),
                || who.to_string(),
            )?;
        }
        if o.size == 0 {
            return Err(fail(format!("{who}: size is 0")));
        }
        check_instant(format_args!("{who}: put_start"), o.put_start)?;
        check_instant(format_args!("{who}: lease"), o.lease)?;
        if let Some(d) = o.soft_pin_deadline {
            check_instant(format_args!("{who}: soft_pin_deadline"), d)?;
            // A committed deadline is an End's instant plus a TTL of at
            // least 1 ms: never 0, which a record spells as none.
            if d == 0 {
                return Err(fail(format!("{who}: soft_pin_deadline is 0")));
            }
        }
        if o.seq >= image.next_object_seq {
            return Err(fail(format!(
                "{who}: seq {} is not below next_object_seq {}",
                o.seq, image.next_object_seq
            )));
        }
        if o.write_token >= image.next_write_token {
            return Err(fail(format!(
                "{who}: write_token {} is not below next_write_token {}",
                o.write_token, image.next_write_token
            )));
        }
        if let Some(g) = &o.group {
            let found = image
                .groups
                .binary_search_by(|r| (r.tenant.as_str(), r.name.as_str()).cmp(&(&o.tenant, g)))
                .is_ok();
            if !found {
                return Err(fail(format!(
                    "{who}: group {g:?} is not in the group list of its tenant"
                )));
            }
        }
        if u32::try_from(o.replicas.len()).is_err() {
            return Err(fail(format!("{who}: more than u32::MAX replicas")));
        }
        validate_replicas(image, i, o, &mut ids, &mut placed)?;
    }

    // Creation sequences name objects (an unmount and the stale-write sweep
    // find an object again by hash and sequence, eviction candidates carry
    // theirs): unique, like the keys.
    let mut seqs: Vec<(u64, usize)> = image
        .objects
        .iter()
        .enumerate()
        .map(|(i, o)| (o.seq, i))
        .collect();
    seqs.sort_unstable();
    if let Some(w) = seqs.windows(2).find(|w| w[0].0 == w[1].0) {
        let ((seq, a), (_, b)) = (w[0], w[1]);
        return Err(fail(format!(
            "creation sequence {seq} is used by {} and {}",
            Obj(a, &image.objects[a]),
            Obj(b, &image.objects[b])
        )));
    }

    // Ids are unique across the whole image, not just per object.
    ids.sort_unstable();
    if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
        let id = w[0];
        let a = find_replica(image, None, |r| r.id == id);
        let b = find_replica(image, Some(a), |r| r.id == id);
        return Err(fail(format!(
            "replica id {id} is used by {} and {}",
            Obj(a.0, &image.objects[a.0]),
            Obj(b.0, &image.objects[b.0])
        )));
    }

    validate_discarded(image, &mut placed)?;

    // Sorted by start, any overlap shows up between neighbours: if b overlaps
    // an earlier a, a's successor starts no later than b, so before a's end.
    placed.sort_unstable();
    if let Some(w) = placed
        .windows(2)
        .find(|w| w[0].0 == w[1].0 && w[0].2 > w[1].1)
    {
        let ((s, a_start, a_end), (_, b_start, b_end)) = (w[0], w[1]);
        let name = image.segments[s].name.as_str();
        let discarded_at = |start: u64| {
            image
                .discarded
                .iter()
                .position(|d| d.segment == name && d.address == start)
        };
        let a = find_replica(image, None, |r| buffer_at(r, name, a_start, a_end));
        let b = find_replica(image, Some(a), |r| buffer_at(r, name, b_start, b_end));
        let rep = |(i, j): (usize, usize), start: u64| match discarded_at(start) {
            Some(d) => format!("discarded buffer {d}"),
            None => {
                let o = &image.objects[i];
                format!("replica {} of {}", o.replicas[j].id, Obj(i, o))
            }
        };
        return Err(fail(format!(
            "buffers overlap in segment {name:?}: {} at [{a_start}, {a_end}) and {} at [{b_start}, {b_end})",
            rep(a, a_start),
            rep(b, b_start)
        )));
    }
    Ok(())
}

fn validate_replicas(
    image: &SnapshotImage,
    i: usize,
    o: &ObjectRecord,
    ids: &mut Vec<u64>,
    placed: &mut Vec<Placed>,
) -> Result<()> {
    let who = Obj(i, o);
    for (j, r) in o.replicas.iter().enumerate() {
        let rwho = Rep(&who, j, r.id);
        if r.id >= image.next_replica_id {
            return Err(fail(format!(
                "{rwho}: id is not below next_replica_id {}",
                image.next_replica_id
            )));
        }
        if j > 0 {
            ordered(o.replicas[j - 1].id, r.id, || rwho.to_string())?;
        }
        if r.status > 1 {
            return Err(fail(format!("{rwho}: status {} is not 0 or 1", r.status)));
        }
        let Some(kind) = ReplicaKind::from_raw(u32::from(r.kind)) else {
            return Err(fail(format!("{rwho}: kind {} is not 0, 1 or 2", r.kind)));
        };
        match (&r.location, kind) {
            (LocationRecord::LocalDisk { .. }, ReplicaKind::LocalDisk) => {}
            (LocationRecord::LocalDisk { .. }, _) => {
                return Err(fail(format!(
                    "{rwho}: a {kind:?} replica cannot have a local-disk location"
                )))
            }
            (LocationRecord::Buffer { .. }, ReplicaKind::LocalDisk) => {
                return Err(fail(format!(
                    "{rwho}: a LocalDisk replica must have a local-disk location, not a buffer"
                )))
            }
            (
                LocationRecord::Buffer {
                    segment,
                    address,
                    len,
                },
                _,
            ) => {
                let Ok(s) = image
                    .segments
                    .binary_search_by(|s| s.name.as_str().cmp(segment))
                else {
                    return Err(fail(format!("{rwho}: unknown segment {segment:?}")));
                };
                let seg = &image.segments[s];
                if Pool::from_raw(u32::from(seg.pool)).map(Pool::replica_kind) != Some(kind) {
                    return Err(fail(format!(
                        "{rwho}: a {kind:?} replica cannot live in segment {segment:?} of pool {}",
                        seg.pool
                    )));
                }
                if *len != o.size {
                    return Err(fail(format!(
                        "{rwho}: buffer length {len} differs from object size {}",
                        o.size
                    )));
                }
                // Segment validation guaranteed base + size does not overflow.
                let seg_end = seg.base + seg.size;
                let end = address.checked_add(*len).filter(|&e| e <= seg_end);
                let Some(end) = end.filter(|_| *address >= seg.base) else {
                    return Err(fail(format!(
                        "{rwho}: buffer at {address} (+{len}) lies outside segment {segment:?} [{}, {seg_end})",
                        seg.base
                    )));
                };
                placed.push((s, *address, end));
            }
        }
        ids.push(r.id);
    }
    Ok(())
}

/// Discarded buffers: sorted by (segment, address), each on a listed
/// segment, inside it, not empty, with a valid release instant and a
/// replica id below the counter; their ranges join `placed` for the
/// overlap sweep (a discarded buffer is still allocated).
fn validate_discarded(image: &SnapshotImage, placed: &mut Vec<Placed>) -> Result<()> {
    for (i, d) in image.discarded.iter().enumerate() {
        let who = format!("discarded buffer {i} ({:?} at {})", d.segment, d.address);
        if i > 0 {
            let prev = &image.discarded[i - 1];
            ordered(
                (prev.segment.as_str(), prev.address),
                (d.segment.as_str(), d.address),
                || who.clone(),
            )?;
        }
        check_instant(format_args!("{who}: release_at"), d.release_at)?;
        if d.replica >= image.next_replica_id {
            return Err(fail(format!(
                "{who}: replica id {} is not below next_replica_id {}",
                d.replica, image.next_replica_id
            )));
        }
        let Ok(s) = image
            .segments
            .binary_search_by(|s| s.name.as_str().cmp(&d.segment))
        else {
            return Err(fail(format!("{who}: unknown segment {:?}", d.segment)));
        };
        let seg = &image.segments[s];
        let seg_end = seg.base + seg.size;
        let end = d.address.checked_add(d.len).filter(|&e| e <= seg_end);
        let Some(end) = end.filter(|_| d.address >= seg.base && d.len > 0) else {
            return Err(fail(format!(
                "{who}: {} bytes do not lie inside segment {:?} [{}, {seg_end})",
                d.len, d.segment, seg.base
            )));
        };
        placed.push((s, d.address, end));
    }
    Ok(())
}

/// The replica ids a task targets (a copy's targets, a move's or a
/// promotion's target); its source is not one.
pub(crate) fn task_targets(task: &TaskImage) -> &[u64] {
    match task {
        TaskImage::Copy { targets, .. } => targets,
        TaskImage::Move { target, .. } | TaskImage::Promotion { target } => {
            std::slice::from_ref(target)
        }
    }
}

/// Whether `id` is one of a task's `targets` (strictly increasing, as
/// [`validate`] requires): a binary search, so checking every replica of an
/// object against a copy with many targets stays O(n log n).
pub(crate) fn is_task_target(targets: &[u64], id: u64) -> bool {
    targets.binary_search(&id).is_ok()
}

/// A task and its object's replicas as a master holds them
/// (`ops::replication`, `ops::promotion`), by the rule journal apply checks
/// too (`task_replicas`, one merge walk of the replicas and the targets):
/// a copy has targets, strictly increasing, and a copy's or move's source
/// is not one; each target the object still holds is a PROCESSING buffer
/// replica (a MEMORY one for a promotion), and the source, if the object
/// still holds it, a COMPLETE buffer replica. (A target or the source may
/// be gone: an unmount drops its replica and leaves the task.) A standby
/// installs the task as stored, and its End or Revoke then acts on exactly
/// these replicas. A snapshot keeps no replica role: a replica is a task
/// target iff the task targets it. The object's replicas were checked
/// before (sorted by unique id, each status 0 or 1 and kind 0 to 2).
fn check_task_replicas(who: &str, o: &ObjectRecord, task: &TaskImage) -> Result<()> {
    let replicas = o.replicas.iter().map(|r| TaskReplica {
        id: r.id,
        status: if r.status == 0 {
            ReplicaStatus::Processing
        } else {
            ReplicaStatus::Complete
        },
        role: None,
        // Kinds were checked with the object; were one not, a local disk
        // is what neither a target nor a source may be.
        kind: ReplicaKind::from_raw(u32::from(r.kind)).unwrap_or(ReplicaKind::LocalDisk),
    });
    task_replicas::check(Some(task), replicas).map_err(|v| fail(format!("{who}: {v}")))
}

/// Writes in flight and tasks (format 5): each names an object, sorted by
/// (tenant, key); a task's targets are distinct ids, increasing for a copy
/// (those its object still holds are its task-target replicas, PROCESSING
/// buffers, and its source, if held, a COMPLETE buffer: see
/// [`check_task_replicas`]); a write in flight has a PROCESSING replica
/// that is no task target. An image holding any of this state is exact:
/// then every object with a PROCESSING replica that is no task target has
/// its write in flight listed (formats 1 to 4 held PROCESSING replicas
/// without their writes). Two writes in flight never share a write token:
/// the listed ones, or in an image of format 1 to 4 the ones a standby
/// infers (every object with a PROCESSING replica, as
/// `MasterCore::stage` installs them).
fn validate_live_state(image: &SnapshotImage) -> Result<()> {
    let object_at = |tenant: &str, key: &str| {
        image
            .objects
            .binary_search_by(|o| (o.tenant.as_str(), o.key.as_str()).cmp(&(tenant, key)))
            .ok()
    };
    let mut task_of: Vec<Option<&TaskImage>> = vec![None; image.objects.len()];
    for (i, t) in image.tasks.iter().enumerate() {
        let who = format!("task {i} (tenant {:?}, key {:?})", t.tenant, t.key);
        if i > 0 {
            let prev = &image.tasks[i - 1];
            ordered(
                (prev.tenant.as_str(), prev.key.as_str()),
                (t.tenant.as_str(), t.key.as_str()),
                || who.clone(),
            )?;
        }
        let Some(o) = object_at(&t.tenant, &t.key) else {
            return Err(fail(format!("{who}: names no object of the image")));
        };
        check_task_replicas(&who, &image.objects[o], &t.task)?;
        // Ids a task names but its object no longer holds (a source gone
        // with an unmount, a target not placed yet) are ids all the same:
        // below the counter, or a later replica could be given one of them
        // and taken for the task's.
        for id in t.task.ids() {
            if id >= image.next_replica_id {
                return Err(fail(format!(
                    "{who}: replica id {id} is not below next_replica_id {}",
                    image.next_replica_id
                )));
            }
        }
        task_of[o] = Some(&t.task);
    }
    let writing = |o: usize| {
        let targets = task_of[o].map_or(&[][..], task_targets);
        image.objects[o]
            .replicas
            .iter()
            .any(|r| r.status == 0 && !is_task_target(targets, r.id))
    };
    // An image of format 1 to 4 lists no writes in flight: a standby takes
    // every object with a PROCESSING replica (there are no tasks) as
    // writing, so those are the writes whose tokens must differ.
    let inferred = !image.has_live_state();
    let mut listed: Vec<bool> = (0..image.objects.len())
        .map(|o| inferred && writing(o))
        .collect();
    for (i, f) in image.in_flight.iter().enumerate() {
        let who = format!(
            "write in flight {i} (tenant {:?}, key {:?})",
            f.tenant, f.key
        );
        if i > 0 {
            let prev = &image.in_flight[i - 1];
            ordered(
                (prev.tenant.as_str(), prev.key.as_str()),
                (f.tenant.as_str(), f.key.as_str()),
                || who.clone(),
            )?;
        }
        let Some(o) = object_at(&f.tenant, &f.key) else {
            return Err(fail(format!("{who}: names no object of the image")));
        };
        if !writing(o) {
            return Err(fail(format!(
                "{who}: its object has no PROCESSING replica of a write"
            )));
        }
        listed[o] = true;
    }
    // A write in flight is known by its token (an End names it): two
    // listed (or inferred) writes never share one, as every Start gets a
    // new token.
    let mut tokens: Vec<(u64, usize)> = (0..image.objects.len())
        .filter(|&o| listed[o])
        .map(|o| (image.objects[o].write_token, o))
        .collect();
    tokens.sort_unstable();
    if let Some(w) = tokens.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(fail(format!(
            "{} and {}: both writes in flight have write token {}",
            Obj(w[0].1, &image.objects[w[0].1]),
            Obj(w[1].1, &image.objects[w[1].1]),
            w[0].0
        )));
    }
    if image.has_live_state() {
        if let Some(o) = (0..image.objects.len()).find(|&o| !listed[o] && writing(o)) {
            return Err(fail(format!(
                "{}: a PROCESSING replica of a write, but no write in flight is listed \
                 (a format {} image holds every write in flight)",
                Obj(o, &image.objects[o]),
                super::codec::FORMAT_VERSION
            )));
        }
    }
    Ok(())
}
