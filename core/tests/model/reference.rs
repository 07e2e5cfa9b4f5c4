//! The reference model: plain structs (objects in a BTreeMap, replicas as
//! (id, kind, status, role, location), segments as sets of occupied byte
//! ranges, a discarded list, group leases) and the rules of docs/CONTRACT.md §2–§5
//! written out directly. It never calls into the crate's logic: the only
//! things read back from the real master are what the contract leaves open
//! (which segment a buffer went to, at which address, its replica id and the
//! opaque write token), and each of those is validated before it is adopted.

use super::coverage::{self, hit};
use super::ops::*;
use mooncake_meta_core::{
    ErrorKind, EvictionReport, Location, Pool, ReplicaDescriptor, ReplicaKind, ReplicaSelector,
    ReplicaStatus, StartedWrite, UnmountReport, MAX_INSTANT,
};
use std::collections::{BTreeMap, BTreeSet};

#[path = "tasks.rs"]
mod tasks;
#[path = "upkeep.rs"]
mod upkeep;
#[path = "writes.rs"]
mod writes;

pub const LEASE: u64 = 1_000;
pub const DEFAULT_PIN: u64 = 3_000;
pub const SMALL_MAX_PIN: u64 = 20_000;
pub const DISCARD: u64 = 2_000;
pub const RELEASE: u64 = 5_000;

pub type Res = Result<(), String>;
type Real<T> = mooncake_meta_core::Result<T>;

/// A resolved soft-pin request (what a pending write carries).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    Preserve,
    Enable(u64),
    Disable,
}

/// §4.1, as a table.
pub fn resolve(pin: Pin, max: u64) -> Result<Intent, ErrorKind> {
    let enable = |t: u64| {
        if t > max {
            Err(ErrorKind::InvalidParams)
        } else {
            Ok(Intent::Enable(t))
        }
    };
    match pin {
        Pin::Preserve => Ok(Intent::Preserve),
        Pin::Disable => Ok(Intent::Disable),
        Pin::PreserveTtl(_) | Pin::DisableTtl(_) => Err(ErrorKind::InvalidParams),
        Pin::EnableDefault => Ok(Intent::Enable(DEFAULT_PIN)),
        Pin::Enable(t) => enable(t),
        Pin::EnableMax => enable(max),
        Pin::EnableMaxPlusOne => enable(max.saturating_add(1)),
    }
}

/// §4.3 commit table: the committed deadline after `intent` commits at `now`.
pub fn commit(committed: Option<u64>, intent: Intent, now: u64) -> Option<u64> {
    match intent {
        Intent::Preserve => committed.filter(|&d| now < d),
        Intent::Enable(ttl) if ttl > 0 => Some(now.saturating_add(ttl).min(MAX_INSTANT)),
        Intent::Enable(_) | Intent::Disable => None,
    }
}

