//! Coverage counters for the model-based test: which (operation, result
//! code) pairs and which model transitions (commit-table cells, carries,
//! eviction passes, ...) the generated sequences reach, and the ones the CI
//! run must reach ([`REQUIRED_RESULTS`], [`REQUIRED_EVENTS`]). Off unless a
//! test enables it for its thread (both model tests do).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static OP: Cell<&'static str> = const { Cell::new("") };
    static HITS: RefCell<BTreeMap<String, u64>> = const { RefCell::new(BTreeMap::new()) };
}

pub fn enable() {
    ON.with(|o| o.set(true));
}

/// Names the operation whose results the next hits belong to.
pub fn set_op(name: &'static str) {
    OP.with(|o| o.set(name));
}

pub fn hit(event: impl FnOnce() -> String) {
    if ON.with(Cell::get) {
        let e = event();
        HITS.with(|h| *h.borrow_mut().entry(e).or_default() += 1);
    }
}

/// Records the result code of the current operation.
pub fn result(code: &str) {
    hit(|| format!("{}: {code}", OP.with(Cell::get)));
}

pub fn take() -> BTreeMap<String, u64> {
    HITS.with(|h| std::mem::take(&mut *h.borrow_mut()))
}

/// Adds `more` into `into`.
pub fn merge(into: &mut BTreeMap<String, u64>, more: BTreeMap<String, u64>) {
    for (event, n) in more {
        *into.entry(event).or_default() += n;
    }
}

/// The required events and (operation, result) pairs `hits` lacks.
pub fn missing(hits: &BTreeMap<String, u64>) -> Vec<String> {
    let results = REQUIRED_RESULTS
        .iter()
        .flat_map(|(op, codes)| codes.iter().map(move |code| format!("{op}: {code}")));
    results
        .chain(REQUIRED_EVENTS.iter().map(|e| e.to_string()))
        .filter(|e| !hits.contains_key(e))
        .collect()
}

/// (operation, result) pairs the CI run must reach: every pair 10 000 random
/// sequences reached with each of six seeds (the default and 1 to 5), at
/// least 15 times each, plus the rare ones the directed cases reach
/// (`directed.rs`). Result codes are `ErrorKind` names, `OK`, or an
/// existence answer (`true`/`false`).
pub const REQUIRED_RESULTS: &[(&str, &[&str])] = &[
    (
        "AddLocalDiskReplica",
        &["INVALID_PARAMS", "OK", "UNAVAILABLE_IN_CURRENT_STATUS"],
    ),
    ("AdvanceTime", &["INVALID_PARAMS", "OK"]),
    ("BatchExist", &["false", "true"]),
    (
        "BatchGetReplicaList",
        &["OBJECT_NOT_FOUND", "OK", "REPLICA_IS_NOT_READY"],
    ),
    (
        "BatchPutEnd",
        &[
            "ILLEGAL_CLIENT",
            "INVALID_PARAMS",
            "OBJECT_NOT_FOUND",
            "OK",
            "STALE_WRITE_TOKEN",
        ],
    ),
    (
        "BatchPutRevoke",
        &[
            "ILLEGAL_CLIENT",
            "INVALID_PARAMS",
            "INVALID_WRITE",
            "OBJECT_NOT_FOUND",
            "OK",
            "STALE_WRITE_TOKEN",
        ],
    ),
    (
        "BatchPutStart",
        &[
            "INVALID_PARAMS",
            "NO_AVAILABLE_HANDLE",
            "OBJECT_ALREADY_EXISTS",
            "OBJECT_HAS_REPLICATION_TASK",
            "OK",
        ],
    ),
    (
        "BatchRemove",
        // OBJECT_HAS_REPLICATION_TASK needs a task whose targets an unmount
        // took, every replica left COMPLETE: too rare in random sequences
        // to require (core_read_remove.rs reaches it directly).
        &[
            "OBJECT_HAS_LEASE",
            "OBJECT_NOT_FOUND",
            "OK",
            "REPLICA_IS_NOT_READY",
        ],
    ),
    (
        "BatchUpsertStart",
        &[
            "INVALID_PARAMS",
            "NO_AVAILABLE_HANDLE",
            "OBJECT_HAS_REPLICATION_TASK",
            "OK",
        ],
    ),
    (
        "CopyEnd",
        &[
            "OBJECT_NOT_FOUND",
            "OBJECT_NO_REPLICATION_TASK",
            "OK",
            "REPLICA_IS_GONE",
        ],
    ),
    (
        "CopyRevoke",
        &["OBJECT_NOT_FOUND", "OBJECT_NO_REPLICATION_TASK", "OK"],
    ),
    (
        "CopyStart",
        &[
            "INVALID_PARAMS",
            "NO_AVAILABLE_HANDLE",
            "OBJECT_HAS_REPLICATION_TASK",
            "OBJECT_NOT_FOUND",
            "OK",
            "REPLICA_IS_NOT_READY",
            "REPLICA_NOT_FOUND",
            "SEGMENT_NOT_FOUND",
        ],
    ),
    ("Exist", &["false", "true"]),
    (
        "GetReplicaList",
        &["OBJECT_NOT_FOUND", "OK", "REPLICA_IS_NOT_READY"],
    ),
    ("MountSegment", &["OK", "SEGMENT_ALREADY_EXISTS"]),
    (
        "MoveEnd",
        &[
            "OBJECT_NOT_FOUND",
            "OBJECT_NO_REPLICATION_TASK",
            "OK",
            "REPLICA_IS_GONE",
        ],
    ),
    (
        "MoveRevoke",
        &["OBJECT_NOT_FOUND", "OBJECT_NO_REPLICATION_TASK", "OK"],
    ),
    (
        "MoveStart",
        &[
            "INVALID_PARAMS",
            "NO_AVAILABLE_HANDLE",
            "OBJECT_HAS_REPLICATION_TASK",
            "OBJECT_NOT_FOUND",
            "OK",
            "REPLICA_NOT_FOUND",
            "SEGMENT_NOT_FOUND",
        ],
    ),
    (
        "PromotionEnd",
        &[
            "OBJECT_NOT_FOUND",
            "OBJECT_NO_REPLICATION_TASK",
            "OK",
            "REPLICA_IS_GONE",
        ],
    ),
    (
        "PromotionStart",
        &[
            "NO_AVAILABLE_HANDLE",
            "OBJECT_HAS_REPLICATION_TASK",
            "OBJECT_NOT_FOUND",
            "OK",
            "REPLICA_NOT_FOUND",
            "UNAVAILABLE_IN_CURRENT_STATUS",
        ],
    ),
    (
        "PutEnd",
        &[
            "ILLEGAL_CLIENT",
            "OBJECT_NOT_FOUND",
            "OK",
            "STALE_WRITE_TOKEN",
        ],
    ),
    (
        "PutRevoke",
        &[
            "ILLEGAL_CLIENT",
            "INVALID_WRITE",
            "OBJECT_NOT_FOUND",
            "OK",
            "STALE_WRITE_TOKEN",
        ],
    ),
    (
        "PutStart",
        &[
            "INVALID_PARAMS",
            "NO_AVAILABLE_HANDLE",
            "OBJECT_ALREADY_EXISTS",
            "OBJECT_HAS_REPLICATION_TASK",
            "OK",
        ],
    ),
    ("ReleaseGroups", &["INVALID_PARAMS", "OK"]),
    (
        "Remove",
        // OBJECT_HAS_REPLICATION_TASK needs a task whose targets an unmount
        // took, every replica left COMPLETE: too rare in random sequences
        // to require (core_read_remove.rs reaches it directly).
        &[
            "OBJECT_HAS_LEASE",
            "OBJECT_NOT_FOUND",
            "OK",
            "REPLICA_IS_NOT_READY",
        ],
    ),
    ("RemoveByRegex", &["INVALID_PARAMS", "OK"]),
    ("RetainGroups", &["INVALID_PARAMS", "OK"]),
    ("RunEviction", &["INVALID_PARAMS", "OK"]),
    ("SetTime", &["CLOCK_UNSUPPORTED", "INVALID_PARAMS", "OK"]),
    (
        "UnmountSegment",
        &["ILLEGAL_CLIENT", "OK", "SEGMENT_NOT_FOUND"],
    ),
    (
        "UpsertEnd",
        &[
            "ILLEGAL_CLIENT",
            "OBJECT_NOT_FOUND",
            "OK",
            "STALE_WRITE_TOKEN",
        ],
    ),
    (
        "UpsertRevoke",
        &[
            "ILLEGAL_CLIENT",
            "INVALID_WRITE",
            "OBJECT_NOT_FOUND",
            "OK",
            "STALE_WRITE_TOKEN",
        ],
    ),
    (
        "UpsertStart",
        &[
            "INVALID_PARAMS",
            "NO_AVAILABLE_HANDLE",
            "OBJECT_HAS_REPLICATION_TASK",
            "OK",
        ],
    ),
];

