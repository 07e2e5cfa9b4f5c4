//! Shared fixture for the integration tests: a deterministic master (manual
//! clock at T0, background work off) with memory and second-pool segments,
//! and short helpers for the common write shapes.
#![allow(dead_code)]

use mooncake_meta_core::*;

pub const T0: u64 = 1_000_000;
pub const C1: ClientId = 1;
pub const C2: ClientId = 2;
pub const DEFAULT_TTL: u64 = 1_800_000;
pub const MAX_TTL: u64 = 86_400_000;
pub const LEASE: u64 = 10_000;

pub fn config() -> MasterConfig {
    MasterConfig::deterministic(T0)
}

/// A master with `mem` memory segments and `nof` second-pool segments of
/// `size` bytes each, owned by client C1.
pub fn master_with(cfg: MasterConfig, mem: usize, nof: usize, size: u64) -> Master {
    let m = Master::new(cfg).unwrap();
    for i in 0..mem {
        m.mount_segment(C1, &spec(&format!("mem{i}"), i, size, Pool::Memory))
            .unwrap();
    }
    for i in 0..nof {
        m.mount_segment(C1, &spec(&format!("nof{i}"), 16 + i, size, Pool::NofSsd))
            .unwrap();
    }
    m
}

pub fn master() -> Master {
    master_with(config(), 2, 1, 1 << 20)
}

pub fn spec(name: &str, slot: usize, size: u64, pool: Pool) -> SegmentSpec {
    SegmentSpec {
        name: name.into(),
        base: (slot as u64 + 1) << 40,
        size,
        pool,
    }
}

pub fn k(key: &str) -> Key<'_> {
    Key::new(key)
}

pub fn cfg(req: SoftPinRequest) -> WriteConfig {
    WriteConfig::default().with_soft_pin(req)
}

pub fn enable(ttl: u64) -> WriteConfig {
    cfg(SoftPinRequest::enable_for(ttl))
}

pub fn preserve() -> WriteConfig {
    cfg(SoftPinRequest::PRESERVE)
}

pub fn disable() -> WriteConfig {
    cfg(SoftPinRequest::DISABLE)
}

/// PutStart + PutEnd(ALL) by C1; returns the token.
pub fn put(m: &Master, key: &str, size: u64, c: &WriteConfig) -> u64 {
    let w = m.put_start(C1, k(key), size, c).unwrap();
    m.put_end(C1, k(key), ReplicaSelector::All, Some(w.token))
        .unwrap();
    w.token
}

/// UpsertStart + UpsertEnd(ALL) by C1.
pub fn upsert(m: &Master, key: &str, size: u64, c: &WriteConfig) -> u64 {
    let w = m.upsert_start(C1, k(key), size, c).unwrap();
    m.upsert_end(C1, k(key), ReplicaSelector::All, Some(w.token))
        .unwrap();
    w.token
}

pub fn deadline(m: &Master, key: &str) -> Option<u64> {
    m.soft_pin_deadline(k(key)).unwrap()
}

pub fn gauge(m: &Master) -> u64 {
    m.metrics().soft_pin_key_count
}

pub fn code<T: std::fmt::Debug>(r: Result<T>) -> ErrorKind {
    r.unwrap_err().kind()
}

pub fn inv(m: &Master) {
    m.check_invariants()
        .unwrap_or_else(|e| panic!("invariant violated: {e}"));
}
