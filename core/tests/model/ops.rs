//! The operation vocabulary of the model-based test and its proptest
//! strategies: every public operation of the master, with arguments drawn
//! from small fixed pools (8 keys in two tenants, 2 clients, 5 segments) so
//! that collisions, allocation failures and evictions are frequent.

use mooncake_meta_core::{Pool, ReplicaSelector, SoftPinRequest};
use proptest::prelude::*;

/// Allocation unit: every object size is a multiple of it.
pub const UNIT: u64 = 1024;

/// The keys: (tenant, key). Names chosen so regex patterns split them.
pub const KEYS: [(&str, &str); 8] = [
    ("default", "a"),
    ("default", "b"),
    ("default", "ab"),
    ("default", "c"),
    ("t2", "a"),
    ("t2", "b"),
    ("t2", "ab"),
    ("t2", "c"),
];

/// Object sizes by index (the last one is invalid).
pub const SIZES: [u64; 4] = [UNIT, 2 * UNIT, 3 * UNIT, 0];

/// A segment slot: name, owning client, pool, default size.
pub struct Slot {
    pub name: &'static str,
    pub client: u64,
    pub pool: Pool,
    pub size: u64,
}

pub const SLOTS: [Slot; 5] = [
    Slot {
        name: "m0",
        client: 1,
        pool: Pool::Memory,
        size: 4 * UNIT,
    },
    Slot {
        name: "m1",
        client: 1,
        pool: Pool::Memory,
        size: 3 * UNIT,
    },
    Slot {
        name: "m2",
        client: 2,
        pool: Pool::Memory,
        size: 2 * UNIT,
    },
    Slot {
        name: "n0",
        client: 1,
        pool: Pool::NofSsd,
        size: 4 * UNIT,
    },
    Slot {
        name: "n1",
        client: 2,
        pool: Pool::NofSsd,
        size: 3 * UNIT,
    },
];

/// Segment names usable as copy/move targets: the slots plus one that is
/// never mounted.
pub const SEG_NAMES: [&str; 6] = ["m0", "m1", "m2", "n0", "n1", "zz"];

pub fn slot_base(slot: usize) -> u64 {
    (slot as u64 + 1) << 40
}

/// Preferred-segment lists (unknown, duplicate and wrong-pool names included).
pub const PREFERRED: [&[&str]; 6] = [
    &[],
    &["m1"],
    &["m2", "m0"],
    &["n1"],
    &["zz", "m0"],
    &["m0", "m0"],
];

/// Group names (the empty name is invalid).
pub const GROUPS: [Option<&str>; 4] = [None, Some("g1"), Some("g2"), Some("")];

/// RemoveByRegex patterns with an obviously-correct predicate (None = bad pattern).
pub type KeyPred = fn(&str) -> bool;
pub const PATTERNS: [(&str, Option<KeyPred>); 6] = [
    ("^a$", Some(|k| k == "a")),
    ("b", Some(|k| k.contains('b'))),
    ("^(a|c)", Some(|k| k.starts_with('a') || k.starts_with('c'))),
    ("", Some(|_| true)),
    ("(", None),
    ("[z-a]", None),
];

/// RemoveByRegex tenant filters (the empty tenant is invalid).
pub const TENANTS: [Option<&str>; 5] = [None, Some("default"), Some("t2"), Some("zz"), Some("")];

/// Group retention: tenants (the empty one is invalid), group ids (the
/// empty one is invalid; "solo" never has members), TTLs (0 and one above
/// the maximum are invalid), the maximum and the admission limit.
pub const RT_TENANTS: [&str; 3] = ["default", "t2", ""];
pub const RT_GROUPS: [&str; 4] = ["g1", "g2", "", "solo"];
pub const RETAIN_MAX_TTL: u64 = 60_000;
pub const MAX_RETAINED: usize = 2;

/// Eviction ratios (the last three are invalid).
pub const RATIOS: [f64; 9] = [0.0, 0.1, 0.25, 0.5, 0.8, 1.0, 1.5, -0.1, f64::NAN];

/// Which client makes a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Who {
    C1,
    C2,
    /// The key's current writer (C1 when the key is absent).
    Writer,
    /// A client that is not the writer.
    NotWriter,
}

