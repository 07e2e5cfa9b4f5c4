//! A master's creation, clock, segments and write protocol.

use super::*;

/// What an unmount dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UnmountReport {
    /// Replicas that lived on the segment(s).
    pub replicas_dropped: u64,
    /// Objects erased because no replica was left.
    pub objects_erased: u64,
}

impl From<mooncake_meta_unmount_report> for UnmountReport {
    fn from(r: mooncake_meta_unmount_report) -> Self {
        UnmountReport {
            replicas_dropped: r.replicas_dropped,
            objects_erased: r.objects_erased,
        }
    }
}

impl Master {
    /// Builds a master; fails with `INVALID_PARAMS` on a bad configuration.
    pub fn new(config: MasterConfig) -> Result<Master> {
        let raw_cfg = config.to_raw()?;
        let mut raw = ptr::null_mut();
        // SAFETY: `raw_cfg` is live; `raw` is writable. The library copies
        // the configuration.
        call(|err| unsafe { mooncake_meta_master_new(raw_cfg.raw.as_ptr(), &mut raw, err) })?;
        let raw = NonNull::new(raw).ok_or_else(|| {
            Error::new(
                ErrorKind::Internal,
                "mooncake_meta_master_new succeeded without a master",
            )
        })?;
        Ok(Master { raw, config })
    }

    /// The configuration this master was built with.
    pub fn config(&self) -> &MasterConfig {
        &self.config
    }

    /// The raw handle, for calls this layer does not wrap. Valid while
    /// `self` lives; do not free it.
    pub fn as_ptr(&self) -> *const mooncake_meta_master {
        self.raw.as_ptr()
    }

    /// The master's current instant.
    pub fn now(&self) -> Instant {
        let mut now = 0;
        // SAFETY: live master, writable output.
        let r = call(|err| unsafe { mooncake_meta_master_now(self.raw.as_ptr(), &mut now, err) });
        infallible("mooncake_meta_master_now", r);
        now
    }

    /// Sets the manual clock (monotonic). `CLOCK_UNSUPPORTED` on a
    /// system-clock master or when moving backwards.
    pub fn set_time(&self, to: Instant) -> Result<()> {
        // SAFETY: live master.
        call(|err| unsafe { mooncake_meta_master_set_time(self.raw.as_ptr(), to, err) })
    }

    /// The wall clock now, in ms since the Unix epoch. No lifetime depends
    /// on it; it is what the skew is measured against and what a snapshot
    /// records beside its capture instant.
    pub fn wall_time(&self) -> Instant {
        let mut wall = 0;
        // SAFETY: live master, writable output.
        let r = call(|err| unsafe {
            mooncake_meta_master_wall_time(self.raw.as_ptr(), &mut wall, err)
        });
        infallible("mooncake_meta_master_wall_time", r);
        wall
    }

    /// `timeline − wall` in ms (the `master_clock_skew_ms` metric).
    pub fn clock_skew_ms(&self) -> i64 {
        let mut s = mooncake_meta_metrics_snapshot::default();
        // SAFETY: live master, `s` sized.
        let r = call(|err| unsafe { mooncake_meta_metrics(self.raw.as_ptr(), &mut s, err) });
        infallible("mooncake_meta_metrics", r);
        s.clock_skew_ms
    }

    /// Sets a manual clock's wall apart from its timeline: a simulated wall
    /// step that changes no lifetime (only the skew and the wall recorded in
    /// snapshots). `CLOCK_UNSUPPORTED` on a system-clock master.
    pub fn set_wall_time(&self, wall: Instant) -> Result<()> {
        // SAFETY: live master.
        call(|err| unsafe { mooncake_meta_master_set_wall_time(self.raw.as_ptr(), wall, err) })
    }

    /// Advances the manual clock; returns the new instant.
    pub fn advance_time(&self, by_ms: u64) -> Result<Instant> {
        let mut now = 0;
        // SAFETY: live master, writable output.
        call(|err| unsafe {
            mooncake_meta_master_advance_time(self.raw.as_ptr(), by_ms, &mut now, err)
        })?;
        Ok(now)
    }

    /// Mounts a segment owned by `client`; returns its id. Re-mounting an
    /// identical segment is OK; the same name with another base, size, pool
    /// or owner is `SEGMENT_ALREADY_EXISTS`; a range over bytes of a segment
    /// `client` has mounted in the same pool is `INVALID_PARAMS`.
    pub fn mount_segment(&self, client: ClientId, spec: &SegmentSpec) -> Result<SegmentId> {
        let mut id = 0;
        // SAFETY: live master, the name outlives the call, writable output.
        call(|err| unsafe {
            mooncake_meta_mount_segment(
                self.raw.as_ptr(),
                client,
                spec.name.as_ptr().cast(),
                spec.name.len(),
                spec.base,
                spec.size,
                spec.pool.raw(),
                &mut id,
                err,
            )
        })?;
        Ok(id)
    }

