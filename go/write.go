package mooncakemeta

// Writes: PutStart/UpsertStart through either configuration path, and
// End/Revoke with an optional write token.

/*
#include "mooncake_meta.h"
*/
import "C"

import "unsafe"

// startFn is one of the four C Start functions, bound to its config.
type startFn func(p *C.mooncake_meta_master, tp *C.char, tl C.size_t, kp *C.char, kl C.size_t,
	out *C.mooncake_meta_replica, cap C.size_t, outLen *C.size_t, token *C.uint64_t,
	cerr **C.mooncake_meta_error) C.mooncake_meta_status

func (k Keyspace) start(key string, cfg *ReplicateConfig, pick func(w *cWriteConfig) startFn) ([]Replica, WriteToken, error) {
	w, err := cfg.build(true)
	if err != nil {
		return nil, NoToken, err
	}
	defer w.free()
	if err := cfg.checkMaxTTL(k.m.maxSoftPinTTL); err != nil {
		return nil, NoToken, err
	}
	f := pick(w)
	p, err := k.m.acquire()
	if err != nil {
		return nil, NoToken, err
	}
	defer k.m.release()
	tp, tl := cstr(k.tenant)
	kp, kl := cstr(key)
	buf := make([]C.mooncake_meta_replica, max(w.replicas, 1))
	// An in-place upsert returns the object's existing replicas, which
	// copies may have made more numerous than requested: the library then
	// says how many (BUFFER_TOO_SMALL, nothing done) and we retry.
	for {
		var n C.size_t
		var token C.uint64_t
		var cerr *C.mooncake_meta_error
		st := f(p, tp, tl, kp, kl, unsafe.SliceData(buf), C.size_t(len(buf)), &n, &token, &cerr)
		if st == C.MOONCAKE_META_BUFFER_TOO_SMALL && int(n) > len(buf) {
			takeError(st, &cerr)
			buf = make([]C.mooncake_meta_replica, int(n))
			continue
		}
		if err := takeError(st, &cerr); err != nil {
			return nil, NoToken, err
		}
		return replicasFrom(buf[:n]), WriteToken(token), nil
	}
}

// PutStart starts writing a new object of size bytes for client (upstream
// PutStart) and returns the staged PROCESSING replicas and the write's
// token. An object with a COMPLETE replica, or a young write of the key,
// is ErrAlreadyExists; one that a copy, move or promotion still holds is
// ErrHasReplicationTask; no room is ErrNoAvailableHandle; a master out of
// ids (restored from a snapshot whose counters were near their limit,
// docs/CONTRACT.md §6) is ErrUnavailableInCurrentStatus. cfg's zero value
// is the default configuration.
func (k Keyspace) PutStart(client ClientID, key string, size uint64, cfg ReplicateConfig) ([]Replica, WriteToken, error) {
	return k.start(key, &cfg, func(w *cWriteConfig) startFn {
		return func(p *C.mooncake_meta_master, tp *C.char, tl C.size_t, kp *C.char, kl C.size_t,
			out *C.mooncake_meta_replica, cap C.size_t, outLen *C.size_t, token *C.uint64_t,
			cerr **C.mooncake_meta_error) C.mooncake_meta_status {
			if w.legacy {
				return C.mooncake_meta_put_start_legacy(p, C.uint64_t(client), tp, tl, kp, kl, C.uint64_t(size), &w.old, out, cap, outLen, token, cerr)
			}
			return C.mooncake_meta_put_start(p, C.uint64_t(client), tp, tl, kp, kl, C.uint64_t(size), &w.ext, out, cap, outLen, token, cerr)
		}
	})
}

// UpsertStart starts an upsert (upstream UpsertStart): an absent key is
// written as by PutStart; the same size rewrites the object in place (its
// MEMORY/NOF_SSD replicas go back to PROCESSING with the same ids); another
// size allocates new replicas before letting the old ones go. A write in
// flight is preempted; leases never block it.
func (k Keyspace) UpsertStart(client ClientID, key string, size uint64, cfg ReplicateConfig) ([]Replica, WriteToken, error) {
	return k.start(key, &cfg, func(w *cWriteConfig) startFn {
		return func(p *C.mooncake_meta_master, tp *C.char, tl C.size_t, kp *C.char, kl C.size_t,
			out *C.mooncake_meta_replica, cap C.size_t, outLen *C.size_t, token *C.uint64_t,
			cerr **C.mooncake_meta_error) C.mooncake_meta_status {
			if w.legacy {
				return C.mooncake_meta_upsert_start_legacy(p, C.uint64_t(client), tp, tl, kp, kl, C.uint64_t(size), &w.old, out, cap, outLen, token, cerr)
			}
			return C.mooncake_meta_upsert_start(p, C.uint64_t(client), tp, tl, kp, kl, C.uint64_t(size), &w.ext, out, cap, outLen, token, cerr)
		}
	})
}