/// The token passed to an End/Revoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tok {
    /// No token.
    None,
    /// The key's current token.
    Right,
    /// A token of an earlier write (or an unused value).
    Stale,
    /// `Some(0)` in single calls (a wrong token); "no token" in batches.
    Zero,
}

/// The soft-pin part of a request, as a caller could write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pin {
    Preserve,
    PreserveTtl(u64),
    EnableDefault,
    Enable(u64),
    EnableMax,
    EnableMaxPlusOne,
    Disable,
    DisableTtl(u64),
}

impl Pin {
    pub fn request(self, max_ttl: u64) -> SoftPinRequest {
        use mooncake_meta_core::SoftPinAction as A;
        let with = |action, ttl_ms| SoftPinRequest { action, ttl_ms };
        match self {
            Pin::Preserve => SoftPinRequest::PRESERVE,
            Pin::PreserveTtl(t) => with(A::Preserve, Some(t)),
            Pin::EnableDefault => SoftPinRequest::enable(),
            Pin::Enable(t) => SoftPinRequest::enable_for(t),
            Pin::EnableMax => SoftPinRequest::enable_for(max_ttl),
            // With an unbounded maximum there is no max + 1: ask for max.
            Pin::EnableMaxPlusOne => SoftPinRequest::enable_for(max_ttl.saturating_add(1)),
            Pin::Disable => SoftPinRequest::DISABLE,
            Pin::DisableTtl(t) => with(A::Disable, Some(t)),
        }
    }
}

/// A write configuration by indexes into the pools above.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cfg {
    pub mem: u32,
    pub nof: u32,
    pub hard_pin: bool,
    pub preferred: usize,
    pub pin: Pin,
    pub group: usize,
}

/// An instant relative to the model's state; falls back to `now` when the
/// anchor does not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    Now(i64),
    /// The key's committed soft-pin deadline + delta.
    Deadline(usize, i64),
    /// The key's effective lease + delta.
    Lease(usize, i64),
    /// The key's `put_start + discard timeout` + delta (young-write edge).
    Young(usize, i64),
    /// The key's `put_start + release timeout` + delta (stale-write edge).
    Stale(usize, i64),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    PutStart {
        who: Who,
        k: usize,
        size: usize,
        cfg: Cfg,
    },
    UpsertStart {
        who: Who,
        k: usize,
        size: usize,
        cfg: Cfg,
    },
    /// A Start, then (if it left a write in flight) the writer's End with
    /// the right token; each call is predicted and compared on its own.
    Write {
        upsert: bool,
        who: Who,
        k: usize,
        size: usize,
        cfg: Cfg,
        sel: ReplicaSelector,
    },
    End {
        upsert: bool,
        who: Who,
        k: usize,
        sel: ReplicaSelector,
        tok: Tok,
    },
    Revoke {
        upsert: bool,
        who: Who,
        k: usize,
        sel: ReplicaSelector,
        tok: Tok,
    },
    Get {
        k: usize,
    },
    Exist {
        k: usize,
    },
    Remove {
        k: usize,
        force: bool,
    },
    RemoveAll {
        force: bool,
    },
    RemoveRegex {
        tenant: usize,
        pattern: usize,
        force: bool,
    },
    CopyStart {
        k: usize,
        targets: Vec<usize>,
    },
    CopyEnd {
        k: usize,
    },
    CopyRevoke {
        k: usize,
    },
    MoveStart {
        k: usize,
        from: usize,
        to: usize,
    },
    MoveEnd {
        k: usize,
    },
    MoveRevoke {
        k: usize,
    },
    PromotionStart {
        k: usize,
        preferred: usize,
    },
    PromotionEnd {
        k: usize,
        success: bool,
    },
    AddLocalDisk {
        who: Who,
        k: usize,
        size: usize,
    },
    BatchStart {
        upsert: bool,
        who: Who,
        keys: Vec<usize>,
        sizes: Vec<usize>,
        /// Drop one size so the arrays mismatch.
        mismatch: bool,
        cfg: Cfg,
    },
    BatchEnd {
        revoke: bool,
        who: Who,
        keys: Vec<usize>,
        sel: ReplicaSelector,
        toks: Option<Vec<Tok>>,
        /// Drop one token so the arrays mismatch.
        mismatch: bool,
    },
    BatchGet {
        keys: Vec<usize>,
    },
    BatchExist {
        keys: Vec<usize>,
    },
    BatchRemove {
        keys: Vec<usize>,
        force: bool,
    },
    RetainGroups {
        tenant: usize,
        groups: Vec<usize>,
        ttl: u64,
    },
    ReleaseGroups {
        tenant: usize,
        groups: Vec<usize>,
    },
    Advance(u64),
    SetTime(At),
    Sweep(At),
    Release(At),
    Cleanup(At),
    Evict {
        target: usize,
        lower: usize,
    },
    EvictIfNeeded {
        force: bool,
    },
    Tick,
    Unmount {
        slot: usize,
        owner: bool,
    },
    Mount {
        slot: usize,
        /// 0 = the slot's spec, 1 = another size, 2 = another client.
        variant: u8,
    },
}