    /// Name of a mounted segment (`None`: no segment has this id).
    pub fn segment_name(&self, id: SegmentId) -> Option<String> {
        let r = fill(32, |buf: *mut u8, cap, len, err| {
            // SAFETY: live master; `buf` is NULL or valid for `cap` bytes.
            unsafe { mooncake_meta_segment_name(self.raw.as_ptr(), id, buf.cast(), cap, len, err) }
        });
        match r {
            Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
            Err(e) if e.kind() == ErrorKind::SegmentNotFound => None,
            Err(e) => infallible("mooncake_meta_segment_name", Err(e)),
        }
    }

    /// Unmounts a segment: every replica on it is dropped, objects left
    /// without a replica are erased.
    pub fn unmount_segment(&self, client: ClientId, name: &str) -> Result<UnmountReport> {
        let mut report = mooncake_meta_unmount_report::default();
        // SAFETY: live master, `name` outlives the call, `report` is sized.
        call(|err| unsafe {
            mooncake_meta_unmount_segment(
                self.raw.as_ptr(),
                client,
                name.as_ptr().cast(),
                name.len(),
                &mut report,
                err,
            )
        })?;
        Ok(report.into())
    }

    /// Unmounts every segment of `client`.
    pub fn unmount_client(&self, client: ClientId) -> Result<UnmountReport> {
        let mut report = mooncake_meta_unmount_report::default();
        // SAFETY: live master, `report` is sized.
        call(|err| unsafe {
            mooncake_meta_unmount_client(self.raw.as_ptr(), client, &mut report, err)
        })?;
        Ok(report.into())
    }

    /// A Start call with room for up to `max` replicas.
    fn start_bounded(
        &self,
        max: usize,
        mut f: impl FnMut(
            *mut mooncake_meta_replica,
            usize,
            &mut usize,
            &mut u64,
            *mut *mut mooncake_meta_error,
        ) -> mooncake_meta_status,
    ) -> Result<Bounded<StartedWrite>> {
        let mut token = 0;
        let raw = fill_upto(max, |buf, cap, len: &mut usize, err| {
            f(buf, cap, len, &mut token, err)
        })?;
        Ok(match raw {
            Bounded::Fits(raw) => Bounded::Fits(StartedWrite {
                replicas: descriptors(&raw)?,
                token,
            }),
            Bounded::TooSmall(n) => Bounded::TooSmall(n),
        })
    }

    /// Starts a write of a new object (upstream `PutStart`). Returns the
    /// staged replicas and the write's token.
    pub fn put_start(
        &self,
        client: ClientId,
        k: Key<'_>,
        size: u64,
        cfg: &WriteConfig,
    ) -> Result<StartedWrite> {
        k.validate()?;
        batch::check_requested(cfg)?;
        let raw = cfg.to_raw()?;
        let started = self.start_bounded(cfg.requested(), |out, cap, len, token, err| {
            // SAFETY: live master; key, config and its strings outlive the
            // call; `out` is valid for `cap` replicas.
            unsafe {
                mooncake_meta_put_start(
                    self.raw.as_ptr(),
                    client,
                    k.tenant_ptr(),
                    k.tenant.len(),
                    k.key_ptr(),
                    k.key.len(),
                    size,
                    &raw.raw,
                    out,
                    cap,
                    len,
                    token,
                    err,
                )
            }
        })?;
        match started {
            Bounded::Fits(w) => Ok(w),
            // A PutStart stages at most the requested replicas, and the
            // library checks the capacity before any effect.
            Bounded::TooSmall(n) => Err(Error::new(
                ErrorKind::Internal,
                format!(
                    "mooncake_meta_put_start asked for {n} replica slots, more than the {} requested",
                    cfg.requested()
                ),
            )),
        }
    }

    /// Starts an upsert (upstream `UpsertStart`). Leases never block it.
    pub fn upsert_start(
        &self,
        client: ClientId,
        k: Key<'_>,
        size: u64,
        cfg: &WriteConfig,
    ) -> Result<StartedWrite> {
        // An in-place upsert returns the object's existing replicas, which
        // may outnumber the request: the library refuses before any effect
        // and says how many, and the call is retried with room for them.
        let mut cap = cfg.requested();
        loop {
            match self.upsert_start_bounded(client, k, size, cfg, cap)? {
                Bounded::Fits(w) => return Ok(w),
                Bounded::TooSmall(n) if n > cap => cap = n,
                Bounded::TooSmall(n) => {
                    return Err(Error::new(
                        ErrorKind::Internal,
                        format!("mooncake_meta_upsert_start refused {cap} replica slots for {n}"),
                    ))
                }
            }
        }
    }

