//! Master configuration (`Config`) and the two write configurations:
//! the extended one with the explicit soft-pin action and TTL, and the
//! legacy one with upstream's `with_soft_pin` bool.

use super::*;

/// The extended write configuration (`mooncake_meta_write_config`) in Rust
/// form. The action and TTL are passed as given: a TTL with an action other
/// than `Enable`, or above the master's maximum, is the library's
/// `MOONCAKE_META_INVALID_PARAMS`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteConfig<'a> {
    pub memory_replicas: u32,
    pub nof_ssd_replicas: u32,
    pub hard_pin: bool,
    pub soft_pin_action: SoftPinAction,
    /// `Some` sets `MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL`; `None` with
    /// `Enable` takes the master's default TTL.
    pub soft_pin_ttl_ms: Option<u64>,
    pub preferred_segments: Vec<&'a str>,
    /// Group to join at creation; `None` on an Upsert of an existing object
    /// keeps its group (naming another is `MOONCAKE_META_INVALID_PARAMS`).
    pub group: Option<&'a str>,
}

impl Default for WriteConfig<'_> {
    /// The library's defaults: one memory replica, PRESERVE, no hard pin.
    fn default() -> Self {
        WriteConfig {
            memory_replicas: 1,
            nof_ssd_replicas: 0,
            hard_pin: false,
            soft_pin_action: SoftPinAction::Preserve,
            soft_pin_ttl_ms: None,
            preferred_segments: Vec::new(),
            group: None,
        }
    }
}

impl<'a> WriteConfig<'a> {
    /// This configuration with the soft-pin action and TTL set.
    pub fn soft_pin(mut self, action: SoftPinAction, ttl_ms: Option<u64>) -> Self {
        self.soft_pin_action = action;
        self.soft_pin_ttl_ms = ttl_ms;
        self
    }

    /// The replicas a start asks for (the capacity its output needs).
    pub(super) fn requested(&self) -> usize {
        (self.memory_replicas as usize + self.nof_ssd_replicas as usize).max(1)
    }

    /// The raw struct, starting from `mooncake_meta_write_config_init` so
    /// fields this layer does not know keep the library's defaults.
    pub(super) fn to_raw(&self) -> Result<RawWriteConfig> {
        let mut raw = mooncake_meta_write_config::default();
        call(|err| {
            // SAFETY: `raw` is valid for writing its size.
            unsafe {
                mooncake_meta_write_config_init(
                    &mut raw,
                    std::mem::size_of::<mooncake_meta_write_config>(),
                    err,
                )
            }
        })?;
        let segments = c_strings("preferred segment", &self.preferred_segments)?;
        let segment_ptrs = pointers(&segments);
        let group = self.group.map(|g| c_string("group", g)).transpose()?;
        raw.flags = if self.hard_pin {
            MOONCAKE_META_WRITE_HARD_PIN
        } else {
            0
        };
        raw.soft_pin_action = self.soft_pin_action.raw();
        if let Some(ttl) = self.soft_pin_ttl_ms {
            raw.flags |= MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL;
            raw.soft_pin_ttl_ms = ttl;
        }
        raw.memory_replicas = self.memory_replicas;
        raw.nof_ssd_replicas = self.nof_ssd_replicas;
        raw.preferred_segments = if segment_ptrs.is_empty() {
            ptr::null()
        } else {
            segment_ptrs.as_ptr()
        };
        raw.preferred_segments_count = segment_ptrs.len();
        raw.group = group.as_ref().map_or(ptr::null(), |g| g.as_ptr());
        Ok(RawWriteConfig {
            raw,
            _segments: segments,
            _segment_ptrs: segment_ptrs,
            _group: group,
        })
    }

    /// Checks this configuration as a start would, except for what depends
    /// on a master (`mooncake_meta_write_config_validate`).
    pub fn validate(&self) -> Result<()> {
        let raw = self.to_raw()?;
        // SAFETY: `raw` and the strings it points to live across the call.
        call(|err| unsafe { mooncake_meta_write_config_validate(&raw.raw, err) })
    }
}

/// A raw write configuration with the strings it points to.
pub(super) struct RawWriteConfig {
    pub(super) raw: mooncake_meta_write_config,
    _segments: Vec<CString>,
    _segment_ptrs: Vec<*const c_char>,
    _group: Option<CString>,
}

/// The legacy write configuration (`mooncake_meta_replicate_config`,
/// upstream's `mooncake_replicate_config`): `with_soft_pin` is ENABLE with
/// the master's default TTL, `false` is PRESERVE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyConfig<'a> {
    pub replica_num: usize,
    pub with_soft_pin: bool,
    pub with_hard_pin: bool,
    pub preferred_segments: Vec<&'a str>,
}

impl Default for LegacyConfig<'_> {
    /// One memory replica, no soft pin (PRESERVE), no hard pin.
    fn default() -> Self {
        LegacyConfig {
            replica_num: 1,
            with_soft_pin: false,
            with_hard_pin: false,
            preferred_segments: Vec::new(),
        }
    }
}

