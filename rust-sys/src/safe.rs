//! A thin safe layer over the raw declarations: RAII handles ([`Master`],
//! [`Config`], [`Bytes`]), `Result`s carrying the library's code and message
//! ([`Error`]), and Rust-side forms of the two write configurations
//! ([`WriteConfig`] with the explicit soft-pin action and TTL,
//! [`LegacyConfig`] with upstream's `with_soft_pin` bool).
//!
//! Each method is one C call (two when a caller-sized array turns out too
//! small and the call is retried with the size the library asked for), so
//! the C ABI's rules apply unchanged: see the header's documentation of the
//! function of the same name. Raw output structs (replicas, reports,
//! metrics) are returned as they are.
//!
//! ```no_run
//! use mooncake_meta_sys::safe::*;
//! let m = Master::deterministic(1_000).unwrap();
//! m.mount_segment(1, "seg0", 0x1000, 1 << 20, Pool::Memory).unwrap();
//! let cfg = WriteConfig::default().soft_pin(SoftPinAction::Enable, Some(60_000));
//! let start = m.put_start(1, Key::new("k"), 4096, &cfg).unwrap();
//! m.put_end(1, Key::new("k"), Selector::All, Some(start.token)).unwrap();
//! assert_eq!(m.soft_pin_deadline(Key::new("k")).unwrap(), Some(61_000));
//! ```

use crate::*;
use std::ffi::{c_char, c_int, CStr, CString};
use std::fmt;
use std::path::Path;
use std::ptr::{self, NonNull};

/// A failed call: the library's status code (a negative `MOONCAKE_META_*`)
/// and the message of its error object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    code: mooncake_meta_status,
    message: String,
}

impl Error {
    /// The status code, one of the negative `MOONCAKE_META_*` constants.
    pub fn code(&self) -> mooncake_meta_status {
        self.code
    }

    /// The library's message (it names the function and the argument).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The code's name without the prefix (`"OBJECT_NOT_FOUND"`).
    pub fn status_name(&self) -> &'static str {
        status_name(self.code)
    }

    /// An error this layer raises before calling the library (a Rust string
    /// that cannot become a C string).
    fn local(code: mooncake_meta_status, message: String) -> Error {
        Error { code, message }
    }

    /// Takes over the error object `err` of a call that returned `status`.
    ///
    /// # Safety
    /// `err` must be NULL or an unfreed error object; it is freed here.
    unsafe fn take(status: mooncake_meta_status, err: *mut mooncake_meta_error) -> Error {
        if err.is_null() {
            return Error {
                code: status,
                message: status_name(status).to_string(),
            };
        }
        // SAFETY: `err` is a live error object, freed once, after its
        // message was copied.
        unsafe {
            let code = mooncake_meta_error_code(err);
            let message = CStr::from_ptr(mooncake_meta_error_message(err))
                .to_string_lossy()
                .into_owned();
            mooncake_meta_error_free(err);
            Error { code, message }
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.status_name(),
            self.code,
            self.message
        )
    }
}

impl std::error::Error for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Runs one raw call with an error out-parameter and maps its status.
fn call(f: impl FnOnce(*mut *mut mooncake_meta_error) -> mooncake_meta_status) -> Result<()> {
    let mut err: *mut mooncake_meta_error = ptr::null_mut();
    let status = f(&mut err);
    if status == MOONCAKE_META_OK {
        return Ok(());
    }
    // SAFETY: on failure `err` is NULL or a new error object owned by us.
    Err(unsafe { Error::take(status, err) })
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

fn c_string(arg: &str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| {
        Error::local(
            MOONCAKE_META_INVALID_PARAMS,
            format!("{arg} contains a NUL byte: {s:?}"),
        )
    })
}

fn c_strings(arg: &str, list: &[&str]) -> Result<Vec<CString>> {
    list.iter().map(|s| c_string(arg, s)).collect()
}

fn path_string(arg: &str, path: &Path) -> Result<CString> {
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes = path
        .to_str()
        .ok_or_else(|| {
            Error::local(
                MOONCAKE_META_INVALID_UTF8,
                format!("{arg} is not UTF-8: {path:?}"),
            )
        })?
        .as_bytes()
        .to_vec();
    CString::new(bytes).map_err(|_| {
        Error::local(
            MOONCAKE_META_INVALID_PARAMS,
            format!("{arg} contains a NUL byte: {path:?}"),
        )
    })
}

fn pointers(strings: &[CString]) -> Vec<*const c_char> {
    strings.iter().map(|s| s.as_ptr()).collect()
}

/// A key: `tenant` (`""` is the default tenant) and the key within it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key<'a> {
    pub tenant: &'a str,
    pub key: &'a str,
}

impl<'a> Key<'a> {
    /// A key of the default tenant.
    pub fn new(key: &'a str) -> Self {
        Key { tenant: "", key }
    }

    /// A key of `tenant`.
    pub fn scoped(tenant: &'a str, key: &'a str) -> Self {
        Key { tenant, key }
    }

    fn tenant_ptr(&self) -> *const c_char {
        self.tenant.as_ptr().cast()
    }

    fn key_ptr(&self) -> *const c_char {
        self.key.as_ptr().cast()
    }
}

/// A segment pool (`MOONCAKE_META_POOL_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pool {
    Memory,
    NofSsd,
}

