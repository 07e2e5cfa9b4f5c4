//! Soft-pin introspection, maintenance runs, metrics, snapshot and restore.

use super::*;

/// What one cleanup cycle did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CleanupStats {
    /// Heap entries popped (valid + stale).
    pub popped: u64,
    /// Popped entries that no longer matched the latest registration.
    pub stale_dropped: u64,
    /// Soft pins cleared.
    pub expired: u64,
    /// Index-lock holds that popped entries.
    pub batches: u64,
    /// Shard read locks taken (one per affected shard per batch).
    pub shards_touched: u64,
    /// Longest deadline-index mutex hold seen by this master so far (ns).
    pub longest_index_hold_ns: u64,
    /// Wall time of the cycle, real monotonic clock (ns).
    pub duration_ns: u64,
}

impl From<mooncake_meta_cleanup_stats> for CleanupStats {
    fn from(s: mooncake_meta_cleanup_stats) -> Self {
        CleanupStats {
            popped: s.popped,
            stale_dropped: s.stale_dropped,
            expired: s.expired,
            batches: s.batches,
            shards_touched: s.shards_touched,
            longest_index_hold_ns: s.longest_index_hold_ns,
            duration_ns: s.duration_ns,
        }
    }
}

/// What one eviction run did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EvictionReport {
    /// Non-hard-pinned objects with an evictable memory replica.
    pub base: u64,
    /// Base objects whose lease was not live.
    pub candidates: u64,
    /// Objects whose memory replicas were freed.
    pub evicted: u64,
    pub evicted_bytes: u64,
    /// Of `evicted`, those taken by the second pass while protected (own
    /// soft pin active, or group retention active).
    pub evicted_pinned: u64,
    /// Discarded buffers released by this run.
    pub discarded_released: u64,
    /// Expired deadlines cleared while examining candidates.
    pub normalised: u64,
}

impl From<mooncake_meta_eviction_report> for EvictionReport {
    fn from(r: mooncake_meta_eviction_report) -> Self {
        EvictionReport {
            base: r.base,
            candidates: r.candidates,
            evicted: r.evicted,
            evicted_bytes: r.evicted_bytes,
            evicted_pinned: r.evicted_pinned,
            discarded_released: r.discarded_released,
            normalised: r.normalised,
        }
    }
}

/// Per-segment usage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentUsage {
    pub name: String,
    pub pool: Pool,
    pub capacity: u64,
    pub allocated: u64,
}

/// Every metric of a master, as the core's snapshot.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MetricsSnapshot {
    pub key_count: u64,
    pub soft_pin_key_count: u64,
    pub memory_capacity_bytes: u64,
    pub memory_allocated_bytes: u64,
    pub nof_ssd_capacity_bytes: u64,
    pub nof_ssd_allocated_bytes: u64,
    pub discarded_staging_bytes: u64,
    pub put_start_failures: u64,
    pub eviction_attempts: u64,
    pub eviction_successes: u64,
    pub evicted_keys: u64,
    pub evicted_bytes: u64,
    pub cleanup_cycles: u64,
    pub cleanup_popped: u64,
    pub cleanup_stale_dropped: u64,
    pub cleanup_expired: u64,
    pub cleanup_last_duration_ns: u64,
    pub cleanup_longest_hold_ns: u64,
    pub index_heap_size: u64,
    pub index_live_registrations: u64,
    pub maintenance_task_panics: u64,
    pub swept_writes: u64,
    /// `timeline − wall` in ms: how far the master's instants have drifted
    /// from the wall clock (a wall step moves this, never a lifetime).
    pub clock_skew_ms: i64,
    /// Groups with a committed retention deadline
    /// (`master_retained_group_count`).
    pub retained_group_count: u64,
    /// Change-journal records appended (docs/CONTRACT.md §12); every
    /// journal figure is 0 with the journal off.
    pub journal_records_appended: u64,
    /// Bytes the journal holds (records and their bookkeeping).
    pub journal_bytes_held: u64,
    /// Records dropped unreleased: the journal full, a record larger than
    /// its capacity, or a journaling standby's numbering moved.
    pub journal_records_dropped: u64,
    /// Sequence of the last record appended.
    pub journal_last_seq: u64,
    /// Highest sequence the consumer released.
    pub journal_released_seq: u64,
    /// `master_standby`: whether the master is a standby.
    pub standby: bool,
    /// `master_journal_applied_seq`: the last journal sequence applied (or
    /// installed by a restore); 0 = none.
    pub journal_applied_seq: u64,
    /// Read from the Prometheus text (`master_segment_*_bytes`), the only
    /// place the C ABI reports per-segment usage.
    pub segments: Vec<SegmentUsage>,
}

