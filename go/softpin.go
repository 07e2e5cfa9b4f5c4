package mooncakemeta

// Soft-pin introspection: the committed deadline, the pending intent of the
// write in flight, and the deadline index's sizes. None grants a lease.

/*
#include "mooncake_meta.h"
*/
import "C"

// SoftPinDeadline returns key's committed soft-pin deadline and true, or
// (0, false) when none is committed. A deadline may be stored but already
// expired until cleanup or eviction normalises it. A missing key is
// ErrNotFound. It grants no lease and reads no clock.
func (k Keyspace) SoftPinDeadline(key string) (Instant, bool, error) {
	p, err := k.m.acquire()
	if err != nil {
		return 0, false, err
	}
	defer k.m.release()
	tp, tl := cstr(k.tenant)
	kp, kl := cstr(key)
	var has C.int
	var deadline C.uint64_t
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_soft_pin_deadline(p, tp, tl, kp, kl, &has, &deadline, &cerr), &cerr); err != nil {
		return 0, false, err
	}
	return Instant(deadline), has != 0, nil
}

// HasPendingSoftPin reports whether key's write in flight carries a
// soft-pin intent that can still commit (docs/CONTRACT.md §4.4). A missing key is
// ErrNotFound.
func (k Keyspace) HasPendingSoftPin(key string) (bool, error) {
	p, err := k.m.acquire()
	if err != nil {
		return false, err
	}
	defer k.m.release()
	tp, tl := cstr(k.tenant)
	kp, kl := cstr(key)
	var pending C.int
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_has_pending_soft_pin(p, tp, tl, kp, kl, &pending, &cerr), &cerr); err != nil {
		return false, err
	}
	return pending != 0, nil
}

// IndexSizes returns the deadline index's heap entries (stale ones
// included) and live registrations, read together.
func (m *Master) IndexSizes() (heap, live uint64, err error) {
	p, err := m.acquire()
	if err != nil {
		return 0, 0, err
	}
	defer m.release()
	var h, l C.uint64_t
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_index_sizes(p, &h, &l, &cerr), &cerr); err != nil {
		return 0, 0, err
	}
	return uint64(h), uint64(l), nil
}

// CheckInvariants checks every invariant of docs/CONTRACT.md §8; a violation is
// ErrInternal describing it. It takes every lock, so use it in tests and
// diagnostics on a quiescent master.
func (m *Master) CheckInvariants() error {
	p, err := m.acquire()
	if err != nil {
		return err
	}
	defer m.release()
	var cerr *C.mooncake_meta_error
	return takeError(C.mooncake_meta_check_invariants(p, &cerr), &cerr)
}