impl Pool {
    pub fn raw(self) -> u32 {
        match self {
            Pool::Memory => MOONCAKE_META_POOL_MEMORY,
            Pool::NofSsd => MOONCAKE_META_POOL_NOF_SSD,
        }
    }
}

/// Which replicas an End/Revoke completes (`MOONCAKE_META_SELECT_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selector {
    Memory,
    NofSsd,
    All,
}

impl Selector {
    pub fn raw(self) -> u32 {
        match self {
            Selector::Memory => MOONCAKE_META_SELECT_MEMORY,
            Selector::NofSsd => MOONCAKE_META_SELECT_NOF_SSD,
            Selector::All => MOONCAKE_META_SELECT_ALL,
        }
    }
}

/// The soft-pin action of a write (`MOONCAKE_META_SOFT_PIN_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SoftPinAction {
    /// Keep an unexpired committed deadline (the default).
    #[default]
    Preserve,
    /// Start a new soft-pin lifetime when the write first becomes readable.
    Enable,
    /// Remove the committed deadline when the write first becomes readable.
    Disable,
}

impl SoftPinAction {
    pub fn raw(self) -> u32 {
        match self {
            SoftPinAction::Preserve => MOONCAKE_META_SOFT_PIN_PRESERVE,
            SoftPinAction::Enable => MOONCAKE_META_SOFT_PIN_ENABLE,
            SoftPinAction::Disable => MOONCAKE_META_SOFT_PIN_DISABLE,
        }
    }
}

/// The extended write configuration (`mooncake_meta_write_config`) in Rust
/// form. The action and TTL are passed as given: a TTL with an action other
/// than `Enable`, or above the master's maximum, is the library's
/// `MOONCAKE_META_INVALID_PARAMS`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteConfig<'a> {
    pub memory_replicas: u32,
    pub nof_ssd_replicas: u32,
    pub hard_pin: bool,
    pub soft_pin_action: SoftPinAction,
    /// `Some` sets `MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL`; `None` with
    /// `Enable` takes the master's default TTL.
    pub soft_pin_ttl_ms: Option<u64>,
    pub preferred_segments: Vec<&'a str>,
    pub group: Option<&'a str>,
}

impl Default for WriteConfig<'_> {
    /// The library's defaults: one memory replica, PRESERVE, no hard pin.
    fn default() -> Self {
        WriteConfig {
            memory_replicas: 1,
            nof_ssd_replicas: 0,
            hard_pin: false,
            soft_pin_action: SoftPinAction::Preserve,
            soft_pin_ttl_ms: None,
            preferred_segments: Vec::new(),
            group: None,
        }
    }
}

impl<'a> WriteConfig<'a> {
    /// This configuration with the soft-pin action and TTL set.
    pub fn soft_pin(mut self, action: SoftPinAction, ttl_ms: Option<u64>) -> Self {
        self.soft_pin_action = action;
        self.soft_pin_ttl_ms = ttl_ms;
        self
    }

    /// The replicas a start asks for (the capacity its output needs).
    fn requested(&self) -> usize {
        (self.memory_replicas as usize + self.nof_ssd_replicas as usize).max(1)
    }

    /// The raw struct, starting from `mooncake_meta_write_config_init` so
    /// fields this layer does not know keep the library's defaults.
    fn to_raw(&self) -> Result<RawWriteConfig> {
        let mut raw = mooncake_meta_write_config::default();
        call(|err| {
            // SAFETY: `raw` is valid for writing its size.
            unsafe {
                mooncake_meta_write_config_init(
                    &mut raw,
                    std::mem::size_of::<mooncake_meta_write_config>(),
                    err,
                )
            }
        })?;
        let segments = c_strings("preferred segment", &self.preferred_segments)?;
        let segment_ptrs = pointers(&segments);
        let group = self.group.map(|g| c_string("group", g)).transpose()?;
        raw.flags = if self.hard_pin {
            MOONCAKE_META_WRITE_HARD_PIN
        } else {
            0
        };
        raw.soft_pin_action = self.soft_pin_action.raw();
        if let Some(ttl) = self.soft_pin_ttl_ms {
            raw.flags |= MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL;
            raw.soft_pin_ttl_ms = ttl;
        }
        raw.memory_replicas = self.memory_replicas;
        raw.nof_ssd_replicas = self.nof_ssd_replicas;
        raw.preferred_segments = if segment_ptrs.is_empty() {
            ptr::null()
        } else {
            segment_ptrs.as_ptr()
        };
        raw.preferred_segments_count = segment_ptrs.len();
        raw.group = group.as_ref().map_or(ptr::null(), |g| g.as_ptr());
        Ok(RawWriteConfig {
            raw,
            _segments: segments,
            _segment_ptrs: segment_ptrs,
            _group: group,
        })
    }

    /// Checks this configuration as a start would, except for what depends
    /// on a master (`mooncake_meta_write_config_validate`).
    pub fn validate(&self) -> Result<()> {
        let raw = self.to_raw()?;
        // SAFETY: `raw` and the strings it points to live across the call.
        call(|err| unsafe { mooncake_meta_write_config_validate(&raw.raw, err) })
    }
}

/// A raw write configuration with the strings it points to.
struct RawWriteConfig {
    raw: mooncake_meta_write_config,
    _segments: Vec<CString>,
    _segment_ptrs: Vec<*const c_char>,
    _group: Option<CString>,
}

