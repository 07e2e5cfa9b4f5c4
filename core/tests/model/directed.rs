//! Directed sequences of the model test: transitions the random sequences
//! reach too rarely to count on (a few times in 10 000 sequences, with some
//! seeds never), each run through the same harness and checked against the
//! reference model like a random sequence, and each required to reach the
//! events it is there for. They run before the random sequences, cost
//! milliseconds and use no randomness, so the random run stays as it was.

use super::ops::*;
use mooncake_meta_core::ReplicaSelector;

pub struct Case {
    pub name: &'static str,
    pub setup: Setup,
    pub ops: Vec<Op>,
    /// Coverage events (see `coverage.rs`) this case must reach.
    pub reaches: &'static [&'static str],
}

const SETUP: Setup = Setup {
    near_max: false,
    unbounded_max_ttl: false,
    allow_evict_pinned: false,
    eviction_ratio: 0.0,
    high_watermark: 1.0,
    eviction_keep: None,
    master_seed: 1,
};

/// One MEMORY replica, preferably on "m1" (PREFERRED[1]), with `pin`.
const fn on_m1(pin: Pin) -> Cfg {
    Cfg {
        mem: 1,
        nof: 0,
        hard_pin: false,
        preferred: 1,
        pin,
        group: 0,
    }
}

/// A completed put of key `k` (one UNIT) on "m1".
fn write_on_m1(k: usize) -> Op {
    Op::Write {
        upsert: false,
        who: Who::C1,
        k,
        size: 0,
        cfg: on_m1(Pin::Preserve),
        sel: ReplicaSelector::All,
    }
}

// Indexes into SLOTS and SEG_NAMES (the same order for the mounted ones).
const M0: usize = 0;
const M1: usize = 1;

pub fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "a copy's target outlives its source",
            setup: SETUP,
            ops: vec![
                write_on_m1(0),
                Op::CopyStart {
                    k: 0,
                    targets: vec![M0],
                },
                // The source goes with its segment: the copy's PROCESSING
                // target alone holds the key.
                Op::Unmount {
                    slot: M1,
                    owner: true,
                },
                // Past the young-write window of the put.
                Op::Advance(super::reference::DISCARD + 1),
                Op::PutStart {
                    who: Who::C1,
                    k: 0,
                    size: 0,
                    cfg: on_m1(Pin::Preserve),
                },
                Op::BatchStart {
                    upsert: false,
                    who: Who::C1,
                    keys: vec![0],
                    sizes: vec![0],
                    mismatch: false,
                    cfg: on_m1(Pin::Preserve),
                },
                Op::CopyEnd { k: 0 },
                Op::Get { k: 0 },
                Op::Mount {
                    slot: M1,
                    variant: 0,
                },
            ],
            reaches: &[
                "put_start: a task's target alone holds the key",
                "PutStart: OBJECT_HAS_REPLICATION_TASK",
                "BatchPutStart: OBJECT_HAS_REPLICATION_TASK",
                "CopyEnd: REPLICA_IS_GONE",
            ],
        },
        Case {
            name: "a move's and a promotion's targets go with their segment",
            setup: SETUP,
            ops: vec![
                write_on_m1(1),
                Op::MoveStart {
                    k: 1,
                    from: M1,
                    to: M0,
                },
                Op::AddLocalDisk {
                    who: Who::C1,
                    k: 2,
                    size: 0,
                },
                Op::PromotionStart { k: 2, preferred: 4 }, // "zz" (unknown), then "m0"
                // m0 holds both targets.
                Op::Unmount {
                    slot: M0,
                    owner: true,
                },
                Op::MoveEnd { k: 1 },
                Op::PromotionEnd {
                    k: 2,
                    success: true,
                },
                Op::Mount {
                    slot: M0,
                    variant: 0,
                },
                // And the ordinary ends of a move.
                Op::MoveStart {
                    k: 1,
                    from: M1,
                    to: M0,
                },
                Op::MoveRevoke { k: 1 },
                Op::MoveStart {
                    k: 1,
                    from: M1,
                    to: M0,
                },
                Op::MoveEnd { k: 1 },
            ],
            reaches: &[
                "MoveEnd: REPLICA_IS_GONE",
                "PromotionEnd: REPLICA_IS_GONE",
                "MoveRevoke: OK",
                "MoveEnd: OK",
            ],
        },
        Case {
            name: "a saturating ENABLE commits over a carried deadline that expired",
            // ENABLE(max) with the largest accepted maximum saturates.
            setup: Setup {
                unbounded_max_ttl: true,
                ..SETUP
            },
            ops: vec![
                Op::Write {
                    upsert: false,
                    who: Who::C1,
                    k: 0,
                    size: 0,
                    cfg: on_m1(Pin::Enable(100)),
                    sel: ReplicaSelector::All,
                },
                // Case C (another size) carries the unexpired deadline...
                Op::UpsertStart {
                    who: Who::C1,
                    k: 0,
                    size: 1,
                    cfg: on_m1(Pin::EnableMax),
                },
                // ...which expires before the End commits.
                Op::Advance(200),
                Op::End {
                    upsert: true,
                    who: Who::Writer,
                    k: 0,
                    sel: ReplicaSelector::All,
                    tok: Tok::Right,
                },
            ],
            reaches: &[
                "carry: unexpired deadline carried",
                "commit cell: expired x ENABLE(saturating)",
            ],
        },
        Case {
            name: "the clock refuses to reach MAX_INSTANT",
            // The clock starts 100 000 ms before MAX_INSTANT.
            setup: Setup {
                near_max: true,
                ..SETUP
            },
            ops: vec![
                Op::Advance(200_000),
                Op::SetTime(At::Now(200_000)),
                Op::Advance(1_000),
            ],
            reaches: &["AdvanceTime: INVALID_PARAMS", "SetTime: INVALID_PARAMS"],
        },
    ]
}
