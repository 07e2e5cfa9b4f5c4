//! Copy, move, promotion and LOCAL_DISK replicas.

use super::*;

impl Master {
    /// Starts copying to each named segment; returns the PROCESSING targets.
    pub fn copy_start(&self, k: Key<'_>, targets: &[&str]) -> Result<Vec<ReplicaDescriptor>> {
        k.validate()?;
        let names = c_strings("segment name", targets)?;
        let ptrs = pointers(&names);
        let raw = fill(targets.len(), |out, cap, len, err| {
            // SAFETY: live master; key and names outlive the call; `out` is
            // NULL or valid for `cap` replicas.
            unsafe {
                mooncake_meta_copy_start(
                    self.raw.as_ptr(),
                    k.tenant_ptr(),
                    k.tenant.len(),
                    k.key_ptr(),
                    k.key.len(),
                    array_ptr(&ptrs),
                    ptrs.len(),
                    out,
                    cap,
                    len,
                    err,
                )
            }
        })?;
        descriptors(&raw)
    }

    pub fn copy_end(&self, k: Key<'_>) -> Result<()> {
        with_key!(self, mooncake_meta_copy_end, k)
    }

    pub fn copy_revoke(&self, k: Key<'_>) -> Result<()> {
        with_key!(self, mooncake_meta_copy_revoke, k)
    }

    /// Starts moving the replica on `from` to `to`; returns the target.
    pub fn move_start(&self, k: Key<'_>, from: &str, to: &str) -> Result<ReplicaDescriptor> {
        let mut r = mooncake_meta_replica::default();
        with_key!(
            self,
            mooncake_meta_move_start,
            k,
            from.as_ptr().cast(),
            from.len(),
            to.as_ptr().cast(),
            to.len(),
            &mut r
        )?;
        ReplicaDescriptor::from_raw(&r)
    }

    pub fn move_end(&self, k: Key<'_>) -> Result<()> {
        with_key!(self, mooncake_meta_move_end, k)
    }

    pub fn move_revoke(&self, k: Key<'_>) -> Result<()> {
        with_key!(self, mooncake_meta_move_revoke, k)
    }

    /// Stages a PROCESSING memory replica for an object that has a COMPLETE
    /// LOCAL_DISK replica and no memory replica.
    pub fn promotion_start(&self, k: Key<'_>, preferred: &[String]) -> Result<ReplicaDescriptor> {
        let names = c_strings("preferred segment", preferred)?;
        let ptrs = pointers(&names);
        let mut r = mooncake_meta_replica::default();
        with_key!(
            self,
            mooncake_meta_promotion_start,
            k,
            array_ptr(&ptrs),
            ptrs.len(),
            &mut r
        )?;
        ReplicaDescriptor::from_raw(&r)
    }

    /// Ends a promotion: success completes the staged replica, failure drops it.
    pub fn promotion_end(&self, k: Key<'_>, success: bool) -> Result<()> {
        with_key!(self, mooncake_meta_promotion_end, k, c_int::from(success))
    }

    /// Registers a COMPLETE LOCAL_DISK replica held by `client`, creating
    /// the object if absent. Idempotent per client.
    pub fn add_local_disk_replica(
        &self,
        client: ClientId,
        k: Key<'_>,
        size: u64,
    ) -> Result<ReplicaDescriptor> {
        let mut r = mooncake_meta_replica::default();
        with_client_key!(
            self,
            mooncake_meta_add_local_disk_replica,
            client,
            k,
            size,
            &mut r
        )?;
        ReplicaDescriptor::from_raw(&r)
    }
}
