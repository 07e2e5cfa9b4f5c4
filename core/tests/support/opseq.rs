//! Random operation sequences against a deterministic master, with the
//! invariants of docs/CONTRACT.md §8 checked after every step. An [`Op`] is drawn
//! from an [`Entropy`] over a deliberately small universe (12 keys, 3
//! clients, 4 segments, a handful of sizes and instants) so that keys,
//! segments and deadlines collide; [`Driver::step`] applies it and checks:
//!
//! - `check_invariants()` holds;
//! - no result is INTERNAL_ERROR, PANIC or the unreachable OBJECT_REPLICA_BUSY;
//! - reads change nothing but leases (committed, pending, index, gauge,
//!   replicas: the whole captured image with leases zeroed);
//! - a snapshot of the master restores into a fresh master, and re-encodes
//!   to the same bytes when nothing was dropped;
//! - a failed restore leaves the master exactly as it was.

use super::entropy::Entropy;
use super::snapmut;
use mooncake_meta_core::snapshot::image::{LocationRecord, SnapshotImage};
use mooncake_meta_core::*;
use std::collections::BTreeMap;

pub const T0: u64 = 1_000_000;
pub const LEASE: u64 = 1_000;
pub const DEFAULT_TTL: u64 = 5_000;
pub const MAX_TTL: u64 = 60_000;
pub const DISCARD: u64 = 2_000;
pub const RELEASE: u64 = 10_000;
/// Owner of the fixed segments.
pub const OWNER: ClientId = 7;
/// Owner of the spare segment that comes and goes.
pub const SPARE_OWNER: ClientId = 8;

const TENANTS: [&str; 2] = [DEFAULT_TENANT, "t1"];
const KEYS: [&str; 6] = ["a", "b", "c", "d", "e", "f"];
const SIZES: [u64; 7] = [1, 100, 4096, 16_384, 65_536, 1 << 17, 1 << 21];
const CLIENTS: [ClientId; 3] = [1, 2, 3];
const SEGMENTS: [&str; 5] = ["m0", "m1", "n0", "spare", "ghost"];
const ADVANCE: [u64; 10] = [
    0,
    1,
    10,
    LEASE,
    DISCARD,
    DISCARD + 1,
    RELEASE,
    RELEASE + 1,
    DEFAULT_TTL,
    MAX_TTL,
];
const RATIOS: [f64; 6] = [0.0, 0.1, 0.5, 1.0, 1.5, -0.1];
const PATTERNS: [&str; 4] = ["^a$", "[bc]", "", "("];

/// The configuration every driver master uses: manual clock, background
/// work off, small timeouts so the interesting instants are reachable.
pub fn config() -> MasterConfig {
    MasterConfig {
        default_kv_lease_ttl_ms: LEASE,
        default_kv_soft_pin_ttl_ms: DEFAULT_TTL,
        max_kv_soft_pin_ttl_ms: MAX_TTL,
        put_start_discard_timeout_ms: DISCARD,
        put_start_release_timeout_ms: RELEASE,
        eviction_ratio: 0.2,
        eviction_high_watermark_ratio: 0.7,
        shard_count: 4,
        ..MasterConfig::deterministic(T0)
    }
}

pub fn seg_spec(name: &str) -> SegmentSpec {
    let (slot, size, pool) = match name {
        "m0" => (1, 1 << 18, Pool::Memory),
        "m1" => (2, 1 << 18, Pool::Memory),
        "n0" => (3, 1 << 19, Pool::NofSsd),
        _ => (4, 1 << 18, Pool::Memory),
    };
    SegmentSpec {
        name: name.into(),
        base: slot << 32,
        size,
        pool,
    }
}

/// A key of the universe by index (tenant × key).
pub fn key(i: u8) -> Key<'static> {
    let i = i as usize % (TENANTS.len() * KEYS.len());
    Key::scoped(TENANTS[i / KEYS.len()], KEYS[i % KEYS.len()])
}

/// Keys "e" and "f" of each tenant belong to group "g".
fn group_of(i: u8) -> Option<String> {
    let k = key(i).key;
    (k == "e" || k == "f").then(|| "g".to_string())
}

/// The soft-pin part of a write, including invalid requests.
#[derive(Debug, Clone, Copy)]
pub enum Pin {
    Preserve,
    Disable,
    Enable,
    EnableFor(u64),
    /// PRESERVE with a TTL: INVALID_PARAMS.
    PreserveWithTtl,
    /// DISABLE with a TTL: INVALID_PARAMS.
    DisableWithTtl,
}

impl Pin {
    fn request(self) -> SoftPinRequest {
        match self {
            Pin::Preserve => SoftPinRequest::PRESERVE,
            Pin::Disable => SoftPinRequest::DISABLE,
            Pin::Enable => SoftPinRequest::enable(),
            Pin::EnableFor(t) => SoftPinRequest::enable_for(t),
            Pin::PreserveWithTtl => SoftPinRequest {
                action: SoftPinAction::Preserve,
                ttl_ms: Some(0),
            },
            Pin::DisableWithTtl => SoftPinRequest {
                action: SoftPinAction::Disable,
                ttl_ms: Some(5),
            },
        }
    }

