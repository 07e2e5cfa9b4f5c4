//! Group retention, as the core's: `retain_groups`, `release_groups`,
//! `group_retention_deadline` and `retained_group_count`. A bad shared
//! argument (the tenant; a retain's TTL of 0 or above the maximum) fails
//! every group with that one refusal, message included (the C ABI writes
//! its code into every status and returns it); a call the C ABI refuses
//! otherwise (a standby) is this layer's `Err`; else one result per group,
//! whose error carries the group's status (the C ABI writes one status per
//! group and no per-group message).

use super::*;

/// The tenant as the core checks it (the C ABI reads an empty tenant as
/// the default one, the core refuses it).
fn check_tenant(tenant: &str) -> Result<()> {
    if tenant.is_empty() {
        return Err(Error::invalid("tenant must not be empty"));
    }
    if tenant.contains('\0') {
        return Err(Error::invalid("tenant must not contain NUL"));
    }
    Ok(())
}

fn group_error(i: usize, status: i32) -> Error {
    Error::from_status(status, format!("groups[{i}]: {}", status_name(status)))
}

/// The per-group results of a retain or release: `call` is the C call's
/// outcome and `statuses` what it wrote. `INVALID_PARAMS` with that code in
/// every status is the refusal of a bad shared argument, every group's
/// (this layer passes no argument the C ABI cannot use); any other failure
/// refuses the call.
fn per_group<T>(
    call: Result<()>,
    statuses: &[i32],
    ok: impl Fn(usize) -> T,
) -> Result<Vec<Result<T>>> {
    match call {
        Ok(()) => Ok(statuses
            .iter()
            .enumerate()
            .map(|(i, &s)| {
                if s == MOONCAKE_META_OK {
                    Ok(ok(i))
                } else {
                    Err(group_error(i, s))
                }
            })
            .collect()),
        Err(e)
            if e.kind() == ErrorKind::InvalidParams
                && statuses.iter().all(|&s| s == MOONCAKE_META_INVALID_PARAMS) =>
        {
            Ok(statuses.iter().map(|_| Err(e.clone())).collect())
        }
        Err(e) => Err(e),
    }
}

impl Master {
    /// Retains every group of `groups` in `tenant` for `ttl_ms`: one result
    /// per group, the group's deadline after the call (see the core's
    /// `retain_groups`).
    pub fn retain_groups(
        &self,
        tenant: &str,
        groups: &[&str],
        ttl_ms: u64,
    ) -> Result<Vec<Result<Instant>>> {
        if let Err(e) = check_tenant(tenant) {
            return Ok(groups.iter().map(|_| Err(e.clone())).collect());
        }
        let ptrs: Vec<*const c_char> = groups.iter().map(|g| g.as_ptr().cast()).collect();
        let lens: Vec<usize> = groups.iter().map(|g| g.len()).collect();
        let mut statuses = vec![0i32; groups.len()];
        let mut deadlines = vec![0u64; groups.len()];
        // SAFETY: live master; every array holds `groups.len()` elements
        // and each id is valid for its length during the call.
        let r = call(|e| unsafe {
            mooncake_meta_retain_groups(
                self.raw.as_ptr(),
                tenant.as_ptr().cast(),
                tenant.len(),
                ptrs.as_ptr(),
                lens.as_ptr(),
                groups.len(),
                ttl_ms,
                statuses.as_mut_ptr(),
                deadlines.as_mut_ptr(),
                e,
            )
        });
        per_group(r, &statuses, |i| deadlines[i])
    }

    /// Ends the retention of every group of `groups` in `tenant` now: one
    /// result per group.
    pub fn release_groups(&self, tenant: &str, groups: &[&str]) -> Result<Vec<Result<()>>> {
        if let Err(e) = check_tenant(tenant) {
            return Ok(groups.iter().map(|_| Err(e.clone())).collect());
        }
        let ptrs: Vec<*const c_char> = groups.iter().map(|g| g.as_ptr().cast()).collect();
        let lens: Vec<usize> = groups.iter().map(|g| g.len()).collect();
        let mut statuses = vec![0i32; groups.len()];
        // SAFETY: as in `retain_groups`.
        let r = call(|e| unsafe {
            mooncake_meta_release_groups(
                self.raw.as_ptr(),
                tenant.as_ptr().cast(),
                tenant.len(),
                ptrs.as_ptr(),
                lens.as_ptr(),
                groups.len(),
                statuses.as_mut_ptr(),
                e,
            )
        });
        per_group(r, &statuses, |_| ())
    }

    /// The active retention deadline of a group (`None`: not retained, or
    /// its deadline has passed).
    pub fn group_retention_deadline(&self, tenant: &str, group: &str) -> Result<Option<Instant>> {
        check_tenant(tenant)?;
        let (mut has, mut deadline): (c_int, u64) = (0, 0);
        // SAFETY: live master; strings valid for their lengths; outputs writable.
        call(|e| unsafe {
            mooncake_meta_group_retention_deadline(
                self.raw.as_ptr(),
                tenant.as_ptr().cast(),
                tenant.len(),
                group.as_ptr().cast(),
                group.len(),
                &mut has,
                &mut deadline,
                e,
            )
        })?;
        Ok((has != 0).then_some(deadline))
    }

    /// Groups with a committed retention deadline.
    pub fn retained_group_count(&self) -> u64 {
        self.metrics().retained_group_count
    }
}
