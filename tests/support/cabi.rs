//! C-ABI config and key fuzzing: random structs and key bytes
//! through the real `extern "C"` functions, shared by
//! `tests/fuzz_c_abi.rs` and the cargo-fuzz target `c_abi_config`.
//!
//! A [`Harness`] holds a master created through the C ABI and a *twin*
//! created through the Rust API with the same configuration and segments
//! (one segment per pool, so placement is deterministic). Each case draws
//! one call with random arguments: master configurations (setters, validate,
//! master creation), the extended and legacy write configurations
//! (struct_size too small / exact / larger with a zero or non-zero tail,
//! unknown flags, actions and selectors, TTLs 0 / in range / above the
//! maximum / `u64::MAX`, preferred segments and groups with NULLs and bad
//! UTF-8), Put/Upsert Start (single, legacy and batch), End/Revoke,
//! soft-pin introspection and segment mounts with unknown pools; keys and
//! tenants empty, long, with NUL, bad UTF-8, or NULL with a non-zero
//! length; NULL out-pointers and NULL `err`.
//!
//! Every case checks: the status is one the header defines (and neither
//! PANIC nor INTERNAL_ERROR); an error comes with an error object whose
//! code is the status and whose message is non-empty and names the
//! function; success leaves `*err` alone; outputs are written only on
//! success (BUFFER_TOO_SMALL writes the count); a failed call leaves the
//! master's captured image unchanged; and the status (and, on success, the
//! replicas and token) equals what the twin returns for the same inputs
//! decoded independently here. The two masters' images must stay equal.
//! Any broken rule panics, which is what a fuzzer reports.

use super::entropy::Entropy;
use mooncake_meta::batch::*;
use mooncake_meta::config::*;
use mooncake_meta::error::*;
use mooncake_meta::legacy_config::*;
use mooncake_meta::master::*;
use mooncake_meta::replica::mooncake_meta_replica;
use mooncake_meta::segments::*;
use mooncake_meta::soft_pin::*;
use mooncake_meta::status::*;
use mooncake_meta::write::*;
use mooncake_meta::write_config::*;
use mooncake_meta_core::*;
use std::ffi::{CStr, CString};
use std::mem::size_of;
use std::os::raw::{c_char, c_int};
use std::ptr::{null, null_mut};

pub const T0: u64 = 1_000_000;
const MAX_TTL: u64 = 50_000;
const DEFAULT_TTL: u64 = 5_000;
const SHARDS: u64 = 8;
const SEG_SIZE: u64 = 1 << 20;
const MEM_BASE: u64 = 1 << 40;
const SSD_BASE: u64 = 2 << 40;
const C1: u64 = 1;
const C2: u64 = 2;

/// Every status the header defines (OK first).
pub const CODES: [mooncake_meta_status; 28] = [
    MOONCAKE_META_OK,
    MOONCAKE_META_INTERNAL_ERROR,
    MOONCAKE_META_SEGMENT_NOT_FOUND,
    MOONCAKE_META_SEGMENT_ALREADY_EXISTS,
    MOONCAKE_META_NO_AVAILABLE_HANDLE,
    MOONCAKE_META_INVALID_PARAMS,
    MOONCAKE_META_ILLEGAL_CLIENT,
    MOONCAKE_META_INVALID_WRITE,
    MOONCAKE_META_REPLICA_IS_NOT_READY,
    MOONCAKE_META_OBJECT_NOT_FOUND,
    MOONCAKE_META_OBJECT_ALREADY_EXISTS,
    MOONCAKE_META_OBJECT_HAS_LEASE,
    MOONCAKE_META_OBJECT_HAS_REPLICATION_TASK,
    MOONCAKE_META_OBJECT_NO_REPLICATION_TASK,
    MOONCAKE_META_REPLICA_NOT_FOUND,
    MOONCAKE_META_REPLICA_IS_GONE,
    MOONCAKE_META_OBJECT_REPLICA_BUSY,
    MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS,
    MOONCAKE_META_SERIALIZE_FAIL,
    MOONCAKE_META_DESERIALIZE_FAIL,
    MOONCAKE_META_NULL_ARGUMENT,
    MOONCAKE_META_INVALID_UTF8,
    MOONCAKE_META_BUFFER_TOO_SMALL,
    MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED,
    MOONCAKE_META_UNKNOWN_FLAGS,
    MOONCAKE_META_PANIC,
    MOONCAKE_META_STALE_WRITE_TOKEN,
    MOONCAKE_META_CLOCK_UNSUPPORTED,
];

/// The operations a case may call, in tally order.
pub const OPS: [&str; 17] = [
    "master_config",
    "write_config_init",
    "write_config_validate",
    "replicate_config_validate",
    "put_start",
    "upsert_start",
    "put_start_legacy",
    "upsert_start_legacy",
    "batch_put_start",
    "batch_upsert_start",
    "end_revoke",
    "batch_put_end",
    "soft_pin_deadline",
    "has_pending_soft_pin",
    "mount_segment",
    "advance_time",
    "config_setter",
];

fn op_index(op: &str) -> usize {
    OPS.iter()
        .position(|o| *o == op)
        .unwrap_or_else(|| panic!("unknown op {op}"))
}

pub fn code_name(st: mooncake_meta_status) -> &'static str {
    status_name(st)
}

fn status_name(st: mooncake_meta_status) -> &'static str {
    // SAFETY: status names are static NUL-terminated strings.
    unsafe { CStr::from_ptr(mooncake_meta_status_name(st)) }
        .to_str()
        .expect("status names are ASCII")
}

/// The status of an error kind, looked up through the C names (so a kind
/// and its code are tied by the header, not by this file).
pub fn code(kind: ErrorKind) -> mooncake_meta_status {
    *CODES
        .iter()
        .find(|&&c| status_name(c) == kind.name())
        .unwrap_or_else(|| panic!("no header code named {}", kind.name()))
}

fn expected_code(r: &std::result::Result<(), ErrorKind>) -> mooncake_meta_status {
    match r {
        Ok(()) => MOONCAKE_META_OK,
        Err(k) => code(*k),
    }
}

/// Calls per operation and status; a fixed array, so counting never
/// allocates (the leak check measures around it).
#[derive(Clone)]
pub struct Tally(pub [[u64; CODES.len()]; OPS.len()]);

impl Default for Tally {
    fn default() -> Self {
        Tally([[0; CODES.len()]; OPS.len()])
    }
}

impl Tally {
    fn add(&mut self, op: &str, st: mooncake_meta_status) {
        let s = CODES
            .iter()
            .position(|&c| c == st)
            .unwrap_or_else(|| panic!("{op}: status {st} is not defined by the header"));
        self.0[op_index(op)][s] += 1;
    }

    pub fn merge(&mut self, other: &Tally) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
    }

    pub fn total(&self) -> u64 {
        self.0.iter().flatten().sum()
    }

    pub fn get(&self, op: &str, st: mooncake_meta_status) -> u64 {
        let s = CODES.iter().position(|&c| c == st).expect("defined code");
        self.0[op_index(op)][s]
    }

    /// Calls per status over all operations.
    pub fn per_status(&self) -> Vec<(&'static str, u64)> {
        CODES
            .iter()
            .enumerate()
            .map(|(s, &c)| (status_name(c), self.0.iter().map(|row| row[s]).sum()))
            .filter(|(_, n)| *n > 0)
            .collect()
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        for (o, row) in self.0.iter().enumerate() {
            let cells: Vec<String> = row
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(s, n)| format!("{} {n}", status_name(CODES[s])))
                .collect();
            out.push_str(&format!("  {:<26} {}\n", OPS[o], cells.join(", ")));
        }
        out.push_str("  per status:");
        for (name, n) in self.per_status() {
            out.push_str(&format!(" {name} {n};"));
        }
        out
    }
}

// ---------------------------------------------------------------- inputs

/// A `(ptr, len)` byte-string argument.
#[derive(Debug, Clone)]
enum Bytes {
    /// A NULL pointer with this length.
    Null(usize),
    Data(Vec<u8>),
}

impl Bytes {
    fn ptr(&self) -> *const c_char {
        match self {
            Bytes::Null(_) => null(),
            Bytes::Data(v) => v.as_ptr().cast(),
        }
    }

    fn len(&self) -> usize {
        match self {
            Bytes::Null(n) => *n,
            Bytes::Data(v) => v.len(),
        }
    }

    /// What the library reads: NULL with 0 is empty, NULL with a length is
    /// NULL_ARGUMENT, else UTF-8 or INVALID_UTF8.
    fn decode(&self) -> Result<String, ErrorKind> {
        match self {
            Bytes::Null(0) => Ok(String::new()),
            Bytes::Null(_) => Err(ErrorKind::NullArgument),
            Bytes::Data(v) => String::from_utf8(v.clone()).map_err(|_| ErrorKind::InvalidUtf8),
        }
    }
}

/// The malformed keys of a batch: index and error.
type BadKeys = Vec<(usize, ErrorKind)>;

