package mooncakemeta

// Batch calls: one C call for many keys of one tenant, with a result (and
// an error) per key. Keys are processed in order as single calls; a bad
// shared argument refuses the whole batch with the same error for every
// key.

/*
#include <stdlib.h>
#include "mooncake_meta.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// cKeys is a batch's key array in C memory: one allocation holding the
// pointer array followed by the key bytes (the C side reads
// const char *const *keys with separate lengths, and cgo forbids Go memory
// that holds Go pointers). The lengths are Go memory without pointers.
type cKeys struct {
	mem  unsafe.Pointer
	ptrs **C.char
	lens []C.size_t
}

func newCKeys(keys []string) cKeys {
	n := len(keys)
	if n == 0 {
		return cKeys{}
	}
	total := 0
	for _, k := range keys {
		total += len(k)
	}
	ptrSize := unsafe.Sizeof((*C.char)(nil))
	mem := C.malloc(C.size_t(uintptr(n)*ptrSize + uintptr(total) + 1))
	ptrs := unsafe.Slice((**C.char)(mem), n)
	data := unsafe.Slice((*byte)(unsafe.Add(mem, uintptr(n)*ptrSize)), total+1)
	lens := make([]C.size_t, n)
	off := 0
	for i, k := range keys {
		copy(data[off:], k)
		ptrs[i] = (*C.char)(unsafe.Pointer(&data[off]))
		lens[i] = C.size_t(len(k))
		off += len(k)
	}
	return cKeys{mem: mem, ptrs: (**C.char)(mem), lens: lens}
}

func (c cKeys) free() { C.free(c.mem) }

// keyErrors turns the per-key statuses of a batch call that returned
// summary into per-key errors (nil for OK). The library writes a status
// for every key, a batch it refuses as a whole included (every key then
// gets the refusal's code): each failed key gets an *Error of its code
// naming the key, and the library's message, which it writes once per
// call, is in summary only. Should a failed call have written no failing
// status, every key gets summary, so no key of a failed call reads as a
// success.
func keyErrors(keys []string, statuses []int32, summary error) []error {
	errs := make([]error, len(keys))
	failed := false
	for i, st := range statuses {
		if Code(st) != CodeOK {
			failed = true
			errs[i] = &Error{Code: Code(st), Message: fmt.Sprintf("batch key %d (%q)", i, keys[i])}
		}
	}
	if summary != nil && !failed {
		for i := range errs {
			errs[i] = summary
		}
	}
	return errs
}

// goStatuses views the first n statuses a batch call wrote as Go values.
func goStatuses(statuses []C.int32_t, n int) []int32 {
	return unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(statuses))), n)
}

// summarise is a batch call's error: the library's summary when the call
// failed (the first failed key's code, its message counting the
// failures), else the first per-key error (keys retried one by one after
// the call), else nil.
func summarise(summary error, errs []error) error {
	if summary != nil {
		return summary
	}
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// refuseStarts is a batch refused before the C call: every key gets err,
// as the library does for a batch it refuses as a whole.
func refuseStarts(n int, err error) ([]BatchStartResult, error) {
	return refuseEach(n, err, func(r *BatchStartResult) *error { return &r.Err })
}

// refuseEach is n results of type T, each failed with err (the field at
// says where a result keeps its error), and err: a batch refused whole
// (a closed master, a bad shared argument) still answers one result per
// key, so a caller may index them by key.
func refuseEach[T any](n int, err error, at func(*T) *error) ([]T, error) {
	results := make([]T, n)
	for i := range results {
		*at(&results[i]) = err
	}
	return results, err
}

// refuseErrs is refuseEach for the batches whose result is the key's error.
func refuseErrs(n int, err error) ([]error, error) {
	return refuseEach(n, err, func(e *error) *error { return e })
}

// BatchStartResult is one key's outcome in BatchPutStart/BatchUpsertStart.
type BatchStartResult struct {
	// Replicas are the staged PROCESSING replicas (nil on failure).
	Replicas []Replica
	// Token is the write's token (NoToken on failure).
	Token WriteToken
	// Err is the key's failure, nil on success.
	Err error
}

// BatchPutStart is PutStart for each key with one shared configuration and
// per-key sizes. The configuration always goes through the extended
// struct: the legacy WithSoftPin becomes Enable with the default TTL,
// which is what the library's legacy reader does. The returned error is
// nil only when every key succeeded; otherwise it is the first failed
// key's, and each key's own outcome is in its result. A bad shared
// configuration, or len(sizes) != len(keys), fails every key.
func (k Keyspace) BatchPutStart(client ClientID, keys []string, sizes []uint64, cfg ReplicateConfig) ([]BatchStartResult, error) {
	return k.batchStart(false, client, keys, sizes, &cfg)
}

// BatchUpsertStart is UpsertStart for each key, as BatchPutStart. An
// in-place upsert whose object has more replicas than the configuration
// requests (copies add some) cannot fit the batch's layout; such keys are
// retried one by one with UpsertStart after the batch, so their results
// are as complete as the others'.
func (k Keyspace) BatchUpsertStart(client ClientID, keys []string, sizes []uint64, cfg ReplicateConfig) ([]BatchStartResult, error) {
	results, err := k.batchStart(true, client, keys, sizes, &cfg)
	if results == nil {
		return results, err
	}
	retried := false
	for i := range results {
		if e, ok := results[i].Err.(*Error); ok && e.Code == CodeBufferTooSmall {
			retried = true
			r := &results[i]
			r.Replicas, r.Token, r.Err = k.UpsertStart(client, keys[i], sizes[i], cfg)
		}
	}
	if retried {
		errs := make([]error, len(results))
		for i := range results {
			errs[i] = results[i].Err
		}
		return results, summarise(nil, errs)
	}
	return results, err
}

func (k Keyspace) batchStart(upsert bool, client ClientID, keys []string, sizes []uint64, cfg *ReplicateConfig) ([]BatchStartResult, error) {
	if len(sizes) != len(keys) {
		return refuseStarts(len(keys), invalidParams("batch: %d sizes for %d keys", len(sizes), len(keys)))
	}
	w, err := cfg.build(false)
	if err != nil {
		return refuseStarts(len(keys), err)
	}
	defer w.free()
	if err := cfg.checkMaxTTL(k.m.maxSoftPinTTL); err != nil {
		return refuseStarts(len(keys), err)
	}
	n := len(keys)
	ck := newCKeys(keys)
	defer ck.free()
	p, err := k.m.acquire()
	if err != nil {
		return refuseStarts(n, err)
	}
	defer k.m.release()
	stride := w.replicas
	replicas := make([]C.mooncake_meta_replica, max(n*stride, 1))
	counts := make([]C.size_t, max(n, 1))
	tokens := make([]C.uint64_t, max(n, 1))
	statuses := make([]C.int32_t, max(n, 1))
	tp, tl := cstr(k.tenant)
	var cerr *C.mooncake_meta_error
	var st C.mooncake_meta_status
	if upsert {
		st = C.mooncake_meta_batch_upsert_start(p, C.uint64_t(client), tp, tl, ck.ptrs, unsafe.SliceData(ck.lens), C.size_t(n),
			(*C.uint64_t)(unsafe.SliceData(sizes)), &w.ext,
			unsafe.SliceData(replicas), C.size_t(len(replicas)),
			unsafe.SliceData(counts), unsafe.SliceData(tokens), unsafe.SliceData(statuses), &cerr)
	} else {
		st = C.mooncake_meta_batch_put_start(p, C.uint64_t(client), tp, tl, ck.ptrs, unsafe.SliceData(ck.lens), C.size_t(n),
			(*C.uint64_t)(unsafe.SliceData(sizes)), &w.ext,
			unsafe.SliceData(replicas), C.size_t(len(replicas)),
			unsafe.SliceData(counts), unsafe.SliceData(tokens), unsafe.SliceData(statuses), &cerr)
	}
	summary := takeError(st, &cerr)
	errs := keyErrors(keys, goStatuses(statuses, n), summary)
	results := make([]BatchStartResult, n)
	for i := range results {
		results[i].Err = errs[i]
		if errs[i] == nil {
			results[i].Replicas = replicasFrom(replicas[i*stride : i*stride+int(counts[i])])
			results[i].Token = WriteToken(tokens[i])
		}
	}
	return results, summarise(summary, errs)
}

// BatchPutEnd is PutEnd for each key with one selector. tokens is nil (no
// key names a token) or one token per key, NoToken naming none. It returns
// each key's error and, when any key failed, the first failure.
// BatchPutEnd also ends upserts (UpsertEnd is PutEnd).
func (k Keyspace) BatchPutEnd(client ClientID, keys []string, sel Selector, tokens []WriteToken) ([]error, error) {
	return k.batchEnd(false, client, keys, sel, tokens)
}

// BatchPutRevoke is PutRevoke for each key, as BatchPutEnd; it also
// revokes upserts.
func (k Keyspace) BatchPutRevoke(client ClientID, keys []string, sel Selector, tokens []WriteToken) ([]error, error) {
	return k.batchEnd(true, client, keys, sel, tokens)
}

func (k Keyspace) batchEnd(revoke bool, client ClientID, keys []string, sel Selector, tokens []WriteToken) ([]error, error) {
	if tokens != nil && len(tokens) != len(keys) {
		return refuseErrs(len(keys), invalidParams("batch: %d tokens for %d keys", len(tokens), len(keys)))
	}
	n := len(keys)
	ck := newCKeys(keys)
	defer ck.free()
	p, err := k.m.acquire()
	if err != nil {
		return refuseErrs(n, err)
	}
	defer k.m.release()
	statuses := make([]C.int32_t, max(n, 1))
	tp, tl := cstr(k.tenant)
	var cerr *C.mooncake_meta_error
	var st C.mooncake_meta_status
	toks := (*C.uint64_t)(unsafe.SliceData(tokens))
	if revoke {
		st = C.mooncake_meta_batch_put_revoke(p, C.uint64_t(client), tp, tl, ck.ptrs, unsafe.SliceData(ck.lens), C.size_t(n),
			C.uint32_t(sel), toks, unsafe.SliceData(statuses), &cerr)
	} else {
		st = C.mooncake_meta_batch_put_end(p, C.uint64_t(client), tp, tl, ck.ptrs, unsafe.SliceData(ck.lens), C.size_t(n),
			C.uint32_t(sel), toks, unsafe.SliceData(statuses), &cerr)
	}
	summary := takeError(st, &cerr)
	errs := keyErrors(keys, goStatuses(statuses, n), summary)
	return errs, summarise(summary, errs)
}

// ExistResult is one key's outcome in BatchExist.
type ExistResult struct {
	// Exists reports a readable replica (the read lease was granted).
	Exists bool
	// Err is the key's failure, nil on success.
	Err error
}

// BatchExist is Exist for each key.
func (k Keyspace) BatchExist(keys []string) ([]ExistResult, error) {
	n := len(keys)
	ck := newCKeys(keys)
	defer ck.free()
	p, err := k.m.acquire()
	if err != nil {
		return refuseEach(len(keys), err, func(r *ExistResult) *error { return &r.Err })
	}
	defer k.m.release()
	exists := make([]C.uint8_t, max(n, 1))
	statuses := make([]C.int32_t, max(n, 1))
	tp, tl := cstr(k.tenant)
	var cerr *C.mooncake_meta_error
	st := C.mooncake_meta_batch_exist(p, tp, tl, ck.ptrs, unsafe.SliceData(ck.lens), C.size_t(n),
		unsafe.SliceData(exists), unsafe.SliceData(statuses), &cerr)
	summary := takeError(st, &cerr)
	errs := keyErrors(keys, goStatuses(statuses, n), summary)
	results := make([]ExistResult, n)
	for i := range results {
		results[i] = ExistResult{Exists: errs[i] == nil && exists[i] != 0, Err: errs[i]}
	}
	return results, summarise(summary, errs)
}

// GetResult is one key's outcome in BatchGetReplicaList.
type GetResult struct {
	// Replicas are the key's readable replicas (nil on failure).
	Replicas []Replica
	// Err is the key's failure, nil on success.
	Err error
}

// BatchGetReplicaList is GetReplicaList for each key; each key that
// succeeds gets its read lease.
func (k Keyspace) BatchGetReplicaList(keys []string) ([]GetResult, error) {
	results, err := k.batchGet(keys)
	if results == nil {
		return nil, err
	}
	// A key that gained replicas between the library's capacity check and
	// its read (a concurrent write) fails alone with BUFFER_TOO_SMALL and
	// no lease; read it again on its own.
	retried := false
	for i := range results {
		if e, ok := results[i].Err.(*Error); ok && e.Code == CodeBufferTooSmall {
			retried = true
			results[i].Replicas, results[i].Err = k.GetReplicaList(keys[i])
		}
	}
	if retried {
		errs := make([]error, len(results))
		for i := range results {
			errs[i] = results[i].Err
		}
		return results, summarise(nil, errs)
	}
	return results, err
}

func (k Keyspace) batchGet(keys []string) ([]GetResult, error) {
	n := len(keys)
	ck := newCKeys(keys)
	defer ck.free()
	p, err := k.m.acquire()
	if err != nil {
		return refuseEach(len(keys), err, func(r *GetResult) *error { return &r.Err })
	}
	defer k.m.release()
	replicas := make([]C.mooncake_meta_replica, max(n, 1))
	counts := make([]C.size_t, max(n, 1))
	statuses := make([]C.int32_t, max(n, 1))
	tp, tl := cstr(k.tenant)
	for {
		var total C.size_t
		var cerr *C.mooncake_meta_error
		st := C.mooncake_meta_batch_get_replica_list(p, tp, tl, ck.ptrs, unsafe.SliceData(ck.lens), C.size_t(n),
			unsafe.SliceData(replicas), C.size_t(len(replicas)), unsafe.SliceData(counts), &total,
			unsafe.SliceData(statuses), &cerr)
		// Too small for the whole batch: nothing was done; retry with the
		// total the library needs.
		if st == C.MOONCAKE_META_BUFFER_TOO_SMALL && int(total) > len(replicas) {
			takeError(st, &cerr)
			replicas = make([]C.mooncake_meta_replica, int(total))
			continue
		}
		summary := takeError(st, &cerr)
		errs := keyErrors(keys, goStatuses(statuses, n), summary)
		results := make([]GetResult, n)
		off := 0
		for i := range results {
			results[i].Err = errs[i]
			c := int(counts[i])
			if errs[i] == nil {
				results[i].Replicas = replicasFrom(replicas[off : off+c])
				off += c
			}
		}
		return results, summarise(summary, errs)
	}
}

// BatchRemove is Remove for each key.
func (k Keyspace) BatchRemove(keys []string, force bool) ([]error, error) {
	n := len(keys)
	ck := newCKeys(keys)
	defer ck.free()
	p, err := k.m.acquire()
	if err != nil {
		return refuseErrs(len(keys), err)
	}
	defer k.m.release()
	statuses := make([]C.int32_t, max(n, 1))
	tp, tl := cstr(k.tenant)
	var cerr *C.mooncake_meta_error
	st := C.mooncake_meta_batch_remove(p, tp, tl, ck.ptrs, unsafe.SliceData(ck.lens), C.size_t(n),
		cBool(force), unsafe.SliceData(statuses), &cerr)
	summary := takeError(st, &cerr)
	errs := keyErrors(keys, goStatuses(statuses, n), summary)
	return errs, summarise(summary, errs)
}
