//! The per-call error object: a library-owned code + message that a failing
//! call hands to the caller through its optional last parameter. There is no
//! thread-local "last error" (Go moves goroutines between threads).

use super::boundary;
use super::status::{mooncake_meta_status, MOONCAKE_META_NULL_ARGUMENT, MOONCAKE_META_PANIC};
use std::ffi::CString;
use std::os::raw::c_char;

/// Details of one failed call: its status code and a message naming the
/// function and the offending argument. Opaque; created by the library,
/// released with `mooncake_meta_error_free`.
pub struct mooncake_meta_error {
    code: mooncake_meta_status,
    message: CString,
}

impl mooncake_meta_error {
    /// A heap error for the caller. Interior NULs (from echoed input) are
    /// escaped so the message is always one C string.
    pub(crate) fn into_raw(code: mooncake_meta_status, message: &str) -> *mut mooncake_meta_error {
        let message =
            CString::new(message.replace('\0', "\\0")).expect("NUL bytes were escaped just above");
        Box::into_raw(Box::new(mooncake_meta_error { code, message }))
    }
}

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
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_error_code(err: *const mooncake_meta_error) -> i32 {
    boundary::guard(MOONCAKE_META_PANIC, || {
        // SAFETY: the caller passes NULL or a live error.
        match unsafe { err.as_ref() } {
            Some(e) => e.code,
            None => MOONCAKE_META_NULL_ARGUMENT,
        }
    })
}

/// The NUL-terminated UTF-8 message of a failed call. A NULL `err` gives a
/// static string saying so.
///
/// Ownership: the string belongs to `err` and is valid until
/// `mooncake_meta_error_free(err)`; do not free it separately.
/// Thread safety: as `mooncake_meta_error_code`.
///
/// # Safety
/// `err` must be NULL or an error from this library not yet freed.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_error_message(
    err: *const mooncake_meta_error,
) -> *const c_char {
    boundary::guard(c"mooncake_meta_error_message panicked".as_ptr(), || {
        // SAFETY: the caller passes NULL or a live error.
        match unsafe { err.as_ref() } {
            Some(e) => e.message.as_ptr(),
            None => c"NULL mooncake_meta_error".as_ptr(),
        }
    })
}

/// Releases an error object. `mooncake_meta_error_free(NULL)` does nothing.
///
/// Ownership: takes ownership of `err`; it and its message are invalid
/// afterwards.
/// Thread safety: no other thread may use `err` concurrently.
///
/// # Safety
/// `err` must be NULL or an error from this library not yet freed.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_error_free(err: *mut mooncake_meta_error) {
    boundary::guard((), || {
        if !err.is_null() {
            // SAFETY: a non-NULL err came from `into_raw` (Box) and is freed once.
            drop(unsafe { Box::from_raw(err) });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::MOONCAKE_META_INVALID_PARAMS;
    use std::ffi::CStr;

    #[test]
    fn error_keeps_code_and_escapes_nul_in_message() {
        let e = mooncake_meta_error::into_raw(MOONCAKE_META_INVALID_PARAMS, "key a\0b: bad");
        unsafe {
            assert_eq!(mooncake_meta_error_code(e), MOONCAKE_META_INVALID_PARAMS);
            let msg = CStr::from_ptr(mooncake_meta_error_message(e));
            assert_eq!(msg.to_str().unwrap(), "key a\\0b: bad");
            mooncake_meta_error_free(e);
        }
    }

    #[test]
    fn null_error_is_harmless() {
        unsafe {
            assert_eq!(
                mooncake_meta_error_code(std::ptr::null()),
                MOONCAKE_META_NULL_ARGUMENT
            );
            let msg = CStr::from_ptr(mooncake_meta_error_message(std::ptr::null()));
            assert_eq!(msg.to_str().unwrap(), "NULL mooncake_meta_error");
            mooncake_meta_error_free(std::ptr::null_mut());
        }
    }
}