/// A batch's keys as the library reads them (src/batch.rs): a NULL key
/// with a length refuses the whole batch; an empty key or one that is not
/// UTF-8 fails on its own (its index and error), going to the core as the
/// empty key, which the core refuses for that key alone.
fn batch_keys(keys: &[Bytes]) -> Result<(Vec<String>, BadKeys), ErrorKind> {
    let mut bad = Vec::new();
    let mut ks = Vec::with_capacity(keys.len());
    for (i, k) in keys.iter().enumerate() {
        let k = match k.decode() {
            Ok(k) if k.is_empty() => Err(ErrorKind::InvalidParams),
            Ok(k) => Ok(k),
            Err(ErrorKind::InvalidUtf8) => Err(ErrorKind::InvalidUtf8),
            Err(e) => return Err(e),
        };
        ks.push(k.unwrap_or_else(|kind| {
            bad.push((i, kind));
            String::new()
        }));
    }
    Ok((ks, bad))
}

const BAD_UTF8: [&[u8]; 5] = [b"\xff", b"k\xc3", b"\xed\xa0\x80", b"ok\x80", b"\xc0\xaf"];

fn pool_key(e: &mut impl Entropy) -> Vec<u8> {
    format!("k{}", e.below(12)).into_bytes()
}

fn gen_key(e: &mut impl Entropy) -> Bytes {
    match e.below(100) {
        0..=54 => Bytes::Data(pool_key(e)),
        55..=59 => Bytes::Data(Vec::new()),
        60..=63 => Bytes::Null(0),
        64..=67 => Bytes::Null(1 + e.below(1 << 20) as usize),
        68..=71 => Bytes::Data(vec![b'L'; *e.pick(&[4_096usize, 70_000])]),
        72..=79 => Bytes::Data(e.pick(&[&b"k1\0x"[..], b"\0", b"k\0"]).to_vec()),
        80..=89 => Bytes::Data(e.pick(&BAD_UTF8).to_vec()),
        _ => Bytes::Data(
            (0..1 + e.below(12))
                .map(|_| 0x20 + e.below(0x5f) as u8)
                .collect(),
        ),
    }
}

fn gen_tenant(e: &mut impl Entropy) -> Bytes {
    match e.below(100) {
        0..=44 => Bytes::Null(0),
        45..=59 => Bytes::Data(b"t1".to_vec()),
        60..=64 => Bytes::Data(Vec::new()),
        65..=69 => Bytes::Data(b"default".to_vec()),
        70..=74 => Bytes::Null(1 + e.below(64) as usize),
        75..=79 => Bytes::Data(vec![b'T'; 5_000]),
        80..=89 => Bytes::Data(e.pick(&[&b"t\0x"[..], b"\0"]).to_vec()),
        _ => Bytes::Data(e.pick(&BAD_UTF8).to_vec()),
    }
}

/// The client of a batch call (mostly the segments' owner) and its tenant,
/// NULL (the default tenant) in `null_tenant_pct` % of the cases.
fn gen_batch_caller(e: &mut impl Entropy, null_tenant_pct: u64) -> (u64, Bytes) {
    let client = if e.chance(85) { C1 } else { C2 };
    let tenant = if e.chance(null_tenant_pct) {
        Bytes::Null(0)
    } else {
        gen_tenant(e)
    };
    (client, tenant)
}

/// `count` batch keys (mostly from the shared pool, so batches hit live
/// objects) with the pointer and length arrays a batch call takes. The
/// pointers point into the returned keys' buffers, which moving the Vec
/// does not move.
fn gen_batch_keys(
    e: &mut impl Entropy,
    count: usize,
) -> (Vec<Bytes>, Vec<*const c_char>, Vec<usize>) {
    let keys: Vec<Bytes> = (0..count)
        .map(|_| {
            if e.chance(85) {
                Bytes::Data(pool_key(e))
            } else {
                gen_key(e)
            }
        })
        .collect();
    let ptrs = keys.iter().map(Bytes::ptr).collect();
    let lens = keys.iter().map(Bytes::len).collect();
    (keys, ptrs, lens)
}

/// The key the library should see, or the code it should refuse it with
/// (the order of `ffi::master::key`).
fn model_key(tenant: &Bytes, key: &Bytes) -> Result<(String, String), ErrorKind> {
    let t = tenant.decode()?;
    let k = key.decode()?;
    if k.is_empty() {
        return Err(ErrorKind::InvalidParams);
    }
    let t = if t.is_empty() { "default".into() } else { t };
    if t.contains('\0') {
        return Err(ErrorKind::InvalidParams);
    }
    Ok((t, k))
}

/// A NUL-terminated string field: NULL or bytes without NUL.
#[derive(Debug, Clone)]
enum CStrArg {
    Null,
    Str(CString),
}

impl CStrArg {
    fn ptr(&self) -> *const c_char {
        match self {
            CStrArg::Null => null(),
            CStrArg::Str(s) => s.as_ptr(),
        }
    }
}

fn gen_name(e: &mut impl Entropy, names: &[&str]) -> CStrArg {
    match e.below(100) {
        0..=69 => CStrArg::Str(CString::new(*e.pick(names)).unwrap()),
        70..=79 => CStrArg::Str(CString::default()),
        80..=89 => CStrArg::Null,
        _ => CStrArg::Str(CString::new(e.pick(&BAD_UTF8).to_vec()).unwrap()),
    }
}

/// `preferred_segments` / `preferred_segments_count`.
#[derive(Debug, Clone)]
struct Segs {
    items: Vec<CStrArg>,
    ptrs: Vec<*const c_char>,
    null_array: bool,
    count: usize,
}

impl Segs {
    fn gen(e: &mut impl Entropy) -> Segs {
        let items: Vec<CStrArg> = match e.below(100) {
            0..=59 => Vec::new(),
            _ => (0..1 + e.below(3))
                .map(|_| gen_name(e, &["mem0", "ssd0", "nope"]))
                .collect(),
        };
        let null_array = items.is_empty() || e.chance(5);
        let count = if null_array && e.chance(90) {
            0
        } else if null_array {
            1 + e.below(4) as usize
        } else {
            items.len()
        };
        let ptrs = items.iter().map(CStrArg::ptr).collect();
        Segs {
            items,
            ptrs,
            null_array,
            count,
        }
    }

    fn ptr(&self) -> *const *const c_char {
        if self.null_array {
            null()
        } else {
            self.ptrs.as_ptr()
        }
    }

    /// The order of `input::c_str_array`.
    fn decode(&self) -> Result<Vec<String>, ErrorKind> {
        if self.null_array {
            return if self.count == 0 {
                Ok(Vec::new())
            } else {
                Err(ErrorKind::NullArgument)
            };
        }
        self.items
            .iter()
            .map(|s| match s {
                CStrArg::Null => Err(ErrorKind::NullArgument),
                CStrArg::Str(c) => c
                    .to_str()
                    .map(str::to_owned)
                    .map_err(|_| ErrorKind::InvalidUtf8),
            })
            .collect()
    }
}

const V1_SIZE: usize = 56;
const KNOWN_SIZE: usize = size_of::<mooncake_meta_write_config>();
const MAX_SIZE: usize = 4096;

/// A caller's extended write config: the raw field values, the declared
/// `struct_size`, and a buffer of at least that many bytes holding them.
struct ExtCfg {
    null: bool,
    size: u32,
    tail_nonzero: bool,
    flags: u32,
    action: u32,
    reserved0: u32,
    ttl: u64,
    memory: u32,
    ssd: u32,
    segs: Segs,
    group: CStrArg,
    /// 8-byte aligned storage: `struct_size` readable bytes.
    buf: Vec<u64>,
}

/// An entropy source that always says 0: `Segs::gen` from it is "none".
struct NoSegs;

impl Entropy for NoSegs {
    fn below(&mut self, _: u64) -> u64 {
        0
    }
}

fn gen_u32(e: &mut impl Entropy, usual: &[u32]) -> u32 {
    if e.chance(85) {
        *e.pick(usual)
    } else {
        e.below(1 << 32) as u32
    }
}

fn gen_ttl(e: &mut impl Entropy) -> u64 {
    match e.below(6) {
        0 => 0,
        1 => 1 + e.below(MAX_TTL),
        2 => MAX_TTL,
        3 => MAX_TTL + 1 + e.below(1 << 40),
        4 => u64::MAX,
        _ => e.u64(),
    }
}

