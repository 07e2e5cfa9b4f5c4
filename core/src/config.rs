//! Master configuration with the defaults and rules of docs/CONTRACT.md §9.
//! [`MasterConfig::validate`] is the single gate: a master is never built
//! from a configuration it would misbehave under.

use crate::clock::{ClockSource, MAX_INSTANT};
use crate::error::{Error, Result};

/// The largest accepted TTL, timeout or interval, in ms (`INT64_MAX`, the
/// same value as [`MAX_INSTANT`]). Bounding every duration here keeps it
/// representable as a signed 64-bit count of milliseconds (C `int64_t`, Go
/// `int64`) and makes `instant + duration` unable to overflow a `u64`; the
/// master still saturates every instant it computes at `MAX_INSTANT`.
pub const MAX_DURATION_MS: u64 = MAX_INSTANT;

/// The largest accepted [`MasterConfig::expected_objects`] (2^32). The bound
/// keeps the per-shard table size a presizing computes well inside `usize`
/// on 64-bit targets and the reservation a single bounded allocation per
/// shard; beyond it the tables simply grow.
pub const MAX_EXPECTED_OBJECTS: u64 = 1 << 32;

/// The largest accepted [`MasterConfig::journal_capacity_bytes`] (2^40
/// bytes, 1 TiB): a bound on what a caller may make the journal hold, far
/// above any useful backlog.
pub const MAX_JOURNAL_CAPACITY_BYTES: u64 = 1 << 40;

