//! A master's creation, clock, segments and write protocol.

use super::*;

impl Master {
    /// A master from `cfg` (`None`: the documented defaults, system clock,
    /// background tasks on). The configuration is copied.
    pub fn new(cfg: Option<&Config>) -> Result<Self> {
        let cfg = cfg.map_or(ptr::null(), Config::as_ptr);
        let mut raw = ptr::null_mut();
        // SAFETY: `cfg` is NULL or live; `raw` is writable.
        call(|err| unsafe { mooncake_meta_master_new(cfg, &mut raw, err) })?;
        Ok(Master {
            raw: NonNull::new(raw).expect("master_new succeeded with NULL"),
        })
    }

    /// A master on [`Config::deterministic`].
    pub fn deterministic(start_ms: u64) -> Result<Self> {
        Master::new(Some(&Config::deterministic(start_ms)?))
    }

    /// The raw handle, for calls this layer does not wrap (batches). Valid
    /// while `self` lives.
    pub fn as_ptr(&self) -> *const mooncake_meta_master {
        self.raw.as_ptr()
    }

    pub fn now(&self) -> Result<u64> {
        let mut now = 0;
        // SAFETY: live master, writable output.
        call(|err| unsafe { mooncake_meta_master_now(self.raw.as_ptr(), &mut now, err) })?;
        Ok(now)
    }

    pub fn set_time(&self, to_ms: u64) -> Result<()> {
        // SAFETY: live master.
        call(|err| unsafe { mooncake_meta_master_set_time(self.raw.as_ptr(), to_ms, err) })
    }

    /// Advances the manual clock; returns the new instant.
    pub fn advance_time(&self, by_ms: u64) -> Result<u64> {
        let mut now = 0;
        // SAFETY: live master, writable output.
        call(|err| unsafe {
            mooncake_meta_master_advance_time(self.raw.as_ptr(), by_ms, &mut now, err)
        })?;
        Ok(now)
    }

    /// Mounts a segment; returns its id.
    pub fn mount_segment(
        &self,
        client: u64,
        name: &str,
        base: u64,
        size: u64,
        pool: Pool,
    ) -> Result<u32> {
        let mut id = 0;
        // SAFETY: live master, `name` outlives the call, writable output.
        call(|err| unsafe {
            mooncake_meta_mount_segment(
                self.raw.as_ptr(),
                client,
                name.as_ptr().cast(),
                name.len(),
                base,
                size,
                pool.raw(),
                &mut id,
                err,
            )
        })?;
        Ok(id)
    }

    pub fn unmount_segment(&self, client: u64, name: &str) -> Result<mooncake_meta_unmount_report> {
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
        Ok(report)
    }

    pub fn unmount_client(&self, client: u64) -> Result<mooncake_meta_unmount_report> {
        let mut report = mooncake_meta_unmount_report::default();
        // SAFETY: live master, `report` is sized.
        call(|err| unsafe {
            mooncake_meta_unmount_client(self.raw.as_ptr(), client, &mut report, err)
        })?;
        Ok(report)
    }

