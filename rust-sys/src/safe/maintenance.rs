//! Soft-pin introspection, maintenance runs, metrics, snapshot and restore.

use super::*;

impl Master {
    /// The committed soft-pin deadline (possibly expired but not yet
    /// normalised), or `None`.
    pub fn soft_pin_deadline(&self, key: Key<'_>) -> Result<Option<u64>> {
        let (mut has, mut deadline): (c_int, u64) = (0, 0);
        with_key!(
            self,
            mooncake_meta_soft_pin_deadline,
            key,
            &mut has,
            &mut deadline
        )?;
        Ok((has != 0).then_some(deadline))
    }

    pub fn has_pending_soft_pin(&self, key: Key<'_>) -> Result<bool> {
        let mut pending: c_int = 0;
        with_key!(self, mooncake_meta_has_pending_soft_pin, key, &mut pending)?;
        Ok(pending != 0)
    }

    /// The deadline index's (heap entries, live registrations).
    pub fn index_sizes(&self) -> Result<(u64, u64)> {
        let (mut heap, mut live) = (0, 0);
        // SAFETY: live master, writable outputs.
        call(|err| unsafe {
            mooncake_meta_index_sizes(self.raw.as_ptr(), &mut heap, &mut live, err)
        })?;
        Ok((heap, live))
    }

    pub fn check_invariants(&self) -> Result<()> {
        // SAFETY: live master.
        call(|err| unsafe { mooncake_meta_check_invariants(self.raw.as_ptr(), err) })
    }

    pub fn run_cleanup(&self) -> Result<mooncake_meta_cleanup_stats> {
        let mut s = mooncake_meta_cleanup_stats::default();
        // SAFETY: live master, `s` sized.
        call(|err| unsafe { mooncake_meta_run_cleanup(self.raw.as_ptr(), &mut s, err) })?;
        Ok(s)
    }

    pub fn run_cleanup_at(&self, at_ms: u64) -> Result<mooncake_meta_cleanup_stats> {
        let mut s = mooncake_meta_cleanup_stats::default();
        // SAFETY: live master, `s` sized.
        call(|err| unsafe { mooncake_meta_run_cleanup_at(self.raw.as_ptr(), at_ms, &mut s, err) })?;
        Ok(s)
    }

    pub fn run_eviction(
        &self,
        target: f64,
        lowerbound: f64,
    ) -> Result<mooncake_meta_eviction_report> {
        let mut r = mooncake_meta_eviction_report::default();
        // SAFETY: live master, `r` sized.
        call(|err| unsafe {
            mooncake_meta_run_eviction(self.raw.as_ptr(), target, lowerbound, &mut r, err)
        })?;
        Ok(r)
    }

    /// The eviction trigger; `None` when no run happened.
    pub fn evict_if_needed(&self, force: bool) -> Result<Option<mooncake_meta_eviction_report>> {
        let mut r = mooncake_meta_eviction_report::default();
        let mut ran: c_int = 0;
        // SAFETY: live master, writable outputs, `r` sized.
        call(|err| unsafe {
            mooncake_meta_evict_if_needed(
                self.raw.as_ptr(),
                c_int::from(force),
                &mut ran,
                &mut r,
                err,
            )
        })?;
        Ok((ran != 0).then_some(r))
    }

    pub fn run_maintenance_tick(&self) -> Result<()> {
        // SAFETY: live master.
        call(|err| unsafe { mooncake_meta_run_maintenance_tick(self.raw.as_ptr(), err) })
    }

    /// Sweeps the writes stale at `at_ms`; returns how many.
    pub fn sweep_stale_writes_at(&self, at_ms: u64) -> Result<u64> {
        let mut n = 0;
        // SAFETY: live master, writable output.
        call(|err| unsafe {
            mooncake_meta_sweep_stale_writes_at(self.raw.as_ptr(), at_ms, &mut n, err)
        })?;
        Ok(n)
    }

