//! A safe layer over the raw declarations that mirrors the core crate
//! (`mooncake_meta_core`): the same type names, method names, argument and
//! return shapes, and an [`Error`] with the same [`ErrorKind`]s, so a
//! program moves between linking the C library and compiling the core in
//! by changing one `use` line:
//!
//! ```no_run
//! use mooncake_meta_sys::safe as mm; // or: use mooncake_meta_core as mm;
//! use mm::*;
//! let m = Master::new(MasterConfig::deterministic(1_000)).unwrap();
//! m.mount_segment(1, &SegmentSpec { name: "seg0".into(), base: 0x1000, size: 1 << 20, pool: Pool::Memory }).unwrap();
//! let cfg = WriteConfig::default().with_soft_pin(SoftPinRequest::enable_for(60_000));
//! m.put_start(1, Key::new("k"), 4096, &cfg).unwrap();
//! m.put_end(1, Key::new("k"), ReplicaSelector::All, None).unwrap();
//! assert_eq!(m.soft_pin_deadline(Key::new("k")).unwrap(), Some(61_000));
//! assert_eq!(m.run_cleanup_at(61_000).expired, 1);
//! ```
//!
//! Each method is one C call (a few when a caller-sized array turns out too
//! small, or a batch spans several tenants), so the C ABI's rules apply: see
//! the header's documentation of the function of the same name, and
//! docs/CONTRACT.md. Where the two differ — messages name the C function;
//! what the C ABI cannot express — the crate's README.md says so.
//!
//! Beyond the core's API this layer has the C-only calls: the legacy write
//! configuration ([`LegacyConfig`], `put_start_legacy`,
//! `upsert_start_legacy`), `snapshot_save`, `restore_files`,
//! [`Master::as_ptr`] for raw calls, [`version`] and [`abi_version`].

use crate::*;
use std::ffi::{c_char, c_int, CStr, CString};
use std::fmt;
use std::path::Path;
use std::ptr::{self, NonNull};

pub use config::{LegacyConfig, MasterConfig, WriteConfig};
pub use error::{Error, ErrorKind, Result};
pub use journal::{ApplyReport, PromoteReport};
pub use maintenance::{CleanupStats, EvictionReport, MetricsSnapshot, RestoreReport, SegmentUsage};
pub use master::UnmountReport;
pub use read::{Bounded, KeyPage};
pub use soft_pin::{SoftPinAction, SoftPinIntent, SoftPinRequest};

use error::{call, infallible};

/// Milliseconds since the Unix epoch.
pub type Instant = u64;

/// The largest instant: deadlines saturate here and never become due.
pub const MAX_INSTANT: Instant = i64::MAX as u64;

/// The largest [`MasterConfig::expected_objects`] (2^32).
pub const MAX_EXPECTED_OBJECTS: u64 = crate::MOONCAKE_META_MAX_EXPECTED_OBJECTS;

/// The largest [`MasterConfig::journal_capacity_bytes`] (2^40).
pub const MAX_JOURNAL_CAPACITY_BYTES: u64 = crate::MOONCAKE_META_MAX_JOURNAL_CAPACITY_BYTES;

/// A client (writer / segment owner).
pub type ClientId = u64;

/// Dense per-master segment number (stable while the segment is mounted).
pub type SegmentId = u32;

/// The tenant used when a caller names none.
pub const DEFAULT_TENANT: &str = "default";

/// Which clock a master reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockSource {
    /// The master's timeline: anchored to the operating system's wall clock
    /// when the master is created, then advanced by the monotonic clock, so
    /// a wall-clock step changes no lifetime. (The core's
    /// `SystemWithWall`, a wall read from a Rust closure, has no C form.)
    System,
    /// A clock that only moves when told to, starting at the given instant.
    Manual { start_ms: Instant },
}

/// The name of a status code without the prefix (`"OK"`, `"PANIC"`), or
/// `"UNKNOWN_STATUS"`.
pub fn status_name(status: mooncake_meta_status) -> &'static str {
    // SAFETY: the library returns a static NUL-terminated ASCII string.
    unsafe { static_str(mooncake_meta_status_name(status)) }
}

