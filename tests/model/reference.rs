//! The reference model: plain structs (objects in a BTreeMap, replicas as
//! (id, kind, status, role, location), segments as sets of occupied byte
//! ranges, a discarded list, group leases) and the rules of SEMANTICS §1–§4
//! written out directly. It never calls into the crate's logic: the only
//! things read back from the real master are what the contract leaves open
//! (which segment a buffer went to, at which address, its replica id and the
//! opaque write token), and each of those is validated before it is adopted.

use super::coverage::{self, hit};
use super::ops::*;
use mooncake_meta::{
    ErrorKind, EvictionReport, Location, Pool, ReplicaDescriptor, ReplicaKind, ReplicaSelector,
    ReplicaStatus, StartedWrite, UnmountReport, MAX_INSTANT,
};
use std::collections::{BTreeMap, BTreeSet};

pub const LEASE: u64 = 1_000;
pub const DEFAULT_PIN: u64 = 3_000;
pub const SMALL_MAX_PIN: u64 = 20_000;
pub const DISCARD: u64 = 2_000;
pub const RELEASE: u64 = 5_000;

pub type Res = Result<(), String>;
type Real<T> = mooncake_meta::Result<T>;

/// A resolved soft-pin request (what a pending write carries).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    Preserve,
    Enable(u64),
    Disable,
}

/// §3.1, as a table.
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

/// §3.3 commit table: the committed deadline after `intent` commits at `now`.
pub fn commit(committed: Option<u64>, intent: Intent, now: u64) -> Option<u64> {
    match intent {
        Intent::Preserve => committed.filter(|&d| now < d),
        Intent::Enable(ttl) if ttl > 0 => Some(now.saturating_add(ttl).min(MAX_INSTANT)),
        Intent::Enable(_) | Intent::Disable => None,
    }
}

/// §3.5 carry: only an unexpired deadline survives.
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
    /// §3.4: pending lives only while an eligible replica can complete.
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

enum Case {
    Absent,
    Replace,
    InPlace,
    Resize,
}