    fn draw(e: &mut impl Entropy) -> Pin {
        match e.below(20) {
            0..=5 => Pin::Preserve,
            6..=7 => Pin::Disable,
            8..=9 => Pin::Enable,
            10..=16 => Pin::EnableFor(*e.pick(&[0, 1, 10, 100, LEASE, MAX_TTL, MAX_TTL + 1])),
            17 => Pin::PreserveWithTtl,
            18 => Pin::DisableWithTtl,
            _ => Pin::EnableFor(e.below(2 * DEFAULT_TTL)),
        }
    }
}

/// A write configuration in compact form.
#[derive(Debug, Clone)]
pub struct Write {
    pub mem: u32,
    pub nof: u32,
    pub hard_pin: bool,
    pub preferred: Option<u8>,
    pub pin: Pin,
    /// Use another group than the key's (an Upsert on an existing object
    /// must then fail with INVALID_PARAMS).
    pub wrong_group: bool,
}

impl Write {
    fn draw(e: &mut impl Entropy) -> Write {
        Write {
            mem: *e.pick(&[1, 1, 1, 2, 0, 3]),
            nof: *e.pick(&[0, 0, 1, 2]),
            hard_pin: e.chance(8),
            preferred: e.chance(25).then(|| e.below(SEGMENTS.len() as u64) as u8),
            pin: Pin::draw(e),
            wrong_group: e.chance(4),
        }
    }

    pub fn config(&self, key: u8) -> WriteConfig {
        let group = match (group_of(key), self.wrong_group) {
            (g, false) => g,
            (Some(_), true) => None,
            (None, true) => Some("h".to_string()),
        };
        WriteConfig {
            memory_replicas: self.mem,
            nof_ssd_replicas: self.nof,
            hard_pin: self.hard_pin,
            preferred_segments: self
                .preferred
                .map(|s| vec![SEGMENTS[s as usize].to_string()])
                .unwrap_or_default(),
            soft_pin: self.pin.request(),
            group,
        }
    }
}

/// Which token an End/Revoke passes.
#[derive(Debug, Clone, Copy)]
pub enum Tok {
    None,
    /// The latest token this driver saw for the key.
    Latest,
    /// Some older token (usually stale).
    Old(u8),
}

#[derive(Debug, Clone, Copy)]
pub enum Sel {
    All,
    Memory,
    NofSsd,
}

impl Sel {
    fn get(self) -> ReplicaSelector {
        match self {
            Sel::All => ReplicaSelector::All,
            Sel::Memory => ReplicaSelector::Memory,
            Sel::NofSsd => ReplicaSelector::NofSsd,
        }
    }
}

/// One step of a sequence. `follow` makes the step act on what the driver
/// did last (the latest write's key and client, the latest task's key and
/// kind) instead of its own random choice, so ends and tasks find their
/// objects often enough to matter.
#[derive(Debug, Clone)]
pub enum Op {
    PutStart {
        c: u8,
        k: u8,
        size: u8,
        w: Write,
    },
    UpsertStart {
        c: u8,
        k: u8,
        size: u8,
        w: Write,
    },
    End {
        c: u8,
        k: u8,
        sel: Sel,
        tok: Tok,
        upsert: bool,
        follow: bool,
    },
    Revoke {
        c: u8,
        k: u8,
        sel: Sel,
        tok: Tok,
        upsert: bool,
        follow: bool,
    },
    Get {
        k: u8,
        follow: bool,
    },
    Exist {
        k: u8,
    },
    BatchRead {
        ks: Vec<u8>,
        exist: bool,
    },
    BatchPut {
        c: u8,
        ks: Vec<u8>,
        size: u8,
        w: Write,
        upsert: bool,
        end: bool,
        short_sizes: bool,
    },
    BatchEnd {
        c: u8,
        ks: Vec<u8>,
        sel: Sel,
        revoke: bool,
        with_tokens: bool,
    },
    BatchRemove {
        ks: Vec<u8>,
        force: bool,
    },
    Remove {
        k: u8,
        force: bool,
        follow: bool,
    },
    RemoveAll {
        force: bool,
    },
    RemoveRegex {
        tenant: Option<u8>,
        pattern: u8,
        force: bool,
    },
    CopyStart {
        k: u8,
        targets: Vec<u8>,
        follow: bool,
    },
    MoveStart {
        k: u8,
        from: u8,
        to: u8,
        follow: bool,
    },
    PromotionStart {
        k: u8,
        preferred: Option<u8>,
        follow: bool,
    },
    TaskEnd {
        k: u8,
        kind: u8,
        success: bool,
        follow: bool,
    },
    AddLocalDisk {
        c: u8,
        k: u8,
        size: u8,
        follow: bool,
    },
    Mount {
        seg: u8,
        conflicting: bool,
    },
    Unmount {
        seg: u8,
        wrong_owner: bool,
    },
    UnmountClient {
        spare: bool,
    },
    Advance {
        by: u8,
    },
    SetTimeBack,
    Cleanup {
        ahead: u8,
    },
    Tick,
    Sweep,
    Eviction {
        target: u8,
        lower: u8,
    },
    EvictIfNeeded {
        force: bool,
    },
    Snapshot,
    RestoreLatest,
    RestoreMutated {
        reframe: bool,
    },
    RestoreCandidates,
    RoundTrip,
    ListKeys {
        tenant: u8,
        prefix: bool,
        after: bool,
        limit: u8,
    },
    Metrics,
    DeadlineQuery {
        k: u8,
    },
    ValidateWrite {
        k: u8,
        size: u8,
        w: Write,
    },
}