/// Model transitions the CI run must reach, chosen as [`REQUIRED_RESULTS`] are.
pub const REQUIRED_EVENTS: &[&str] = &[
    "carry: expired deadline dropped",
    "carry: nothing committed",
    "carry: unexpired deadline carried",
    "cleanup: expired (at <= now: false)",
    "cleanup: expired (at <= now: true)",
    "cleanup: retention expired",
    "commit cell: active x Disable",
    "commit cell: active x ENABLE(0)",
    "commit cell: active x ENABLE(saturating)",
    "commit cell: active x ENABLE(ttl>0)",
    "commit cell: active x Preserve",
    "commit cell: expired x Disable",
    "commit cell: expired x ENABLE(0)",
    "commit cell: expired x ENABLE(saturating)",
    "commit cell: expired x ENABLE(ttl>0)",
    "commit cell: expired x Preserve",
    "commit cell: none x Disable",
    "commit cell: none x ENABLE(0)",
    "commit cell: none x ENABLE(saturating)",
    "commit cell: none x ENABLE(ttl>0)",
    "commit cell: none x Preserve",
    "end: completed nothing",
    "end: first End completes the write",
    "end: first End, write still in flight",
    "end: later End of the same write (no refresh)",
    "evict: active pins taken",
    "evict: candidate protected by group retention",
    "evict: evicted>0 false",
    "evict: evicted>0 true",
    "evict: expired pins normalised",
    "evict: group, members evicted>0 false",
    "evict: group, members evicted>0 true",
    "evict: leased objects skipped",
    "evict: retained group taken",
    "evict: second pass",
    "put_start: a task's target alone holds the key",
    "put_start: replacement keeps the group lease",
    "put_start: stale write replaced",
    "read: group lease raised",
    "release: discarded buffers freed",
    "retain: extends an active deadline false",
    "retain: extends an active deadline true",
    "retain: full",
    "revoke: object erased",
    "revoke: partial, pending kept",
    "revoke: pending cleared, object kept",
    "sweep: write swept, object erased false",
    "sweep: write swept, object erased true",
    "unmount: object erased",
    "unmount: pending cleared",
    "upsert case A (absent)",
    "upsert case A (nothing COMPLETE survives preemption), preempting",
    "upsert case B (same size)",
    "upsert case B (same size), preempting",
    "upsert case C (local-disk only)",
    "upsert case C (other size)",
    "upsert case C (other size), preempting",
];
