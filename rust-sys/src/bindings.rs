// @generated from include/mooncake_meta.h by rust-sys/tests/header_gen; do not edit.
// Regenerate with `MOONCAKE_META_BLESS=1 cargo test -p mooncake-meta-sys --test bindings_sync`.

#[allow(unused_imports)]
use ::core::ffi::{c_char, c_int, c_void};
use ::core::marker::{PhantomData, PhantomPinned};

/// The library version the header was generated for.
pub const MOONCAKE_META_VERSION_MAJOR: u32 = 0;

/// The library version the header was generated for.
pub const MOONCAKE_META_VERSION_MINOR: u32 = 2;

/// The library version the header was generated for.
pub const MOONCAKE_META_VERSION_PATCH: u32 = 0;

/// The library version the header was generated for.
pub const MOONCAKE_META_VERSION_STRING: &str = "0.2.0";

/// The ABI major version. It changes only when a released function, type or
/// constant changes incompatibly; additions (new functions, fields appended
/// to size-versioned structs, new flag bits) keep it.
pub const MOONCAKE_META_ABI_VERSION: u32 = 1;

/// The largest TTL, timeout or interval a configuration may hold, in
/// milliseconds (`INT64_MAX`, the value of `MAX_INSTANT`). The setters store
/// any value; `mooncake_meta_config_validate` and master creation refuse a
/// duration above this with `MOONCAKE_META_INVALID_PARAMS` naming the
/// setting. Every instant the master computes saturates at `INT64_MAX`.
pub const MOONCAKE_META_MAX_DURATION_MS: u64 = 9223372036854775807;

/// The largest `expected_objects` a configuration may hold (2^32). The
/// setter stores any value; `mooncake_meta_config_validate` and master
/// creation refuse a larger one with `MOONCAKE_META_INVALID_PARAMS` naming
/// `expected_objects`.
pub const MOONCAKE_META_MAX_EXPECTED_OBJECTS: u64 = 4294967296;

/// The largest `journal_capacity_bytes` a configuration may hold (2^40,
/// 1 TiB). The setter stores any value; `mooncake_meta_config_validate` and
/// master creation refuse a larger one with `MOONCAKE_META_INVALID_PARAMS`
/// naming `journal_capacity_bytes`.
pub const MOONCAKE_META_MAX_JOURNAL_CAPACITY_BYTES: u64 = 1099511627776;

/// `soft_pin_action`: keep an unexpired committed soft-pin deadline (the
/// default).
pub const MOONCAKE_META_SOFT_PIN_PRESERVE: u32 = 0;

/// `soft_pin_action`: start a new soft-pin lifetime when the write first
/// becomes readable (TTL from `soft_pin_ttl_ms` or the master default).
pub const MOONCAKE_META_SOFT_PIN_ENABLE: u32 = 1;

/// `soft_pin_action`: remove the committed soft-pin deadline when the write
/// first becomes readable.
pub const MOONCAKE_META_SOFT_PIN_DISABLE: u32 = 2;

/// `flags` bit: `soft_pin_ttl_ms` is present (only valid with ENABLE).
pub const MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL: u32 = 1;

/// `flags` bit: hard-pin the object (never evicted).
pub const MOONCAKE_META_WRITE_HARD_PIN: u32 = 2;

/// The most MEMORY replicas, and separately the most NOF_SSD replicas, one
/// write may request; more is `MOONCAKE_META_INVALID_PARAMS`, checked before
/// anything is allocated.
pub const MOONCAKE_META_MAX_REPLICAS_PER_POOL: u32 = 1024;

/// `kind`: a buffer in a memory segment.
pub const MOONCAKE_META_REPLICA_MEMORY: u32 = 0;

/// `kind`: a buffer in a second-pool (NOF_SSD) segment.
pub const MOONCAKE_META_REPLICA_NOF_SSD: u32 = 1;

/// `kind`: a file on a client's local disk (`client` says whose).
pub const MOONCAKE_META_REPLICA_LOCAL_DISK: u32 = 2;

/// `status`: allocated, data not written yet.
pub const MOONCAKE_META_REPLICA_PROCESSING: u32 = 0;

/// `status`: data written; readable.
pub const MOONCAKE_META_REPLICA_COMPLETE: u32 = 1;

/// `segment_id` of a LOCAL_DISK replica, which lives in no segment.
pub const MOONCAKE_META_NO_SEGMENT: u32 = u32::MAX;

/// `pool` of `mooncake_meta_mount_segment`: the memory pool.
pub const MOONCAKE_META_POOL_MEMORY: u32 = 0;

/// `pool` of `mooncake_meta_mount_segment`: the second pool (NOF_SSD).
pub const MOONCAKE_META_POOL_NOF_SSD: u32 = 1;

/// The most bytes that may be mounted at once, both pools together
/// (`INT64_MAX`); a mount that would pass it is
/// `MOONCAKE_META_INVALID_PARAMS`.
pub const MOONCAKE_META_MAX_MOUNTED_BYTES: u64 = 9223372036854775807;

/// `selector` of End/Revoke: the MEMORY replicas of the write.
pub const MOONCAKE_META_SELECT_MEMORY: u32 = 0;

/// `selector` of End/Revoke: the NOF_SSD replicas of the write.
pub const MOONCAKE_META_SELECT_NOF_SSD: u32 = 1;

/// `selector` of End/Revoke: MEMORY and NOF_SSD replicas.
pub const MOONCAKE_META_SELECT_ALL: u32 = 2;

/// A byte buffer owned by the library (a snapshot, Prometheus text).
/// Opaque: read it with `mooncake_meta_bytes_data` and
/// `mooncake_meta_bytes_len`, release it with `mooncake_meta_bytes_free`.
/// The data is followed by a NUL byte that `_len` does not count, so text
/// can be used as a C string directly. Immutable: any number of threads may
/// read one at once.
#[repr(C)]
pub struct mooncake_meta_bytes {
    _data: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}

/// A master configuration under construction. Opaque; created by
/// `mooncake_meta_config_new`, released by `mooncake_meta_config_free`.
/// Internally locked: setters may race without corrupting it (the last
/// write to a field wins).
#[repr(C)]
pub struct mooncake_meta_config {
    _data: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}

/// Details of one failed call: its status code and a message naming the
/// function and the offending argument. Opaque; created by the library,
/// released with `mooncake_meta_error_free`.
#[repr(C)]
pub struct mooncake_meta_error {
    _data: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}

/// One page of a key listing, owned by the library: read it with
/// `mooncake_meta_key_list_len`, `_get` and `_next_cursor`, release it with
/// `mooncake_meta_key_list_free`. Immutable: any number of threads may read
/// it at once.
#[repr(C)]
pub struct mooncake_meta_key_list {
    _data: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}

/// An opaque metadata master. Create with `mooncake_meta_master_new`,
/// release with `mooncake_meta_master_free`. Every operation may be called
/// concurrently from any number of threads, except `_free`, which must not
/// race any other call on the same master.
#[repr(C)]
pub struct mooncake_meta_master {
    _data: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}

/// Result of every fallible function: `MOONCAKE_META_OK` (0) or one of the
/// negative `MOONCAKE_META_*` codes below. Codes are stable across releases.
pub type mooncake_meta_status = i32;

/// The extended write configuration: size-versioned and append-only, so a
/// caller compiled against an older header keeps working.
///
/// Fill it with `mooncake_meta_write_config_init(&cfg, sizeof cfg, err)`,
/// then set fields. The library reads `struct_size` bytes: a size below the
/// first version's, above 4096, or with non-zero bytes past the fields this
/// library knows is `MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED`. Fields added
/// later are appended, and their all-zero value always means "absent".
/// Wherever a pointer to it is taken, NULL means the defaults.
///
/// Ownership: filled and owned by the caller; the library only reads it
/// (and the strings it points to) during the call.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct mooncake_meta_write_config {
    /// Size in bytes of the caller's struct; set by `_init`.
    pub struct_size: u32,
    /// `MOONCAKE_META_WRITE_*` bits; any other bit is
    /// `MOONCAKE_META_UNKNOWN_FLAGS`.
    pub flags: u32,
    /// One of `MOONCAKE_META_SOFT_PIN_*`; any other value is
    /// `MOONCAKE_META_INVALID_PARAMS`.
    pub soft_pin_action: u32,
    /// Must be 0.
    pub reserved0: u32,
    /// Soft-pin TTL in milliseconds, read only with
    /// `MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL` (and then only valid with
    /// ENABLE; 0 commits ordinary cache). Must be 0 without the flag.
    pub soft_pin_ttl_ms: u64,
    /// Memory replicas to allocate (default 1), at most
    /// `MOONCAKE_META_MAX_REPLICAS_PER_POOL`.
    pub memory_replicas: u32,
    /// Second-pool (NOF_SSD) replicas to allocate (default 0), at most
    /// `MOONCAKE_META_MAX_REPLICAS_PER_POOL`.
    pub nof_ssd_replicas: u32,
    /// `preferred_segments_count` NUL-terminated UTF-8 segment names to try
    /// first, in order; may be NULL when the count is 0.
    pub preferred_segments: *const *const c_char,
    /// Number of entries in `preferred_segments`.
    pub preferred_segments_count: usize,
    /// NUL-terminated UTF-8 group to join at creation; NULL for none (an
    /// Upsert of an existing object then keeps the object's group).
    pub group: *const c_char,
}

impl Default for mooncake_meta_write_config {
    /// All zero (NULL pointers) but `struct_size`, which is this struct's size.
    fn default() -> Self {
        Self {
            struct_size: ::core::mem::size_of::<Self>() as u32,
            flags: 0,
            soft_pin_action: 0,
            reserved0: 0,
            soft_pin_ttl_ms: 0,
            memory_replicas: 0,
            nof_ssd_replicas: 0,
            preferred_segments: ::core::ptr::null(),
            preferred_segments_count: 0,
            group: ::core::ptr::null(),
        }
    }
}

/// The legacy write configuration, identical in layout to upstream
/// Mooncake's `struct mooncake_replicate_config` (store_c.h) and frozen
/// forever. `with_soft_pin` non-zero means ENABLE with the master's default
/// TTL, 0 means PRESERVE; `with_hard_pin` non-zero hard-pins the object.
/// Wherever a pointer to it is taken, NULL means the defaults (one memory
/// replica, PRESERVE, no hard pin), as upstream.
///
/// Ownership: filled and owned by the caller; the library only reads it
/// (and the strings it points to) during the call.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct mooncake_meta_replicate_config {
    /// Number of memory replicas (at least 1).
    pub replica_num: usize,
    /// Non-zero: soft-pin with the master's default TTL.
    pub with_soft_pin: c_int,
    /// Non-zero: hard-pin the object.
    pub with_hard_pin: c_int,
    /// `preferred_segments_count` NUL-terminated UTF-8 segment names to try
    /// first, in order; may be NULL when the count is 0.
    pub preferred_segments: *mut *const c_char,
    /// Number of entries in `preferred_segments`.
    pub preferred_segments_count: usize,
}

impl Default for mooncake_meta_replicate_config {
    /// All zero (NULL pointers).
    fn default() -> Self {
        Self {
            replica_num: 0,
            with_soft_pin: 0,
            with_hard_pin: 0,
            preferred_segments: ::core::ptr::null_mut(),
            preferred_segments_count: 0,
        }
    }
}

/// What an unmount dropped. Size-versioned and append-only: set
/// `struct_size = sizeof(mooncake_meta_unmount_report)` before the call;
/// the library writes `min(struct_size, its own size)` bytes (fields a newer
/// header adds are left untouched by an older library) and never changes
/// `struct_size`. A `struct_size` below the first version's (24), above
/// 4096 (taken for an uninitialised field, not a future version), or not a
/// multiple of 8 (no version's `sizeof`: the library would write part of a
/// field) is `MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED`, checked before
/// anything is unmounted.
///
/// Ownership: owned by the caller; the library only writes it.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct mooncake_meta_unmount_report {
    /// Size in bytes of the caller's struct; set by the caller, read only.
    pub struct_size: u32,
    /// Always 0.
    pub reserved: u32,
    /// Replicas that lived on the unmounted segment(s).
    pub replicas_dropped: u64,
    /// Objects erased because no replica was left.
    pub objects_erased: u64,
}

impl Default for mooncake_meta_unmount_report {
    /// All zero (NULL pointers) but `struct_size`, which is this struct's size.
    fn default() -> Self {
        Self {
            struct_size: ::core::mem::size_of::<Self>() as u32,
            reserved: 0,
            replicas_dropped: 0,
            objects_erased: 0,
        }
    }
}

/// One replica as the master reports it. Fixed layout (48 bytes), never
/// extended: new information would come through a new function.
///
/// A MEMORY or NOF_SSD replica is `size` bytes at `address` in segment
/// `segment_id` (`client` is 0); a LOCAL_DISK replica is held by `client`
/// (`segment_id` is `MOONCAKE_META_NO_SEGMENT`, `address` 0).
///
/// Ownership: filled by the library into arrays the caller owns.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct mooncake_meta_replica {
    /// Replica id, unique within the master.
    pub id: u64,
    /// One of `MOONCAKE_META_REPLICA_MEMORY`, `_NOF_SSD`, `_LOCAL_DISK`.
    pub kind: u32,
    /// `MOONCAKE_META_REPLICA_PROCESSING` or `MOONCAKE_META_REPLICA_COMPLETE`.
    pub status: u32,
    /// Segment of a buffer replica; `MOONCAKE_META_NO_SEGMENT` for LOCAL_DISK.
    pub segment_id: u32,
    /// Always 0.
    pub reserved: u32,
    /// Address of a buffer replica; 0 for LOCAL_DISK.
    pub address: u64,
    /// Size of the object in bytes.
    pub size: u64,
    /// Client holding a LOCAL_DISK replica; 0 for buffer replicas.
    pub client: u64,
}

impl Default for mooncake_meta_replica {
    /// All zero (NULL pointers).
    fn default() -> Self {
        Self {
            id: 0,
            kind: 0,
            status: 0,
            segment_id: 0,
            reserved: 0,
            address: 0,
            size: 0,
            client: 0,
        }
    }
}

/// What one soft-pin cleanup cycle did. Size-versioned output: set
/// `struct_size = sizeof(mooncake_meta_cleanup_stats)` before the call; the
/// library fills `min(struct_size, its size)` bytes and sets `struct_size`
/// to that. Fields are only ever appended.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct mooncake_meta_cleanup_stats {
    /// Set by the caller; on success, the bytes the library filled.
    pub struct_size: u32,
    /// Written as 0.
    pub reserved0: u32,
    /// Index entries popped (valid and stale).
    pub popped: u64,
    /// Popped entries dropped because a newer registration replaced them.
    pub stale_dropped: u64,
    /// Soft pins cleared.
    pub expired: u64,
    /// Index-lock holds that took due entries out: pop holds (bounded
    /// batches) and one per wave taken in one pass over the detached heap.
    pub batches: u64,
    /// Shard read locks taken (one per affected shard per batch, again after
    /// every 512 entries of one shard).
    pub shards_touched: u64,
    /// Longest deadline-index lock hold seen by this master so far, in ns (registrations are sampled: one hold in 32, and every one that starts a heap chunk).
    pub longest_index_hold_ns: u64,
    /// Wall time of the cycle on a real monotonic clock, in ns.
    pub duration_ns: u64,
}

impl Default for mooncake_meta_cleanup_stats {
    /// All zero (NULL pointers) but `struct_size`, which is this struct's size.
    fn default() -> Self {
        Self {
            struct_size: ::core::mem::size_of::<Self>() as u32,
            reserved0: 0,
            popped: 0,
            stale_dropped: 0,
            expired: 0,
            batches: 0,
            shards_touched: 0,
            longest_index_hold_ns: 0,
            duration_ns: 0,
        }
    }
}

