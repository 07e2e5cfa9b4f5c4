//! The extended write configuration: a size-versioned, append-only struct
//! with an explicit soft-pin action and TTL, replica counts per pool and a
//! group, translated to [`WriteConfig`]; plus the checks every write config
//! gets before a master sees it. Only integers and pointers cross: no Rust
//! `bool` or enum. The legacy struct is in [`super::legacy_config`].

use super::boundary;
use super::error::mooncake_meta_error;
use super::input::{self, Field};
use super::status::mooncake_meta_status;
use mooncake_meta_core::config::MasterConfig;
use mooncake_meta_core::error::{Error, ErrorKind, Result};
use mooncake_meta_core::soft_pin::{SoftPinAction, SoftPinRequest};
use mooncake_meta_core::types::{validate_name, WriteConfig};
use std::mem::{offset_of, size_of};
use std::os::raw::c_char;
use std::ptr;

/// `soft_pin_action`: keep an unexpired committed soft-pin deadline (the
/// default).
pub const MOONCAKE_META_SOFT_PIN_PRESERVE: u32 = 0;
/// `soft_pin_action`: start a new soft-pin lifetime when the write first
/// becomes readable (TTL from `soft_pin_ttl_ms` or the master default).
pub const MOONCAKE_META_SOFT_PIN_ENABLE: u32 = 1;
/// `soft_pin_action`: remove the committed soft-pin deadline when the write
/// first becomes readable.
pub const MOONCAKE_META_SOFT_PIN_DISABLE: u32 = 2;

/// `flags` bit: `soft_pin_ttl_ms` is present (only valid with ENABLE).
pub const MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL: u32 = 1;
/// `flags` bit: hard-pin the object (never evicted).
pub const MOONCAKE_META_WRITE_HARD_PIN: u32 = 2;

/// The most MEMORY replicas, and separately the most NOF_SSD replicas, one
/// write may request; more is `MOONCAKE_META_INVALID_PARAMS`, checked before
/// anything is allocated.
pub const MOONCAKE_META_MAX_REPLICAS_PER_POOL: u32 = 1024;

const KNOWN_FLAGS: u32 = MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL | MOONCAKE_META_WRITE_HARD_PIN;

const _: () = {
    assert!(SoftPinAction::Preserve as u32 == MOONCAKE_META_SOFT_PIN_PRESERVE);
    assert!(SoftPinAction::Enable as u32 == MOONCAKE_META_SOFT_PIN_ENABLE);
    assert!(SoftPinAction::Disable as u32 == MOONCAKE_META_SOFT_PIN_DISABLE);
    assert!(MOONCAKE_META_MAX_REPLICAS_PER_POOL == mooncake_meta_core::MAX_REPLICAS_PER_POOL);
};

/// The extended write configuration: size-versioned and append-only, so a
/// caller compiled against an older header keeps working.
///
/// Fill it with `mooncake_meta_write_config_init(&cfg, sizeof cfg, err)`,
/// then set fields. The library reads `struct_size` bytes: a size below the
/// first version's, above 4096, or with non-zero bytes past the fields this
/// library knows is `MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED`. Fields added
/// later are appended, and their all-zero value always means "absent".
/// Wherever a pointer to it is taken, NULL means the defaults.
///
/// Ownership: filled and owned by the caller; the library only reads it
/// (and the strings it points to) during the call.
#[repr(C)]
pub struct mooncake_meta_write_config {
    /// Size in bytes of the caller's struct; set by `_init`.
    pub struct_size: u32,
    /// `MOONCAKE_META_WRITE_*` bits; any other bit is
    /// `MOONCAKE_META_UNKNOWN_FLAGS`.
    pub flags: u32,
    /// One of `MOONCAKE_META_SOFT_PIN_*`; any other value is
    /// `MOONCAKE_META_INVALID_PARAMS`.
    pub soft_pin_action: u32,
    /// Must be 0.
    pub reserved0: u32,
    /// Soft-pin TTL in milliseconds, read only with
    /// `MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL` (and then only valid with
    /// ENABLE; 0 commits ordinary cache). Must be 0 without the flag.
    pub soft_pin_ttl_ms: u64,
    /// Memory replicas to allocate (default 1), at most
    /// `MOONCAKE_META_MAX_REPLICAS_PER_POOL`.
    pub memory_replicas: u32,
    /// Second-pool (NOF_SSD) replicas to allocate (default 0), at most
    /// `MOONCAKE_META_MAX_REPLICAS_PER_POOL`.
    pub nof_ssd_replicas: u32,
    /// `preferred_segments_count` NUL-terminated UTF-8 segment names to try
    /// first, in order; may be NULL when the count is 0.
    pub preferred_segments: *const *const c_char,
    /// Number of entries in `preferred_segments`.
    pub preferred_segments_count: usize,
    /// NUL-terminated UTF-8 group to join at creation; NULL for none (an
    /// Upsert of an existing object then keeps the object's group).
    pub group: *const c_char,
}