/// What a restore did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RestoreReport {
    /// Index (in the caller's list) of the candidate that was restored.
    pub candidate: usize,
    /// The winning snapshot's creation instant.
    pub created_at: u64,
    pub objects_restored: u64,
    /// Objects dropped by the survival rule (nothing COMPLETE, or neither a
    /// live lease, an active pin nor a hard pin).
    pub objects_dropped: u64,
    /// PROCESSING replicas dropped (in-flight writes and task targets).
    pub replicas_dropped: u64,
    /// Surviving active soft pins (registered in the index).
    pub soft_pins_restored: u64,
    /// Expired deadlines normalised to none.
    pub soft_pins_normalised: u64,
    /// How many earlier (newer) candidates were rejected. The core's
    /// report lists them with their reasons (`rejected`); the C ABI reports
    /// only their number.
    pub candidates_rejected: u64,
    /// How far every stored instant was shifted onto this master's timeline
    /// (its skew now minus the skew at capture; 0 for equal skews and for
    /// format-1 snapshots).
    pub clock_shift_ms: i64,
}

impl RestoreReport {
    fn from_raw(r: mooncake_meta_restore_report) -> Result<Self> {
        Ok(RestoreReport {
            candidate: usize::try_from(r.candidate).map_err(|_| {
                Error::new(
                    ErrorKind::Internal,
                    format!("restored candidate index {} is not a usize", r.candidate),
                )
            })?,
            created_at: r.created_at,
            objects_restored: r.objects_restored,
            objects_dropped: r.objects_dropped,
            replicas_dropped: r.replicas_dropped,
            soft_pins_restored: r.soft_pins_restored,
            soft_pins_normalised: r.soft_pins_normalised,
            candidates_rejected: r.candidates_rejected,
            clock_shift_ms: r.clock_shift_ms,
        })
    }
}

/// An instant for the C ABI's cleanup and release calls, which refuse
/// instants above `MAX_INSTANT` (the core takes any `u64`). No deadline or
/// release instant exceeds `MAX_INSTANT`, so a later instant acts as
/// `MAX_INSTANT` does. (The sweep takes any instant.)
fn clamp_instant(at: Instant) -> Instant {
    at.min(MAX_INSTANT)
}

impl Master {
    /// Committed soft-pin deadline of a key (`None` = none committed; may be
    /// stored-but-expired until normalised).
    pub fn soft_pin_deadline(&self, k: Key<'_>) -> Result<Option<u64>> {
        let (mut has, mut deadline): (c_int, u64) = (0, 0);
        with_key!(
            self,
            mooncake_meta_soft_pin_deadline,
            k,
            &mut has,
            &mut deadline
        )?;
        Ok((has != 0).then_some(deadline))
    }

    /// Whether the key's write in flight carries a pending soft-pin intent.
    pub fn has_pending_soft_pin(&self, k: Key<'_>) -> Result<bool> {
        let mut pending: c_int = 0;
        with_key!(self, mooncake_meta_has_pending_soft_pin, k, &mut pending)?;
        Ok(pending != 0)
    }

    /// Deadline-index sizes: (heap entries incl. stale, live registrations).
    pub fn index_sizes(&self) -> (usize, usize) {
        let (mut heap, mut live) = (0u64, 0u64);
        // SAFETY: live master, writable outputs.
        let r = call(|err| unsafe {
            mooncake_meta_index_sizes(self.raw.as_ptr(), &mut heap, &mut live, err)
        });
        infallible("mooncake_meta_index_sizes", r);
        (saturating_usize(heap), saturating_usize(live))
    }

    /// Checks the master's internal invariants; the error says which broke.
    pub fn check_invariants(&self) -> Result<(), String> {
        // SAFETY: live master.
        call(|err| unsafe { mooncake_meta_check_invariants(self.raw.as_ptr(), err) })
            .map_err(|e| e.message().to_owned())
    }

    /// Runs one cleanup cycle at the master clock's now.
    pub fn run_cleanup(&self) -> CleanupStats {
        let mut s = mooncake_meta_cleanup_stats::default();
        // SAFETY: live master, `s` sized.
        let r = call(|err| unsafe { mooncake_meta_run_cleanup(self.raw.as_ptr(), &mut s, err) });
        infallible("mooncake_meta_run_cleanup", r);
        s.into()
    }