/// Relative weights of the operations, in the order of `Op::draw`'s match.
const WEIGHTS: [u64; 37] = [
    24, 18, 26, 7, 12, 4, 3, 6, 2, 2, // put .. batch remove
    7, 1, 1, 8, 6, 5, 12, 6, 4, 3, // remove .. unmount
    1, 12, 1, 4, 2, 2, 2, 2, 3, 1, // unmount client .. restore latest
    2, 1, 3, 1, 1, 3, 2, // restore mutated .. validate
];

fn ks(e: &mut impl Entropy) -> Vec<u8> {
    let n = e.below(5);
    (0..n).map(|_| e.below(12) as u8).collect()
}

impl Op {
    /// Draws one operation (weights favour writes, ends and reads; the
    /// destructive ones — remove all, unmount a client, restore — are rare
    /// so that sequences build up state).
    pub fn draw(e: &mut impl Entropy) -> Op {
        let c = e.below(3) as u8;
        let k = e.below(12) as u8;
        let size = e.below(SIZES.len() as u64) as u8;
        let tok = match e.below(4) {
            0 => Tok::None,
            1 => Tok::Old(e.below(8) as u8),
            _ => Tok::Latest,
        };
        let sel = *e.pick(&[Sel::All, Sel::All, Sel::Memory, Sel::NofSsd]);
        let follow = e.chance(60);
        let total: u64 = WEIGHTS.iter().sum();
        let mut x = e.below(total);
        let mut slot = 0;
        while x >= WEIGHTS[slot] {
            x -= WEIGHTS[slot];
            slot += 1;
        }
        match slot {
            0 => Op::PutStart {
                c,
                k,
                size,
                w: Write::draw(e),
            },
            1 => Op::UpsertStart {
                c,
                k,
                size,
                w: Write::draw(e),
            },
            2 => Op::End {
                c,
                k,
                sel,
                tok,
                upsert: e.chance(50),
                follow,
            },
            3 => Op::Revoke {
                c,
                k,
                sel,
                tok,
                upsert: e.chance(50),
                follow,
            },
            4 => Op::Get { k, follow },
            5 => Op::Exist { k },
            6 => Op::BatchRead {
                ks: ks(e),
                exist: e.chance(50),
            },
            7 => Op::BatchPut {
                c,
                ks: ks(e),
                size,
                w: Write::draw(e),
                upsert: e.chance(50),
                end: e.chance(60),
                short_sizes: e.chance(5),
            },
            8 => Op::BatchEnd {
                c,
                ks: ks(e),
                sel,
                revoke: e.chance(30),
                with_tokens: e.chance(50),
            },
            9 => Op::BatchRemove {
                ks: ks(e),
                force: e.chance(50),
            },
            10 => Op::Remove {
                k,
                force: e.chance(50),
                follow,
            },
            11 => Op::RemoveAll {
                force: e.chance(30),
            },
            12 => Op::RemoveRegex {
                tenant: e.chance(70).then(|| e.below(3) as u8),
                pattern: e.below(PATTERNS.len() as u64) as u8,
                force: e.chance(50),
            },
            13 => Op::CopyStart {
                k,
                targets: (0..e.below(3)).map(|_| e.below(5) as u8).collect(),
                follow,
            },
            14 => Op::MoveStart {
                k,
                from: e.below(5) as u8,
                to: e.below(5) as u8,
                follow,
            },
            15 => Op::PromotionStart {
                k,
                preferred: e.chance(30).then(|| e.below(5) as u8),
                follow,
            },
            16 => Op::TaskEnd {
                k,
                kind: e.below(3) as u8,
                success: e.chance(75),
                follow,
            },
            17 => Op::AddLocalDisk { c, k, size, follow },
            18 => Op::Mount {
                seg: e.below(5) as u8,
                conflicting: e.chance(20),
            },
            19 => Op::Unmount {
                seg: e.below(5) as u8,
                wrong_owner: e.chance(20),
            },
            20 => Op::UnmountClient {
                spare: e.chance(70),
            },
            21 => Op::Advance {
                by: e.below(ADVANCE.len() as u64) as u8,
            },
            22 => Op::SetTimeBack,
            23 => Op::Cleanup {
                ahead: e.below(ADVANCE.len() as u64) as u8,
            },
            24 => Op::Tick,
            25 => Op::Sweep,
            26 => Op::Eviction {
                target: e.below(RATIOS.len() as u64) as u8,
                lower: e.below(RATIOS.len() as u64) as u8,
            },
            27 => Op::EvictIfNeeded {
                force: e.chance(50),
            },
            28 => Op::Snapshot,
            29 => Op::RestoreLatest,
            30 => Op::RestoreMutated {
                reframe: e.chance(50),
            },
            31 => Op::RestoreCandidates,
            32 => Op::RoundTrip,
            33 => Op::ListKeys {
                tenant: e.below(3) as u8,
                prefix: e.chance(30),
                after: e.chance(30),
                limit: e.below(4) as u8,
            },
            34 => Op::Metrics,
            35 => Op::DeadlineQuery { k },
            _ => Op::ValidateWrite {
                k,
                size,
                w: Write::draw(e),
            },
        }
    }

