//! The segment table: mount and unmount (docs/CONTRACT.md §2) and replica placement
//! for PutStart and friends (§3: distinct segments, preferred first, load
//! spread by a pseudo-random starting point). The master wraps it in a RwLock.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::allocator::{BlockId, OffsetAllocator};
use super::segment::{BufferOwner, Segment};
use crate::error::{Error, ErrorKind, Result};
use crate::memory::Region;
use crate::types::{validate_name, ClientId, Pool, SegmentId, SegmentSpec, MAX_MOUNTED_BYTES};

/// The outcome of a successful mount.
#[derive(Debug, Clone)]
pub enum Mounted {
    /// A new segment was created.
    New(Arc<Segment>),
    /// The same owner mounted the identical segment again; nothing changed.
    Existing(Arc<Segment>),
}

impl Mounted {
    pub fn segment(&self) -> &Arc<Segment> {
        match self {
            Mounted::New(s) | Mounted::Existing(s) => s,
        }
    }

    pub fn is_new(&self) -> bool {
        matches!(self, Mounted::New(_))
    }
}

/// A buffer [`SegmentTable::place`] allocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placed {
    pub segment: SegmentId,
    pub address: u64,
    /// Given back with the address to [`Segment::free`] (or
    /// [`Segment::free_later`]).
    pub block: BlockId,
}

/// Every mounted segment, indexed by id and by name, plus a per-pool list
/// that placement walks.
pub struct SegmentTable {
    by_id: BTreeMap<SegmentId, Arc<Segment>>,
    /// Name -> segment, with a fast hasher: a standby looks up the segment
    /// of every placement it applies by name.
    by_name: HashMap<Arc<str>, Arc<Segment>, foldhash::fast::RandomState>,
    /// Per pool (indexed by `Pool as usize`), ascending by id.
    pools: [Vec<Arc<Segment>>; 2],
    /// Each client's ranges per pool: (owner, pool, base) -> (end, id).
    /// One client's ranges of one pool never overlap, so a new range can
    /// overlap only the one starting last below its end, and a mount checks
    /// that one instead of every segment.
    ranges: BTreeMap<(ClientId, u8, u64), (u64, SegmentId)>,
    /// Total mounted bytes per pool.
    capacity: [u64; 2],
    /// Next id to hand out. Ids are never reused, so a stale id held by a
    /// replica or a task can only miss, never name a different segment.
    next_id: SegmentId,
    /// xorshift64 state for placement start positions; atomic because
    /// placement runs under the master's read lock.
    rng: AtomicU64,
    /// Where the segments' allocators carve their block slots from while
    /// it has room (`commit_presized`: a region for `expected_objects`
    /// blocks, shared by the segments in the order they grow).
    block_region: Option<Arc<Region>>,
}

impl SegmentTable {
    /// An empty table; `seed` makes placement reproducible.
    pub fn new(seed: u64) -> Self {
        SegmentTable {
            by_id: BTreeMap::new(),
            by_name: HashMap::default(),
            pools: [Vec::new(), Vec::new()],
            ranges: BTreeMap::new(),
            capacity: [0; 2],
            // 0 is never an id, so a zero-initialised C field names nothing.
            next_id: 1,
            // xorshift is stuck at 0; any non-zero state works.
            rng: AtomicU64::new(if seed == 0 {
                0x9E37_79B9_7F4A_7C15
            } else {
                seed
            }),
            block_region: None,
        }
    }

    /// This table, its segments' block slots carved from `region` while it
    /// has room.
    pub(crate) fn with_block_region(self, region: Option<Arc<Region>>) -> Self {
        SegmentTable {
            block_region: region,
            ..self
        }
    }

    /// A region for the block slots of `blocks` buffers, committed at
    /// once (`commit_presized`); `None` for 0 or when the system gives
    /// none.
    pub(crate) fn block_region(blocks: usize) -> Option<Arc<Region>> {
        let bytes = OffsetAllocator::<BufferOwner>::reserved_bytes(blocks);
        (bytes > 0).then(|| Region::map_committed(bytes)).flatten()
    }