/// What one eviction run did. Size-versioned output, as
/// `mooncake_meta_cleanup_stats`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct mooncake_meta_eviction_report {
    /// Set by the caller; on success, the bytes the library filled.
    pub struct_size: u32,
    /// Written as 0.
    pub reserved0: u32,
    /// The eviction base: non-hard-pinned objects with an evictable memory
    /// replica (objects, not bytes).
    pub base: u64,
    /// Base objects whose lease was not live.
    pub candidates: u64,
    /// Objects whose memory replicas were freed.
    pub evicted: u64,
    /// Bytes freed by those evictions.
    pub evicted_bytes: u64,
    /// Of `evicted`, those taken by the second pass while protected (own
    /// soft pin active, or group retention active).
    pub evicted_pinned: u64,
    /// Discarded buffers released by this run.
    pub discarded_released: u64,
    /// Expired soft-pin deadlines cleared while examining candidates.
    pub normalised: u64,
}

impl Default for mooncake_meta_eviction_report {
    /// All zero (NULL pointers) but `struct_size`, which is this struct's size.
    fn default() -> Self {
        Self {
            struct_size: ::core::mem::size_of::<Self>() as u32,
            reserved0: 0,
            base: 0,
            candidates: 0,
            evicted: 0,
            evicted_bytes: 0,
            evicted_pinned: 0,
            discarded_released: 0,
            normalised: 0,
        }
    }
}

/// Every scalar metric of one master. Size-versioned output: set
/// `struct_size = sizeof(mooncake_meta_metrics_snapshot)` before calling
/// `mooncake_meta_metrics`; the library fills `min(struct_size, its size)`
/// bytes and sets `struct_size` to that. Fields are only ever appended.
/// Each value is read atomically; the set is not one atomic cut. Counters
/// (`*_total` in Prometheus) start at 0 when the master is created and
/// only grow: they are not part of a snapshot, and a restore keeps them.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct mooncake_meta_metrics_snapshot {
    /// Set by the caller; on success, the bytes the library filled.
    pub struct_size: u32,
    /// Written as 0.
    pub reserved0: u32,
    /// Objects stored (`master_key_count`).
    pub key_count: u64,
    /// Objects with a committed soft-pin deadline, expired-but-not-yet-
    /// normalised ones included (`master_soft_pin_key_count`).
    pub soft_pin_key_count: u64,
    /// Capacity of the memory segments.
    pub memory_capacity_bytes: u64,
    /// Bytes allocated in memory segments (discarded buffers included).
    pub memory_allocated_bytes: u64,
    /// Capacity of the second-pool (NOF_SSD) segments.
    pub nof_ssd_capacity_bytes: u64,
    /// Bytes allocated in second-pool segments.
    pub nof_ssd_allocated_bytes: u64,
    /// Discarded buffers waiting for their release instant, in bytes.
    pub discarded_staging_bytes: u64,
    /// Starts rejected with NO_AVAILABLE_HANDLE.
    pub put_start_failures: u64,
    /// Eviction runs.
    pub eviction_attempts: u64,
    /// Eviction runs that freed something.
    pub eviction_successes: u64,
    /// Objects evicted.
    pub evicted_keys: u64,
    /// Bytes evicted.
    pub evicted_bytes: u64,
    /// Soft-pin cleanup cycles.
    pub cleanup_cycles: u64,
    /// Index entries popped by cleanup (valid and stale).
    pub cleanup_popped: u64,
    /// Popped entries dropped as stale.
    pub cleanup_stale_dropped: u64,
    /// Soft pins expired by cleanup.
    pub cleanup_expired: u64,
    /// Duration of the last cleanup cycle, in ns.
    pub cleanup_last_duration_ns: u64,
    /// Longest deadline-index lock hold, in ns (registrations are sampled: one hold in 32, and every one that starts a heap chunk).
    pub cleanup_longest_hold_ns: u64,
    /// Deadline heap entries, stale ones included.
    pub index_heap_size: u64,
    /// Live deadline registrations.
    pub index_live_registrations: u64,
    /// Maintenance tasks that panicked (caught; the thread goes on).
    pub maintenance_task_panics: u64,
    /// Stale writes swept.
    pub swept_writes: u64,
    /// Mounted segments (their usage is in the Prometheus text).
    pub segment_count: u64,
    /// Version 2: the master's timeline minus the wall clock,
    /// in ms (`master_clock_skew_ms`). A wall-clock step moves this, never a
    /// lifetime.
    pub clock_skew_ms: i64,
    /// Version 3: groups with a committed retention deadline
    /// (`master_retained_group_count`; converges to the actively retained
    /// ones within one cleanup interval).
    pub retained_group_count: u64,
    /// Version 4: change-journal records appended
    /// (`master_journal_records_appended_total`; every journal figure is 0 with
    /// the journal off, docs/CONTRACT.md section 12).
    pub journal_records_appended: u64,
    /// Version 4: bytes the journal holds (`master_journal_bytes_held`).
    pub journal_bytes_held: u64,
    /// Version 4: records dropped unreleased: the journal full, a record
    /// larger than its capacity, or a journaling standby's numbering moved
    /// (`master_journal_records_dropped_total`).
    pub journal_records_dropped: u64,
    /// Version 4: sequence of the last record appended
    /// (`master_journal_last_seq`).
    pub journal_last_seq: u64,
    /// Version 4: highest sequence the consumer released
    /// (`master_journal_released_seq`).
    pub journal_released_seq: u64,
    /// Version 4: 1 on a standby, 0 on a primary (`master_standby`).
    pub standby: u64,
    /// Version 4: the last journal sequence applied or installed by a
    /// restore (`master_journal_applied_seq`; 0 = none).
    pub journal_applied_seq: u64,
}

impl Default for mooncake_meta_metrics_snapshot {
    /// All zero (NULL pointers) but `struct_size`, which is this struct's size.
    fn default() -> Self {
        Self {
            struct_size: ::core::mem::size_of::<Self>() as u32,
            reserved0: 0,
            key_count: 0,
            soft_pin_key_count: 0,
            memory_capacity_bytes: 0,
            memory_allocated_bytes: 0,
            nof_ssd_capacity_bytes: 0,
            nof_ssd_allocated_bytes: 0,
            discarded_staging_bytes: 0,
            put_start_failures: 0,
            eviction_attempts: 0,
            eviction_successes: 0,
            evicted_keys: 0,
            evicted_bytes: 0,
            cleanup_cycles: 0,
            cleanup_popped: 0,
            cleanup_stale_dropped: 0,
            cleanup_expired: 0,
            cleanup_last_duration_ns: 0,
            cleanup_longest_hold_ns: 0,
            index_heap_size: 0,
            index_live_registrations: 0,
            maintenance_task_panics: 0,
            swept_writes: 0,
            segment_count: 0,
            clock_skew_ms: 0,
            retained_group_count: 0,
            journal_records_appended: 0,
            journal_bytes_held: 0,
            journal_records_dropped: 0,
            journal_last_seq: 0,
            journal_released_seq: 0,
            standby: 0,
            journal_applied_seq: 0,
        }
    }
}

/// What a restore did. Size-versioned output: set
/// `struct_size = sizeof(mooncake_meta_restore_report)` before the call; the
/// library fills `min(struct_size, its size)` bytes and sets `struct_size`
/// to that. Fields are only ever appended.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct mooncake_meta_restore_report {
    /// Set by the caller; on success, the bytes the library filled.
    pub struct_size: u32,
    /// Written as 0.
    pub reserved0: u32,
    /// Index, in the caller's list, of the candidate that was restored (0
    /// for `mooncake_meta_restore`).
    pub candidate: u64,
    /// The restored snapshot's creation instant, on the timeline of the
    /// master that took it.
    pub created_at: u64,
    /// Objects restored.
    pub objects_restored: u64,
    /// Objects dropped by the survival rule (nothing COMPLETE, or neither a
    /// live lease, an active soft pin nor a hard pin).
    pub objects_dropped: u64,
    /// PROCESSING replicas dropped (in-flight writes, task targets).
    pub replicas_dropped: u64,
    /// Surviving active soft pins (registered in the deadline index).
    pub soft_pins_restored: u64,
    /// Expired deadlines normalised to none.
    pub soft_pins_normalised: u64,
    /// Candidates rejected before the winner (newer ones that failed to
    /// validate, or could not be read).
    pub candidates_rejected: u64,
    /// Version 2: how far every stored instant was shifted
    /// onto this master's timeline: its clock skew now minus the skew at
    /// capture; 0 for equal skews and for snapshots without a wall record
    /// (format 1, and formats 3 to 5 when it is absent).
    pub clock_shift_ms: i64,
}

impl Default for mooncake_meta_restore_report {
    /// All zero (NULL pointers) but `struct_size`, which is this struct's size.
    fn default() -> Self {
        Self {
            struct_size: ::core::mem::size_of::<Self>() as u32,
            reserved0: 0,
            candidate: 0,
            created_at: 0,
            objects_restored: 0,
            objects_dropped: 0,
            replicas_dropped: 0,
            soft_pins_restored: 0,
            soft_pins_normalised: 0,
            candidates_rejected: 0,
            clock_shift_ms: 0,
        }
    }
}

/// The journal's counters (all zero, `capacity_bytes` included, on a
/// master without a journal). Size-versioned output: set `struct_size =
/// sizeof(mooncake_meta_journal_stats)` before the call; the library fills
/// `min(struct_size, its size)` bytes and sets `struct_size` to that.
/// Fields are only ever appended.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct mooncake_meta_journal_stats {
    /// Set by the caller; on success, the bytes the library filled.
    pub struct_size: u32,
    /// Written as 0.
    pub reserved0: u32,
    /// Most bytes the journal holds at once (`journal_capacity_bytes`).
    pub capacity_bytes: u64,
    /// Bytes held now (the records' encoded bytes plus a fixed overhead
    /// each), never above the capacity.
    pub bytes_held: u64,
    /// Records held now.
    pub records_held: u64,
    /// Sequence of the oldest record held (`last_seq + 1` when none is).
    pub first_seq: u64,
    /// Sequence of the newest record appended (0 before any).
    pub last_seq: u64,
    /// Highest sequence the consumer released (0: none).
    pub released_upto: u64,
    /// Highest sequence dropped unreleased (the journal full, a record
    /// larger than its capacity, or a journaling standby's numbering moved;
    /// 0: none). Reading from it or below is `MOONCAKE_META_JOURNAL_OVERRUN`.
    pub dropped_upto: u64,
    /// Records dropped unreleased so far.
    pub dropped_records: u64,
    /// Records appended since the journal was created, dropped ones
    /// included.
    pub records_appended: u64,
}

impl Default for mooncake_meta_journal_stats {
    /// All zero (NULL pointers) but `struct_size`, which is this struct's size.
    fn default() -> Self {
        Self {
            struct_size: ::core::mem::size_of::<Self>() as u32,
            reserved0: 0,
            capacity_bytes: 0,
            bytes_held: 0,
            records_held: 0,
            first_seq: 0,
            last_seq: 0,
            released_upto: 0,
            dropped_upto: 0,
            dropped_records: 0,
            records_appended: 0,
        }
    }
}

/// What `mooncake_meta_journal_apply` did. Size-versioned output, as
/// `mooncake_meta_journal_stats`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct mooncake_meta_apply_report {
    /// Set by the caller; on success, the bytes the library filled.
    pub struct_size: u32,
    /// Written as 0.
    pub reserved0: u32,
    /// Records applied by this call.
    pub records_applied: u64,
    /// Records at or below the applied sequence, skipped as repeats.
    pub records_skipped: u64,
    /// The standby's applied sequence after the call.
    pub last_seq: u64,
}

impl Default for mooncake_meta_apply_report {
    /// All zero (NULL pointers) but `struct_size`, which is this struct's size.
    fn default() -> Self {
        Self {
            struct_size: ::core::mem::size_of::<Self>() as u32,
            reserved0: 0,
            records_applied: 0,
            records_skipped: 0,
            last_seq: 0,
        }
    }
}

/// What `mooncake_meta_promote` did. Size-versioned output, as
/// `mooncake_meta_journal_stats`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct mooncake_meta_promote_report {
    /// Set by the caller; on success, the bytes the library filled.
    pub struct_size: u32,
    /// Written as 0.
    pub reserved0: u32,
    /// Readable objects given the recovery lease.
    pub objects_leased: u64,
    /// Writes in flight that go on on the promoted master.
    pub writes_in_flight: u64,
    /// The last sequence applied before the promotion; the promoted
    /// master's journal goes on after it.
    pub applied_seq: u64,
}

impl Default for mooncake_meta_promote_report {
    /// All zero (NULL pointers) but `struct_size`, which is this struct's size.
    fn default() -> Self {
        Self {
            struct_size: ::core::mem::size_of::<Self>() as u32,
            reserved0: 0,
            objects_leased: 0,
            writes_in_flight: 0,
            applied_seq: 0,
        }
    }
}

/// Success.
pub const MOONCAKE_META_OK: mooncake_meta_status = 0;

/// An internal invariant failed (a bug in the library).
pub const MOONCAKE_META_INTERNAL_ERROR: mooncake_meta_status = -1;

/// The named segment is not mounted.
pub const MOONCAKE_META_SEGMENT_NOT_FOUND: mooncake_meta_status = -101;

/// A segment with that name is already mounted.
pub const MOONCAKE_META_SEGMENT_ALREADY_EXISTS: mooncake_meta_status = -102;

/// No segment had room for the requested replicas.
pub const MOONCAKE_META_NO_AVAILABLE_HANDLE: mooncake_meta_status = -200;

/// An argument or configuration value breaks a documented rule.
pub const MOONCAKE_META_INVALID_PARAMS: mooncake_meta_status = -600;

/// The caller is not the object's current writer.
pub const MOONCAKE_META_ILLEGAL_CLIENT: mooncake_meta_status = -601;

/// Revoke that matches no write in flight, or a selected replica not
/// PROCESSING; from an End with no write in flight, a selected copy, move
/// or promotion target not COMPLETE (docs/CONTRACT.md section 3).
pub const MOONCAKE_META_INVALID_WRITE: mooncake_meta_status = -700;

/// The object has no readable replica yet.
pub const MOONCAKE_META_REPLICA_IS_NOT_READY: mooncake_meta_status = -703;

/// No object with that key.
pub const MOONCAKE_META_OBJECT_NOT_FOUND: mooncake_meta_status = -704;

/// The object exists, or a young write holds the key.
pub const MOONCAKE_META_OBJECT_ALREADY_EXISTS: mooncake_meta_status = -705;

/// A live read lease blocks the operation.
pub const MOONCAKE_META_OBJECT_HAS_LEASE: mooncake_meta_status = -706;

/// A copy/move/promotion task is running on the key.
pub const MOONCAKE_META_OBJECT_HAS_REPLICATION_TASK: mooncake_meta_status = -708;

/// No copy/move/promotion task is running on the key.
pub const MOONCAKE_META_OBJECT_NO_REPLICATION_TASK: mooncake_meta_status = -709;

/// The named replica does not exist.
pub const MOONCAKE_META_REPLICA_NOT_FOUND: mooncake_meta_status = -710;

/// The source or target replica vanished during a task.
pub const MOONCAKE_META_REPLICA_IS_GONE: mooncake_meta_status = -712;

/// Reserved (upstream's value), never returned: a replica is busy only as
/// the source or target of a copy, move or promotion, which every operation
/// reports first as `MOONCAKE_META_OBJECT_HAS_REPLICATION_TASK`.
pub const MOONCAKE_META_OBJECT_REPLICA_BUSY: mooncake_meta_status = -714;

/// The operation is not available in the object's current state.
pub const MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS: mooncake_meta_status = -1010;