    /// Runs one cleanup cycle treating `at` as now (the clock is not moved).
    pub fn run_cleanup_at(&self, at: Instant) -> CleanupStats {
        let mut s = mooncake_meta_cleanup_stats::default();
        // SAFETY: live master, `s` sized.
        let r = call(|err| unsafe {
            mooncake_meta_run_cleanup_at(self.raw.as_ptr(), clamp_instant(at), &mut s, err)
        });
        infallible("mooncake_meta_run_cleanup_at", r);
        s.into()
    }

    /// One deterministic eviction run with explicit target and lowerbound
    /// ratios of the eviction base.
    pub fn run_eviction(&self, target: f64, lowerbound: f64) -> Result<EvictionReport> {
        let mut r = mooncake_meta_eviction_report::default();
        // SAFETY: live master, `r` sized.
        call(|err| unsafe {
            mooncake_meta_run_eviction(self.raw.as_ptr(), target, lowerbound, &mut r, err)
        })?;
        Ok(r.into())
    }

    /// Runs the eviction trigger: evicts when memory usage is above the
    /// high watermark (or `force`, when `eviction_ratio > 0`). Returns the
    /// report if it ran.
    pub fn evict_if_needed(&self, force: bool) -> Option<EvictionReport> {
        let mut r = mooncake_meta_eviction_report::default();
        let mut ran: c_int = 0;
        // SAFETY: live master, writable outputs, `r` sized.
        let status = call(|err| unsafe {
            mooncake_meta_evict_if_needed(
                self.raw.as_ptr(),
                c_int::from(force),
                &mut ran,
                &mut r,
                err,
            )
        });
        infallible("mooncake_meta_evict_if_needed", status);
        (ran != 0).then(|| r.into())
    }

    /// Runs every maintenance task once, now, whatever the intervals.
    pub fn run_maintenance_tick(&self) {
        // SAFETY: live master.
        let r = call(|err| unsafe { mooncake_meta_run_maintenance_tick(self.raw.as_ptr(), err) });
        infallible("mooncake_meta_run_maintenance_tick", r);
    }

    /// Sweeps writes whose `put_start + put_start_release_timeout < at`;
    /// returns how many. Any instant: the comparison is strict, so a write
    /// whose release instant saturated at `MAX_INSTANT` is swept only
    /// beyond it.
    pub fn sweep_stale_writes_at(&self, at: Instant) -> u64 {
        let mut n = 0;
        // SAFETY: live master, writable output.
        let r = call(|err| unsafe {
            mooncake_meta_sweep_stale_writes_at(self.raw.as_ptr(), at, &mut n, err)
        });
        infallible("mooncake_meta_sweep_stale_writes_at", r);
        n
    }

    /// Frees discarded buffers whose release instant is `<= at`; returns
    /// how many.
    pub fn release_discarded_at(&self, at: Instant) -> u64 {
        let mut n = 0;
        // SAFETY: live master, writable output.
        let r = call(|err| unsafe {
            mooncake_meta_release_discarded_at(self.raw.as_ptr(), clamp_instant(at), &mut n, err)
        });
        infallible("mooncake_meta_release_discarded_at", r);
        n
    }

    /// Every metric of this master.
    pub fn metrics(&self) -> MetricsSnapshot {
        let mut s = mooncake_meta_metrics_snapshot::default();
        // SAFETY: live master, `s` sized.
        let r = call(|err| unsafe { mooncake_meta_metrics(self.raw.as_ptr(), &mut s, err) });
        infallible("mooncake_meta_metrics", r);
        let segments = infallible(
            "reading master_segment_*_bytes from the Prometheus text",
            parse_segments(&self.metrics_prometheus()),
        );
        MetricsSnapshot {
            key_count: s.key_count,
            soft_pin_key_count: s.soft_pin_key_count,
            memory_capacity_bytes: s.memory_capacity_bytes,
            memory_allocated_bytes: s.memory_allocated_bytes,
            nof_ssd_capacity_bytes: s.nof_ssd_capacity_bytes,
            nof_ssd_allocated_bytes: s.nof_ssd_allocated_bytes,
            discarded_staging_bytes: s.discarded_staging_bytes,
            put_start_failures: s.put_start_failures,
            eviction_attempts: s.eviction_attempts,
            eviction_successes: s.eviction_successes,
            evicted_keys: s.evicted_keys,
            evicted_bytes: s.evicted_bytes,
            cleanup_cycles: s.cleanup_cycles,
            cleanup_popped: s.cleanup_popped,
            cleanup_stale_dropped: s.cleanup_stale_dropped,
            cleanup_expired: s.cleanup_expired,
            cleanup_last_duration_ns: s.cleanup_last_duration_ns,
            cleanup_longest_hold_ns: s.cleanup_longest_hold_ns,
            index_heap_size: s.index_heap_size,
            index_live_registrations: s.index_live_registrations,
            maintenance_task_panics: s.maintenance_task_panics,
            swept_writes: s.swept_writes,
            clock_skew_ms: s.clock_skew_ms,
            retained_group_count: s.retained_group_count,
            journal_records_appended: s.journal_records_appended,
            journal_bytes_held: s.journal_bytes_held,
            journal_records_dropped: s.journal_records_dropped,
            journal_last_seq: s.journal_last_seq,
            journal_released_seq: s.journal_released_seq,
            standby: s.standby != 0,
            journal_applied_seq: s.journal_applied_seq,
            segments,
        }
    }

