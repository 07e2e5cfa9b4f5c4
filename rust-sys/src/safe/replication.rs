//! Copy, move, promotion and LOCAL_DISK replicas.

use super::*;

impl Master {
    /// Starts copying to each named segment; returns the PROCESSING targets.
    pub fn copy_start(&self, key: Key<'_>, segments: &[&str]) -> Result<Vec<Replica>> {
        let names = c_strings("segment", segments)?;
        let ptrs = pointers(&names);
        fill(segments.len(), |out, cap, len, err| {
            // SAFETY: live master; key and names outlive the call; `out` is
            // NULL or valid for `cap` replicas.
            unsafe {
                mooncake_meta_copy_start(
                    self.raw.as_ptr(),
                    key.tenant_ptr(),
                    key.tenant.len(),
                    key.key_ptr(),
                    key.key.len(),
                    ptrs.as_ptr(),
                    ptrs.len(),
                    out,
                    cap,
                    len,
                    err,
                )
            }
        })
    }

    pub fn copy_end(&self, key: Key<'_>) -> Result<()> {
        with_key!(self, mooncake_meta_copy_end, key)
    }

    pub fn copy_revoke(&self, key: Key<'_>) -> Result<()> {
        with_key!(self, mooncake_meta_copy_revoke, key)
    }

    /// Starts moving the replica on `from` to `to`; returns the target.
    pub fn move_start(&self, key: Key<'_>, from: &str, to: &str) -> Result<Replica> {
        let mut r = Replica::default();
        with_key!(
            self,
            mooncake_meta_move_start,
            key,
            from.as_ptr().cast(),
            from.len(),
            to.as_ptr().cast(),
            to.len(),
            &mut r
        )?;
        Ok(r)
    }

    pub fn move_end(&self, key: Key<'_>) -> Result<()> {
        with_key!(self, mooncake_meta_move_end, key)
    }

    pub fn move_revoke(&self, key: Key<'_>) -> Result<()> {
        with_key!(self, mooncake_meta_move_revoke, key)
    }

    /// Starts promoting from LOCAL_DISK to memory; returns the staged replica.
    pub fn promotion_start(&self, key: Key<'_>, preferred: &[&str]) -> Result<Replica> {
        let names = c_strings("preferred segment", preferred)?;
        let ptrs = pointers(&names);
        let mut r = Replica::default();
        with_key!(
            self,
            mooncake_meta_promotion_start,
            key,
            if ptrs.is_empty() {
                ptr::null()
            } else {
                ptrs.as_ptr()
            },
            ptrs.len(),
            &mut r
        )?;
        Ok(r)
    }

    pub fn promotion_end(&self, key: Key<'_>, success: bool) -> Result<()> {
        with_key!(self, mooncake_meta_promotion_end, key, c_int::from(success))
    }

    pub fn add_local_disk_replica(&self, client: u64, key: Key<'_>, size: u64) -> Result<Replica> {
        let mut r = Replica::default();
        with_client_key!(
            self,
            mooncake_meta_add_local_disk_replica,
            client,
            key,
            size,
            &mut r
        )?;
        Ok(r)
    }
}
