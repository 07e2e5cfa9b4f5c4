//! Batch forms. A bad shared request (soft-pin request, mismatched array
//! lengths) fails every key with INVALID_PARAMS and changes nothing;
//! otherwise keys are processed in order as single calls, so a repeated key
//! sees the earlier entry's effect.

use super::put::validate_write;
use crate::error::{Error, Result};
use crate::master::MasterCore;
use crate::types::{ClientId, Key, ReplicaDescriptor, ReplicaSelector, StartedWrite, WriteConfig};

fn all_fail<T>(n: usize, e: Error) -> Vec<Result<T>> {
    (0..n).map(|_| Err(e.clone())).collect()
}

fn check_tokens(keys: usize, tokens: Option<&[u64]>) -> Result<()> {
    match tokens {
        Some(t) if t.len() != keys => Err(Error::invalid(format!(
            "{} tokens for {keys} keys",
            t.len()
        ))),
        _ => Ok(()),
    }
}

/// Token `i` of a batch; 0 means "no token" (as in C).
fn token_at(tokens: Option<&[u64]>, i: usize) -> Option<u64> {
    tokens.map(|t| t[i]).filter(|&t| t != 0)
}

impl MasterCore {
    fn batch_start(
        &self,
        keys: &[Key<'_>],
        sizes: &[u64],
        cfg: &WriteConfig,
        one: impl Fn(Key<'_>, u64) -> Result<StartedWrite>,
    ) -> Vec<Result<StartedWrite>> {
        if keys.len() != sizes.len() {
            let e = Error::invalid(format!("{} keys but {} sizes", keys.len(), sizes.len()));
            return all_fail(keys.len(), e);
        }
        if let Err(e) = cfg
            .check_replica_counts()
            .and_then(|()| cfg.soft_pin.resolve(&self.config).map(|_| ()))
        {
            return all_fail(keys.len(), e);
        }
        keys.iter().zip(sizes).map(|(k, &s)| one(*k, s)).collect()
    }

    /// PutStart for each key with one shared configuration.
    pub fn batch_put_start(
        &self,
        client: ClientId,
        keys: &[Key<'_>],
        sizes: &[u64],
        cfg: &WriteConfig,
    ) -> Vec<Result<StartedWrite>> {
        self.batch_start(keys, sizes, cfg, |k, s| self.put_start(client, k, s, cfg))
    }

    /// UpsertStart for each key with one shared configuration.
    pub fn batch_upsert_start(
        &self,
        client: ClientId,
        keys: &[Key<'_>],
        sizes: &[u64],
        cfg: &WriteConfig,
    ) -> Vec<Result<StartedWrite>> {
        self.batch_start(keys, sizes, cfg, |k, s| {
            self.upsert_start(client, k, s, cfg)
        })
    }

    /// PutEnd (= UpsertEnd) for each key; `tokens[i] == 0` means no token.
    pub fn batch_put_end(
        &self,
        client: ClientId,
        keys: &[Key<'_>],
        sel: ReplicaSelector,
        tokens: Option<&[u64]>,
    ) -> Vec<Result<()>> {
        if let Err(e) = check_tokens(keys.len(), tokens) {
            return all_fail(keys.len(), e);
        }
        keys.iter()
            .enumerate()
            .map(|(i, k)| self.put_end(client, *k, sel, token_at(tokens, i)))
            .collect()
    }

    /// PutRevoke (= UpsertRevoke) for each key; `tokens[i] == 0` means no token.
    pub fn batch_put_revoke(
        &self,
        client: ClientId,
        keys: &[Key<'_>],
        sel: ReplicaSelector,
        tokens: Option<&[u64]>,
    ) -> Vec<Result<()>> {
        if let Err(e) = check_tokens(keys.len(), tokens) {
            return all_fail(keys.len(), e);
        }
        keys.iter()
            .enumerate()
            .map(|(i, k)| self.put_revoke(client, *k, sel, token_at(tokens, i)))
            .collect()
    }

    /// GetReplicaList for each key.
    pub fn batch_get_replica_list(&self, keys: &[Key<'_>]) -> Vec<Result<Vec<ReplicaDescriptor>>> {
        keys.iter().map(|k| self.get_replica_list(*k)).collect()
    }

    /// Exist for each key.
    pub fn batch_exist(&self, keys: &[Key<'_>]) -> Vec<Result<bool>> {
        keys.iter().map(|k| self.exist(*k)).collect()
    }

    /// Remove for each key.
    pub fn batch_remove(&self, keys: &[Key<'_>], force: bool) -> Vec<Result<()>> {
        keys.iter().map(|k| self.remove(*k, force)).collect()
    }

    /// Validates a write request exactly as a Start would, without effects.
    pub fn validate_write_request(&self, k: Key<'_>, size: u64, cfg: &WriteConfig) -> Result<()> {
        validate_write(self, k, size, cfg).map(|_| ())
    }
}
