//! A batch Put Start given too little room for its answers, racing the
//! promotion of the standby it is called on: every answer is
//! UNAVAILABLE_IN_CURRENT_STATUS (still a standby) or BUFFER_TOO_SMALL (a
//! primary by then), never a batch run against the short buffer. The C
//! layer once let a standby's batch through to the core's own role check
//! whatever the room given; a promote between the two started the key and
//! the answer overflowed the buffer (PANIC, the master poisoned right after
//! a failover). Each round promotes after a different delay, so some
//! promotes land between the two checks (15 of 4000 rounds did, before the
//! fix, on a 2-core machine).

use mooncake_meta::batch::mooncake_meta_batch_put_start;
use mooncake_meta::config::*;
use mooncake_meta::error::{
    mooncake_meta_error, mooncake_meta_error_free, mooncake_meta_error_message,
};
use mooncake_meta::master::*;
use mooncake_meta::read::mooncake_meta_key_count;
use mooncake_meta::status::*;
use mooncake_meta_core::{Master, MasterConfig, Pool, SegmentSpec};
use std::collections::BTreeMap;
use std::ffi::CStr;
use std::os::raw::c_char;
use std::ptr::{null, null_mut};
use std::sync::{Arc, Barrier};

/// Rounds, each a fresh standby promoted after a different delay.
const ROUNDS: u64 = 4000;

fn primary_journal() -> Vec<u8> {
    let mut c = MasterConfig::deterministic(1_000_000);
    c.shard_count = 1;
    c.journal_capacity_bytes = 1 << 20;
    let p = Master::new(c).unwrap();
    p.mount_segment(
        1,
        &SegmentSpec {
            name: "mem0".into(),
            base: 1 << 40,
            size: 1 << 24,
            pool: Pool::Memory,
        },
    )
    .unwrap();
    p.journal_read_to_vec(1).unwrap()
}

fn standby(journal: &[u8]) -> *mut mooncake_meta_master {
    let e = null_mut();
    let (mut cfg, mut m) = (null_mut(), null_mut());
    unsafe {
        assert_eq!(mooncake_meta_config_new(&mut cfg, e), 0);
        for st in [
            mooncake_meta_config_set_manual_clock(cfg, 1_000_000, e),
            mooncake_meta_config_set_soft_pin_cleanup_interval_ms(cfg, 0, e),
            mooncake_meta_config_set_eviction_check_interval_ms(cfg, 0, e),
            mooncake_meta_config_set_sweep_interval_ms(cfg, 0, e),
            mooncake_meta_config_set_shard_count(cfg, 1, e),
            mooncake_meta_config_set_standby(cfg, 1, e),
            mooncake_meta_master_new(cfg, &mut m, e),
        ] {
            assert_eq!(st, 0);
        }
        mooncake_meta_config_free(cfg);
        master_ref(m).apply_journal(journal).unwrap();
    }
    m
}

fn take(err: *mut mooncake_meta_error) -> String {
    if err.is_null() {
        return String::new();
    }
    let s = unsafe { CStr::from_ptr(mooncake_meta_error_message(err)) }
        .to_string_lossy()
        .into_owned();
    unsafe { mooncake_meta_error_free(err) };
    s
}

#[test]
fn a_batch_start_with_too_little_room_racing_a_promote_never_runs() {
    let journal = primary_journal();
    let key = b"k";
    let keys: [*const c_char; 1] = [key.as_ptr().cast()];
    let lens = [key.len()];
    let sizes = [64u64];
    let mut outcomes: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut panic_message = None;
    let mut poisoned_after_panic = None;
    for iter in 0..ROUNDS {
        let m = standby(&journal);
        let mp = m as usize;
        let go = Arc::new(Barrier::new(2));
        let go2 = go.clone();
        let promoter = std::thread::spawn(move || {
            go2.wait();
            for _ in 0..(iter * 7919 % ROUNDS) {
                std::hint::spin_loop();
            }
            unsafe { master_ref(mp as *const mooncake_meta_master) }
                .promote()
                .unwrap();
        });
        go.wait();
        let (st, msg) = loop {
            let mut counts = [0usize; 1];
            let mut tokens = [0u64; 1];
            let mut statuses = [0i32; 1];
            let mut err = null_mut();
            // (NULL, 0): no room for the one replica the request needs.
            let st = unsafe {
                mooncake_meta_batch_put_start(
                    m,
                    1,
                    null(),
                    0,
                    keys.as_ptr(),
                    lens.as_ptr(),
                    1,
                    sizes.as_ptr(),
                    null(),
                    null_mut(),
                    0,
                    counts.as_mut_ptr(),
                    tokens.as_mut_ptr(),
                    statuses.as_mut_ptr(),
                    &mut err,
                )
            };
            let msg = take(err);
            if st != MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS {
                break (st, msg);
            }
        };
        promoter.join().unwrap();
        let name = unsafe { CStr::from_ptr(mooncake_meta_status_name(st)) }
            .to_str()
            .unwrap();
        *outcomes.entry(name).or_default() += 1;
        if st == MOONCAKE_META_PANIC && panic_message.is_none() {
            panic_message = Some(msg);
            let mut n = 0u64;
            let mut err = null_mut();
            let kc = unsafe { mooncake_meta_key_count(m, &mut n, &mut err) };
            poisoned_after_panic = Some((kc, take(err)));
        }
        unsafe { mooncake_meta_master_free(m) };
    }
    assert_eq!(
        outcomes.keys().copied().collect::<Vec<_>>(),
        ["BUFFER_TOO_SMALL"],
        "the first answer that is not UNAVAILABLE, by round: {outcomes:?}; \
         the first PANIC: {panic_message:?}, then: {poisoned_after_panic:?}"
    );
}