impl LegacyConfig<'_> {
    pub(super) fn to_raw(&self) -> Result<RawLegacyConfig> {
        let segments = c_strings("preferred segment", &self.preferred_segments)?;
        let mut segment_ptrs = pointers(&segments);
        let raw = mooncake_meta_replicate_config {
            replica_num: self.replica_num,
            with_soft_pin: c_int::from(self.with_soft_pin),
            with_hard_pin: c_int::from(self.with_hard_pin),
            preferred_segments: if segment_ptrs.is_empty() {
                ptr::null_mut()
            } else {
                segment_ptrs.as_mut_ptr()
            },
            preferred_segments_count: segment_ptrs.len(),
        };
        Ok(RawLegacyConfig {
            raw,
            _segments: segments,
            _segment_ptrs: segment_ptrs,
        })
    }

    /// `mooncake_meta_replicate_config_validate`.
    pub fn validate(&self) -> Result<()> {
        let raw = self.to_raw()?;
        // SAFETY: `raw` and its strings live across the call.
        call(|err| unsafe { mooncake_meta_replicate_config_validate(&raw.raw, err) })
    }
}

pub(super) struct RawLegacyConfig {
    pub(super) raw: mooncake_meta_replicate_config,
    _segments: Vec<CString>,
    _segment_ptrs: Vec<*const c_char>,
}

/// A master configuration (`mooncake_meta_config`), freed on drop.
#[derive(Debug)]
pub struct Config {
    raw: NonNull<mooncake_meta_config>,
}

// SAFETY: the configuration is internally locked; only `_free` (drop, with
// `&mut self`) must not race, which ownership guarantees.
unsafe impl Send for Config {}
// SAFETY: as above.
unsafe impl Sync for Config {}

macro_rules! config_setters {
    ($($(#[$doc:meta])* $name:ident => $raw:ident($ty:ty);)*) => {
        $(
            $(#[$doc])*
            pub fn $name(&mut self, value: $ty) -> Result<&mut Self> {
                // SAFETY: `self.raw` is live.
                call(|err| unsafe { $raw(self.raw.as_ptr(), value, err) })?;
                Ok(self)
            }
        )*
    };
}

impl Config {
    /// The documented defaults (system clock, background tasks on).
    pub fn new() -> Result<Self> {
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is valid for writing one pointer.
        call(|err| unsafe { mooncake_meta_config_new(&mut raw, err) })?;
        Ok(Config {
            raw: NonNull::new(raw).expect("config_new succeeded with NULL"),
        })
    }

    /// A manual clock starting at `start_ms` and every background interval
    /// 0: time moves and maintenance runs only when the caller says so.
    pub fn deterministic(start_ms: u64) -> Result<Self> {
        let mut cfg = Config::new()?;
        cfg.set_manual_clock(start_ms)?
            .set_soft_pin_cleanup_interval_ms(0)?
            .set_eviction_check_interval_ms(0)?
            .set_sweep_interval_ms(0)?;
        Ok(cfg)
    }

    pub fn as_ptr(&self) -> *const mooncake_meta_config {
        self.raw.as_ptr()
    }

    config_setters! {
        set_default_kv_lease_ttl_ms => mooncake_meta_config_set_default_kv_lease_ttl_ms(u64);
        set_default_kv_soft_pin_ttl_ms => mooncake_meta_config_set_default_kv_soft_pin_ttl_ms(u64);
        set_max_kv_soft_pin_ttl_ms => mooncake_meta_config_set_max_kv_soft_pin_ttl_ms(u64);
        set_eviction_ratio => mooncake_meta_config_set_eviction_ratio(f64);
        set_eviction_high_watermark_ratio =>
            mooncake_meta_config_set_eviction_high_watermark_ratio(f64);
        set_put_start_discard_timeout_ms =>
            mooncake_meta_config_set_put_start_discard_timeout_ms(u64);
        set_put_start_release_timeout_ms =>
            mooncake_meta_config_set_put_start_release_timeout_ms(u64);
        set_soft_pin_cleanup_interval_ms =>
            mooncake_meta_config_set_soft_pin_cleanup_interval_ms(u64);
        set_eviction_check_interval_ms => mooncake_meta_config_set_eviction_check_interval_ms(u64);
        set_sweep_interval_ms => mooncake_meta_config_set_sweep_interval_ms(u64);
        set_shard_count => mooncake_meta_config_set_shard_count(u64);
        set_manual_clock => mooncake_meta_config_set_manual_clock(u64);
    }

    pub fn set_allow_evict_soft_pinned_objects(&mut self, allow: bool) -> Result<&mut Self> {
        // SAFETY: `self.raw` is live.
        call(|err| unsafe {
            mooncake_meta_config_set_allow_evict_soft_pinned_objects(
                self.raw.as_ptr(),
                c_int::from(allow),
                err,
            )
        })?;
        Ok(self)
    }

    pub fn set_system_clock(&mut self) -> Result<&mut Self> {
        // SAFETY: `self.raw` is live.
        call(|err| unsafe { mooncake_meta_config_set_system_clock(self.raw.as_ptr(), err) })?;
        Ok(self)
    }

    /// Checks the configuration as master creation will.
    pub fn validate(&self) -> Result<()> {
        // SAFETY: `self.raw` is live.
        call(|err| unsafe { mooncake_meta_config_validate(self.raw.as_ptr(), err) })
    }
}

impl Drop for Config {
    fn drop(&mut self) {
        // SAFETY: owned, live, and no other reference exists (`&mut self`).
        unsafe { mooncake_meta_config_free(self.raw.as_ptr()) }
    }
}
