//! The error type: the same shape as the core crate's (`Error` with
//! `kind()` and `message()`, `ErrorKind` with the same variants, `ALL` and
//! `name()`), plus the C status code it came from.

use super::*;
use std::borrow::Cow;

/// What went wrong: the core crate's `ErrorKind`, variant for variant. Each
/// kind is one `MOONCAKE_META_*` status code ([`ErrorKind::code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    Internal,
    SegmentNotFound,
    SegmentAlreadyExists,
    NoAvailableHandle,
    InvalidParams,
    IllegalClient,
    InvalidWrite,
    ReplicaIsNotReady,
    ObjectNotFound,
    ObjectAlreadyExists,
    ObjectHasLease,
    ObjectHasReplicationTask,
    ObjectNoReplicationTask,
    ReplicaNotFound,
    ReplicaIsGone,
    ObjectReplicaBusy,
    UnavailableInCurrentStatus,
    SerializeFail,
    DeserializeFail,
    NullArgument,
    InvalidUtf8,
    BufferTooSmall,
    StructSizeUnsupported,
    UnknownFlags,
    Panic,
    StaleWriteToken,
    ClockUnsupported,
    /// A new group cannot be retained: `max_retained_groups` groups are.
    GroupRetentionFull,
    /// A journal read asked for records that were dropped: resync from a
    /// snapshot.
    JournalOverrun,
}

impl ErrorKind {
    /// Every kind, in the core crate's order.
    pub const ALL: [ErrorKind; 29] = [
        ErrorKind::Internal,
        ErrorKind::SegmentNotFound,
        ErrorKind::SegmentAlreadyExists,
        ErrorKind::NoAvailableHandle,
        ErrorKind::InvalidParams,
        ErrorKind::IllegalClient,
        ErrorKind::InvalidWrite,
        ErrorKind::ReplicaIsNotReady,
        ErrorKind::ObjectNotFound,
        ErrorKind::ObjectAlreadyExists,
        ErrorKind::ObjectHasLease,
        ErrorKind::ObjectHasReplicationTask,
        ErrorKind::ObjectNoReplicationTask,
        ErrorKind::ReplicaNotFound,
        ErrorKind::ReplicaIsGone,
        ErrorKind::ObjectReplicaBusy,
        ErrorKind::UnavailableInCurrentStatus,
        ErrorKind::SerializeFail,
        ErrorKind::DeserializeFail,
        ErrorKind::NullArgument,
        ErrorKind::InvalidUtf8,
        ErrorKind::BufferTooSmall,
        ErrorKind::StructSizeUnsupported,
        ErrorKind::UnknownFlags,
        ErrorKind::Panic,
        ErrorKind::StaleWriteToken,
        ErrorKind::ClockUnsupported,
        ErrorKind::GroupRetentionFull,
        ErrorKind::JournalOverrun,
    ];

