//! Batch forms, as the core's: one result per key, keys processed in order
//! as single calls. A C batch names one tenant, so keys are sent in runs of
//! consecutive keys of one tenant; a key the core would refuse on its own
//! (empty, bad tenant) fails alone, here, without being sent, as in the
//! core. Only the first failure of a C call carries the library's message
//! (the others carry their status and position): the C ABI writes one
//! message per call. An in-place upsert whose existing replicas outnumber
//! the requested ones is skipped by the C batch (BUFFER_TOO_SMALL, nothing
//! done) and redone here on its own after the rest of its call, which only
//! a repeated key later in the same batch could tell apart.

use super::*;
use std::ops::Range;

/// Replica slots one C batch call may need; longer batches are split (in
/// order, which the semantics allow: keys are processed one by one).
const MAX_BATCH_SLOTS: usize = 1 << 16;

/// Replicas one write may request through this layer: the C ABI needs room
/// for every requested replica up front, and no master has more segments.
pub(super) const MAX_REQUESTED_REPLICAS: usize = 1 << 16;

pub(super) fn check_requested(cfg: &WriteConfig) -> Result<()> {
    let n = cfg.memory_replicas as u64 + cfg.nof_ssd_replicas as u64;
    if n > MAX_REQUESTED_REPLICAS as u64 {
        return Err(Error::invalid(format!(
            "{n} replicas requested; at most {MAX_REQUESTED_REPLICAS} per write"
        )));
    }
    Ok(())
}

/// A stretch of a batch: keys `range` of `tenant`, all well-formed.
struct Run<'k> {
    tenant: &'k str,
    range: Range<usize>,
}

/// Splits `keys` into runs, writing the local refusal of every malformed
/// key into `results`.
fn runs<'k, T>(
    keys: &[Key<'k>],
    max_keys: usize,
    results: &mut [Option<Result<T>>],
) -> Vec<Run<'k>> {
    let mut out: Vec<Run<'k>> = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        if let Err(e) = k.validate() {
            results[i] = Some(Err(e));
            continue;
        }
        match out.last_mut() {
            Some(r) if r.tenant == k.tenant && r.range.end == i && r.range.len() < max_keys => {
                r.range.end = i + 1
            }
            _ => out.push(Run {
                tenant: k.tenant,
                range: i..i + 1,
            }),
        }
    }
    out
}