/// The legacy write configuration (`mooncake_meta_replicate_config`,
/// upstream's `mooncake_replicate_config`): `with_soft_pin` is ENABLE with
/// the master's default TTL, `false` is PRESERVE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyConfig<'a> {
    pub replica_num: usize,
    pub with_soft_pin: bool,
    pub with_hard_pin: bool,
    pub preferred_segments: Vec<&'a str>,
}

impl Default for LegacyConfig<'_> {
    /// One memory replica, no soft pin (PRESERVE), no hard pin.
    fn default() -> Self {
        LegacyConfig {
            replica_num: 1,
            with_soft_pin: false,
            with_hard_pin: false,
            preferred_segments: Vec::new(),
        }
    }
}

impl LegacyConfig<'_> {
    fn to_raw(&self) -> Result<RawLegacyConfig> {
        let segments = c_strings("preferred segment", &self.preferred_segments)?;
        let mut segment_ptrs = pointers(&segments);
        let raw = mooncake_meta_replicate_config {
            replica_num: self.replica_num,
            with_soft_pin: c_int::from(self.with_soft_pin),
            with_hard_pin: c_int::from(self.with_hard_pin),
            preferred_segments: if segment_ptrs.is_empty() {
                ptr::null_mut()
            } else {
                segment_ptrs.as_mut_ptr()
            },
            preferred_segments_count: segment_ptrs.len(),
        };
        Ok(RawLegacyConfig {
            raw,
            _segments: segments,
            _segment_ptrs: segment_ptrs,
        })
    }

    /// `mooncake_meta_replicate_config_validate`.
    pub fn validate(&self) -> Result<()> {
        let raw = self.to_raw()?;
        // SAFETY: `raw` and its strings live across the call.
        call(|err| unsafe { mooncake_meta_replicate_config_validate(&raw.raw, err) })
    }
}

struct RawLegacyConfig {
    raw: mooncake_meta_replicate_config,
    _segments: Vec<CString>,
    _segment_ptrs: Vec<*const c_char>,
}

/// A master configuration (`mooncake_meta_config`), freed on drop.
#[derive(Debug)]
pub struct Config {
    raw: NonNull<mooncake_meta_config>,
}

// SAFETY: the configuration is internally locked; only `_free` (drop, with
// `&mut self`) must not race, which ownership guarantees.
unsafe impl Send for Config {}
// SAFETY: as above.
unsafe impl Sync for Config {}

macro_rules! config_setters {
    ($($(#[$doc:meta])* $name:ident => $raw:ident($ty:ty);)*) => {
        $(
            $(#[$doc])*
            pub fn $name(&mut self, value: $ty) -> Result<&mut Self> {
                // SAFETY: `self.raw` is live.
                call(|err| unsafe { $raw(self.raw.as_ptr(), value, err) })?;
                Ok(self)
            }
        )*
    };
}

impl Config {
    /// The documented defaults (system clock, background tasks on).
    pub fn new() -> Result<Self> {
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is valid for writing one pointer.
        call(|err| unsafe { mooncake_meta_config_new(&mut raw, err) })?;
        Ok(Config {
            raw: NonNull::new(raw).expect("config_new succeeded with NULL"),
        })
    }

    /// A manual clock starting at `start_ms` and every background interval
    /// 0: time moves and maintenance runs only when the caller says so.
    pub fn deterministic(start_ms: u64) -> Result<Self> {
        let mut cfg = Config::new()?;
        cfg.set_manual_clock(start_ms)?
            .set_soft_pin_cleanup_interval_ms(0)?
            .set_eviction_check_interval_ms(0)?
            .set_sweep_interval_ms(0)?;
        Ok(cfg)
    }

    pub fn as_ptr(&self) -> *const mooncake_meta_config {
        self.raw.as_ptr()
    }

    config_setters! {
        set_default_kv_lease_ttl_ms => mooncake_meta_config_set_default_kv_lease_ttl_ms(u64);
        set_default_kv_soft_pin_ttl_ms => mooncake_meta_config_set_default_kv_soft_pin_ttl_ms(u64);
        set_max_kv_soft_pin_ttl_ms => mooncake_meta_config_set_max_kv_soft_pin_ttl_ms(u64);
        set_eviction_ratio => mooncake_meta_config_set_eviction_ratio(f64);
        set_eviction_high_watermark_ratio =>
            mooncake_meta_config_set_eviction_high_watermark_ratio(f64);
        set_put_start_discard_timeout_ms =>
            mooncake_meta_config_set_put_start_discard_timeout_ms(u64);
        set_put_start_release_timeout_ms =>
            mooncake_meta_config_set_put_start_release_timeout_ms(u64);
        set_soft_pin_cleanup_interval_ms =>
            mooncake_meta_config_set_soft_pin_cleanup_interval_ms(u64);
        set_eviction_check_interval_ms => mooncake_meta_config_set_eviction_check_interval_ms(u64);
        set_sweep_interval_ms => mooncake_meta_config_set_sweep_interval_ms(u64);
        set_shard_count => mooncake_meta_config_set_shard_count(u64);
        set_manual_clock => mooncake_meta_config_set_manual_clock(u64);
    }

    pub fn set_allow_evict_soft_pinned_objects(&mut self, allow: bool) -> Result<&mut Self> {
        // SAFETY: `self.raw` is live.
        call(|err| unsafe {
            mooncake_meta_config_set_allow_evict_soft_pinned_objects(
                self.raw.as_ptr(),
                c_int::from(allow),
                err,
            )
        })?;
        Ok(self)
    }

    pub fn set_system_clock(&mut self) -> Result<&mut Self> {
        // SAFETY: `self.raw` is live.
        call(|err| unsafe { mooncake_meta_config_set_system_clock(self.raw.as_ptr(), err) })?;
        Ok(self)
    }

    /// Checks the configuration as master creation will.
    pub fn validate(&self) -> Result<()> {
        // SAFETY: `self.raw` is live.
        call(|err| unsafe { mooncake_meta_config_validate(self.raw.as_ptr(), err) })
    }
}

impl Drop for Config {
    fn drop(&mut self) {
        // SAFETY: owned, live, and no other reference exists (`&mut self`).
        unsafe { mooncake_meta_config_free(self.raw.as_ptr()) }
    }
}

/// A buffer owned by the library (a snapshot, Prometheus text), freed on
/// drop.
#[derive(Debug)]
pub struct Bytes {
    raw: NonNull<mooncake_meta_bytes>,
}

// SAFETY: a buffer is immutable; only `_free` (drop) must not race.
unsafe impl Send for Bytes {}
// SAFETY: as above.
unsafe impl Sync for Bytes {}

impl std::ops::Deref for Bytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: the buffer is live; `_data` is valid for `_len` bytes
        // until it is freed, which needs `&mut self`.
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

/// One replica as the master reports it.
pub type Replica = mooncake_meta_replica;

/// The result of a PutStart/UpsertStart.
#[derive(Debug, Clone)]
pub struct WriteStart {
    /// The staged PROCESSING replicas.
    pub replicas: Vec<Replica>,
    /// The write token to pass to End/Revoke.
    pub token: u64,
}

/// One page of [`Master::list_keys`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPage {
    pub keys: Vec<String>,
    /// The `after` of the next page; `None` on the last page.
    pub next: Option<String>,
}

/// Calls `f(buf, cap, out_len)` with a buffer of `cap` entries, growing it
/// to what the library asks for as long as it answers BUFFER_TOO_SMALL.
fn fill<T: Copy + Default>(
    mut cap: usize,
    mut f: impl FnMut(*mut T, usize, &mut usize, *mut *mut mooncake_meta_error) -> mooncake_meta_status,
) -> Result<Vec<T>> {
    loop {
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
                return Ok(buf);
            }
            Err(e) if e.code == MOONCAKE_META_BUFFER_TOO_SMALL && len > cap => cap = len,
            Err(e) => return Err(e),
        }
    }
}

