//! A library panic through the safe layer (feature `test-hooks`, linked
//! against the hooks build of the library): the C ABI catches it, reports
//! PANIC and poisons the master. Fallible methods then return
//! `ErrorKind::Panic`; methods the core declares infallible panic with the
//! library's message rather than invent a value; drop still frees the master.
#![cfg(feature = "test-hooks")]

mod common;

use common::*;
use mooncake_meta_sys::safe::*;
use mooncake_meta_sys::{mooncake_meta_error, mooncake_meta_master, mooncake_meta_status};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A call on a master, by the C function it makes.
type Call = (&'static str, Box<dyn Fn(&Master)>);

extern "C" {
    /// The hooks build's deliberate panic inside a master call.
    fn mooncake_meta_test_panic(
        m: *const mooncake_meta_master,
        err: *mut *mut mooncake_meta_error,
    ) -> mooncake_meta_status;
}

fn poison(m: &Master) {
    // SAFETY: a live master; no error object asked for.
    let status = unsafe { mooncake_meta_test_panic(m.as_ptr(), std::ptr::null_mut()) };
    assert_eq!(ErrorKind::from_code(status), Some(ErrorKind::Panic));
}

fn panic_message(f: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("the call did not panic");
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn a_poisoned_master_fails_fallible_calls_with_panic() {
    let m = master();
    put(&m, "k", &enable(Some(1_000)));
    poison(&m);
    for err in [
        m.exist(Key::new("k")).map(drop).unwrap_err(),
        m.soft_pin_deadline(Key::new("k")).map(drop).unwrap_err(),
        m.put_start(C1, Key::new("j"), SIZE, &WriteConfig::default())
            .map(drop)
            .unwrap_err(),
        m.snapshot().map(drop).unwrap_err(),
        m.validate_write_request(Key::new("j"), SIZE, &WriteConfig::default())
            .unwrap_err(),
        m.batch_exist(&[Key::new("k")])
            .remove(0)
            .map(drop)
            .unwrap_err(),
    ] {
        assert_eq!(err.kind(), ErrorKind::Panic, "{err}");
        assert!(err.message().contains("poisoned"), "{err}");
    }
    assert!(m.check_invariants().unwrap_err().contains("poisoned"));
}

#[test]
fn a_poisoned_master_panics_in_calls_the_core_declares_infallible() {
    let m = master();
    put(&m, "k", &WriteConfig::default());
    poison(&m);
    let calls: Vec<Call> = vec![
        (
            "mooncake_meta_master_now",
            Box::new(|m| {
                m.now();
            }),
        ),
        (
            "mooncake_meta_key_count",
            Box::new(|m| {
                m.key_count();
            }),
        ),
        (
            "mooncake_meta_run_cleanup",
            Box::new(|m| {
                m.run_cleanup();
            }),
        ),
        (
            "mooncake_meta_run_cleanup_at",
            Box::new(|m| {
                m.run_cleanup_at(T0);
            }),
        ),
        (
            "mooncake_meta_metrics",
            Box::new(|m| {
                m.metrics();
            }),
        ),
        (
            "mooncake_meta_remove_all",
            Box::new(|m| {
                m.remove_all(true);
            }),
        ),
        (
            "mooncake_meta_segment_name",
            Box::new(|m| {
                m.segment_name(1);
            }),
        ),
        (
            "mooncake_meta_get_replica_list",
            Box::new(|m| {
                m.readable_count(Key::new("k"));
            }),
        ),
        (
            "mooncake_meta_evict_if_needed",
            Box::new(|m| {
                m.evict_if_needed(true);
            }),
        ),
    ];
    for (function, call) in calls {
        let msg = panic_message(|| call(&m));
        assert!(msg.starts_with(function), "{function}: {msg}");
        assert!(
            msg.contains("PANIC: ") && msg.contains("poisoned"),
            "{function}: {msg}"
        );
    }
    // Dropping the poisoned master frees it (only `_free` still works).
    drop(m);
}