// endFn is one of the four C End/Revoke functions.
type endFn func(p *C.mooncake_meta_master, client C.uint64_t, tp *C.char, tl C.size_t, kp *C.char, kl C.size_t,
	sel C.uint32_t, token C.uint64_t, cerr **C.mooncake_meta_error) C.mooncake_meta_status

func (k Keyspace) end(f endFn, client ClientID, key string, sel Selector, token WriteToken) error {
	p, err := k.m.acquire()
	if err != nil {
		return err
	}
	defer k.m.release()
	tp, tl := cstr(k.tenant)
	kp, kl := cstr(key)
	var cerr *C.mooncake_meta_error
	return takeError(f(p, C.uint64_t(client), tp, tl, kp, kl, C.uint32_t(sel), C.uint64_t(token), &cerr), &cerr)
}

// PutEnd completes the selected PROCESSING replicas of the write in flight
// (upstream PutEnd); the End that first makes the object readable commits
// the write's soft pin. token is the Start's token, or NoToken. Errors in
// order: ErrNotFound, ErrIllegalClient (not the writer),
// ErrStaleWriteToken. With no write in flight every replica a write made is
// COMPLETE, so the End is a no-op that succeeds, unless a replica of the
// selected kinds is not COMPLETE (a copy, move or promotion target, which
// the End never completes): ErrInvalidWrite.
func (k Keyspace) PutEnd(client ClientID, key string, sel Selector, token WriteToken) error {
	return k.end(func(p *C.mooncake_meta_master, c C.uint64_t, tp *C.char, tl C.size_t, kp *C.char, kl C.size_t,
		s C.uint32_t, t C.uint64_t, e **C.mooncake_meta_error) C.mooncake_meta_status {
		return C.mooncake_meta_put_end(p, c, tp, tl, kp, kl, s, t, e)
	}, client, key, sel, token)
}

// PutRevoke abandons the selected PROCESSING replicas of the write in
// flight (upstream PutRevoke); the object is erased when no replica is
// left. Errors first as PutEnd; then no write in flight, or a selected
// replica not PROCESSING, is ErrInvalidWrite.
func (k Keyspace) PutRevoke(client ClientID, key string, sel Selector, token WriteToken) error {
	return k.end(func(p *C.mooncake_meta_master, c C.uint64_t, tp *C.char, tl C.size_t, kp *C.char, kl C.size_t,
		s C.uint32_t, t C.uint64_t, e **C.mooncake_meta_error) C.mooncake_meta_status {
		return C.mooncake_meta_put_revoke(p, c, tp, tl, kp, kl, s, t, e)
	}, client, key, sel, token)
}

// UpsertEnd ends an upsert; it behaves exactly as PutEnd.
func (k Keyspace) UpsertEnd(client ClientID, key string, sel Selector, token WriteToken) error {
	return k.end(func(p *C.mooncake_meta_master, c C.uint64_t, tp *C.char, tl C.size_t, kp *C.char, kl C.size_t,
		s C.uint32_t, t C.uint64_t, e **C.mooncake_meta_error) C.mooncake_meta_status {
		return C.mooncake_meta_upsert_end(p, c, tp, tl, kp, kl, s, t, e)
	}, client, key, sel, token)
}

// UpsertRevoke revokes an upsert as PutRevoke; revoking an in-place write
// erases the object and its soft-pin deadline.
func (k Keyspace) UpsertRevoke(client ClientID, key string, sel Selector, token WriteToken) error {
	return k.end(func(p *C.mooncake_meta_master, c C.uint64_t, tp *C.char, tl C.size_t, kp *C.char, kl C.size_t,
		s C.uint32_t, t C.uint64_t, e **C.mooncake_meta_error) C.mooncake_meta_status {
		return C.mooncake_meta_upsert_revoke(p, c, tp, tl, kp, kl, s, t, e)
	}, client, key, sel, token)
}
