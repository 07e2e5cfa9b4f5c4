//! The master configuration ([`MasterConfig`], the core's plain struct,
//! turned into a `mooncake_meta_config` when a master is built) and the two
//! write configurations: [`WriteConfig`] (the core's, with the explicit
//! soft-pin request) and [`LegacyConfig`] (the C ABI's upstream-compatible
//! one with the `with_soft_pin` bool).

use super::*;

/// Every tunable of a master, as the core's `MasterConfig`. `Default`
/// gives the documented defaults (docs/CONTRACT.md §9).
#[derive(Debug, Clone, PartialEq)]
pub struct MasterConfig {
    /// Read lease granted by Get/Exist.
    pub default_kv_lease_ttl_ms: u64,
    /// TTL of `ENABLE` without a request TTL; must be ≤ the maximum.
    pub default_kv_soft_pin_ttl_ms: u64,
    /// Largest accepted request TTL.
    pub max_kv_soft_pin_ttl_ms: u64,
    /// Whether the second eviction pass may take actively soft-pinned objects.
    pub allow_evict_soft_pinned_objects: bool,
    /// Fraction of the eviction base evicted per run, in [0, 1].
    pub eviction_ratio: f64,
    /// Memory usage above which eviction runs, in (0, 1].
    pub eviction_high_watermark_ratio: f64,
    /// A write younger than this blocks a PutStart on the same key.
    pub put_start_discard_timeout_ms: u64,
    /// Discarded buffers are held this long; stale writes are swept after it.
    pub put_start_release_timeout_ms: u64,
    /// Largest accepted group-retention TTL (> 0).
    pub max_group_retention_ttl_ms: u64,
    /// Most groups actively retained at once (≥ 1).
    pub max_retained_groups: usize,
    /// Soft-pin expiration cleanup period; 0 = off.
    pub soft_pin_cleanup_interval_ms: u64,
    /// Eviction check period; 0 = off.
    pub eviction_check_interval_ms: u64,
    /// Stale-write sweep and discarded-buffer release period; 0 = off.
    pub sweep_interval_ms: u64,
    /// Metadata shards (≥ 1).
    pub shard_count: usize,
    /// Objects the master expects to hold, all tenants; 0 (the default) =
    /// no presizing. Every shard's object table is pre-sized for
    /// `ceil(expected_objects / shard_count)` objects. At most
    /// [`MAX_EXPECTED_OBJECTS`](super::MAX_EXPECTED_OBJECTS).
    pub expected_objects: u64,
    /// With `expected_objects`, allocate every shard's presized table (and
    /// the allocators' bookkeeping for that many buffers) at creation, in
    /// mappings advised for transparent huge pages, and make
    /// all of it resident then; false (the default): presized tables become
    /// resident as they are written. A kernel that declines huge pages
    /// backs the mapping with base pages, still resident at creation; a
    /// system that cannot give the mapping, or refuses to populate it,
    /// leaves the master as with false, silently (docs/CONTRACT.md §9).
    pub commit_presized: bool,
    /// Bytes the change journal may hold; 0 (the default) = no journal. At
    /// most [`MAX_JOURNAL_CAPACITY_BYTES`](super::MAX_JOURNAL_CAPACITY_BYTES).
    pub journal_capacity_bytes: u64,
    /// Which clock the master reads.
    pub clock: ClockSource,
    /// A standby master: rejects client calls until promoted, changes only
    /// by applying journal records and by restore.
    pub standby: bool,
    /// Seeds the key hasher and the segment choice of placements
    /// (`mooncake_meta_config_set_seed`); `None` (the default) = a random
    /// seed per master. A fixed seed makes both repeat from run to run, so
    /// a randomized test that failed replays exactly; a client who knows it
    /// can aim its keys at one shard, so leave it `None` in service.
    pub seed: Option<u64>,
}

impl Default for MasterConfig {
    fn default() -> Self {
        MasterConfig {
            default_kv_lease_ttl_ms: 10_000,
            default_kv_soft_pin_ttl_ms: 1_800_000,
            max_kv_soft_pin_ttl_ms: 86_400_000,
            allow_evict_soft_pinned_objects: true,
            eviction_ratio: 0.05,
            eviction_high_watermark_ratio: 0.90,
            put_start_discard_timeout_ms: 30_000,
            put_start_release_timeout_ms: 600_000,
            max_group_retention_ttl_ms: 86_400_000,
            max_retained_groups: 65_536,
            soft_pin_cleanup_interval_ms: 1_000,
            eviction_check_interval_ms: 10,
            sweep_interval_ms: 1_000,
            shard_count: 1024,
            expected_objects: 0,
            commit_presized: false,
            journal_capacity_bytes: 0,
            clock: ClockSource::System,
            standby: false,
            seed: None,
        }
    }
}