impl ExtCfg {
    fn gen(e: &mut impl Entropy) -> ExtCfg {
        let size = match e.below(100) {
            0..=59 => KNOWN_SIZE,
            60..=64 => e.below(V1_SIZE as u64) as usize,
            65..=69 => V1_SIZE - 1,
            70..=79 => KNOWN_SIZE + 1 + e.below(64) as usize,
            80..=84 => MAX_SIZE,
            85..=89 => MAX_SIZE + 1,
            90..=94 => u32::MAX as usize,
            _ => KNOWN_SIZE + 1 + e.below((MAX_SIZE - KNOWN_SIZE) as u64) as usize,
        };
        let ttl = gen_ttl(e);
        let mut c = ExtCfg {
            null: e.chance(8),
            size: size as u32,
            tail_nonzero: size > KNOWN_SIZE && e.chance(40),
            flags: gen_u32(e, &[0, 0, 1, 1, 2, 3, 4, 0x8000_0000]),
            action: gen_u32(e, &[0, 0, 1, 1, 1, 2, 3]),
            reserved0: if e.chance(95) {
                0
            } else {
                1 + e.below(9) as u32
            },
            ttl: if e.chance(30) { 0 } else { ttl },
            memory: gen_u32(e, &[1, 1, 1, 2, 0, 3, u32::MAX]),
            ssd: gen_u32(e, &[0, 0, 0, 1, 2]),
            segs: Segs::gen(e),
            group: match e.below(100) {
                0..=74 => CStrArg::Null,
                _ => gen_name(e, &["g1", "g2"]),
            },
            buf: Vec::new(),
        };
        if e.chance(45) {
            // A well-formed config half the time, so Starts get far enough
            // to succeed or fail in the master.
            c.size = KNOWN_SIZE as u32;
            c.tail_nonzero = false;
            c.flags &= 3;
            c.action %= 3;
            c.reserved0 = 0;
            if c.flags & 1 == 0 || c.action != 1 {
                c.flags &= !1;
                c.ttl = 0;
            }
            c.memory = 1 + (c.memory % 2);
            c.ssd %= 2;
            if c.segs.decode().is_err() {
                c.segs = Segs::gen(&mut NoSegs);
            }
            if matches!(c.group, CStrArg::Str(_)) {
                c.group = CStrArg::Str(CString::new(*e.pick(&["g1", "g2"])).unwrap());
            }
        }
        c.fill(e);
        c
    }

    /// Lays the fields out as a C caller would, in a buffer of
    /// `max(struct_size, known)` bytes (sizes above 4096 get a buffer of
    /// 4097 bytes: the library must refuse them before reading any field).
    fn fill(&mut self, e: &mut impl Entropy) {
        let value = mooncake_meta_write_config {
            struct_size: self.size,
            flags: self.flags,
            soft_pin_action: self.action,
            reserved0: self.reserved0,
            soft_pin_ttl_ms: self.ttl,
            memory_replicas: self.memory,
            nof_ssd_replicas: self.ssd,
            preferred_segments: self.segs.ptr(),
            preferred_segments_count: self.segs.count,
            group: self.group.ptr(),
        };
        let bytes = (self.size as usize).clamp(KNOWN_SIZE, MAX_SIZE + 1);
        self.buf = vec![0u64; bytes.div_ceil(8)];
        let dst = self.buf.as_mut_ptr().cast::<u8>();
        // SAFETY: the buffer holds at least KNOWN_SIZE bytes, 8-aligned.
        unsafe { dst.cast::<mooncake_meta_write_config>().write(value) };
        if self.tail_nonzero {
            let end = (self.size as usize).min(bytes);
            let at = KNOWN_SIZE + e.below((end - KNOWN_SIZE) as u64) as usize;
            // SAFETY: KNOWN_SIZE <= at < min(size, buffer bytes).
            unsafe { dst.add(at).write(1 + e.below(255) as u8) };
        }
    }

    fn ptr(&self) -> *const mooncake_meta_write_config {
        if self.null {
            null()
        } else {
            self.buf.as_ptr().cast()
        }
    }

    /// The order of `write_config::read_extended`.
    fn decode(&self) -> Result<WriteConfig, ErrorKind> {
        if self.null {
            return Ok(WriteConfig::default());
        }
        let size = self.size as usize;
        if !(V1_SIZE..=MAX_SIZE).contains(&size) || self.tail_nonzero {
            return Err(ErrorKind::StructSizeUnsupported);
        }
        if self.flags & !3 != 0 {
            return Err(ErrorKind::UnknownFlags);
        }
        if self.reserved0 != 0 {
            return Err(ErrorKind::InvalidParams);
        }
        let action = match self.action {
            0 => SoftPinAction::Preserve,
            1 => SoftPinAction::Enable,
            2 => SoftPinAction::Disable,
            _ => return Err(ErrorKind::InvalidParams),
        };
        let ttl_ms = if self.flags & 1 != 0 {
            Some(self.ttl)
        } else if self.ttl != 0 {
            return Err(ErrorKind::InvalidParams);
        } else {
            None
        };
        let preferred_segments = self.segs.decode()?;
        let group = match &self.group {
            CStrArg::Null => None,
            CStrArg::Str(s) => Some(s.to_str().map_err(|_| ErrorKind::InvalidUtf8)?.to_owned()),
        };
        Ok(WriteConfig {
            memory_replicas: self.memory,
            nof_ssd_replicas: self.ssd,
            hard_pin: self.flags & 2 != 0,
            preferred_segments,
            soft_pin: SoftPinRequest { action, ttl_ms },
            group,
        })
    }
}

/// The legacy struct (frozen upstream layout).
struct LegacyCfg {
    null: bool,
    value: mooncake_meta_replicate_config,
    segs: Segs,
}

impl LegacyCfg {
    fn gen(e: &mut impl Entropy) -> LegacyCfg {
        let segs = Segs::gen(e);
        let replica_num = match e.below(100) {
            0..=59 => 1,
            60..=69 => 2,
            70..=79 => 0,
            80..=84 => 3,
            85..=89 => u32::MAX as usize + 1,
            90..=94 => usize::MAX,
            _ => e.below(1 << 32) as usize,
        };
        let flag = |e: &mut dyn FnMut(u64) -> u64| -> c_int {
            match e(5) {
                0 | 1 => 0,
                2 => 1,
                3 => -1,
                _ => e(1 << 31) as c_int,
            }
        };
        let mut below = |n| e.below(n);
        let with_soft_pin = flag(&mut below);
        let with_hard_pin = flag(&mut below);
        let value = mooncake_meta_replicate_config {
            replica_num,
            with_soft_pin,
            with_hard_pin,
            preferred_segments: segs.ptr().cast_mut(),
            preferred_segments_count: segs.count,
        };
        LegacyCfg {
            null: e.chance(8),
            value,
            segs,
        }
    }

    fn ptr(&self) -> *const mooncake_meta_replicate_config {
        if self.null {
            null()
        } else {
            &self.value
        }
    }

    /// The order of `legacy_config::read_legacy`.
    fn decode(&self) -> Result<WriteConfig, ErrorKind> {
        if self.null {
            return Ok(WriteConfig::default());
        }
        let memory_replicas =
            u32::try_from(self.value.replica_num).map_err(|_| ErrorKind::InvalidParams)?;
        Ok(WriteConfig {
            memory_replicas,
            nof_ssd_replicas: 0,
            hard_pin: self.value.with_hard_pin != 0,
            preferred_segments: self.segs.decode()?,
            soft_pin: SoftPinRequest::from_legacy(self.value.with_soft_pin != 0),
            group: None,
        })
    }
}

/// The checks of `write_config::check` (no master): the soft-pin request
/// without the maximum, at least one replica, a non-empty group.
fn model_check(cfg: &WriteConfig) -> Result<(), ErrorKind> {
    let unlimited = MasterConfig {
        max_kv_soft_pin_ttl_ms: u64::MAX,
        ..MasterConfig::default()
    };
    cfg.soft_pin.resolve(&unlimited).map_err(|e| e.kind())?;
    // Counts above the header's per-pool maximum are refused before the
    // buffer is sized.
    if cfg.memory_replicas > MOONCAKE_META_MAX_REPLICAS_PER_POOL
        || cfg.nof_ssd_replicas > MOONCAKE_META_MAX_REPLICAS_PER_POOL
    {
        return Err(ErrorKind::InvalidParams);
    }
    if cfg.memory_replicas == 0 && cfg.nof_ssd_replicas == 0 {
        return Err(ErrorKind::InvalidParams);
    }
    if cfg.group.as_deref() == Some("") {
        return Err(ErrorKind::InvalidParams);
    }
    Ok(())
}

fn gen_size(e: &mut impl Entropy) -> u64 {
    match e.below(100) {
        0..=4 => 0,
        5..=79 => 1 + e.below(4096),
        80..=89 => 1 + e.below(64 << 10),
        90..=94 => SEG_SIZE + 1,
        _ => u64::MAX,
    }
}

const SENTINEL: mooncake_meta_replica = mooncake_meta_replica {
    id: 0xDEAD_BEEF,
    kind: 77,
    status: 77,
    segment_id: 77,
    reserved: 77,
    address: 77,
    size: 77,
    client: 77,
};
const SENTINEL_LEN: usize = 0xDEAD;
const SENTINEL_TOKEN: u64 = 0xDEAD_BEEF;

/// A caller's replica output array: `cap` entries, or NULL.
struct OutReplicas {
    null: bool,
    cap: usize,
    buf: Vec<mooncake_meta_replica>,
}

impl OutReplicas {
    fn gen(e: &mut impl Entropy, want: usize) -> OutReplicas {
        let cap = match e.below(100) {
            0..=49 => want,
            50..=59 => want.saturating_sub(1),
            60..=69 => want + 1 + e.below(2) as usize,
            _ => e.below(6) as usize,
        };
        let null = e.chance(6);
        OutReplicas {
            null,
            cap: if null && e.chance(50) { 0 } else { cap },
            buf: vec![SENTINEL; cap.max(1)],
        }
    }

    fn ptr(&mut self) -> *mut mooncake_meta_replica {
        if self.null {
            null_mut()
        } else {
            self.buf.as_mut_ptr()
        }
    }

