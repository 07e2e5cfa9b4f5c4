//! The legacy write configuration through the C entry points (called from
//! Rust), checked against the master's soft-pin state, which the C ABI does
//! not expose: `with_soft_pin != 0` is ENABLE with the master's default TTL
//! and `0` is PRESERVE (docs/CONTRACT.md §4.1, "Legacy boolean").

use mooncake_meta::config::*;
use mooncake_meta::error::{mooncake_meta_error, mooncake_meta_error_free};
use mooncake_meta::legacy_config::*;
use mooncake_meta::master::*;
use mooncake_meta::read::mooncake_meta_get_replica_list;
use mooncake_meta::replica::mooncake_meta_replica;
use mooncake_meta::segments::*;
use mooncake_meta::status::*;
use mooncake_meta::write::*;
use mooncake_meta::write_config::*;
use mooncake_meta_core::Key;
use std::ptr::{self, null, null_mut};

const T0: u64 = 1_000_000;
const C1: u64 = 1;

fn ok(st: mooncake_meta_status) {
    assert_eq!(st, MOONCAKE_META_OK, "{}", unsafe {
        std::ffi::CStr::from_ptr(mooncake_meta_status_name(st)).to_string_lossy()
    });
}

/// A C-created master on a manual clock at T0 with background work off,
/// its default soft-pin TTL `default_ttl`, and two memory segments.
struct Fixture(*mut mooncake_meta_master);

impl Fixture {
    fn new(default_ttl: u64) -> Self {
        let mut cfg = null_mut();
        let mut m = null_mut();
        let e = null_mut::<*mut mooncake_meta_error>();
        unsafe {
            ok(mooncake_meta_config_new(&mut cfg, e));
            ok(mooncake_meta_config_set_manual_clock(cfg, T0, e));
            ok(mooncake_meta_config_set_soft_pin_cleanup_interval_ms(
                cfg, 0, e,
            ));
            ok(mooncake_meta_config_set_eviction_check_interval_ms(
                cfg, 0, e,
            ));
            ok(mooncake_meta_config_set_sweep_interval_ms(cfg, 0, e));
            ok(mooncake_meta_config_set_default_kv_soft_pin_ttl_ms(
                cfg,
                default_ttl,
                e,
            ));
            ok(mooncake_meta_master_new(cfg, &mut m, e));
            mooncake_meta_config_free(cfg);
            for (i, name) in ["mem0", "mem1"].iter().enumerate() {
                let mut id = 0;
                ok(mooncake_meta_mount_segment(
                    m,
                    C1,
                    name.as_ptr().cast(),
                    name.len(),
                    (i as u64 + 1) << 40,
                    1 << 20,
                    MOONCAKE_META_POOL_MEMORY,
                    &mut id,
                    e,
                ));
            }
        }
        Fixture(m)
    }

    fn deadline(&self, key: &str) -> Option<u64> {
        unsafe { master_ref(self.0) }
            .soft_pin_deadline(Key::new(key))
            .unwrap()
    }

    fn advance(&self, ms: u64) {
        ok(unsafe { mooncake_meta_master_advance_time(self.0, ms, null_mut(), null_mut()) });
    }

    /// A Start through one of the C entry points, then End(ALL) with its token.
    fn write(
        &self,
        key: &str,
        size: u64,
        start: impl FnOnce(
            *const mooncake_meta_master,
            &str,
            u64,
            *mut mooncake_meta_replica,
            *mut usize,
            *mut u64,
        ) -> mooncake_meta_status,
    ) {
        let mut replicas = [zero(); 4];
        let (mut len, mut token) = (0usize, 0u64);
        ok(start(
            self.0,
            key,
            size,
            replicas.as_mut_ptr(),
            &mut len,
            &mut token,
        ));
        assert!(len >= 1 && token != 0);
        ok(unsafe {
            mooncake_meta_put_end(
                self.0,
                C1,
                null(),
                0,
                key.as_ptr().cast(),
                key.len(),
                MOONCAKE_META_SELECT_ALL,
                token,
                null_mut(),
            )
        });
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        unsafe { mooncake_meta_master_free(self.0) };
    }
}