    /// Operations that must leave everything but leases unchanged.
    fn is_read(&self) -> bool {
        matches!(
            self,
            Op::Get { .. }
                | Op::Exist { .. }
                | Op::BatchRead { .. }
                | Op::ListKeys { .. }
                | Op::Metrics
                | Op::DeadlineQuery { .. }
                | Op::ValidateWrite { .. }
                | Op::Snapshot
                | Op::RoundTrip
        )
    }
}

/// Counts per (operation, result code).
#[derive(Debug, Default, Clone)]
pub struct Tally(pub BTreeMap<(&'static str, &'static str), u64>);

impl Tally {
    pub fn add(&mut self, op: &'static str, r: &'static str) {
        *self.0.entry((op, r)).or_default() += 1;
    }

    pub fn record<T>(&mut self, op: &'static str, r: &Result<T>) {
        let name = match r {
            Ok(_) => "OK",
            Err(e) => e.kind().name(),
        };
        *self.0.entry((op, name)).or_default() += 1;
    }

    pub fn merge(&mut self, other: &Tally) {
        for (k, v) in &other.0 {
            *self.0.entry(*k).or_default() += v;
        }
    }

    pub fn total(&self) -> u64 {
        self.0.values().sum()
    }

    /// One line per operation: `name  total  CODE=n ...`.
    pub fn render(&self) -> String {
        let mut per_op: BTreeMap<&str, Vec<(&str, u64)>> = BTreeMap::new();
        for ((op, r), n) in &self.0 {
            per_op.entry(op).or_default().push((r, *n));
        }
        let mut out = String::new();
        for (op, rs) in per_op {
            let total: u64 = rs.iter().map(|r| r.1).sum();
            let detail: Vec<String> = rs.iter().map(|(r, n)| format!("{r}={n}")).collect();
            out.push_str(&format!("  {op:<22} {total:>10}  {}\n", detail.join(" ")));
        }
        out
    }

    /// Result codes that must never appear.
    pub fn forbidden(&self) -> Vec<String> {
        self.0
            .iter()
            .filter(|((_, r), _)| matches!(*r, "INTERNAL_ERROR" | "PANIC" | "OBJECT_REPLICA_BUSY"))
            .map(|((op, r), n)| format!("{op} -> {r} ×{n}"))
            .collect()
    }
}

/// The captured image with leases zeroed: what a read must not change.
fn non_lease_state(m: &MasterCore) -> (SnapshotImage, u64, (usize, usize)) {
    let mut img = m.capture();
    for o in &mut img.objects {
        o.lease = 0;
    }
    for g in &mut img.groups {
        g.lease = 0;
    }
    (img, m.metrics().soft_pin_key_count, m.index_sizes())
}

/// A master plus what the driver remembers between steps.
pub struct Driver {
    pub m: Master,
    pub tally: Tally,
    /// Latest token per key index (0 = none seen).
    latest: [u64; 12],
    /// Recent tokens, for stale-token ends.
    old: Vec<u64>,
    /// Recent snapshots of this master (newest last).
    snapshots: Vec<Vec<u8>>,
    /// What `follow` steps act on.
    last: Last,
    pub steps: u64,
    /// The master's configuration (round trips restore into a fresh master
    /// built from it).
    cfg: MasterConfig,
}

/// The latest successful write start (key, client), task start (key, kind)
/// and LOCAL_DISK registration (key).
#[derive(Debug, Default, Clone, Copy)]
struct Last {
    write: Option<(u8, u8)>,
    task: Option<(u8, u8)>,
    disk: Option<u8>,
}

/// The captured record of one key, if it exists.
fn record_of(
    m: &MasterCore,
    k: Key<'_>,
) -> Option<mooncake_meta_core::snapshot::image::ObjectRecord> {
    m.capture()
        .objects
        .into_iter()
        .find(|o| o.tenant == k.tenant && o.key == k.key)
}

