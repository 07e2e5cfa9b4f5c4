package mooncakemeta

// Replication tasks: copy, move, promotion from local disk, and local-disk
// replicas. None of them is a soft-pin activation point.

/*
#include "mooncake_meta.h"
*/
import "C"

import "unsafe"

// keyCall runs one of the C calls that take only a key.
func (k Keyspace) keyCall(key string, f func(p *C.mooncake_meta_master, tp *C.char, tl C.size_t, kp *C.char, kl C.size_t, e **C.mooncake_meta_error) C.mooncake_meta_status) error {
	p, err := k.m.acquire()
	if err != nil {
		return err
	}
	defer k.m.release()
	tp, tl := cstr(k.tenant)
	kp, kl := cstr(key)
	var cerr *C.mooncake_meta_error
	return takeError(f(p, tp, tl, kp, kl, &cerr), &cerr)
}

// CopyStart starts copying key's data to each named segment (at least one,
// none already holding a replica of the object) and returns the
// PROCESSING targets, one per segment in order. Errors: ErrNotFound,
// ErrHasReplicationTask, ErrReplicaNotReady or ErrReplicaNotFound (no
// COMPLETE buffer replica to read), ErrSegmentNotFound, ErrInvalidParams,
// ErrNoAvailableHandle.
func (k Keyspace) CopyStart(key string, segments ...string) ([]Replica, error) {
	segs, err := newCStrings("segments", segments)
	if err != nil {
		return nil, err
	}
	defer segs.free()
	p, err := k.m.acquire()
	if err != nil {
		return nil, err
	}
	defer k.m.release()
	tp, tl := cstr(k.tenant)
	kp, kl := cstr(key)
	buf := make([]C.mooncake_meta_replica, max(len(segments), 1))
	var n C.size_t
	var cerr *C.mooncake_meta_error
	st := C.mooncake_meta_copy_start(p, tp, tl, kp, kl, segs.ptr, C.size_t(len(segments)), unsafe.SliceData(buf), C.size_t(len(buf)), &n, &cerr)
	if err := takeError(st, &cerr); err != nil {
		return nil, err
	}
	return replicasFrom(buf[:n]), nil
}

// CopyEnd completes key's copy: its targets become COMPLETE. No copy
// running is ErrNoReplicationTask; the source or a target gone is
// ErrReplicaGone (the copy is abandoned).
func (k Keyspace) CopyEnd(key string) error {
	return k.keyCall(key, func(p *C.mooncake_meta_master, tp *C.char, tl C.size_t, kp *C.char, kl C.size_t, e **C.mooncake_meta_error) C.mooncake_meta_status {
		return C.mooncake_meta_copy_end(p, tp, tl, kp, kl, e)
	})
}

// CopyRevoke abandons key's copy and frees its targets.
func (k Keyspace) CopyRevoke(key string) error {
	return k.keyCall(key, func(p *C.mooncake_meta_master, tp *C.char, tl C.size_t, kp *C.char, kl C.size_t, e **C.mooncake_meta_error) C.mooncake_meta_status {
		return C.mooncake_meta_copy_revoke(p, tp, tl, kp, kl, e)
	})
}

// MoveStart starts moving key's COMPLETE replica on segment from to
// segment to and returns the PROCESSING target. No COMPLETE replica on
// from is ErrReplicaNotFound; otherwise errors as CopyStart.
func (k Keyspace) MoveStart(key, from, to string) (Replica, error) {
	p, err := k.m.acquire()
	if err != nil {
		return Replica{}, err
	}
	defer k.m.release()
	tp, tl := cstr(k.tenant)
	kp, kl := cstr(key)
	fp, fl := cstr(from)
	op, ol := cstr(to)
	var out C.mooncake_meta_replica
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_move_start(p, tp, tl, kp, kl, fp, fl, op, ol, &out, &cerr), &cerr); err != nil {
		return Replica{}, err
	}
	return replicaFrom(&out), nil
}

// MoveEnd completes key's move: the target becomes COMPLETE and the source
// is let go. Errors as CopyEnd.
func (k Keyspace) MoveEnd(key string) error {
	return k.keyCall(key, func(p *C.mooncake_meta_master, tp *C.char, tl C.size_t, kp *C.char, kl C.size_t, e **C.mooncake_meta_error) C.mooncake_meta_status {
		return C.mooncake_meta_move_end(p, tp, tl, kp, kl, e)
	})
}

// MoveRevoke abandons key's move: the target is freed, the source stays.
func (k Keyspace) MoveRevoke(key string) error {
	return k.keyCall(key, func(p *C.mooncake_meta_master, tp *C.char, tl C.size_t, kp *C.char, kl C.size_t, e **C.mooncake_meta_error) C.mooncake_meta_status {
		return C.mooncake_meta_move_revoke(p, tp, tl, kp, kl, e)
	})
}

// PromotionStart starts promoting key from its COMPLETE LOCAL_DISK replica
// back into memory and returns the staged PROCESSING memory replica
// (placed on the first preferred segment with room, else anywhere). No
// COMPLETE LOCAL_DISK replica is ErrReplicaNotFound; a memory replica
// already there is ErrUnavailableInCurrentStatus; a task running is
// ErrHasReplicationTask; no room is ErrNoAvailableHandle.
func (k Keyspace) PromotionStart(key string, preferred ...string) (Replica, error) {
	segs, err := newCStrings("preferred", preferred)
	if err != nil {
		return Replica{}, err
	}
	defer segs.free()
	p, err := k.m.acquire()
	if err != nil {
		return Replica{}, err
	}
	defer k.m.release()
	tp, tl := cstr(k.tenant)
	kp, kl := cstr(key)
	var out C.mooncake_meta_replica
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_promotion_start(p, tp, tl, kp, kl, segs.ptr, C.size_t(len(preferred)), &out, &cerr), &cerr); err != nil {
		return Replica{}, err
	}
	return replicaFrom(&out), nil
}

// PromotionEnd ends key's promotion: success completes the staged memory
// replica, failure frees it. No promotion running is
// ErrNoReplicationTask. The staged replica gone (its segment unmounted)
// is ErrReplicaGone with success true; with false it is nil (nothing is
// left to free).
func (k Keyspace) PromotionEnd(key string, success bool) error {
	return k.keyCall(key, func(p *C.mooncake_meta_master, tp *C.char, tl C.size_t, kp *C.char, kl C.size_t, e **C.mooncake_meta_error) C.mooncake_meta_status {
		return C.mooncake_meta_promotion_end(p, tp, tl, kp, kl, cBool(success), e)
	})
}

// AddLocalDiskReplica registers a COMPLETE LOCAL_DISK replica of size
// bytes held by client, creating the object if it is absent, and returns
// it. Idempotent per client. Size 0 or not the object's size is
// ErrInvalidParams; a write in flight is ErrUnavailableInCurrentStatus.
func (k Keyspace) AddLocalDiskReplica(client ClientID, key string, size uint64) (Replica, error) {
	p, err := k.m.acquire()
	if err != nil {
		return Replica{}, err
	}
	defer k.m.release()
	tp, tl := cstr(k.tenant)
	kp, kl := cstr(key)
	var out C.mooncake_meta_replica
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_add_local_disk_replica(p, C.uint64_t(client), tp, tl, kp, kl, C.uint64_t(size), &out, &cerr), &cerr); err != nil {
		return Replica{}, err
	}
	return replicaFrom(&out), nil
}