fn who() -> impl Strategy<Value = Who> {
    prop_oneof![
        1 => Just(Who::C1),
        1 => Just(Who::C2),
        6 => Just(Who::Writer),
        1 => Just(Who::NotWriter),
    ]
}

fn tok() -> impl Strategy<Value = Tok> {
    prop_oneof![
        3 => Just(Tok::None),
        5 => Just(Tok::Right),
        1 => Just(Tok::Stale),
        1 => Just(Tok::Zero),
    ]
}

fn sel() -> impl Strategy<Value = ReplicaSelector> {
    prop_oneof![
        2 => Just(ReplicaSelector::Memory),
        1 => Just(ReplicaSelector::NofSsd),
        4 => Just(ReplicaSelector::All),
    ]
}

/// Keys 0, 1 and 4 are hot, so operations meet the same objects often.
fn key() -> impl Strategy<Value = usize> {
    prop_oneof![
        4 => Just(0usize),
        3 => Just(1),
        1 => Just(2),
        1 => Just(3),
        3 => Just(4),
        1 => Just(5),
        1 => Just(6),
        1 => Just(7),
    ]
}

fn size() -> impl Strategy<Value = usize> {
    prop_oneof![10 => Just(0usize), 7 => Just(1), 2 => Just(2), 1 => Just(3)]
}

fn pin() -> impl Strategy<Value = Pin> {
    prop_oneof![
        6 => Just(Pin::Preserve),
        1 => (0u64..3).prop_map(Pin::PreserveTtl),
        3 => Just(Pin::EnableDefault),
        2 => Just(Pin::Enable(0)),
        4 => prop_oneof![1u64..50, 50u64..5_000].prop_map(Pin::Enable),
        2 => Just(Pin::EnableMax),
        1 => Just(Pin::EnableMaxPlusOne),
        3 => Just(Pin::Disable),
        1 => (0u64..3).prop_map(Pin::DisableTtl),
    ]
}

fn cfg() -> impl Strategy<Value = Cfg> {
    let shape = prop_oneof![
        10 => Just((1u32, 0u32)),
        3 => Just((2, 0)),
        3 => Just((1, 1)),
        1 => Just((0, 1)),
        1 => Just((2, 1)),
        1 => Just((3, 0)),
        1 => Just((0, 0)),
    ];
    let preferred = prop_oneof![6 => Just(0usize), 1 => 1usize..PREFERRED.len()];
    let group = prop_oneof![8 => Just(0usize), 2 => Just(1), 1 => Just(2), 1 => Just(3)];
    (
        shape,
        proptest::bool::weighted(0.1),
        preferred,
        pin(),
        group,
    )
        .prop_map(|((mem, nof), hard_pin, preferred, pin, group)| Cfg {
            mem,
            nof,
            hard_pin,
            preferred,
            pin,
            group,
        })
}

fn delta() -> impl Strategy<Value = i64> {
    prop_oneof![
        3 => Just(0i64),
        2 => Just(-1),
        2 => Just(1),
        1 => -3_000i64..3_000,
    ]
}