    /// Mounts `spec` for `owner`. An identical re-mount by the same owner is
    /// idempotent (`Existing`); any other mount of a taken name is
    /// `SEGMENT_ALREADY_EXISTS`. Invalid specs are `INVALID_PARAMS`.
    pub fn mount(&mut self, owner: ClientId, spec: &SegmentSpec) -> Result<Mounted> {
        validate_name("segment name", &spec.name)?;
        if spec.size == 0 {
            return Err(Error::invalid(format!(
                "segment '{}' has size 0",
                spec.name
            )));
        }
        if spec.base.checked_add(spec.size).is_none() {
            return Err(Error::invalid(format!(
                "segment '{}': base {:#x} + size {:#x} overflows the address space",
                spec.name, spec.base, spec.size
            )));
        }
        if let Some(seg) = self.by_name.get(spec.name.as_str()) {
            if seg.matches_spec(owner, spec) {
                return Ok(Mounted::Existing(Arc::clone(seg)));
            }
            return Err(Error::new(
                ErrorKind::SegmentAlreadyExists,
                format!(
                    "segment '{}' is already mounted by client {} (base {:#x}, size {})",
                    spec.name, seg.owner, seg.base, seg.size
                ),
            ));
        }
        // One client's segments of one pool are its own address ranges: two
        // of them over the same bytes would give two readable buffers the
        // same memory (docs/CONTRACT.md §2). Other clients' addresses, and
        // the other pool's, are other memory.
        let end = spec.base + spec.size;
        let pool = spec.pool as u8;
        if let Some(other) = self
            .ranges
            .range((owner, pool, 0)..(owner, pool, end))
            .next_back()
            .filter(|(_, &(other_end, _))| spec.base < other_end)
            .and_then(|(_, (_, id))| self.by_id.get(id))
        {
            return Err(Error::invalid(format!(
                "segment '{}' [{:#x}, {:#x}) overlaps segment '{}' [{:#x}, {:#x}) that client {} \
                 has mounted in the same pool",
                spec.name,
                spec.base,
                end,
                other.name,
                other.base,
                other.base + other.size,
                owner
            )));
        }
        let total = self.capacity[0]
            .checked_add(self.capacity[1])
            .and_then(|t| t.checked_add(spec.size))
            .filter(|&t| t <= MAX_MOUNTED_BYTES);
        if total.is_none() {
            return Err(Error::invalid(format!(
                "segment '{}': size {} would bring the mounted total above \
                 {MAX_MOUNTED_BYTES} bytes",
                spec.name, spec.size
            )));
        }
        let id = self.next_id;
        self.next_id = id.checked_add(1).ok_or_else(|| {
            Error::new(
                ErrorKind::Internal,
                format!("segment '{}': segment ids exhausted", spec.name),
            )
        })?;
        let seg = Arc::new(Segment::in_region(
            id,
            owner,
            spec,
            self.block_region.clone(),
        ));
        self.by_name.insert(Arc::clone(&seg.name), Arc::clone(&seg));
        self.pools[spec.pool as usize].push(Arc::clone(&seg));
        self.ranges.insert((owner, pool, spec.base), (end, id));
        self.capacity[spec.pool as usize] += spec.size;
        self.by_id.insert(id, Arc::clone(&seg));
        Ok(Mounted::New(seg))
    }

    /// Reserves `n` fresh segment ids and returns the first: a restore
    /// numbers its segments from there, so no id is ever used twice in this
    /// master's lifetime, even by an unmount still running against the
    /// table the restore replaces.
    pub fn reserve_ids(&mut self, n: usize) -> Result<SegmentId> {
        let first = self.next_id;
        self.next_id = SegmentId::try_from(n)
            .ok()
            .and_then(|n| first.checked_add(n))
            .ok_or_else(|| Error::new(ErrorKind::Internal, "segment ids exhausted"))?;
        Ok(first)
    }

    /// Gives back ids [`Self::reserve_ids`] returned, if nothing was mounted
    /// since (a failed restore then leaves the counter as it was).
    pub fn release_ids(&mut self, first: SegmentId, n: usize) {
        if SegmentId::try_from(n)
            .ok()
            .and_then(|n| first.checked_add(n))
            == Some(self.next_id)
        {
            self.next_id = first;
        }
    }

    /// An empty table whose first id is `first` (see [`Self::reserve_ids`]).
    pub fn starting_at(seed: u64, first: SegmentId) -> Self {
        SegmentTable {
            next_id: first,
            ..SegmentTable::new(seed)
        }
    }

    /// The next id a mount would get.
    pub fn next_id(&self) -> SegmentId {
        self.next_id
    }

