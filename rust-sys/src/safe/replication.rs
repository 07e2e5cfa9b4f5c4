//! Copy, move, promotion and LOCAL_DISK replicas.

use super::*;

impl Master {
    /// Starts copying to each named segment; returns the PROCESSING targets.
    ///
    /// A target with a NUL byte, which the C ABI cannot carry, is sent as
    /// the empty name: no mounted segment has either (mount refuses both),
    /// so the core refuses it at the same point of its checks, with
    /// `SEGMENT_NOT_FOUND`, whose message then names the caller's target.
    pub fn copy_start(&self, k: Key<'_>, targets: &[&str]) -> Result<Vec<ReplicaDescriptor>> {
        k.validate()?;
        let names: Vec<CString> = targets
            .iter()
            .map(|t| CString::new(*t).unwrap_or_default())
            .collect();
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
        })
        .map_err(|e| name_unmounted_target(e, targets))?;
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
        let names = preferred_c_strings(preferred);
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

/// A copy's `SEGMENT_NOT_FOUND` for a target sent as the empty name names
/// the caller's target, its NUL bytes escaped as `\0` as the library
/// escapes them in every message. The core refuses the first target no
/// mounted segment has; every one before it was mounted, so the refused
/// one is the first that is empty or has a NUL byte.
fn name_unmounted_target(e: Error, targets: &[&str]) -> Error {
    const SENT: &str = "mooncake_meta_copy_start: segment '' is not mounted";
    if e.kind() != ErrorKind::SegmentNotFound || e.message() != SENT {
        return e;
    }
    match targets.iter().find(|t| t.is_empty() || t.contains('\0')) {
        Some(name) if !name.is_empty() => Error::from_status(
            e.code(),
            format!(
                "mooncake_meta_copy_start: segment '{}' is not mounted",
                name.replace('\0', "\\0")
            ),
        ),
        _ => e,
    }
}