/// The running library's version, `"MAJOR.MINOR.PATCH"`.
pub fn version() -> &'static str {
    // SAFETY: as `status_name`.
    unsafe { static_str(mooncake_meta_version()) }
}

/// The running library's ABI major version (compare with
/// [`MOONCAKE_META_ABI_VERSION`]).
pub fn abi_version() -> u32 {
    // SAFETY: no arguments.
    unsafe { mooncake_meta_abi_version() }
}

/// # Safety
/// `p` must be a static NUL-terminated string.
unsafe fn static_str(p: *const c_char) -> &'static str {
    // SAFETY: forwarded.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .unwrap_or("<not UTF-8>")
}

/// A NUL-terminated copy of a name the C ABI takes as a C string. A NUL
/// inside is the core's own error for the name.
fn c_string(what: &str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::invalid(format!("{what} must not contain NUL")))
}

/// NUL-terminated copies of the preferred segment names the C ABI can
/// carry. A name with a NUL byte is left out: no mounted segment has one
/// (mount refuses it), and the core skips a preferred name no mounted
/// segment has, with no other effect, so the placement is the same.
fn preferred_c_strings<S: AsRef<str>>(list: &[S]) -> Vec<CString> {
    list.iter()
        .filter_map(|s| CString::new(s.as_ref()).ok())
        .collect()
}

fn path_string(what: &str, path: &Path) -> Result<CString> {
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes = path
        .to_str()
        .ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidUtf8,
                format!("{what} is not UTF-8: {path:?}"),
            )
        })?
        .as_bytes()
        .to_vec();
    CString::new(bytes).map_err(|_| Error::invalid(format!("{what} contains a NUL byte: {path:?}")))
}

fn pointers(strings: &[CString]) -> Vec<*const c_char> {
    strings.iter().map(|s| s.as_ptr()).collect()
}

/// NULL for an empty array (the C ABI's `(NULL, 0)`), else its start.
fn array_ptr<T>(v: &[T]) -> *const T {
    if v.is_empty() {
        ptr::null()
    } else {
        v.as_ptr()
    }
}

/// A C `uint64_t` count of bytes or entries as the core's `usize`:
/// saturated where `usize` is narrower (a 32-bit target), never truncated
/// to a small wrong value.
fn saturating_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// Names (tenants, groups, segments) are non-empty and NUL-free (the
/// core's rule and messages).
pub fn validate_name(what: &str, name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid(format!("{what} must not be empty")));
    }
    if name.contains('\0') {
        return Err(Error::invalid(format!("{what} must not contain NUL")));
    }
    Ok(())
}

/// A tenant-scoped object key borrowed from the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key<'a> {
    pub tenant: &'a str,
    pub key: &'a str,
}

impl<'a> Key<'a> {
    /// A key in the default tenant.
    pub const fn new(key: &'a str) -> Self {
        Key {
            tenant: DEFAULT_TENANT,
            key,
        }
    }

    pub const fn scoped(tenant: &'a str, key: &'a str) -> Self {
        Key { tenant, key }
    }

    /// Rejects empty keys and tenants, and tenants containing NUL (the
    /// core's rule; checked here because the C ABI reads an empty tenant
    /// as the default one).
    pub fn validate(&self) -> Result<()> {
        if self.key.is_empty() {
            return Err(Error::invalid("key must not be empty"));
        }
        validate_name("tenant", self.tenant)
    }

    fn tenant_ptr(&self) -> *const c_char {
        self.tenant.as_ptr().cast()
    }

    fn key_ptr(&self) -> *const c_char {
        self.key.as_ptr().cast()
    }
}

impl<'a> From<&'a str> for Key<'a> {
    fn from(key: &'a str) -> Self {
        Key::new(key)
    }
}