    /// Never hands out an id below `next` (ids the replaced table used).
    pub fn raise_next_id(&mut self, next: SegmentId) {
        self.next_id = self.next_id.max(next);
    }

    /// Removes the segment `name` mounted by `owner` and returns it; the
    /// caller drops the replicas it still holds (`Segment::owners`).
    pub fn unmount(&mut self, owner: ClientId, name: &str) -> Result<Arc<Segment>> {
        let seg = self.by_name.get(name).ok_or_else(|| {
            Error::new(
                ErrorKind::SegmentNotFound,
                format!("segment '{name}' is not mounted"),
            )
        })?;
        if seg.owner != owner {
            return Err(Error::new(
                ErrorKind::IllegalClient,
                format!(
                    "segment '{name}' is owned by client {}, not client {owner}",
                    seg.owner
                ),
            ));
        }
        let id = seg.id;
        let seg = self.by_id.remove(&id).expect("indexed by name");
        self.by_name.remove(name);
        let pool = seg.pool as usize;
        // Ascending by id: ids only grow, and a mount appends
        // (`check_indexes` checks it).
        match self.pools[pool].binary_search_by_key(&id, |s| s.id) {
            Ok(i) => drop(self.pools[pool].remove(i)),
            Err(_) => debug_assert!(false, "segment {id} is not in its pool's list"),
        }
        self.ranges.remove(&(seg.owner, seg.pool as u8, seg.base));
        self.capacity[pool] -= seg.size;
        Ok(seg)
    }

    /// Whether the table's indexes agree (`check_invariants`): every
    /// segment is under its id and its name, in its pool's list (ascending
    /// by id) and in the ranges under its owner, pool and base, and nothing
    /// else is; one client's ranges of one pool do not overlap; the pools'
    /// capacities are their segments' sizes.
    pub(crate) fn check_indexes(&self) -> std::result::Result<(), String> {
        let n = self.by_id.len();
        let listed = self.pools[0].len() + self.pools[1].len();
        if self.by_name.len() != n || listed != n || self.ranges.len() != n {
            return Err(format!(
                "segment table: {n} by id, {} by name, {listed} in pools, {} ranges",
                self.by_name.len(),
                self.ranges.len()
            ));
        }
        for (p, list) in self.pools.iter().enumerate() {
            if list.windows(2).any(|w| w[0].id >= w[1].id) {
                return Err(format!(
                    "segment table: pool {p}'s list is not ascending by id"
                ));
            }
            let size: u64 = list.iter().map(|s| s.size).sum();
            if size != self.capacity[p] {
                return Err(format!(
                    "segment table: pool {p} holds {size} bytes, its capacity says {}",
                    self.capacity[p]
                ));
            }
            for s in list {
                let indexed = self.by_id.get(&s.id).is_some_and(|x| Arc::ptr_eq(x, s))
                    && self.by_name.get(&s.name).is_some_and(|x| Arc::ptr_eq(x, s))
                    && s.pool as usize == p
                    && self.ranges.get(&(s.owner, p as u8, s.base))
                        == Some(&(s.base + s.size, s.id));
                if !indexed {
                    return Err(format!(
                        "segment table: '{}' is not indexed as mounted",
                        s.name
                    ));
                }
            }
        }
        let mut last: Option<(ClientId, u8, u64)> = None;
        for (&(owner, pool, base), &(end, id)) in &self.ranges {
            if let Some((o, p, e)) = last {
                if (o, p) == (owner, pool) && base < e {
                    return Err(format!(
                        "segment table: segment {id} of client {owner} overlaps the one before it"
                    ));
                }
            }
            last = Some((owner, pool, end));
        }
        Ok(())
    }

    /// Segments mounted by `owner`, by id.
    pub fn segments_of(&self, owner: ClientId) -> Vec<Arc<Segment>> {
        self.by_id
            .values()
            .filter(|s| s.owner == owner)
            .cloned()
            .collect()
    }

    pub fn get(&self, id: SegmentId) -> Option<&Arc<Segment>> {
        self.by_id.get(&id)
    }

    pub fn by_name(&self, name: &str) -> Option<&Arc<Segment>> {
        self.by_name.get(name)
    }

    /// Every segment, by id.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Segment>> {
        self.by_id.values()
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Total mounted bytes in `pool`.
    pub fn capacity(&self, pool: Pool) -> u64 {
        self.capacity[pool as usize]
    }