/// A snapshot could not be written.
pub const MOONCAKE_META_SERIALIZE_FAIL: mooncake_meta_status = -1501;

/// A snapshot could not be read (corrupt, truncated or unknown version).
pub const MOONCAKE_META_DESERIALIZE_FAIL: mooncake_meta_status = -1502;

/// A required pointer argument was NULL (or NULL with a non-zero length).
pub const MOONCAKE_META_NULL_ARGUMENT: mooncake_meta_status = -9001;

/// A string argument was not valid UTF-8.
pub const MOONCAKE_META_INVALID_UTF8: mooncake_meta_status = -9002;

/// A caller-supplied buffer was too small for the result.
pub const MOONCAKE_META_BUFFER_TOO_SMALL: mooncake_meta_status = -9003;

/// A size-versioned struct's `struct_size` is not one this library accepts.
pub const MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED: mooncake_meta_status = -9004;

/// A `flags` field has bits this library does not know.
pub const MOONCAKE_META_UNKNOWN_FLAGS: mooncake_meta_status = -9005;

/// The library panicked; the handle involved is poisoned (only its `_free`
/// still works).
pub const MOONCAKE_META_PANIC: mooncake_meta_status = -9006;

/// End/Revoke with a write token that is not the current write's.
pub const MOONCAKE_META_STALE_WRITE_TOKEN: mooncake_meta_status = -9007;

/// Manual-clock call on a system-clock master, or setting the clock backwards.
pub const MOONCAKE_META_CLOCK_UNSUPPORTED: mooncake_meta_status = -9008;

/// A group that is not retained cannot be: `max_retained_groups` groups are
/// (retained groups may still extend).
pub const MOONCAKE_META_GROUP_RETENTION_FULL: mooncake_meta_status = -9009;

/// A change-journal read asked for records that were dropped before the
/// consumer released them (the journal full, a record larger than its
/// capacity, or a journaling standby's numbering moved) or were released:
/// resync from a snapshot (docs/CONTRACT.md section 12).
pub const MOONCAKE_META_JOURNAL_OVERRUN: mooncake_meta_status = -9010;

