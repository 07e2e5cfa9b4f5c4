//! The raw declarations used as a C program would: handles, the error
//! out-parameter, the BUFFER_TOO_SMALL and `struct_size` conventions, and
//! library-owned buffers.

use mooncake_meta_sys::*;
use std::ffi::CStr;
use std::ptr::{null, null_mut};

const T0: u64 = 1_000_000;

unsafe fn message(err: *const mooncake_meta_error) -> String {
    unsafe { CStr::from_ptr(mooncake_meta_error_message(err)) }
        .to_str()
        .unwrap()
        .to_string()
}

// A full cycle on raw handles, each released by its own free function.
#[test]
fn raw_calls_follow_the_c_conventions() {
    unsafe {
        let mut err: *mut mooncake_meta_error = null_mut();
        let mut cfg: *mut mooncake_meta_config = null_mut();
        assert_eq!(
            mooncake_meta_config_new(&mut cfg, &mut err),
            MOONCAKE_META_OK
        );
        assert_eq!(
            mooncake_meta_config_set_manual_clock(cfg, T0, &mut err),
            MOONCAKE_META_OK
        );
        let mut m: *mut mooncake_meta_master = null_mut();
        assert_eq!(
            mooncake_meta_master_new(cfg, &mut m, &mut err),
            MOONCAKE_META_OK
        );
        mooncake_meta_config_free(cfg);

        let name = "seg";
        let mut seg = 0u32;
        let st = mooncake_meta_mount_segment(
            m,
            1,
            name.as_ptr().cast(),
            name.len(),
            1 << 40,
            1 << 20,
            MOONCAKE_META_POOL_MEMORY,
            &mut seg,
            &mut err,
        );
        assert_eq!(st, MOONCAKE_META_OK);

        // The extended config starts from _init: the library's defaults.
        let mut wc = mooncake_meta_write_config::default();
        let st = mooncake_meta_write_config_init(
            &mut wc,
            size_of::<mooncake_meta_write_config>(),
            &mut err,
        );
        assert_eq!(st, MOONCAKE_META_OK);
        assert_eq!(
            (wc.memory_replicas, wc.soft_pin_action),
            (1, MOONCAKE_META_SOFT_PIN_PRESERVE)
        );
        wc.soft_pin_action = MOONCAKE_META_SOFT_PIN_ENABLE;
        wc.flags = MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL;
        wc.soft_pin_ttl_ms = 5_000;

        // Capacity 0: BUFFER_TOO_SMALL with the count needed, nothing done.
        let key = "k";
        let mut len = 0usize;
        let mut token = 0u64;
        let st = mooncake_meta_put_start(
            m,
            1,
            null(),
            0,
            key.as_ptr().cast(),
            key.len(),
            4096,
            &wc,
            null_mut(),
            0,
            &mut len,
            &mut token,
            &mut err,
        );
        assert_eq!((st, len), (MOONCAKE_META_BUFFER_TOO_SMALL, 1));
        assert_eq!(
            mooncake_meta_error_code(err),
            MOONCAKE_META_BUFFER_TOO_SMALL
        );
        mooncake_meta_error_free(err);
        err = null_mut();
        let mut count = 0u64;
        assert_eq!(
            mooncake_meta_key_count(m, &mut count, null_mut()),
            MOONCAKE_META_OK
        );
        assert_eq!(count, 0);

        let mut replicas = [mooncake_meta_replica::default(); 1];
        let st = mooncake_meta_put_start(
            m,
            1,
            null(),
            0,
            key.as_ptr().cast(),
            key.len(),
            4096,
            &wc,
            replicas.as_mut_ptr(),
            1,
            &mut len,
            &mut token,
            &mut err,
        );
        assert_eq!((st, len), (MOONCAKE_META_OK, 1));
        assert_eq!(replicas[0].segment_id, seg);
        let st = mooncake_meta_put_end(
            m,
            1,
            null(),
            0,
            key.as_ptr().cast(),
            key.len(),
            MOONCAKE_META_SELECT_ALL,
            token,
            &mut err,
        );
        assert_eq!(st, MOONCAKE_META_OK);

        let (mut has, mut deadline) = (0, 0u64);
        let st = mooncake_meta_soft_pin_deadline(
            m,
            null(),
            0,
            key.as_ptr().cast(),
            key.len(),
            &mut has,
            &mut deadline,
            &mut err,
        );
        assert_eq!((st, has, deadline), (MOONCAKE_META_OK, 1, T0 + 5_000));

        // struct_size below the first version: refused, nothing runs.
        let mut stats = mooncake_meta_cleanup_stats {
            struct_size: 4,
            ..Default::default()
        };
        let st = mooncake_meta_run_cleanup_at(m, T0 + 5_000, &mut stats, &mut err);
        assert_eq!(st, MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED);
        assert!(message(err).starts_with("mooncake_meta_run_cleanup_at: "));
        mooncake_meta_error_free(err);
        err = null_mut();
        let mut stats = mooncake_meta_cleanup_stats::default();
        let st = mooncake_meta_run_cleanup_at(m, T0 + 5_000, &mut stats, &mut err);
        assert_eq!((st, stats.expired), (MOONCAKE_META_OK, 1));
        assert_eq!(
            stats.struct_size as usize,
            size_of::<mooncake_meta_cleanup_stats>()
        );

        // A library-owned buffer: data + len + trailing NUL, released by _free.
        let mut text: *mut mooncake_meta_bytes = null_mut();
        assert_eq!(
            mooncake_meta_metrics_prometheus(m, &mut text, &mut err),
            MOONCAKE_META_OK
        );
        let len = mooncake_meta_bytes_len(text);
        let data = mooncake_meta_bytes_data(text);
        assert!(len > 0);
        assert_eq!(*data.add(len), 0);
        let c_text = CStr::from_ptr(data.cast()).to_str().unwrap();
        assert!(c_text.contains("master_key_count"));
        mooncake_meta_bytes_free(text);

        // A NULL handle is NULL_ARGUMENT with a message; a NULL err just returns the code.
        let st = mooncake_meta_key_count(null(), &mut count, &mut err);
        assert_eq!(st, MOONCAKE_META_NULL_ARGUMENT);
        assert!(message(err).contains("mooncake_meta_key_count"));
        mooncake_meta_error_free(err);
        assert_eq!(
            mooncake_meta_key_count(null(), &mut count, null_mut()),
            MOONCAKE_META_NULL_ARGUMENT
        );

        mooncake_meta_master_free(m);
        mooncake_meta_master_free(null_mut());
        mooncake_meta_error_free(null_mut());
        mooncake_meta_bytes_free(null_mut());
    }
}

