//! What the C boundary costs per call: the panic guard alone, a config
//! setter (guard + handle + lock), a failing call that builds an error
//! object, and extended/legacy write-config validation. Prints ns/call.
//!
//! `cargo bench --bench ffi_boundary [-- --quick]`; `make bench` runs it
//! (the full mode). `make bench-quick` does not: the bench profile builds
//! the library again (~40 s on this 2-core machine), so it is not in
//! `make test`.

use mooncake_meta::config::*;
use mooncake_meta::error::mooncake_meta_error_free;
use mooncake_meta::legacy_config::*;
use mooncake_meta::version::mooncake_meta_abi_version;
use mooncake_meta::write_config::*;
use std::hint::black_box;
use std::os::raw::c_char;
use std::ptr;
use std::time::Instant;

fn measure(name: &str, iterations: u64, mut f: impl FnMut()) {
    for _ in 0..iterations / 10 {
        f();
    }
    let start = Instant::now();
    for _ in 0..iterations {
        f();
    }
    let ns = start.elapsed().as_nanos() as f64 / iterations as f64;
    println!(
        "{name:<48} {iterations:>10} calls {ns:>9.1} ns/call {:>12.0} calls/s",
        1e9 / ns
    );
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let n: u64 = if quick { 200_000 } else { 5_000_000 };
    println!("ffi_boundary ({})", if quick { "quick" } else { "full" });

    measure("abi_version (panic guard only)", n, || {
        black_box(mooncake_meta_abi_version());
    });

    let mut cfg = ptr::null_mut();
    unsafe { assert_eq!(mooncake_meta_config_new(&mut cfg, ptr::null_mut()), 0) };
    measure("config setter (guard + handle + lock)", n, || unsafe {
        black_box(mooncake_meta_config_set_eviction_ratio(
            cfg,
            black_box(0.1),
            ptr::null_mut(),
        ));
    });
    measure("failing setter with an error object", n / 4, || unsafe {
        let mut err = ptr::null_mut();
        black_box(mooncake_meta_config_set_allow_evict_soft_pinned_objects(
            cfg, 2, &mut err,
        ));
        mooncake_meta_error_free(err);
    });
    unsafe { mooncake_meta_config_free(cfg) };

    let segments: [*const c_char; 2] = [c"node-1/dram".as_ptr(), c"node-2/dram".as_ptr()];
    let mut wc = std::mem::MaybeUninit::<mooncake_meta_write_config>::uninit();
    let size = std::mem::size_of::<mooncake_meta_write_config>();
    unsafe {
        assert_eq!(
            mooncake_meta_write_config_init(wc.as_mut_ptr(), size, ptr::null_mut()),
            0
        )
    };
    let mut wc = unsafe { wc.assume_init() };
    wc.soft_pin_action = MOONCAKE_META_SOFT_PIN_ENABLE;
    wc.flags = MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL;
    wc.soft_pin_ttl_ms = 600_000;
    wc.preferred_segments = segments.as_ptr();
    wc.preferred_segments_count = 2;
    wc.group = c"prefix-cache".as_ptr();
    measure(
        "write_config_validate (2 segments + group)",
        n / 4,
        || unsafe {
            black_box(mooncake_meta_write_config_validate(
                black_box(&wc),
                ptr::null_mut(),
            ));
        },
    );

    let mut legacy_segments = segments;
    let legacy = mooncake_meta_replicate_config {
        replica_num: 1,
        with_soft_pin: 1,
        with_hard_pin: 0,
        preferred_segments: legacy_segments.as_mut_ptr(),
        preferred_segments_count: 2,
    };
    measure(
        "replicate_config_validate (legacy, 2 segments)",
        n / 4,
        || unsafe {
            black_box(mooncake_meta_replicate_config_validate(
                black_box(&legacy),
                ptr::null_mut(),
            ));
        },
    );
}