fn at() -> impl Strategy<Value = At> {
    prop_oneof![
        2 => prop_oneof![Just(0i64), -3_000i64..30_000].prop_map(At::Now),
        2 => (key(), delta()).prop_map(|(k, d)| At::Deadline(k, d)),
        1 => (key(), delta()).prop_map(|(k, d)| At::Lease(k, d)),
        1 => (key(), delta()).prop_map(|(k, d)| At::Young(k, d)),
        2 => (key(), delta()).prop_map(|(k, d)| At::Stale(k, d)),
    ]
}

fn keys() -> impl Strategy<Value = Vec<usize>> {
    // Repeated keys on purpose: a later entry sees an earlier one's effect.
    prop_oneof![
        1 => Just(Vec::new()),
        6 => proptest::collection::vec(key(), 1..4),
        2 => key().prop_map(|k| vec![k, k]),
    ]
}

fn batch_start() -> impl Strategy<Value = Op> {
    (
        any::<bool>(),
        who(),
        keys(),
        proptest::collection::vec(size(), 4),
        proptest::bool::weighted(0.1),
        cfg(),
    )
        .prop_map(|(upsert, who, keys, sizes, mismatch, cfg)| {
            let sizes = sizes.into_iter().cycle().take(keys.len()).collect();
            Op::BatchStart {
                upsert,
                who,
                keys,
                sizes,
                mismatch,
                cfg,
            }
        })
}

fn batch_end() -> impl Strategy<Value = Op> {
    (
        any::<bool>(),
        who(),
        keys(),
        sel(),
        proptest::option::weighted(0.6, proptest::collection::vec(tok(), 4)),
        proptest::bool::weighted(0.1),
    )
        .prop_map(|(revoke, who, keys, sel, toks, mismatch)| {
            let toks = toks.map(|t| t.into_iter().cycle().take(keys.len()).collect());
            Op::BatchEnd {
                revoke,
                who,
                keys,
                sel,
                toks,
                mismatch,
            }
        })
}

fn advance() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => 1u64..600,
        2 => prop_oneof![Just(999u64), Just(1_000), Just(1_001)],
        2 => prop_oneof![Just(2_000u64), Just(2_001), Just(3_000), Just(5_000), Just(5_001)],
        1 => 5_000u64..25_000,
        1 => Just(0),
    ]
}

fn ratio() -> impl Strategy<Value = usize> {
    prop_oneof![12 => 0usize..6, 1 => 6usize..RATIOS.len()]
}