    pub fn segment_name(&self, segment_id: u32) -> Result<String> {
        let bytes: Vec<u8> = fill(32, |buf: *mut u8, cap, len, err| {
            // SAFETY: live master; `buf` is NULL or valid for `cap` bytes.
            unsafe {
                mooncake_meta_segment_name(self.raw.as_ptr(), segment_id, buf.cast(), cap, len, err)
            }
        })?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    fn start(
        &self,
        cap: usize,
        mut f: impl FnMut(
            *mut Replica,
            usize,
            &mut usize,
            &mut u64,
            *mut *mut mooncake_meta_error,
        ) -> mooncake_meta_status,
    ) -> Result<WriteStart> {
        // A caller's replica count never sizes the first buffer beyond what
        // the library accepts: it refuses larger counts (INVALID_PARAMS)
        // before looking at the buffer, and answers BUFFER_TOO_SMALL with the
        // length it needs when it needs more.
        let cap = cap.clamp(1, 2 * MOONCAKE_META_MAX_REPLICAS_PER_POOL as usize);
        let mut token = 0;
        let replicas = fill(cap, |buf, cap, len, err| f(buf, cap, len, &mut token, err))?;
        Ok(WriteStart { replicas, token })
    }

    /// PutStart with the extended configuration.
    pub fn put_start(
        &self,
        client: u64,
        key: Key<'_>,
        size: u64,
        cfg: &WriteConfig<'_>,
    ) -> Result<WriteStart> {
        let raw = cfg.to_raw()?;
        self.start(cfg.requested(), |out, cap, len, token, err| {
            // SAFETY: live master; key, config and its strings outlive the
            // call; `out` is valid for `cap` replicas.
            unsafe {
                mooncake_meta_put_start(
                    self.raw.as_ptr(),
                    client,
                    key.tenant_ptr(),
                    key.tenant.len(),
                    key.key_ptr(),
                    key.key.len(),
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

    /// PutStart with the legacy configuration.
    pub fn put_start_legacy(
        &self,
        client: u64,
        key: Key<'_>,
        size: u64,
        cfg: &LegacyConfig<'_>,
    ) -> Result<WriteStart> {
        let raw = cfg.to_raw()?;
        self.start(cfg.replica_num.max(1), |out, cap, len, token, err| {
            // SAFETY: as `put_start`.
            unsafe {
                mooncake_meta_put_start_legacy(
                    self.raw.as_ptr(),
                    client,
                    key.tenant_ptr(),
                    key.tenant.len(),
                    key.key_ptr(),
                    key.key.len(),
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

    /// UpsertStart with the extended configuration.
    pub fn upsert_start(
        &self,
        client: u64,
        key: Key<'_>,
        size: u64,
        cfg: &WriteConfig<'_>,
    ) -> Result<WriteStart> {
        let raw = cfg.to_raw()?;
        self.start(cfg.requested(), |out, cap, len, token, err| {
            // SAFETY: as `put_start`.
            unsafe {
                mooncake_meta_upsert_start(
                    self.raw.as_ptr(),
                    client,
                    key.tenant_ptr(),
                    key.tenant.len(),
                    key.key_ptr(),
                    key.key.len(),
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

    /// UpsertStart with the legacy configuration.
    pub fn upsert_start_legacy(
        &self,
        client: u64,
        key: Key<'_>,
        size: u64,
        cfg: &LegacyConfig<'_>,
    ) -> Result<WriteStart> {
        let raw = cfg.to_raw()?;
        self.start(cfg.replica_num.max(1), |out, cap, len, token, err| {
            // SAFETY: as `put_start`.
            unsafe {
                mooncake_meta_upsert_start_legacy(
                    self.raw.as_ptr(),
                    client,
                    key.tenant_ptr(),
                    key.tenant.len(),
                    key.key_ptr(),
                    key.key.len(),
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

    /// PutEnd; `token` is the start's write token (`None` names none).
    pub fn put_end(
        &self,
        client: u64,
        key: Key<'_>,
        sel: Selector,
        token: Option<u64>,
    ) -> Result<()> {
        with_client_key!(
            self,
            mooncake_meta_put_end,
            client,
            key,
            sel.raw(),
            token.unwrap_or(0)
        )
    }

    pub fn put_revoke(
        &self,
        client: u64,
        key: Key<'_>,
        sel: Selector,
        token: Option<u64>,
    ) -> Result<()> {
        with_client_key!(
            self,
            mooncake_meta_put_revoke,
            client,
            key,
            sel.raw(),
            token.unwrap_or(0)
        )
    }

    pub fn upsert_end(
        &self,
        client: u64,
        key: Key<'_>,
        sel: Selector,
        token: Option<u64>,
    ) -> Result<()> {
        with_client_key!(
            self,
            mooncake_meta_upsert_end,
            client,
            key,
            sel.raw(),
            token.unwrap_or(0)
        )
    }

    pub fn upsert_revoke(
        &self,
        client: u64,
        key: Key<'_>,
        sel: Selector,
        token: Option<u64>,
    ) -> Result<()> {
        with_client_key!(
            self,
            mooncake_meta_upsert_revoke,
            client,
            key,
            sel.raw(),
            token.unwrap_or(0)
        )
    }
}