impl Driver {
    /// A deterministic master with two memory segments and one second-pool
    /// segment owned by [`OWNER`]; the spare segment starts unmounted.
    pub fn new() -> Driver {
        Driver::with_config(config())
    }

    /// As [`Driver::new`] with another configuration (extreme clocks and
    /// durations; the segments stay the same).
    pub fn with_config(cfg: MasterConfig) -> Driver {
        let m = Master::new(cfg.clone()).expect("valid config");
        for s in ["m0", "m1", "n0"] {
            m.mount_segment(OWNER, &seg_spec(s)).expect("mount");
        }
        Driver {
            m,
            tally: Tally::default(),
            latest: [0; 12],
            old: Vec::new(),
            snapshots: Vec::new(),
            last: Last::default(),
            steps: 0,
            cfg,
        }
    }

    /// Draws and runs `n` steps (stops early when the source runs dry).
    pub fn run(&mut self, e: &mut impl Entropy, n: usize) {
        let mut log: Vec<Op> = Vec::new();
        for _ in 0..n {
            if e.drained() {
                break;
            }
            let op = Op::draw(e);
            log.push(op.clone());
            if let Err(msg) = self.step(&op) {
                let tail: Vec<String> = log
                    .iter()
                    .rev()
                    .take(20)
                    .rev()
                    .map(|o| format!("{o:?}"))
                    .collect();
                panic!(
                    "step {} ({op:?}) broke a rule: {msg}\nlast ops:\n  {}",
                    log.len(),
                    tail.join("\n  ")
                );
            }
        }
    }

    /// Applies one operation and checks the rules of the module docs.
    pub fn step(&mut self, op: &Op) -> Result<(), String> {
        self.steps += 1;
        let before = op.is_read().then(|| non_lease_state(&self.m));
        self.apply(op)?;
        if let Some(before) = before {
            if non_lease_state(&self.m) != before {
                return Err("a read changed state other than leases".into());
            }
        }
        self.m.check_invariants()?;
        let bad = self.tally.forbidden();
        if !bad.is_empty() {
            return Err(format!("forbidden result: {bad:?}"));
        }
        Ok(())
    }

