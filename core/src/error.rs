//! The one error type of the core. Every fallible operation returns
//! [`Error`]: a kind (which maps to an upstream-compatible numeric code in the
//! ffi layer, and only there) plus a message naming what was wrong.

use std::borrow::Cow;
use std::fmt;

/// What went wrong. Names follow upstream Mooncake's `ErrorCode`; the library
/// additions (boundary problems, stale write tokens, clock misuse, a full
/// group-retention registry, a journal read past what was kept) come last.
///
/// Deliberately exhaustive: the C-ABI crate maps every kind to a status code
/// with an exhaustive match, so a new kind cannot ship without its code.
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
    /// Reserved (upstream's code is kept), never returned: a replica is
    /// busy only through a copy, move or promotion, which every operation
    /// reports first as [`ErrorKind::ObjectHasReplicationTask`].
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
    /// A journal read asked for records that were dropped (the journal was
    /// full before the consumer released them): resync from a snapshot.
    JournalOverrun,
}

impl ErrorKind {
    /// Every kind, for exhaustive tables (code mapping tests, docs).
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

    /// Upper-case upstream-style name (`OBJECT_NOT_FOUND`).
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

/// An error of the metadata master: its kind and a human-readable message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct Error {
    kind: ErrorKind,
    message: Cow<'static, str>,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<Cow<'static, str>>) -> Self {
        Error {
            kind,
            message: message.into(),
        }
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    /// An `InvalidParams` error with this message.
    pub fn invalid(message: impl Into<Cow<'static, str>>) -> Self {
        Error::new(ErrorKind::InvalidParams, message)
    }

    pub(crate) fn not_found() -> Self {
        Error::new(ErrorKind::ObjectNotFound, "object not found")
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