/// §4.5 carry: only an unexpired deadline survives.
pub fn carry(committed: Option<u64>, now: u64) -> Option<u64> {
    committed.filter(|&d| now < d)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loc {
    Buf { seg: u32, addr: u64 },
    Disk { client: u64 },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rep {
    pub id: u64,
    pub kind: ReplicaKind,
    pub complete: bool,
    /// Copy/move/promotion target (completed only by its task).
    pub target: bool,
    pub loc: Loc,
}

impl Rep {
    /// PROCESSING replica of the write in flight.
    fn write_processing(&self) -> bool {
        !self.complete && !self.target
    }
}

fn sel_matches(sel: ReplicaSelector, kind: ReplicaKind) -> bool {
    match sel {
        ReplicaSelector::Memory => kind == ReplicaKind::Memory,
        ReplicaSelector::NofSsd => kind == ReplicaKind::NofSsd,
        ReplicaSelector::All => kind != ReplicaKind::LocalDisk,
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Task {
    Copy { source: u64, targets: Vec<u64> },
    Move { source: u64, target: u64 },
    Promotion { target: u64 },
}

impl Task {
    fn uses(&self, id: u64) -> bool {
        match self {
            Task::Copy { source, targets } => *source == id || targets.contains(&id),
            Task::Move { source, target } => *source == id || *target == id,
            Task::Promotion { target } => *target == id,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Obj {
    pub size: u64,
    pub writer: u64,
    pub put_start: u64,
    /// Model's own creation sequence: only its order is compared.
    pub seq: u64,
    /// `None` only for objects created by add_local_disk_replica until the
    /// next comparison adopts the (fresh) token.
    pub token: Option<u64>,
    pub lease: u64,
    pub committed: Option<u64>,
    pub pending: Option<Intent>,
    pub reps: Vec<Rep>,
    pub group: Option<String>,
    pub hard_pin: bool,
    pub task: Option<Task>,
}

impl Obj {
    pub fn has_complete(&self) -> bool {
        self.reps.iter().any(|r| r.complete)
    }
    pub fn write_in_flight(&self) -> bool {
        self.reps.iter().any(Rep::write_processing)
    }
    fn busy(&self, id: u64) -> bool {
        self.task.as_ref().is_some_and(|t| t.uses(id))
    }
    /// COMPLETE, non-busy MEMORY replicas.
    fn evictable_memory(&self) -> Vec<u64> {
        self.reps
            .iter()
            .filter(|r| r.kind == ReplicaKind::Memory && r.complete && !self.busy(r.id))
            .map(|r| r.id)
            .collect()
    }
    /// §4.4: pending lives only while an eligible replica can complete.
    fn pending_rule(&mut self) {
        if !self.write_in_flight() {
            self.pending = None;
        }
    }
}

#[derive(Debug, Clone)]
pub struct Seg {
    pub name: &'static str,
    pub owner: u64,
    pub pool: Pool,
    pub base: u64,
    pub size: u64,
    pub id: u32,
    /// Occupied ranges (live replica buffers and discarded ones): addr -> len.
    pub bufs: BTreeMap<u64, u64>,
}

impl Seg {
    /// Whether some free range holds `len` bytes.
    pub fn fits(&self, len: u64) -> bool {
        let mut cursor = self.base;
        for (&a, &l) in &self.bufs {
            if a - cursor >= len {
                return true;
            }
            cursor = a + l;
        }
        self.base + self.size - cursor >= len
    }

    pub fn allocated(&self) -> u64 {
        self.bufs.values().sum()
    }

    fn take(&mut self, addr: u64, len: u64) -> Res {
        if addr < self.base || addr + len > self.base + self.size {
            return Err(format!(
                "buffer {addr:#x}+{len} outside segment {}",
                self.name
            ));
        }
        if let Some((&a, &l)) = self.bufs.range(..addr + len).next_back() {
            if a + l > addr {
                return Err(format!(
                    "buffer {addr:#x}+{len} on {} overlaps {a:#x}+{l}",
                    self.name
                ));
            }
        }
        self.bufs.insert(addr, len);
        Ok(())
    }

    fn free(&mut self, addr: u64, len: u64) -> Res {
        match self.bufs.remove(&addr) {
            Some(l) if l == len => Ok(()),
            other => Err(format!(
                "model: freeing {addr:#x}+{len} on {} found {other:?}",
                self.name
            )),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Disc {
    pub seg: u32,
    pub addr: u64,
    pub len: u64,
    pub release_at: u64,
}

/// What a successful allocation must look like.
#[derive(Debug)]
pub struct Plan {
    pub mem: usize,
    pub nof: usize,
    /// Preferred segments that must be among the chosen ones.
    pub must: Vec<u32>,
}

pub struct Model {
    pub setup: Setup,
    pub max_ttl: u64,
    pub now: u64,
    pub objs: BTreeMap<usize, Obj>,
    pub segs: Vec<Seg>,
    pub disc: Vec<Disc>,
    /// Shared group leases, keyed (tenant, group); present while the group has members.
    pub glease: BTreeMap<(String, String), u64>,
    /// Committed group retention deadlines, keyed (tenant, group),
    /// independent of members (expired ones stay until normalised).
    pub retained: BTreeMap<(String, String), u64>,
    pub next_seq: u64,
    pub tokens: BTreeSet<u64>,
    pub replica_ids: BTreeSet<u64>,
    pub seg_ids: BTreeSet<u32>,
}

pub fn expect_err<T: std::fmt::Debug>(real: &Real<T>, kind: ErrorKind) -> Res {
    match real {
        Err(e) if e.kind() == kind => {
            coverage::result(kind.name());
            Ok(())
        }
        other => Err(format!("predicted {kind}, got {other:?}")),
    }
}

pub fn expect_ok<T: std::fmt::Debug>(real: &Real<T>) -> Result<&T, String> {
    coverage::result("OK");
    real.as_ref()
        .map_err(|e| format!("predicted OK, got {e} ({})", e.kind()))
}

fn pool_kind(pool: Pool) -> ReplicaKind {
    match pool {
        Pool::Memory => ReplicaKind::Memory,
        Pool::NofSsd => ReplicaKind::NofSsd,
    }
}

impl Model {
    pub fn new(setup: Setup, start: u64) -> Model {
        Model {
            setup,
            max_ttl: if setup.unbounded_max_ttl {
                mooncake_meta_core::MAX_DURATION_MS
            } else {
                SMALL_MAX_PIN
            },
            now: start,
            objs: BTreeMap::new(),
            segs: Vec::new(),
            disc: Vec::new(),
            glease: BTreeMap::new(),
            retained: BTreeMap::new(),
            next_seq: 1,
            tokens: BTreeSet::new(),
            replica_ids: BTreeSet::new(),
            seg_ids: BTreeSet::new(),
        }
    }

    // ----- helpers --------------------------------------------------------

    fn group_key(k: usize, g: &str) -> (String, String) {
        (KEYS[k].0.to_owned(), g.to_owned())
    }

    pub fn effective_lease(&self, k: usize) -> u64 {
        let o = &self.objs[&k];
        match &o.group {
            Some(g) => o.lease.max(self.glease[&Self::group_key(k, g)]),
            None => o.lease,
        }
    }

    fn lease_live(&self, k: usize) -> bool {
        self.now < self.effective_lease(k)
    }

    fn active(&self, k: usize) -> bool {
        self.objs[&k].committed.is_some_and(|d| self.now < d)
    }

    /// Whether a group's retention protects at now.
    pub fn retention_active(&self, g: &(String, String)) -> bool {
        self.retained.get(g).is_some_and(|&d| self.now < d)
    }

    /// Own soft pin or group retention active (docs/CONTRACT.md §5).
    pub fn protected(&self, k: usize) -> bool {
        self.active(k)
            || self.objs[&k]
                .group
                .as_ref()
                .is_some_and(|g| self.retention_active(&Self::group_key(k, g)))
    }

    /// RetainGroups: per-group results, the deadline on success. A bad
    /// shared argument (the tenant, TTL 0 or above the maximum) fails every
    /// entry with INVALID_PARAMS and changes nothing (SEMANTICS §10).
    pub fn retain_groups(
        &mut self,
        tenant: &str,
        groups: &[&str],
        ttl: u64,
    ) -> Result<Vec<Result<u64, ErrorKind>>, ErrorKind> {
        if tenant.is_empty() || ttl == 0 || ttl > RETAIN_MAX_TTL {
            // The call's result code (coverage.rs requires it): its one
            // refusal, given to every entry.
            coverage::result(ErrorKind::InvalidParams.name());
            return Ok(vec![Err(ErrorKind::InvalidParams); groups.len()]);
        }
        let now = self.now;
        let target = now.saturating_add(ttl).min(mooncake_meta_core::MAX_INSTANT);
        let mut out = Vec::new();
        for &g in groups {
            if g.is_empty() {
                out.push(Err(ErrorKind::InvalidParams));
                continue;
            }
            let id = (tenant.to_owned(), g.to_owned());
            let active = self.retained.get(&id).copied().filter(|&d| now < d);
            // Admission of a new group into a registry full of committed
            // deadlines first normalises the expired ones.
            if active.is_none() && self.retained.len() >= MAX_RETAINED {
                self.retained.retain(|_, d| now < *d);
                if self.retained.len() >= MAX_RETAINED {
                    hit(|| "retain: full".into());
                    out.push(Err(ErrorKind::GroupRetentionFull));
                    continue;
                }
            }
            let d = active.map_or(target, |d| d.max(target));
            hit(|| format!("retain: extends an active deadline {}", active.is_some()));
            self.retained.insert(id, d);
            out.push(Ok(d));
        }
        Ok(out)
    }

    /// ReleaseGroups: per-group results. A bad tenant fails every entry
    /// with INVALID_PARAMS and changes nothing.
    pub fn release_groups(
        &mut self,
        tenant: &str,
        groups: &[&str],
    ) -> Result<Vec<Result<(), ErrorKind>>, ErrorKind> {
        if tenant.is_empty() {
            coverage::result(ErrorKind::InvalidParams.name());
            return Ok(vec![Err(ErrorKind::InvalidParams); groups.len()]);
        }
        Ok(groups
            .iter()
            .map(|&g| {
                if g.is_empty() {
                    return Err(ErrorKind::InvalidParams);
                }
                self.retained.remove(&(tenant.to_owned(), g.to_owned()));
                Ok(())
            })
            .collect())
    }

    fn new_seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }

    fn fresh_token(&mut self, t: u64) -> Res {
        if t == 0 || !self.tokens.insert(t) {
            return Err(format!("write token {t} is 0 or was handed out before"));
        }
        Ok(())
    }

    pub fn adopt_token(&mut self, k: usize, t: u64) -> Res {
        self.fresh_token(t)?;
        self.objs
            .get_mut(&k)
            .expect("adopting for a live key")
            .token = Some(t);
        Ok(())
    }

    fn fresh_replica_id(&mut self, id: u64) -> Res {
        if !self.replica_ids.insert(id) {
            return Err(format!("replica id {id} was handed out before"));
        }
        Ok(())
    }

    pub fn seg_by_id(&self, id: u32) -> Option<&Seg> {
        self.segs.iter().find(|s| s.id == id)
    }

    fn seg_by_id_mut(&mut self, id: u32) -> Option<&mut Seg> {
        self.segs.iter_mut().find(|s| s.id == id)
    }

    pub fn seg_by_name(&self, name: &str) -> Option<&Seg> {
        self.segs.iter().find(|s| s.name == name)
    }

    fn free_buf(&mut self, seg: u32, addr: u64, len: u64) -> Res {
        match self.seg_by_id_mut(seg) {
            Some(s) => s.free(addr, len),
            None => Err(format!("model: live buffer on unmounted segment {seg}")),
        }
    }

    fn free_reps(&mut self, reps: &[Rep], size: u64) -> Res {
        for r in reps {
            if let Loc::Buf { seg, addr } = r.loc {
                self.free_buf(seg, addr, size)?;
            }
        }
        Ok(())
    }

    /// Holds `reps`' buffers until `release_at`, saturated at `MAX_INSTANT`
    /// as every instant the master computes is (docs/CONTRACT.md §1, §3.1).
    fn discard_reps(&mut self, reps: &[Rep], size: u64, release_at: u64) {
        let release_at = release_at.min(MAX_INSTANT);
        for r in reps {
            if let Loc::Buf { seg, addr } = r.loc {
                self.disc.push(Disc {
                    seg,
                    addr,
                    len: size,
                    release_at,
                });
            }
        }
    }

    /// Erases an object: buffers freed now (`None`) or discarded; its
    /// committed deadline goes with it (the gauge is derived); group left.
    fn erase(&mut self, k: usize, release_at: Option<u64>) -> Res {
        let o = self.objs.remove(&k).expect("erasing a live key");
        match release_at {
            None => self.free_reps(&o.reps, o.size)?,
            Some(at) => self.discard_reps(&o.reps, o.size, at),
        }
        if let Some(g) = &o.group {
            let still = self
                .objs
                .iter()
                .any(|(k2, o2)| KEYS[*k2].0 == KEYS[k].0 && o2.group.as_deref() == Some(g));
            if !still {
                self.glease.remove(&Self::group_key(k, g));
            }
        }
        Ok(())
    }

    fn create(&mut self, k: usize, o: Obj) {
        if let Some(g) = &o.group {
            self.glease.entry(Self::group_key(k, g)).or_insert(0);
        }
        self.objs.insert(k, o);
    }

    fn grant_lease(&mut self, k: usize) {
        let until = self.now.saturating_add(LEASE).min(MAX_INSTANT);
        let o = self.objs.get_mut(&k).unwrap();
        match &o.group {
            Some(g) => {
                hit(|| "read: group lease raised".into());
                let l = self.glease.get_mut(&Self::group_key(k, g)).unwrap();
                *l = (*l).max(until);
            }
            None => o.lease = o.lease.max(until),
        }
    }

    pub fn gauge(&self) -> u64 {
        self.objs.values().filter(|o| o.committed.is_some()).count() as u64
    }

    // ----- allocation -----------------------------------------------------

    /// How many buffers of `len` a pool takes: one per segment with a free
    /// range of `len`; preferred segments (in order) first.
    fn plan_pool(
        &self,
        pool: Pool,
        count: usize,
        len: u64,
        preferred: &[&str],
    ) -> (usize, Vec<u32>) {
        let fitting: Vec<&Seg> = self
            .segs
            .iter()
            .filter(|s| s.pool == pool && s.fits(len))
            .collect();
        let placed = count.min(fitting.len());
        let mut must = Vec::new();
        for name in preferred {
            if must.len() == placed {
                break;
            }
            if let Some(s) = fitting.iter().find(|s| s.name == *name) {
                if !must.contains(&s.id) {
                    must.push(s.id);
                }
            }
        }
        (placed, must)
    }

    /// §3 shape rules: memory-only best effort, 1+1 either, others exact.
    fn plan_write(
        &self,
        mem: u32,
        nof: u32,
        len: u64,
        preferred: &[&str],
    ) -> Result<Plan, ErrorKind> {
        let (pm, mut must) = self.plan_pool(Pool::Memory, mem as usize, len, preferred);
        let (pn, must_n) = self.plan_pool(Pool::NofSsd, nof as usize, len, preferred);
        must.extend(must_n);
        let enough = if nof == 0 {
            pm >= 1
        } else if mem == 1 && nof == 1 {
            pm + pn >= 1
        } else {
            pm == mem as usize && pn == nof as usize
        };
        if enough {
            Ok(Plan {
                mem: pm,
                nof: pn,
                must,
            })
        } else {
            Err(ErrorKind::NoAvailableHandle)
        }
    }

    /// Validates the buffers the master chose against `plan` and occupies
    /// them in the model.
    fn accept(
        &mut self,
        plan: &Plan,
        size: u64,
        descs: &[ReplicaDescriptor],
        target: bool,
    ) -> Result<Vec<Rep>, String> {
        let mut reps = Vec::new();
        let mut used: Vec<u32> = Vec::new();
        let (mut mem, mut nof) = (0, 0);
        for d in descs {
            let Location::Buffer {
                segment,
                address,
                size: len,
            } = d.location
            else {
                return Err(format!("buffer replica expected, got {d:?}"));
            };
            if d.status != ReplicaStatus::Processing || len != size {
                return Err(format!(
                    "staged replica should be PROCESSING with {size} bytes: {d:?}"
                ));
            }
            let seg = self
                .seg_by_id(segment)
                .ok_or_else(|| format!("replica on unknown segment: {d:?}"))?;
            if pool_kind(seg.pool) != d.kind {
                return Err(format!(
                    "replica kind {:?} on a {:?} segment",
                    d.kind, seg.pool
                ));
            }
            if !seg.fits(size) || used.contains(&segment) {
                return Err(format!(
                    "replica placed on segment {} which had no room or already holds one: {d:?}",
                    seg.name
                ));
            }
            used.push(segment);
            match d.kind {
                ReplicaKind::Memory => mem += 1,
                _ => nof += 1,
            }
            self.fresh_replica_id(d.id)?;
            self.seg_by_id_mut(segment).unwrap().take(address, size)?;
            reps.push(Rep {
                id: d.id,
                kind: d.kind,
                complete: false,
                target,
                loc: Loc::Buf {
                    seg: segment,
                    addr: address,
                },
            });
        }
        if (mem, nof) != (plan.mem, plan.nof) {
            return Err(format!(
                "placed {mem} MEMORY + {nof} NOF_SSD, predicted {} + {}",
                plan.mem, plan.nof
            ));
        }
        if let Some(m) = plan.must.iter().find(|m| !used.contains(m)) {
            return Err(format!(
                "preferred segment {m} had room but was not used ({descs:?})"
            ));
        }
        Ok(reps)
    }

    fn validate(&self, size: u64, cfg: &Cfg) -> Result<Intent, ErrorKind> {
        if size == 0 || (cfg.mem == 0 && cfg.nof == 0) || GROUPS[cfg.group] == Some("") {
            return Err(ErrorKind::InvalidParams);
        }
        resolve(cfg.pin, self.max_ttl)
    }
}

pub fn loc_of(d: &ReplicaDescriptor) -> Loc {
    match d.location {
        Location::Buffer {
            segment, address, ..
        } => Loc::Buf {
            seg: segment,
            addr: address,
        },
        Location::LocalDisk { client, .. } => Loc::Disk { client },
    }
}

fn location_len(d: &ReplicaDescriptor) -> u64 {
    match d.location {
        Location::Buffer { size, .. } | Location::LocalDisk { size, .. } => size,
    }
}