    /// Allocated bytes in `pool` (lock-free per segment; not a consistent cut
    /// across segments while writers run).
    pub fn allocated(&self, pool: Pool) -> u64 {
        self.pools[pool as usize]
            .iter()
            .map(|s| s.allocated_bytes())
            .sum()
    }

    /// Places up to `count` buffers of `len` bytes on distinct segments of
    /// `pool`, none in `exclude`. Preferred segments (by name, in order;
    /// unknown, full or wrong-pool ones skipped) come first, then the rest
    /// starting at a pseudo-random position so load spreads over all
    /// segments. Returns what it placed, possibly
    /// fewer than `count`; the caller decides whether that is enough and
    /// frees the buffers otherwise.
    ///
    /// Every buffer placed is `owner`'s (the object the call places for).
    pub fn place(
        &self,
        pool: Pool,
        count: usize,
        len: u64,
        preferred: &[String],
        exclude: &[SegmentId],
        owner: BufferOwner,
    ) -> Vec<Placed> {
        // One buffer per segment: never more than the pool's segments.
        let mut placed: Vec<Placed> =
            Vec::with_capacity(count.min(self.pools[pool as usize].len()));
        if count == 0 || len == 0 {
            return placed;
        }
        let try_segment = |seg: &Segment, placed: &mut Vec<Placed>| {
            // Cheap lock-free pre-check: a segment whose free bytes are too
            // few cannot have a hole large enough.
            if seg.size - seg.allocated_bytes() < len {
                return;
            }
            if let Some((address, block)) = seg.allocate(len, owner) {
                placed.push(Placed {
                    segment: seg.id,
                    address,
                    block,
                });
            }
        };

        // Preferred segments that were tried, so the sweep does not retry
        // them (a failed one stays full for this call; a used one must not
        // get a second replica).
        let mut tried_preferred: Vec<SegmentId> = Vec::new();
        for name in preferred {
            if placed.len() == count {
                return placed;
            }
            let Some(seg) = self.by_name(name) else {
                continue;
            };
            if seg.pool != pool || exclude.contains(&seg.id) || tried_preferred.contains(&seg.id) {
                continue;
            }
            tried_preferred.push(seg.id);
            try_segment(seg, &mut placed);
        }

        let candidates = &self.pools[pool as usize];
        if candidates.is_empty() || placed.len() == count {
            return placed;
        }
        let start = (self.next_random() % candidates.len() as u64) as usize;
        let (tail, head) = candidates.split_at(start);
        for seg in head.iter().chain(tail) {
            if placed.len() == count {
                break;
            }
            if exclude.contains(&seg.id) || tried_preferred.contains(&seg.id) {
                continue;
            }
            try_segment(seg, &mut placed);
        }
        placed
    }