/// Bytes of the first released layout: the smallest `struct_size` accepted.
const WRITE_CONFIG_V1_SIZE: usize =
    offset_of!(mooncake_meta_write_config, group) + size_of::<*const c_char>();
/// Bytes of the layout this library knows (grows as fields are appended).
const WRITE_CONFIG_KNOWN_SIZE: usize = size_of::<mooncake_meta_write_config>();
/// Larger sizes are taken for garbage rather than a future version.
const WRITE_CONFIG_MAX_SIZE: usize = 4096;

// Version 1 is frozen: these offsets never change.
#[cfg(target_pointer_width = "64")]
const _: () = {
    type W = mooncake_meta_write_config;
    assert!(offset_of!(W, struct_size) == 0);
    assert!(offset_of!(W, flags) == 4);
    assert!(offset_of!(W, soft_pin_action) == 8);
    assert!(offset_of!(W, reserved0) == 12);
    assert!(offset_of!(W, soft_pin_ttl_ms) == 16);
    assert!(offset_of!(W, memory_replicas) == 24);
    assert!(offset_of!(W, nof_ssd_replicas) == 28);
    assert!(offset_of!(W, preferred_segments) == 32);
    assert!(offset_of!(W, preferred_segments_count) == 40);
    assert!(offset_of!(W, group) == 48);
    assert!(WRITE_CONFIG_V1_SIZE == 56);
};
const _: () = assert!(WRITE_CONFIG_V1_SIZE <= WRITE_CONFIG_KNOWN_SIZE);

impl mooncake_meta_write_config {
    /// Every field zero: what an absent field reads as.
    fn zeroed() -> Self {
        mooncake_meta_write_config {
            struct_size: 0,
            flags: 0,
            soft_pin_action: 0,
            reserved0: 0,
            soft_pin_ttl_ms: 0,
            memory_replicas: 0,
            nof_ssd_replicas: 0,
            preferred_segments: ptr::null(),
            preferred_segments_count: 0,
            group: ptr::null(),
        }
    }

    /// The defaults `_init` writes (those of [`WriteConfig::default`]).
    fn defaults(struct_size: u32) -> Self {
        let d = WriteConfig::default();
        debug_assert_eq!(d.soft_pin, SoftPinRequest::PRESERVE);
        mooncake_meta_write_config {
            struct_size,
            soft_pin_action: MOONCAKE_META_SOFT_PIN_PRESERVE,
            memory_replicas: d.memory_replicas,
            nof_ssd_replicas: d.nof_ssd_replicas,
            ..Self::zeroed()
        }
    }
}

fn size_error(arg: &str, message: String) -> Error {
    Error::new(ErrorKind::StructSizeUnsupported, format!("{arg}.{message}"))
}

/// Checks a caller-declared struct size against what this library accepts.
fn check_size(arg: &str, size: usize) -> Result<()> {
    if size < WRITE_CONFIG_V1_SIZE {
        return Err(size_error(
            arg,
            format!(
                "struct_size {size} is below the smallest supported size {WRITE_CONFIG_V1_SIZE} \
                 (fill the struct with mooncake_meta_write_config_init)"
            ),
        ));
    }
    if size > WRITE_CONFIG_MAX_SIZE {
        return Err(size_error(
            arg,
            format!("struct_size {size} exceeds {WRITE_CONFIG_MAX_SIZE}: not a write config"),
        ));
    }
    Ok(())
}

