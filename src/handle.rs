//! Opaque handles. A C handle type is a zero-sized marker (`struct
//! mooncake_meta_x { _private: [u8; 0] }`, opaque in the header) whose
//! pointers really point at a [`Handle`] of the Rust state named by
//! [`Opaque::Inner`]. Handles hand out only shared references, so the state
//! must be `Sync` and does its own locking. The state is reached only
//! through [`HandleRef::with`]: a panic inside it poisons the handle, after
//! which only `_free` works, and a normal return does not, even when the
//! calling thread was already unwinding from a panic of its own (a Rust
//! caller calling from a `Drop`).

use mooncake_meta_core::error::{Error, ErrorKind, Result};
use std::sync::atomic::{AtomicBool, Ordering};

/// Ties an opaque C type to the Rust state behind it.
pub(crate) trait Opaque: Sized {
    /// The state a handle owns. `Send + Sync`: C may use and free a handle
    /// from any thread.
    type Inner: Send + Sync + 'static;
    /// The C type name, for messages.
    const C_NAME: &'static str;
    /// The function that frees this handle, for messages.
    const FREE: &'static str;
}

/// What a handle pointer points at.
pub(crate) struct Handle<T> {
    poisoned: AtomicBool,
    inner: T,
}

/// Moves `inner` to the heap and returns the C handle for it.
pub(crate) fn into_raw<O: Opaque>(inner: O::Inner) -> *mut O {
    Box::into_raw(Box::new(Handle {
        poisoned: AtomicBool::new(false),
        inner,
    }))
    .cast()
}

/// Borrows a handle's state for the rest of the call. NULL →
/// `NULL_ARGUMENT` naming `arg`; poisoned → `PANIC`.
///
/// # Safety
/// `ptr` must be NULL or come from [`into_raw`] for the same `O` and not yet
/// be freed, for as long as the returned guard lives.
pub(crate) unsafe fn borrow<'a, O: Opaque>(
    ptr: *const O,
    arg: &str,
) -> Result<HandleRef<'a, O::Inner>> {
    // SAFETY: per the contract, a non-NULL ptr is a live Handle<O::Inner>.
    let Some(handle) = (unsafe { ptr.cast::<Handle<O::Inner>>().as_ref() }) else {
        return Err(Error::new(
            ErrorKind::NullArgument,
            format!("{arg} is NULL (expected a {})", O::C_NAME),
        ));
    };
    if handle.poisoned.load(Ordering::Acquire) {
        return Err(Error::new(
            ErrorKind::Panic,
            format!(
                "{arg}: this {} was poisoned by an earlier panic; only {} may be called on it",
                O::C_NAME,
                O::FREE
            ),
        ));
    }
    Ok(HandleRef {
        handle,
        armed: true,
    })
}

/// Frees a handle; NULL is a no-op. Poisoned handles are freed too.
///
/// # Safety
/// `ptr` must be NULL or come from [`into_raw`] for the same `O`, be freed
/// once, and not be in use by another thread.
pub(crate) unsafe fn free<O: Opaque>(ptr: *mut O) {
    if !ptr.is_null() {
        // SAFETY: per the contract, ptr is an unfreed Box<Handle<O::Inner>>.
        drop(unsafe { Box::from_raw(ptr.cast::<Handle<O::Inner>>()) });
    }
}

/// A handle borrowed for one call, whose state [`with`](Self::with)
/// reaches. Dropped while armed during a panic — the panic of a `with`
/// body, which left before disarming it — it poisons the handle: the state
/// may be half-updated. Whether the thread was already unwinding when the
/// call began does not matter: a body's normal return disarms the guard
/// (a Rust caller's call from a `Drop` during its own panic stays
/// harmless), and a body's panic poisons even then (a panic while
/// panicking, caught at the boundary, does not abort).
pub(crate) struct HandleRef<'a, T> {
    handle: &'a Handle<T>,
    /// Set until a `with` body returns normally.
    armed: bool,
}

impl<T> HandleRef<'_, T> {
    /// Runs `f` on the handle's state. A panic in `f` poisons the handle
    /// (the guard is dropped armed, while the panic unwinds); a normal
    /// return ends the borrow clean.
    pub(crate) fn with<R>(mut self, f: impl FnOnce(&T) -> R) -> R {
        let r = f(&self.handle.inner);
        self.armed = false;
        r
    }
}

