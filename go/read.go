package mooncakemeta

// Reads: Exist, GetReplicaList, KeyCount and ListKeys. Reads grant read
// leases and never touch soft-pin state.

/*
#cgo noescape mooncake_meta_exist
#cgo nocallback mooncake_meta_exist
#cgo noescape mooncake_meta_get_replica_list
#cgo nocallback mooncake_meta_get_replica_list
#include "mooncake_meta.h"
*/
import "C"

import "unsafe"

// Exist reports whether key has a readable replica; if it does, the read
// lease is granted (as GetReplicaList). It never touches soft-pin state.
func (k Keyspace) Exist(key string) (bool, error) {
	p, err := k.m.acquire()
	if err != nil {
		return false, err
	}
	defer k.m.release()
	tp, tl := cstr(k.tenant)
	kp, kl := cstr(key)
	var exists C.int
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_exist(p, tp, tl, kp, kl, &exists, &cerr), &cerr); err != nil {
		return false, err
	}
	return exists != 0, nil
}

// getReplicaBuf is the replica capacity of a first GetReplicaList attempt;
// objects rarely have more replicas.
const getReplicaBuf = 4

// GetReplicaList returns key's readable (COMPLETE) replicas and grants the
// read lease. A missing key is ErrNotFound; nothing readable yet is
// ErrReplicaNotReady (no lease). It never touches soft-pin state.
func (k Keyspace) GetReplicaList(key string) ([]Replica, error) {
	p, err := k.m.acquire()
	if err != nil {
		return nil, err
	}
	defer k.m.release()
	tp, tl := cstr(k.tenant)
	kp, kl := cstr(key)
	var small [getReplicaBuf]C.mooncake_meta_replica
	buf := small[:]
	// Too small a buffer is BUFFER_TOO_SMALL with no lease granted and the
	// count needed: retry with that many.
	for {
		var n C.size_t
		var cerr *C.mooncake_meta_error
		st := C.mooncake_meta_get_replica_list(p, tp, tl, kp, kl, unsafe.SliceData(buf), C.size_t(len(buf)), &n, &cerr)
		if st == C.MOONCAKE_META_BUFFER_TOO_SMALL && int(n) > len(buf) {
			takeError(st, &cerr)
			buf = make([]C.mooncake_meta_replica, int(n))
			continue
		}
		if err := takeError(st, &cerr); err != nil {
			return nil, err
		}
		return replicasFrom(buf[:n]), nil
	}
}

// KeyCount returns the number of objects in the master (every tenant,
// readable or not).
func (m *Master) KeyCount() (uint64, error) {
	p, err := m.acquire()
	if err != nil {
		return 0, err
	}
	defer m.release()
	var n C.uint64_t
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_key_count(p, &n, &cerr), &cerr); err != nil {
		return 0, err
	}
	return uint64(n), nil
}

// ListKeys returns, in ascending byte order, the keyspace's keys that
// start with prefix ("" = every key) and sort strictly after after ("" =
// from the first), at most limit of them (0 = no limit). next is the
// cursor to pass as after for the following page, or "" when this is the
// last page. The page is a consistent view of each shard, not of the
// whole master.
func (k Keyspace) ListKeys(prefix, after string, limit int) (keys []string, next string, err error) {
	if limit < 0 {
		return nil, "", invalidParams("ListKeys limit %d is negative", limit)
	}
	p, err := k.m.acquire()
	if err != nil {
		return nil, "", err
	}
	defer k.m.release()
	tp, tl := cstr(k.tenant)
	pp, pl := cstr(prefix)
	ap, al := cstr(after)
	var list *C.mooncake_meta_key_list
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_list_keys(p, tp, tl, pp, pl, ap, al, C.size_t(limit), &list, &cerr), &cerr); err != nil {
		return nil, "", err
	}
	defer C.mooncake_meta_key_list_free(list)
	n := int(C.mooncake_meta_key_list_len(list))
	keys = make([]string, n)
	for i := range keys {
		var ptr *C.char
		var l C.size_t
		if err := takeError(C.mooncake_meta_key_list_get(list, C.size_t(i), &ptr, &l, &cerr), &cerr); err != nil {
			return nil, "", err
		}
		keys[i] = goStringN(ptr, l)
	}
	var has C.int
	var ptr *C.char
	var l C.size_t
	if err := takeError(C.mooncake_meta_key_list_next_cursor(list, &has, &ptr, &l, &cerr), &cerr); err != nil {
		return nil, "", err
	}
	if has != 0 {
		next = goStringN(ptr, l)
	}
	return keys, next, nil
}
