//! The panic boundary. Every exported function's body runs inside [`call`]
//! (fallible functions) or [`guard`] (accessors and `_free`), so a Rust panic
//! never unwinds into C: it becomes `MOONCAKE_META_PANIC` plus a message,
//! and the handles in use are poisoned by their [`HandleRef`] guards.
//!
//! [`HandleRef`]: super::handle::HandleRef

use super::error::mooncake_meta_error;
use super::handle::{self, Opaque};
use super::status::{code_of, mooncake_meta_status, MOONCAKE_META_OK};
use mooncake_meta_core::error::{Error, ErrorKind, Result};
use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs the body of a fallible exported function.
///
/// `Ok` → `MOONCAKE_META_OK` and `*err` untouched; `Err(e)` → `e`'s code and,
/// if `err` is not NULL, `*err` = a new error whose message is
/// `"{function}: {e.message}"`; a panic → `MOONCAKE_META_PANIC` likewise.
/// Outputs must be written by `f` only once nothing can fail any more (see
/// [`super::input::Out`]).
///
/// # Safety
/// `err` must be NULL or valid for writing one pointer.
pub(crate) unsafe fn call<F>(
    function: &'static str,
    err: *mut *mut mooncake_meta_error,
    f: F,
) -> mooncake_meta_status
where
    F: FnOnce() -> Result<()>,
{
    // AssertUnwindSafe: shared state reachable from `f` is either behind a
    // handle (poisoned by its guard when a panic crosses it) or immutable.
    let error = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => return MOONCAKE_META_OK,
        Ok(Err(e)) => e,
        Err(payload) => {
            let message = format!("panicked: {}", panic_message(payload.as_ref()));
            drop_payload(payload);
            Error::new(ErrorKind::Panic, message)
        }
    };
    let code = code_of(error.kind());
    if !err.is_null() {
        let detail =
            mooncake_meta_error::into_raw(code, &format!("{function}: {}", error.message()));
        // SAFETY: the caller guarantees a non-NULL `err` is writable.
        unsafe { err.write(detail) };
    }
    code
}

/// [`call`] for the common "one handle, then work" shape: borrows `ptr`
/// (NULL → `NULL_ARGUMENT` naming `arg`, poisoned → `PANIC`) and runs `f`
/// on its state; a panic inside `f` poisons the handle.
///
/// # Safety
/// As [`call`], and `ptr` must be NULL or a live handle of type `O`.
pub(crate) unsafe fn with_handle<O, F>(
    function: &'static str,
    ptr: *const O,
    arg: &'static str,
    err: *mut *mut mooncake_meta_error,
    f: F,
) -> mooncake_meta_status
where
    O: Opaque,
    F: FnOnce(&O::Inner) -> Result<()>,
{
    // SAFETY: forwarded from the caller.
    unsafe { call(function, err, || handle::borrow(ptr, arg)?.with(f)) }
}

/// Runs the body of an exported function that has no status to return
/// (accessors, `_free`): a panic yields `on_panic` instead of unwinding.
pub(crate) fn guard<T>(on_panic: T, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(value) => value,
        Err(payload) => {
            drop_payload(payload);
            on_panic
        }
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "non-string panic payload"
    }
}

/// A payload whose destructor panics again must not unwind out of here.
/// The new panic's payload (normally a string) is dropped in turn, so
/// nothing leaks; only after a few payloads whose destructors all panic is
/// the last one forgotten, so a pathological chain cannot loop forever.
fn drop_payload(payload: Box<dyn Any + Send>) {
    let mut payload = payload;
    for _ in 0..8 {
        match catch_unwind(AssertUnwindSafe(move || drop(payload))) {
            Ok(()) => return,
            Err(again) => payload = again,
        }
    }
    std::mem::forget(payload);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{mooncake_meta_error_code, mooncake_meta_error_free};
    use crate::status::{MOONCAKE_META_INVALID_PARAMS, MOONCAKE_META_PANIC};
    use std::ffi::CStr;
    use std::ptr;

    fn message(e: *const mooncake_meta_error) -> String {
        unsafe { CStr::from_ptr(crate::error::mooncake_meta_error_message(e)) }
            .to_str()
            .unwrap()
            .to_owned()
    }

    #[test]
    fn success_leaves_err_untouched() {
        let sentinel = 0x10 as *mut mooncake_meta_error;
        let mut err = sentinel;
        let st = unsafe { call("f", &mut err, || Ok(())) };
        assert_eq!(st, MOONCAKE_META_OK);
        assert_eq!(err, sentinel);
    }

    #[test]
    fn failure_sets_code_and_message_naming_the_function() {
        let mut err = ptr::null_mut();
        let st = unsafe {
            call("mooncake_meta_f", &mut err, || {
                Err(Error::invalid("x: bad"))
            })
        };
        assert_eq!(st, MOONCAKE_META_INVALID_PARAMS);
        unsafe {
            assert_eq!(mooncake_meta_error_code(err), MOONCAKE_META_INVALID_PARAMS);
            assert_eq!(message(err), "mooncake_meta_f: x: bad");
            mooncake_meta_error_free(err);
        }
    }

    #[test]
    fn failure_without_err_still_returns_the_code() {
        let st = unsafe { call("f", ptr::null_mut(), || Err(Error::invalid("bad"))) };
        assert_eq!(st, MOONCAKE_META_INVALID_PARAMS);
    }

    #[test]
    fn panic_becomes_panic_status_with_payload_in_message() {
        let mut err = ptr::null_mut();
        let st = unsafe {
            call("mooncake_meta_f", &mut err, || -> Result<()> {
                panic!("boom {}", 42)
            })
        };
        assert_eq!(st, MOONCAKE_META_PANIC);
        assert_eq!(message(err), "mooncake_meta_f: panicked: boom 42");
        unsafe { mooncake_meta_error_free(err) };
    }

    #[test]
    fn guard_returns_fallback_on_panic() {
        assert_eq!(guard(7, || 3), 3);
        assert_eq!(guard(7, || panic!("boom")), 7);
    }

    #[test]
    fn panicking_payload_destructor_is_contained() {
        struct Bomb;
        impl Drop for Bomb {
            fn drop(&mut self) {
                panic!("payload destructor");
            }
        }
        let st = unsafe {
            call("f", ptr::null_mut(), || -> Result<()> {
                std::panic::panic_any(Bomb)
            })
        };
        assert_eq!(st, MOONCAKE_META_PANIC);
    }
}