/// A metadata master (`mooncake_meta_master`), freed on drop. Every method
/// may run concurrently from any number of threads.
#[derive(Debug)]
pub struct Master {
    raw: NonNull<mooncake_meta_master>,
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

/// A key-taking call: `$f(m, tenant, tenant_len, key, key_len, rest..., err)`.
macro_rules! with_key {
    ($self:ident, $f:ident, $key:ident $(, $arg:expr)*) => {
        // SAFETY: the master is live; the key strings and every argument
        // outlive the call.
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
    };
}

/// A client-and-key call: `$f(m, client, tenant, tenant_len, key, key_len, rest..., err)`.
macro_rules! with_client_key {
    ($self:ident, $f:ident, $client:expr, $key:ident $(, $arg:expr)*) => {
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
    };
}

impl Master {
    /// A master from `cfg` (`None`: the documented defaults, system clock,
    /// background tasks on). The configuration is copied.
    pub fn new(cfg: Option<&Config>) -> Result<Self> {
        let cfg = cfg.map_or(ptr::null(), Config::as_ptr);
        let mut raw = ptr::null_mut();
        // SAFETY: `cfg` is NULL or live; `raw` is writable.
        call(|err| unsafe { mooncake_meta_master_new(cfg, &mut raw, err) })?;
        Ok(Master {
            raw: NonNull::new(raw).expect("master_new succeeded with NULL"),
        })
    }

    /// A master on [`Config::deterministic`].
    pub fn deterministic(start_ms: u64) -> Result<Self> {
        Master::new(Some(&Config::deterministic(start_ms)?))
    }

    /// The raw handle, for calls this layer does not wrap (batches). Valid
    /// while `self` lives.
    pub fn as_ptr(&self) -> *const mooncake_meta_master {
        self.raw.as_ptr()
    }

    pub fn now(&self) -> Result<u64> {
        let mut now = 0;
        // SAFETY: live master, writable output.
        call(|err| unsafe { mooncake_meta_master_now(self.raw.as_ptr(), &mut now, err) })?;
        Ok(now)
    }

    pub fn set_time(&self, to_ms: u64) -> Result<()> {
        // SAFETY: live master.
        call(|err| unsafe { mooncake_meta_master_set_time(self.raw.as_ptr(), to_ms, err) })
    }

    /// Advances the manual clock; returns the new instant.
    pub fn advance_time(&self, by_ms: u64) -> Result<u64> {
        let mut now = 0;
        // SAFETY: live master, writable output.
        call(|err| unsafe {
            mooncake_meta_master_advance_time(self.raw.as_ptr(), by_ms, &mut now, err)
        })?;
        Ok(now)
    }