fn zero() -> mooncake_meta_replica {
    mooncake_meta_replica {
        id: 0,
        kind: 0,
        status: 0,
        segment_id: 0,
        reserved: 0,
        address: 0,
        size: 0,
        client: 0,
    }
}

fn legacy(with_soft_pin: i32) -> mooncake_meta_replicate_config {
    mooncake_meta_replicate_config {
        replica_num: 1,
        with_soft_pin,
        with_hard_pin: 0,
        preferred_segments: null_mut(),
        preferred_segments_count: 0,
    }
}

fn put_legacy(
    cfg: *const mooncake_meta_replicate_config,
) -> impl FnOnce(
    *const mooncake_meta_master,
    &str,
    u64,
    *mut mooncake_meta_replica,
    *mut usize,
    *mut u64,
) -> mooncake_meta_status {
    move |m, key, size, out, len, token| unsafe {
        mooncake_meta_put_start_legacy(
            m,
            C1,
            null(),
            0,
            key.as_ptr().cast(),
            key.len(),
            size,
            cfg,
            out,
            4,
            len,
            token,
            null_mut(),
        )
    }
}

fn upsert_legacy(
    cfg: *const mooncake_meta_replicate_config,
) -> impl FnOnce(
    *const mooncake_meta_master,
    &str,
    u64,
    *mut mooncake_meta_replica,
    *mut usize,
    *mut u64,
) -> mooncake_meta_status {
    move |m, key, size, out, len, token| unsafe {
        mooncake_meta_upsert_start_legacy(
            m,
            C1,
            null(),
            0,
            key.as_ptr().cast(),
            key.len(),
            size,
            cfg,
            out,
            4,
            len,
            token,
            null_mut(),
        )
    }
}

fn put_extended(
    cfg: *const mooncake_meta_write_config,
) -> impl FnOnce(
    *const mooncake_meta_master,
    &str,
    u64,
    *mut mooncake_meta_replica,
    *mut usize,
    *mut u64,
) -> mooncake_meta_status {
    move |m, key, size, out, len, token| unsafe {
        mooncake_meta_put_start(
            m,
            C1,
            null(),
            0,
            key.as_ptr().cast(),
            key.len(),
            size,
            cfg,
            out,
            4,
            len,
            token,
            null_mut(),
        )
    }
}

fn extended(action: u32, ttl: Option<u64>) -> mooncake_meta_write_config {
    let mut c = std::mem::MaybeUninit::<mooncake_meta_write_config>::uninit();
    ok(unsafe {
        mooncake_meta_write_config_init(
            c.as_mut_ptr(),
            size_of::<mooncake_meta_write_config>(),
            null_mut(),
        )
    });
    let mut c = unsafe { c.assume_init() };
    c.soft_pin_action = action;
    if let Some(t) = ttl {
        c.flags |= MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL;
        c.soft_pin_ttl_ms = t;
    }
    c
}

// §4.1 legacy: with_soft_pin = 1 commits exactly now + the master's default TTL.
#[test]
fn legacy_with_soft_pin_commits_the_master_default_ttl() {
    for default_ttl in [60_000, 1_800_000] {
        let f = Fixture::new(default_ttl);
        f.advance(5);
        f.write("k", 64, put_legacy(&legacy(1)));
        assert_eq!(f.deadline("k"), Some(T0 + 5 + default_ttl));
    }
}

// §4.1 legacy: any non-zero with_soft_pin (C truthiness) is ENABLE.
#[test]
fn legacy_any_non_zero_with_soft_pin_enables() {
    let f = Fixture::new(60_000);
    f.write("neg", 64, put_legacy(&legacy(-3)));
    f.write("big", 64, put_legacy(&legacy(7)));
    assert_eq!(f.deadline("neg"), Some(T0 + 60_000));
    assert_eq!(f.deadline("big"), Some(T0 + 60_000));
}