    /// NULL with a capacity is NULL_ARGUMENT (`ReplicaArray::new`).
    fn check(&self) -> Result<(), ErrorKind> {
        if self.null && self.cap > 0 {
            Err(ErrorKind::NullArgument)
        } else {
            Ok(())
        }
    }

    fn untouched(&self) -> bool {
        self.buf.iter().all(|r| *r == SENTINEL)
    }
}

fn descriptors(w: &StartedWrite) -> Vec<mooncake_meta_replica> {
    w.replicas.iter().map(mooncake_meta_replica::from).collect()
}

fn requested(cfg: &WriteConfig) -> usize {
    cfg.memory_replicas as usize + cfg.nof_ssd_replicas as usize
}

// --------------------------------------------------------------- harness

/// The error slot of one call: requested (a writable `*err`) or NULL.
struct ErrSlot {
    requested: bool,
    err: *mut mooncake_meta_error,
}

impl ErrSlot {
    fn gen(e: &mut impl Entropy) -> ErrSlot {
        ErrSlot {
            requested: e.chance(85),
            err: null_mut(),
        }
    }

    fn ptr(&mut self) -> *mut *mut mooncake_meta_error {
        if self.requested {
            &mut self.err
        } else {
            null_mut()
        }
    }
}

fn ok(st: mooncake_meta_status) {
    assert_eq!(st, MOONCAKE_META_OK, "{}", status_name(st));
}

/// How a setter that succeeded changes the expected configuration.
type Apply = Box<dyn Fn(&mut MasterConfig)>;

/// A master created through the C ABI and its Rust twin.
pub struct Harness {
    c: *mut mooncake_meta_master,
    twin: Master,
    tokens: Vec<u64>,
    pub tally: Tally,
    pub cases: u64,
}

impl Default for Harness {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        // SAFETY: created by master_new, freed once.
        unsafe { mooncake_meta_master_free(self.c) };
    }
}

impl Harness {
    pub fn new() -> Harness {
        let e = null_mut();
        let mut cfg = null_mut();
        let mut m = null_mut();
        // SAFETY: plain C calls with valid out-pointers.
        unsafe {
            ok(mooncake_meta_config_new(&mut cfg, e));
            ok(mooncake_meta_config_set_manual_clock(cfg, T0, e));
            ok(mooncake_meta_config_set_soft_pin_cleanup_interval_ms(
                cfg, 0, e,
            ));
            ok(mooncake_meta_config_set_eviction_check_interval_ms(
                cfg, 0, e,
            ));
            ok(mooncake_meta_config_set_sweep_interval_ms(cfg, 0, e));
            ok(mooncake_meta_config_set_default_kv_soft_pin_ttl_ms(
                cfg,
                DEFAULT_TTL,
                e,
            ));
            ok(mooncake_meta_config_set_max_kv_soft_pin_ttl_ms(
                cfg, MAX_TTL, e,
            ));
            ok(mooncake_meta_config_set_put_start_discard_timeout_ms(
                cfg, 1_000, e,
            ));
            ok(mooncake_meta_config_set_put_start_release_timeout_ms(
                cfg, 2_000, e,
            ));
            ok(mooncake_meta_config_set_shard_count(cfg, SHARDS, e));
            // The twin's seed (MasterConfig::deterministic's): both masters
            // hash and place alike.
            ok(mooncake_meta_config_set_seed(cfg, 1, e));
            ok(mooncake_meta_master_new(cfg, &mut m, e));
            mooncake_meta_config_free(cfg);
        }
        let twin = Master::new(MasterConfig {
            default_kv_soft_pin_ttl_ms: DEFAULT_TTL,
            max_kv_soft_pin_ttl_ms: MAX_TTL,
            put_start_discard_timeout_ms: 1_000,
            put_start_release_timeout_ms: 2_000,
            shard_count: SHARDS as usize,
            ..MasterConfig::deterministic(T0)
        })
        .expect("twin config is valid");
        let h = Harness {
            c: m,
            twin,
            tokens: Vec::new(),
            tally: Tally::default(),
            cases: 0,
        };
        assert_eq!(h.cm().config(), h.twin.config(), "C config != Rust config");
        for (name, base, pool) in [
            ("mem0", MEM_BASE, MOONCAKE_META_POOL_MEMORY),
            ("ssd0", SSD_BASE, MOONCAKE_META_POOL_NOF_SSD),
        ] {
            let mut id = 0;
            // SAFETY: valid name and out-pointer.
            ok(unsafe {
                mooncake_meta_mount_segment(
                    h.c,
                    C1,
                    name.as_ptr().cast(),
                    name.len(),
                    base,
                    SEG_SIZE,
                    pool,
                    &mut id,
                    null_mut(),
                )
            });
            let spec = SegmentSpec {
                name: name.into(),
                base,
                size: SEG_SIZE,
                pool: Pool::from_raw(pool).unwrap(),
            };
            assert_eq!(h.twin.mount_segment(C1, &spec).unwrap(), id);
        }
        h.assert_lockstep();
        h
    }

    fn cm(&self) -> &Master {
        // SAFETY: live until drop.
        unsafe { master_ref(self.c) }
    }

    fn assert_lockstep(&self) {
        assert!(
            self.cm().capture() == self.twin.capture(),
            "the C master and its Rust twin diverged"
        );
    }

    /// The checks every call gets: a defined status, never PANIC or
    /// INTERNAL_ERROR, the error object's code and message, `*err` left
    /// alone on success. Frees the error object.
    fn outcome(
        &mut self,
        op: &'static str,
        function: &str,
        st: mooncake_meta_status,
        slot: &mut ErrSlot,
    ) {
        assert!(CODES.contains(&st), "{function}: undefined status {st}");
        self.tally.add(op, st);
        let err = std::mem::replace(&mut slot.err, null_mut());
        let message = if err.is_null() {
            String::new()
        } else {
            // SAFETY: a live error from the library.
            let m = unsafe { CStr::from_ptr(mooncake_meta_error_message(err)) }
                .to_str()
                .expect("messages are UTF-8")
                .to_owned();
            // SAFETY: as above.
            assert_eq!(unsafe { mooncake_meta_error_code(err) }, st, "{m}");
            // SAFETY: freed once.
            unsafe { mooncake_meta_error_free(err) };
            m
        };
        assert!(
            st != MOONCAKE_META_PANIC && st != MOONCAKE_META_INTERNAL_ERROR,
            "{function}: {}: {message}",
            status_name(st)
        );
        if st == MOONCAKE_META_OK {
            assert!(err.is_null(), "{function}: OK but *err was written");
        } else if slot.requested {
            assert!(
                !err.is_null(),
                "{function}: {} without an error object",
                status_name(st)
            );
            assert!(
                message.starts_with(function) && message.len() > function.len() + 2,
                "{function}: message {message:?}"
            );
        }
    }

    fn expect(
        &self,
        function: &str,
        st: mooncake_meta_status,
        want: &std::result::Result<(), ErrorKind>,
        what: &dyn std::fmt::Debug,
    ) {
        assert_eq!(
            status_name(st),
            status_name(expected_code(want)),
            "{function}: C status vs model/twin ({what:?})"
        );
    }

    /// One case drawn from `e`.
    pub fn case(&mut self, e: &mut impl Entropy) {
        self.cases += 1;
        let before = self.cm().capture();
        let changed_ok = match e.below(100) {
            0..=5 => {
                self.master_config(e);
                false
            }
            6..=8 => {
                self.write_config_init(e);
                false
            }
            9..=13 => {
                self.config_validate(e);
                false
            }
            14..=31 => self.start(e, false, false),
            32..=45 => self.start(e, true, false),
            46..=51 => self.start(e, false, true),
            52..=55 => self.start(e, true, true),
            56..=63 => self.batch_start(e, false),
            64..=69 => self.batch_start(e, true),
            70..=81 => self.end_revoke(e),
            82..=85 => self.batch_end(e),
            86..=91 => {
                self.soft_pin_query(e);
                false
            }
            92..=96 => {
                self.mount(e);
                false
            }
            _ => {
                self.advance(e);
                true
            }
        };
        if !changed_ok {
            assert!(
                self.cm().capture() == before,
                "a failed (or read-only) call changed the master"
            );
        }
        self.assert_lockstep();
    }