/// The key pointer and length arrays of a run.
fn key_arrays(keys: &[Key<'_>]) -> (Vec<*const c_char>, Vec<usize>) {
    (
        keys.iter().map(|k| k.key_ptr()).collect(),
        keys.iter().map(|k| k.key.len()).collect(),
    )
}

/// Whether `message` is the library's summary of a C batch call whose keys
/// were processed one by one: `<function>: keys[<first>]: <the first
/// failure's message> (<failed> of <n> keys failed)` (src/batch.rs), where
/// `first` is the first failing key. A batch refused as a whole carries the
/// refusal's own message instead, with every status that one code.
fn is_per_key_summary(message: &str, first: usize, failed: usize, n: usize) -> bool {
    message.split_once(": ").is_some_and(|(_, rest)| {
        rest.starts_with(&format!("keys[{first}]: "))
            && rest.ends_with(&format!(" ({failed} of {n} keys failed)"))
    })
}

/// The per-key errors of one C batch call: `status` and `err` are what
/// it returned, `statuses` what it wrote.
fn key_errors(
    status: mooncake_meta_status,
    err: *mut mooncake_meta_error,
    statuses: &[i32],
) -> Vec<Option<Error>> {
    // SAFETY: `err` is NULL or the call's new error object, owned here.
    let first = (status != MOONCAKE_META_OK).then(|| unsafe { Error::take(status, err) });
    let failing = statuses.iter().position(|&s| s != MOONCAKE_META_OK);
    let failed = statuses.iter().filter(|&&s| s != MOONCAKE_META_OK).count();
    // One error for every key, whatever its status says: after a PANIC no
    // key is known to have succeeded (the library fills the statuses with
    // PANIC; builds before that fill left them unspecified, and a zero reads
    // as OK); a failed call that wrote no failing status cannot be pinned on
    // one key; and a refusal of the whole batch writes its code into every
    // status without naming a key. Keys that all failed with the call's code
    // on their own are told apart by the message, which names the first.
    let whole = match (&first, failing) {
        (None, _) => false,
        (Some(_), _) if status == MOONCAKE_META_PANIC => true,
        (Some(_), None) => true,
        (Some(e), Some(i)) => {
            statuses.iter().all(|&s| s == status)
                && !is_per_key_summary(e.message(), i, failed, statuses.len())
        }
    };
    if whole {
        return statuses.iter().map(|_| first.clone()).collect();
    }
    let mut first = first;
    statuses
        .iter()
        .enumerate()
        .map(|(j, &s)| {
            if s == MOONCAKE_META_OK {
                return None;
            }
            Some(match first.take() {
                Some(e) if e.code() == s => e,
                other => {
                    first = other;
                    Error::from_status(
                        s,
                        format!(
                            "{}: key {j} of this batch call failed (the C ABI gives the message of the first failure only)",
                            status_name(s)
                        ),
                    )
                }
            })
        })
        .collect()
}

/// Runs one raw batch call with an error out-parameter.
fn raw_call(
    f: impl FnOnce(*mut *mut mooncake_meta_error) -> mooncake_meta_status,
) -> (mooncake_meta_status, *mut mooncake_meta_error) {
    let mut err: *mut mooncake_meta_error = ptr::null_mut();
    let status = f(&mut err);
    (status, err)
}

fn all_fail<T>(n: usize, e: Error) -> Vec<Result<T>> {
    (0..n).map(|_| Err(e.clone())).collect()
}

fn collect<T>(results: Vec<Option<Result<T>>>) -> Vec<Result<T>> {
    results
        .into_iter()
        .map(|r| {
            r.unwrap_or_else(|| {
                Err(Error::new(
                    ErrorKind::Internal,
                    "batch entry left without a result",
                ))
            })
        })
        .collect()
}

type StartFn = unsafe extern "C" fn(
    *const mooncake_meta_master,
    u64,
    *const c_char,
    usize,
    *const *const c_char,
    *const usize,
    usize,
    *const u64,
    *const mooncake_meta_write_config,
    *mut mooncake_meta_replica,
    usize,
    *mut usize,
    *mut u64,
    *mut i32,
    *mut *mut mooncake_meta_error,
) -> mooncake_meta_status;

type EndFn = unsafe extern "C" fn(
    *const mooncake_meta_master,
    u64,
    *const c_char,
    usize,
    *const *const c_char,
    *const usize,
    usize,
    u32,
    *const u64,
    *mut i32,
    *mut *mut mooncake_meta_error,
) -> mooncake_meta_status;

impl Master {
    fn batch_start(
        &self,
        f: StartFn,
        client: ClientId,
        keys: &[Key<'_>],
        sizes: &[u64],
        cfg: &WriteConfig,
    ) -> Vec<Result<StartedWrite>> {
        if keys.len() != sizes.len() {
            let e = Error::invalid(format!("{} keys but {} sizes", keys.len(), sizes.len()));
            return all_fail(keys.len(), e);
        }
        if let Err(e) = cfg
            .soft_pin
            .resolve(&self.config)
            .and_then(|_| check_requested(cfg))
        {
            return all_fail(keys.len(), e);
        }
        let raw_cfg = match cfg.to_raw() {
            Ok(r) => r,
            Err(e) => return all_fail(keys.len(), e),
        };
        let stride = (cfg.memory_replicas as usize + cfg.nof_ssd_replicas as usize).max(1);
        let mut results: Vec<Option<Result<StartedWrite>>> = vec![None; keys.len()];
        for run in runs(keys, (MAX_BATCH_SLOTS / stride).max(1), &mut results) {
            let ks = &keys[run.range.clone()];
            let n = ks.len();
            let (ptrs, lens) = key_arrays(ks);
            let mut replicas = vec![mooncake_meta_replica::default(); n * stride];
            let mut counts = vec![0usize; n];
            let mut tokens = vec![0u64; n];
            let mut statuses = vec![0i32; n];
            // SAFETY: live master; every array is valid for its stated
            // length and outlives the call; the key strings too.
            let (status, err) = raw_call(|err| unsafe {
                f(
                    self.raw.as_ptr(),
                    client,
                    run.tenant.as_ptr().cast(),
                    run.tenant.len(),
                    ptrs.as_ptr(),
                    lens.as_ptr(),
                    n,
                    sizes[run.range.clone()].as_ptr(),
                    &raw_cfg.raw,
                    replicas.as_mut_ptr(),
                    replicas.len(),
                    counts.as_mut_ptr(),
                    tokens.as_mut_ptr(),
                    statuses.as_mut_ptr(),
                    err,
                )
            });
            let errors = key_errors(status, err, &statuses);
            for (j, e) in errors.into_iter().enumerate() {
                let i = run.range.start + j;
                results[i] = Some(match e {
                    Some(e) if e.kind() == ErrorKind::BufferTooSmall && counts[j] > stride => {
                        // An in-place upsert whose replicas outnumber the
                        // stride (its count says how many): nothing was done
                        // to it; do it alone.
                        self.upsert_start(client, keys[i], sizes[i], cfg)
                    }
                    Some(e) => Err(e),
                    None => {
                        let slots = &replicas[j * stride..][..counts[j].min(stride)];
                        descriptors(slots).map(|replicas| StartedWrite {
                            replicas,
                            token: tokens[j],
                        })
                    }
                });
            }
        }
        collect(results)
    }

    /// PutStart for each key with one shared configuration.
    pub fn batch_put_start(
        &self,
        client: ClientId,
        keys: &[Key<'_>],
        sizes: &[u64],
        cfg: &WriteConfig,
    ) -> Vec<Result<StartedWrite>> {
        self.batch_start(mooncake_meta_batch_put_start, client, keys, sizes, cfg)
    }

    /// UpsertStart for each key with one shared configuration.
    pub fn batch_upsert_start(
        &self,
        client: ClientId,
        keys: &[Key<'_>],
        sizes: &[u64],
        cfg: &WriteConfig,
    ) -> Vec<Result<StartedWrite>> {
        self.batch_start(mooncake_meta_batch_upsert_start, client, keys, sizes, cfg)
    }

    fn batch_end(
        &self,
        f: EndFn,
        client: ClientId,
        keys: &[Key<'_>],
        sel: ReplicaSelector,
        tokens: Option<&[u64]>,
    ) -> Vec<Result<()>> {
        if let Some(t) = tokens {
            if t.len() != keys.len() {
                let e = Error::invalid(format!("{} tokens for {} keys", t.len(), keys.len()));
                return all_fail(keys.len(), e);
            }
        }
        let mut results: Vec<Option<Result<()>>> = vec![None; keys.len()];
        for run in runs(keys, MAX_BATCH_SLOTS, &mut results) {
            let ks = &keys[run.range.clone()];
            let n = ks.len();
            let (ptrs, lens) = key_arrays(ks);
            let toks = tokens.map_or(ptr::null(), |t| t[run.range.clone()].as_ptr());
            let mut statuses = vec![0i32; n];
            // SAFETY: as `batch_start`.
            let (status, err) = raw_call(|err| unsafe {
                f(
                    self.raw.as_ptr(),
                    client,
                    run.tenant.as_ptr().cast(),
                    run.tenant.len(),
                    ptrs.as_ptr(),
                    lens.as_ptr(),
                    n,
                    sel.raw(),
                    toks,
                    statuses.as_mut_ptr(),
                    err,
                )
            });
            for (j, e) in key_errors(status, err, &statuses).into_iter().enumerate() {
                results[run.range.start + j] = Some(e.map_or(Ok(()), Err));
            }
        }
        collect(results)
    }

    /// PutEnd (= UpsertEnd) for each key; `tokens[i] == 0` means no token.
    pub fn batch_put_end(
        &self,
        client: ClientId,
        keys: &[Key<'_>],
        sel: ReplicaSelector,
        tokens: Option<&[u64]>,
    ) -> Vec<Result<()>> {
        self.batch_end(mooncake_meta_batch_put_end, client, keys, sel, tokens)
    }

    /// PutRevoke (= UpsertRevoke) for each key; `tokens[i] == 0` means no token.
    pub fn batch_put_revoke(
        &self,
        client: ClientId,
        keys: &[Key<'_>],
        sel: ReplicaSelector,
        tokens: Option<&[u64]>,
    ) -> Vec<Result<()>> {
        self.batch_end(mooncake_meta_batch_put_revoke, client, keys, sel, tokens)
    }

    /// GetReplicaList for each key.
    pub fn batch_get_replica_list(&self, keys: &[Key<'_>]) -> Vec<Result<Vec<ReplicaDescriptor>>> {
        let mut results: Vec<Option<Result<Vec<ReplicaDescriptor>>>> = vec![None; keys.len()];
        for run in runs(keys, MAX_BATCH_SLOTS, &mut results) {
            let ks = &keys[run.range.clone()];
            let n = ks.len();
            let (ptrs, lens) = key_arrays(ks);
            let mut cap = n.saturating_mul(2);
            let (replicas, counts, status, err, statuses) = loop {
                let mut replicas = vec![mooncake_meta_replica::default(); cap];
                let mut counts = vec![0usize; n];
                let mut statuses = vec![0i32; n];
                let mut len = 0usize;
                // SAFETY: as `batch_start`.
                let (status, err) = raw_call(|err| unsafe {
                    mooncake_meta_batch_get_replica_list(
                        self.raw.as_ptr(),
                        run.tenant.as_ptr().cast(),
                        run.tenant.len(),
                        ptrs.as_ptr(),
                        lens.as_ptr(),
                        n,
                        replicas.as_mut_ptr(),
                        cap,
                        counts.as_mut_ptr(),
                        &mut len,
                        statuses.as_mut_ptr(),
                        err,
                    )
                });
                if status == MOONCAKE_META_BUFFER_TOO_SMALL && len > cap {
                    // The whole batch needs more room; nothing was granted.
                    // SAFETY: `err` is NULL or the call's error, owned here.
                    drop(unsafe { Error::take(status, err) });
                    cap = len;
                    continue;
                }
                break (replicas, counts, status, err, statuses);
            };
            let mut offset = 0usize;
            for (j, e) in key_errors(status, err, &statuses).into_iter().enumerate() {
                let i = run.range.start + j;
                results[i] = Some(match e {
                    // A concurrent write added replicas after the check:
                    // this key was left alone; read it on its own.
                    Some(e) if e.kind() == ErrorKind::BufferTooSmall => {
                        self.get_replica_list(keys[i])
                    }
                    Some(e) => Err(e),
                    None => {
                        let c = counts[j];
                        let r = replicas
                            .get(offset..offset.saturating_add(c))
                            .ok_or_else(|| {
                                Error::new(
                                    ErrorKind::Internal,
                                    "mooncake_meta_batch_get_replica_list counts exceed its output",
                                )
                            })
                            .and_then(descriptors);
                        offset = offset.saturating_add(c);
                        r
                    }
                });
            }
        }
        collect(results)
    }

    /// Exist for each key.
    pub fn batch_exist(&self, keys: &[Key<'_>]) -> Vec<Result<bool>> {
        let mut results: Vec<Option<Result<bool>>> = vec![None; keys.len()];
        for run in runs(keys, MAX_BATCH_SLOTS, &mut results) {
            let ks = &keys[run.range.clone()];
            let n = ks.len();
            let (ptrs, lens) = key_arrays(ks);
            let mut exists = vec![0u8; n];
            let mut statuses = vec![0i32; n];
            // SAFETY: as `batch_start`.
            let (status, err) = raw_call(|err| unsafe {
                mooncake_meta_batch_exist(
                    self.raw.as_ptr(),
                    run.tenant.as_ptr().cast(),
                    run.tenant.len(),
                    ptrs.as_ptr(),
                    lens.as_ptr(),
                    n,
                    exists.as_mut_ptr(),
                    statuses.as_mut_ptr(),
                    err,
                )
            });
            for (j, e) in key_errors(status, err, &statuses).into_iter().enumerate() {
                results[run.range.start + j] = Some(e.map_or(Ok(exists[j] != 0), Err));
            }
        }
        collect(results)
    }

    /// Remove for each key.
    pub fn batch_remove(&self, keys: &[Key<'_>], force: bool) -> Vec<Result<()>> {
        let mut results: Vec<Option<Result<()>>> = vec![None; keys.len()];
        for run in runs(keys, MAX_BATCH_SLOTS, &mut results) {
            let ks = &keys[run.range.clone()];
            let n = ks.len();
            let (ptrs, lens) = key_arrays(ks);
            let mut statuses = vec![0i32; n];
            // SAFETY: as `batch_start`.
            let (status, err) = raw_call(|err| unsafe {
                mooncake_meta_batch_remove(
                    self.raw.as_ptr(),
                    run.tenant.as_ptr().cast(),
                    run.tenant.len(),
                    ptrs.as_ptr(),
                    lens.as_ptr(),
                    n,
                    c_int::from(force),
                    statuses.as_mut_ptr(),
                    err,
                )
            });
            for (j, e) in key_errors(status, err, &statuses).into_iter().enumerate() {
                results[run.range.start + j] = Some(e.map_or(Ok(()), Err));
            }
        }
        collect(results)
    }

    /// Validates a write request exactly as a Start would, without effects:
    /// on a standby `UNAVAILABLE_IN_CURRENT_STATUS` (docs/CONTRACT.md
    /// §12.3, as the core), then the key, the size, the soft-pin request
    /// against this master's limits, the group and
    /// `mooncake_meta_write_config_validate`.
    pub fn validate_write_request(&self, k: Key<'_>, size: u64, cfg: &WriteConfig) -> Result<()> {
        if self.try_standby_state()?.0 {
            return Err(standby_error());
        }
        k.validate()?;
        if size == 0 {
            return Err(Error::invalid("size must be positive"));
        }
        if cfg.memory_replicas == 0 && cfg.nof_ssd_replicas == 0 {
            return Err(Error::invalid("at least one replica must be requested"));
        }
        cfg.soft_pin.resolve(&self.config)?;
        if let Some(g) = &cfg.group {
            validate_name("group", g)?;
        }
        cfg.validate()
    }
}

/// What the core answers a client operation on a standby (its
/// `standby_error`, kind and message).
fn standby_error() -> Error {
    Error::new(
        ErrorKind::UnavailableInCurrentStatus,
        "this master is a standby: it serves no client operation until it is promoted \
         (it changes only by applying a primary's journal)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(errors: &[Option<Error>]) -> Vec<Option<ErrorKind>> {
        errors.iter().map(|e| e.as_ref().map(Error::kind)).collect()
    }

    // After a PANIC no key is known to have succeeded: zeroed statuses (a
    // library build without the PANIC fill leaves them) must not read as
    // successes.
    #[test]
    fn a_panic_fails_every_key_whatever_the_statuses_say() {
        let errors = key_errors(MOONCAKE_META_PANIC, ptr::null_mut(), &[0, 0]);
        assert_eq!(
            kinds(&errors),
            [Some(ErrorKind::Panic), Some(ErrorKind::Panic)]
        );
        let errors = key_errors(
            MOONCAKE_META_PANIC,
            ptr::null_mut(),
            &[MOONCAKE_META_OK, MOONCAKE_META_OBJECT_NOT_FOUND],
        );
        assert_eq!(
            kinds(&errors),
            [Some(ErrorKind::Panic), Some(ErrorKind::Panic)]
        );
    }

    // A refusal writes its code into every status and names no key: every
    // key gets its message.
    #[test]
    fn a_whole_refusal_gives_every_key_its_message() {
        let errors = key_errors(
            MOONCAKE_META_INVALID_PARAMS,
            ptr::null_mut(),
            &[MOONCAKE_META_INVALID_PARAMS; 2],
        );
        for e in &errors {
            assert_eq!(e.as_ref().map(Error::message), Some("INVALID_PARAMS"));
        }
    }

    #[test]
    fn the_per_key_summary_is_recognised_by_its_first_key_and_counts() {
        let m = "mooncake_meta_batch_remove: keys[1]: no such key (2 of 3 keys failed)";
        assert!(is_per_key_summary(m, 1, 2, 3));
        assert!(!is_per_key_summary(m, 0, 2, 3));
        assert!(!is_per_key_summary(m, 1, 3, 3));
        assert!(!is_per_key_summary(m, 1, 2, 4));
        assert!(!is_per_key_summary(
            "mooncake_meta_batch_remove: keys[1] is empty",
            1,
            2,
            3
        ));
    }
}