// §4.1: legacy with_soft_pin = 1 behaves exactly as extended ENABLE without a TTL.
#[test]
fn legacy_enable_equals_extended_enable_with_default_ttl() {
    let f = Fixture::new(90_000);
    f.write("legacy", 64, put_legacy(&legacy(1)));
    f.write(
        "extended",
        64,
        put_extended(&extended(MOONCAKE_META_SOFT_PIN_ENABLE, None)),
    );
    assert_eq!(f.deadline("legacy"), f.deadline("extended"));
    assert_eq!(f.deadline("legacy"), Some(T0 + 90_000));
}

// §4.1: legacy with_soft_pin = 0 and a NULL legacy config are PRESERVE: nothing committed.
#[test]
fn legacy_without_soft_pin_commits_nothing_on_a_new_object() {
    let f = Fixture::new(60_000);
    f.write("zero", 64, put_legacy(&legacy(0)));
    f.write("null", 64, put_legacy(ptr::null()));
    assert_eq!(f.deadline("zero"), None);
    assert_eq!(f.deadline("null"), None);
}

// §4.5: legacy with_soft_pin = 0 on an upsert of a pinned object keeps its deadline,
// in place (same size) and on replacement (other size).
#[test]
fn legacy_upsert_without_soft_pin_keeps_the_deadline() {
    let f = Fixture::new(60_000);
    let pin = extended(MOONCAKE_META_SOFT_PIN_ENABLE, Some(100_000));
    f.write("k", 64, put_extended(&pin));
    assert_eq!(f.deadline("k"), Some(T0 + 100_000));
    f.advance(10_000);
    f.write("k", 64, upsert_legacy(&legacy(0)));
    assert_eq!(f.deadline("k"), Some(T0 + 100_000), "in place");
    f.advance(10_000);
    f.write("k", 128, upsert_legacy(&legacy(0)));
    assert_eq!(f.deadline("k"), Some(T0 + 100_000), "resized");
}

// §4.3: legacy with_soft_pin = 1 on an upsert starts a new lifetime at its End.
#[test]
fn legacy_upsert_with_soft_pin_restarts_the_lifetime() {
    let f = Fixture::new(60_000);
    f.write("k", 64, put_legacy(&legacy(1)));
    f.advance(20_000);
    f.write("k", 64, upsert_legacy(&legacy(1)));
    assert_eq!(f.deadline("k"), Some(T0 + 20_000 + 60_000));
}

// Reads through the C ABI never extend the soft pin (docs/CONTRACT.md §4.6).
#[test]
fn c_reads_do_not_extend_a_legacy_soft_pin() {
    let f = Fixture::new(60_000);
    f.write("k", 64, put_legacy(&legacy(1)));
    f.advance(30_000);
    let mut out = [zero(); 2];
    let mut len = 0;
    ok(unsafe {
        mooncake_meta_get_replica_list(
            f.0,
            null(),
            0,
            c"k".as_ptr(),
            1,
            out.as_mut_ptr(),
            2,
            &mut len,
            null_mut(),
        )
    });
    assert_eq!(len, 1);
    assert_eq!(f.deadline("k"), Some(T0 + 60_000));
}

// The test helper reads the state behind a handle that C calls changed.
#[test]
fn master_ref_sees_the_state_c_calls_made() {
    let f = Fixture::new(60_000);
    f.write("k", 64, put_legacy(&legacy(0)));
    let mut err = null_mut();
    let mut out = [zero(); 1];
    let st = unsafe {
        mooncake_meta_put_start_legacy(
            f.0,
            C1,
            null(),
            0,
            c"k".as_ptr(),
            1,
            64,
            &legacy(0),
            out.as_mut_ptr(),
            1,
            &mut 0,
            null_mut(),
            &mut err,
        )
    };
    assert_eq!(st, MOONCAKE_META_OBJECT_ALREADY_EXISTS);
    unsafe { mooncake_meta_error_free(err) };
    assert_eq!(unsafe { master_ref(f.0) }.key_count(), 1);
}