    /// Master configuration: random setter values (some refused), then
    /// validate and master creation through C against `Master::new` with
    /// the values the setters accepted.
    fn master_config(&mut self, e: &mut impl Entropy) {
        let mut cfg = null_mut();
        // SAFETY: valid out-pointer.
        ok(unsafe { mooncake_meta_config_new(&mut cfg, null_mut()) });
        let mut want = MasterConfig::default();
        for _ in 0..e.below(8) {
            let mut slot = ErrSlot::gen(e);
            let target = if e.chance(4) { null_mut() } else { cfg };
            let ttl = gen_ttl(e).min(if e.chance(50) { 100_000_000 } else { u64::MAX });
            let allow = *e.pick(&[0, 1, 1, 2, -1, c_int::MAX]);
            let ratio = *e.pick(&[0.0, 0.05, 0.5, 1.0, -0.1, 1.5, f64::NAN, f64::INFINITY]);
            let (name, st, apply): (&str, _, Apply) = unsafe {
                match e.below(13) {
                    0 => (
                        "mooncake_meta_config_set_default_kv_lease_ttl_ms",
                        mooncake_meta_config_set_default_kv_lease_ttl_ms(target, ttl, slot.ptr()),
                        Box::new(move |c| c.default_kv_lease_ttl_ms = ttl),
                    ),
                    1 => (
                        "mooncake_meta_config_set_default_kv_soft_pin_ttl_ms",
                        mooncake_meta_config_set_default_kv_soft_pin_ttl_ms(
                            target,
                            ttl,
                            slot.ptr(),
                        ),
                        Box::new(move |c| c.default_kv_soft_pin_ttl_ms = ttl),
                    ),
                    2 => (
                        "mooncake_meta_config_set_max_kv_soft_pin_ttl_ms",
                        mooncake_meta_config_set_max_kv_soft_pin_ttl_ms(target, ttl, slot.ptr()),
                        Box::new(move |c| c.max_kv_soft_pin_ttl_ms = ttl),
                    ),
                    3 => (
                        "mooncake_meta_config_set_allow_evict_soft_pinned_objects",
                        mooncake_meta_config_set_allow_evict_soft_pinned_objects(
                            target,
                            allow,
                            slot.ptr(),
                        ),
                        Box::new(move |c| c.allow_evict_soft_pinned_objects = allow == 1),
                    ),
                    4 => (
                        "mooncake_meta_config_set_eviction_ratio",
                        mooncake_meta_config_set_eviction_ratio(target, ratio, slot.ptr()),
                        Box::new(move |c| c.eviction_ratio = ratio),
                    ),
                    5 => (
                        "mooncake_meta_config_set_eviction_high_watermark_ratio",
                        mooncake_meta_config_set_eviction_high_watermark_ratio(
                            target,
                            ratio,
                            slot.ptr(),
                        ),
                        Box::new(move |c| c.eviction_high_watermark_ratio = ratio),
                    ),
                    6 => (
                        "mooncake_meta_config_set_put_start_discard_timeout_ms",
                        mooncake_meta_config_set_put_start_discard_timeout_ms(
                            target,
                            ttl,
                            slot.ptr(),
                        ),
                        Box::new(move |c| c.put_start_discard_timeout_ms = ttl),
                    ),
                    7 => (
                        "mooncake_meta_config_set_put_start_release_timeout_ms",
                        mooncake_meta_config_set_put_start_release_timeout_ms(
                            target,
                            ttl,
                            slot.ptr(),
                        ),
                        Box::new(move |c| c.put_start_release_timeout_ms = ttl),
                    ),
                    8 => {
                        // A master with 2^20 shards is valid but costs
                        // ~100 MB: the fuzz stays below or just above it.
                        let n = *e.pick(&[0, 1, 3, 64, (1 << 20) + 1, u32::MAX as u64, u64::MAX]);
                        (
                            "mooncake_meta_config_set_shard_count",
                            mooncake_meta_config_set_shard_count(target, n, slot.ptr()),
                            Box::new(move |c| c.shard_count = n as usize),
                        )
                    }
                    9 => {
                        let start = *e.pick(&[0, T0, MAX_INSTANT - 1, MAX_INSTANT, u64::MAX]);
                        (
                            "mooncake_meta_config_set_manual_clock",
                            mooncake_meta_config_set_manual_clock(target, start, slot.ptr()),
                            Box::new(move |c| c.clock = ClockSource::Manual { start_ms: start }),
                        )
                    }
                    10 => (
                        "mooncake_meta_config_set_system_clock",
                        mooncake_meta_config_set_system_clock(target, slot.ptr()),
                        Box::new(|c| c.clock = ClockSource::System),
                    ),
                    11 => {
                        let v = *e.pick(&[0, 0, 1_000, u64::MAX]);
                        (
                            "mooncake_meta_config_set_soft_pin_cleanup_interval_ms",
                            mooncake_meta_config_set_soft_pin_cleanup_interval_ms(
                                target,
                                v,
                                slot.ptr(),
                            ),
                            Box::new(move |c| c.soft_pin_cleanup_interval_ms = v),
                        )
                    }
                    _ => {
                        let v = *e.pick(&[0, 0, 1_000, u64::MAX]);
                        (
                            "mooncake_meta_config_set_sweep_interval_ms",
                            mooncake_meta_config_set_sweep_interval_ms(target, v, slot.ptr()),
                            Box::new(move |c| c.sweep_interval_ms = v),
                        )
                    }
                }
            };
            // Only `allow` has values a setter refuses (not 0 or 1).
            let allow_bad =
                name.ends_with("allow_evict_soft_pinned_objects") && !(0..=1).contains(&allow);
            let model = if target.is_null() {
                Err(ErrorKind::NullArgument)
            } else if allow_bad {
                Err(ErrorKind::InvalidParams)
            } else {
                Ok(())
            };
            self.expect(name, st, &model, &"setter");
            if st == MOONCAKE_META_OK {
                apply(&mut want);
            }
            self.outcome("config_setter", name, st, &mut slot);
        }
        // Background threads are not what this fuzzes: keep the eviction
        // interval (not drawn above) at 0 on both sides.
        // SAFETY: live config.
        ok(unsafe { mooncake_meta_config_set_eviction_check_interval_ms(cfg, 0, null_mut()) });
        want.eviction_check_interval_ms = 0;
        if !matches!(want.clock, ClockSource::Manual { .. }) || e.chance(50) {
            // System-clock masters with background work start a thread;
            // most cases keep them quiet.
            want.soft_pin_cleanup_interval_ms = 0;
            want.sweep_interval_ms = 0;
            // SAFETY: live config.
            unsafe {
                ok(mooncake_meta_config_set_soft_pin_cleanup_interval_ms(
                    cfg,
                    0,
                    null_mut(),
                ));
                ok(mooncake_meta_config_set_sweep_interval_ms(
                    cfg,
                    0,
                    null_mut(),
                ));
            }
        }
        let direct = Master::new(want.clone());
        let direct_kind = direct.as_ref().map(drop).map_err(|e| e.kind());
        drop(direct);

        let mut slot = ErrSlot::gen(e);
        // SAFETY: live config.
        let st = unsafe { mooncake_meta_config_validate(cfg, slot.ptr()) };
        self.expect("mooncake_meta_config_validate", st, &direct_kind, &want);
        self.outcome(
            "master_config",
            "mooncake_meta_config_validate",
            st,
            &mut slot,
        );

        let mut slot = ErrSlot::gen(e);
        let null_cfg = e.chance(3);
        let null_out = e.chance(5);
        let mut m = 0x10 as *mut mooncake_meta_master;
        let sentinel = m;
        // SAFETY: cfg live or NULL; out-pointer valid or NULL.
        let st = unsafe {
            mooncake_meta_master_new(
                if null_cfg { null() } else { cfg },
                if null_out { null_mut() } else { &mut m },
                slot.ptr(),
            )
        };
        let model = if null_out {
            Err(ErrorKind::NullArgument)
        } else if null_cfg {
            Ok(())
        } else {
            direct_kind
        };
        self.expect("mooncake_meta_master_new", st, &model, &want);
        self.outcome("master_config", "mooncake_meta_master_new", st, &mut slot);
        if st == MOONCAKE_META_OK {
            assert_ne!(m, sentinel);
            let got = unsafe { master_ref(m) }.config().clone();
            let expected = if null_cfg {
                MasterConfig::default()
            } else {
                want
            };
            assert!(
                format!("{got:?}") == format!("{expected:?}"),
                "master_new: config {got:?} != {expected:?}"
            );
            // SAFETY: created just above.
            unsafe { mooncake_meta_master_free(m) };
        } else {
            assert_eq!(m, sentinel, "out_master written on failure");
        }
        // SAFETY: created above.
        unsafe { mooncake_meta_config_free(cfg) };
    }

    fn write_config_init(&mut self, e: &mut impl Entropy) {
        let size = *e.pick(&[
            0,
            4,
            V1_SIZE - 1,
            V1_SIZE,
            KNOWN_SIZE,
            KNOWN_SIZE + 8,
            MAX_SIZE,
            MAX_SIZE + 1,
            usize::MAX,
        ]);
        let mut buf = vec![0xA5u8; size.clamp(KNOWN_SIZE, MAX_SIZE + 8)];
        let null = e.chance(5);
        let mut slot = ErrSlot::gen(e);
        let ptr = if null {
            null_mut()
        } else {
            buf.as_mut_ptr().cast::<mooncake_meta_write_config>()
        };
        // SAFETY: buf holds `size` bytes whenever size is accepted (<= 4096).
        let st = unsafe { mooncake_meta_write_config_init(ptr, size, slot.ptr()) };
        let model = if null {
            Err(ErrorKind::NullArgument)
        } else if !(V1_SIZE..=MAX_SIZE).contains(&size) {
            Err(ErrorKind::StructSizeUnsupported)
        } else {
            Ok(())
        };
        self.expect("mooncake_meta_write_config_init", st, &model, &size);
        if st == MOONCAKE_META_OK {
            // The defaults, then zeros to `size`, then untouched bytes.
            let mut want = [0u8; KNOWN_SIZE];
            let d = WriteConfig::default();
            want[..4].copy_from_slice(&(size as u32).to_ne_bytes());
            want[24..28].copy_from_slice(&d.memory_replicas.to_ne_bytes());
            want[28..32].copy_from_slice(&d.nof_ssd_replicas.to_ne_bytes());
            assert_eq!(&buf[..KNOWN_SIZE.min(size)], &want[..KNOWN_SIZE.min(size)]);
            assert!(buf[KNOWN_SIZE.min(size)..size].iter().all(|&b| b == 0));
            assert!(buf[size..].iter().all(|&b| b == 0xA5), "wrote past size");
        } else {
            assert!(buf.iter().all(|&b| b == 0xA5), "init wrote on failure");
        }
        self.outcome(
            "write_config_init",
            "mooncake_meta_write_config_init",
            st,
            &mut slot,
        );
    }