impl MasterConfig {
    /// A configuration for deterministic use: manual clock starting at
    /// `start_ms`, every background task off, and a fixed [`seed`](Self::seed)
    /// (1), so the same calls place and hash alike in every run.
    pub fn deterministic(start_ms: u64) -> Self {
        MasterConfig {
            soft_pin_cleanup_interval_ms: 0,
            eviction_check_interval_ms: 0,
            sweep_interval_ms: 0,
            clock: ClockSource::Manual { start_ms },
            seed: Some(1),
            ..MasterConfig::default()
        }
    }

    /// Checks the configuration as master creation will
    /// (`mooncake_meta_config_set_*` and `mooncake_meta_config_validate`);
    /// the message names the bad field.
    pub fn validate(&self) -> Result<()> {
        self.to_raw()?.validate()
    }

    /// The library's configuration object with every field set.
    pub(super) fn to_raw(&self) -> Result<RawConfig> {
        let cfg = RawConfig::new()?;
        let p = cfg.raw.as_ptr();
        let shards = u64::try_from(self.shard_count).map_err(|_| {
            Error::invalid(format!(
                "shard_count {} must be in [1, 1048576]",
                self.shard_count
            ))
        })?;
        // SAFETY (every call below): `p` is a live configuration owned by
        // `cfg`, which outlives the calls.
        call(|e| unsafe {
            mooncake_meta_config_set_default_kv_lease_ttl_ms(p, self.default_kv_lease_ttl_ms, e)
        })?;
        call(|e| unsafe {
            mooncake_meta_config_set_max_kv_soft_pin_ttl_ms(p, self.max_kv_soft_pin_ttl_ms, e)
        })?;
        call(|e| unsafe {
            mooncake_meta_config_set_default_kv_soft_pin_ttl_ms(
                p,
                self.default_kv_soft_pin_ttl_ms,
                e,
            )
        })?;
        call(|e| unsafe {
            mooncake_meta_config_set_allow_evict_soft_pinned_objects(
                p,
                c_int::from(self.allow_evict_soft_pinned_objects),
                e,
            )
        })?;
        call(|e| unsafe { mooncake_meta_config_set_eviction_ratio(p, self.eviction_ratio, e) })?;
        call(|e| unsafe {
            mooncake_meta_config_set_eviction_high_watermark_ratio(
                p,
                self.eviction_high_watermark_ratio,
                e,
            )
        })?;
        call(|e| unsafe {
            mooncake_meta_config_set_put_start_discard_timeout_ms(
                p,
                self.put_start_discard_timeout_ms,
                e,
            )
        })?;
        call(|e| unsafe {
            mooncake_meta_config_set_put_start_release_timeout_ms(
                p,
                self.put_start_release_timeout_ms,
                e,
            )
        })?;
        call(|e| unsafe {
            mooncake_meta_config_set_soft_pin_cleanup_interval_ms(
                p,
                self.soft_pin_cleanup_interval_ms,
                e,
            )
        })?;
        call(|e| unsafe {
            mooncake_meta_config_set_eviction_check_interval_ms(
                p,
                self.eviction_check_interval_ms,
                e,
            )
        })?;
        call(|e| unsafe {
            mooncake_meta_config_set_sweep_interval_ms(p, self.sweep_interval_ms, e)
        })?;
        call(|e| unsafe { mooncake_meta_config_set_shard_count(p, shards, e) })?;
        call(|e| unsafe {
            mooncake_meta_config_set_expected_objects(p, self.expected_objects, e)
        })?;
        call(|e| unsafe {
            mooncake_meta_config_set_commit_presized(p, c_int::from(self.commit_presized), e)
        })?;
        call(|e| unsafe {
            mooncake_meta_config_set_journal_capacity_bytes(p, self.journal_capacity_bytes, e)
        })?;
        call(|e| unsafe { mooncake_meta_config_set_standby(p, c_int::from(self.standby), e) })?;
        if let Some(seed) = self.seed {
            call(|e| unsafe { mooncake_meta_config_set_seed(p, seed, e) })?;
        }
        call(|e| unsafe {
            mooncake_meta_config_set_max_group_retention_ttl_ms(
                p,
                self.max_group_retention_ttl_ms,
                e,
            )
        })?;
        let retained = u64::try_from(self.max_retained_groups).map_err(|_| {
            Error::invalid(format!(
                "max_retained_groups {} must be >= 1",
                self.max_retained_groups
            ))
        })?;
        call(|e| unsafe { mooncake_meta_config_set_max_retained_groups(p, retained, e) })?;
        match self.clock {
            ClockSource::System => {
                call(|e| unsafe { mooncake_meta_config_set_system_clock(p, e) })?
            }
            ClockSource::Manual { start_ms } => {
                call(|e| unsafe { mooncake_meta_config_set_manual_clock(p, start_ms, e) })?
            }
        }
        Ok(cfg)
    }
}

/// A `mooncake_meta_config`, freed on drop.
pub(super) struct RawConfig {
    pub(super) raw: NonNull<mooncake_meta_config>,
}