impl<T> Drop for HandleRef<'_, T> {
    fn drop(&mut self) {
        if self.armed && std::thread::panicking() {
            self.handle.poisoned.store(true, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::sync::atomic::AtomicU32;

    struct Thing {
        _private: [u8; 0],
    }
    impl Opaque for Thing {
        type Inner = AtomicU32;
        const C_NAME: &'static str = "thing";
        const FREE: &'static str = "thing_free";
    }

    #[test]
    fn null_handle_is_a_null_argument_naming_the_parameter() {
        let e = unsafe { borrow::<Thing>(std::ptr::null(), "t") }
            .err()
            .unwrap();
        assert_eq!(e.kind(), ErrorKind::NullArgument);
        assert_eq!(e.message(), "t is NULL (expected a thing)");
    }

    // A Rust caller that calls the library from a `Drop` while its own
    // panic unwinds (a guard revoking a write in a request handler whose
    // panics are caught): the call succeeds and the handle stays usable.
    #[test]
    fn a_call_made_while_the_caller_unwinds_does_not_poison() {
        struct UseOnDrop(*mut Thing);
        impl Drop for UseOnDrop {
            fn drop(&mut self) {
                assert!(std::thread::panicking());
                unsafe { borrow(self.0, "t").unwrap() }.with(|v| v.store(3, Ordering::Relaxed));
            }
        }
        let t = into_raw::<Thing>(AtomicU32::new(1));
        let r = catch_unwind(AssertUnwindSafe(|| {
            let _g = UseOnDrop(t);
            panic!("the caller's own panic");
        }));
        assert!(r.is_err());
        unsafe {
            let h = borrow(t, "t").expect("not poisoned by the caller's panic");
            assert_eq!(h.with(|v| v.load(Ordering::Relaxed)), 3);
            free(t);
        }
    }

    // A call that panics while the caller was already unwinding (a `Drop`
    // during the caller's panic) poisons as any panicking call does: the
    // nested panic is caught (it does not abort) and the state may be
    // half-updated.
    #[test]
    fn a_call_that_panics_while_the_caller_unwinds_poisons() {
        struct PanicOnDrop(*mut Thing);
        impl Drop for PanicOnDrop {
            fn drop(&mut self) {
                assert!(std::thread::panicking());
                let r = catch_unwind(AssertUnwindSafe(|| unsafe {
                    borrow(self.0, "t").unwrap().with(|v| {
                        v.store(99, Ordering::Relaxed);
                        panic!("the call's own panic, half-way")
                    })
                }));
                assert!(r.is_err(), "caught, not aborted");
            }
        }
        let t = into_raw::<Thing>(AtomicU32::new(1));
        let r = catch_unwind(AssertUnwindSafe(|| {
            let _g = PanicOnDrop(t);
            panic!("the caller's own panic");
        }));
        assert!(r.is_err());
        unsafe {
            let e = borrow(t, "t").err().expect("poisoned by the call's panic");
            assert_eq!(e.kind(), ErrorKind::Panic);
            free(t);
        }
    }

    #[test]
    fn panic_while_borrowed_poisons_until_free() {
        let t = into_raw::<Thing>(AtomicU32::new(1));
        unsafe {
            borrow(t, "t")
                .unwrap()
                .with(|v| v.store(2, Ordering::Relaxed));
            let r = catch_unwind(AssertUnwindSafe(|| {
                borrow(t, "t").unwrap().with(|_| panic!("inside"));
            }));
            assert!(r.is_err());
            let e = borrow(t, "t").err().unwrap();
            assert_eq!(e.kind(), ErrorKind::Panic);
            assert!(e.message().contains("thing_free"), "{}", e.message());
            free(t);
            free::<Thing>(std::ptr::null_mut());
        }
    }

    #[test]
    fn normal_use_does_not_poison() {
        let t = into_raw::<Thing>(AtomicU32::new(1));
        unsafe {
            for _ in 0..3 {
                borrow(t, "t")
                    .unwrap()
                    .with(|v| v.fetch_add(1, Ordering::Relaxed));
            }
            assert_eq!(
                borrow(t, "t").unwrap().with(|v| v.load(Ordering::Relaxed)),
                4
            );
            free(t);
        }
    }
}