    /// Mounts a segment; returns its id.
    pub fn mount_segment(
        &self,
        client: u64,
        name: &str,
        base: u64,
        size: u64,
        pool: Pool,
    ) -> Result<u32> {
        let mut id = 0;
        // SAFETY: live master, `name` outlives the call, writable output.
        call(|err| unsafe {
            mooncake_meta_mount_segment(
                self.raw.as_ptr(),
                client,
                name.as_ptr().cast(),
                name.len(),
                base,
                size,
                pool.raw(),
                &mut id,
                err,
            )
        })?;
        Ok(id)
    }

    pub fn unmount_segment(&self, client: u64, name: &str) -> Result<mooncake_meta_unmount_report> {
        let mut report = mooncake_meta_unmount_report::default();
        // SAFETY: live master, `name` outlives the call, `report` is sized.
        call(|err| unsafe {
            mooncake_meta_unmount_segment(
                self.raw.as_ptr(),
                client,
                name.as_ptr().cast(),
                name.len(),
                &mut report,
                err,
            )
        })?;
        Ok(report)
    }

    pub fn unmount_client(&self, client: u64) -> Result<mooncake_meta_unmount_report> {
        let mut report = mooncake_meta_unmount_report::default();
        // SAFETY: live master, `report` is sized.
        call(|err| unsafe {
            mooncake_meta_unmount_client(self.raw.as_ptr(), client, &mut report, err)
        })?;
        Ok(report)
    }