    fn apply(&mut self, op: &Op) -> Result<(), String> {
        let Driver {
            m,
            tally: t,
            latest,
            old,
            snapshots,
            last,
            steps,
            cfg,
        } = self;
        let m: &Master = m;
        match op {
            Op::PutStart { c, k, size, w } | Op::UpsertStart { c, k, size, w } => {
                let upsert = matches!(op, Op::UpsertStart { .. });
                let cfg = w.config(*k);
                let (client, size) = (CLIENTS[*c as usize], SIZES[*size as usize]);
                let r = if upsert {
                    m.upsert_start(client, key(*k), size, &cfg)
                } else {
                    m.put_start(client, key(*k), size, &cfg)
                };
                t.record(if upsert { "upsert_start" } else { "put_start" }, &r);
                if let Ok(sw) = r {
                    if sw
                        .replicas
                        .iter()
                        .any(|d| d.status != ReplicaStatus::Processing)
                    {
                        return Err("a Start returned a non-PROCESSING replica".into());
                    }
                    remember(latest, old, *k, sw.token);
                    last.write = Some((*k, *c));
                }
            }
            Op::End {
                c,
                k,
                sel,
                tok,
                upsert,
                follow,
            }
            | Op::Revoke {
                c,
                k,
                sel,
                tok,
                upsert,
                follow,
            } => {
                let end = matches!(op, Op::End { .. });
                let (k, c) = match (follow, last.write) {
                    (true, Some(w)) => w,
                    _ => (*k, *c),
                };
                let (k, c) = (&k, &c);
                let (client, token) = (CLIENTS[*c as usize], token_for(latest, old, *k, *tok));
                let r = match (end, upsert) {
                    (true, false) => m.put_end(client, key(*k), sel.get(), token),
                    (true, true) => m.upsert_end(client, key(*k), sel.get(), token),
                    (false, false) => m.put_revoke(client, key(*k), sel.get(), token),
                    (false, true) => m.upsert_revoke(client, key(*k), sel.get(), token),
                };
                t.record(if end { "end" } else { "revoke" }, &r);
            }
            Op::Get { k, follow } => {
                let k = follow_key(*k, *follow, last.write);
                let k = &k;
                let r = m.get_replica_list(key(*k));
                if let Ok(list) = &r {
                    if list.is_empty() || list.iter().any(|d| d.status != ReplicaStatus::Complete) {
                        return Err(format!("get returned unreadable replicas: {list:?}"));
                    }
                }
                t.record("get", &r);
            }
            Op::Exist { k } => {
                let r = m.exist(key(*k));
                t.record("exist", &r);
            }
            Op::BatchRead { ks, exist } => {
                let keys: Vec<Key> = ks.iter().map(|&i| key(i)).collect();
                if *exist {
                    for r in m.batch_exist(&keys) {
                        t.record("batch_exist", &r);
                    }
                } else {
                    for r in m.batch_get_replica_list(&keys) {
                        t.record("batch_get", &r);
                    }
                }
            }
            Op::BatchPut {
                c,
                ks,
                size,
                w,
                upsert,
                end,
                short_sizes,
            } => {
                let keys: Vec<Key> = ks.iter().map(|&i| key(i)).collect();
                let mut sizes = vec![SIZES[*size as usize]; keys.len()];
                if *short_sizes {
                    sizes.push(1);
                }
                // One shared config: the group of the first key (others may
                // then be rejected for a group change, which is the point).
                let cfg = w.config(ks.first().copied().unwrap_or(0));
                let client = CLIENTS[*c as usize];
                let rs = if *upsert {
                    m.batch_upsert_start(client, &keys, &sizes, &cfg)
                } else {
                    m.batch_put_start(client, &keys, &sizes, &cfg)
                };
                if rs.len() != keys.len() {
                    return Err(format!("{} results for {} keys", rs.len(), keys.len()));
                }
                let mut tokens = Vec::with_capacity(keys.len());
                for (i, r) in rs.iter().enumerate() {
                    t.record(
                        if *upsert {
                            "batch_upsert_start"
                        } else {
                            "batch_put_start"
                        },
                        r,
                    );
                    tokens.push(r.as_ref().map_or(0, |s| s.token));
                    if let Ok(s) = r {
                        remember(latest, old, ks[i], s.token);
                        last.write = Some((ks[i], *c));
                    }
                }
                if *end {
                    for r in m.batch_put_end(client, &keys, ReplicaSelector::All, Some(&tokens)) {
                        t.record("batch_put_end", &r);
                    }
                }
            }
            Op::BatchEnd {
                c,
                ks,
                sel,
                revoke,
                with_tokens,
            } => {
                let keys: Vec<Key> = ks.iter().map(|&i| key(i)).collect();
                let tokens: Vec<u64> = ks.iter().map(|&i| latest[i as usize % 12]).collect();
                let tokens = with_tokens.then_some(&tokens[..]);
                let client = CLIENTS[*c as usize];
                let rs = if *revoke {
                    m.batch_put_revoke(client, &keys, sel.get(), tokens)
                } else {
                    m.batch_put_end(client, &keys, sel.get(), tokens)
                };
                for r in rs {
                    t.record(
                        if *revoke {
                            "batch_put_revoke"
                        } else {
                            "batch_put_end"
                        },
                        &r,
                    );
                }
            }
            Op::BatchRemove { ks, force } => {
                let keys: Vec<Key> = ks.iter().map(|&i| key(i)).collect();
                for r in m.batch_remove(&keys, *force) {
                    t.record("batch_remove", &r);
                }
            }
            Op::Remove { k, force, follow } => {
                let r = m.remove(key(follow_key(*k, *follow, last.write)), *force);
                t.record("remove", &r);
            }
            Op::RemoveAll { force } => {
                m.remove_all(*force);
                t.add("remove_all", "OK");
            }
            Op::RemoveRegex {
                tenant,
                pattern,
                force,
            } => {
                let tenant = tenant.map(|i| *["default", "t1", ""].get(i as usize).unwrap_or(&""));
                let r = m.remove_by_regex(tenant, PATTERNS[*pattern as usize], *force);
                t.record("remove_by_regex", &r);
            }
            Op::CopyStart { k, targets, follow } => {
                let k = follow_key(*k, *follow, last.write);
                let names: Vec<&str> = targets.iter().map(|&s| SEGMENTS[s as usize]).collect();
                let r = m.copy_start(key(k), &names);
                t.record("copy_start", &r);
                if r.is_ok() {
                    last.task = Some((k, 0));
                }
            }
            Op::MoveStart {
                k,
                from,
                to,
                follow,
            } => {
                let k = follow_key(*k, *follow, last.write);
                // Following: move from a segment that holds a COMPLETE buffer.
                let from = match (*follow, record_of(m, key(k))) {
                    (true, Some(rec)) => rec
                        .replicas
                        .iter()
                        .find_map(|r| match &r.location {
                            LocationRecord::Buffer { segment, .. } if r.status == 1 => {
                                Some(segment.clone())
                            }
                            _ => None,
                        })
                        .unwrap_or_else(|| SEGMENTS[*from as usize].to_string()),
                    _ => SEGMENTS[*from as usize].to_string(),
                };
                let r = m.move_start(key(k), &from, SEGMENTS[*to as usize]);
                t.record("move_start", &r);
                if r.is_ok() {
                    last.task = Some((k, 1));
                }
            }
            Op::PromotionStart {
                k,
                preferred,
                follow,
            } => {
                let k = follow_key(*k, *follow, last.disk.map(|d| (d, 0)));
                let pref: Vec<String> = preferred
                    .iter()
                    .map(|&s| SEGMENTS[s as usize].to_string())
                    .collect();
                let r = m.promotion_start(key(k), &pref);
                t.record("promotion_start", &r);
                if r.is_ok() {
                    last.task = Some((k, 2));
                }
            }
            Op::TaskEnd {
                k,
                kind,
                success,
                follow,
            } => {
                let (k, kind) = match (follow, last.task) {
                    (true, Some(task)) => (task.0, task.1),
                    _ => (*k, *kind),
                };
                let kind = &kind;
                let k = key(k);
                let (name, r) = match (kind, success) {
                    (0, true) => ("copy_end", m.copy_end(k)),
                    (0, false) => ("copy_revoke", m.copy_revoke(k)),
                    (1, true) => ("move_end", m.move_end(k)),
                    (1, false) => ("move_revoke", m.move_revoke(k)),
                    _ => ("promotion_end", m.promotion_end(k, *success)),
                };
                t.record(name, &r);
            }
            Op::AddLocalDisk { c, k, size, follow } => {
                let k = follow_key(*k, *follow, last.write);
                // Following: the object's own size (a mismatch is INVALID_PARAMS).
                let size = match (*follow, record_of(m, key(k))) {
                    (true, Some(rec)) => rec.size,
                    _ => SIZES[*size as usize],
                };
                let r = m.add_local_disk_replica(CLIENTS[*c as usize], key(k), size);
                t.record("add_local_disk", &r);
                if r.is_ok() {
                    last.disk = Some(k);
                }
            }
            Op::Mount { seg, conflicting } => {
                let name = SEGMENTS[*seg as usize];
                let mut spec = seg_spec(name);
                if *conflicting {
                    spec.size += 4096;
                }
                let owner = if name == "spare" || name == "ghost" {
                    SPARE_OWNER
                } else {
                    OWNER
                };
                let r = m.mount_segment(owner, &spec);
                t.record("mount", &r);
            }
            Op::Unmount { seg, wrong_owner } => {
                let name = SEGMENTS[*seg as usize];
                let owner = match (name == "spare" || name == "ghost", wrong_owner) {
                    (_, true) => 99,
                    (true, false) => SPARE_OWNER,
                    (false, false) => OWNER,
                };
                let r = m.unmount_segment(owner, name);
                t.record("unmount", &r);
            }
            Op::UnmountClient { spare } => {
                let r = m.unmount_client(if *spare { SPARE_OWNER } else { OWNER });
                t.record("unmount_client", &r);
            }
            Op::Advance { by } => {
                let r = m.advance_time(ADVANCE[*by as usize]);
                t.record("advance_time", &r);
            }
            Op::SetTimeBack => {
                let now = m.now();
                let r = m.set_time(now.saturating_sub(1));
                if now > 0 && r.is_ok() {
                    return Err("the manual clock moved backwards".into());
                }
                t.record("set_time_back", &r);
            }
            Op::Cleanup { ahead } => {
                m.run_cleanup_at(m.now() + ADVANCE[*ahead as usize]);
                t.add("run_cleanup_at", "OK");
            }
            Op::Tick => {
                m.run_maintenance_tick();
                t.add("maintenance_tick", "OK");
            }
            Op::Sweep => {
                m.sweep_stale_writes_at(m.now());
                m.release_discarded_at(m.now());
                t.add("sweep_release", "OK");
            }
            Op::Eviction { target, lower } => {
                let r = m.run_eviction(RATIOS[*target as usize], RATIOS[*lower as usize]);
                t.record("run_eviction", &r);
            }
            Op::EvictIfNeeded { force } => {
                m.evict_if_needed(*force);
                t.add("evict_if_needed", "OK");
            }
            Op::Snapshot => {
                let r = m.snapshot();
                t.record("snapshot", &r);
                if let Ok(s) = r {
                    snapshots.push(s);
                    if snapshots.len() > 3 {
                        snapshots.remove(0);
                    }
                }
            }
            Op::RestoreLatest => {
                let s = match snapshots.last() {
                    Some(s) => s.clone(),
                    None => m.snapshot().map_err(|e| e.to_string())?,
                };
                let r = m.restore(&s);
                t.record("restore", &r);
                if let Err(e) = r {
                    return Err(format!("restoring this master's own snapshot failed: {e}"));
                }
            }
            Op::RestoreMutated { reframe } => {
                let Some(s) = snapshots.last() else {
                    t.add("restore_mutated", "OK");
                    return Ok(());
                };
                // The mutation is derived from the step number: the op
                // stays replayable from its log.
                let mut rng = super::entropy::XorShift::new(*steps);
                let bad = snapmut::mutated(&mut rng, s, *reframe);
                let before = m.capture();
                let r = m.restore(&bad);
                t.record("restore_mutated", &r);
                match r {
                    Err(e) if e.kind() != ErrorKind::DeserializeFail => {
                        return Err(format!("restore failed with {e}"))
                    }
                    Err(_) if m.capture() != before => {
                        return Err("a failed restore changed the master".into())
                    }
                    _ => {}
                }
            }
            Op::RestoreCandidates => {
                let good = match snapshots.first() {
                    Some(s) => s.clone(),
                    None => m.snapshot().map_err(|e| e.to_string())?,
                };
                // A newer but corrupt candidate first: the good one must win.
                let mut corrupt = m.snapshot().map_err(|e| e.to_string())?;
                let n = corrupt.len();
                corrupt[n - 1] ^= 0x40;
                let r = m.restore_candidates(&[&corrupt, &good]);
                t.record("restore_candidates", &r);
                match r {
                    Ok(rep) if rep.candidate != 1 => {
                        return Err(format!("candidate {} won over the good one", rep.candidate))
                    }
                    Err(e) => return Err(format!("the good candidate was rejected: {e}")),
                    Ok(_) => {}
                }
            }
            Op::RoundTrip => {
                let s = m.snapshot().map_err(|e| e.to_string())?;
                let fresh = Master::new(MasterConfig {
                    clock: ClockSource::Manual { start_ms: m.now() },
                    ..cfg.clone()
                })
                .map_err(|e| e.to_string())?;
                // On the master's timeline: its wall as far from it (a
                // stepped wall), so the restore shifts nothing.
                fresh
                    .set_wall_time(m.wall_time())
                    .map_err(|e| e.to_string())?;
                let r = fresh.restore(&s);
                t.record("round_trip", &r);
                let rep = r.map_err(|e| format!("a master's own snapshot did not restore: {e}"))?;
                fresh
                    .check_invariants()
                    .map_err(|e| format!("restored master: {e}"))?;
                // Expired retention deadlines are normalised too (not
                // counted in the report).
                let now = fresh.now();
                let stored = snapshot::codec::decode(&s).map_err(|e| e.to_string())?;
                let retention_kept = stored.retention.iter().all(|r| now < r.deadline);
                // A restore on a primary keeps no write in flight, task or
                // discarded buffer (§6; a task whose targets an unmount
                // took drops no replica).
                let lossless = rep.objects_dropped == 0
                    && rep.replicas_dropped == 0
                    && rep.soft_pins_normalised == 0
                    && retention_kept
                    && !stored.has_live_state();
                // The journal sequence is the capturing master's own (a
                // restored master numbers its own records): compared apart.
                let without_seq = |b: &[u8]| -> Result<Vec<u8>, String> {
                    let mut img = snapshot::codec::decode(b).map_err(|e| e.to_string())?;
                    img.journal_seq = 0;
                    Ok(snapshot::codec::encode(&img))
                };
                let again = fresh.snapshot().map_err(|e| e.to_string())?;
                if lossless && without_seq(&again)? != without_seq(&s)? {
                    return Err("snapshot(restore(s)) != s with nothing dropped".into());
                }
            }
            Op::ListKeys {
                tenant,
                prefix,
                after,
                limit,
            } => {
                let tenant = ["default", "t1", ""][*tenant as usize % 3];
                let r = m.list_keys(
                    tenant,
                    if *prefix { "a" } else { "" },
                    after.then_some("b"),
                    *limit as usize,
                );
                t.record("list_keys", &r);
            }
            Op::Metrics => {
                let s = m.metrics();
                if s.key_count != m.key_count() {
                    return Err("metrics disagree with key_count".into());
                }
                let _ = m.metrics_prometheus();
                t.add("metrics", "OK");
            }
            Op::DeadlineQuery { k } => {
                let r = m.soft_pin_deadline(key(*k));
                t.record("soft_pin_deadline", &r);
                let r = m.has_pending_soft_pin(key(*k));
                t.record("has_pending_soft_pin", &r);
            }
            Op::ValidateWrite { k, size, w } => {
                let r = m.validate_write_request(key(*k), SIZES[*size as usize], &w.config(*k));
                t.record("validate_write", &r);
            }
        }
        Ok(())
    }
}

fn follow_key(k: u8, follow: bool, last: Option<(u8, u8)>) -> u8 {
    match (follow, last) {
        (true, Some((k, _))) => k,
        _ => k,
    }
}

fn remember(latest: &mut [u64; 12], old: &mut Vec<u64>, k: u8, token: u64) {
    let i = k as usize % 12;
    if latest[i] != 0 {
        old.push(latest[i]);
        if old.len() > 8 {
            old.remove(0);
        }
    }
    latest[i] = token;
}

fn token_for(latest: &[u64; 12], old: &[u64], k: u8, tok: Tok) -> Option<u64> {
    match tok {
        Tok::None => None,
        Tok::Latest => Some(latest[k as usize % 12]).filter(|&t| t != 0),
        Tok::Old(i) => old.get(i as usize).copied().or(Some(u64::MAX)),
    }
}

impl Default for Driver {
    fn default() -> Self {
        Driver::new()
    }
}