impl RawConfig {
    fn new() -> Result<Self> {
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is valid for writing one pointer.
        call(|err| unsafe { mooncake_meta_config_new(&mut raw, err) })?;
        NonNull::new(raw)
            .map(|raw| RawConfig { raw })
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Internal,
                    "mooncake_meta_config_new succeeded without a configuration",
                )
            })
    }

    fn validate(&self) -> Result<()> {
        // SAFETY: `self.raw` is live.
        call(|err| unsafe { mooncake_meta_config_validate(self.raw.as_ptr(), err) })
    }
}

impl Drop for RawConfig {
    fn drop(&mut self) {
        // SAFETY: owned and live.
        unsafe { mooncake_meta_config_free(self.raw.as_ptr()) }
    }
}

/// The write configuration of Put/Upsert (upstream `ReplicateConfig`), as
/// the core's: passed to the library as a `mooncake_meta_write_config`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteConfig {
    /// MEMORY replicas to allocate.
    pub memory_replicas: u32,
    /// Second-pool (NOF_SSD) replicas to allocate.
    pub nof_ssd_replicas: u32,
    /// Never evicted. Taken from the request by a PutStart and by an
    /// Upsert's case A (a new object, or one whose write was preempted with
    /// nothing COMPLETE left: it can clear a hard pin); kept by case B (in
    /// place); OR-ed in by case C (another size, or the same size when only
    /// LOCAL_DISK replicas are COMPLETE). docs/CONTRACT.md §3.
    pub hard_pin: bool,
    /// Segments to try first, in order.
    pub preferred_segments: Vec<String>,
    /// The explicit soft-pin action and optional request TTL.
    pub soft_pin: SoftPinRequest,
    /// Group to join; fixed at creation.
    pub group: Option<String>,
}

impl Default for WriteConfig {
    /// One memory replica, PRESERVE, no hard pin (the library's defaults).
    fn default() -> Self {
        WriteConfig {
            memory_replicas: 1,
            nof_ssd_replicas: 0,
            hard_pin: false,
            preferred_segments: Vec::new(),
            soft_pin: SoftPinRequest::default(),
            group: None,
        }
    }
}

impl WriteConfig {
    pub fn with_soft_pin(mut self, req: SoftPinRequest) -> Self {
        self.soft_pin = req;
        self
    }

    pub fn with_group(mut self, group: impl Into<String>) -> Self {
        self.group = Some(group.into());
        self
    }

    /// Checks this configuration as a start would, except for what depends
    /// on a master (`mooncake_meta_write_config_validate`; not in the core,
    /// whose equivalent is `Master::validate_write_request`).
    pub fn validate(&self) -> Result<()> {
        let raw = self.to_raw()?;
        // SAFETY: `raw` and the strings it points to live across the call.
        call(|err| unsafe { mooncake_meta_write_config_validate(&raw.raw, err) })
    }

    /// The replicas a start can return (the capacity its output needs).
    pub(super) fn requested(&self) -> usize {
        (self.memory_replicas as usize)
            .saturating_add(self.nof_ssd_replicas as usize)
            .max(1)
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
        let segments = preferred_c_strings(&self.preferred_segments);
        let segment_ptrs = pointers(&segments);
        let group = self
            .group
            .as_deref()
            .map(|g| c_string("group", g))
            .transpose()?;
        raw.flags = if self.hard_pin {
            MOONCAKE_META_WRITE_HARD_PIN
        } else {
            0
        };
        raw.soft_pin_action = self.soft_pin.action.raw();
        if let Some(ttl) = self.soft_pin.ttl_ms {
            raw.flags |= MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL;
            raw.soft_pin_ttl_ms = ttl;
        }
        raw.memory_replicas = self.memory_replicas;
        raw.nof_ssd_replicas = self.nof_ssd_replicas;
        raw.preferred_segments = array_ptr(&segment_ptrs);
        raw.preferred_segments_count = segment_ptrs.len();
        raw.group = group.as_ref().map_or(ptr::null(), |g| g.as_ptr());
        Ok(RawWriteConfig {
            raw,
            _segments: segments,
            _segment_ptrs: segment_ptrs,
            _group: group,
        })
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
/// the master's default TTL (`SoftPinRequest::from_legacy`), `false` is
/// PRESERVE. C ABI only: the core spells it as a [`WriteConfig`].
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
    /// The C ABI needs room for every requested replica up front.
    pub(super) fn check_requested(&self) -> Result<()> {
        let max = batch::MAX_REQUESTED_REPLICAS;
        if self.replica_num > max {
            return Err(Error::invalid(format!(
                "replica_num {} exceeds {max} replicas per write",
                self.replica_num
            )));
        }
        Ok(())
    }

    pub(super) fn to_raw(&self) -> Result<RawLegacyConfig> {
        let segments = preferred_c_strings(&self.preferred_segments);
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