    pub fn segment_name(&self, segment_id: u32) -> Result<String> {
        let bytes: Vec<u8> = fill(32, |buf: *mut u8, cap, len, err| {
            // SAFETY: live master; `buf` is NULL or valid for `cap` bytes.
            unsafe {
                mooncake_meta_segment_name(self.raw.as_ptr(), segment_id, buf.cast(), cap, len, err)
            }
        })?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    fn start(
        &self,
        cap: usize,
        mut f: impl FnMut(
            *mut Replica,
            usize,
            &mut usize,
            &mut u64,
            *mut *mut mooncake_meta_error,
        ) -> mooncake_meta_status,
    ) -> Result<WriteStart> {
        let mut token = 0;
        let replicas = fill(cap, |buf, cap, len, err| f(buf, cap, len, &mut token, err))?;
        Ok(WriteStart { replicas, token })
    }

    /// PutStart with the extended configuration.
    pub fn put_start(
        &self,
        client: u64,
        key: Key<'_>,
        size: u64,
        cfg: &WriteConfig<'_>,
    ) -> Result<WriteStart> {
        let raw = cfg.to_raw()?;
        self.start(cfg.requested(), |out, cap, len, token, err| {
            // SAFETY: live master; key, config and its strings outlive the
            // call; `out` is valid for `cap` replicas.
            unsafe {
                mooncake_meta_put_start(
                    self.raw.as_ptr(),
                    client,
                    key.tenant_ptr(),
                    key.tenant.len(),
                    key.key_ptr(),
                    key.key.len(),
                    size,
                    &raw.raw,
                    out,
                    cap,
                    len,
                    token,
                    err,
                )
            }
        })
    }

    /// PutStart with the legacy configuration.
    pub fn put_start_legacy(
        &self,
        client: u64,
        key: Key<'_>,
        size: u64,
        cfg: &LegacyConfig<'_>,
    ) -> Result<WriteStart> {
        let raw = cfg.to_raw()?;
        self.start(cfg.replica_num.max(1), |out, cap, len, token, err| {
            // SAFETY: as `put_start`.
            unsafe {
                mooncake_meta_put_start_legacy(
                    self.raw.as_ptr(),
                    client,
                    key.tenant_ptr(),
                    key.tenant.len(),
                    key.key_ptr(),
                    key.key.len(),
                    size,
                    &raw.raw,
                    out,
                    cap,
                    len,
                    token,
                    err,
                )
            }
        })
    }

    /// UpsertStart with the extended configuration.
    pub fn upsert_start(
        &self,
        client: u64,
        key: Key<'_>,
        size: u64,
        cfg: &WriteConfig<'_>,
    ) -> Result<WriteStart> {
        let raw = cfg.to_raw()?;
        self.start(cfg.requested(), |out, cap, len, token, err| {
            // SAFETY: as `put_start`.
            unsafe {
                mooncake_meta_upsert_start(
                    self.raw.as_ptr(),
                    client,
                    key.tenant_ptr(),
                    key.tenant.len(),
                    key.key_ptr(),
                    key.key.len(),
                    size,
                    &raw.raw,
                    out,
                    cap,
                    len,
                    token,
                    err,
                )
            }
        })
    }

    /// UpsertStart with the legacy configuration.
    pub fn upsert_start_legacy(
        &self,
        client: u64,
        key: Key<'_>,
        size: u64,
        cfg: &LegacyConfig<'_>,
    ) -> Result<WriteStart> {
        let raw = cfg.to_raw()?;
        self.start(cfg.replica_num.max(1), |out, cap, len, token, err| {
            // SAFETY: as `put_start`.
            unsafe {
                mooncake_meta_upsert_start_legacy(
                    self.raw.as_ptr(),
                    client,
                    key.tenant_ptr(),
                    key.tenant.len(),
                    key.key_ptr(),
                    key.key.len(),
                    size,
                    &raw.raw,
                    out,
                    cap,
                    len,
                    token,
                    err,
                )
            }
        })
    }

    /// PutEnd; `token` is the start's write token (`None` names none).
    pub fn put_end(
        &self,
        client: u64,
        key: Key<'_>,
        sel: Selector,
        token: Option<u64>,
    ) -> Result<()> {
        with_client_key!(
            self,
            mooncake_meta_put_end,
            client,
            key,
            sel.raw(),
            token.unwrap_or(0)
        )
    }

    pub fn put_revoke(
        &self,
        client: u64,
        key: Key<'_>,
        sel: Selector,
        token: Option<u64>,
    ) -> Result<()> {
        with_client_key!(
            self,
            mooncake_meta_put_revoke,
            client,
            key,
            sel.raw(),
            token.unwrap_or(0)
        )
    }

    pub fn upsert_end(
        &self,
        client: u64,
        key: Key<'_>,
        sel: Selector,
        token: Option<u64>,
    ) -> Result<()> {
        with_client_key!(
            self,
            mooncake_meta_upsert_end,
            client,
            key,
            sel.raw(),
            token.unwrap_or(0)
        )
    }

    pub fn upsert_revoke(
        &self,
        client: u64,
        key: Key<'_>,
        sel: Selector,
        token: Option<u64>,
    ) -> Result<()> {
        with_client_key!(
            self,
            mooncake_meta_upsert_revoke,
            client,
            key,
            sel.raw(),
            token.unwrap_or(0)
        )
    }

    /// Whether the key has a readable replica (grants the read lease).
    pub fn exist(&self, key: Key<'_>) -> Result<bool> {
        let mut exists: c_int = 0;
        with_key!(self, mooncake_meta_exist, key, &mut exists)?;
        Ok(exists != 0)
    }

    /// The readable replicas (grants the read lease).
    pub fn get_replica_list(&self, key: Key<'_>) -> Result<Vec<Replica>> {
        fill(4, |out, cap, len, err| {
            // SAFETY: live master; key outlives the call; `out` is NULL or
            // valid for `cap` replicas.
            unsafe {
                mooncake_meta_get_replica_list(
                    self.raw.as_ptr(),
                    key.tenant_ptr(),
                    key.tenant.len(),
                    key.key_ptr(),
                    key.key.len(),
                    out,
                    cap,
                    len,
                    err,
                )
            }
        })
    }

    pub fn key_count(&self) -> Result<u64> {
        let mut n = 0;
        // SAFETY: live master, writable output.
        call(|err| unsafe { mooncake_meta_key_count(self.raw.as_ptr(), &mut n, err) })?;
        Ok(n)
    }

    /// One page of the keys of `tenant` (`""` = default) starting with
    /// `prefix`, sorting after `after`, at most `limit` (0 = no limit).
    pub fn list_keys(
        &self,
        tenant: &str,
        prefix: &str,
        after: &str,
        limit: usize,
    ) -> Result<KeyPage> {
        let mut list = ptr::null_mut();
        // SAFETY: live master; strings outlive the call; `list` writable.
        call(|err| unsafe {
            mooncake_meta_list_keys(
                self.raw.as_ptr(),
                tenant.as_ptr().cast(),
                tenant.len(),
                prefix.as_ptr().cast(),
                prefix.len(),
                after.as_ptr().cast(),
                after.len(),
                limit,
                &mut list,
                err,
            )
        })?;
        let list = KeyList(list);
        // SAFETY: `list.0` is a live key list until `list` drops.
        unsafe {
            let n = mooncake_meta_key_list_len(list.0);
            let mut keys = Vec::with_capacity(n);
            for i in 0..n {
                let (mut p, mut len) = (ptr::null(), 0usize);
                call(|err| mooncake_meta_key_list_get(list.0, i, &mut p, &mut len, err))?;
                keys.push(lossy(p, len));
            }
            let (mut has, mut p, mut len) = (0, ptr::null(), 0usize);
            call(|err| {
                mooncake_meta_key_list_next_cursor(list.0, &mut has, &mut p, &mut len, err)
            })?;
            let next = (has != 0).then(|| lossy(p, len));
            Ok(KeyPage { keys, next })
        }
    }

    pub fn remove(&self, key: Key<'_>, force: bool) -> Result<()> {
        with_key!(self, mooncake_meta_remove, key, c_int::from(force))
    }

    /// Removes every removable object; returns how many.
    pub fn remove_all(&self, force: bool) -> Result<u64> {
        let mut n = 0;
        // SAFETY: live master, writable output.
        call(|err| unsafe {
            mooncake_meta_remove_all(self.raw.as_ptr(), c_int::from(force), &mut n, err)
        })?;
        Ok(n)
    }

    /// Removes the removable objects whose key matches `pattern` in
    /// `tenant` (`None`: every tenant); returns how many.
    pub fn remove_by_regex(&self, tenant: Option<&str>, pattern: &str, force: bool) -> Result<u64> {
        let tenant = tenant.unwrap_or("");
        let mut n = 0;
        // SAFETY: live master, strings outlive the call, writable output.
        call(|err| unsafe {
            mooncake_meta_remove_by_regex(
                self.raw.as_ptr(),
                tenant.as_ptr().cast(),
                tenant.len(),
                pattern.as_ptr().cast(),
                pattern.len(),
                c_int::from(force),
                &mut n,
                err,
            )
        })?;
        Ok(n)
    }

    /// Starts copying to each named segment; returns the PROCESSING targets.
    pub fn copy_start(&self, key: Key<'_>, segments: &[&str]) -> Result<Vec<Replica>> {
        let names = c_strings("segment", segments)?;
        let ptrs = pointers(&names);
        fill(segments.len(), |out, cap, len, err| {
            // SAFETY: live master; key and names outlive the call; `out` is
            // NULL or valid for `cap` replicas.
            unsafe {
                mooncake_meta_copy_start(
                    self.raw.as_ptr(),
                    key.tenant_ptr(),
                    key.tenant.len(),
                    key.key_ptr(),
                    key.key.len(),
                    ptrs.as_ptr(),
                    ptrs.len(),
                    out,
                    cap,
                    len,
                    err,
                )
            }
        })
    }

    pub fn copy_end(&self, key: Key<'_>) -> Result<()> {
        with_key!(self, mooncake_meta_copy_end, key)
    }

    pub fn copy_revoke(&self, key: Key<'_>) -> Result<()> {
        with_key!(self, mooncake_meta_copy_revoke, key)
    }

    /// Starts moving the replica on `from` to `to`; returns the target.
    pub fn move_start(&self, key: Key<'_>, from: &str, to: &str) -> Result<Replica> {
        let mut r = Replica::default();
        with_key!(
            self,
            mooncake_meta_move_start,
            key,
            from.as_ptr().cast(),
            from.len(),
            to.as_ptr().cast(),
            to.len(),
            &mut r
        )?;
        Ok(r)
    }

    pub fn move_end(&self, key: Key<'_>) -> Result<()> {
        with_key!(self, mooncake_meta_move_end, key)
    }

    pub fn move_revoke(&self, key: Key<'_>) -> Result<()> {
        with_key!(self, mooncake_meta_move_revoke, key)
    }

    /// Starts promoting from LOCAL_DISK to memory; returns the staged replica.
    pub fn promotion_start(&self, key: Key<'_>, preferred: &[&str]) -> Result<Replica> {
        let names = c_strings("preferred segment", preferred)?;
        let ptrs = pointers(&names);
        let mut r = Replica::default();
        with_key!(
            self,
            mooncake_meta_promotion_start,
            key,
            if ptrs.is_empty() {
                ptr::null()
            } else {
                ptrs.as_ptr()
            },
            ptrs.len(),
            &mut r
        )?;
        Ok(r)
    }

    pub fn promotion_end(&self, key: Key<'_>, success: bool) -> Result<()> {
        with_key!(self, mooncake_meta_promotion_end, key, c_int::from(success))
    }

    pub fn add_local_disk_replica(&self, client: u64, key: Key<'_>, size: u64) -> Result<Replica> {
        let mut r = Replica::default();
        with_client_key!(
            self,
            mooncake_meta_add_local_disk_replica,
            client,
            key,
            size,
            &mut r
        )?;
        Ok(r)
    }

    /// The committed soft-pin deadline (possibly expired but not yet
    /// normalised), or `None`.
    pub fn soft_pin_deadline(&self, key: Key<'_>) -> Result<Option<u64>> {
        let (mut has, mut deadline): (c_int, u64) = (0, 0);
        with_key!(
            self,
            mooncake_meta_soft_pin_deadline,
            key,
            &mut has,
            &mut deadline
        )?;
        Ok((has != 0).then_some(deadline))
    }

    pub fn has_pending_soft_pin(&self, key: Key<'_>) -> Result<bool> {
        let mut pending: c_int = 0;
        with_key!(self, mooncake_meta_has_pending_soft_pin, key, &mut pending)?;
        Ok(pending != 0)
    }

    /// The deadline index's (heap entries, live registrations).
    pub fn index_sizes(&self) -> Result<(u64, u64)> {
        let (mut heap, mut live) = (0, 0);
        // SAFETY: live master, writable outputs.
        call(|err| unsafe {
            mooncake_meta_index_sizes(self.raw.as_ptr(), &mut heap, &mut live, err)
        })?;
        Ok((heap, live))
    }

    pub fn check_invariants(&self) -> Result<()> {
        // SAFETY: live master.
        call(|err| unsafe { mooncake_meta_check_invariants(self.raw.as_ptr(), err) })
    }

    pub fn run_cleanup(&self) -> Result<mooncake_meta_cleanup_stats> {
        let mut s = mooncake_meta_cleanup_stats::default();
        // SAFETY: live master, `s` sized.
        call(|err| unsafe { mooncake_meta_run_cleanup(self.raw.as_ptr(), &mut s, err) })?;
        Ok(s)
    }

    pub fn run_cleanup_at(&self, at_ms: u64) -> Result<mooncake_meta_cleanup_stats> {
        let mut s = mooncake_meta_cleanup_stats::default();
        // SAFETY: live master, `s` sized.
        call(|err| unsafe { mooncake_meta_run_cleanup_at(self.raw.as_ptr(), at_ms, &mut s, err) })?;
        Ok(s)
    }

    pub fn run_eviction(
        &self,
        target: f64,
        lowerbound: f64,
    ) -> Result<mooncake_meta_eviction_report> {
        let mut r = mooncake_meta_eviction_report::default();
        // SAFETY: live master, `r` sized.
        call(|err| unsafe {
            mooncake_meta_run_eviction(self.raw.as_ptr(), target, lowerbound, &mut r, err)
        })?;
        Ok(r)
    }

    /// The eviction trigger; `None` when no run happened.
    pub fn evict_if_needed(&self, force: bool) -> Result<Option<mooncake_meta_eviction_report>> {
        let mut r = mooncake_meta_eviction_report::default();
        let mut ran: c_int = 0;
        // SAFETY: live master, writable outputs, `r` sized.
        call(|err| unsafe {
            mooncake_meta_evict_if_needed(
                self.raw.as_ptr(),
                c_int::from(force),
                &mut ran,
                &mut r,
                err,
            )
        })?;
        Ok((ran != 0).then_some(r))
    }

    pub fn run_maintenance_tick(&self) -> Result<()> {
        // SAFETY: live master.
        call(|err| unsafe { mooncake_meta_run_maintenance_tick(self.raw.as_ptr(), err) })
    }

    /// Sweeps the writes stale at `at_ms`; returns how many.
    pub fn sweep_stale_writes_at(&self, at_ms: u64) -> Result<u64> {
        let mut n = 0;
        // SAFETY: live master, writable output.
        call(|err| unsafe {
            mooncake_meta_sweep_stale_writes_at(self.raw.as_ptr(), at_ms, &mut n, err)
        })?;
        Ok(n)
    }

    /// Frees the discarded buffers due at `at_ms`; returns how many.
    pub fn release_discarded_at(&self, at_ms: u64) -> Result<u64> {
        let mut n = 0;
        // SAFETY: live master, writable output.
        call(|err| unsafe {
            mooncake_meta_release_discarded_at(self.raw.as_ptr(), at_ms, &mut n, err)
        })?;
        Ok(n)
    }

    pub fn metrics(&self) -> Result<mooncake_meta_metrics_snapshot> {
        let mut s = mooncake_meta_metrics_snapshot::default();
        // SAFETY: live master, `s` sized.
        call(|err| unsafe { mooncake_meta_metrics(self.raw.as_ptr(), &mut s, err) })?;
        Ok(s)
    }

    /// The Prometheus text exposition.
    pub fn metrics_prometheus(&self) -> Result<String> {
        let mut out = ptr::null_mut();
        // SAFETY: live master, writable output.
        call(|err| unsafe { mooncake_meta_metrics_prometheus(self.raw.as_ptr(), &mut out, err) })?;
        let bytes = Bytes {
            raw: NonNull::new(out).expect("metrics_prometheus succeeded with NULL"),
        };
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Serialises the master into a library-owned buffer.
    pub fn snapshot(&self) -> Result<Bytes> {
        let mut out = ptr::null_mut();
        // SAFETY: live master, writable output.
        call(|err| unsafe { mooncake_meta_snapshot(self.raw.as_ptr(), &mut out, err) })?;
        Ok(Bytes {
            raw: NonNull::new(out).expect("snapshot succeeded with NULL"),
        })
    }

    /// Serialises the master to `path` atomically.
    pub fn snapshot_save(&self, path: &Path) -> Result<()> {
        let path = path_string("path", path)?;
        // SAFETY: live master, NUL-terminated path outlives the call.
        call(|err| unsafe { mooncake_meta_snapshot_save(self.raw.as_ptr(), path.as_ptr(), err) })
    }

    /// Restores the master from one snapshot.
    pub fn restore(&self, snapshot: &[u8]) -> Result<mooncake_meta_restore_report> {
        let mut r = mooncake_meta_restore_report::default();
        // SAFETY: live master, `snapshot` outlives the call, `r` sized.
        call(|err| unsafe {
            mooncake_meta_restore(
                self.raw.as_ptr(),
                snapshot.as_ptr(),
                snapshot.len(),
                &mut r,
                err,
            )
        })?;
        Ok(r)
    }

    /// Restores from the newest candidate that validates.
    pub fn restore_candidates(&self, candidates: &[&[u8]]) -> Result<mooncake_meta_restore_report> {
        let datas: Vec<*const u8> = candidates.iter().map(|c| c.as_ptr()).collect();
        let lens: Vec<usize> = candidates.iter().map(|c| c.len()).collect();
        let mut r = mooncake_meta_restore_report::default();
        // SAFETY: live master; arrays and buffers outlive the call.
        call(|err| unsafe {
            mooncake_meta_restore_candidates(
                self.raw.as_ptr(),
                datas.as_ptr(),
                lens.as_ptr(),
                datas.len(),
                &mut r,
                err,
            )
        })?;
        Ok(r)
    }

    /// Restores from the newest candidate file that validates.
    pub fn restore_files(&self, paths: &[&Path]) -> Result<mooncake_meta_restore_report> {
        let paths = paths
            .iter()
            .map(|p| path_string("path", p))
            .collect::<Result<Vec<_>>>()?;
        let ptrs = pointers(&paths);
        let mut r = mooncake_meta_restore_report::default();
        // SAFETY: live master; paths outlive the call.
        call(|err| unsafe {
            mooncake_meta_restore_files(self.raw.as_ptr(), ptrs.as_ptr(), ptrs.len(), &mut r, err)
        })?;
        Ok(r)
    }
}

/// A key list, freed on drop.
struct KeyList(*mut mooncake_meta_key_list);

impl Drop for KeyList {
    fn drop(&mut self) {
        // SAFETY: owned, from `mooncake_meta_list_keys`.
        unsafe { mooncake_meta_key_list_free(self.0) }
    }
}

/// # Safety
/// `p` valid for `len` bytes (or `len == 0`).
unsafe fn lossy(p: *const c_char, len: usize) -> String {
    if len == 0 {
        return String::new();
    }
    // SAFETY: forwarded.
    String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) }).into_owned()
}