/// Where a replica lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ReplicaKind {
    /// A buffer in a memory segment.
    Memory = 0,
    /// A buffer in a second-pool segment (upstream NOF_SSD).
    NofSsd = 1,
    /// A file on a client's local disk; source of promotion.
    LocalDisk = 2,
}

impl ReplicaKind {
    pub fn from_raw(v: u32) -> Option<Self> {
        match v {
            MOONCAKE_META_REPLICA_MEMORY => Some(ReplicaKind::Memory),
            MOONCAKE_META_REPLICA_NOF_SSD => Some(ReplicaKind::NofSsd),
            MOONCAKE_META_REPLICA_LOCAL_DISK => Some(ReplicaKind::LocalDisk),
            _ => None,
        }
    }
}

/// Whether a replica's data is written yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ReplicaStatus {
    Processing = 0,
    Complete = 1,
}

/// Which replicas an End or Revoke targets (`MOONCAKE_META_SELECT_*`).
/// `All` is MEMORY ∪ NOF_SSD.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ReplicaSelector {
    Memory = 0,
    NofSsd = 1,
    All = 2,
}

impl ReplicaSelector {
    pub fn from_raw(v: u32) -> Option<Self> {
        match v {
            MOONCAKE_META_SELECT_MEMORY => Some(ReplicaSelector::Memory),
            MOONCAKE_META_SELECT_NOF_SSD => Some(ReplicaSelector::NofSsd),
            MOONCAKE_META_SELECT_ALL => Some(ReplicaSelector::All),
            _ => None,
        }
    }

    /// Whether this selector targets replicas of `kind`.
    #[inline]
    pub fn matches(self, kind: ReplicaKind) -> bool {
        match self {
            ReplicaSelector::Memory => kind == ReplicaKind::Memory,
            ReplicaSelector::NofSsd => kind == ReplicaKind::NofSsd,
            ReplicaSelector::All => kind != ReplicaKind::LocalDisk,
        }
    }

    fn raw(self) -> u32 {
        match self {
            ReplicaSelector::Memory => MOONCAKE_META_SELECT_MEMORY,
            ReplicaSelector::NofSsd => MOONCAKE_META_SELECT_NOF_SSD,
            ReplicaSelector::All => MOONCAKE_META_SELECT_ALL,
        }
    }
}

/// The pool a segment belongs to (`MOONCAKE_META_POOL_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Pool {
    Memory = 0,
    NofSsd = 1,
}

impl Pool {
    pub fn from_raw(v: u32) -> Option<Self> {
        match v {
            MOONCAKE_META_POOL_MEMORY => Some(Pool::Memory),
            MOONCAKE_META_POOL_NOF_SSD => Some(Pool::NofSsd),
            _ => None,
        }
    }

    pub fn replica_kind(self) -> ReplicaKind {
        match self {
            Pool::Memory => ReplicaKind::Memory,
            Pool::NofSsd => ReplicaKind::NofSsd,
        }
    }

    fn raw(self) -> u32 {
        match self {
            Pool::Memory => MOONCAKE_META_POOL_MEMORY,
            Pool::NofSsd => MOONCAKE_META_POOL_NOF_SSD,
        }
    }
}

/// A segment a client mounts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentSpec {
    pub name: String,
    pub base: u64,
    pub size: u64,
    pub pool: Pool,
}

/// Where a replica's bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Location {
    /// `size` bytes at `address` inside segment `segment`.
    Buffer {
        segment: SegmentId,
        address: u64,
        size: u64,
    },
    /// A file held by the client that registered it.
    LocalDisk { client: ClientId, size: u64 },
}

/// One replica as the master reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReplicaDescriptor {
    pub id: u64,
    pub kind: ReplicaKind,
    pub status: ReplicaStatus,
    pub location: Location,
}

