package mooncakemeta

// Removal: one key, every key, or the keys matching a pattern.

/*
#include "mooncake_meta.h"
*/
import "C"

// Remove removes key. force ignores a live read lease; soft and hard pins
// never block removal. Checked in order: a missing key is ErrNotFound; a
// replica not COMPLETE (a write's in flight, or a copy's, move's or
// promotion's PROCESSING target) is ErrReplicaNotReady (even forced); a
// copy, move or promotion running whose replicas are all COMPLETE (its
// targets gone with an unmount) is ErrHasReplicationTask (even forced); a
// live lease without force is ErrHasLease.
func (k Keyspace) Remove(key string, force bool) error {
	p, err := k.m.acquire()
	if err != nil {
		return err
	}
	defer k.m.release()
	tp, tl := cstr(k.tenant)
	kp, kl := cstr(key)
	var cerr *C.mooncake_meta_error
	return takeError(C.mooncake_meta_remove(p, tp, tl, kp, kl, cBool(force), &cerr), &cerr)
}

// RemoveAll removes every removable object of every tenant, skipping the
// ones Remove would refuse, and returns how many it removed. On a standby
// it removes nothing and returns 0 with no error: a standby changes only by
// the journal it applies.
func (m *Master) RemoveAll(force bool) (uint64, error) {
	p, err := m.acquire()
	if err != nil {
		return 0, err
	}
	defer m.release()
	var n C.uint64_t
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_remove_all(p, cBool(force), &n, &cerr), &cerr); err != nil {
		return 0, err
	}
	return uint64(n), nil
}

// RemoveByRegex removes the keyspace's removable objects whose key matches
// pattern (Rust regex syntax, unanchored: use ^...$ for a whole-key match)
// and returns how many it removed. A bad pattern is ErrInvalidParams.
func (k Keyspace) RemoveByRegex(pattern string, force bool) (uint64, error) {
	p, err := k.m.acquire()
	if err != nil {
		return 0, err
	}
	defer k.m.release()
	tp, tl := cstr(k.Name())
	pp, pl := cstr(pattern)
	var n C.uint64_t
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_remove_by_regex_in_tenant(p, tp, tl, pp, pl, cBool(force), &n, &cerr), &cerr); err != nil {
		return 0, err
	}
	return uint64(n), nil
}

// RemoveByRegexAllTenants is RemoveByRegex over every tenant.
func (m *Master) RemoveByRegexAllTenants(pattern string, force bool) (uint64, error) {
	p, err := m.acquire()
	if err != nil {
		return 0, err
	}
	defer m.release()
	pp, pl := cstr(pattern)
	var n C.uint64_t
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_remove_by_regex_all_tenants(p, pp, pl, cBool(force), &n, &cerr), &cerr); err != nil {
		return 0, err
	}
	return uint64(n), nil
}