    /// As [`upsert_start`](Self::upsert_start) for a caller with room for
    /// `max` descriptors: when the write could return more, it is
    /// `TooSmall(that many)` after every other check and before any effect.
    pub fn upsert_start_bounded(
        &self,
        client: ClientId,
        k: Key<'_>,
        size: u64,
        cfg: &WriteConfig,
        max: usize,
    ) -> Result<Bounded<StartedWrite>> {
        k.validate()?;
        batch::check_requested(cfg)?;
        let raw = cfg.to_raw()?;
        self.start_bounded(max, |out, cap, len, token, err| {
            // SAFETY: as `put_start`.
            unsafe {
                mooncake_meta_upsert_start(
                    self.raw.as_ptr(),
                    client,
                    k.tenant_ptr(),
                    k.tenant.len(),
                    k.key_ptr(),
                    k.key.len(),
                    size,
                    &raw.raw,
                    out,
                    cap,
                    len,
                    token,
                    err,
                )
            }
        })
    }

    /// PutStart with the legacy configuration (C ABI only).
    pub fn put_start_legacy(
        &self,
        client: ClientId,
        k: Key<'_>,
        size: u64,
        cfg: &LegacyConfig<'_>,
    ) -> Result<StartedWrite> {
        k.validate()?;
        cfg.check_requested()?;
        let raw = cfg.to_raw()?;
        let mut token = 0;
        let replicas = fill(cfg.replica_num.max(1), |out, cap, len, err| {
            // SAFETY: as `put_start`.
            unsafe {
                mooncake_meta_put_start_legacy(
                    self.raw.as_ptr(),
                    client,
                    k.tenant_ptr(),
                    k.tenant.len(),
                    k.key_ptr(),
                    k.key.len(),
                    size,
                    &raw.raw,
                    out,
                    cap,
                    len,
                    &mut token,
                    err,
                )
            }
        })?;
        Ok(StartedWrite {
            replicas: descriptors(&replicas)?,
            token,
        })
    }

    /// UpsertStart with the legacy configuration (C ABI only).
    pub fn upsert_start_legacy(
        &self,
        client: ClientId,
        k: Key<'_>,
        size: u64,
        cfg: &LegacyConfig<'_>,
    ) -> Result<StartedWrite> {
        k.validate()?;
        cfg.check_requested()?;
        let raw = cfg.to_raw()?;
        let mut token = 0;
        let replicas = fill(cfg.replica_num.max(1), |out, cap, len, err| {
            // SAFETY: as `put_start`.
            unsafe {
                mooncake_meta_upsert_start_legacy(
                    self.raw.as_ptr(),
                    client,
                    k.tenant_ptr(),
                    k.tenant.len(),
                    k.key_ptr(),
                    k.key.len(),
                    size,
                    &raw.raw,
                    out,
                    cap,
                    len,
                    &mut token,
                    err,
                )
            }
        })?;
        Ok(StartedWrite {
            replicas: descriptors(&replicas)?,
            token,
        })
    }

    /// Completes the targeted replicas of the write in flight (upstream
    /// `PutEnd`). The first End that makes the object readable commits the
    /// write's soft-pin intent; later Ends never refresh it. `token`: the
    /// Start's write token, or `None` (the C ABI's 0).
    pub fn put_end(
        &self,
        client: ClientId,
        k: Key<'_>,
        sel: ReplicaSelector,
        token: Option<u64>,
    ) -> Result<()> {
        with_client_key!(
            self,
            mooncake_meta_put_end,
            client,
            k,
            sel.raw(),
            token.unwrap_or(0)
        )
    }

    /// Abandons the targeted PROCESSING replicas of the write in flight
    /// (upstream `PutRevoke`); the object goes when no replica is left.
    pub fn put_revoke(
        &self,
        client: ClientId,
        k: Key<'_>,
        sel: ReplicaSelector,
        token: Option<u64>,
    ) -> Result<()> {
        with_client_key!(
            self,
            mooncake_meta_put_revoke,
            client,
            k,
            sel.raw(),
            token.unwrap_or(0)
        )
    }

    /// Completes an upsert's replicas: identical to [`Master::put_end`].
    pub fn upsert_end(
        &self,
        client: ClientId,
        k: Key<'_>,
        sel: ReplicaSelector,
        token: Option<u64>,
    ) -> Result<()> {
        with_client_key!(
            self,
            mooncake_meta_upsert_end,
            client,
            k,
            sel.raw(),
            token.unwrap_or(0)
        )
    }

    /// Revokes an upsert's replicas: identical to [`Master::put_revoke`].
    pub fn upsert_revoke(
        &self,
        client: ClientId,
        k: Key<'_>,
        sel: ReplicaSelector,
        token: Option<u64>,
    ) -> Result<()> {
        with_client_key!(
            self,
            mooncake_meta_upsert_revoke,
            client,
            k,
            sel.raw(),
            token.unwrap_or(0)
        )
    }
}