    fn config_validate(&mut self, e: &mut impl Entropy) {
        let mut slot = ErrSlot::gen(e);
        if e.chance(60) {
            let c = ExtCfg::gen(e);
            // SAFETY: a readable config of its declared size (or refused).
            let st = unsafe { mooncake_meta_write_config_validate(c.ptr(), slot.ptr()) };
            let model = c.decode().and_then(|w| model_check(&w));
            self.expect(
                "mooncake_meta_write_config_validate",
                st,
                &model,
                &c.decode(),
            );
            self.outcome(
                "write_config_validate",
                "mooncake_meta_write_config_validate",
                st,
                &mut slot,
            );
        } else {
            let c = LegacyCfg::gen(e);
            // SAFETY: a readable legacy config or NULL.
            let st = unsafe { mooncake_meta_replicate_config_validate(c.ptr(), slot.ptr()) };
            let model = c.decode().and_then(|w| model_check(&w));
            self.expect(
                "mooncake_meta_replicate_config_validate",
                st,
                &model,
                &c.decode(),
            );
            self.outcome(
                "replicate_config_validate",
                "mooncake_meta_replicate_config_validate",
                st,
                &mut slot,
            );
        }
    }

    /// Put/Upsert Start, extended or legacy config. Returns whether the
    /// master may have changed (the call succeeded).
    fn start(&mut self, e: &mut impl Entropy, upsert: bool, legacy: bool) -> bool {
        let client = if e.chance(85) { C1 } else { C2 };
        let tenant = gen_tenant(e);
        let key = gen_key(e);
        let size = gen_size(e);
        let ext = (!legacy).then(|| ExtCfg::gen(e));
        let leg = legacy.then(|| LegacyCfg::gen(e));
        let decoded = match (&ext, &leg) {
            (Some(c), _) => c.decode(),
            (_, Some(c)) => c.decode(),
            _ => unreachable!(),
        };
        let want = decoded.as_ref().map(requested).unwrap_or(1).min(8);
        let mut out = OutReplicas::gen(e, want);
        let mut out_len = SENTINEL_LEN;
        let null_len = e.chance(4);
        let mut token = SENTINEL_TOKEN;
        let null_token = e.chance(20);
        let mut slot = ErrSlot::gen(e);
        let (op, function) = match (upsert, legacy) {
            (false, false) => ("put_start", "mooncake_meta_put_start"),
            (true, false) => ("upsert_start", "mooncake_meta_upsert_start"),
            (false, true) => ("put_start_legacy", "mooncake_meta_put_start_legacy"),
            (true, true) => ("upsert_start_legacy", "mooncake_meta_upsert_start_legacy"),
        };
        let out_ptr = out.ptr();
        let len_ptr: *mut usize = if null_len { null_mut() } else { &mut out_len };
        let tok_ptr: *mut u64 = if null_token { null_mut() } else { &mut token };
        // SAFETY: every pointer is NULL or valid for what it declares.
        let st = unsafe {
            let (t, tl, k, kl) = (tenant.ptr(), tenant.len(), key.ptr(), key.len());
            match (&ext, &leg) {
                (Some(c), _) if upsert => mooncake_meta_upsert_start(
                    self.c,
                    client,
                    t,
                    tl,
                    k,
                    kl,
                    size,
                    c.ptr(),
                    out_ptr,
                    out.cap,
                    len_ptr,
                    tok_ptr,
                    slot.ptr(),
                ),
                (Some(c), _) => mooncake_meta_put_start(
                    self.c,
                    client,
                    t,
                    tl,
                    k,
                    kl,
                    size,
                    c.ptr(),
                    out_ptr,
                    out.cap,
                    len_ptr,
                    tok_ptr,
                    slot.ptr(),
                ),
                (_, Some(c)) if upsert => mooncake_meta_upsert_start_legacy(
                    self.c,
                    client,
                    t,
                    tl,
                    k,
                    kl,
                    size,
                    c.ptr(),
                    out_ptr,
                    out.cap,
                    len_ptr,
                    tok_ptr,
                    slot.ptr(),
                ),
                (_, Some(c)) => mooncake_meta_put_start_legacy(
                    self.c,
                    client,
                    t,
                    tl,
                    k,
                    kl,
                    size,
                    c.ptr(),
                    out_ptr,
                    out.cap,
                    len_ptr,
                    tok_ptr,
                    slot.ptr(),
                ),
                _ => unreachable!(),
            }
        };
        // The boundary's checks, in the order of ffi::write::start.
        let boundary = model_key(&tenant, &key).and_then(|k| {
            let cfg = decoded.clone()?;
            out.check()?;
            if null_len {
                return Err(ErrorKind::NullArgument);
            }
            Ok((k, cfg))
        });
        let changed = match boundary {
            Err(kind) => {
                self.expect(function, st, &Err(kind), &(&tenant, &key, &decoded));
                false
            }
            Ok(((t, k), cfg)) => {
                let key = Key::scoped(&t, &k);
                let pre = self
                    .twin
                    .validate_write_request(key, size, &cfg)
                    .map_err(|e| e.kind());
                if st == MOONCAKE_META_BUFFER_TOO_SMALL {
                    // Put: requested > cap. Upsert: the requested count or
                    // an in-place write's replicas exceed cap.
                    assert_eq!(
                        pre,
                        Ok(()),
                        "{function}: BUFFER_TOO_SMALL before validation"
                    );
                    assert!(
                        out_len > out.cap && out_len != SENTINEL_LEN,
                        "{function}: out_len"
                    );
                    if !upsert {
                        assert_eq!(out_len, requested(&cfg));
                    }
                    assert!(out.untouched() && token == SENTINEL_TOKEN);
                    if !upsert {
                        assert!(out.cap < requested(&cfg), "{function}: BUFFER_TOO_SMALL");
                    }
                    false
                } else {
                    let result: Result<StartedWrite, ErrorKind> = match pre {
                        Err(kind) => Err(kind),
                        Ok(()) if !upsert && out.cap < requested(&cfg) => {
                            Err(ErrorKind::BufferTooSmall)
                        }
                        Ok(()) if upsert => self
                            .twin
                            .upsert_start(client, key, size, &cfg)
                            .map_err(|e| e.kind()),
                        Ok(()) => self
                            .twin
                            .put_start(client, key, size, &cfg)
                            .map_err(|e| e.kind()),
                    };
                    let want = result.as_ref().map(drop).map_err(|k| *k);
                    self.expect(function, st, &want, &(&tenant, &key, &cfg, size));
                    match result {
                        Ok(w) => {
                            let d = descriptors(&w);
                            assert_eq!(out_len, d.len(), "{function}: out_len");
                            assert_eq!(&out.buf[..d.len()], &d[..], "{function}: replicas");
                            assert!(out.buf[d.len()..].iter().all(|r| *r == SENTINEL));
                            if !null_token {
                                assert_eq!(token, w.token, "{function}: token");
                            }
                            self.remember(w.token);
                            true
                        }
                        Err(_) => {
                            assert!(
                                out_len == SENTINEL_LEN
                                    && out.untouched()
                                    && token == SENTINEL_TOKEN,
                                "{function}: outputs written on failure"
                            );
                            false
                        }
                    }
                }
            }
        };
        self.outcome(op, function, st, &mut slot);
        changed
    }

    fn remember(&mut self, token: u64) {
        if self.tokens.len() < 64 {
            self.tokens.push(token);
        } else {
            self.tokens[(token % 64) as usize] = token;
        }
    }

    fn gen_token(&self, e: &mut impl Entropy) -> u64 {
        match e.below(4) {
            0 => 0,
            1 | 2 if !self.tokens.is_empty() => *e.pick(&self.tokens),
            _ => e.u64(),
        }
    }

    /// A key for calls that act on existing objects: mostly the pool.
    fn gen_existing_key(e: &mut impl Entropy) -> (Bytes, Bytes) {
        if e.chance(75) {
            let t = if e.chance(70) {
                Bytes::Null(0)
            } else {
                Bytes::Data(b"t1".to_vec())
            };
            (t, Bytes::Data(pool_key(e)))
        } else {
            (gen_tenant(e), gen_key(e))
        }
    }