/// Translates the extended struct; NULL gives the defaults. Checks size,
/// flags and action; the TTL against the master's maximum is checked by the
/// master at Start.
///
/// # Safety
/// `cfg` must be NULL or point to `cfg->struct_size` readable bytes whose
/// pointers obey their field docs.
pub(crate) unsafe fn read_extended(
    cfg: *const mooncake_meta_write_config,
    arg: &str,
) -> Result<WriteConfig> {
    if cfg.is_null() {
        return Ok(WriteConfig::default());
    }
    // SAFETY: non-NULL, and every version starts with the u32 struct_size.
    let size = unsafe { ptr::addr_of!((*cfg).struct_size).read() } as usize;
    check_size(arg, size)?;
    if size > WRITE_CONFIG_KNOWN_SIZE {
        // SAFETY: the caller declares `size` readable bytes.
        let tail = unsafe {
            std::slice::from_raw_parts(
                cfg.cast::<u8>().add(WRITE_CONFIG_KNOWN_SIZE),
                size - WRITE_CONFIG_KNOWN_SIZE,
            )
        };
        if let Some(i) = tail.iter().position(|&b| b != 0) {
            return Err(size_error(
                arg,
                format!(
                    "struct_size {size}: byte {} is non-zero, but this library knows only the first \
                     {WRITE_CONFIG_KNOWN_SIZE} bytes (the caller sets fields of a newer version)",
                    WRITE_CONFIG_KNOWN_SIZE + i
                ),
            ));
        }
    }
    // Fields past a smaller caller's struct keep their zero ("absent") value.
    let mut c = mooncake_meta_write_config::zeroed();
    // SAFETY: copies min(size, known) readable bytes into a plain-old-data
    // struct (integers and pointers only, so any bytes are a valid value).
    unsafe {
        ptr::copy_nonoverlapping(
            cfg.cast::<u8>(),
            ptr::addr_of_mut!(c).cast::<u8>(),
            size.min(WRITE_CONFIG_KNOWN_SIZE),
        )
    };
    let unknown = c.flags & !KNOWN_FLAGS;
    if unknown != 0 {
        return Err(Error::new(
            ErrorKind::UnknownFlags,
            format!("{arg}.flags has unknown bits {unknown:#x} (known: {KNOWN_FLAGS:#x})"),
        ));
    }
    if c.reserved0 != 0 {
        return Err(Error::invalid(format!(
            "{arg}.reserved0 must be 0, got {}",
            c.reserved0
        )));
    }
    let action = SoftPinAction::from_raw(c.soft_pin_action)
        .map_err(|e| Error::invalid(format!("{arg}.{}", e.message())))?;
    let ttl_ms = if c.flags & MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL != 0 {
        Some(c.soft_pin_ttl_ms)
    } else if c.soft_pin_ttl_ms != 0 {
        return Err(Error::invalid(format!(
            "{arg}.soft_pin_ttl_ms is {} but MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL is not set",
            c.soft_pin_ttl_ms
        )));
    } else {
        None
    };
    // SAFETY: per the contract.
    let segments = unsafe {
        input::c_str_array(
            c.preferred_segments,
            c.preferred_segments_count,
            Field(arg, "preferred_segments"),
        )
    }?;
    // SAFETY: per the contract.
    let group = unsafe { input::opt_c_str(c.group, Field(arg, "group")) }?;
    Ok(WriteConfig {
        memory_replicas: c.memory_replicas,
        nof_ssd_replicas: c.nof_ssd_replicas,
        hard_pin: c.flags & MOONCAKE_META_WRITE_HARD_PIN != 0,
        preferred_segments: segments.into_iter().map(str::to_owned).collect(),
        soft_pin: SoftPinRequest { action, ttl_ms },
        group: group.map(str::to_owned),
    })
}