impl Model {
    pub fn new(setup: Setup, start: u64) -> Model {
        Model {
            setup,
            max_ttl: if setup.unbounded_max_ttl {
                u64::MAX
            } else {
                SMALL_MAX_PIN
            },
            now: start,
            objs: BTreeMap::new(),
            segs: Vec::new(),
            disc: Vec::new(),
            glease: BTreeMap::new(),
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

    fn discard_reps(&mut self, reps: &[Rep], size: u64, release_at: u64) {
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
        let until = self.now.saturating_add(LEASE);
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

    /// §2 shape rules: memory-only best effort, 1+1 either, others exact.
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

    // ----- writes ---------------------------------------------------------

    pub fn put_start(
        &mut self,
        client: u64,
        k: usize,
        size: u64,
        cfg: &Cfg,
        real: &Real<StartedWrite>,
    ) -> Res {
        let intent = match self.validate(size, cfg) {
            Ok(i) => i,
            Err(e) => return expect_err(real, e),
        };
        let now = self.now;
        let replace = match self.objs.get(&k) {
            Some(o) if o.has_complete() || now <= o.put_start.saturating_add(DISCARD) => {
                return expect_err(real, ErrorKind::ObjectAlreadyExists)
            }
            Some(_) => true,
            None => false,
        };
        let plan = match self.plan_write(cfg.mem, cfg.nof, size, PREFERRED[cfg.preferred]) {
            Ok(p) => p,
            Err(e) => return expect_err(real, e),
        };
        let w = expect_ok(real)?;
        let reps = self.accept(&plan, size, &w.replicas, false)?;
        // A stale write with nothing COMPLETE is replaced; nothing carried.
        if replace {
            hit(|| "put_start: stale write replaced".into());
            self.erase(k, Some(now + RELEASE))?;
        }
        self.fresh_token(w.token)?;
        let seq = self.new_seq();
        self.create(
            k,
            Obj {
                size,
                writer: client,
                put_start: now,
                seq,
                token: Some(w.token),
                lease: 0,
                committed: None,
                pending: Some(intent),
                reps,
                group: GROUPS[cfg.group].map(str::to_owned),
                hard_pin: cfg.hard_pin,
                task: None,
            },
        );
        Ok(())
    }

    pub fn upsert_start(
        &mut self,
        client: u64,
        k: usize,
        size: u64,
        cfg: &Cfg,
        real: &Real<StartedWrite>,
    ) -> Res {
        let intent = match self.validate(size, cfg) {
            Ok(i) => i,
            Err(e) => return expect_err(real, e),
        };
        let now = self.now;
        let release_at = now.saturating_add(RELEASE);
        let case = match self.objs.get(&k) {
            None => Case::Absent,
            Some(o) => {
                if o.group.as_deref() != GROUPS[cfg.group] {
                    return expect_err(real, ErrorKind::InvalidParams);
                }
                if o.task.is_some() {
                    return expect_err(real, ErrorKind::ObjectHasReplicationTask);
                }
                // What a case B would write in place: COMPLETE MEMORY/NOF_SSD.
                let in_place = o
                    .reps
                    .iter()
                    .any(|r| r.complete && r.kind != ReplicaKind::LocalDisk);
                if !o.has_complete() {
                    Case::Replace
                } else if o.size == size && in_place {
                    Case::InPlace
                } else {
                    Case::Resize
                }
            }
        };
        let plan = match case {
            Case::InPlace => None,
            _ => match self.plan_write(cfg.mem, cfg.nof, size, PREFERRED[cfg.preferred]) {
                Ok(p) => Some(p),
                Err(e) => return expect_err(real, e),
            },
        };
        let w = expect_ok(real)?;
        self.fresh_token(w.token)?;
        hit(|| {
            let o = self.objs.get(&k);
            let preempts = o.is_some_and(Obj::write_in_flight);
            let c = match case {
                Case::Absent => "A (absent)",
                Case::Replace => "A (nothing COMPLETE survives preemption)",
                Case::InPlace => "B (same size)",
                Case::Resize if o.is_some_and(|o| o.size == size) => "C (local-disk only)",
                Case::Resize => "C (other size)",
            };
            format!(
                "upsert case {c}{}",
                if preempts { ", preempting" } else { "" }
            )
        });
        match case {
            Case::Absent => {
                let reps = self.accept(plan.as_ref().unwrap(), size, &w.replicas, false)?;
                let seq = self.new_seq();
                self.create(
                    k,
                    Obj {
                        size,
                        writer: client,
                        put_start: now,
                        seq,
                        token: Some(w.token),
                        lease: 0,
                        committed: None,
                        pending: Some(intent),
                        reps,
                        group: GROUPS[cfg.group].map(str::to_owned),
                        hard_pin: cfg.hard_pin,
                        task: None,
                    },
                );
            }
            Case::InPlace => {
                let o = self.objs.get_mut(&k).unwrap();
                let (preempted, kept): (Vec<Rep>, Vec<Rep>) = std::mem::take(&mut o.reps)
                    .into_iter()
                    .partition(Rep::write_processing);
                // Same ids back to PROCESSING; old LOCAL_DISK copies are stale.
                o.reps = kept
                    .into_iter()
                    .filter(|r| r.kind != ReplicaKind::LocalDisk)
                    .map(|r| Rep {
                        complete: false,
                        target: false,
                        ..r
                    })
                    .collect();
                o.writer = client;
                o.put_start = now;
                o.token = Some(w.token);
                o.pending = Some(intent);
                let size = o.size;
                let mut expected: Vec<(u64, ReplicaKind, Loc)> =
                    o.reps.iter().map(|r| (r.id, r.kind, r.loc)).collect();
                expected.sort_by_key(|e| e.0);
                let mut got: Vec<(u64, ReplicaKind, Loc)> = Vec::new();
                for d in &w.replicas {
                    if d.status != ReplicaStatus::Processing {
                        return Err(format!("case B replica not PROCESSING: {d:?}"));
                    }
                    got.push((d.id, d.kind, loc_of(d)));
                }
                got.sort_by_key(|e| e.0);
                if got != expected {
                    return Err(format!("case B replicas {got:?}, predicted {expected:?}"));
                }
                self.discard_reps(&preempted, size, release_at);
            }
            Case::Replace | Case::Resize => {
                let fresh = self.accept(plan.as_ref().unwrap(), size, &w.replicas, false)?;
                let seq = self.new_seq();
                let o = self.objs.get_mut(&k).unwrap();
                let old = std::mem::replace(&mut o.reps, fresh);
                let old_size = o.size;
                hit(|| match o.committed {
                    None => "carry: nothing committed".into(),
                    Some(d) if now < d => "carry: unexpired deadline carried".into(),
                    Some(_) => "carry: expired deadline dropped".into(),
                });
                o.committed = carry(o.committed, now);
                if matches!(case, Case::Resize) {
                    o.hard_pin |= cfg.hard_pin;
                } else {
                    o.hard_pin = cfg.hard_pin;
                }
                o.size = size;
                o.writer = client;
                o.put_start = now;
                o.token = Some(w.token);
                o.seq = seq;
                o.pending = Some(intent);
                self.discard_reps(&old, old_size, release_at);
            }
        }
        Ok(())
    }

    fn writer_checks(&self, client: u64, k: usize, tok: Option<u64>) -> Result<(), ErrorKind> {
        let o = self.objs.get(&k).ok_or(ErrorKind::ObjectNotFound)?;
        if o.writer != client {
            return Err(ErrorKind::IllegalClient);
        }
        match tok {
            Some(t) if Some(t) != o.token => Err(ErrorKind::StaleWriteToken),
            _ => Ok(()),
        }
    }

    pub fn end(
        &mut self,
        client: u64,
        k: usize,
        sel: ReplicaSelector,
        tok: Option<u64>,
        real: &Real<()>,
    ) -> Res {
        if let Err(e) = self.writer_checks(client, k, tok) {
            return expect_err(real, e);
        }
        let now = self.now;
        let o = self.objs.get_mut(&k).unwrap();
        if !o.write_in_flight() {
            let all_complete = o
                .reps
                .iter()
                .filter(|r| !r.target && sel_matches(sel, r.kind))
                .all(|r| r.complete);
            return if all_complete {
                expect_ok(real).map(|_| ())
            } else {
                expect_err(real, ErrorKind::InvalidWrite)
            };
        }
        let had_complete = o.has_complete();
        let mut completed = 0;
        for r in o.reps.iter_mut() {
            if r.write_processing() && sel_matches(sel, r.kind) {
                r.complete = true;
                completed += 1;
            }
        }
        // Only the End that makes the object readable commits, once.
        if !had_complete && completed > 0 {
            if let Some(intent) = o.pending.take() {
                hit(|| {
                    let before = match o.committed {
                        None => "none",
                        Some(d) if now < d => "active",
                        Some(_) => "expired",
                    };
                    let intent = match intent {
                        Intent::Enable(0) => "ENABLE(0)".to_owned(),
                        Intent::Enable(t)
                            if t == MAX_INSTANT || now.saturating_add(t) >= MAX_INSTANT =>
                        {
                            "ENABLE(saturating)".to_owned()
                        }
                        Intent::Enable(_) => "ENABLE(ttl>0)".to_owned(),
                        i => format!("{i:?}"),
                    };
                    format!("commit cell: {before} x {intent}")
                });
                o.committed = commit(o.committed, intent, now);
            }
        }
        o.lease = o.lease.max(now);
        o.pending_rule();
        hit(|| match (completed, had_complete, o.write_in_flight()) {
            (0, _, _) => "end: completed nothing".into(),
            (_, true, _) => "end: later End of the same write (no refresh)".into(),
            (_, false, true) => "end: first End, write still in flight".into(),
            (_, false, false) => "end: first End completes the write".into(),
        });
        expect_ok(real).map(|_| ())
    }

    pub fn revoke(
        &mut self,
        client: u64,
        k: usize,
        sel: ReplicaSelector,
        tok: Option<u64>,
        real: &Real<()>,
    ) -> Res {
        if let Err(e) = self.writer_checks(client, k, tok) {
            return expect_err(real, e);
        }
        let o = self.objs.get_mut(&k).unwrap();
        if !o.write_in_flight()
            || o.reps
                .iter()
                .any(|r| !r.target && sel_matches(sel, r.kind) && r.complete)
        {
            return expect_err(real, ErrorKind::InvalidWrite);
        }
        let (revoked, kept): (Vec<Rep>, Vec<Rep>) = std::mem::take(&mut o.reps)
            .into_iter()
            .partition(|r| r.write_processing() && sel_matches(sel, r.kind));
        o.reps = kept;
        o.pending_rule();
        hit(|| match (o.reps.is_empty(), o.pending.is_some()) {
            (true, _) => "revoke: object erased".into(),
            (false, true) => "revoke: partial, pending kept".into(),
            (false, false) => "revoke: pending cleared, object kept".into(),
        });
        let (size, empty) = (o.size, o.reps.is_empty());
        self.free_reps(&revoked, size)?;
        if empty {
            self.erase(k, None)?;
        }
        expect_ok(real).map(|_| ())
    }

    // ----- reads ----------------------------------------------------------

    pub fn get(&mut self, k: usize, real: &Real<Vec<ReplicaDescriptor>>) -> Res {
        let Some(o) = self.objs.get(&k) else {
            return expect_err(real, ErrorKind::ObjectNotFound);
        };
        let mut want: Vec<(u64, ReplicaKind, Loc)> = o
            .reps
            .iter()
            .filter(|r| r.complete)
            .map(|r| (r.id, r.kind, r.loc))
            .collect();
        if want.is_empty() {
            return expect_err(real, ErrorKind::ReplicaIsNotReady);
        }
        want.sort_by_key(|w| w.0);
        let size = o.size;
        let list = expect_ok(real)?;
        let mut got = Vec::new();
        for d in list {
            if d.status != ReplicaStatus::Complete || location_len(d) != size {
                return Err(format!("get returned {d:?}"));
            }
            got.push((d.id, d.kind, loc_of(d)));
        }
        got.sort_by_key(|g| g.0);
        if got != want {
            return Err(format!("get returned {got:?}, predicted {want:?}"));
        }
        self.grant_lease(k);
        Ok(())
    }

    pub fn exist(&mut self, k: usize, real: &Real<bool>) -> Res {
        let readable = self.objs.get(&k).is_some_and(Obj::has_complete);
        match real {
            Ok(b) if *b == readable => {}
            other => return Err(format!("exist predicted {readable}, got {other:?}")),
        }
        coverage::result(if readable { "true" } else { "false" });
        if readable {
            self.grant_lease(k);
        }
        Ok(())
    }

    // ----- removal --------------------------------------------------------

    fn removable(&self, k: usize, force: bool) -> Result<(), ErrorKind> {
        let o = &self.objs[&k];
        if o.reps.iter().any(|r| !r.complete) {
            return Err(ErrorKind::ReplicaIsNotReady);
        }
        if o.task.is_some() {
            return Err(ErrorKind::ObjectHasReplicationTask);
        }
        if !force && self.lease_live(k) {
            return Err(ErrorKind::ObjectHasLease);
        }
        Ok(())
    }

    pub fn remove(&mut self, k: usize, force: bool, real: &Real<()>) -> Res {
        if !self.objs.contains_key(&k) {
            return expect_err(real, ErrorKind::ObjectNotFound);
        }
        if let Err(e) = self.removable(k, force) {
            return expect_err(real, e);
        }
        expect_ok(real)?;
        self.erase(k, None)
    }

    /// RemoveAll / RemoveByRegex: the count of removable matching keys.
    pub fn remove_matching(
        &mut self,
        force: bool,
        pred: impl Fn(usize) -> bool,
    ) -> Result<u64, String> {
        let victims: Vec<usize> = self
            .objs
            .keys()
            .copied()
            .filter(|&k| pred(k) && self.removable(k, force).is_ok())
            .collect();
        for &k in &victims {
            self.erase(k, None)?;
        }
        Ok(victims.len() as u64)
    }

    // ----- copy / move / promotion -----------------------------------------

    /// The COMPLETE buffer replica a task reads (MEMORY first, then lowest id).
    fn source(&self, k: usize, seg: Option<u32>) -> Result<u64, ErrorKind> {
        let o = &self.objs[&k];
        let best = o
            .reps
            .iter()
            .filter(|r| match r.loc {
                Loc::Buf { seg: s, .. } => r.complete && seg.is_none_or(|x| x == s),
                Loc::Disk { .. } => false,
            })
            .min_by_key(|r| (r.kind != ReplicaKind::Memory, r.id));
        match best {
            Some(r) => Ok(r.id),
            None if seg.is_some() => Err(ErrorKind::ReplicaNotFound),
            None if o.reps.iter().any(|r| !r.complete) => Err(ErrorKind::ReplicaIsNotReady),
            None => Err(ErrorKind::ReplicaNotFound),
        }
    }

    /// Checks named targets: mounted, not holding a replica of the object,
    /// distinct, then room on each.
    fn check_targets(&self, k: usize, names: &[&str]) -> Result<Vec<u32>, ErrorKind> {
        let o = &self.objs[&k];
        let mut ids = Vec::new();
        for name in names {
            let seg = self.seg_by_name(name).ok_or(ErrorKind::SegmentNotFound)?;
            let holds = o
                .reps
                .iter()
                .any(|r| matches!(r.loc, Loc::Buf { seg: s, .. } if s == seg.id));
            if holds || ids.contains(&seg.id) {
                return Err(ErrorKind::InvalidParams);
            }
            ids.push(seg.id);
        }
        for id in &ids {
            if !self.seg_by_id(*id).unwrap().fits(o.size) {
                return Err(ErrorKind::NoAvailableHandle);
            }
        }
        Ok(ids)
    }

    /// Occupies the staged task targets, which must be on `segs` in order.
    fn accept_targets(
        &mut self,
        k: usize,
        segs: &[u32],
        descs: &[ReplicaDescriptor],
    ) -> Result<Vec<u64>, String> {
        let size = self.objs[&k].size;
        if descs.len() != segs.len() {
            return Err(format!(
                "{} targets staged, predicted {}",
                descs.len(),
                segs.len()
            ));
        }
        let mut ids = Vec::new();
        for (d, &seg) in descs.iter().zip(segs) {
            let pool = self.seg_by_id(seg).unwrap().pool;
            match d.location {
                Location::Buffer {
                    segment,
                    address,
                    size: len,
                } if segment == seg
                    && len == size
                    && d.kind == pool_kind(pool)
                    && d.status == ReplicaStatus::Processing =>
                {
                    self.fresh_replica_id(d.id)?;
                    self.seg_by_id_mut(seg).unwrap().take(address, size)?;
                    self.objs.get_mut(&k).unwrap().reps.push(Rep {
                        id: d.id,
                        kind: d.kind,
                        complete: false,
                        target: true,
                        loc: Loc::Buf { seg, addr: address },
                    });
                    ids.push(d.id);
                }
                _ => {
                    return Err(format!(
                        "target {d:?} should be PROCESSING on segment {seg}"
                    ))
                }
            }
        }
        Ok(ids)
    }

    pub fn copy_start(
        &mut self,
        k: usize,
        names: &[&str],
        real: &Real<Vec<ReplicaDescriptor>>,
    ) -> Res {
        if names.is_empty() {
            return expect_err(real, ErrorKind::InvalidParams);
        }
        let Some(o) = self.objs.get(&k) else {
            return expect_err(real, ErrorKind::ObjectNotFound);
        };
        if o.task.is_some() {
            return expect_err(real, ErrorKind::ObjectHasReplicationTask);
        }
        let source = match self.source(k, None) {
            Ok(s) => s,
            Err(e) => return expect_err(real, e),
        };
        let segs = match self.check_targets(k, names) {
            Ok(s) => s,
            Err(e) => return expect_err(real, e),
        };
        let descs = expect_ok(real)?;
        let targets = self.accept_targets(k, &segs, descs)?;
        self.objs.get_mut(&k).unwrap().task = Some(Task::Copy { source, targets });
        Ok(())
    }

    pub fn move_start(
        &mut self,
        k: usize,
        from: &str,
        to: &str,
        real: &Real<ReplicaDescriptor>,
    ) -> Res {
        let Some(o) = self.objs.get(&k) else {
            return expect_err(real, ErrorKind::ObjectNotFound);
        };
        if o.task.is_some() {
            return expect_err(real, ErrorKind::ObjectHasReplicationTask);
        }
        let Some(from) = self.seg_by_name(from).map(|s| s.id) else {
            return expect_err(real, ErrorKind::SegmentNotFound);
        };
        let source = match self.source(k, Some(from)) {
            Ok(s) => s,
            Err(e) => return expect_err(real, e),
        };
        let segs = match self.check_targets(k, &[to]) {
            Ok(s) => s,
            Err(e) => return expect_err(real, e),
        };
        let d = *expect_ok(real)?;
        let target = self.accept_targets(k, &segs, &[d])?[0];
        self.objs.get_mut(&k).unwrap().task = Some(Task::Move { source, target });
        Ok(())
    }

    pub fn promotion_start(
        &mut self,
        k: usize,
        preferred: &[&str],
        real: &Real<ReplicaDescriptor>,
    ) -> Res {
        let Some(o) = self.objs.get(&k) else {
            return expect_err(real, ErrorKind::ObjectNotFound);
        };
        if o.task.is_some() {
            return expect_err(real, ErrorKind::ObjectHasReplicationTask);
        }
        if !o
            .reps
            .iter()
            .any(|r| r.kind == ReplicaKind::LocalDisk && r.complete)
        {
            return expect_err(real, ErrorKind::ReplicaNotFound);
        }
        if o.reps.iter().any(|r| r.kind == ReplicaKind::Memory) {
            return expect_err(real, ErrorKind::UnavailableInCurrentStatus);
        }
        let size = o.size;
        let (placed, must) = self.plan_pool(Pool::Memory, 1, size, preferred);
        if placed == 0 {
            return expect_err(real, ErrorKind::NoAvailableHandle);
        }
        let d = *expect_ok(real)?;
        let plan = Plan {
            mem: 1,
            nof: 0,
            must,
        };
        let reps = self.accept(&plan, size, &[d], true)?;
        let o = self.objs.get_mut(&k).unwrap();
        o.task = Some(Task::Promotion { target: reps[0].id });
        o.reps.extend(reps);
        Ok(())
    }

    /// Drops the task and its PROCESSING targets; erases an emptied object.
    fn abandon(&mut self, k: usize) -> Res {
        let o = self.objs.get_mut(&k).unwrap();
        o.task = None;
        let (targets, kept): (Vec<Rep>, Vec<Rep>) = std::mem::take(&mut o.reps)
            .into_iter()
            .partition(|r| r.target && !r.complete);
        o.reps = kept;
        let (size, empty) = (o.size, o.reps.is_empty());
        self.free_reps(&targets, size)?;
        if empty {
            self.erase(k, None)?;
        }
        Ok(())
    }

    /// CopyEnd/Revoke, MoveEnd/Revoke, PromotionEnd. `kind`: 0 copy, 1 move, 2 promotion.
    pub fn finish_task(&mut self, k: usize, kind: u8, success: bool, real: &Real<()>) -> Res {
        let Some(o) = self.objs.get(&k) else {
            return expect_err(real, ErrorKind::ObjectNotFound);
        };
        let task = match (&o.task, kind) {
            (Some(t @ Task::Copy { .. }), 0)
            | (Some(t @ Task::Move { .. }), 1)
            | (Some(t @ Task::Promotion { .. }), 2) => t.clone(),
            _ => return expect_err(real, ErrorKind::ObjectNoReplicationTask),
        };
        let present = |id: u64| o.reps.iter().any(|r| r.id == id);
        let intact = match &task {
            Task::Copy { source, targets } => {
                present(*source) && targets.iter().all(|t| present(*t))
            }
            Task::Move { source, target } => present(*source) && present(*target),
            Task::Promotion { target } => present(*target),
        };
        if !success {
            expect_ok(real)?;
            return self.abandon(k);
        }
        if !intact {
            expect_err(real, ErrorKind::ReplicaIsGone)?;
            return self.abandon(k);
        }
        expect_ok(real)?;
        let now = self.now;
        let o = self.objs.get_mut(&k).unwrap();
        o.task = None;
        for r in o.reps.iter_mut() {
            if r.target && task.uses(r.id) {
                r.complete = true;
                r.target = false;
            }
        }
        if let Task::Move { source, .. } = task {
            let pos = o.reps.iter().position(|r| r.id == source).unwrap();
            let src = o.reps.remove(pos);
            let size = o.size;
            self.discard_reps(&[src], size, now.saturating_add(RELEASE));
        }
        Ok(())
    }

    pub fn add_local_disk(
        &mut self,
        client: u64,
        k: usize,
        size: u64,
        real: &Real<ReplicaDescriptor>,
    ) -> Res {
        if size == 0 {
            return expect_err(real, ErrorKind::InvalidParams);
        }
        let check_desc = |d: &ReplicaDescriptor| -> Res {
            let ok = d.kind == ReplicaKind::LocalDisk
                && d.status == ReplicaStatus::Complete
                && d.location == Location::LocalDisk { client, size };
            if ok {
                Ok(())
            } else {
                Err(format!("local-disk replica {d:?}"))
            }
        };
        if let Some(o) = self.objs.get(&k) {
            if o.size != size {
                return expect_err(real, ErrorKind::InvalidParams);
            }
            if o.write_in_flight() {
                return expect_err(real, ErrorKind::UnavailableInCurrentStatus);
            }
            let d = *expect_ok(real)?;
            check_desc(&d)?;
            if let Some(r) = o.reps.iter().find(|r| r.loc == (Loc::Disk { client })) {
                // Idempotent per client.
                if r.id != d.id {
                    return Err(format!(
                        "re-adding returned {d:?}, expected replica {}",
                        r.id
                    ));
                }
                return Ok(());
            }
            self.fresh_replica_id(d.id)?;
            self.objs.get_mut(&k).unwrap().reps.push(Rep {
                id: d.id,
                kind: ReplicaKind::LocalDisk,
                complete: true,
                target: false,
                loc: Loc::Disk { client },
            });
            return Ok(());
        }
        let d = *expect_ok(real)?;
        check_desc(&d)?;
        self.fresh_replica_id(d.id)?;
        let seq = self.new_seq();
        self.create(
            k,
            Obj {
                size,
                writer: client,
                put_start: self.now,
                seq,
                token: None,
                lease: 0,
                committed: None,
                pending: None,
                reps: vec![Rep {
                    id: d.id,
                    kind: ReplicaKind::LocalDisk,
                    complete: true,
                    target: false,
                    loc: Loc::Disk { client },
                }],
                group: None,
                hard_pin: false,
                task: None,
            },
        );
        Ok(())
    }

    // ----- time-driven maintenance ----------------------------------------

    /// Stale-write sweep: writes with `put_start + release < at`.
    pub fn sweep(&mut self, at: u64) -> Result<u64, String> {
        let stale: Vec<usize> = self
            .objs
            .iter()
            .filter(|(_, o)| o.write_in_flight() && o.put_start.saturating_add(RELEASE) < at)
            .map(|(k, _)| *k)
            .collect();
        for &k in &stale {
            let o = self.objs.get_mut(&k).unwrap();
            let release_at = o.put_start.saturating_add(RELEASE);
            let (gone, kept): (Vec<Rep>, Vec<Rep>) = std::mem::take(&mut o.reps)
                .into_iter()
                .partition(Rep::write_processing);
            o.reps = kept;
            o.pending_rule();
            let (size, empty) = (o.size, o.reps.is_empty());
            self.discard_reps(&gone, size, release_at);
            if empty {
                self.erase(k, None)?;
            }
            hit(|| format!("sweep: write swept, object erased {empty}"));
        }
        Ok(stale.len() as u64)
    }

    pub fn release(&mut self, at: u64) -> Result<u64, String> {
        let (due, keep): (Vec<Disc>, Vec<Disc>) = std::mem::take(&mut self.disc)
            .into_iter()
            .partition(|d| d.release_at <= at);
        self.disc = keep;
        for d in &due {
            self.free_buf(d.seg, d.addr, d.len)?;
        }
        if !due.is_empty() {
            hit(|| "release: discarded buffers freed".into());
        }
        Ok(due.len() as u64)
    }

    /// Expiration cleanup at `at`: every committed deadline `<= at` goes.
    pub fn cleanup(&mut self, at: u64) -> u64 {
        let (mut n, now) = (0, self.now);
        for o in self.objs.values_mut() {
            if o.committed.is_some_and(|d| d <= at) {
                hit(|| format!("cleanup: expired (at <= now: {})", at <= now));
                o.committed = None;
                n += 1;
            }
        }
        n
    }

    // ----- eviction -------------------------------------------------------

    pub fn evict(
        &mut self,
        target: f64,
        lower: f64,
    ) -> Result<Result<EvictionReport, ErrorKind>, String> {
        let ok = |r: f64| (0.0..=1.0).contains(&r);
        if !ok(target) || !ok(lower) {
            return Ok(Err(ErrorKind::InvalidParams));
        }
        let now = self.now;
        let mut rep = EvictionReport {
            discarded_released: self.release(now)?,
            ..Default::default()
        };
        // Candidates: base objects without a live lease; expired pins of
        // candidates are normalised on the way (§3.7).
        let mut cands: Vec<Cand> = Vec::new();
        let keys: Vec<usize> = self.objs.keys().copied().collect();
        for k in keys {
            let o = &self.objs[&k];
            if o.hard_pin || o.evictable_memory().is_empty() {
                continue;
            }
            rep.base += 1;
            if self.lease_live(k) {
                continue;
            }
            rep.candidates += 1;
            let lease = self.effective_lease(k);
            let o = self.objs.get_mut(&k).unwrap();
            if o.committed.is_some_and(|d| now >= d) {
                o.committed = None;
                rep.normalised += 1;
            }
            cands.push(Cand {
                k,
                lease,
                seq: o.seq,
                pinned: o.committed.is_some_and(|d| now < d),
                group: o.group.clone().map(|g| Self::group_key(k, &g)),
            });
        }
        cands.sort_by_key(|c| (c.lease, c.seq));
        let target_n = (rep.base as f64 * target).ceil() as u64;
        let lower_n = (rep.base as f64 * lower).ceil() as u64;
        let mut done = vec![false; cands.len()];
        let mut groups_done: BTreeSet<(String, String)> = BTreeSet::new();
        self.pass(
            &cands,
            &mut done,
            &mut groups_done,
            false,
            target_n,
            &mut rep,
        )?;
        let credited = rep.evicted + rep.discarded_released;
        if credited < lower_n {
            let goal = rep.evicted + (lower_n - credited);
            self.pass(&cands, &mut done, &mut groups_done, false, goal, &mut rep)?;
            hit(|| "evict: second pass".into());
            if self.setup.allow_evict_pinned {
                self.pass(&cands, &mut done, &mut groups_done, true, goal, &mut rep)?;
            }
        }
        hit(|| format!("evict: evicted>0 {}", rep.evicted > 0));
        if rep.evicted_pinned > 0 {
            hit(|| "evict: active pins taken".into());
        }
        if rep.normalised > 0 {
            hit(|| "evict: expired pins normalised".into());
        }
        if rep.candidates < rep.base {
            hit(|| "evict: leased objects skipped".into());
        }
        Ok(Ok(rep))
    }

    fn evictable(&self, k: usize, allow_pinned: bool) -> bool {
        let o = &self.objs[&k];
        !o.hard_pin
            && !self.lease_live(k)
            && !o.evictable_memory().is_empty()
            && (allow_pinned || !self.active(k))
    }

    fn pass(
        &mut self,
        cands: &[Cand],
        done: &mut [bool],
        groups_done: &mut BTreeSet<(String, String)>,
        allow_pinned: bool,
        goal: u64,
        rep: &mut EvictionReport,
    ) -> Res {
        for (i, c) in cands.iter().enumerate() {
            if rep.evicted >= goal {
                return Ok(());
            }
            if done[i] || (c.pinned && !allow_pinned) {
                continue;
            }
            if let Some(g) = &c.group {
                done[i] = true;
                if !groups_done.insert(g.clone()) {
                    continue;
                }
                let (n, bytes, pinned) = self.evict_group(g, allow_pinned)?;
                hit(|| format!("evict: group, members evicted>0 {}", n > 0));
                rep.evicted += n;
                rep.evicted_bytes += bytes;
                rep.evicted_pinned += pinned;
                if n == 0 {
                    groups_done.remove(g);
                    done[i] = false;
                }
                continue;
            }
            if self.objs.get(&c.k).is_none_or(|o| o.seq != c.seq) {
                done[i] = true;
                continue;
            }
            if !self.evictable(c.k, allow_pinned) {
                continue;
            }
            done[i] = true;
            rep.evicted_pinned += self.active(c.k) as u64;
            rep.evicted_bytes += self.evict_object(c.k)?;
            rep.evicted += 1;
        }
        Ok(())
    }

    /// All-or-none: every member passes the pass's checks or none goes.
    fn evict_group(
        &mut self,
        g: &(String, String),
        allow_pinned: bool,
    ) -> Result<(u64, u64, u64), String> {
        let members: Vec<usize> = self
            .objs
            .iter()
            .filter(|(k, o)| KEYS[**k].0 == g.0 && o.group.as_deref() == Some(&g.1))
            .map(|(k, _)| *k)
            .collect();
        let all_pass = members.iter().all(|&k| {
            !self.objs[&k].hard_pin && !self.lease_live(k) && (allow_pinned || !self.active(k))
        });
        if !all_pass {
            return Ok((0, 0, 0));
        }
        let (mut n, mut bytes, mut pinned) = (0, 0, 0);
        for k in members {
            if self.objs[&k].evictable_memory().is_empty() {
                continue;
            }
            pinned += self.active(k) as u64;
            bytes += self.evict_object(k)?;
            n += 1;
        }
        Ok((n, bytes, pinned))
    }

    fn evict_object(&mut self, k: usize) -> Result<u64, String> {
        let o = self.objs.get_mut(&k).unwrap();
        let victims = o.evictable_memory();
        let (freed, kept): (Vec<Rep>, Vec<Rep>) = std::mem::take(&mut o.reps)
            .into_iter()
            .partition(|r| victims.contains(&r.id));
        o.reps = kept;
        let (size, empty) = (o.size, o.reps.is_empty());
        self.free_reps(&freed, size)?;
        if empty {
            self.erase(k, None)?;
        }
        Ok(size * freed.len() as u64)
    }

    pub fn memory_usage(&self) -> (u64, u64) {
        let mem = self.segs.iter().filter(|s| s.pool == Pool::Memory);
        let cap = mem.clone().map(|s| s.size).sum();
        (cap, mem.map(Seg::allocated).sum())
    }

    /// The §4 trigger.
    pub fn evict_if_needed(&mut self, force: bool) -> Result<Option<EvictionReport>, String> {
        let (cap, used) = self.memory_usage();
        if cap == 0 {
            return Ok(None);
        }
        let used = used as f64 / cap as f64;
        let hwm = self.setup.high_watermark;
        let ratio = self.setup.eviction_ratio;
        if !(used > hwm || (force && ratio > 0.0)) {
            return Ok(None);
        }
        let target = ratio.max(used - hwm + ratio).min(1.0);
        let lower = (target / 2.0).max(used - hwm).clamp(0.0, 1.0);
        Ok(self.evict(target, lower)?.ok())
    }

    // ----- segments -------------------------------------------------------

    pub fn unmount(&mut self, client: u64, name: &str, real: &Real<UnmountReport>) -> Res {
        let Some(pos) = self.segs.iter().position(|s| s.name == name) else {
            return expect_err(real, ErrorKind::SegmentNotFound);
        };
        if self.segs[pos].owner != client {
            return expect_err(real, ErrorKind::IllegalClient);
        }
        let id = self.segs.remove(pos).id;
        let mut want = UnmountReport::default();
        let keys: Vec<usize> = self.objs.keys().copied().collect();
        for k in keys {
            let o = self.objs.get_mut(&k).unwrap();
            let before = o.reps.len();
            o.reps
                .retain(|r| !matches!(r.loc, Loc::Buf { seg, .. } if seg == id));
            want.replicas_dropped += (before - o.reps.len()) as u64;
            let had_pending = o.pending.is_some();
            o.pending_rule();
            if had_pending && o.pending.is_none() {
                hit(|| "unmount: pending cleared".into());
            }
            if o.reps.is_empty() {
                hit(|| "unmount: object erased".into());
                self.erase(k, None)?;
                want.objects_erased += 1;
            }
        }
        self.disc.retain(|d| d.seg != id);
        let got = expect_ok(real)?;
        if *got != want {
            return Err(format!("unmount reported {got:?}, predicted {want:?}"));
        }
        Ok(())
    }

    pub fn mount(&mut self, slot: usize, owner: u64, size: u64, real: &Real<u32>) -> Res {
        let s = &SLOTS[slot];
        if let Some(seg) = self.seg_by_name(s.name) {
            if seg.owner == owner && seg.size == size {
                let id = *expect_ok(real)?;
                return if id == seg.id {
                    Ok(())
                } else {
                    Err(format!(
                        "identical re-mount returned id {id}, not {}",
                        seg.id
                    ))
                };
            }
            return expect_err(real, ErrorKind::SegmentAlreadyExists);
        }
        let id = *expect_ok(real)?;
        if !self.seg_ids.insert(id) {
            return Err(format!("segment id {id} reused"));
        }
        self.segs.push(Seg {
            name: s.name,
            owner,
            pool: s.pool,
            base: slot_base(slot),
            size,
            id,
            bufs: BTreeMap::new(),
        });
        Ok(())
    }
}

struct Cand {
    k: usize,
    lease: u64,
    seq: u64,
    pinned: bool,
    group: Option<(String, String)>,
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
