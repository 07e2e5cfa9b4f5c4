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

mod config;
mod maintenance;
mod master;
mod read;
mod replication;

pub use config::{Config, LegacyConfig, WriteConfig};
