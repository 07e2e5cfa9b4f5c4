//! Reads, key listing and removal.

use super::*;

impl Master {
    /// Whether the key has a readable replica (grants the read lease).
    pub fn exist(&self, key: Key<'_>) -> Result<bool> {
        let mut exists: c_int = 0;
        with_key!(self, mooncake_meta_exist, key, &mut exists)?;
        Ok(exists != 0)
    }

    /// The readable replicas (grants the read lease).
    pub fn get_replica_list(&self, key: Key<'_>) -> Result<Vec<Replica>> {
        fill(4, |out, cap, len, err| {
            // SAFETY: live master; key outlives the call; `out` is NULL or
            // valid for `cap` replicas.
            unsafe {
                mooncake_meta_get_replica_list(
                    self.raw.as_ptr(),
                    key.tenant_ptr(),
                    key.tenant.len(),
                    key.key_ptr(),
                    key.key.len(),
                    out,
                    cap,
                    len,
                    err,
                )
            }
        })
    }

    pub fn key_count(&self) -> Result<u64> {
        let mut n = 0;
        // SAFETY: live master, writable output.
        call(|err| unsafe { mooncake_meta_key_count(self.raw.as_ptr(), &mut n, err) })?;
        Ok(n)
    }

    /// One page of the keys of `tenant` (`""` = default) starting with
    /// `prefix`, sorting after `after`, at most `limit` (0 = no limit).
    pub fn list_keys(
        &self,
        tenant: &str,
        prefix: &str,
        after: &str,
        limit: usize,
    ) -> Result<KeyPage> {
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

    pub fn remove(&self, key: Key<'_>, force: bool) -> Result<()> {
        with_key!(self, mooncake_meta_remove, key, c_int::from(force))
    }

    /// Removes every removable object; returns how many.
    pub fn remove_all(&self, force: bool) -> Result<u64> {
        let mut n = 0;
        // SAFETY: live master, writable output.
        call(|err| unsafe {
            mooncake_meta_remove_all(self.raw.as_ptr(), c_int::from(force), &mut n, err)
        })?;
        Ok(n)
    }

    /// Removes the removable objects whose key matches `pattern` in
    /// `tenant` (`None`: every tenant); returns how many.
    pub fn remove_by_regex(&self, tenant: Option<&str>, pattern: &str, force: bool) -> Result<u64> {
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