// A raw batch call on the safe layer's master handle: one status per key.
#[test]
fn batch_exist_reports_per_key() {
    use mooncake_meta_sys::safe::{
        Key, Master, MasterConfig, Pool, ReplicaSelector, SegmentSpec, WriteConfig,
    };
    let m = Master::new(MasterConfig::deterministic(T0)).unwrap();
    let seg = SegmentSpec {
        name: "seg".into(),
        base: 1 << 40,
        size: 1 << 20,
        pool: Pool::Memory,
    };
    m.mount_segment(1, &seg).unwrap();
    let s = m
        .put_start(1, Key::new("a"), 64, &WriteConfig::default())
        .unwrap();
    m.put_end(1, Key::new("a"), ReplicaSelector::All, Some(s.token))
        .unwrap();
    let keys = ["a", "b"];
    let ptrs: Vec<*const std::ffi::c_char> = keys.iter().map(|k| k.as_ptr().cast()).collect();
    let lens: Vec<usize> = keys.iter().map(|k| k.len()).collect();
    let mut exists = [9u8; 2];
    let mut statuses = [1i32; 2];
    let st = unsafe {
        mooncake_meta_batch_exist(
            m.as_ptr(),
            null(),
            0,
            ptrs.as_ptr(),
            lens.as_ptr(),
            2,
            exists.as_mut_ptr(),
            statuses.as_mut_ptr(),
            null_mut(),
        )
    };
    assert_eq!(st, MOONCAKE_META_OK);
    assert_eq!(exists, [1, 0]);
    assert_eq!(statuses, [MOONCAKE_META_OK; 2]);
}