    /// Metrics as Prometheus text exposition (format 0.0.4).
    pub fn metrics_prometheus(&self) -> String {
        let mut out = ptr::null_mut();
        // SAFETY: live master, writable output.
        let r = call(|err| unsafe {
            mooncake_meta_metrics_prometheus(self.raw.as_ptr(), &mut out, err)
        })
        .and_then(|()| Bytes::new(out, "mooncake_meta_metrics_prometheus"));
        let bytes = infallible("mooncake_meta_metrics_prometheus", r);
        String::from_utf8_lossy(bytes.as_slice()).into_owned()
    }

    /// Serialises the master.
    pub fn snapshot(&self) -> Result<Vec<u8>> {
        let mut out = ptr::null_mut();
        // SAFETY: live master, writable output.
        call(|err| unsafe { mooncake_meta_snapshot(self.raw.as_ptr(), &mut out, err) })?;
        Ok(Bytes::new(out, "mooncake_meta_snapshot")?
            .as_slice()
            .to_vec())
    }

    /// Serialises the master to `path` atomically (C ABI only; the core
    /// spells it `snapshot::file::save_atomic(path, &m.snapshot()?)`).
    pub fn snapshot_save(&self, path: &Path) -> Result<()> {
        let path = path_string("path", path)?;
        // SAFETY: live master, NUL-terminated path outlives the call.
        call(|err| unsafe { mooncake_meta_snapshot_save(self.raw.as_ptr(), path.as_ptr(), err) })
    }

    /// Restores one snapshot.
    pub fn restore(&self, bytes: &[u8]) -> Result<RestoreReport> {
        let mut r = mooncake_meta_restore_report::default();
        // SAFETY: live master, `bytes` outlives the call, `r` sized.
        call(|err| unsafe {
            mooncake_meta_restore(
                self.raw.as_ptr(),
                array_ptr(bytes),
                bytes.len(),
                &mut r,
                err,
            )
        })?;
        RestoreReport::from_raw(r)
    }

    /// Restores the newest candidate (by stored creation instant) that
    /// validates; reports which. If every candidate fails the master is
    /// unchanged and the error lists each failure.
    pub fn restore_candidates(&self, candidates: &[&[u8]]) -> Result<RestoreReport> {
        let datas: Vec<*const u8> = candidates.iter().map(|c| array_ptr(c)).collect();
        let lens: Vec<usize> = candidates.iter().map(|c| c.len()).collect();
        let mut r = mooncake_meta_restore_report::default();
        // SAFETY: live master; arrays and buffers outlive the call.
        call(|err| unsafe {
            mooncake_meta_restore_candidates(
                self.raw.as_ptr(),
                array_ptr(&datas),
                array_ptr(&lens),
                datas.len(),
                &mut r,
                err,
            )
        })?;
        RestoreReport::from_raw(r)
    }

    /// Restores from the newest candidate file that validates, reading one
    /// file at a time (the core's `restore_files`).
    pub fn restore_files(&self, paths: &[&Path]) -> Result<RestoreReport> {
        let paths = paths
            .iter()
            .map(|p| path_string("path", p))
            .collect::<Result<Vec<_>>>()?;
        let ptrs = pointers(&paths);
        let mut r = mooncake_meta_restore_report::default();
        // SAFETY: live master; paths outlive the call.
        call(|err| unsafe {
            mooncake_meta_restore_files(
                self.raw.as_ptr(),
                array_ptr(&ptrs),
                ptrs.len(),
                &mut r,
                err,
            )
        })?;
        RestoreReport::from_raw(r)
    }
}

