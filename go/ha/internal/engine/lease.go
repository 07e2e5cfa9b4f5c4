package engine

// The leader's lease: how a leader knows, without asking etcd, that no
// other node leads yet, so that it may acknowledge a call that stores
// nothing (a read; a write that changed nothing). Another node is elected
// only once this node's election key is gone, which happens when its
// session's lease expires in etcd (or when the node resigns, after it
// stopped; an operator deleting the key or revoking the lease is seen by
// watchFence, not foreseen by the lease). etcd keeps a lease at least a TTL after it renewed it,
// and it renewed it after the renewal was sent: so the node may count on
// its lease until the time it sent the last renewal etcd answered, plus
// the TTL, less leaseMargin. The session's own keep-alive cannot give
// that time (it tells only when an answer arrived, and its deadline runs
// from then), so the leader sends its own renewals.
//
// A fenced write does not renew the lease and proves nothing about the
// future; it proves that the node led when etcd applied it, which was
// after it was sent: enough for a WaitDurable that began before.
//
// Times are read on the monotonic clock, which goes on while the process
// is paused. The node's clock must run at etcd's rate (leaseMargin covers
// ordinary drift) and must not stop while etcd's runs: a machine that is
// suspended and resumed believes a lease etcd may have expired meanwhile,
// as the session's own keep-alive deadline does.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// leaseMargin is what the leader takes off its lease: a tenth of the TTL
// for clock drift between it and etcd.
func leaseMargin(ttl time.Duration) time.Duration { return ttl / 10 }

// renewLease renews the session's lease once (bounded by ctx and one TTL)
// and extends the leader's lease from the time the renewal was sent.
// ErrFenced when etcd answers that the lease is gone.
func (n *Node) renewLease(ctx context.Context, sess *concurrency.Session) error {
	rctx, cancel := context.WithTimeout(ctx, n.cfg.SessionTTL)
	defer cancel()
	sent := time.Now()
	resp, err := n.cli.KeepAliveOnce(rctx, sess.Lease())
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return fmt.Errorf("%w: etcd no longer has the session's lease", ErrFenced)
	}
	if err != nil {
		return err
	}
	ttl := min(time.Duration(resp.TTL)*time.Second, n.cfg.SessionTTL)
	until := sent.Add(ttl - leaseMargin(n.cfg.SessionTTL))
	n.mu.Lock()
	// A stopped node has resigned (stop zeroed its lease): a renewal still
	// in flight, or one sent while the leader waits for its snapshotter
	// before it cancels this loop, must not give it the lease back, or it
	// would acknowledge reads after another node leads.
	if n.role != RoleStopped && until.After(n.leaseUntil) {
		n.leaseUntil = until
	}
	n.mu.Unlock()
	return nil
}

// keepLease renews the leader's lease every third of the TTL, as the
// session's keep-alive does, until ctx ends. It sends ErrFenced when etcd
// answers that the lease is gone, or when the lease ran out before a
// renewal was answered: the node can no longer tell that it leads, and
// another node may be elected at any moment.
func (n *Node) keepLease(ctx context.Context, sess *concurrency.Session) <-chan error {
	lost := make(chan error, 1)
	go func() {
		every := n.cfg.SessionTTL / 3
		next := time.Now().Add(every) // the promotion renewed it
		for attempt := 0; ; {
			n.mu.Lock()
			until := n.leaseUntil
			n.mu.Unlock()
			wake := next
			if until.Before(wake) {
				wake = until
			}
			t := time.NewTimer(time.Until(wake))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			if !time.Now().Before(until) {
				lost <- fmt.Errorf("%w: the lease was not renewed in time (etcd unreachable or the process stalled)", ErrFenced)
				return
			}
			sent := time.Now()
			// An answer after the lease ran out would come too late.
			rctx, cancel := context.WithDeadline(ctx, until)
			err := n.renewLease(rctx, sess)
			cancel()
			switch {
			case err == nil:
				next, attempt = sent.Add(every), 0
			case errors.Is(err, ErrFenced):
				lost <- err
				return
			case ctx.Err() != nil:
				return
			case !time.Now().Before(until):
				// The loop's next turn reports it.
			default:
				n.cfg.Logger.Warn("ha lease renewal failed; retrying", "name", n.cfg.Name, "err", err)
				next = time.Now().Add(backoffDelay(attempt))
				attempt++
			}
		}
	}()
	return lost
}

// proven records that a fenced write sent at sent succeeded: the node led
// at some moment after sent.
func (n *Node) proven(sent time.Time) {
	n.mu.Lock()
	if sent.After(n.provenAt) {
		n.provenAt = sent
	}
	n.mu.Unlock()
}

// ledSince reports whether the node is known to have led at some moment
// at or after since: its lease has not run out, or a fenced write sent at
// or after since succeeded. Call with n.mu held.
func (n *Node) ledSince(since time.Time) bool {
	return !n.provenAt.Before(since) || time.Now().Before(n.leaseUntil)
}
