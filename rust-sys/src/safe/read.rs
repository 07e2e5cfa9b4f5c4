//! Reads, key listing and removal. Reads grant the ordinary read lease and
//! never touch soft-pin state.

use super::*;

/// The outcome of a read or write into a caller's fixed-size array (the C
/// ABI's BUFFER_TOO_SMALL convention): either the result, or how many
/// entries it needs, decided before any side effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bounded<T> {
    Fits(T),
    TooSmall(usize),
}

/// One page of a key listing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeyPage {
    /// Keys in ascending byte order.
    pub keys: Vec<String>,
    /// Pass as `after` to get the next page; `None` at the end.
    pub next: Option<String>,
}

impl Master {
    /// One GetReplicaList call with room for `cap` replicas.
    fn replica_list(&self, k: Key<'_>, max: usize) -> Result<Bounded<Vec<mooncake_meta_replica>>> {
        k.validate()?;
        fill_upto(max, |out, cap, len: &mut usize, err| {
            // SAFETY: live master; key outlives the call; `out` is NULL or
            // valid for `cap` replicas.
            unsafe {
                mooncake_meta_get_replica_list(
                    self.raw.as_ptr(),
                    k.tenant_ptr(),
                    k.tenant.len(),
                    k.key_ptr(),
                    k.key.len(),
                    out,
                    cap,
                    len,
                    err,
                )
            }
        })
    }

    /// The readable replicas of a key; grants the read lease.
    pub fn get_replica_list(&self, k: Key<'_>) -> Result<Vec<ReplicaDescriptor>> {
        let mut out = Vec::with_capacity(1);
        self.get_replica_list_into(k, &mut out)?;
        Ok(out)
    }

    /// As [`get_replica_list`](Self::get_replica_list), appending to `out`.
    pub fn get_replica_list_into(
        &self,
        k: Key<'_>,
        out: &mut Vec<ReplicaDescriptor>,
    ) -> Result<()> {
        // Room for what `out` can take without growing (4 to 64): a
        // larger list is refused before the lease and read again.
        let mut cap = (out.capacity() - out.len()).clamp(4, 64);
        loop {
            match self.replica_list(k, cap)? {
                Bounded::Fits(raw) => {
                    out.extend(descriptors(&raw)?);
                    return Ok(());
                }
                Bounded::TooSmall(n) => cap = n,
            }
        }
    }

    /// As [`get_replica_list`](Self::get_replica_list) when at most `max`
    /// replicas are readable; otherwise `TooSmall(count)` and no lease.
    pub fn get_replica_list_bounded(
        &self,
        k: Key<'_>,
        max: usize,
    ) -> Result<Bounded<Vec<ReplicaDescriptor>>> {
        Ok(match self.replica_list(k, max)? {
            Bounded::Fits(raw) => Bounded::Fits(descriptors(&raw)?),
            Bounded::TooSmall(n) => Bounded::TooSmall(n),
        })
    }

