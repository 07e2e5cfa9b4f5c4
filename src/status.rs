//! Status codes: the one place where an [`ErrorKind`] becomes a number.
//! Values are upstream Mooncake's `ErrorCode`s plus the library's reserved
//! block −9001..−9010 (docs/CONTRACT.md §3); they never change once released.

use mooncake_meta_core::error::ErrorKind;
use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::os::raw::c_char;
use std::sync::OnceLock;

/// Result of every fallible function: `MOONCAKE_META_OK` (0) or one of the
/// negative `MOONCAKE_META_*` codes below. Codes are stable across releases.
pub type mooncake_meta_status = i32;

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

/// The status code of an error kind. Exhaustive: a new kind does not compile
/// until it has a code.
pub(crate) const fn code_of(kind: ErrorKind) -> mooncake_meta_status {
    match kind {
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

/// The error kind behind a status code; `None` for `OK` and unknown codes.
pub(crate) fn kind_of(status: mooncake_meta_status) -> Option<ErrorKind> {
    ErrorKind::ALL.into_iter().find(|&k| code_of(k) == status)
}

/// NUL-terminated copies of [`ErrorKind::name`], built once, so the C
/// accessor can hand out pointers that live for the whole process.
fn static_name(status: mooncake_meta_status) -> &'static CStr {
    static NAMES: OnceLock<HashMap<ErrorKind, CString>> = OnceLock::new();
    match kind_of(status) {
        None if status == MOONCAKE_META_OK => c"OK",
        None => c"UNKNOWN_STATUS",
        Some(kind) => NAMES
            .get_or_init(|| {
                ErrorKind::ALL
                    .into_iter()
                    .map(|k| (k, CString::new(k.name()).expect("kind names have no NUL")))
                    .collect()
            })
            .get(&kind)
            .map_or(c"UNKNOWN_STATUS", CString::as_c_str),
    }
}

/// The upper-case name of a status code without the prefix (`"OK"`,
/// `"OBJECT_NOT_FOUND"`), or `"UNKNOWN_STATUS"` for a code this library
/// does not define.
///
/// Ownership: the returned string is static; never free it.
/// Thread safety: may be called from any thread at any time.
#[no_mangle]
pub extern "C" fn mooncake_meta_status_name(status: mooncake_meta_status) -> *const c_char {
    super::boundary::guard(c"UNKNOWN_STATUS".as_ptr(), || static_name(status).as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// docs/CONTRACT.md §3.2, copied literally: the codes are part of the ABI.
    const CONTRACT: [(&str, i32); 29] = [
        ("INTERNAL_ERROR", -1),
        ("SEGMENT_NOT_FOUND", -101),
        ("SEGMENT_ALREADY_EXISTS", -102),
        ("NO_AVAILABLE_HANDLE", -200),
        ("INVALID_PARAMS", -600),
        ("ILLEGAL_CLIENT", -601),
        ("INVALID_WRITE", -700),
        ("REPLICA_IS_NOT_READY", -703),
        ("OBJECT_NOT_FOUND", -704),
        ("OBJECT_ALREADY_EXISTS", -705),
        ("OBJECT_HAS_LEASE", -706),
        ("OBJECT_HAS_REPLICATION_TASK", -708),
        ("OBJECT_NO_REPLICATION_TASK", -709),
        ("REPLICA_NOT_FOUND", -710),
        ("REPLICA_IS_GONE", -712),
        ("OBJECT_REPLICA_BUSY", -714),
        ("UNAVAILABLE_IN_CURRENT_STATUS", -1010),
        ("SERIALIZE_FAIL", -1501),
        ("DESERIALIZE_FAIL", -1502),
        ("NULL_ARGUMENT", -9001),
        ("INVALID_UTF8", -9002),
        ("BUFFER_TOO_SMALL", -9003),
        ("STRUCT_SIZE_UNSUPPORTED", -9004),
        ("UNKNOWN_FLAGS", -9005),
        ("PANIC", -9006),
        ("STALE_WRITE_TOKEN", -9007),
        ("CLOCK_UNSUPPORTED", -9008),
        ("GROUP_RETENTION_FULL", -9009),
        ("JOURNAL_OVERRUN", -9010),
    ];

    // §3.2: every kind has its own negative code, and the code leads back to it.
    #[test]
    fn every_kind_maps_to_a_distinct_code_that_round_trips() {
        let mut seen = HashSet::new();
        for kind in ErrorKind::ALL {
            let code = code_of(kind);
            assert!(code < 0, "{kind} maps to non-negative {code}");
            assert!(seen.insert(code), "{kind} shares code {code}");
            assert_eq!(kind_of(code), Some(kind));
        }
        assert_eq!(kind_of(MOONCAKE_META_OK), None);
        assert_eq!(kind_of(-2), None);
    }

    // §3.2: the numbers are exactly the contract's, name by name.
    #[test]
    fn codes_match_the_contract_table() {
        assert_eq!(CONTRACT.len(), ErrorKind::ALL.len());
        for (name, code) in CONTRACT {
            let kind = ErrorKind::ALL
                .into_iter()
                .find(|k| k.name() == name)
                .unwrap_or_else(|| panic!("no ErrorKind named {name}"));
            assert_eq!(code_of(kind), code, "{name}");
        }
    }

    #[test]
    fn status_names_match_kind_names() {
        let name = |s| {
            unsafe { CStr::from_ptr(mooncake_meta_status_name(s)) }
                .to_str()
                .unwrap()
        };
        for kind in ErrorKind::ALL {
            assert_eq!(name(code_of(kind)), kind.name());
        }
        assert_eq!(name(MOONCAKE_META_OK), "OK");
        assert_eq!(name(12345), "UNKNOWN_STATUS");
    }
}