    /// Advances the shared xorshift64 state and returns the new value.
    fn next_random(&self) -> u64 {
        let step = |mut x: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        // Relaxed: the value only spreads load; no other memory depends on it.
        let prev = self
            .rng
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |x| Some(step(x)))
            .expect("closure always returns Some");
        step(prev)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, base: u64, size: u64, pool: Pool) -> SegmentSpec {
        SegmentSpec {
            name: name.into(),
            base,
            size,
            pool,
        }
    }

    fn mem(name: &str, size: u64) -> SegmentSpec {
        spec(name, 0x10_0000, size, Pool::Memory)
    }

    fn own(i: u64) -> BufferOwner {
        BufferOwner::object(i)
    }

    fn table_with(n: usize, size: u64) -> SegmentTable {
        let mut t = SegmentTable::new(12345);
        for i in 0..n {
            let base = (i as u64 + 1) << 32;
            t.mount(1, &spec(&format!("s{i}"), base, size, Pool::Memory))
                .unwrap();
        }
        t
    }

    fn names(t: &SegmentTable, placed: &[Placed]) -> Vec<String> {
        placed
            .iter()
            .map(|p| t.get(p.segment).unwrap().name.to_string())
            .collect()
    }

    // §2: a client mounts segments; re-mounting the identical one is idempotent.
    #[test]
    fn mount_then_identical_remount_is_existing() {
        let mut t = SegmentTable::new(1);
        let first = t.mount(7, &mem("a", 4096)).unwrap();
        assert!(first.is_new());
        let again = t.mount(7, &mem("a", 4096)).unwrap();
        assert!(!again.is_new());
        assert!(Arc::ptr_eq(first.segment(), again.segment()));
        assert_eq!(t.len(), 1);
        assert_eq!(t.capacity(Pool::Memory), 4096);
    }

    // §2: a client's segments of one pool cover distinct bytes; another
    // client's, or the other pool's, may sit at the same addresses.
    #[test]
    fn a_mount_over_the_bytes_of_the_owners_segment_in_the_pool_is_refused() {
        let mut t = SegmentTable::new(1);
        t.mount(7, &spec("a", 0x1000, 0x1000, Pool::Memory))
            .unwrap();
        for (base, size) in [
            (0x1000, 0x1000),
            (0x0800, 0x1000),
            (0x1fff, 1),
            (0, 0x10_0000),
        ] {
            let e = t
                .mount(7, &spec("b", base, size, Pool::Memory))
                .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidParams, "{base:#x}+{size:#x}");
            assert!(
                e.message().contains("overlaps segment 'a'"),
                "{}",
                e.message()
            );
        }
        assert_eq!((t.len(), t.capacity(Pool::Memory)), (1, 0x1000));
        // Touching is not overlapping; other owners and the other pool are
        // other memory.
        t.mount(7, &spec("below", 0, 0x1000, Pool::Memory)).unwrap();
        t.mount(7, &spec("above", 0x2000, 0x1000, Pool::Memory))
            .unwrap();
        t.mount(8, &spec("other", 0x1000, 0x1000, Pool::Memory))
            .unwrap();
        t.mount(7, &spec("ssd", 0x1000, 0x1000, Pool::NofSsd))
            .unwrap();
        // Once the segment is unmounted its bytes are free again.
        t.unmount(7, "a").unwrap();
        t.mount(7, &spec("b", 0x1000, 0x1000, Pool::Memory))
            .unwrap();
    }

    // The overlap check looks at one neighbour: the range starting last
    // below the new one's end. A new range over several, or reaching just
    // into the last or the first of them, is refused all the same, and the
    // indexes stay in step through mounts and unmounts in any order.
    #[test]
    fn the_overlap_check_sees_every_range_it_covers() {
        let mut t = SegmentTable::new(1);
        for i in 0..8u64 {
            t.mount(
                7,
                &spec(&format!("s{i}"), 0x10_000 * (i + 1), 0x8000, Pool::Memory),
            )
            .unwrap();
        }
        for (base, size) in [
            (0, 0x100_000),
            (0x17_fff, 2),
            (0x8_0000 + 0x7fff, 1),
            (0x1_0000, 1),
            (0x4_4000, 0x1_0000),
        ] {
            let e = t
                .mount(7, &spec("x", base, size, Pool::Memory))
                .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidParams, "{base:#x}+{size:#x}");
        }
        // The gaps between them are free.
        t.mount(7, &spec("gap", 0x1_8000, 0x8000, Pool::Memory))
            .unwrap();
        t.check_indexes().unwrap();
        for i in [3u64, 0, 7, 5] {
            t.unmount(7, &format!("s{i}")).unwrap();
            t.check_indexes().unwrap();
        }
        t.mount(7, &spec("again", 0x4_0000, 0x1_0000, Pool::Memory))
            .unwrap();
        let e = t
            .mount(7, &spec("x", 0x2_0000, 0x1_0000, Pool::Memory))
            .unwrap_err();
        assert!(
            e.message().contains("overlaps segment 's1'"),
            "{}",
            e.message()
        );
        t.check_indexes().unwrap();
        assert_eq!(t.len(), 6);
    }

    // §3.2 error codes: same name, different mount -> SEGMENT_ALREADY_EXISTS.
    #[test]
    fn conflicting_mount_of_a_taken_name_is_rejected() {
        let mut t = SegmentTable::new(1);
        t.mount(7, &mem("a", 4096)).unwrap();
        for (owner, s) in [
            (8, mem("a", 4096)),
            (7, mem("a", 8192)),
            (7, spec("a", 0x20_0000, 4096, Pool::Memory)),
            (7, spec("a", 0x10_0000, 4096, Pool::NofSsd)),
        ] {
            let err = t.mount(owner, &s).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::SegmentAlreadyExists, "{s:?}");
            assert!(err.message().contains("'a'"), "{}", err.message());
        }
        assert_eq!(t.len(), 1);
        assert_eq!(t.capacity(Pool::Memory), 4096);
        assert_eq!(t.capacity(Pool::NofSsd), 0);
    }

    #[test]
    fn invalid_specs_are_invalid_params() {
        let mut t = SegmentTable::new(1);
        for s in [
            mem("", 4096),
            mem("a\0b", 4096),
            mem("zero", 0),
            spec("wrap", u64::MAX - 10, 11, Pool::Memory),
        ] {
            let err = t.mount(1, &s).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidParams, "{s:?}");
        }
        // Ending exactly at the top of the address space is fine.
        t.mount(1, &spec("top", u64::MAX - 10, 10, Pool::Memory))
            .unwrap();
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn unmount_checks_name_and_owner() {
        let mut t = SegmentTable::new(1);
        t.mount(7, &mem("a", 4096)).unwrap();
        t.mount(7, &spec("b", 0, 100, Pool::NofSsd)).unwrap();

        let err = t.unmount(7, "nope").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::SegmentNotFound);
        assert!(err.message().contains("'nope'"));

        let err = t.unmount(8, "a").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::IllegalClient);
        assert!(err.message().contains("'a'"));
        assert_eq!(t.len(), 2);

        let a = t.unmount(7, "a").unwrap();
        assert_eq!(&*a.name, "a");
        assert!(t.by_name("a").is_none());
        assert!(t.get(a.id).is_none());
        assert_eq!(t.capacity(Pool::Memory), 0);
        assert_eq!(t.capacity(Pool::NofSsd), 100);
        assert_eq!(
            t.unmount(7, "a").unwrap_err().kind(),
            ErrorKind::SegmentNotFound
        );
        // Placement no longer sees it.
        assert!(t.place(Pool::Memory, 1, 1, &[], &[], own(1)).is_empty());
    }

    #[test]
    fn segment_ids_are_never_reused() {
        let mut t = SegmentTable::new(1);
        let a = t.mount(7, &mem("a", 4096)).unwrap().segment().id;
        t.unmount(7, "a").unwrap();
        let a2 = t.mount(7, &mem("a", 4096)).unwrap().segment().id;
        assert_ne!(a, a2);
        assert!(t.get(a).is_none());
        assert_eq!(t.get(a2).unwrap().name.as_ref(), "a");
    }

    #[test]
    fn lookups_and_per_owner_listing() {
        let mut t = SegmentTable::new(1);
        t.mount(1, &mem("x", 10)).unwrap();
        t.mount(2, &mem("y", 20)).unwrap();
        t.mount(1, &spec("z", 0, 30, Pool::NofSsd)).unwrap();
        let of1: Vec<_> = t
            .segments_of(1)
            .iter()
            .map(|s| s.name.to_string())
            .collect();
        assert_eq!(of1, ["x", "z"]);
        assert!(t.segments_of(3).is_empty());
        let all: Vec<_> = t.iter().map(|s| s.id).collect();
        assert!(all.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(t.by_name("y").unwrap().owner, 2);
        assert!(!t.is_empty());
        assert_eq!(t.capacity(Pool::Memory), 30);
        assert_eq!(t.capacity(Pool::NofSsd), 30);
    }

    #[test]
    fn allocated_is_summed_per_pool() {
        let mut t = SegmentTable::new(1);
        t.mount(1, &mem("m", 1000)).unwrap();
        t.mount(1, &spec("n", 0, 1000, Pool::NofSsd)).unwrap();
        t.place(Pool::Memory, 1, 300, &[], &[], own(1));
        t.place(Pool::NofSsd, 1, 70, &[], &[], own(1));
        assert_eq!(t.allocated(Pool::Memory), 300);
        assert_eq!(t.allocated(Pool::NofSsd), 70);
    }

    // §3: placement spreads load, so over many calls every segment is used.
    #[test]
    fn placement_spreads_over_all_segments() {
        let t = table_with(4, 1 << 20);
        let mut hits: HashMap<SegmentId, usize> = HashMap::new();
        for _ in 0..200 {
            let placed = t.place(Pool::Memory, 1, 64, &[], &[], own(1));
            assert_eq!(placed.len(), 1);
            *hits.entry(placed[0].segment).or_default() += 1;
        }
        assert_eq!(hits.len(), 4, "{hits:?}");
        assert!(hits.values().all(|&n| n >= 10), "{hits:?}");
    }

    // §3: replicas of one object go to distinct segments.
    #[test]
    fn one_call_uses_distinct_segments() {
        let t = table_with(4, 1 << 20);
        for _ in 0..50 {
            let placed = t.place(Pool::Memory, 3, 64, &[], &[], own(1));
            assert_eq!(placed.len(), 3);
            let mut ids: Vec<_> = placed.iter().map(|p| p.segment).collect();
            ids.sort_unstable();
            ids.dedup();
            assert_eq!(ids.len(), 3);
        }
        // Asking for more than there are segments places one per segment.
        let placed = t.place(Pool::Memory, 6, 64, &[], &[], own(1));
        assert_eq!(placed.len(), 4);
    }

    // §3: preferred segments first, in the given order.
    #[test]
    fn preferred_segments_come_first_in_order() {
        let t = table_with(4, 1 << 20);
        let pref = vec![
            "s2".to_string(),
            "unknown".to_string(),
            "s2".to_string(), // repeated: must not get a second replica
            "s0".to_string(),
        ];
        for _ in 0..20 {
            let placed = t.place(Pool::Memory, 3, 64, &pref, &[], own(1));
            let n = names(&t, &placed);
            assert_eq!(n.len(), 3);
            assert_eq!(&n[..2], ["s2", "s0"]);
            assert!(n[2] == "s1" || n[2] == "s3", "{n:?}");
        }
        // A preferred segment of the wrong pool is skipped.
        let mut t = table_with(1, 1 << 20);
        t.mount(1, &spec("ssd", 0, 1 << 20, Pool::NofSsd)).unwrap();
        let placed = t.place(Pool::Memory, 1, 64, &["ssd".to_string()], &[], own(1));
        assert_eq!(names(&t, &placed), ["s0"]);
    }

    #[test]
    fn full_segments_are_skipped() {
        let t = table_with(4, 1000);
        // s1 is full; s3 keeps only a 500-byte hole. s1 is also preferred.
        let s1 = t.by_name("s1").unwrap();
        let s3 = t.by_name("s3").unwrap();
        s1.allocate(1000, own(0)).unwrap();
        s3.reserve(s3.base + 500, 500, own(0)).unwrap(); // 500 left, too small
        let pref = vec!["s1".to_string()];
        for _ in 0..20 {
            let placed = t.place(Pool::Memory, 4, 600, &pref, &[], own(1));
            let mut n = names(&t, &placed);
            n.sort();
            assert_eq!(n, ["s0", "s2"]);
            for p in placed {
                t.get(p.segment)
                    .unwrap()
                    .free(p.block, p.address, 600)
                    .unwrap();
            }
        }
    }

    #[test]
    fn excluded_segments_are_never_used() {
        let t = table_with(4, 1 << 20);
        let s0 = t.by_name("s0").unwrap().id;
        let s2 = t.by_name("s2").unwrap().id;
        let pref = vec!["s0".to_string()];
        for _ in 0..50 {
            let placed = t.place(Pool::Memory, 4, 64, &pref, &[s0, s2], own(1));
            assert_eq!(placed.len(), 2);
            assert!(placed.iter().all(|p| p.segment != s0 && p.segment != s2));
        }
    }

    #[test]
    fn every_placed_buffer_records_the_owner() {
        let t = table_with(3, 1000);
        // s1 has 100 free bytes in two 50-byte holes: it passes the free-bytes
        // pre-check but cannot hold a buffer. Preference makes it come last.
        let s1 = t.by_name("s1").unwrap();
        s1.reserve(s1.base + 50, 900, own(99)).unwrap();
        let pref = ["s0", "s2", "s1"].map(String::from);
        let placed = t.place(Pool::Memory, 3, 100, &pref, &[], own(5));
        assert_eq!(placed.len(), 2);
        for p in &placed {
            let bufs = t.get(p.segment).unwrap().live_buffers();
            assert_eq!(
                bufs,
                vec![crate::segment::LiveBuffer {
                    address: p.address,
                    len: 100,
                    owner: own(5),
                    block: p.block,
                }]
            );
        }
    }

    #[test]
    fn nothing_is_placed_for_zero_count_or_len_or_empty_pool() {
        let t = table_with(2, 1000);
        assert!(t.place(Pool::Memory, 0, 10, &[], &[], own(1)).is_empty());
        assert!(t.place(Pool::Memory, 1, 0, &[], &[], own(1)).is_empty());
        assert!(t.place(Pool::NofSsd, 1, 10, &[], &[], own(1)).is_empty());
        assert_eq!(t.allocated(Pool::Memory), 0);
    }
}