    /// Frees the discarded buffers due at `at_ms`; returns how many.
    pub fn release_discarded_at(&self, at_ms: u64) -> Result<u64> {
        let mut n = 0;
        // SAFETY: live master, writable output.
        call(|err| unsafe {
            mooncake_meta_release_discarded_at(self.raw.as_ptr(), at_ms, &mut n, err)
        })?;
        Ok(n)
    }

    pub fn metrics(&self) -> Result<mooncake_meta_metrics_snapshot> {
        let mut s = mooncake_meta_metrics_snapshot::default();
        // SAFETY: live master, `s` sized.
        call(|err| unsafe { mooncake_meta_metrics(self.raw.as_ptr(), &mut s, err) })?;
        Ok(s)
    }

    /// The Prometheus text exposition.
    pub fn metrics_prometheus(&self) -> Result<String> {
        let mut out = ptr::null_mut();
        // SAFETY: live master, writable output.
        call(|err| unsafe { mooncake_meta_metrics_prometheus(self.raw.as_ptr(), &mut out, err) })?;
        let bytes = Bytes {
            raw: NonNull::new(out).expect("metrics_prometheus succeeded with NULL"),
        };
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Serialises the master into a library-owned buffer.
    pub fn snapshot(&self) -> Result<Bytes> {
        let mut out = ptr::null_mut();
        // SAFETY: live master, writable output.
        call(|err| unsafe { mooncake_meta_snapshot(self.raw.as_ptr(), &mut out, err) })?;
        Ok(Bytes {
            raw: NonNull::new(out).expect("snapshot succeeded with NULL"),
        })
    }

    /// Serialises the master to `path` atomically.
    pub fn snapshot_save(&self, path: &Path) -> Result<()> {
        let path = path_string("path", path)?;
        // SAFETY: live master, NUL-terminated path outlives the call.
        call(|err| unsafe { mooncake_meta_snapshot_save(self.raw.as_ptr(), path.as_ptr(), err) })
    }

    /// Restores the master from one snapshot.
    pub fn restore(&self, snapshot: &[u8]) -> Result<mooncake_meta_restore_report> {
        let mut r = mooncake_meta_restore_report::default();
        // SAFETY: live master, `snapshot` outlives the call, `r` sized.
        call(|err| unsafe {
            mooncake_meta_restore(
                self.raw.as_ptr(),
                snapshot.as_ptr(),
                snapshot.len(),
                &mut r,
                err,
            )
        })?;
        Ok(r)
    }

    /// Restores from the newest candidate that validates.
    pub fn restore_candidates(&self, candidates: &[&[u8]]) -> Result<mooncake_meta_restore_report> {
        let datas: Vec<*const u8> = candidates.iter().map(|c| c.as_ptr()).collect();
        let lens: Vec<usize> = candidates.iter().map(|c| c.len()).collect();
        let mut r = mooncake_meta_restore_report::default();
        // SAFETY: live master; arrays and buffers outlive the call.
        call(|err| unsafe {
            mooncake_meta_restore_candidates(
                self.raw.as_ptr(),
                datas.as_ptr(),
                lens.as_ptr(),
                datas.len(),
                &mut r,
                err,
            )
        })?;
        Ok(r)
    }

    /// Restores from the newest candidate file that validates.
    pub fn restore_files(&self, paths: &[&Path]) -> Result<mooncake_meta_restore_report> {
        let paths = paths
            .iter()
            .map(|p| path_string("path", p))
            .collect::<Result<Vec<_>>>()?;
        let ptrs = pointers(&paths);
        let mut r = mooncake_meta_restore_report::default();
        // SAFETY: live master; paths outlive the call.
        call(|err| unsafe {
            mooncake_meta_restore_files(self.raw.as_ptr(), ptrs.as_ptr(), ptrs.len(), &mut r, err)
        })?;
        Ok(r)
    }
}