    /// Batch Put/Upsert Start with one shared extended config.
    fn batch_start(&mut self, e: &mut impl Entropy, upsert: bool) -> bool {
        let (client, tenant) = gen_batch_caller(e, 70);
        let count = e.below(5) as usize;
        let (keys, key_ptrs, key_lens) = gen_batch_keys(e, count);
        let sizes: Vec<u64> = (0..count).map(|_| gen_size(e)).collect();
        let (null_keys, null_lens, null_sizes) = (e.chance(4), e.chance(4), e.chance(4));
        let cfg = ExtCfg::gen(e);
        let decoded = cfg.decode();
        let stride = decoded.as_ref().map(requested).unwrap_or(1).min(8);
        let mut out = OutReplicas::gen(e, count * stride);
        let mut counts = vec![SENTINEL_LEN; count.max(1)];
        let mut tokens = vec![SENTINEL_TOKEN; count.max(1)];
        let mut statuses = vec![i32::MIN; count.max(1)];
        let (null_counts, null_tokens, null_statuses) = (e.chance(4), e.chance(4), e.chance(4));
        let mut slot = ErrSlot::gen(e);
        let function = if upsert {
            "mooncake_meta_batch_upsert_start"
        } else {
            "mooncake_meta_batch_put_start"
        };
        let f = if upsert {
            mooncake_meta_batch_upsert_start
        } else {
            mooncake_meta_batch_put_start
        };
        let out_ptr = out.ptr();
        // SAFETY: every array is NULL or holds `count` entries (or the
        // capacity it declares).
        let st = unsafe {
            f(
                self.c,
                client,
                tenant.ptr(),
                tenant.len(),
                if null_keys { null() } else { key_ptrs.as_ptr() },
                if null_lens { null() } else { key_lens.as_ptr() },
                count,
                if null_sizes { null() } else { sizes.as_ptr() },
                cfg.ptr(),
                out_ptr,
                out.cap,
                if null_counts {
                    null_mut()
                } else {
                    counts.as_mut_ptr()
                },
                if null_tokens {
                    null_mut()
                } else {
                    tokens.as_mut_ptr()
                },
                if null_statuses {
                    null_mut()
                } else {
                    statuses.as_mut_ptr()
                },
                slot.ptr(),
            )
        };
        let op = if upsert {
            "batch_upsert_start"
        } else {
            "batch_put_start"
        };
        let some = count > 0;
        // The whole-batch checks, in the order of ffi::batch.
        let boundary = (|| {
            if null_statuses && some {
                return Err(ErrorKind::NullArgument);
            }
            let t = tenant.decode()?;
            let t = if t.is_empty() { "default".into() } else { t };
            if t.contains('\0') {
                return Err(ErrorKind::InvalidParams);
            }
            if (null_keys || null_lens) && some {
                return Err(ErrorKind::NullArgument);
            }
            let (ks, bad) = batch_keys(&keys)?;
            if null_sizes && some {
                return Err(ErrorKind::NullArgument);
            }
            let c = decoded.clone()?;
            out.check()?;
            if (null_counts || null_tokens) && some {
                return Err(ErrorKind::NullArgument);
            }
            model_check(&c)?;
            c.soft_pin
                .resolve(self.twin.config())
                .map_err(|e| e.kind())?;
            let stride = requested(&c);
            let needed = count.checked_mul(stride).ok_or(ErrorKind::InvalidParams)?;
            if needed > out.cap {
                return Err(ErrorKind::BufferTooSmall);
            }
            Ok((t, ks, bad, c, stride))
        })();
        let changed = match boundary {
            Err(kind) => {
                self.expect(function, st, &Err(kind), &(&tenant, &keys, &decoded));
                if !null_statuses {
                    assert!(statuses[..count].iter().all(|&s| s == st), "{function}");
                }
                assert!(out.untouched());
                assert!(counts.iter().all(|&c| c == SENTINEL_LEN));
                assert!(tokens.iter().all(|&t| t == SENTINEL_TOKEN));
                false
            }
            Ok((t, ks, bad, c, stride)) => {
                let ks: Vec<Key> = ks.iter().map(|k| Key::scoped(&t, k)).collect();
                let mut results: Vec<Option<Result<StartedWrite, ErrorKind>>> = if upsert {
                    ks.iter()
                        .zip(&sizes)
                        .enumerate()
                        .map(|(i, (k, &s))| {
                            (statuses[i] != MOONCAKE_META_BUFFER_TOO_SMALL).then(|| {
                                self.twin
                                    .upsert_start(client, *k, s, &c)
                                    .map_err(|e| e.kind())
                            })
                        })
                        .collect()
                } else {
                    self.twin
                        .batch_put_start(client, &ks, &sizes, &c)
                        .into_iter()
                        .map(|r| Some(r.map_err(|e| e.kind())))
                        .collect()
                };
                for (i, kind) in &bad {
                    results[*i] = Some(Err(*kind));
                }
                let mut first = MOONCAKE_META_OK;
                let mut any_ok = false;
                for (i, r) in results.into_iter().enumerate() {
                    let slots = &out.buf[i * stride..(i + 1) * stride];
                    match r {
                        None => {
                            // An in-place upsert with more replicas than
                            // the stride: nothing done to this key.
                            assert!(counts[i] > stride && tokens[i] == 0, "{function}");
                            assert!(slots.iter().all(|r| *r == SENTINEL));
                            assert!(self
                                .twin
                                .validate_write_request(ks[i], sizes[i], &c)
                                .is_ok());
                        }
                        Some(Ok(w)) => {
                            let d = descriptors(&w);
                            assert_eq!(statuses[i], MOONCAKE_META_OK, "{function}: key {i}");
                            assert_eq!(counts[i], d.len());
                            assert_eq!(tokens[i], w.token);
                            assert_eq!(&slots[..d.len()], &d[..]);
                            self.remember(w.token);
                            any_ok = true;
                        }
                        Some(Err(kind)) => {
                            assert_eq!(
                                status_name(statuses[i]),
                                status_name(code(kind)),
                                "{function}: key {i} ({:?})",
                                keys[i]
                            );
                            assert!(counts[i] == 0 && tokens[i] == 0);
                            assert!(slots.iter().all(|r| *r == SENTINEL));
                        }
                    }
                    if first == MOONCAKE_META_OK {
                        first = statuses[i];
                    }
                }
                assert_eq!(status_name(st), status_name(first), "{function}: return");
                any_ok
            }
        };
        self.outcome(op, function, st, &mut slot);
        changed
    }

    /// Put/Upsert End and Revoke with random selectors and tokens.
    fn end_revoke(&mut self, e: &mut impl Entropy) -> bool {
        let client = if e.chance(85) { C1 } else { C2 };
        let (tenant, key) = Self::gen_existing_key(e);
        let selector = gen_u32(e, &[0, 1, 2, 2, 2, 2, 2, 3, u32::MAX]);
        let token = self.gen_token(e);
        let mut slot = ErrSlot::gen(e);
        let which = e.below(4);
        let (function, f): (&str, unsafe extern "C" fn(_, _, _, _, _, _, _, _, _) -> _) =
            match which {
                0 => ("mooncake_meta_put_end", mooncake_meta_put_end),
                1 => ("mooncake_meta_upsert_end", mooncake_meta_upsert_end),
                2 => ("mooncake_meta_put_revoke", mooncake_meta_put_revoke),
                _ => ("mooncake_meta_upsert_revoke", mooncake_meta_upsert_revoke),
            };
        // SAFETY: key pointers valid for their lengths (or NULL).
        let st = unsafe {
            f(
                self.c,
                client,
                tenant.ptr(),
                tenant.len(),
                key.ptr(),
                key.len(),
                selector,
                token,
                slot.ptr(),
            )
        };
        let want = model_key(&tenant, &key).and_then(|(t, k)| {
            let sel = ReplicaSelector::from_raw(selector).ok_or(ErrorKind::InvalidParams)?;
            let k = Key::scoped(&t, &k);
            let tok = (token != 0).then_some(token);
            let r = if which < 2 {
                self.twin.put_end(client, k, sel, tok)
            } else {
                self.twin.put_revoke(client, k, sel, tok)
            };
            r.map_err(|e| e.kind())
        });
        self.expect(function, st, &want, &(&tenant, &key, selector, token));
        self.outcome("end_revoke", function, st, &mut slot);
        st == MOONCAKE_META_OK
    }