/// The per-segment usage in the Prometheus text: the
/// `master_segment_capacity_bytes{segment="…",pool="…"} N` samples, paired
/// in order with the `master_segment_allocated_bytes` ones (the library
/// writes both from one list).
fn parse_segments(text: &str) -> Result<Vec<SegmentUsage>> {
    let mut capacity = Vec::new();
    let mut allocated = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("master_segment_capacity_bytes{") {
            capacity.push(parse_sample(rest, line)?);
        } else if let Some(rest) = line.strip_prefix("master_segment_allocated_bytes{") {
            allocated.push(parse_sample(rest, line)?);
        }
    }
    if capacity.len() != allocated.len() {
        return Err(Error::new(
            ErrorKind::Internal,
            format!(
                "{} capacity samples but {} allocated samples",
                capacity.len(),
                allocated.len()
            ),
        ));
    }
    capacity
        .into_iter()
        .zip(allocated)
        .map(|((name, pool, cap), (name2, _, alloc))| {
            if name != name2 {
                return Err(Error::new(
                    ErrorKind::Internal,
                    format!("segment samples out of order: {name:?} then {name2:?}"),
                ));
            }
            Ok(SegmentUsage {
                name,
                pool,
                capacity: cap,
                allocated: alloc,
            })
        })
        .collect()
}

/// `segment="<escaped>",pool="<pool>"} <value>` → its three parts.
fn parse_sample(rest: &str, line: &str) -> Result<(String, Pool, u64)> {
    let bad = || {
        Error::new(
            ErrorKind::Internal,
            format!("unexpected segment sample {line:?}"),
        )
    };
    let rest = rest.strip_prefix("segment=\"").ok_or_else(bad)?;
    let mut name = String::new();
    let mut chars = rest.char_indices();
    let end = loop {
        match chars.next().ok_or_else(bad)? {
            (i, '"') => break i,
            (_, '\\') => match chars.next().ok_or_else(bad)?.1 {
                '\\' => name.push('\\'),
                '"' => name.push('"'),
                'n' => name.push('\n'),
                _ => return Err(bad()),
            },
            (_, c) => name.push(c),
        }
    };
    let rest = rest[end + 1..].strip_prefix(",pool=\"").ok_or_else(bad)?;
    let (pool, rest) = rest.split_once("\"} ").ok_or_else(bad)?;
    let pool = match pool {
        "memory" => Pool::Memory,
        "nof_ssd" => Pool::NofSsd,
        _ => return Err(bad()),
    };
    let value = rest.trim().parse().map_err(|_| bad())?;
    Ok((name, pool, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_samples_are_unescaped_and_paired() {
        let text = "# HELP x\n\
            master_segment_capacity_bytes{segment=\"a\\\"b\\\\c\\nd\",pool=\"memory\"} 10\n\
            master_segment_capacity_bytes{segment=\"s\",pool=\"nof_ssd\"} 20\n\
            master_segment_allocated_bytes{segment=\"a\\\"b\\\\c\\nd\",pool=\"memory\"} 1\n\
            master_segment_allocated_bytes{segment=\"s\",pool=\"nof_ssd\"} 2\n";
        let segs = parse_segments(text).unwrap();
        assert_eq!(
            segs,
            vec![
                SegmentUsage {
                    name: "a\"b\\c\nd".into(),
                    pool: Pool::Memory,
                    capacity: 10,
                    allocated: 1
                },
                SegmentUsage {
                    name: "s".into(),
                    pool: Pool::NofSsd,
                    capacity: 20,
                    allocated: 2
                },
            ]
        );
    }

    #[test]
    fn malformed_segment_samples_are_internal_errors() {
        for text in [
            "master_segment_capacity_bytes{segment=\"a\",pool=\"disk\"} 1\nmaster_segment_allocated_bytes{segment=\"a\",pool=\"disk\"} 1",
            "master_segment_capacity_bytes{segment=\"a\",pool=\"memory\"} 1",
            "master_segment_capacity_bytes{segment=\"a} 1",
        ] {
            assert_eq!(
                parse_segments(text).unwrap_err().kind(),
                ErrorKind::Internal,
                "{text}"
            );
        }
    }
}