impl ReplicaDescriptor {
    /// The descriptor of a raw replica; `INTERNAL_ERROR` for a kind or
    /// status this crate does not know (a newer library).
    fn from_raw(r: &mooncake_meta_replica) -> Result<Self> {
        let kind = ReplicaKind::from_raw(r.kind).ok_or_else(|| {
            Error::new(
                ErrorKind::Internal,
                format!("replica {}: unknown kind {}", r.id, r.kind),
            )
        })?;
        let status = match r.status {
            MOONCAKE_META_REPLICA_PROCESSING => ReplicaStatus::Processing,
            MOONCAKE_META_REPLICA_COMPLETE => ReplicaStatus::Complete,
            other => {
                return Err(Error::new(
                    ErrorKind::Internal,
                    format!("replica {}: unknown status {other}", r.id),
                ))
            }
        };
        let location = match kind {
            ReplicaKind::LocalDisk => Location::LocalDisk {
                client: r.client,
                size: r.size,
            },
            _ => Location::Buffer {
                segment: r.segment_id,
                address: r.address,
                size: r.size,
            },
        };
        Ok(ReplicaDescriptor {
            id: r.id,
            kind,
            status,
            location,
        })
    }
}

fn descriptors(raw: &[mooncake_meta_replica]) -> Result<Vec<ReplicaDescriptor>> {
    raw.iter().map(ReplicaDescriptor::from_raw).collect()
}

/// What a Start returns: the staged replicas and the write's token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartedWrite {
    pub replicas: Vec<ReplicaDescriptor>,
    pub token: u64,
}

/// A buffer owned by the library (a snapshot, Prometheus text), freed on
/// drop.
struct Bytes {
    raw: NonNull<mooncake_meta_bytes>,
}

impl Bytes {
    /// Takes over a buffer a call returned.
    fn new(raw: *mut mooncake_meta_bytes, function: &str) -> Result<Bytes> {
        NonNull::new(raw).map(|raw| Bytes { raw }).ok_or_else(|| {
            Error::new(
                ErrorKind::Internal,
                format!("{function} succeeded without a buffer"),
            )
        })
    }

    fn as_slice(&self) -> &[u8] {
        // SAFETY: the buffer is live; its data is valid for its length
        // until it is freed, which needs ownership.
        unsafe {
            let p = self.raw.as_ptr();
            let len = mooncake_meta_bytes_len(p);
            if len == 0 {
                return &[];
            }
            std::slice::from_raw_parts(mooncake_meta_bytes_data(p), len)
        }
    }
}

impl Drop for Bytes {
    fn drop(&mut self) {
        // SAFETY: owned and live.
        unsafe { mooncake_meta_bytes_free(self.raw.as_ptr()) }
    }
}

/// Calls `f(buf, cap, out_len)` with a buffer of `cap` entries, growing it
/// to what the library asks for as long as it answers BUFFER_TOO_SMALL.
fn fill<T: Copy + Default>(
    cap: usize,
    mut f: impl FnMut(*mut T, usize, &mut usize, *mut *mut mooncake_meta_error) -> mooncake_meta_status,
) -> Result<Vec<T>> {
    let mut cap = cap.min(INITIAL_SLOTS_MAX);
    loop {
        match fill_bounded(cap, &mut f)? {
            Bounded::Fits(v) => return Ok(v),
            Bounded::TooSmall(need) => cap = need,
        }
    }
}

/// Largest buffer allocated up front from a caller's number (a request, a
/// `max`): beyond it the buffer grows only to what the library asks for,
/// which counts things the master holds.
const INITIAL_SLOTS_MAX: usize = 1 << 16;

/// As [`fill`] for a caller with room for `max` entries: `TooSmall(n)` when
/// the library needs `n > max`.
fn fill_upto<T: Copy + Default>(
    max: usize,
    mut f: impl FnMut(*mut T, usize, &mut usize, *mut *mut mooncake_meta_error) -> mooncake_meta_status,
) -> Result<Bounded<Vec<T>>> {
    let mut cap = max.min(INITIAL_SLOTS_MAX);
    loop {
        match fill_bounded(cap, &mut f)? {
            Bounded::TooSmall(need) if need <= max && need > cap => cap = need,
            other => return Ok(other),
        }
    }
}