    /// How many replicas of a key are readable now (0 when the key is
    /// missing or malformed, or on a standby, as the core answers); grants
    /// nothing.
    pub fn readable_count(&self, k: Key<'_>) -> usize {
        match self.replica_list(k, 0) {
            Ok(Bounded::TooSmall(n)) => n,
            Ok(Bounded::Fits(raw)) => raw.len(),
            // The C call is a read: a missing key, one with nothing
            // readable, a malformed key and a standby (which serves no
            // read) are refused there, and all mean 0 here.
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::ObjectNotFound
                        | ErrorKind::ReplicaIsNotReady
                        | ErrorKind::InvalidParams
                        | ErrorKind::UnavailableInCurrentStatus
                ) =>
            {
                0
            }
            Err(e) => infallible("mooncake_meta_get_replica_list", Err(e)),
        }
    }

    /// Whether a key has a readable replica; grants the read lease if so.
    pub fn exist(&self, k: Key<'_>) -> Result<bool> {
        let mut exists: c_int = 0;
        with_key!(self, mooncake_meta_exist, k, &mut exists)?;
        Ok(exists != 0)
    }

    /// Number of objects (all tenants).
    pub fn key_count(&self) -> u64 {
        let mut n = 0;
        // SAFETY: live master, writable output.
        let r = call(|err| unsafe { mooncake_meta_key_count(self.raw.as_ptr(), &mut n, err) });
        infallible("mooncake_meta_key_count", r);
        n
    }

    /// Lists keys of `tenant` starting with `prefix`, strictly after `after`,
    /// at most `limit` (0 = no limit), in ascending order.
    pub fn list_keys(
        &self,
        tenant: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<KeyPage> {
        validate_name("tenant", tenant)?;
        // Keys are never empty, so "after the empty key" is every key.
        let after = after.unwrap_or("");
        let mut list = ptr::null_mut();
        // SAFETY: live master; strings outlive the call; `list` writable.
        call(|err| unsafe {
            mooncake_meta_list_keys(
                self.raw.as_ptr(),
                tenant.as_ptr().cast(),
                tenant.len(),
                prefix.as_ptr().cast(),
                prefix.len(),
                after.as_ptr().cast(),
                after.len(),
                limit,
                &mut list,
                err,
            )
        })?;
        let list = KeyList(list);
        // SAFETY: `list.0` is a live key list until `list` drops.
        unsafe {
            let n = mooncake_meta_key_list_len(list.0);
            let mut keys = Vec::with_capacity(n);
            for i in 0..n {
                let (mut p, mut len) = (ptr::null(), 0usize);
                call(|err| mooncake_meta_key_list_get(list.0, i, &mut p, &mut len, err))?;
                keys.push(lossy(p, len));
            }
            let (mut has, mut p, mut len) = (0, ptr::null(), 0usize);
            call(|err| {
                mooncake_meta_key_list_next_cursor(list.0, &mut has, &mut p, &mut len, err)
            })?;
            let next = (has != 0).then(|| lossy(p, len));
            Ok(KeyPage { keys, next })
        }
    }

    /// Removes an object (`force`: even with a live lease or a hard pin).
    pub fn remove(&self, k: Key<'_>, force: bool) -> Result<()> {
        with_key!(self, mooncake_meta_remove, k, c_int::from(force))
    }

    /// Removes every removable object; returns how many went.
    pub fn remove_all(&self, force: bool) -> u64 {
        let mut n = 0;
        // SAFETY: live master, writable output.
        let r = call(|err| unsafe {
            mooncake_meta_remove_all(self.raw.as_ptr(), c_int::from(force), &mut n, err)
        });
        infallible("mooncake_meta_remove_all", r);
        n
    }

    /// Removes the removable objects whose key (in `tenant`, or any tenant
    /// when `None`) matches `pattern` anywhere. A bad or oversized pattern
    /// is `INVALID_PARAMS`.
    pub fn remove_by_regex(&self, tenant: Option<&str>, pattern: &str, force: bool) -> Result<u64> {
        if let Some(t) = tenant {
            // The C ABI reads an empty tenant as "every tenant".
            validate_name("tenant", t)?;
        }
        let tenant = tenant.unwrap_or("");
        let mut n = 0;
        // SAFETY: live master, strings outlive the call, writable output.
        call(|err| unsafe {
            mooncake_meta_remove_by_regex(
                self.raw.as_ptr(),
                tenant.as_ptr().cast(),
                tenant.len(),
                pattern.as_ptr().cast(),
                pattern.len(),
                c_int::from(force),
                &mut n,
                err,
            )
        })?;
        Ok(n)
    }
}

/// A key list, freed on drop.
struct KeyList(*mut mooncake_meta_key_list);

impl Drop for KeyList {
    fn drop(&mut self) {
        // SAFETY: owned, from `mooncake_meta_list_keys`.
        unsafe { mooncake_meta_key_list_free(self.0) }
    }
}

/// # Safety
/// `p` valid for `len` bytes (or `len == 0`).
unsafe fn lossy(p: *const c_char, len: usize) -> String {
    if len == 0 {
        return String::new();
    }
    // SAFETY: forwarded.
    String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) }).into_owned()
}