    /// The status code of this kind (a negative `MOONCAKE_META_*`).
    pub const fn code(self) -> mooncake_meta_status {
        match self {
            ErrorKind::Internal => MOONCAKE_META_INTERNAL_ERROR,
            ErrorKind::SegmentNotFound => MOONCAKE_META_SEGMENT_NOT_FOUND,
            ErrorKind::SegmentAlreadyExists => MOONCAKE_META_SEGMENT_ALREADY_EXISTS,
            ErrorKind::NoAvailableHandle => MOONCAKE_META_NO_AVAILABLE_HANDLE,
            ErrorKind::InvalidParams => MOONCAKE_META_INVALID_PARAMS,
            ErrorKind::IllegalClient => MOONCAKE_META_ILLEGAL_CLIENT,
            ErrorKind::InvalidWrite => MOONCAKE_META_INVALID_WRITE,
            ErrorKind::ReplicaIsNotReady => MOONCAKE_META_REPLICA_IS_NOT_READY,
            ErrorKind::ObjectNotFound => MOONCAKE_META_OBJECT_NOT_FOUND,
            ErrorKind::ObjectAlreadyExists => MOONCAKE_META_OBJECT_ALREADY_EXISTS,
            ErrorKind::ObjectHasLease => MOONCAKE_META_OBJECT_HAS_LEASE,
            ErrorKind::ObjectHasReplicationTask => MOONCAKE_META_OBJECT_HAS_REPLICATION_TASK,
            ErrorKind::ObjectNoReplicationTask => MOONCAKE_META_OBJECT_NO_REPLICATION_TASK,
            ErrorKind::ReplicaNotFound => MOONCAKE_META_REPLICA_NOT_FOUND,
            ErrorKind::ReplicaIsGone => MOONCAKE_META_REPLICA_IS_GONE,
            ErrorKind::ObjectReplicaBusy => MOONCAKE_META_OBJECT_REPLICA_BUSY,
            ErrorKind::UnavailableInCurrentStatus => MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS,
            ErrorKind::SerializeFail => MOONCAKE_META_SERIALIZE_FAIL,
            ErrorKind::DeserializeFail => MOONCAKE_META_DESERIALIZE_FAIL,
            ErrorKind::NullArgument => MOONCAKE_META_NULL_ARGUMENT,
            ErrorKind::InvalidUtf8 => MOONCAKE_META_INVALID_UTF8,
            ErrorKind::BufferTooSmall => MOONCAKE_META_BUFFER_TOO_SMALL,
            ErrorKind::StructSizeUnsupported => MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED,
            ErrorKind::UnknownFlags => MOONCAKE_META_UNKNOWN_FLAGS,
            ErrorKind::Panic => MOONCAKE_META_PANIC,
            ErrorKind::StaleWriteToken => MOONCAKE_META_STALE_WRITE_TOKEN,
            ErrorKind::ClockUnsupported => MOONCAKE_META_CLOCK_UNSUPPORTED,
            ErrorKind::GroupRetentionFull => MOONCAKE_META_GROUP_RETENTION_FULL,
            ErrorKind::JournalOverrun => MOONCAKE_META_JOURNAL_OVERRUN,
        }
    }

    /// The kind of a status code; `None` for `OK` and codes this crate
    /// does not know (a newer library).
    pub fn from_code(code: mooncake_meta_status) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| k.code() == code)
    }

    /// Upper-case upstream-style name (`OBJECT_NOT_FOUND`), as the core's.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Internal => "INTERNAL_ERROR",
            ErrorKind::SegmentNotFound => "SEGMENT_NOT_FOUND",
            ErrorKind::SegmentAlreadyExists => "SEGMENT_ALREADY_EXISTS",
            ErrorKind::NoAvailableHandle => "NO_AVAILABLE_HANDLE",
            ErrorKind::InvalidParams => "INVALID_PARAMS",
            ErrorKind::IllegalClient => "ILLEGAL_CLIENT",
            ErrorKind::InvalidWrite => "INVALID_WRITE",
            ErrorKind::ReplicaIsNotReady => "REPLICA_IS_NOT_READY",
            ErrorKind::ObjectNotFound => "OBJECT_NOT_FOUND",
            ErrorKind::ObjectAlreadyExists => "OBJECT_ALREADY_EXISTS",
            ErrorKind::ObjectHasLease => "OBJECT_HAS_LEASE",
            ErrorKind::ObjectHasReplicationTask => "OBJECT_HAS_REPLICATION_TASK",
            ErrorKind::ObjectNoReplicationTask => "OBJECT_NO_REPLICATION_TASK",
            ErrorKind::ReplicaNotFound => "REPLICA_NOT_FOUND",
            ErrorKind::ReplicaIsGone => "REPLICA_IS_GONE",
            ErrorKind::ObjectReplicaBusy => "OBJECT_REPLICA_BUSY",
            ErrorKind::UnavailableInCurrentStatus => "UNAVAILABLE_IN_CURRENT_STATUS",
            ErrorKind::SerializeFail => "SERIALIZE_FAIL",
            ErrorKind::DeserializeFail => "DESERIALIZE_FAIL",
            ErrorKind::NullArgument => "NULL_ARGUMENT",
            ErrorKind::InvalidUtf8 => "INVALID_UTF8",
            ErrorKind::BufferTooSmall => "BUFFER_TOO_SMALL",
            ErrorKind::StructSizeUnsupported => "STRUCT_SIZE_UNSUPPORTED",
            ErrorKind::UnknownFlags => "UNKNOWN_FLAGS",
            ErrorKind::Panic => "PANIC",
            ErrorKind::StaleWriteToken => "STALE_WRITE_TOKEN",
            ErrorKind::ClockUnsupported => "CLOCK_UNSUPPORTED",
            ErrorKind::GroupRetentionFull => "GROUP_RETENTION_FULL",
            ErrorKind::JournalOverrun => "JOURNAL_OVERRUN",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed call: its kind, the library's message, and the status code