extern "C" {
    /// The upper-case name of a status code without the prefix (`"OK"`,
    /// `"OBJECT_NOT_FOUND"`), or `"UNKNOWN_STATUS"` for a code this library
    /// does not define.
    ///
    /// Ownership: the returned string is static; never free it.
    /// Thread safety: may be called from any thread at any time.
    pub fn mooncake_meta_status_name(status: mooncake_meta_status) -> *const c_char;

    /// The library version, `"MAJOR.MINOR.PATCH"` (equal to
    /// `MOONCAKE_META_VERSION_STRING` of the header it was built with).
    ///
    /// Ownership: the returned string is static; never free it.
    /// Thread safety: may be called from any thread at any time.
    pub fn mooncake_meta_version() -> *const c_char;

    /// The ABI major version of the running library (equal to
    /// `MOONCAKE_META_ABI_VERSION` of the header it was built with). A program
    /// should refuse to run if this differs from its compile-time value.
    ///
    /// Ownership: nothing to own.
    /// Thread safety: may be called from any thread at any time.
    pub fn mooncake_meta_abi_version() -> u32;

    /// The status code of a failed call: one of the negative `MOONCAKE_META_*`
    /// codes (the value the call returned), or `MOONCAKE_META_NULL_ARGUMENT`
    /// when `err` is NULL. Typed `int32_t`, not `mooncake_meta_status`, because
    /// it reports a stored value rather than the outcome of this call.
    ///
    /// Ownership: `err` stays owned by the caller.
    /// Thread safety: an error is immutable; any number of threads may read it
    /// at once, but not while another frees it.
    ///
    /// # Safety
    /// `err` must be NULL or an error from this library not yet freed.
    pub fn mooncake_meta_error_code(err: *const mooncake_meta_error) -> i32;

    /// The NUL-terminated UTF-8 message of a failed call. A NULL `err` gives a
    /// static string saying so.
    ///
    /// Ownership: the string belongs to `err` and is valid until
    /// `mooncake_meta_error_free(err)`; do not free it separately.
    /// Thread safety: as `mooncake_meta_error_code`.
    ///
    /// # Safety
    /// `err` must be NULL or an error from this library not yet freed.
    pub fn mooncake_meta_error_message(err: *const mooncake_meta_error) -> *const c_char;

    /// Releases an error object. `mooncake_meta_error_free(NULL)` does nothing.
    ///
    /// Ownership: takes ownership of `err`; it and its message are invalid
    /// afterwards.
    /// Thread safety: no other thread may use `err` concurrently.
    ///
    /// # Safety
    /// `err` must be NULL or an error from this library not yet freed.
    pub fn mooncake_meta_error_free(err: *mut mooncake_meta_error);

    /// Creates a configuration holding the documented defaults (system clock,
    /// background tasks on).
    ///
    /// Ownership: on success `*out_cfg` is a new handle owned by the caller, to
    /// be released with `mooncake_meta_config_free`; on failure `*out_cfg` is
    /// not written.
    /// Thread safety: may be called from any thread.
    ///
    /// # Safety
    /// `out_cfg` must be valid for writing one pointer; `err` must be NULL or
    /// valid for writing one pointer.
    pub fn mooncake_meta_config_new(
        out_cfg: *mut *mut mooncake_meta_config,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Releases a configuration. `mooncake_meta_config_free(NULL)` does nothing;
    /// a configuration poisoned by a panic may (and should) still be freed.
    /// A master created from it keeps its own copy.
    ///
    /// Ownership: takes ownership of `cfg`; it is invalid afterwards.
    /// Thread safety: no other thread may use `cfg` concurrently.
    ///
    /// # Safety
    /// `cfg` must be NULL or a configuration from `mooncake_meta_config_new`
    /// not yet freed.
    pub fn mooncake_meta_config_free(cfg: *mut mooncake_meta_config);

    /// Checks the configuration as master creation will (docs/CONTRACT.md section 9): default
    /// soft-pin TTL <= maximum, ratios in range, release timeout > discard
    /// timeout, shard count in [1, 2^20], expected objects at most
    /// `MOONCAKE_META_MAX_EXPECTED_OBJECTS`, manual clock start below
    /// `MAX_INSTANT`. `MOONCAKE_META_INVALID_PARAMS` names the bad field.
    ///
    /// Ownership: `cfg` stays owned by the caller.
    /// Thread safety: may run concurrently with any call on `cfg` but `_free`.
    ///
    /// # Safety
    /// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
    /// for writing one pointer.
    pub fn mooncake_meta_config_validate(
        cfg: *const mooncake_meta_config,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Sets the read lease that Get and Exist grant, in milliseconds
    /// (default 10000).
    ///
    /// Ownership: `cfg` stays owned by the caller.
    /// Thread safety: may run concurrently with any call on `cfg` but `_free`.
    ///
    /// # Safety
    /// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
    /// for writing one pointer.
    pub fn mooncake_meta_config_set_default_kv_lease_ttl_ms(
        cfg: *mut mooncake_meta_config,
        ttl_ms: u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Sets the soft-pin TTL of a write that asks for ENABLE without a TTL, in
    /// milliseconds (default 1800000); must not exceed the maximum.
    ///
    /// Ownership: `cfg` stays owned by the caller.
    /// Thread safety: may run concurrently with any call on `cfg` but `_free`.
    ///
    /// # Safety
    /// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
    /// for writing one pointer.
    pub fn mooncake_meta_config_set_default_kv_soft_pin_ttl_ms(
        cfg: *mut mooncake_meta_config,
        ttl_ms: u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Sets the largest soft-pin TTL a write may request, in milliseconds
    /// (default 86400000).
    ///
    /// Ownership: `cfg` stays owned by the caller.
    /// Thread safety: may run concurrently with any call on `cfg` but `_free`.
    ///
    /// # Safety
    /// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
    /// for writing one pointer.
    pub fn mooncake_meta_config_set_max_kv_soft_pin_ttl_ms(
        cfg: *mut mooncake_meta_config,
        ttl_ms: u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Sets whether eviction's second pass may take actively soft-pinned
    /// objects: 1 (default) or 0. Any other value is
    /// `MOONCAKE_META_INVALID_PARAMS` and leaves the field unchanged.
    ///
    /// Ownership: `cfg` stays owned by the caller.
    /// Thread safety: may run concurrently with any call on `cfg` but `_free`.
    ///
    /// # Safety
    /// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
    /// for writing one pointer.
    pub fn mooncake_meta_config_set_allow_evict_soft_pinned_objects(
        cfg: *mut mooncake_meta_config,
        allow: c_int,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Sets the fraction of the eviction base evicted per run (default 0.05;
    /// valid range [0, 1], checked at validation).
    ///
    /// Ownership: `cfg` stays owned by the caller.
    /// Thread safety: may run concurrently with any call on `cfg` but `_free`.
    ///
    /// # Safety
    /// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
    /// for writing one pointer.
    pub fn mooncake_meta_config_set_eviction_ratio(
        cfg: *mut mooncake_meta_config,
        ratio: f64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Sets the memory usage above which eviction runs (default 0.90; valid
    /// range (0, 1], checked at validation).
    ///
    /// Ownership: `cfg` stays owned by the caller.
    /// Thread safety: may run concurrently with any call on `cfg` but `_free`.
    ///
    /// # Safety
    /// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
    /// for writing one pointer.
    pub fn mooncake_meta_config_set_eviction_high_watermark_ratio(
        cfg: *mut mooncake_meta_config,
        ratio: f64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Sets how long a write stays young (blocking a PutStart on its key), in
    /// milliseconds (default 30000).
    ///
    /// Ownership: `cfg` stays owned by the caller.
    /// Thread safety: may run concurrently with any call on `cfg` but `_free`.
    ///
    /// # Safety
    /// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
    /// for writing one pointer.
    pub fn mooncake_meta_config_set_put_start_discard_timeout_ms(
        cfg: *mut mooncake_meta_config,
        timeout_ms: u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Sets how long discarded buffers are held, and after which stale writes
    /// are swept, in milliseconds (default 600000; must exceed the discard
    /// timeout).
    ///
    /// Ownership: `cfg` stays owned by the caller.
    /// Thread safety: may run concurrently with any call on `cfg` but `_free`.
    ///
    /// # Safety
    /// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
    /// for writing one pointer.
    pub fn mooncake_meta_config_set_put_start_release_timeout_ms(
        cfg: *mut mooncake_meta_config,
        timeout_ms: u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Sets the period of the soft-pin expiration cleanup, in milliseconds
    /// (default 1000; 0 = no background cleanup).
    ///
    /// Ownership: `cfg` stays owned by the caller.
    /// Thread safety: may run concurrently with any call on `cfg` but `_free`.
    ///
    /// # Safety
    /// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
    /// for writing one pointer.
    pub fn mooncake_meta_config_set_soft_pin_cleanup_interval_ms(
        cfg: *mut mooncake_meta_config,
        interval_ms: u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Sets the period of the eviction check, in milliseconds (default 10;
    /// 0 = no background eviction).
    ///
    /// Ownership: `cfg` stays owned by the caller.
    /// Thread safety: may run concurrently with any call on `cfg` but `_free`.
    ///
    /// # Safety
    /// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
    /// for writing one pointer.
    pub fn mooncake_meta_config_set_eviction_check_interval_ms(
        cfg: *mut mooncake_meta_config,
        interval_ms: u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Sets the period of the stale-write sweep and discarded-buffer release,
    /// in milliseconds (default 1000; 0 = no background sweep).
    ///
    /// Ownership: `cfg` stays owned by the caller.
    /// Thread safety: may run concurrently with any call on `cfg` but `_free`.
    ///
    /// # Safety
    /// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
    /// for writing one pointer.
    pub fn mooncake_meta_config_set_sweep_interval_ms(
        cfg: *mut mooncake_meta_config,
        interval_ms: u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Sets the largest TTL `mooncake_meta_retain_groups` accepts, in
    /// milliseconds (default 86400000; must be > 0, checked at validation).
    ///
    /// Ownership: `cfg` stays owned by the caller.
    /// Thread safety: may run concurrently with any call on `cfg` but `_free`.
    ///
    /// # Safety
    /// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
    /// for writing one pointer.
    pub fn mooncake_meta_config_set_max_group_retention_ttl_ms(
        cfg: *mut mooncake_meta_config,
        ttl_ms: u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Sets how many groups may be actively retained at once (default 65536;
    /// must be >= 1, checked at validation). A count the platform's `size_t`
    /// cannot hold is `MOONCAKE_META_INVALID_PARAMS`.
    ///
    /// Ownership: `cfg` stays owned by the caller.
    /// Thread safety: may run concurrently with any call on `cfg` but `_free`.
    ///
    /// # Safety
    /// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
    /// for writing one pointer.
    pub fn mooncake_meta_config_set_max_retained_groups(
        cfg: *mut mooncake_meta_config,
        max_groups: u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Sets the number of metadata shards (default 1024; valid range
    /// [1, 1048576], checked at validation). A count the platform's `size_t`
    /// cannot hold is `MOONCAKE_META_INVALID_PARAMS`.
    ///
    /// Ownership: `cfg` stays owned by the caller.
    /// Thread safety: may run concurrently with any call on `cfg` but `_free`.
    ///
    /// # Safety
    /// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
    /// for writing one pointer.
    pub fn mooncake_meta_config_set_shard_count(
        cfg: *mut mooncake_meta_config,
        shard_count: u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Sets how many objects (all tenants) the master expects to hold; 0 (the
    /// default) = no presizing. Master creation then pre-sizes every shard's
    /// object table for ceil(expected_objects / shard_count) objects, so
    /// filling it up to that many never rehashes a table; more objects than
    /// expected are fine. At most `MOONCAKE_META_MAX_EXPECTED_OBJECTS`, and
    /// at most 3 * 2^30 objects per shard, checked at validation; creation
    /// fails with
    /// `MOONCAKE_META_INVALID_PARAMS` if the tables cannot be allocated.
    ///
    /// Ownership: `cfg` stays owned by the caller.
    /// Thread safety: may run concurrently with any call on `cfg` but `_free`.
    ///
    /// # Safety
    /// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
    /// for writing one pointer.
    pub fn mooncake_meta_config_set_expected_objects(
        cfg: *mut mooncake_meta_config,
        expected_objects: u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// With `expected_objects` > 0, makes the master allocate every shard's
    /// presized table (the records' arena and the hash index), and the segment
    /// allocators' bookkeeping for that many buffers, at creation, in mappings
    /// advised for transparent huge pages, and make all of it
    /// resident then (`commit_presized` = 1), or leave presized tables on the
    /// heap, resident as they are written (0, the default). The master then
    /// holds that memory from its creation, and a first write into a presized
    /// table never waits on a page fault (docs/CONTRACT.md section 9). Huge
    /// pages are a request: a kernel that declines them backs the mapping with
    /// base pages, still resident at creation; a system that cannot give the
    /// mapping, or refuses to populate it, leaves the master presized as with
    /// 0, silently.
    /// A restore stages its state the same way, in a second mapping while the
    /// first is still held. Without `expected_objects` it does nothing. Any
    /// other value is `MOONCAKE_META_INVALID_PARAMS`.
    ///
    /// Ownership: `cfg` stays owned by the caller.
    /// Thread safety: may run concurrently with any call on `cfg` but `_free`.
    ///
    /// # Safety
    /// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
    /// for writing one pointer.
    pub fn mooncake_meta_config_set_commit_presized(
        cfg: *mut mooncake_meta_config,
        commit_presized: c_int,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Sets how many bytes the change journal may hold (docs/CONTRACT.md
    /// section 12); 0 (the default) = no journal. With a journal the master
    /// records every change to its state, in commit order, for a standby to
    /// apply; when the consumer falls behind and the journal is full, the
    /// oldest unreleased records are dropped (and reading them is
    /// `MOONCAKE_META_JOURNAL_OVERRUN`), never a client call. At most
    /// `MOONCAKE_META_MAX_JOURNAL_CAPACITY_BYTES`, checked at validation.
    ///
    /// Ownership: `cfg` stays owned by the caller.
    /// Thread safety: may run concurrently with any call on `cfg` but `_free`.
    ///
    /// # Safety
    /// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
    /// for writing one pointer.
    pub fn mooncake_meta_config_set_journal_capacity_bytes(
        cfg: *mut mooncake_meta_config,
        journal_capacity_bytes: u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Makes the master a standby (`standby` = 1) or a primary (0, the
    /// default). A standby rejects client operations with
    /// `MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS`, runs no maintenance and
    /// changes only by `mooncake_meta_journal_apply` and restore, until
    /// `mooncake_meta_promote` (docs/CONTRACT.md section 12). Any other value
    /// is `MOONCAKE_META_INVALID_PARAMS`.
    ///
    /// Ownership: `cfg` stays owned by the caller.
    /// Thread safety: may run concurrently with any call on `cfg` but `_free`.
    ///
    /// # Safety
    /// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
    /// for writing one pointer.
    pub fn mooncake_meta_config_set_standby(
        cfg: *mut mooncake_meta_config,
        standby: c_int,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Makes the master read a manual clock that starts at `start_ms`
    /// (milliseconds since the Unix epoch) and moves only when set or advanced;
    /// the start must be below `MAX_INSTANT` (2^63 - 1), checked at validation.
    /// For deterministic tests, also set the three intervals to 0.
    ///
    /// Ownership: `cfg` stays owned by the caller.
    /// Thread safety: may run concurrently with any call on `cfg` but `_free`.
    ///
    /// # Safety
    /// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
    /// for writing one pointer.
    pub fn mooncake_meta_config_set_manual_clock(
        cfg: *mut mooncake_meta_config,
        start_ms: u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Makes the master read the system clock (the default): its timeline,
    /// anchored to the operating system's real-time clock when the master is
    /// created and then advanced by the monotonic clock, so a wall-clock step
    /// moves no instant (docs/CONTRACT.md section 1).
    ///
    /// Ownership: `cfg` stays owned by the caller.
    /// Thread safety: may run concurrently with any call on `cfg` but `_free`.
    ///
    /// # Safety
    /// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
    /// for writing one pointer.
    pub fn mooncake_meta_config_set_system_clock(
        cfg: *mut mooncake_meta_config,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Fixes the master's seed (any value): its key hashing (which shard and
    /// slot a key takes) and the segment choice of its placements then repeat
    /// from run to run, so a randomized test that failed replays exactly. It
    /// changes no outcome docs/CONTRACT.md states, only which of the allowed
    /// placements a write gets. Without it (the default) every master draws a
    /// random seed; leave it so in service, since a client that knows the seed
    /// can aim its keys at one shard.
    ///
    /// Ownership: `cfg` stays owned by the caller.
    /// Thread safety: may run concurrently with any call on `cfg` but `_free`.
    ///
    /// # Safety
    /// `cfg` must be NULL or a live configuration; `err` must be NULL or valid
    /// for writing one pointer.
    pub fn mooncake_meta_config_set_seed(
        cfg: *mut mooncake_meta_config,
        seed: u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Fills `*cfg` (of `cfg_size` bytes, normally `sizeof *cfg`) with the
    /// defaults: no flags, PRESERVE, one memory replica, no NOF_SSD replica, no
    /// preferred segments, no group; `struct_size = cfg_size`. Bytes past the
    /// fields this library knows are zeroed. A size below the first version's
    /// or above 4096 is `MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED` and writes
    /// nothing. Passing the size keeps an older caller's smaller struct safe
    /// from a newer library.
    ///
    /// Ownership: `cfg` is owned by the caller.
    /// Thread safety: may be called from any thread; no other thread may use
    /// `*cfg` meanwhile.
    ///
    /// # Safety
    /// `cfg` must be NULL or valid for writing `cfg_size` bytes; `err` must be
    /// NULL or valid for writing one pointer.
    pub fn mooncake_meta_write_config_init(
        cfg: *mut mooncake_meta_write_config,
        cfg_size: usize,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Checks an extended write configuration as PutStart/UpsertStart will,
    /// except for what depends on a master (the TTL against its maximum, segment
    /// names against its segments): struct size, flags, action, `reserved0`,
    /// TTL only with ENABLE, at least one replica and at most
    /// `MOONCAKE_META_MAX_REPLICAS_PER_POOL` per pool, and that every string is
    /// non-NULL valid UTF-8 and the group name non-empty. NULL is the default
    /// configuration, which is valid.
    ///
    /// Ownership: `cfg` stays owned by the caller; nothing is retained.
    /// Thread safety: may be called from any thread; `*cfg` must not change
    /// during the call.
    ///
    /// # Safety
    /// `cfg` must be NULL or a readable write config of `cfg->struct_size`
    /// bytes whose pointers obey their field docs; `err` must be NULL or valid
    /// for writing one pointer.
    pub fn mooncake_meta_write_config_validate(
        cfg: *const mooncake_meta_write_config,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Checks a legacy write configuration as the legacy put functions will,
    /// except for what depends on a master: `replica_num` at least 1 and every
    /// preferred segment a non-NULL valid UTF-8 string. NULL is the default
    /// configuration, which is valid.
    ///
    /// Ownership: `cfg` stays owned by the caller; nothing is retained.
    /// Thread safety: may be called from any thread; `*cfg` must not change
    /// during the call.
    ///
    /// # Safety
    /// `cfg` must be NULL or a readable legacy config whose pointers obey their
    /// field docs; `err` must be NULL or valid for writing one pointer.
    pub fn mooncake_meta_replicate_config_validate(
        cfg: *const mooncake_meta_replicate_config,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Creates a master from `cfg` (NULL = the documented defaults: system
    /// clock, background tasks on). The configuration is copied; `cfg` may be
    /// freed or reused afterwards. A configuration the master would misbehave
    /// under (e.g. default soft-pin TTL above the maximum) is
    /// `MOONCAKE_META_INVALID_PARAMS`; a system that will not start the
    /// maintenance thread the configuration asks for is
    /// `MOONCAKE_META_INTERNAL_ERROR` (no master).
    ///
    /// Ownership: on success `*out_master` is a new master owned by the caller,
    /// released with `mooncake_meta_master_free`; on failure it is not written.
    /// Thread safety: may be called from any thread.
    ///
    /// # Safety
    /// `cfg` must be NULL or a live configuration; `out_master` must be valid
    /// for writing one pointer; `err` must be NULL or valid for writing one
    /// pointer.
    pub fn mooncake_meta_master_new(
        cfg: *const mooncake_meta_config,
        out_master: *mut *mut mooncake_meta_master,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Releases a master and stops its maintenance thread (promptly, whatever
    /// the intervals). `mooncake_meta_master_free(NULL)` does nothing; a master
    /// poisoned by a panic may (and should) still be freed.
    ///
    /// Ownership: takes ownership of `m`; it and every pointer into it are
    /// invalid afterwards.
    /// Thread safety: no other call on `m` may run concurrently or later.
    ///
    /// # Safety
    /// `m` must be NULL or a master from `mooncake_meta_master_new` not yet freed.
    pub fn mooncake_meta_master_free(m: *mut mooncake_meta_master);

    /// Writes the master's current instant to `*out_now`: milliseconds on its
    /// timeline, which is anchored to the Unix epoch when the master is created
    /// and then advanced by a monotonic clock, so it never goes backwards (but
    /// on a standby taking its primary's timeline with an image it installs,
    /// docs/CONTRACT.md section 12.3) and a wall-clock step moves no deadline. Every instant of this API (deadlines,
    /// leases, `run_cleanup_at`, snapshots' `created_at`) is on this timeline.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` must be NULL or a live master; `out_now` valid for writing a
    /// `uint64_t`; `err` NULL or valid for writing one pointer.
    pub fn mooncake_meta_master_now(
        m: *const mooncake_meta_master,
        out_now: *mut u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Sets a manual clock to `to_ms`. Moving it backwards, or calling this on
    /// a system-clock master, is `MOONCAKE_META_CLOCK_UNSUPPORTED`; reaching
    /// `INT64_MAX` is `MOONCAKE_META_INVALID_PARAMS`. The clock is unchanged on
    /// failure.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` must be NULL or a live master; `err` NULL or valid for writing one
    /// pointer.
    pub fn mooncake_meta_master_set_time(
        m: *const mooncake_meta_master,
        to_ms: u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Writes the wall clock now (milliseconds since the Unix epoch) to
    /// `*out_wall`. No lifetime depends on it: it is what the skew
    /// (`clock_skew_ms` in the metrics) is measured against and what a snapshot
    /// records beside its capture instant. For a manual clock it is the
    /// timeline unless set apart with `mooncake_meta_master_set_wall_time`.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` must be NULL or a live master; `out_wall` valid for writing a
    /// `uint64_t`; `err` NULL or valid for writing one pointer.
    pub fn mooncake_meta_master_wall_time(
        m: *const mooncake_meta_master,
        out_wall: *mut u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Sets a manual clock's wall apart from its timeline, as a wall-clock step
    /// would: the timeline, and so every lease, soft pin and write timeout, is
    /// unchanged; the skew becomes `now - wall_ms` and snapshots record the new
    /// wall. The wall then keeps that distance as the clock advances. A
    /// system-clock master is `MOONCAKE_META_CLOCK_UNSUPPORTED` (its wall is the
    /// operating system's); `wall_ms >= INT64_MAX` is
    /// `MOONCAKE_META_INVALID_PARAMS`. Nothing changes on failure.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` must be NULL or a live master; `err` NULL or valid for writing one
    /// pointer.
    pub fn mooncake_meta_master_set_wall_time(
        m: *const mooncake_meta_master,
        wall_ms: u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Advances a manual clock by `by_ms`; the new instant goes to `*out_now`
    /// when `out_now` is not NULL. Errors as `mooncake_meta_master_set_time`.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` must be NULL or a live master; `out_now` NULL or valid for writing a
    /// `uint64_t`; `err` NULL or valid for writing one pointer.
    pub fn mooncake_meta_master_advance_time(
        m: *const mooncake_meta_master,
        by_ms: u64,
        out_now: *mut u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Mounts a segment of `size` bytes at `base`, owned by `client`, in pool
    /// `pool` (`MOONCAKE_META_POOL_*`; another value is
    /// `MOONCAKE_META_INVALID_PARAMS`), and writes its id to `*out_segment_id`.
    /// `name` is UTF-8, non-empty and NUL-free. Mounting an identical segment
    /// again is OK (same id); the same name with another base, size, pool or
    /// owner is `MOONCAKE_META_SEGMENT_ALREADY_EXISTS`; a range over bytes of a
    /// segment `client` has mounted in the same pool is
    /// `MOONCAKE_META_INVALID_PARAMS`. A mount made while an unmount runs
    /// waits for it.
    ///
    /// Ownership: nothing is transferred; `name` is copied.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `name` NULL or valid for `name_len` bytes;
    /// `out_segment_id` valid for writing a `uint32_t`; `err` NULL or valid for
    /// writing one pointer.
    pub fn mooncake_meta_mount_segment(
        m: *const mooncake_meta_master,
        client: u64,
        name: *const c_char,
        name_len: usize,
        base: u64,
        size: u64,
        pool: u32,
        out_segment_id: *mut u32,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Unmounts the segment `name` owned by `client`: every replica on it is
    /// dropped and objects left without a replica are erased. Unknown name ->
    /// `MOONCAKE_META_SEGMENT_NOT_FOUND`; another owner ->
    /// `MOONCAKE_META_ILLEGAL_CLIENT`. When `out_report` is not NULL it
    /// receives the counts (see `mooncake_meta_unmount_report`).
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `name` NULL or valid for `name_len` bytes;
    /// `out_report` NULL or valid for writing its `struct_size` bytes; `err`
    /// NULL or valid for writing one pointer.
    pub fn mooncake_meta_unmount_segment(
        m: *const mooncake_meta_master,
        client: u64,
        name: *const c_char,
        name_len: usize,
        out_report: *mut mooncake_meta_unmount_report,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Unmounts every segment owned by `client` (none is OK: zero counts).
    /// When `out_report` is not NULL it receives the summed counts.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `out_report` NULL or valid for writing its
    /// `struct_size` bytes; `err` NULL or valid for writing one pointer.
    pub fn mooncake_meta_unmount_client(
        m: *const mooncake_meta_master,
        client: u64,
        out_report: *mut mooncake_meta_unmount_report,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Copies the name of mounted segment `segment_id` into `buf`: its length
    /// in bytes goes to `*out_len`; the `*out_len` bytes are written, followed
    /// by a NUL when `cap > *out_len` (names never contain NUL, so with
    /// `cap >= *out_len + 1` the result is a C string). `cap < *out_len` is
    /// `MOONCAKE_META_BUFFER_TOO_SMALL` with `*out_len` = the length and `buf`
    /// untouched; pass `(NULL, 0)` to ask for the length. Unknown id ->
    /// `MOONCAKE_META_SEGMENT_NOT_FOUND`.
    ///
    /// Ownership: `buf` is owned by the caller.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `buf` NULL or valid for writing `cap` bytes;
    /// `out_len` valid for writing a `size_t`; `err` NULL or valid for writing
    /// one pointer.
    pub fn mooncake_meta_segment_name(
        m: *const mooncake_meta_master,
        segment_id: u32,
        buf: *mut c_char,
        cap: usize,
        out_len: *mut usize,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Starts writing a new object (upstream PutStart) with the extended
    /// configuration `cfg` (NULL = defaults: one memory replica, PRESERVE).
    /// The staged PROCESSING replicas go to `out_replicas[0 .. *out_len]` and
    /// the write token to `*out_token` (when not NULL; never 0).
    ///
    /// `cap` must be at least the replicas requested (`memory_replicas +
    /// nof_ssd_replicas`), else `MOONCAKE_META_BUFFER_TOO_SMALL` with
    /// `*out_len` = that count and nothing done; the request is validated
    /// first, so a bad one gets its own code. Fewer replicas than requested may
    /// be placed (memory-only writes are best effort). An object with a
    /// COMPLETE replica, or a young write of the key, is
    /// `MOONCAKE_META_OBJECT_ALREADY_EXISTS`; one that a copy, move or
    /// promotion still holds is `MOONCAKE_META_OBJECT_HAS_REPLICATION_TASK`;
    /// no room is `MOONCAKE_META_NO_AVAILABLE_HANDLE`; a master out of ids
    /// (docs/CONTRACT.md section 6) is `MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS`.
    ///
    /// Ownership: nothing is transferred; `cfg` and the key are only read
    /// during the call.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `tenant`/`key_ptr` NULL or valid for their
    /// lengths; `cfg` NULL or a readable config of `cfg->struct_size` bytes;
    /// `out_replicas` NULL or valid for writing `cap` replicas; `out_len` valid
    /// for writing a `size_t`; `out_token` NULL or valid for writing a
    /// `uint64_t`; `err` NULL or valid for writing one pointer.
    pub fn mooncake_meta_put_start(
        m: *const mooncake_meta_master,
        client: u64,
        tenant: *const c_char,
        tenant_len: usize,
        key_ptr: *const c_char,
        key_len: usize,
        size: u64,
        cfg: *const mooncake_meta_write_config,
        out_replicas: *mut mooncake_meta_replica,
        cap: usize,
        out_len: *mut usize,
        out_token: *mut u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// `mooncake_meta_put_start` with the legacy configuration (upstream
    /// `mooncake_replicate_config`; NULL = defaults): `replica_num` memory
    /// replicas, `with_soft_pin != 0` = ENABLE with the master's default TTL,
    /// `0` = PRESERVE. `cap` must be at least `replica_num`.
    ///
    /// Ownership: nothing is transferred; `cfg` and the key are only read
    /// during the call.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// As `mooncake_meta_put_start`, with `cfg` NULL or a readable legacy
    /// config.
    pub fn mooncake_meta_put_start_legacy(
        m: *const mooncake_meta_master,
        client: u64,
        tenant: *const c_char,
        tenant_len: usize,
        key_ptr: *const c_char,
        key_len: usize,
        size: u64,
        cfg: *const mooncake_meta_replicate_config,
        out_replicas: *mut mooncake_meta_replica,
        cap: usize,
        out_len: *mut usize,
        out_token: *mut u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Starts an upsert (upstream UpsertStart) with the extended configuration
    /// `cfg` (NULL = defaults): absent key -> as PutStart; same size -> in place
    /// (the object's MEMORY/NOF_SSD replicas, back to PROCESSING with the same
    /// ids; requested counts ignored); other size -> new replicas, allocated
    /// before the old ones are let go. Leases never block it. A NULL `cfg.group`
    /// keeps an existing object's group; naming another group than the
    /// object's (or one for an ungrouped object) is `MOONCAKE_META_INVALID_PARAMS`;
    /// a master out of ids (docs/CONTRACT.md section 6) is
    /// `MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS`.
    ///
    /// `cap` must be at least the replicas requested and, for an in-place
    /// write, at least the object's MEMORY/NOF_SSD replicas (copies may have
    /// added some); otherwise `MOONCAKE_META_BUFFER_TOO_SMALL` with `*out_len`
    /// = the larger count, after every other check and before any effect.
    ///
    /// Ownership: nothing is transferred; `cfg` and the key are only read
    /// during the call.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// As `mooncake_meta_put_start`.
    pub fn mooncake_meta_upsert_start(
        m: *const mooncake_meta_master,
        client: u64,
        tenant: *const c_char,
        tenant_len: usize,
        key_ptr: *const c_char,
        key_len: usize,
        size: u64,
        cfg: *const mooncake_meta_write_config,
        out_replicas: *mut mooncake_meta_replica,
        cap: usize,
        out_len: *mut usize,
        out_token: *mut u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// `mooncake_meta_upsert_start` with the legacy configuration (NULL =
    /// defaults). `with_soft_pin = 0` is PRESERVE: an upsert of a soft-pinned
    /// object keeps its unexpired deadline.
    ///
    /// Ownership: nothing is transferred; `cfg` and the key are only read
    /// during the call.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// As `mooncake_meta_put_start_legacy`.
    pub fn mooncake_meta_upsert_start_legacy(
        m: *const mooncake_meta_master,
        client: u64,
        tenant: *const c_char,
        tenant_len: usize,
        key_ptr: *const c_char,
        key_len: usize,
        size: u64,
        cfg: *const mooncake_meta_replicate_config,
        out_replicas: *mut mooncake_meta_replica,
        cap: usize,
        out_len: *mut usize,
        out_token: *mut u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Completes the selected PROCESSING replicas of the write in flight
    /// (upstream PutEnd). `selector` is a `MOONCAKE_META_SELECT_*` value;
    /// `token` is the Start's write token, or 0 to name none (a non-zero token
    /// that is not the current write's is `MOONCAKE_META_STALE_WRITE_TOKEN`).
    /// The End that first makes the object readable commits its soft pin.
    /// Errors in order: OBJECT_NOT_FOUND, ILLEGAL_CLIENT (not the writer),
    /// STALE_WRITE_TOKEN. With no write in flight every replica a write made is
    /// COMPLETE, so the End is an OK no-op, unless a replica of the selected
    /// kinds is not COMPLETE (a copy, move or promotion target, which the End
    /// never completes): MOONCAKE_META_INVALID_WRITE.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `tenant`/`key_ptr` NULL or valid for their
    /// lengths; `err` NULL or valid for writing one pointer.
    pub fn mooncake_meta_put_end(
        m: *const mooncake_meta_master,
        client: u64,
        tenant: *const c_char,
        tenant_len: usize,
        key_ptr: *const c_char,
        key_len: usize,
        selector: u32,
        token: u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Abandons the selected PROCESSING replicas of the write in flight
    /// (upstream PutRevoke); their buffers are freed at once and the object is
    /// erased when no replica is left. Arguments and the first three errors as
    /// `mooncake_meta_put_end`; no write in flight, or a selected replica not
    /// PROCESSING, is `MOONCAKE_META_INVALID_WRITE`.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// As `mooncake_meta_put_end`.
    pub fn mooncake_meta_put_revoke(
        m: *const mooncake_meta_master,
        client: u64,
        tenant: *const c_char,
        tenant_len: usize,
        key_ptr: *const c_char,
        key_len: usize,
        selector: u32,
        token: u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Ends an upsert: exactly `mooncake_meta_put_end`.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// As `mooncake_meta_put_end`.
    pub fn mooncake_meta_upsert_end(
        m: *const mooncake_meta_master,
        client: u64,
        tenant: *const c_char,
        tenant_len: usize,
        key_ptr: *const c_char,
        key_len: usize,
        selector: u32,
        token: u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Revokes an upsert: exactly `mooncake_meta_put_revoke`. Revoking an
    /// in-place write erases the object and its soft-pin deadline.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// As `mooncake_meta_put_end`.
    pub fn mooncake_meta_upsert_revoke(
        m: *const mooncake_meta_master,
        client: u64,
        tenant: *const c_char,
        tenant_len: usize,
        key_ptr: *const c_char,
        key_len: usize,
        selector: u32,
        token: u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Writes 1 to `*out_exists` if the key has a readable replica (and grants
    /// the read lease), else 0. A `(NULL, 0)` tenant is the default tenant.
    ///
    /// Ownership: nothing is transferred; strings are only read during the call.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `tenant`/`key_ptr` NULL or valid for their
    /// lengths; `out_exists` valid for writing an `int`; `err` NULL or valid
    /// for writing one pointer.
    pub fn mooncake_meta_exist(
        m: *const mooncake_meta_master,
        tenant: *const c_char,
        tenant_len: usize,
        key_ptr: *const c_char,
        key_len: usize,
        out_exists: *mut c_int,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Copies the readable (COMPLETE) replicas of a key into
    /// `out_replicas[0 .. *out_len]` and grants the read lease. Missing key ->
    /// `MOONCAKE_META_OBJECT_NOT_FOUND`; nothing readable ->
    /// `MOONCAKE_META_REPLICA_IS_NOT_READY` (no lease). More readable replicas
    /// than `cap` -> `MOONCAKE_META_BUFFER_TOO_SMALL` with `*out_len` = their
    /// number, nothing else written and **no lease granted**; pass `(NULL, 0)`
    /// to ask for the count. Never touches soft-pin state.
    ///
    /// Ownership: nothing is transferred; `out_replicas` is owned by the caller.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `tenant`/`key_ptr` NULL or valid for their
    /// lengths; `out_replicas` NULL or valid for writing `cap` replicas;
    /// `out_len` valid for writing a `size_t`; `err` NULL or valid for writing
    /// one pointer.
    pub fn mooncake_meta_get_replica_list(
        m: *const mooncake_meta_master,
        tenant: *const c_char,
        tenant_len: usize,
        key_ptr: *const c_char,
        key_len: usize,
        out_replicas: *mut mooncake_meta_replica,
        cap: usize,
        out_len: *mut usize,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Writes the number of objects (all tenants, readable or not) to
    /// `*out_count`.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `out_count` valid for writing a `uint64_t`;
    /// `err` NULL or valid for writing one pointer.
    pub fn mooncake_meta_key_count(
        m: *const mooncake_meta_master,
        out_count: *mut u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Lists the keys of `tenant` (`(NULL, 0)` = the default tenant) that start
    /// with `prefix` (`(NULL, 0)` = every key) and sort strictly after `after`
    /// (`(NULL, 0)` = from the first), in ascending byte order, at most `limit`
    /// of them (0 = no limit). On success `*out_list` is a new list.
    /// Continue a listing by passing the list's next cursor as `after`.
    ///
    /// Ownership: on success the caller owns `*out_list` and releases it with
    /// `mooncake_meta_key_list_free`; on failure it is not written.
    /// Thread safety: may be called concurrently with any call but `_free`; the
    /// page is a consistent view of each shard, not of the whole master.
    ///
    /// # Safety
    /// `m` NULL or a live master; each string NULL or valid for its length;
    /// `out_list` valid for writing one pointer; `err` NULL or valid for
    /// writing one pointer.
    pub fn mooncake_meta_list_keys(
        m: *const mooncake_meta_master,
        tenant: *const c_char,
        tenant_len: usize,
        prefix: *const c_char,
        prefix_len: usize,
        after: *const c_char,
        after_len: usize,
        limit: usize,
        out_list: *mut *mut mooncake_meta_key_list,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// The number of keys in `list`; 0 for NULL.
    ///
    /// Ownership: `list` stays owned by the caller.
    /// Thread safety: may be called concurrently with any call on `list` but
    /// `_free`.
    ///
    /// # Safety
    /// `list` must be NULL or a live key list.
    pub fn mooncake_meta_key_list_len(list: *const mooncake_meta_key_list) -> usize;

    /// Points `*out_ptr`/`*out_len` at key `index` of `list` (UTF-8, `*out_len`
    /// bytes, followed by a NUL so a key without an embedded NUL is also a C
    /// string). `index >= len` is `MOONCAKE_META_INVALID_PARAMS`.
    ///
    /// Ownership: the bytes belong to `list` and stay valid until
    /// `mooncake_meta_key_list_free(list)`; do not free them.
    /// Thread safety: may be called concurrently with any call on `list` but
    /// `_free`.
    ///
    /// # Safety
    /// `list` NULL or a live key list; `out_ptr` valid for writing a pointer;
    /// `out_len` valid for writing a `size_t`; `err` NULL or valid for writing
    /// one pointer.
    pub fn mooncake_meta_key_list_get(
        list: *const mooncake_meta_key_list,
        index: usize,
        out_ptr: *mut *const c_char,
        out_len: *mut usize,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// The cursor for the page after `list`: `*out_has_next` = 1 and
    /// `*out_ptr`/`*out_len` = the cursor (NUL-terminated) to pass as `after`,
    /// or, when `list` is the last page, `*out_has_next` = 0, `*out_ptr` = NULL
    /// and `*out_len` = 0. Only a listing with a `limit` has a next page.
    ///
    /// Ownership: the cursor belongs to `list` and stays valid until
    /// `mooncake_meta_key_list_free(list)`; do not free it.
    /// Thread safety: may be called concurrently with any call on `list` but
    /// `_free`.
    ///
    /// # Safety
    /// `list` NULL or a live key list; `out_has_next` valid for writing an
    /// `int`; `out_ptr` valid for writing a pointer; `out_len` valid for
    /// writing a `size_t`; `err` NULL or valid for writing one pointer.
    pub fn mooncake_meta_key_list_next_cursor(
        list: *const mooncake_meta_key_list,
        out_has_next: *mut c_int,
        out_ptr: *mut *const c_char,
        out_len: *mut usize,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Releases a key list. `mooncake_meta_key_list_free(NULL)` does nothing.
    ///
    /// Ownership: takes ownership of `list`; it and every key or cursor pointer
    /// obtained from it are invalid afterwards.
    /// Thread safety: no other call on `list` may run concurrently or later.
    ///
    /// # Safety
    /// `list` must be NULL or a list from `mooncake_meta_list_keys` not yet
    /// freed.
    pub fn mooncake_meta_key_list_free(list: *mut mooncake_meta_key_list);

    /// Removes one object. `force` must be 0 or 1 (1 ignores a live read
    /// lease). Checked in order: missing -> `MOONCAKE_META_OBJECT_NOT_FOUND`; a
    /// replica not COMPLETE (a write's in flight, or a copy's, move's or
    /// promotion's PROCESSING target) -> `MOONCAKE_META_REPLICA_IS_NOT_READY`
    /// (even forced); a copy, move or promotion running whose replicas are all
    /// COMPLETE (its targets gone with an unmount) ->
    /// `MOONCAKE_META_OBJECT_HAS_REPLICATION_TASK` (even forced); live lease,
    /// not forced -> `MOONCAKE_META_OBJECT_HAS_LEASE`.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `tenant`/`key_ptr` NULL or valid for their
    /// lengths; `err` NULL or valid for writing one pointer.
    pub fn mooncake_meta_remove(
        m: *const mooncake_meta_master,
        tenant: *const c_char,
        tenant_len: usize,
        key_ptr: *const c_char,
        key_len: usize,
        force: c_int,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Removes every removable object of every tenant (objects the single
    /// remove would refuse are skipped silently); the number removed goes to
    /// `*out_removed` when it is not NULL. `force` must be 0 or 1. On a
    /// standby it removes nothing and returns `MOONCAKE_META_OK` with 0 (a
    /// standby changes only by the journal it applies; docs/CONTRACT.md section 12.3).
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`;
    /// objects written meanwhile may or may not be removed.
    ///
    /// # Safety
    /// `m` NULL or a live master; `out_removed` NULL or valid for writing a
    /// `uint64_t`; `err` NULL or valid for writing one pointer.
    pub fn mooncake_meta_remove_all(
        m: *const mooncake_meta_master,
        force: c_int,
        out_removed: *mut u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Removes the removable objects whose key matches `pattern` (UTF-8, Rust
    /// `regex` syntax, unanchored: use `^...$` for a whole-key match) in
    /// `tenant`, or in every tenant when `tenant_len` is 0 (`tenant` may then
    /// be NULL). The number removed goes to `*out_removed` when it is not NULL.
    /// A bad or oversized pattern (longer than 4096 bytes, or compiling past
    /// the regex size limit) is `MOONCAKE_META_INVALID_PARAMS`; `force` must
    /// be 0 or 1. Keys are matched under each shard's read lock, and removed
    /// under its write lock if still removable.
    ///
    /// Kept as 0.1.0 shipped it: here `(NULL, 0)` means every tenant, where
    /// every other call reads it as the default tenant. New code says which
    /// it means: `mooncake_meta_remove_by_regex_in_tenant` (one tenant, the
    /// default for `(NULL, 0)`) or `mooncake_meta_remove_by_regex_all_tenants`.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `tenant`/`pattern` NULL or valid for their
    /// lengths; `out_removed` NULL or valid for writing a `uint64_t`; `err`
    /// NULL or valid for writing one pointer.
    pub fn mooncake_meta_remove_by_regex(
        m: *const mooncake_meta_master,
        tenant: *const c_char,
        tenant_len: usize,
        pattern: *const c_char,
        pattern_len: usize,
        force: c_int,
        out_removed: *mut u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Removes the removable objects of one tenant whose key matches `pattern`:
    /// `mooncake_meta_remove_by_regex` with `tenant` read as every other call
    /// reads it, `(NULL, 0)` being the default tenant (never every tenant; that
    /// is `mooncake_meta_remove_by_regex_all_tenants`). The number removed goes
    /// to `*out_removed` when it is not NULL. A tenant or pattern that is not
    /// UTF-8 is `MOONCAKE_META_INVALID_UTF8`; a bad tenant name, a bad or
    /// oversized pattern (longer than 4096 bytes, or compiling past the regex
    /// size limit) or a `force` other than 0 or 1 is
    /// `MOONCAKE_META_INVALID_PARAMS`; nothing is removed then. On a standby
    /// it removes nothing and returns
    /// `MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS`, as
    /// `mooncake_meta_remove_by_regex` does.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `tenant`/`pattern` NULL or valid for their
    /// lengths; `out_removed` NULL or valid for writing a `uint64_t`; `err`
    /// NULL or valid for writing one pointer.
    pub fn mooncake_meta_remove_by_regex_in_tenant(
        m: *const mooncake_meta_master,
        tenant: *const c_char,
        tenant_len: usize,
        pattern: *const c_char,
        pattern_len: usize,
        force: c_int,
        out_removed: *mut u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Removes the removable objects of every tenant whose key matches
    /// `pattern` (UTF-8, Rust `regex` syntax, unanchored). The number removed
    /// goes to `*out_removed` when it is not NULL. A pattern that is not UTF-8
    /// is `MOONCAKE_META_INVALID_UTF8`; a bad or oversized pattern (longer than
    /// 4096 bytes, or compiling past the regex size limit) or a `force` other
    /// than 0 or 1 is `MOONCAKE_META_INVALID_PARAMS`; nothing is removed then.
    /// On a standby it removes nothing and returns
    /// `MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS`, as
    /// `mooncake_meta_remove_by_regex` does.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `pattern` NULL or valid for `pattern_len`
    /// bytes; `out_removed` NULL or valid for writing a `uint64_t`; `err` NULL
    /// or valid for writing one pointer.
    pub fn mooncake_meta_remove_by_regex_all_tenants(
        m: *const mooncake_meta_master,
        pattern: *const c_char,
        pattern_len: usize,
        force: c_int,
        out_removed: *mut u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Starts copying a key's data to each of the `segment_count` named
    /// segments (NUL-terminated UTF-8 names, at least one, none already holding
    /// a replica of the object). The PROCESSING targets go to
    /// `out_replicas[0 .. *out_len]`, one per segment in order. `cap <
    /// segment_count` is `MOONCAKE_META_BUFFER_TOO_SMALL` with `*out_len` =
    /// `segment_count`, after the checks of the request and before anything is
    /// allocated (nothing changed). Errors:
    /// UNAVAILABLE_IN_CURRENT_STATUS on a standby, OBJECT_NOT_FOUND, OBJECT_HAS_REPLICATION_TASK, REPLICA_IS_NOT_READY or
    /// REPLICA_NOT_FOUND (no COMPLETE buffer replica to read), SEGMENT_NOT_FOUND,
    /// INVALID_PARAMS (a segment named twice or already holding a replica),
    /// NO_AVAILABLE_HANDLE (no room; nothing is allocated),
    /// UNAVAILABLE_IN_CURRENT_STATUS (a master out of ids, docs/CONTRACT.md
    /// section 6).
    ///
    /// Ownership: nothing is transferred; names are only read during the call.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `tenant`/`key_ptr` NULL or valid for their
    /// lengths; `segments` NULL (count 0) or valid for reading `segment_count`
    /// pointers to NUL-terminated strings; `out_replicas` NULL or valid for
    /// writing `cap` replicas; `out_len` valid for writing a `size_t`; `err`
    /// NULL or valid for writing one pointer.
    pub fn mooncake_meta_copy_start(
        m: *const mooncake_meta_master,
        tenant: *const c_char,
        tenant_len: usize,
        key_ptr: *const c_char,
        key_len: usize,
        segments: *const *const c_char,
        segment_count: usize,
        out_replicas: *mut mooncake_meta_replica,
        cap: usize,
        out_len: *mut usize,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Completes the key's copy: its targets become COMPLETE. No copy running
    /// -> `MOONCAKE_META_OBJECT_NO_REPLICATION_TASK`; the source or a target
    /// gone (segment unmounted) -> `MOONCAKE_META_REPLICA_IS_GONE` (the copy is
    /// abandoned, surviving targets freed).
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `tenant`/`key_ptr` NULL or valid for their
    /// lengths; `err` NULL or valid for writing one pointer.
    pub fn mooncake_meta_copy_end(
        m: *const mooncake_meta_master,
        tenant: *const c_char,
        tenant_len: usize,
        key_ptr: *const c_char,
        key_len: usize,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Abandons the key's copy: its targets are freed. No copy running ->
    /// `MOONCAKE_META_OBJECT_NO_REPLICATION_TASK`.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// As `mooncake_meta_copy_end`.
    pub fn mooncake_meta_copy_revoke(
        m: *const mooncake_meta_master,
        tenant: *const c_char,
        tenant_len: usize,
        key_ptr: *const c_char,
        key_len: usize,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Starts moving the key's COMPLETE replica on segment `from` to segment
    /// `to` (UTF-8 names given as pointer and length); the PROCESSING target
    /// goes to `*out_replica`. No COMPLETE replica on `from` ->
    /// `MOONCAKE_META_REPLICA_NOT_FOUND`; otherwise errors as
    /// `mooncake_meta_copy_start`.
    ///
    /// Ownership: nothing is transferred; names are only read during the call.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `tenant`/`key_ptr`/`from`/`to` NULL or valid
    /// for their lengths; `out_replica` valid for writing one replica; `err`
    /// NULL or valid for writing one pointer.
    pub fn mooncake_meta_move_start(
        m: *const mooncake_meta_master,
        tenant: *const c_char,
        tenant_len: usize,
        key_ptr: *const c_char,
        key_len: usize,
        from: *const c_char,
        from_len: usize,
        to: *const c_char,
        to_len: usize,
        out_replica: *mut mooncake_meta_replica,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Completes the key's move: the target becomes COMPLETE and the source is
    /// let go (its buffer is held until the release timeout). Errors as
    /// `mooncake_meta_copy_end`.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// As `mooncake_meta_copy_end`.
    pub fn mooncake_meta_move_end(
        m: *const mooncake_meta_master,
        tenant: *const c_char,
        tenant_len: usize,
        key_ptr: *const c_char,
        key_len: usize,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Abandons the key's move: the target is freed, the source stays. No
    /// move running -> `MOONCAKE_META_OBJECT_NO_REPLICATION_TASK`.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// As `mooncake_meta_copy_end`.
    pub fn mooncake_meta_move_revoke(
        m: *const mooncake_meta_master,
        tenant: *const c_char,
        tenant_len: usize,
        key_ptr: *const c_char,
        key_len: usize,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Starts promoting an object from its COMPLETE LOCAL_DISK replica back
    /// into memory: a PROCESSING memory replica is staged (on the first of the
    /// `preferred_count` preferred segments with room, else anywhere) and goes
    /// to `*out_replica`. No COMPLETE LOCAL_DISK replica ->
    /// `MOONCAKE_META_REPLICA_NOT_FOUND`; a memory replica already there, or
    /// a master out of ids (docs/CONTRACT.md section 6) ->
    /// `MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS`; a task running ->
    /// `MOONCAKE_META_OBJECT_HAS_REPLICATION_TASK`; no room ->
    /// `MOONCAKE_META_NO_AVAILABLE_HANDLE`.
    ///
    /// Ownership: nothing is transferred; names are only read during the call.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `tenant`/`key_ptr` NULL or valid for their
    /// lengths; `preferred` NULL (count 0) or valid for reading
    /// `preferred_count` pointers to NUL-terminated strings; `out_replica`
    /// valid for writing one replica; `err` NULL or valid for writing one
    /// pointer.
    pub fn mooncake_meta_promotion_start(
        m: *const mooncake_meta_master,
        tenant: *const c_char,
        tenant_len: usize,
        key_ptr: *const c_char,
        key_len: usize,
        preferred: *const *const c_char,
        preferred_count: usize,
        out_replica: *mut mooncake_meta_replica,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Ends the key's promotion: `success` 1 completes the staged memory
    /// replica, 0 frees it (any other value is `MOONCAKE_META_INVALID_PARAMS`).
    /// No promotion running -> `MOONCAKE_META_OBJECT_NO_REPLICATION_TASK`; the
    /// staged replica gone (its segment unmounted) -> with `success` 1
    /// `MOONCAKE_META_REPLICA_IS_GONE`, with 0 OK (what it would free is gone
    /// already).
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// As `mooncake_meta_copy_end`.
    pub fn mooncake_meta_promotion_end(
        m: *const mooncake_meta_master,
        tenant: *const c_char,
        tenant_len: usize,
        key_ptr: *const c_char,
        key_len: usize,
        success: c_int,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Registers a COMPLETE LOCAL_DISK replica of `size` bytes held by
    /// `client`, creating the object if it is absent; the replica goes to
    /// `*out_replica`. Idempotent per client (the same replica again). Size
    /// 0 or not the object's size -> `MOONCAKE_META_INVALID_PARAMS`; a write in
    /// flight, or a master out of ids (docs/CONTRACT.md section 6) ->
    /// `MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS`.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `tenant`/`key_ptr` NULL or valid for their
    /// lengths; `out_replica` valid for writing one replica; `err` NULL or
    /// valid for writing one pointer.
    pub fn mooncake_meta_add_local_disk_replica(
        m: *const mooncake_meta_master,
        client: u64,
        tenant: *const c_char,
        tenant_len: usize,
        key_ptr: *const c_char,
        key_len: usize,
        size: u64,
        out_replica: *mut mooncake_meta_replica,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// PutStart for each of `count` keys of one tenant, with one shared
    /// extended configuration `cfg` (NULL = defaults) and per-key sizes
    /// `sizes[i]`.
    ///
    /// Replica layout: let `stride = cfg.memory_replicas + cfg.nof_ssd_replicas`
    /// (1 for NULL). `out_replicas` has `replicas_cap >= count * stride`
    /// entries (else the whole batch is refused: `MOONCAKE_META_BUFFER_TOO_SMALL`,
    /// or on a standby `MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS`; counts
    /// and tokens are then not written); key
    /// `i`'s staged replicas are `out_replicas[i * stride ..][0 ..
    /// out_replica_counts[i]]`, its write token `out_tokens[i]`. A key that
    /// fails gets count 0 and token 0, and its replica slots are not written.
    /// A bad shared configuration (e.g. a TTL above the master's maximum)
    /// refuses every key.
    ///
    /// Statuses, for every batch function: `out_statuses[i]` is written for
    /// every key, and the call returns `MOONCAKE_META_OK` only when every key
    /// succeeded. When the batch as a whole is refused (a bad argument or
    /// shared configuration, a bad tenant, a NULL master, too small a shared
    /// array) nothing is done and every `out_statuses[i]` holds that one code.
    /// A key that is empty (`MOONCAKE_META_INVALID_PARAMS`) or not UTF-8
    /// (`MOONCAKE_META_INVALID_UTF8`) fails on its own, as a single call on it
    /// would, and the other keys are processed.
    /// Otherwise the keys are processed in order as single calls (a repeated
    /// key sees the earlier entry's effect), each key's outputs are written,
    /// and the call returns the status of the first key that failed, `*err`
    /// reading `keys[i]: <its message> (F of N keys failed)`. A panic inside
    /// the library returns PANIC with every status PANIC (which keys it had
    /// processed is unknown; the master is poisoned). Only a NULL
    /// `out_statuses` with `count > 0` (NULL_ARGUMENT) leaves the statuses
    /// unwritten. `count == 0` with valid arguments is an empty batch: OK.
    ///
    /// Ownership: nothing is transferred; every array is owned by the caller.
    /// Thread safety: may be called concurrently with any call but `_free`;
    /// keys are processed one by one, not atomically.
    ///
    /// # Safety
    /// `m` NULL or a live master; `tenant` NULL or valid for `tenant_len`
    /// bytes; `keys`, `key_lens`, `sizes` NULL (count 0) or valid for reading
    /// `count` entries, each `keys[i]` valid for `key_lens[i]` bytes; `cfg`
    /// NULL or a readable extended config; `out_replicas` NULL or valid for
    /// writing `replicas_cap` replicas; `out_replica_counts`, `out_tokens`,
    /// `out_statuses` valid for writing `count` entries; `err` NULL or valid
    /// for writing one pointer.
    pub fn mooncake_meta_batch_put_start(
        m: *const mooncake_meta_master,
        client: u64,
        tenant: *const c_char,
        tenant_len: usize,
        keys: *const *const c_char,
        key_lens: *const usize,
        count: usize,
        sizes: *const u64,
        cfg: *const mooncake_meta_write_config,
        out_replicas: *mut mooncake_meta_replica,
        replicas_cap: usize,
        out_replica_counts: *mut usize,
        out_tokens: *mut u64,
        out_statuses: *mut i32,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// UpsertStart for each key, laid out exactly as
    /// `mooncake_meta_batch_put_start`. An in-place upsert (same size) returns
    /// the object's existing MEMORY/NOF_SSD replicas; if they outnumber
    /// `stride`, that key alone fails with `MOONCAKE_META_BUFFER_TOO_SMALL`,
    /// `out_replica_counts[i]` = the count needed, and nothing is done to it
    /// (retry it with `mooncake_meta_upsert_start`).
    ///
    /// Ownership: nothing is transferred; every array is owned by the caller.
    /// Thread safety: may be called concurrently with any call but `_free`;
    /// keys are processed one by one, not atomically.
    ///
    /// # Safety
    /// As `mooncake_meta_batch_put_start`.
    pub fn mooncake_meta_batch_upsert_start(
        m: *const mooncake_meta_master,
        client: u64,
        tenant: *const c_char,
        tenant_len: usize,
        keys: *const *const c_char,
        key_lens: *const usize,
        count: usize,
        sizes: *const u64,
        cfg: *const mooncake_meta_write_config,
        out_replicas: *mut mooncake_meta_replica,
        replicas_cap: usize,
        out_replica_counts: *mut usize,
        out_tokens: *mut u64,
        out_statuses: *mut i32,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// PutEnd (= UpsertEnd) for each key with one `selector`
    /// (`MOONCAKE_META_SELECT_*`). `tokens` is NULL (no key names a token) or
    /// `count` entries where 0 names none. Statuses and `*err` as
    /// `mooncake_meta_batch_put_start` says for every batch.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`;
    /// keys are processed one by one, not atomically.
    ///
    /// # Safety
    /// `m` NULL or a live master; `tenant` NULL or valid for `tenant_len`
    /// bytes; `keys`, `key_lens` NULL (count 0) or valid for reading `count`
    /// entries, each `keys[i]` valid for `key_lens[i]` bytes; `tokens` NULL or
    /// valid for reading `count` entries; `out_statuses` valid for writing
    /// `count` entries; `err` NULL or valid for writing one pointer.
    pub fn mooncake_meta_batch_put_end(
        m: *const mooncake_meta_master,
        client: u64,
        tenant: *const c_char,
        tenant_len: usize,
        keys: *const *const c_char,
        key_lens: *const usize,
        count: usize,
        selector: u32,
        tokens: *const u64,
        out_statuses: *mut i32,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// PutRevoke (= UpsertRevoke) for each key; arguments as
    /// `mooncake_meta_batch_put_end`.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`;
    /// keys are processed one by one, not atomically.
    ///
    /// # Safety
    /// As `mooncake_meta_batch_put_end`.
    pub fn mooncake_meta_batch_put_revoke(
        m: *const mooncake_meta_master,
        client: u64,
        tenant: *const c_char,
        tenant_len: usize,
        keys: *const *const c_char,
        key_lens: *const usize,
        count: usize,
        selector: u32,
        tokens: *const u64,
        out_statuses: *mut i32,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Exist for each key: `out_exists[i]` = 1 if key `i` has a readable
    /// replica (and its read lease is granted), else 0. Statuses and `*err` as
    /// `mooncake_meta_batch_put_start` says for every batch.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// As `mooncake_meta_batch_put_end` (without `tokens`), and `out_exists`
    /// valid for writing `count` bytes.
    pub fn mooncake_meta_batch_exist(
        m: *const mooncake_meta_master,
        tenant: *const c_char,
        tenant_len: usize,
        keys: *const *const c_char,
        key_lens: *const usize,
        count: usize,
        out_exists: *mut u8,
        out_statuses: *mut i32,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// GetReplicaList for each key into one flat array: key `i`'s readable
    /// replicas are `out_replicas[off_i .. off_i + out_replica_counts[i]]`
    /// where `off_i` = the sum of the counts of the keys before it whose status
    /// is OK (a failed key's count is not part of the layout); `*out_len` = the
    /// total written. Each key that succeeds gets its read lease.
    ///
    /// Capacity: if the keys' readable replicas outnumber `cap`, the whole batch
    /// is `MOONCAKE_META_BUFFER_TOO_SMALL` with `*out_len` = the total needed,
    /// no lease granted and nothing else written but the statuses (all
    /// BUFFER_TOO_SMALL); pass `(NULL, 0)` to ask for the total. Should a key
    /// gain replicas between that check and its read (a concurrent write), that
    /// key alone fails with BUFFER_TOO_SMALL, its count = its need, no lease.
    /// A failed key has count 0 (missing -> OBJECT_NOT_FOUND, nothing readable ->
    /// REPLICA_IS_NOT_READY). Statuses and `*err` as `mooncake_meta_batch_put_start`
    /// says for every batch.
    ///
    /// Ownership: nothing is transferred; every array is owned by the caller.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// As `mooncake_meta_batch_put_end` (without `tokens`); `out_replicas` NULL
    /// or valid for writing `cap` replicas; `out_replica_counts` valid for
    /// writing `count` entries; `out_len` valid for writing a `size_t`.
    pub fn mooncake_meta_batch_get_replica_list(
        m: *const mooncake_meta_master,
        tenant: *const c_char,
        tenant_len: usize,
        keys: *const *const c_char,
        key_lens: *const usize,
        count: usize,
        out_replicas: *mut mooncake_meta_replica,
        cap: usize,
        out_replica_counts: *mut usize,
        out_len: *mut usize,
        out_statuses: *mut i32,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Remove for each key; `force` must be 0 or 1 (checked for the whole
    /// batch). Statuses and `*err` as `mooncake_meta_batch_put_start`
    /// says for every batch.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`;
    /// keys are processed one by one, not atomically.
    ///
    /// # Safety
    /// As `mooncake_meta_batch_put_end` (without `tokens`).
    pub fn mooncake_meta_batch_remove(
        m: *const mooncake_meta_master,
        tenant: *const c_char,
        tenant_len: usize,
        keys: *const *const c_char,
        key_lens: *const usize,
        count: usize,
        force: c_int,
        out_statuses: *mut i32,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// The first byte of the buffer's content, valid for
    /// `mooncake_meta_bytes_len(b)` bytes and followed by a NUL byte. NULL if
    /// `b` is NULL.
    ///
    /// Ownership: the memory belongs to `b` and is valid until
    /// `mooncake_meta_bytes_free(b)`; do not free it separately.
    /// Thread safety: a buffer is immutable; any number of threads may read it
    /// at once, but not while another frees it.
    ///
    /// # Safety
    /// `b` must be NULL or a buffer from this library not yet freed.
    pub fn mooncake_meta_bytes_data(b: *const mooncake_meta_bytes) -> *const u8;

    /// The length of the buffer's content in bytes (the trailing NUL not
    /// counted); 0 if `b` is NULL.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: as `mooncake_meta_bytes_data`.
    ///
    /// # Safety
    /// `b` must be NULL or a buffer from this library not yet freed.
    pub fn mooncake_meta_bytes_len(b: *const mooncake_meta_bytes) -> usize;

    /// Releases a buffer. `mooncake_meta_bytes_free(NULL)` does nothing.
    ///
    /// Ownership: takes ownership of `b`; it and its data are invalid
    /// afterwards.
    /// Thread safety: no other thread may use `b` concurrently.
    ///
    /// # Safety
    /// `b` must be NULL or a buffer from this library not yet freed.
    pub fn mooncake_meta_bytes_free(b: *mut mooncake_meta_bytes);

    /// The committed soft-pin deadline of a key: `*out_has` = 1 and
    /// `*out_deadline` = the deadline (milliseconds since the epoch; it may be
    /// stored-but-expired until cleanup or eviction normalises it), or
    /// `*out_has` = 0 and `*out_deadline` = 0 when none is committed. A missing
    /// key is `MOONCAKE_META_OBJECT_NOT_FOUND`. Grants no lease; reads no clock.
    ///
    /// Ownership: nothing is transferred; strings are only read during the call.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `tenant`/`key_ptr` NULL or valid for their
    /// lengths; `out_has` valid for writing an `int`, `out_deadline` for a
    /// `uint64_t`; `err` NULL or valid for writing one pointer.
    pub fn mooncake_meta_soft_pin_deadline(
        m: *const mooncake_meta_master,
        tenant: *const c_char,
        tenant_len: usize,
        key_ptr: *const c_char,
        key_len: usize,
        out_has: *mut c_int,
        out_deadline: *mut u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Writes 1 to `*out_pending` if the key's write in flight carries a soft-pin
    /// intent that can still commit (docs/CONTRACT.md section 4.4), else 0. A missing key is
    /// `MOONCAKE_META_OBJECT_NOT_FOUND`.
    ///
    /// Ownership: nothing is transferred; strings are only read during the call.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `tenant`/`key_ptr` NULL or valid for their
    /// lengths; `out_pending` valid for writing an `int`; `err` NULL or valid
    /// for writing one pointer.
    pub fn mooncake_meta_has_pending_soft_pin(
        m: *const mooncake_meta_master,
        tenant: *const c_char,
        tenant_len: usize,
        key_ptr: *const c_char,
        key_len: usize,
        out_pending: *mut c_int,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// The deadline index's sizes: `*out_heap` = heap entries (stale ones
    /// included), `*out_live` = live registrations (one per object with a
    /// registered deadline). docs/CONTRACT.md section 4.8 bounds the heap by
    /// `max(4096, 2 * live)`.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`; the
    /// two numbers are read together under the index lock.
    ///
    /// # Safety
    /// `m` NULL or a live master; `out_heap` and `out_live` valid for writing a
    /// `uint64_t`; `err` NULL or valid for writing one pointer.
    pub fn mooncake_meta_index_sizes(
        m: *const mooncake_meta_master,
        out_heap: *mut u64,
        out_live: *mut u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Checks every invariant of docs/CONTRACT.md section 8 (gauge, index registrations, heap
    /// bound, pending, allocated bytes, buffer overlap). A violation is
    /// `MOONCAKE_META_INTERNAL_ERROR` (a library bug) whose message describes
    /// it. Takes every lock, so it is meant for tests and diagnostics, not hot
    /// paths.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: safe to call concurrently with any call but `_free`, and
    /// it sees one consistent cut of the master; but the answer is only
    /// meaningful on a quiescent master: a cleanup cycle in flight on another
    /// thread (including the maintenance thread) may be reported as a
    /// violation.
    ///
    /// # Safety
    /// `m` NULL or a live master; `err` NULL or valid for writing one pointer.
    pub fn mooncake_meta_check_invariants(
        m: *const mooncake_meta_master,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Retains each of the `count` groups of `tenant` for `ttl_ms`
    /// milliseconds: a group's deadline becomes `max(its active deadline, now +
    /// ttl_ms)` (saturating at `MAX_INSTANT`; an expired deadline counts as
    /// none), so a repeat extends and never shortens. The deadline is the
    /// group's own: no member's soft pin changes, and no read, write or member
    /// operation moves it. Groups need no member, before or after.
    ///
    /// On `MOONCAKE_META_OK`, `out_statuses[i]` is group i's status and
    /// `out_deadlines[i]` its deadline after the call (0 when its status is
    /// not OK). A bad shared argument (TTL 0 or above
    /// `max_group_retention_ttl_ms`, a bad tenant) returns
    /// `MOONCAKE_META_INVALID_PARAMS` (a tenant that is not UTF-8:
    /// `MOONCAKE_META_INVALID_UTF8`) with that code in every `out_statuses[i]`
    /// and 0 in every `out_deadlines[i]`; an id that is not UTF-8 fails only
    /// its own group (`MOONCAKE_META_INVALID_UTF8`, deadline 0); any other
    /// failure (a NULL master, a NULL array or id with a non-zero count or
    /// length, a standby) refuses the whole call with neither array written.
    /// Either way nothing changed.
    ///
    /// Ownership: nothing is transferred; the arrays are the caller's.
    /// Thread safety: may be called concurrently with any call but `_free`;
    /// the groups of one call are retained under one lock, in order.
    ///
    /// # Safety
    /// `m` NULL or a live master; `tenant` NULL or valid for `tenant_len`
    /// bytes; `groups` and `group_lens` NULL (only with `count` 0) or valid for
    /// `count` elements, each id valid for its length; `out_statuses` and
    /// `out_deadlines` NULL (only with `count` 0) or valid for writing `count`
    /// elements; `err` NULL or valid for writing one pointer.
    pub fn mooncake_meta_retain_groups(
        m: *const mooncake_meta_master,
        tenant: *const c_char,
        tenant_len: usize,
        groups: *const *const c_char,
        group_lens: *const usize,
        count: usize,
        ttl_ms: u64,
        out_statuses: *mut i32,
        out_deadlines: *mut u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Ends the retention of each of the `count` groups of `tenant` now.
    /// Releasing a group with no stored deadline is OK and changes nothing; one
    /// whose deadline has passed but is still stored is normalised as cleanup
    /// would (the retained-group gauge -1, a group-released journal record).
    ///
    /// On `MOONCAKE_META_OK`, `out_statuses[i]` is group i's status
    /// (`MOONCAKE_META_INVALID_PARAMS` for an empty or NUL-containing id,
    /// `MOONCAKE_META_INVALID_UTF8` for one that is not UTF-8). A
    /// bad tenant returns `MOONCAKE_META_INVALID_PARAMS` (not UTF-8:
    /// `MOONCAKE_META_INVALID_UTF8`) with that code in every `out_statuses[i]`;
    /// any other failure refuses the whole call as for a retain, with
    /// `out_statuses` not written. Either way nothing changed.
    ///
    /// Ownership: nothing is transferred; the array is the caller's.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// As `mooncake_meta_retain_groups` (without `out_deadlines`).
    pub fn mooncake_meta_release_groups(
        m: *const mooncake_meta_master,
        tenant: *const c_char,
        tenant_len: usize,
        groups: *const *const c_char,
        group_lens: *const usize,
        count: usize,
        out_statuses: *mut i32,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// A group's active retention deadline: `*out_has` = 1 and `*out_deadline`
    /// = the deadline, or `*out_has` = 0 and `*out_deadline` = 0 when the group
    /// is not retained or its deadline has passed. An empty or NUL-containing
    /// group id is `MOONCAKE_META_INVALID_PARAMS`. Changes nothing.
    ///
    /// Ownership: nothing is transferred; strings are only read during the call.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `tenant`/`group` NULL or valid for their
    /// lengths; `out_has` valid for writing an `int`, `out_deadline` for a
    /// `uint64_t`; `err` NULL or valid for writing one pointer.
    pub fn mooncake_meta_group_retention_deadline(
        m: *const mooncake_meta_master,
        tenant: *const c_char,
        tenant_len: usize,
        group: *const c_char,
        group_len: usize,
        out_has: *mut c_int,
        out_deadline: *mut u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Runs one soft-pin expiration cleanup cycle at the master clock's now:
    /// clears every committed deadline that is due, in bounded batches. The
    /// statistics go to `*out` unless `out` is NULL. A bad `out->struct_size`
    /// is `MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED` and nothing runs.
    ///
    /// Ownership: nothing is transferred; `*out` is the caller's.
    /// Thread safety: may be called concurrently with any call but `_free`,
    /// including another cleanup (each deadline is cleared at most once).
    ///
    /// # Safety
    /// `m` NULL or a live master; `out` NULL or valid for reading its first
    /// `uint32_t` and writing `out->struct_size` bytes; `err` NULL or valid for
    /// writing one pointer.
    pub fn mooncake_meta_run_cleanup(
        m: *const mooncake_meta_master,
        out: *mut mooncake_meta_cleanup_stats,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// `mooncake_meta_run_cleanup` treating `at_ms` as now (the clock does not
    /// move): deadlines `<= at_ms` are due. `at_ms` above `MAX_INSTANT`
    /// (`INT64_MAX`) is `MOONCAKE_META_INVALID_PARAMS`.
    ///
    /// Ownership: nothing is transferred; `*out` is the caller's.
    /// Thread safety: as `mooncake_meta_run_cleanup`.
    ///
    /// # Safety
    /// As `mooncake_meta_run_cleanup`.
    pub fn mooncake_meta_run_cleanup_at(
        m: *const mooncake_meta_master,
        at_ms: u64,
        out: *mut mooncake_meta_cleanup_stats,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// One deterministic eviction run (docs/CONTRACT.md section 5) at the master clock's now,
    /// with explicit `target` and `lowerbound` fractions of the eviction base,
    /// each in [0, 1] (NaN or out of range: `MOONCAKE_META_INVALID_PARAMS` and
    /// nothing runs). The report goes to `*out` unless `out` is NULL.
    ///
    /// Ownership: nothing is transferred; `*out` is the caller's.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `out` NULL or valid for reading its first
    /// `uint32_t` and writing `out->struct_size` bytes; `err` NULL or valid for
    /// writing one pointer.
    pub fn mooncake_meta_run_eviction(
        m: *const mooncake_meta_master,
        target: f64,
        lowerbound: f64,
        out: *mut mooncake_meta_eviction_report,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// The eviction trigger of docs/CONTRACT.md section 5: evicts if memory usage is above
    /// the high watermark, or if `force` is 1 and `eviction_ratio > 0` (what an
    /// allocation failure does), with the target and lowerbound derived from
    /// the configuration. `*out_ran` = 1 if a run happened, and then its report
    /// goes to `*out` unless `out` is NULL; `*out_ran` = 0 and `*out` untouched
    /// otherwise. `force` must be 0 or 1. On a standby it never runs
    /// (`MOONCAKE_META_OK`, `*out_ran` = 0: a standby runs no maintenance;
    /// docs/CONTRACT.md section 12.3).
    ///
    /// Ownership: nothing is transferred; `*out` is the caller's.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `out_ran` valid for writing an `int`; `out`
    /// NULL or valid for reading its first `uint32_t` and writing
    /// `out->struct_size` bytes; `err` NULL or valid for writing one pointer.
    pub fn mooncake_meta_evict_if_needed(
        m: *const mooncake_meta_master,
        force: c_int,
        out_ran: *mut c_int,
        out: *mut mooncake_meta_eviction_report,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Runs every maintenance task once, in order, at the master clock's now:
    /// the eviction trigger, soft-pin cleanup, the stale-write sweep and the
    /// release of due discarded buffers: what the maintenance thread does when
    /// every task is due. For masters whose background intervals are 0.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `err` NULL or valid for writing one pointer.
    pub fn mooncake_meta_run_maintenance_tick(
        m: *const mooncake_meta_master,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Sweeps the writes that are stale at `at_ms` (`put_start +
    /// put_start_release_timeout < at_ms`): their PROCESSING replicas are
    /// discarded, their pending intent cleared, and an object left without
    /// replicas is erased. The number of writes swept goes to `*out_swept`
    /// unless it is NULL. Any `at_ms` is accepted: the comparison is strict,
    /// so a write whose release instant saturated at `MAX_INSTANT` is swept
    /// only beyond it (docs/CONTRACT.md section 1); the buffers it discards
    /// are released at their own (saturated) release instant. The clock does
    /// not move.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `out_swept` NULL or valid for writing a
    /// `uint64_t`; `err` NULL or valid for writing one pointer.
    pub fn mooncake_meta_sweep_stale_writes_at(
        m: *const mooncake_meta_master,
        at_ms: u64,
        out_swept: *mut u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Frees the discarded buffers (preempted, replaced, swept, moved away)
    /// whose release instant is `<= at_ms`; they stop counting in allocated
    /// bytes. The number freed goes to `*out_released` unless it is NULL.
    /// `at_ms` above `MAX_INSTANT` is `MOONCAKE_META_INVALID_PARAMS`. The clock
    /// does not move.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `out_released` NULL or valid for writing a
    /// `uint64_t`; `err` NULL or valid for writing one pointer.
    pub fn mooncake_meta_release_discarded_at(
        m: *const mooncake_meta_master,
        at_ms: u64,
        out_released: *mut u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Fills `*out` with every scalar metric of the master. A bad
    /// `out->struct_size` is `MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED`.
    ///
    /// Ownership: nothing is transferred; `*out` is the caller's.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `out` valid for reading its first `uint32_t`
    /// and writing `out->struct_size` bytes; `err` NULL or valid for writing
    /// one pointer.
    pub fn mooncake_meta_metrics(
        m: *const mooncake_meta_master,
        out: *mut mooncake_meta_metrics_snapshot,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// The metrics as Prometheus text exposition (format 0.0.4), upstream-style
    /// names, per-segment capacity and usage included, in a new buffer at
    /// `*out`.
    ///
    /// Ownership: on success `*out` is a new buffer owned by the caller, to be
    /// released with `mooncake_meta_bytes_free`; on failure it is not written.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `out` valid for writing one pointer; `err`
    /// NULL or valid for writing one pointer.
    pub fn mooncake_meta_metrics_prometheus(
        m: *const mooncake_meta_master,
        out: *mut *mut mooncake_meta_bytes,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// The Prometheus text of `mooncake_meta_metrics_prometheus`, copied into
    /// the caller's `buf` of `cap` bytes, without a terminating NUL;
    /// `*out_len` = its length. If it does not fit: `MOONCAKE_META_BUFFER_TOO_SMALL`,
    /// `*out_len` = the length needed, `buf` untouched. `(NULL, 0)` asks for the
    /// length. Metrics move, so the text may have grown by the next call: retry
    /// with some headroom.
    ///
    /// Ownership: nothing is transferred; `buf` is the caller's.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `buf` NULL (only with `cap == 0`) or valid
    /// for writing `cap` bytes; `out_len` valid for writing a `size_t`; `err`
    /// NULL or valid for writing one pointer.
    pub fn mooncake_meta_metrics_prometheus_into(
        m: *const mooncake_meta_master,
        buf: *mut c_char,
        cap: usize,
        out_len: *mut usize,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Serialises the master into a new buffer at `*out`: a consistent cut,
    /// deterministic for a given state (sorted keys), with soft-pin deadlines
    /// kept (docs/CONTRACT.md section 6).
    ///
    /// Ownership: on success `*out` is a new buffer owned by the caller, to be
    /// released with `mooncake_meta_bytes_free`; on failure it is not written.
    /// Thread safety: may be called concurrently with any call but `_free`;
    /// writers wait while the cut is taken, reads go on. With the journal on,
    /// the cut waits for a mount, an unmount or a restore in progress.
    ///
    /// # Safety
    /// `m` NULL or a live master; `out` valid for writing one pointer; `err`
    /// NULL or valid for writing one pointer.
    pub fn mooncake_meta_snapshot(
        m: *const mooncake_meta_master,
        out: *mut *mut mooncake_meta_bytes,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Serialises the master into the caller's `buf` of `cap` bytes;
    /// `*out_len` = the snapshot's length. If it does not fit:
    /// `MOONCAKE_META_BUFFER_TOO_SMALL`, `*out_len` = the length needed, `buf`
    /// untouched. `(NULL, 0)` asks for the length. The master may change (and
    /// the snapshot grow) before the next call: retry with some headroom.
    ///
    /// Ownership: nothing is transferred; `buf` is the caller's.
    /// Thread safety: as `mooncake_meta_snapshot`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `buf` NULL (only with `cap == 0`) or valid
    /// for writing `cap` bytes; `out_len` valid for writing a `size_t`; `err`
    /// NULL or valid for writing one pointer.
    pub fn mooncake_meta_snapshot_into(
        m: *const mooncake_meta_master,
        buf: *mut u8,
        cap: usize,
        out_len: *mut usize,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Serialises the master to the file `path` atomically: written to a
    /// temporary file in the same directory, synced, renamed over `path`, and
    /// the directory synced, so a crash leaves the old file or the new one,
    /// never a torn one. An I/O failure is `MOONCAKE_META_SERIALIZE_FAIL`; one
    /// before the rename leaves `path` as it was (and no temporary file), but
    /// a failure to sync the directory after the rename leaves `path` holding
    /// the new snapshot, which a crash may still undo (the message says so). A
    /// temporary file a crashed process left is never overwritten: the save
    /// takes another name.
    ///
    /// The file replaced is the one `path` names: a symbolic link is followed
    /// (the link stays and its target is replaced; more than 40 links, or a
    /// loop, is `MOONCAKE_META_SERIALIZE_FAIL`). A directory, device, pipe or
    /// socket at `path` is refused (`MOONCAKE_META_SERIALIZE_FAIL`, "not a
    /// regular file") before anything is written. A replaced file's owner,
    /// group and read/write/execute bits carry over to the new one (never
    /// set-user-ID, set-group-ID or sticky; an owner or group the process may
    /// not set stays its own, and then the group bits are cleared); a new file
    /// is created 0600 (less what the umask takes): a snapshot holds every
    /// tenant's keys.
    ///
    /// Ownership: nothing is transferred; `path` is only read during the call.
    /// Thread safety: may be called concurrently with any call but `_free`;
    /// concurrent saves to one path each land whole (the last rename wins).
    ///
    /// # Safety
    /// `m` NULL or a live master; `path` a NUL-terminated string; `err` NULL or
    /// valid for writing one pointer.
    pub fn mooncake_meta_snapshot_save(
        m: *const mooncake_meta_master,
        path: *const c_char,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Restores the master from one snapshot of `len` bytes at `data`,
    /// replacing its whole state atomically, with the survival rule evaluated
    /// at the master clock's now (docs/CONTRACT.md section 6). A snapshot that does not
    /// validate is `MOONCAKE_META_DESERIALIZE_FAIL` with the reason, and the
    /// master is unchanged. The report goes to `*out` unless `out` is NULL (a
    /// bad `out->struct_size` fails before anything is restored).
    ///
    /// Ownership: nothing is transferred; `data` is only read during the call.
    /// Thread safety: may be called concurrently with any call but `_free`.
    /// The state is replaced under every shard lock at once: a call on one
    /// key, each key of a batch call, and a snapshot (which locks every shard
    /// at once) see the state before the restore or after it, never a mix. A
    /// call that visits the shards one at a time can straddle a restore:
    /// `mooncake_meta_remove_all` and the `mooncake_meta_remove_by_regex`
    /// calls then remove from the replaced state in the shards they visited before it and
    /// from the restored state in the others (their count adds both), a
    /// `mooncake_meta_list_keys` page may hold keys of both, and the keys of
    /// one batch call may see different states. (An unmount running across a
    /// restore never drops a restored replica, and cleanup or eviction work
    /// never acts on the restored state: docs/CONTRACT.md section 6.)
    ///
    /// # Safety
    /// `m` NULL or a live master; `data` NULL (only with `len == 0`) or valid
    /// for reading `len` bytes; `out` NULL or valid for reading its first
    /// `uint32_t` and writing `out->struct_size` bytes; `err` NULL or valid for
    /// writing one pointer.
    pub fn mooncake_meta_restore(
        m: *const mooncake_meta_master,
        data: *const u8,
        len: usize,
        out: *mut mooncake_meta_restore_report,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Restores from `count` candidate snapshots, candidate `i` being
    /// `lens[i]` bytes at `datas[i]`: tried newest first (by stored creation
    /// instant, ties in list order); the first that validates is restored and
    /// `out->candidate` says which. If none validates:
    /// `MOONCAKE_META_DESERIALIZE_FAIL` whose message gives each candidate's
    /// reason, and the master is unchanged. `count == 0` is
    /// `MOONCAKE_META_DESERIALIZE_FAIL` too (nothing to restore).
    ///
    /// Ownership: nothing is transferred; the buffers are only read during the
    /// call.
    /// Thread safety: as `mooncake_meta_restore`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `datas` and `lens` NULL (only with `count ==
    /// 0`) or valid for reading `count` elements, each `datas[i]` NULL (only
    /// with `lens[i] == 0`) or valid for reading `lens[i]` bytes; `out` as for
    /// `mooncake_meta_restore`; `err` NULL or valid for writing one pointer.
    pub fn mooncake_meta_restore_candidates(
        m: *const mooncake_meta_master,
        datas: *const *const u8,
        lens: *const usize,
        count: usize,
        out: *mut mooncake_meta_restore_report,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Restores from `count` candidate snapshot files (NUL-terminated paths),
    /// as `mooncake_meta_restore_candidates`; a file that cannot be read counts
    /// as a failed candidate (named, with the reason, in the error message if
    /// no candidate wins; counted in `out->candidates_rejected` if one does).
    /// Only a regular file is read (a device, pipe or directory is such a
    /// failure, before a byte is read), and only once its header says it is a
    /// snapshot of exactly its length (anything else fails after reading the
    /// header alone, so a large file that is no snapshot costs no memory), up
    /// to the length it had when opened. Files are ordered by the creation
    /// instant their first bytes state and read whole one at a time, newest
    /// first, each only once the newer ones failed: a restore holds one
    /// candidate in memory, not all.
    ///
    /// Ownership: nothing is transferred; the paths are only read during the
    /// call.
    /// Thread safety: as `mooncake_meta_restore`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `paths` NULL (only with `count == 0`) or valid
    /// for reading `count` pointers, each a NUL-terminated string; `out` as for
    /// `mooncake_meta_restore`; `err` NULL or valid for writing one pointer.
    pub fn mooncake_meta_restore_files(
        m: *const mooncake_meta_master,
        paths: *const *const c_char,
        count: usize,
        out: *mut mooncake_meta_restore_report,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Reads the journal from sequence `from_seq` into the caller's `buf` of
    /// `cap` bytes: one batch of as many consecutive records as fit (the
    /// encoding of docs/CONTRACT.md section 12, ready for
    /// `mooncake_meta_journal_apply`). `*out_len` = the batch's length and
    /// `*out_next_seq` = the sequence to read from next. Nothing recorded
    /// after `from_seq` yet: OK, `*out_len` = 0, `*out_next_seq` = `from_seq`.
    /// Not even the first record fits: `MOONCAKE_META_BUFFER_TOO_SMALL`,
    /// `*out_len` = the bytes that hold every record held from `from_seq`,
    /// `buf` untouched; `(NULL, 0)` asks for that length.
    ///
    /// Errors: `MOONCAKE_META_JOURNAL_OVERRUN` when `from_seq` was dropped
    /// (the journal was full, or a journaling standby's numbering moved) or
    /// already released: resync from a snapshot;
    /// `MOONCAKE_META_INVALID_PARAMS` for 0 or a sequence past the next one;
    /// `MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS` on a master without a
    /// journal. Outputs are untouched on every error but BUFFER_TOO_SMALL.
    ///
    /// Ownership: nothing is transferred; `buf` is the caller's.
    /// Thread safety: may be called concurrently with any call but `_free`;
    /// reads are serialised with appends by the journal's own lock.
    ///
    /// # Safety
    /// `m` NULL or a live master; `buf` NULL (only with `cap == 0`) or valid
    /// for writing `cap` bytes; `out_len` valid for writing a `size_t`;
    /// `out_next_seq` NULL or valid for writing a `uint64_t`; `err` NULL or
    /// valid for writing one pointer.
    pub fn mooncake_meta_journal_read(
        m: *const mooncake_meta_master,
        from_seq: u64,
        buf: *mut u8,
        cap: usize,
        out_len: *mut usize,
        out_next_seq: *mut u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// The consumer has stored every record up to `upto` (inclusive): the
    /// journal frees them. Releasing what is already released or dropped is a
    /// no-op. `*out_freed` (unless NULL) = the records freed.
    ///
    /// Errors: `MOONCAKE_META_INVALID_PARAMS` for a sequence not appended yet;
    /// `MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS` on a master without a
    /// journal.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `out_freed` NULL or valid for writing a
    /// `uint64_t`; `err` NULL or valid for writing one pointer.
    pub fn mooncake_meta_journal_release(
        m: *const mooncake_meta_master,
        upto: u64,
        out_freed: *mut u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// The journal's counters into `*out` (all zero on a master without a
    /// journal).
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `out` valid for reading its first `uint32_t`
    /// and writing `out->struct_size` bytes; `err` NULL or valid for writing
    /// one pointer.
    pub fn mooncake_meta_journal_counters(
        m: *const mooncake_meta_master,
        out: *mut mooncake_meta_journal_stats,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Applies journal bytes (one batch from `mooncake_meta_journal_read`, or
    /// several concatenated) to a standby master, in sequence order. Every
    /// batch is decoded and checked first: a corrupt one is
    /// `MOONCAKE_META_DESERIALIZE_FAIL` and nothing is applied; records at or
    /// below the applied sequence are skipped (a repeat is harmless); a gap
    /// after the applied sequence is an error and nothing is applied. A record
    /// that does not fit the standby's state stops the call with an error
    /// naming it; the records before it stay applied and the applied sequence
    /// says where (docs/CONTRACT.md section 12). `*out` (unless NULL) says
    /// what was applied.
    ///
    /// Errors: `MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS` on a primary.
    ///
    /// Ownership: nothing is transferred; `data` is only read during the call.
    /// Thread safety: may be called concurrently with any call but `_free`;
    /// concurrent applies are serialised.
    ///
    /// # Safety
    /// `m` NULL or a live master; `data` NULL (only with `len == 0`) or valid
    /// for reading `len` bytes; `out` NULL or valid for reading its first
    /// `uint32_t` and writing `out->struct_size` bytes; `err` NULL or valid for
    /// writing one pointer.
    pub fn mooncake_meta_journal_apply(
        m: *const mooncake_meta_master,
        data: *const u8,
        len: usize,
        out: *mut mooncake_meta_apply_report,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Promotes a standby master to primary: every readable object gets the
    /// recovery lease (now + the default KV lease TTL, if later than its own),
    /// maintenance starts, and the writes that were in flight go on: their End
    /// and Revoke calls succeed on this master. `*out` (unless NULL) says what
    /// was done.
    ///
    /// Errors: `MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS` on a primary.
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`;
    /// one of two concurrent promotions fails.
    ///
    /// # Safety
    /// `m` NULL or a live master; `out` NULL or valid for reading its first
    /// `uint32_t` and writing `out->struct_size` bytes; `err` NULL or valid for
    /// writing one pointer.
    pub fn mooncake_meta_promote(
        m: *const mooncake_meta_master,
        out: *mut mooncake_meta_promote_report,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;

    /// Whether the master is a standby (`*out_standby` = 1) or a primary (0),
    /// and (unless `out_applied_seq` is NULL) the last journal sequence it
    /// applied (a standby) or applied before its promotion (0 for a master
    /// that was never a standby and restored no snapshot that carried one).
    ///
    /// Ownership: nothing is transferred.
    /// Thread safety: may be called concurrently with any call but `_free`.
    ///
    /// # Safety
    /// `m` NULL or a live master; `out_standby` valid for writing an `int`;
    /// `out_applied_seq` NULL or valid for writing a `uint64_t`; `err` NULL or
    /// valid for writing one pointer.
    pub fn mooncake_meta_standby_state(
        m: *const mooncake_meta_master,
        out_standby: *mut c_int,
        out_applied_seq: *mut u64,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;
}