/// One call of `f` with room for `cap` entries: the entries, or
/// `TooSmall(n)` when the library answers BUFFER_TOO_SMALL asking for more.
fn fill_bounded<T: Copy + Default>(
    cap: usize,
    f: &mut impl FnMut(*mut T, usize, &mut usize, *mut *mut mooncake_meta_error) -> mooncake_meta_status,
) -> Result<Bounded<Vec<T>>> {
    let mut buf = vec![T::default(); cap];
    let mut len = 0usize;
    let ptr = if cap == 0 {
        ptr::null_mut()
    } else {
        buf.as_mut_ptr()
    };
    match call(|err| f(ptr, cap, &mut len, err)) {
        Ok(()) => {
            buf.truncate(len);
            Ok(Bounded::Fits(buf))
        }
        Err(e) if e.kind() == ErrorKind::BufferTooSmall && len > cap => Ok(Bounded::TooSmall(len)),
        Err(e) => Err(e),
    }
}

/// A metadata master (`mooncake_meta_master`), freed on drop (which stops
/// its maintenance thread). Every method may run concurrently from any
/// number of threads.
pub struct Master {
    raw: NonNull<mooncake_meta_master>,
    config: MasterConfig,
}

impl fmt::Debug for Master {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Master")
            .field("raw", &self.raw)
            .field("config", &self.config)
            .finish()
    }
}

// SAFETY: every operation of the C ABI may run concurrently on one master,
// except `_free`, which drop runs with `&mut self` (no other borrow).
unsafe impl Send for Master {}
// SAFETY: as above.
unsafe impl Sync for Master {}

impl Drop for Master {
    fn drop(&mut self) {
        // SAFETY: owned, live, and no other call can run (`&mut self`).
        unsafe { mooncake_meta_master_free(self.raw.as_ptr()) }
    }
}

/// A key-taking call: `$f(m, tenant, tenant_len, key, key_len, rest..., err)`,
/// after the core's key check.
macro_rules! with_key {
    ($self:ident, $f:ident, $key:ident $(, $arg:expr)*) => {
        $key.validate().and_then(|()| {
            // SAFETY: the master is live; the key strings and every
            // argument outlive the call.
            call(|err| unsafe {
                $f(
                    $self.raw.as_ptr(),
                    $key.tenant_ptr(),
                    $key.tenant.len(),
                    $key.key_ptr(),
                    $key.key.len(),
                    $($arg,)*
                    err,
                )
            })
        })
    };
}

/// A client-and-key call: `$f(m, client, tenant, tenant_len, key, key_len, rest..., err)`.
macro_rules! with_client_key {
    ($self:ident, $f:ident, $client:expr, $key:ident $(, $arg:expr)*) => {
        $key.validate().and_then(|()| {
            // SAFETY: as `with_key`.
            call(|err| unsafe {
                $f(
                    $self.raw.as_ptr(),
                    $client,
                    $key.tenant_ptr(),
                    $key.tenant.len(),
                    $key.key_ptr(),
                    $key.key.len(),
                    $($arg,)*
                    err,
                )
            })
        })
    };
}

// Declared after the macros, which they use.
mod batch;
mod config;
mod error;
pub mod journal;
mod maintenance;
mod master;
mod read;
mod replication;
mod retention;
mod soft_pin;

#[cfg(test)]
mod tests {
    use super::*;

    // On a 64-bit target every u64 fits; where usize is narrower, a value
    // above usize::MAX saturates instead of wrapping (`as usize` would turn
    // 2^32 + 5 into 5).
    #[test]
    fn counts_saturate_instead_of_truncating() {
        for n in [0, 5, u64::from(u32::MAX), (1u64 << 32) + 5, u64::MAX] {
            let expected = if n > usize::MAX as u64 {
                usize::MAX
            } else {
                n as usize
            };
            assert_eq!(saturating_usize(n), expected, "{n}");
        }
    }
}