/// Every tunable of a master. `Default` gives the documented defaults.
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
    /// no presizing. A master pre-sizes every shard's object table for its
    /// share (`ceil(expected_objects / shard_count)`), so filling it up to
    /// that many objects never rehashes a table. At most
    /// [`MAX_EXPECTED_OBJECTS`], and at most 3 · 2^30 per shard (what one
    /// shard's index holds); more objects than expected are fine.
    pub expected_objects: u64,
    /// With `expected_objects`, allocate every shard's presized table (the
    /// records' arena and the hash index), and the segment allocators'
    /// block slots for that many buffers, at creation, as mappings
    /// advised for transparent huge pages, and make all of it resident
    /// then (docs/CONTRACT.md §9): the master holds that memory from the
    /// start, a first write into it never waits on a page fault, and
    /// lookups at scale miss the TLB less. Off (the default): presized
    /// tables are on the heap and become resident as they are written. A
    /// kernel that declines huge pages backs the mapping with base pages,
    /// still resident at creation; a system that cannot give the mapping,
    /// or refuses to populate it, leaves the master as with `false`,
    /// silently. Tables that grow past their share move to the heap and
    /// give their pages in the mapping back. A restore stages its
    /// shards the same way, so it maps a second such region while the
    /// first is still held.
    pub commit_presized: bool,
    /// Most bytes the change journal holds (docs/CONTRACT.md §12); 0 (the
    /// default) = no journal: nothing is recorded and reading or releasing
    /// is `UNAVAILABLE_IN_CURRENT_STATUS`. At most
    /// [`MAX_JOURNAL_CAPACITY_BYTES`].
    pub journal_capacity_bytes: u64,
    /// Which clock the master reads.
    pub clock: ClockSource,
    /// Start as a standby (docs/CONTRACT.md section 12.3): no client
    /// operation, no maintenance, state changed only by applying a
    /// primary's journal or by a restore, until `promote`.
    pub standby: bool,
    /// Seeds the key hasher (which shard and slot a key takes) and the
    /// segment choice of placements; `None` (the default) draws a random
    /// seed for each master. A fixed seed makes both repeat from run to
    /// run, so a randomized test that failed replays exactly. A client who
    /// knows the seed can aim its keys at one shard: leave it `None` in
    /// service.
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

    /// Checks every rule of docs/CONTRACT.md §9; the message names the bad
    /// field.
    pub fn validate(&self) -> Result<()> {
        for (field, ms) in [
            ("default_kv_lease_ttl", self.default_kv_lease_ttl_ms),
            ("default_kv_soft_pin_ttl", self.default_kv_soft_pin_ttl_ms),
            ("max_kv_soft_pin_ttl", self.max_kv_soft_pin_ttl_ms),
            (
                "put_start_discard_timeout",
                self.put_start_discard_timeout_ms,
            ),
            (
                "put_start_release_timeout",
                self.put_start_release_timeout_ms,
            ),
            (
                "soft_pin_cleanup_interval",
                self.soft_pin_cleanup_interval_ms,
            ),
            ("eviction_check_interval", self.eviction_check_interval_ms),
            ("sweep_interval", self.sweep_interval_ms),
            ("max_group_retention_ttl", self.max_group_retention_ttl_ms),
        ] {
            if ms > MAX_DURATION_MS {
                return Err(Error::invalid(format!(
                    "{field} ({ms} ms) exceeds the maximum duration {MAX_DURATION_MS} ms"
                )));
            }
        }
        if self.default_kv_soft_pin_ttl_ms > self.max_kv_soft_pin_ttl_ms {
            return Err(Error::invalid(format!(
                "default_kv_soft_pin_ttl ({} ms) exceeds max_kv_soft_pin_ttl ({} ms)",
                self.default_kv_soft_pin_ttl_ms, self.max_kv_soft_pin_ttl_ms
            )));
        }
        if !(0.0..=1.0).contains(&self.eviction_ratio) {
            return Err(Error::invalid(format!(
                "eviction_ratio {} must be in [0, 1]",
                self.eviction_ratio
            )));
        }
        let hwm = self.eviction_high_watermark_ratio;
        if !(hwm > 0.0 && hwm <= 1.0) {
            return Err(Error::invalid(format!(
                "eviction_high_watermark_ratio {hwm} must be in (0, 1]"
            )));
        }
        if self.put_start_release_timeout_ms <= self.put_start_discard_timeout_ms {
            return Err(Error::invalid(format!(
                "put_start_release_timeout ({} ms) must exceed put_start_discard_timeout ({} ms)",
                self.put_start_release_timeout_ms, self.put_start_discard_timeout_ms
            )));
        }
        if self.max_group_retention_ttl_ms == 0 {
            return Err(Error::invalid(
                "max_group_retention_ttl must be > 0 ms".to_string(),
            ));
        }
        if self.max_retained_groups == 0 {
            return Err(Error::invalid(
                "max_retained_groups must be >= 1".to_string(),
            ));
        }
        if self.shard_count == 0 || self.shard_count > 1 << 20 {
            return Err(Error::invalid(format!(
                "shard_count {} must be in [1, 1048576]",
                self.shard_count
            )));
        }
        self.objects_per_shard()?;
        self.journal_capacity()?;
        Ok(())
    }

    /// The journal capacity as a `usize` (`None`: no journal).
    /// `INVALID_PARAMS` above [`MAX_JOURNAL_CAPACITY_BYTES`] or beyond
    /// `usize`.
    pub fn journal_capacity(&self) -> Result<Option<usize>> {
        let n = self.journal_capacity_bytes;
        if n > MAX_JOURNAL_CAPACITY_BYTES {
            return Err(Error::invalid(format!(
                "journal_capacity_bytes {n} exceeds the maximum {MAX_JOURNAL_CAPACITY_BYTES}"
            )));
        }
        let bytes = usize::try_from(n).map_err(|_| {
            Error::invalid(format!(
                "journal_capacity_bytes {n} does not fit in this platform's usize"
            ))
        })?;
        Ok((bytes > 0).then_some(bytes))
    }

    /// The object capacity `expected_objects` asks of each shard:
    /// `ceil(expected_objects / shard_count)`, 0 without presizing.
    /// `INVALID_PARAMS` if `expected_objects` exceeds
    /// [`MAX_EXPECTED_OBJECTS`], the shard count is 0, or the share is more
    /// than a shard holds (three quarters of 2^32) or does not fit in
    /// `usize`.
    pub fn objects_per_shard(&self) -> Result<usize> {
        let n = self.expected_objects;
        if n > MAX_EXPECTED_OBJECTS {
            return Err(Error::invalid(format!(
                "expected_objects {n} exceeds the maximum {MAX_EXPECTED_OBJECTS}"
            )));
        }
        let shards = u64::try_from(self.shard_count)
            .ok()
            .filter(|&s| s > 0)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "shard_count {} must be in [1, 1048576]",
                    self.shard_count
                ))
            })?;
        let share = n.div_ceil(shards);
        // A shard's index holds at most this many entries.
        let most = crate::slot_index::MAX_ENTRIES as u64;
        if share > most {
            return Err(Error::invalid(format!(
                "expected_objects {n}: {share} objects for each of the {shards} shards; a shard \
                 holds at most {most} (use more shards)"
            )));
        }
        usize::try_from(share).map_err(|_| {
            Error::invalid(format!(
                "expected_objects {n}: {share} objects per shard do not fit in usize"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn defaults_are_valid_and_match_the_contract() {
        let c = MasterConfig::default();
        c.validate().unwrap();
        assert_eq!(c.max_kv_soft_pin_ttl_ms, 24 * 3600 * 1000);
        assert_eq!(c.default_kv_soft_pin_ttl_ms, 30 * 60 * 1000);
        assert_eq!(c.shard_count, 1024);
        assert_eq!(c.max_group_retention_ttl_ms, 24 * 3600 * 1000);
        assert_eq!(c.max_retained_groups, 65_536);
    }

    #[test]
    fn default_ttl_above_max_is_rejected() {
        let c = MasterConfig {
            default_kv_soft_pin_ttl_ms: 2,
            max_kv_soft_pin_ttl_ms: 1,
            ..MasterConfig::default()
        };
        assert_eq!(c.validate().unwrap_err().kind(), ErrorKind::InvalidParams);
    }

    #[test]
    fn ratios_and_timeouts_are_checked() {
        for bad in [
            MasterConfig {
                eviction_ratio: 1.5,
                ..Default::default()
            },
            MasterConfig {
                eviction_ratio: f64::NAN,
                ..Default::default()
            },
            MasterConfig {
                eviction_high_watermark_ratio: 0.0,
                ..Default::default()
            },
            MasterConfig {
                put_start_release_timeout_ms: 1,
                ..Default::default()
            },
            MasterConfig {
                shard_count: 0,
                ..Default::default()
            },
            MasterConfig {
                max_group_retention_ttl_ms: 0,
                ..Default::default()
            },
            MasterConfig {
                max_retained_groups: 0,
                ..Default::default()
            },
        ] {
            assert_eq!(bad.validate().unwrap_err().kind(), ErrorKind::InvalidParams);
        }
    }

    /// Every duration field with its setter, so the bound tests cover all
    /// of them.
    type Setter = fn(&mut MasterConfig, u64);

    fn durations() -> Vec<(&'static str, Setter)> {
        vec![
            ("default_kv_lease_ttl", |c, v| c.default_kv_lease_ttl_ms = v),
            ("default_kv_soft_pin_ttl", |c, v| {
                c.default_kv_soft_pin_ttl_ms = v
            }),
            ("max_kv_soft_pin_ttl", |c, v| c.max_kv_soft_pin_ttl_ms = v),
            ("put_start_discard_timeout", |c, v| {
                c.put_start_discard_timeout_ms = v
            }),
            ("put_start_release_timeout", |c, v| {
                c.put_start_release_timeout_ms = v
            }),
            ("soft_pin_cleanup_interval", |c, v| {
                c.soft_pin_cleanup_interval_ms = v
            }),
            ("eviction_check_interval", |c, v| {
                c.eviction_check_interval_ms = v
            }),
            ("sweep_interval", |c, v| c.sweep_interval_ms = v),
        ]
    }

    /// A configuration in which every duration is `v` wherever the other
    /// rules allow it (default ≤ max, release > discard).
    fn all_durations(v: u64) -> MasterConfig {
        MasterConfig {
            default_kv_lease_ttl_ms: v,
            default_kv_soft_pin_ttl_ms: v,
            max_kv_soft_pin_ttl_ms: v,
            put_start_discard_timeout_ms: v - 1,
            put_start_release_timeout_ms: v,
            soft_pin_cleanup_interval_ms: v,
            eviction_check_interval_ms: v,
            sweep_interval_ms: v,
            ..MasterConfig::default()
        }
    }

    #[test]
    fn every_duration_up_to_the_maximum_is_accepted() {
        all_durations(MAX_DURATION_MS).validate().unwrap();
    }

    #[test]
    fn a_duration_above_the_maximum_is_rejected_naming_the_field() {
        for (field, set) in durations() {
            for bad in [MAX_DURATION_MS + 1, u64::MAX] {
                let mut c = all_durations(MAX_DURATION_MS);
                set(&mut c, bad);
                let e = c.validate().unwrap_err();
                assert_eq!(e.kind(), ErrorKind::InvalidParams, "{field} = {bad}");
                assert!(
                    e.message().starts_with(field),
                    "{field} = {bad}: message {:?} does not name the field",
                    e.message()
                );
            }
        }
    }
}