/// One operation, weighted towards the write path.
pub fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (who(), key(), size(), cfg()).prop_map(|(who, k, size, cfg)| Op::PutStart { who, k, size, cfg }),
        12 => (any::<bool>(), who(), key(), size(), cfg(), sel()).prop_map(|(upsert, who, k, size, cfg, sel)| {
            Op::Write { upsert, who, k, size, cfg, sel }
        }),
        8 => (who(), key(), size(), cfg()).prop_map(|(who, k, size, cfg)| Op::UpsertStart { who, k, size, cfg }),
        14 => (any::<bool>(), who(), key(), sel(), tok())
            .prop_map(|(upsert, who, k, sel, tok)| Op::End { upsert, who, k, sel, tok }),
        4 => (any::<bool>(), who(), key(), sel(), tok())
            .prop_map(|(upsert, who, k, sel, tok)| Op::Revoke { upsert, who, k, sel, tok }),
        5 => key().prop_map(|k| Op::Get { k }),
        2 => key().prop_map(|k| Op::Exist { k }),
        3 => (key(), any::<bool>()).prop_map(|(k, force)| Op::Remove { k, force }),
        1 => any::<bool>().prop_map(|force| Op::RemoveAll { force }),
        1 => (0..TENANTS.len(), 0..PATTERNS.len(), any::<bool>())
            .prop_map(|(tenant, pattern, force)| Op::RemoveRegex { tenant, pattern, force }),
        2 => (key(), proptest::collection::vec(0..SEG_NAMES.len(), 0..3))
            .prop_map(|(k, targets)| Op::CopyStart { k, targets }),
        2 => key().prop_map(|k| Op::CopyEnd { k }),
        1 => key().prop_map(|k| Op::CopyRevoke { k }),
        2 => (key(), 0..SEG_NAMES.len(), 0..SEG_NAMES.len())
            .prop_map(|(k, from, to)| Op::MoveStart { k, from, to }),
        2 => key().prop_map(|k| Op::MoveEnd { k }),
        1 => key().prop_map(|k| Op::MoveRevoke { k }),
        2 => (key(), 0..PREFERRED.len()).prop_map(|(k, preferred)| Op::PromotionStart { k, preferred }),
        2 => (key(), proptest::bool::weighted(0.7)).prop_map(|(k, success)| Op::PromotionEnd { k, success }),
        2 => (who(), key(), size()).prop_map(|(who, k, size)| Op::AddLocalDisk { who, k, size }),
        3 => batch_start(),
        3 => batch_end(),
        1 => keys().prop_map(|keys| Op::BatchGet { keys }),
        1 => keys().prop_map(|keys| Op::BatchExist { keys }),
        1 => (keys(), any::<bool>()).prop_map(|(keys, force)| Op::BatchRemove { keys, force }),
        3 => (
            prop_oneof![6 => Just(0usize), 3 => Just(1), 1 => Just(2)],
            proptest::collection::vec(0..RT_GROUPS.len(), 0..4),
            prop_oneof![
                1 => Just(0u64),
                6 => 1u64..6_000,
                2 => Just(RETAIN_MAX_TTL),
                1 => Just(RETAIN_MAX_TTL + 1),
            ],
        )
            .prop_map(|(tenant, groups, ttl)| Op::RetainGroups { tenant, groups, ttl }),
        1 => (
            prop_oneof![6 => Just(0usize), 3 => Just(1), 1 => Just(2)],
            proptest::collection::vec(0..RT_GROUPS.len(), 0..3),
        )
            .prop_map(|(tenant, groups)| Op::ReleaseGroups { tenant, groups }),
        8 => advance().prop_map(Op::Advance),
        3 => at().prop_map(Op::SetTime),
        2 => at().prop_map(Op::Sweep),
        2 => at().prop_map(Op::Release),
        3 => at().prop_map(Op::Cleanup),
        3 => (ratio(), ratio()).prop_map(|(target, lower)| Op::Evict { target, lower }),
        1 => any::<bool>().prop_map(|force| Op::EvictIfNeeded { force }),
        1 => Just(Op::Tick),
        1 => (0..SLOTS.len(), proptest::bool::weighted(0.8)).prop_map(|(slot, owner)| Op::Unmount { slot, owner }),
        2 => (0..SLOTS.len(), prop_oneof![6 => Just(0u8), 1 => Just(1), 1 => Just(2)])
            .prop_map(|(slot, variant)| Op::Mount { slot, variant }),
    ]
}

/// Per-sequence master settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Setup {
    /// Clock start: ordinary, or close to `MAX_INSTANT` (saturation).
    pub near_max: bool,
    /// `max_kv_soft_pin_ttl`: small, or the largest accepted
    /// (`MAX_DURATION_MS`: ENABLE(max) saturates).
    pub unbounded_max_ttl: bool,
    pub allow_evict_pinned: bool,
    pub eviction_ratio: f64,
    pub high_watermark: f64,
    /// Candidates of each side an eviction reading keeps
    /// (`debug_set_eviction_keep`): the default, or so few that the passes
    /// read the dropped ones again.
    pub eviction_keep: Option<usize>,
    /// The master's seed (`MasterConfig::seed`): its hashing and segment
    /// choice, so a failing sequence replays exactly.
    pub master_seed: u64,
}

prop_compose! {
    pub fn setup()(
        near_max in proptest::bool::weighted(0.1),
        unbounded_max_ttl in proptest::bool::weighted(0.15),
        allow_evict_pinned in proptest::bool::weighted(0.6),
        eviction_ratio in prop_oneof![Just(0.0), Just(0.05), Just(0.5), Just(0.9)],
        high_watermark in prop_oneof![Just(0.5), Just(0.9), Just(1.0)],
        eviction_keep in prop_oneof![
            2 => Just(None),
            1 => Just(Some(1)),
            1 => Just(Some(2)),
            1 => Just(Some(3)),
        ],
        master_seed in any::<u64>(),
    ) -> Setup {
        Setup {
            near_max,
            unbounded_max_ttl,
            allow_evict_pinned,
            eviction_ratio,
            high_watermark,
            eviction_keep,
            master_seed,
        }
    }
}