    /// Batch End/Revoke.
    fn batch_end(&mut self, e: &mut impl Entropy) -> bool {
        let (client, tenant) = gen_batch_caller(e, 80);
        let count = e.below(4) as usize;
        let (keys, key_ptrs, key_lens) = gen_batch_keys(e, count);
        let toks: Vec<u64> = (0..count).map(|_| self.gen_token(e)).collect();
        let null_tokens = e.chance(40);
        let null_statuses = e.chance(4);
        let selector = gen_u32(e, &[0, 1, 2, 2, 2, 3]);
        let mut statuses = vec![i32::MIN; count.max(1)];
        let mut slot = ErrSlot::gen(e);
        let revoke = e.chance(40);
        let (function, f) = if revoke {
            (
                "mooncake_meta_batch_put_revoke",
                mooncake_meta_batch_put_revoke
                    as unsafe extern "C" fn(*const _, _, _, _, _, _, _, _, _, _, _) -> _,
            )
        } else {
            (
                "mooncake_meta_batch_put_end",
                mooncake_meta_batch_put_end as _,
            )
        };
        // SAFETY: arrays hold `count` entries or are NULL.
        let st = unsafe {
            f(
                self.c,
                client,
                tenant.ptr(),
                tenant.len(),
                key_ptrs.as_ptr(),
                key_lens.as_ptr(),
                count,
                selector,
                if null_tokens { null() } else { toks.as_ptr() },
                if null_statuses {
                    null_mut()
                } else {
                    statuses.as_mut_ptr()
                },
                slot.ptr(),
            )
        };
        let some = count > 0;
        let boundary = (|| {
            if null_statuses && some {
                return Err(ErrorKind::NullArgument);
            }
            let t = tenant.decode()?;
            let t = if t.is_empty() { "default".into() } else { t };
            if t.contains('\0') {
                return Err(ErrorKind::InvalidParams);
            }
            let (ks, bad) = batch_keys(&keys)?;
            let sel = ReplicaSelector::from_raw(selector).ok_or(ErrorKind::InvalidParams)?;
            Ok((t, ks, bad, sel))
        })();
        let changed = match boundary {
            Err(kind) => {
                self.expect(function, st, &Err(kind), &(&tenant, &keys, selector));
                if !null_statuses {
                    assert!(statuses[..count].iter().all(|&s| s == st), "{function}");
                }
                false
            }
            Ok((t, ks, bad, sel)) => {
                let ks: Vec<Key> = ks.iter().map(|k| Key::scoped(&t, k)).collect();
                let tk = (!null_tokens).then_some(&toks[..]);
                let mut results = if revoke {
                    self.twin.batch_put_revoke(client, &ks, sel, tk)
                } else {
                    self.twin.batch_put_end(client, &ks, sel, tk)
                };
                for (i, kind) in &bad {
                    results[*i] = Err(Error::new(*kind, "a malformed batch key"));
                }
                let mut first = MOONCAKE_META_OK;
                for (i, r) in results.iter().enumerate() {
                    let want = expected_code(&r.as_ref().map(|_| ()).map_err(|e| e.kind()));
                    assert_eq!(
                        status_name(statuses[i]),
                        status_name(want),
                        "{function}: key {i}"
                    );
                    if first == MOONCAKE_META_OK {
                        first = want;
                    }
                }
                assert_eq!(status_name(st), status_name(first), "{function}: return");
                results.iter().any(|r| r.is_ok())
            }
        };
        self.outcome("batch_put_end", function, st, &mut slot);
        changed
    }

    /// Soft-pin deadline and pending intent, with NULL out-pointers.
    fn soft_pin_query(&mut self, e: &mut impl Entropy) {
        let (tenant, key) = Self::gen_existing_key(e);
        let mut slot = ErrSlot::gen(e);
        let (mut has, mut deadline, mut pending) = (-7 as c_int, SENTINEL_TOKEN, -7 as c_int);
        let (null_a, null_b) = (e.chance(5), e.chance(5));
        let k = model_key(&tenant, &key);
        if e.chance(50) {
            let function = "mooncake_meta_soft_pin_deadline";
            // SAFETY: pointers valid or NULL.
            let st = unsafe {
                mooncake_meta_soft_pin_deadline(
                    self.c,
                    tenant.ptr(),
                    tenant.len(),
                    key.ptr(),
                    key.len(),
                    if null_a { null_mut() } else { &mut has },
                    if null_b { null_mut() } else { &mut deadline },
                    slot.ptr(),
                )
            };
            let want = k.and_then(|(t, k)| {
                if null_a || null_b {
                    return Err(ErrorKind::NullArgument);
                }
                self.twin
                    .soft_pin_deadline(Key::scoped(&t, &k))
                    .map_err(|e| e.kind())
            });
            self.expect(
                function,
                st,
                &want.as_ref().map(drop).map_err(|k| *k),
                &(&tenant, &key),
            );
            match want {
                Ok(d) => assert_eq!((has, deadline), (d.is_some() as c_int, d.unwrap_or(0))),
                Err(_) => assert_eq!((has, deadline), (-7, SENTINEL_TOKEN)),
            }
            self.outcome("soft_pin_deadline", function, st, &mut slot);
        } else {
            let function = "mooncake_meta_has_pending_soft_pin";
            // SAFETY: pointers valid or NULL.
            let st = unsafe {
                mooncake_meta_has_pending_soft_pin(
                    self.c,
                    tenant.ptr(),
                    tenant.len(),
                    key.ptr(),
                    key.len(),
                    if null_a { null_mut() } else { &mut pending },
                    slot.ptr(),
                )
            };
            let want = k.and_then(|(t, k)| {
                if null_a {
                    return Err(ErrorKind::NullArgument);
                }
                self.twin
                    .has_pending_soft_pin(Key::scoped(&t, &k))
                    .map_err(|e| e.kind())
            });
            self.expect(
                function,
                st,
                &want.as_ref().map(drop).map_err(|k| *k),
                &(&tenant, &key),
            );
            match want {
                Ok(p) => assert_eq!(pending, p as c_int),
                Err(_) => assert_eq!(pending, -7),
            }
            self.outcome("has_pending_soft_pin", function, st, &mut slot);
        }
    }

    /// Mounts that cannot add a segment: re-mounts (OK or
    /// SEGMENT_ALREADY_EXISTS), unknown pools, bad names. A new segment
    /// would make placement depend on each master's random start.
    fn mount(&mut self, e: &mut impl Entropy) {
        let client = if e.chance(85) { C1 } else { C2 };
        let (name, mut base, mut pool) = match e.below(6) {
            0 | 1 => (
                Bytes::Data(b"mem0".to_vec()),
                MEM_BASE,
                MOONCAKE_META_POOL_MEMORY,
            ),
            2 => (
                Bytes::Data(b"ssd0".to_vec()),
                SSD_BASE,
                MOONCAKE_META_POOL_NOF_SSD,
            ),
            3 => (Bytes::Data(b"new0".to_vec()), 3 << 40, 2),
            4 => (Bytes::Null(1 + e.below(8) as usize), 3 << 40, 0),
            _ => (
                Bytes::Data(e.pick(&BAD_UTF8).to_vec()),
                3 << 40,
                MOONCAKE_META_POOL_MEMORY,
            ),
        };
        if e.chance(30) {
            base += 4096;
        }
        if e.chance(20) {
            pool = gen_u32(e, &[0, 1, 2, 3, u32::MAX]);
        }
        if matches!(&name, Bytes::Data(n) if n == b"new0") && pool < 2 {
            pool = 2 + e.below(1000) as u32;
        }
        let null_out = e.chance(5);
        let mut id = u32::MAX - 1;
        let mut slot = ErrSlot::gen(e);
        let function = "mooncake_meta_mount_segment";
        // SAFETY: name valid for its length or NULL; out valid or NULL.
        let st = unsafe {
            mooncake_meta_mount_segment(
                self.c,
                client,
                name.ptr(),
                name.len(),
                base,
                SEG_SIZE,
                pool,
                if null_out { null_mut() } else { &mut id },
                slot.ptr(),
            )
        };
        let want = name.decode().and_then(|n| {
            let pool = Pool::from_raw(pool).ok_or(ErrorKind::InvalidParams)?;
            if null_out {
                return Err(ErrorKind::NullArgument);
            }
            let spec = SegmentSpec {
                name: n,
                base,
                size: SEG_SIZE,
                pool,
            };
            self.twin.mount_segment(client, &spec).map_err(|e| e.kind())
        });
        self.expect(
            function,
            st,
            &want.as_ref().map(drop).map_err(|k| *k),
            &(&name, base, pool),
        );
        match want {
            Ok(twin_id) => assert_eq!(id, twin_id),
            Err(_) => assert_eq!(id, u32::MAX - 1),
        }
        self.outcome("mount_segment", function, st, &mut slot);
    }

    /// Time passes on both masters, then a maintenance tick on both.
    fn advance(&mut self, e: &mut impl Entropy) {
        let by = e.below(2 * MAX_TTL);
        let mut now = SENTINEL_TOKEN;
        let null_now = e.chance(20);
        let mut slot = ErrSlot::gen(e);
        let function = "mooncake_meta_master_advance_time";
        // SAFETY: out valid or NULL.
        let st = unsafe {
            mooncake_meta_master_advance_time(
                self.c,
                by,
                if null_now { null_mut() } else { &mut now },
                slot.ptr(),
            )
        };
        let want = self.twin.advance_time(by).map_err(|e| e.kind());
        self.expect(function, st, &want.as_ref().map(drop).map_err(|k| *k), &by);
        if !null_now {
            assert_eq!(Ok(now), want);
        }
        self.outcome("advance_time", function, st, &mut slot);
        self.cm().run_maintenance_tick();
        self.twin.run_maintenance_tick();
    }
}

/// Up to `max_cases` cases from `e` against a fresh harness (stops early
/// when `e` runs dry). Returns the harness's tally.
pub fn run(e: &mut impl Entropy, max_cases: u64) -> (u64, Tally) {
    let mut h = Harness::new();
    while h.cases < max_cases && !e.drained() {
        h.case(e);
    }
    h.cm().check_invariants().expect("C master invariants");
    h.twin.check_invariants().expect("twin invariants");
    (h.cases, h.tally.clone())
}