/// The checks of PutStart that need no master: the soft-pin request rules
/// of docs/CONTRACT.md §4.1 except the maximum TTL, at least one and at
/// most `MOONCAKE_META_MAX_REPLICAS_PER_POOL` replicas per pool, and a
/// well-formed group name.
pub(crate) fn check(config: &WriteConfig, arg: &str) -> Result<()> {
    // Reuse the one implementation of §4.1 with the maximum lifted.
    let unlimited = MasterConfig {
        max_kv_soft_pin_ttl_ms: u64::MAX,
        ..MasterConfig::default()
    };
    config
        .soft_pin
        .resolve(&unlimited)
        .map_err(|e| Error::new(e.kind(), format!("{arg}: {}", e.message())))?;
    config
        .check_replica_counts()
        .map_err(|e| Error::new(e.kind(), format!("{arg}: {}", e.message())))?;
    if let Some(group) = &config.group {
        validate_name("group", group)
            .map_err(|e| Error::new(e.kind(), format!("{arg}.{}", e.message())))?;
    }
    Ok(())
}

/// Fills `*cfg` (of `cfg_size` bytes, normally `sizeof *cfg`) with the
/// defaults: no flags, PRESERVE, one memory replica, no NOF_SSD replica, no
/// preferred segments, no group; `struct_size = cfg_size`. Bytes past the
/// fields this library knows are zeroed. A size below the first version's
/// or above 4096 is `MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED` and writes
/// nothing. Passing the size keeps an older caller's smaller struct safe
/// from a newer library.
///
/// Ownership: `cfg` is owned by the caller.
/// Thread safety: may be called from any thread; no other thread may use
/// `*cfg` meanwhile.
///
/// # Safety
/// `cfg` must be NULL or valid for writing `cfg_size` bytes; `err` must be
/// NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_write_config_init(
    cfg: *mut mooncake_meta_write_config,
    cfg_size: usize,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        boundary::call("mooncake_meta_write_config_init", err, || {
            if cfg.is_null() {
                return Err(input::null("cfg"));
            }
            check_size("cfg", cfg_size)?;
            // check_size bounds cfg_size by 4096, so it fits in u32.
            let value = mooncake_meta_write_config::defaults(cfg_size as u32);
            let dst = cfg.cast::<u8>();
            ptr::write_bytes(dst, 0, cfg_size);
            ptr::copy_nonoverlapping(
                ptr::addr_of!(value).cast::<u8>(),
                dst,
                cfg_size.min(WRITE_CONFIG_KNOWN_SIZE),
            );
            Ok(())
        })
    }
}

