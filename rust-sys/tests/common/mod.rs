//! Shared fixture: a deterministic master (manual clock at T0, background
//! work off) with two memory segments owned by client C1, through the safe
//! layer.
#![allow(dead_code)]

use mooncake_meta_sys::safe::*;

pub const T0: u64 = 1_000_000;
pub const C1: u64 = 1;
pub const C2: u64 = 2;
pub const DEFAULT_TTL: u64 = 1_800_000;
pub const SIZE: u64 = 4096;

pub fn spec(name: &str, base: u64, size: u64, pool: Pool) -> SegmentSpec {
    SegmentSpec {
        name: name.into(),
        base,
        size,
        pool,
    }
}

pub fn mount(m: &Master) {
    m.mount_segment(C1, &spec("mem0", 1 << 40, 1 << 20, Pool::Memory))
        .unwrap();
    m.mount_segment(C1, &spec("mem1", 2 << 40, 1 << 20, Pool::Memory))
        .unwrap();
}

pub fn master() -> Master {
    master_from(MasterConfig::deterministic(T0))
}

/// A master from `cfg` (which should be deterministic), segments mounted.
pub fn master_from(cfg: MasterConfig) -> Master {
    let m = Master::new(cfg).unwrap();
    mount(&m);
    m
}

/// PutStart + PutEnd of `key` (default tenant) by C1.
pub fn put(m: &Master, key: &str, cfg: &WriteConfig) -> StartedWrite {
    let s = m.put_start(C1, Key::new(key), SIZE, cfg).unwrap();
    m.put_end(C1, Key::new(key), ReplicaSelector::All, Some(s.token))
        .unwrap();
    s
}

/// PutStart + PutEnd with the legacy configuration.
pub fn put_legacy(m: &Master, key: &str, cfg: &LegacyConfig<'_>) -> StartedWrite {
    let s = m.put_start_legacy(C1, Key::new(key), SIZE, cfg).unwrap();
    m.put_end(C1, Key::new(key), ReplicaSelector::All, Some(s.token))
        .unwrap();
    s
}

/// UpsertStart + UpsertEnd of `key` by C1 (same size: in place).
pub fn upsert(m: &Master, key: &str, cfg: &WriteConfig) {
    let s = m.upsert_start(C1, Key::new(key), SIZE, cfg).unwrap();
    m.upsert_end(C1, Key::new(key), ReplicaSelector::All, Some(s.token))
        .unwrap();
}

pub fn enable(ttl: Option<u64>) -> WriteConfig {
    WriteConfig::default().with_soft_pin(SoftPinRequest {
        action: SoftPinAction::Enable,
        ttl_ms: ttl,
    })
}

/// The segment id of a buffer replica.
pub fn segment_of(r: &ReplicaDescriptor) -> SegmentId {
    match r.location {
        Location::Buffer { segment, .. } => segment,
        Location::LocalDisk { .. } => panic!("{r:?} has no segment"),
    }
}