/// (`code()`, the kind's code except for a code this crate does not know,
/// which is kept as is with kind `Internal`). Displays as the core's does:
/// `KIND: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    code: mooncake_meta_status,
    message: Cow<'static, str>,
}

impl Error {
    /// An error of `kind` (its code is the kind's).
    pub fn new(kind: ErrorKind, message: impl Into<Cow<'static, str>>) -> Self {
        Error {
            kind,
            code: kind.code(),
            message: message.into(),
        }
    }

    /// An `InvalidParams` error with this message.
    pub fn invalid(message: impl Into<Cow<'static, str>>) -> Self {
        Error::new(ErrorKind::InvalidParams, message)
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The library's message (it names the C function and the argument).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The status code, one of the negative `MOONCAKE_META_*` constants.
    pub fn code(&self) -> mooncake_meta_status {
        self.code
    }

    /// The code's name without the prefix (`"OBJECT_NOT_FOUND"`).
    pub fn status_name(&self) -> &'static str {
        status_name(self.code)
    }

    /// The error of a status code with a message.
    pub(super) fn from_status(code: mooncake_meta_status, message: String) -> Error {
        Error {
            kind: ErrorKind::from_code(code).unwrap_or(ErrorKind::Internal),
            code,
            message: message.into(),
        }
    }

    /// Takes over the error object `err` of a call that returned `status`.
    ///
    /// # Safety
    /// `err` must be NULL or an unfreed error object; it is freed here.
    pub(super) unsafe fn take(
        status: mooncake_meta_status,
        err: *mut mooncake_meta_error,
    ) -> Error {
        if err.is_null() {
            return Error::from_status(status, status_name(status).to_string());
        }
        // SAFETY: `err` is a live error object, freed once, after its
        // message was copied.
        unsafe {
            let code = mooncake_meta_error_code(err);
            let message = CStr::from_ptr(mooncake_meta_error_message(err))
                .to_string_lossy()
                .into_owned();
            mooncake_meta_error_free(err);
            Error::from_status(code, message)
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Runs one raw call with an error out-parameter and maps its status.
pub(super) fn call(
    f: impl FnOnce(*mut *mut mooncake_meta_error) -> mooncake_meta_status,
) -> Result<()> {
    let mut err: *mut mooncake_meta_error = ptr::null_mut();
    let status = f(&mut err);
    if status == MOONCAKE_META_OK {
        return Ok(());
    }
    // SAFETY: on failure `err` is NULL or a new error object owned by us.
    Err(unsafe { Error::take(status, err) })
}

/// The value of a call the core crate declares infallible. Through the C
/// ABI such a call on a live master fails only when the library panicked
/// (this call, or an earlier one that poisoned the master): the core crate
/// would have panicked there, and so does this — with the library's
/// message — rather than invent a value.
pub(super) fn infallible<T>(function: &str, r: Result<T>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{function} failed (a library panic poisons the master): {e}"),
    }
}