/// Checks an extended write configuration as PutStart/UpsertStart will,
/// except for what depends on a master (the TTL against its maximum, segment
/// names against its segments): struct size, flags, action, `reserved0`,
/// TTL only with ENABLE, at least one replica and at most
/// `MOONCAKE_META_MAX_REPLICAS_PER_POOL` per pool, and that every string is
/// non-NULL valid UTF-8 and the group name non-empty. NULL is the default
/// configuration, which is valid.
///
/// Ownership: `cfg` stays owned by the caller; nothing is retained.
/// Thread safety: may be called from any thread; `*cfg` must not change
/// during the call.
///
/// # Safety
/// `cfg` must be NULL or a readable write config of `cfg->struct_size`
/// bytes whose pointers obey their field docs; `err` must be NULL or valid
/// for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_write_config_validate(
    cfg: *const mooncake_meta_write_config,
    err: *mut *mut mooncake_meta_error,
) -> mooncake_meta_status {
    // SAFETY: the caller upholds the documented contract.
    unsafe {
        boundary::call("mooncake_meta_write_config_validate", err, || {
            check(&read_extended(cfg, "cfg")?, "cfg")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::MOONCAKE_META_OK;

    const SEG_A: &std::ffi::CStr = c"seg-a";
    const SEG_B: &std::ffi::CStr = c"seg-b";

    fn init() -> mooncake_meta_write_config {
        let mut c = mooncake_meta_write_config::defaults(0);
        let st = unsafe {
            mooncake_meta_write_config_init(
                &mut c,
                size_of::<mooncake_meta_write_config>(),
                ptr::null_mut(),
            )
        };
        assert_eq!(st, MOONCAKE_META_OK);
        c
    }

    fn read(c: &mooncake_meta_write_config) -> Result<WriteConfig> {
        unsafe { read_extended(c, "cfg") }
    }

    fn validate(c: &mooncake_meta_write_config) -> Result<()> {
        check(&read(c)?, "cfg")
    }

    #[test]
    fn null_config_is_the_defaults() {
        assert_eq!(
            unsafe { read_extended(ptr::null(), "cfg") }.unwrap(),
            WriteConfig::default()
        );
    }

    #[test]
    fn init_gives_the_default_write_config() {
        let c = init();
        assert_eq!(
            c.struct_size as usize,
            size_of::<mooncake_meta_write_config>()
        );
        assert_eq!(read(&c).unwrap(), WriteConfig::default());
        validate(&c).unwrap();
    }

    #[test]
    fn init_rejects_bad_sizes_without_writing() {
        let mut c = init();
        c.flags = 0xdead;
        for size in [0, WRITE_CONFIG_V1_SIZE - 1, WRITE_CONFIG_MAX_SIZE + 1] {
            let st = unsafe { mooncake_meta_write_config_init(&mut c, size, ptr::null_mut()) };
            assert_eq!(
                st,
                crate::status::MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED,
                "size {size}"
            );
            assert_eq!(c.flags, 0xdead);
        }
        let st = unsafe { mooncake_meta_write_config_init(ptr::null_mut(), 64, ptr::null_mut()) };
        assert_eq!(st, crate::status::MOONCAKE_META_NULL_ARGUMENT);
    }

    /// A caller compiled against a newer header: our struct plus fields we do not know.
    #[repr(C)]
    struct Newer {
        base: mooncake_meta_write_config,
        future_field: u64,
    }

    #[test]
    fn larger_struct_is_accepted_only_with_a_zero_tail() {
        let mut n = Newer {
            base: mooncake_meta_write_config::defaults(0),
            future_field: 77,
        };
        let st = unsafe {
            mooncake_meta_write_config_init(&mut n.base, size_of::<Newer>(), ptr::null_mut())
        };
        assert_eq!(st, MOONCAKE_META_OK);
        assert_eq!(n.future_field, 0, "init zeroes the caller's whole struct");
        assert_eq!(n.base.struct_size as usize, size_of::<Newer>());
        validate(&n.base).unwrap();
        n.future_field = 1;
        let e = validate(&n.base).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::StructSizeUnsupported);
        let first_unknown = size_of::<mooncake_meta_write_config>();
        assert!(
            e.message()
                .contains(&format!("byte {first_unknown} is non-zero")),
            "{}",
            e.message()
        );
    }

    // docs/CONTRACT.md §3/§4.1 and §7: every way the extended struct can be wrong.
    #[test]
    fn extended_config_rejections() {
        let bad_utf8 = b"\xff\0";
        let empty = c"";
        type Case = (&'static str, fn(&mut mooncake_meta_write_config), ErrorKind);
        let cases: Vec<Case> = vec![
            (
                "size below v1",
                |c| c.struct_size = 8,
                ErrorKind::StructSizeUnsupported,
            ),
            (
                "size above max",
                |c| c.struct_size = 1 << 20,
                ErrorKind::StructSizeUnsupported,
            ),
            ("unknown flag", |c| c.flags = 4, ErrorKind::UnknownFlags),
            (
                "high flag",
                |c| c.flags = MOONCAKE_META_WRITE_HARD_PIN | 1 << 31,
                ErrorKind::UnknownFlags,
            ),
            (
                "unknown action",
                |c| c.soft_pin_action = 3,
                ErrorKind::InvalidParams,
            ),
            ("reserved0", |c| c.reserved0 = 1, ErrorKind::InvalidParams),
            (
                "ttl without flag",
                |c| {
                    c.soft_pin_action = MOONCAKE_META_SOFT_PIN_ENABLE;
                    c.soft_pin_ttl_ms = 5;
                },
                ErrorKind::InvalidParams,
            ),
            (
                "preserve with ttl",
                |c| c.flags = MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL,
                ErrorKind::InvalidParams,
            ),
            (
                "disable with ttl 0",
                |c| {
                    c.flags = MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL;
                    c.soft_pin_action = MOONCAKE_META_SOFT_PIN_DISABLE;
                },
                ErrorKind::InvalidParams,
            ),
            (
                "no replicas",
                |c| c.memory_replicas = 0,
                ErrorKind::InvalidParams,
            ),
            (
                "null segment list",
                |c| c.preferred_segments_count = 1,
                ErrorKind::NullArgument,
            ),
        ];
        for (name, mutate, want) in cases {
            let mut c = init();
            mutate(&mut c);
            assert_eq!(validate(&c).map_err(|e| e.kind()), Err(want), "{name}");
        }
        let mut c = init();
        c.group = bad_utf8.as_ptr().cast();
        let e = validate(&c).unwrap_err();
        assert_eq!(
            (e.kind(), e.message()),
            (
                ErrorKind::InvalidUtf8,
                "cfg.group is not valid UTF-8 (bad byte at offset 0)"
            )
        );
        c.group = empty.as_ptr();
        assert_eq!(validate(&c).unwrap_err().kind(), ErrorKind::InvalidParams);
    }

    #[test]
    fn extended_config_translates_every_field() {
        let segs = [SEG_B.as_ptr(), SEG_A.as_ptr()];
        let mut c = init();
        c.flags = MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL | MOONCAKE_META_WRITE_HARD_PIN;
        c.soft_pin_action = MOONCAKE_META_SOFT_PIN_ENABLE;
        c.soft_pin_ttl_ms = 600_000;
        c.memory_replicas = 0;
        c.nof_ssd_replicas = 1;
        c.preferred_segments = segs.as_ptr();
        c.preferred_segments_count = 2;
        c.group = c"g1".as_ptr();
        let w = read(&c).unwrap();
        assert_eq!(
            w,
            WriteConfig {
                memory_replicas: 0,
                nof_ssd_replicas: 1,
                hard_pin: true,
                preferred_segments: vec!["seg-b".into(), "seg-a".into()],
                soft_pin: SoftPinRequest::enable_for(600_000),
                group: Some("g1".into()),
            }
        );
        check(&w, "cfg").unwrap();
    }

    // docs/CONTRACT.md §3: a replica count above MAX_REPLICAS_PER_POOL is
    // INVALID_PARAMS before any allocation, whatever the buffer capacity.
    #[test]
    fn replica_counts_above_the_maximum_are_invalid_params() {
        for (mem, nof, field) in [
            (u32::MAX, 0, "memory_replicas"),
            (
                mooncake_meta_core::MAX_REPLICAS_PER_POOL + 1,
                1,
                "memory_replicas",
            ),
            (1, u32::MAX, "nof_ssd_replicas"),
        ] {
            let mut c = init();
            c.memory_replicas = mem;
            c.nof_ssd_replicas = nof;
            let e = validate(&c).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidParams);
            assert!(e.message().contains(field), "{}", e.message());
        }
        let mut c = init();
        c.memory_replicas = mooncake_meta_core::MAX_REPLICAS_PER_POOL;
        c.nof_ssd_replicas = mooncake_meta_core::MAX_REPLICAS_PER_POOL;
        validate(&c).unwrap();
    }

    // §4.1: ENABLE with TTL 0 is accepted; the maximum is the master's to check.
    #[test]
    fn enable_ttl_bounds_are_left_to_the_master() {
        for ttl in [0, u64::MAX] {
            let mut c = init();
            c.flags = MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL;
            c.soft_pin_action = MOONCAKE_META_SOFT_PIN_ENABLE;
            c.soft_pin_ttl_ms = ttl;
            validate(&c).unwrap();
            let max = MasterConfig::default();
            let resolved = read(&c).unwrap().soft_pin.resolve(&max);
            assert_eq!(resolved.is_ok(), ttl <= max.max_kv_soft_pin_ttl_ms);
        }
        let mut c = init();
        c.soft_pin_action = MOONCAKE_META_SOFT_PIN_DISABLE;
        assert_eq!(read(&c).unwrap().soft_pin, SoftPinRequest::DISABLE);
    }

    // The message names the field, then says what is wrong with its value.
    #[test]
    fn unknown_action_message_names_the_field_then_the_value() {
        let mut c = init();
        c.soft_pin_action = 7;
        let e = read(&c).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidParams);
        assert_eq!(
            e.message(),
            "cfg.soft_pin_action: unknown value 7 (expected 0 = PRESERVE, 1 = ENABLE or 2 = DISABLE)"
        );
    }
}
