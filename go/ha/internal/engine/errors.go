package engine

// The errors a node reports; each is matched with errors.Is (the returned
// errors wrap them with details).

import (
	"context"
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

var (
	// ErrInvalidConfig: a Config field is out of range (the message names it).
	ErrInvalidConfig = errors.New("ha: invalid config")
	// ErrNotStandby: Start was given a master that is not a standby with a
	// journal.
	ErrNotStandby = errors.New("ha: the master must be a standby with a journal")
	// ErrNotLeader: WaitDurable on a node that is not the leader.
	ErrNotLeader = errors.New("ha: this node is not the leader")
	// ErrFenced: the node lost its leadership (its session expired or was
	// revoked, its lease ran out before it was renewed, or a fenced write
	// found another leader); it acknowledges nothing more and has stepped
	// down, or is stepping down.
	ErrFenced = errors.New("ha: leadership lost")
	// ErrRecordTooLarge: a journal record does not fit Config.MaxBatchBytes,
	// so it cannot be shipped; without a snapshot store to cover it the
	// leader steps down.
	ErrRecordTooLarge = errors.New("ha: journal record larger than Config.MaxBatchBytes")
	// ErrConflict: a batch key already holds other bytes: two writers
	// shipped the same sequence (never expected; the leader steps down).
	ErrConflict = errors.New("ha: journal batch conflict in etcd")
	// ErrJournal: the master's journal could not be read, released or
	// applied (the wrapped error says why); without a snapshot store an
	// overrun of the leader's journal is one.
	ErrJournal = errors.New("ha: journal")
	// ErrSnapshot: a snapshot could not be written, read, verified or
	// restored (the message says which and why).
	ErrSnapshot = errors.New("ha: snapshot")
	// ErrClosed: the node was closed. A leader's Close that gave up
	// shipping journal records (etcd did not store them within a
	// SessionTTL) stops the node with an error wrapping it that counts
	// them; none of them was acknowledged.
	ErrClosed = errors.New("ha: node closed")
)

// transient reports whether an etcd call may succeed when retried: the
// server was unreachable, had no leader, was electing one, timed out or
// throttled the request. Anything else (a request too large, a bad
// argument, the space quota) is a bug or a misconfiguration that retrying
// does not fix.
func transient(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	if errors.Is(err, rpctypes.ErrRequestTooLarge) || errors.Is(err, rpctypes.ErrGRPCRequestTooLarge) {
		return false
	}
	if errors.Is(err, rpctypes.ErrTooManyRequests) {
		return true
	}
	// clientv3 turns the errors etcd knows (no leader, leader changed,
	// request timed out, ...) into rpctypes.EtcdError values, which carry
	// their gRPC code but no gRPC status: status.Code would say Unknown.
	code := status.Code(err)
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		code = ee.Code()
	}
	switch code {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted:
		return true
	}
	return false
}
