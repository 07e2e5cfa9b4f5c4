//! The legacy write configuration, frozen forever in upstream Mooncake's
//! `store_c.h` layout: `with_soft_pin` is a C boolean (non-zero → ENABLE
//! with the master's default TTL, 0 → PRESERVE; docs/CONTRACT.md §4.1). Translated
//! to [`WriteConfig`] and checked like the extended struct.

use super::boundary;
use super::error::mooncake_meta_error;
use super::input::{self, Field};
use super::status::mooncake_meta_status;
use super::write_config::check;
use mooncake_meta_core::error::{Error, Result};
use mooncake_meta_core::soft_pin::SoftPinRequest;
use mooncake_meta_core::types::WriteConfig;
use std::mem::{offset_of, size_of};
use std::os::raw::{c_char, c_int};

/// The legacy write configuration, identical in layout to upstream
/// Mooncake's `struct mooncake_replicate_config` (store_c.h) and frozen
/// forever. `with_soft_pin` non-zero means ENABLE with the master's default
/// TTL, 0 means PRESERVE; `with_hard_pin` non-zero hard-pins the object.
/// Wherever a pointer to it is taken, NULL means the defaults (one memory
/// replica, PRESERVE, no hard pin), as upstream.
///
/// Ownership: filled and owned by the caller; the library only reads it
/// (and the strings it points to) during the call.
#[repr(C)]
pub struct mooncake_meta_replicate_config {
    /// Number of memory replicas (at least 1).
    pub replica_num: usize,
    /// Non-zero: soft-pin with the master's default TTL.
    pub with_soft_pin: c_int,
    /// Non-zero: hard-pin the object.
    pub with_hard_pin: c_int,
    /// `preferred_segments_count` NUL-terminated UTF-8 segment names to try
    /// first, in order; may be NULL when the count is 0.
    pub preferred_segments: *mut *const c_char,
    /// Number of entries in `preferred_segments`.
    pub preferred_segments_count: usize,
}

// The legacy layout is part of the ABI: size_t, int, int, pointer, size_t.
const _: () = {
    type L = mooncake_meta_replicate_config;
    const P: usize = size_of::<usize>();
    const SEGS: usize = (P + 2 * size_of::<c_int>()).next_multiple_of(P);
    assert!(size_of::<c_int>() == 4);
    assert!(size_of::<*mut *const c_char>() == P);
    assert!(offset_of!(L, replica_num) == 0);
    assert!(offset_of!(L, with_soft_pin) == P);
    assert!(offset_of!(L, with_hard_pin) == P + 4);
    assert!(offset_of!(L, preferred_segments) == SEGS);
    assert!(offset_of!(L, preferred_segments_count) == SEGS + P);
    assert!(size_of::<L>() == SEGS + 2 * P);
    assert!(std::mem::align_of::<L>() == P);
    #[cfg(target_pointer_width = "64")]
    assert!(size_of::<L>() == 32 && offset_of!(L, preferred_segments) == 16);
};

/// Translates the legacy struct; NULL gives the defaults.
///
/// # Safety
/// `cfg` must be NULL or point to a readable legacy struct whose string
/// pointers obey their field docs.
pub(crate) unsafe fn read_legacy(
    cfg: *const mooncake_meta_replicate_config,
    arg: &str,
) -> Result<WriteConfig> {
    // SAFETY: per the contract.
    let Some(c) = (unsafe { cfg.as_ref() }) else {
        return Ok(WriteConfig::default());
    };
    let memory_replicas = u32::try_from(c.replica_num)
        .map_err(|_| Error::invalid(format!("{arg}.replica_num {} is too large", c.replica_num)))?;
    // SAFETY: per the contract.
    let segments = unsafe {
        input::c_str_array(
            c.preferred_segments.cast_const(),
            c.preferred_segments_count,
            Field(arg, "preferred_segments"),
        )
    }?;
    Ok(WriteConfig {
        memory_replicas,
        nof_ssd_replicas: 0,
        hard_pin: c.with_hard_pin != 0,
        preferred_segments: segments.into_iter().map(str::to_owned).collect(),
        soft_pin: SoftPinRequest::from_legacy(c.with_soft_pin != 0),
        group: None,
    })
}

/// Checks a legacy write configuration as the legacy put functions will,
/// except for what depends on a master: `replica_num` at least 1 and every
/// preferred segment a non-NULL valid UTF-8 string. NULL is the default
/// configuration, which is valid.
///
/// Ownership: `cfg` stays owned by the caller; nothing is retained.
/// Thread safety: may be called from any thread; `*cfg` must not change
/// during the call.
///
/// # Safety
/// `cfg` must be NULL or a readable legacy config whose pointers obey their
/// field docs; `err` must be NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_replicate_config_validate(
    cfg: *const mooncake_meta_replicate_config,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        boundary::call("mooncake_meta_replicate_config_validate", err, || {
            check(&read_legacy(cfg, "cfg")?, "cfg")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mooncake_meta_core::error::ErrorKind;
    use std::ptr;

    const SEG_A: &std::ffi::CStr = c"seg-a";
    const SEG_B: &std::ffi::CStr = c"seg-b";

    fn legacy(
        soft: c_int,
        hard: c_int,
        segs: &mut [*const c_char],
    ) -> mooncake_meta_replicate_config {
        mooncake_meta_replicate_config {
            replica_num: 2,
            with_soft_pin: soft,
            with_hard_pin: hard,
            preferred_segments: segs.as_mut_ptr(),
            preferred_segments_count: segs.len(),
        }
    }

    // §4.1: legacy with_soft_pin != 0 → ENABLE with the master default, 0 → PRESERVE.
    #[test]
    fn legacy_boolean_translates_to_enable_or_preserve() {
        let mut segs = [SEG_A.as_ptr(), SEG_B.as_ptr()];
        for (soft, want) in [
            (0, SoftPinRequest::PRESERVE),
            (1, SoftPinRequest::enable()),
            (-7, SoftPinRequest::enable()),
        ] {
            let c = legacy(soft, 0, &mut segs);
            let w = unsafe { read_legacy(&c, "cfg") }.unwrap();
            assert_eq!(w.soft_pin, want, "with_soft_pin = {soft}");
            assert_eq!(w.memory_replicas, 2);
            assert_eq!(w.nof_ssd_replicas, 0);
            assert!(!w.hard_pin);
            assert_eq!(w.preferred_segments, ["seg-a", "seg-b"]);
            assert_eq!(w.group, None);
        }
        let c = legacy(0, 3, &mut segs);
        assert!(unsafe { read_legacy(&c, "cfg") }.unwrap().hard_pin);
    }

    #[test]
    fn null_config_is_the_defaults() {
        assert_eq!(
            unsafe { read_legacy(ptr::null(), "cfg") }.unwrap(),
            WriteConfig::default()
        );
    }

    #[test]
    fn legacy_rejects_zero_replicas_and_null_segment_lists() {
        let mut segs = [SEG_A.as_ptr(), ptr::null()];
        let mut c = legacy(1, 0, &mut segs);
        let e = unsafe { read_legacy(&c, "cfg") }.unwrap_err();
        assert_eq!(
            (e.kind(), e.message()),
            (ErrorKind::NullArgument, "cfg.preferred_segments[1] is NULL")
        );
        c.preferred_segments_count = 1;
        c.replica_num = 0;
        let e = check(&unsafe { read_legacy(&c, "cfg") }.unwrap(), "cfg").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidParams);
    }
}
