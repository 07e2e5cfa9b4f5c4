package engine

// The leader side: read what was committed before the election, promote,
// then ship the journal. Each batch (at most Config.MaxBatchBytes, one
// JournalRead) is one etcd transaction that puts it under
// <prefix>/journal/<first seq> only if this node's election key still has
// the create revision it was elected with: a deposed leader's write fails,
// so two leaders never both store a batch. Records appended while one
// transaction is in flight ride in the next (group commit).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// promoteAndLead finishes the election: every batch committed by earlier
// leaders is applied, and the published snapshot restored if the batches
// end below it (none can be added: their writes are fenced by keys that
// are gone), the lease is renewed (lease.go), the master is promoted, and
// the node leads until ctx ends (Close) or it loses leadership.
func (n *Node) promoteAndLead(ctx context.Context, sess *concurrency.Session) error {
	for attempt := 0; ; attempt++ {
		_, err := n.catchUp(ctx)
		if err == nil {
			err = n.renewLease(ctx, sess)
		}
		if err == nil {
			break
		}
		if errors.Is(err, ErrFenced) {
			return err
		}
		var ae *applyError
		var se *snapshotError
		if errors.As(err, &se) {
			n.update(func() { n.snap.LoadFailures++ })
		}
		if errors.As(err, &ae) || errors.As(err, &se) {
			// Leading without the state would lose acknowledged changes.
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		select {
		case <-sess.Done():
			return fmt.Errorf("%w: the session ended before the promotion", ErrFenced)
		default:
		}
		if !backoff(ctx, attempt) {
			return nil
		}
	}
	select {
	case <-sess.Done():
		// Not promoted: the master is still a consistent standby.
		return fmt.Errorf("%w: the session ended before the promotion", ErrFenced)
	default:
	}
	if ctx.Err() != nil {
		return nil
	}
	if rs, ap := n.recordSeq(), n.AppliedSeq(); rs > ap {
		// catchUp ends at or above the record it read, and no one can
		// publish another meanwhile. Promoted below it, the master would
		// number its records inside the snapshot's range.
		return fmt.Errorf("%w: the published snapshot %d is above the applied sequence %d: not promoting", ErrSnapshot, rs, ap)
	}
	applied, err := n.j.Promote()
	if err != nil {
		return fmt.Errorf("%w: promote: %w", ErrJournal, err)
	}
	n.update(func() {
		n.applied = applied
		n.durable = applied
		n.role = RoleLeader
	})
	n.cfg.Logger.Info("ha leading", "name", n.cfg.Name, "applied_seq", applied)
	return n.lead(ctx, sess, applied+1)
}

// errCloseBound is why shipping stops once Close has waited a SessionTTL
// for etcd to store the journal.
var errCloseBound = errors.New("etcd did not store the journal within the session TTL after Close")

// lead ships the journal from sequence next until Close (a last drain,
// then nil) or a failure (the error; the caller resigns). Close is noticed
// between drains: a transaction cut short might have committed, and only
// the same bytes may be retried under its key. A drain ends early in two
// cases only, after which the node sends no more writes and resigns: an
// unreachable etcd ends the session within one TTL (ErrFenced), and etcd
// renewing the lease but not storing the batches makes Close give up a
// SessionTTL after it was called (shipping's context ends; the error wraps
// ErrClosed and counts the records left, none of them acknowledged). A
// transaction cut short is never retried then: it either committed before
// the resignation (a standby elected after it reads the batch) or fails
// its fence. The leader's lease is renewed in the background; it steps
// down (ErrFenced) when the lease runs out unrenewed. With a snapshot
// store, a snapshot is taken in the background every SnapshotInterval or
// SnapshotEveryBytes shipped, whichever comes first.
func (n *Node) lead(ctx context.Context, sess *concurrency.Session, next uint64) (err error) {
	buf := make([]byte, n.cfg.MaxBatchBytes)
	tick := time.NewTicker(n.cfg.FlushInterval)
	defer tick.Stop()
	wctx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	lost := n.watchFence(wctx)
	lapsed := n.keepLease(wctx, sess)
	// ship bounds every write of the journal and of snapshots: it ends
	// with the session, or a SessionTTL after Close (errCloseBound).
	ship, giveUp := context.WithCancelCause(sess.Ctx())
	defer giveUp(nil)
	go func() {
		select {
		case <-n.closing:
		case <-ship.Done():
			return
		}
		t := time.NewTimer(time.Until(n.closedAt.Add(n.cfg.SessionTTL)))
		defer t.Stop()
		select {
		case <-t.C:
			giveUp(errCloseBound)
		case <-ship.Done():
		}
	}()
	sn := n.startSnapshotter(ship)
	defer func() {
		// The node is marked stopped before the snapshot in progress is
		// waited for: the master's serialisation and the store's call
		// under way do not end with its context.
		n.stop(err)
		sn.stop()
	}()
	for {
		select {
		case <-n.kick:
		case <-tick.C:
		case <-sess.Done():
			return fmt.Errorf("%w: the session's lease expired or was revoked", ErrFenced)
		case <-lost:
			return fmt.Errorf("%w: the election key was deleted", ErrFenced)
		case err := <-lapsed:
			return err
		case err := <-sn.failed:
			return err
		case <-ctx.Done():
			// Close: store what the journal holds now.
			return n.gaveUp(n.drain(ship, sess, &next, buf, sn), next)
		}
		if err := n.drain(ship, sess, &next, buf, sn); err != nil {
			return n.gaveUp(err, next)
		}
	}
}

// gaveUp turns err, from a drain that stopped at next, into the error a
// Close that gave up shipping stops with, and logs how many records it
// left; any other err is returned as is.
func (n *Node) gaveUp(err error, next uint64) error {
	if !errors.Is(err, errCloseBound) {
		return err
	}
	var unshipped uint64
	last, jerr := n.j.LastSeq()
	if jerr == nil && last >= next {
		unshipped = last - next + 1
	}
	n.cfg.Logger.Error("ha Close gave up shipping the journal: etcd did not store it within the session TTL; the records left unshipped were never acknowledged",
		"name", n.cfg.Name, "unshipped", unshipped, "from", next, "to", last, "session_ttl", n.cfg.SessionTTL, "err", err)
	if jerr != nil {
		return fmt.Errorf("%w: journal records from %d not shipped (their count is unknown: %v): %w", ErrClosed, next, jerr, err)
	}
	return fmt.Errorf("%w: %d journal records (%d to %d) not shipped, none acknowledged: %w", ErrClosed, unshipped, next, last, err)
}

// snapshotter takes the leader's periodic snapshots in the background, so
// shipping goes on meanwhile.
type snapshotter struct {
	n       *Node
	want    chan struct{} // a snapshot is due (SnapshotEveryBytes)
	failed  chan error    // leadership was lost while snapshotting
	quit    chan struct{}
	done    chan struct{}
	shipped int64 // journal bytes shipped since the last snapshot (lead's goroutine)
}

// startSnapshotter starts the background snapshots, each bounded by ship
// (none without a store: then sn.want is never read and nothing is sent
// on sn.failed).
func (n *Node) startSnapshotter(ship context.Context) *snapshotter {
	sn := &snapshotter{n: n, want: make(chan struct{}, 1), failed: make(chan error, 1), quit: make(chan struct{}), done: make(chan struct{})}
	if n.cfg.Snapshots == nil {
		close(sn.done)
		return sn
	}
	go func() {
		defer close(sn.done)
		ctx, cancel := context.WithCancel(ship)
		defer cancel()
		go func() {
			select {
			case <-sn.quit:
				cancel()
			case <-ctx.Done():
			}
		}()
		t := time.NewTimer(n.cfg.SnapshotInterval)
		defer t.Stop()
		for {
			select {
			case <-sn.quit:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			case <-sn.want:
			}
			_, err := n.snapshot(ctx)
			if errors.Is(context.Cause(ctx), errCloseBound) {
				// Close gave up: the snapshot's error is not the session's.
				return
			}
			if errors.Is(err, ErrFenced) {
				sn.failed <- err
				return
			}
			if err != nil && ctx.Err() == nil {
				n.cfg.Logger.Error("ha snapshot failed; retrying at the next one", "name", n.cfg.Name, "err", err)
			}
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
			t.Reset(n.cfg.SnapshotInterval)
		}
	}()
	return sn
}

// shippedBytes counts a shipped batch and asks for a snapshot once
// SnapshotEveryBytes were shipped since the last request.
func (sn *snapshotter) shippedBytes(b int) {
	if sn.n.cfg.Snapshots == nil {
		return
	}
	sn.shipped += int64(b)
	if sn.shipped >= sn.n.cfg.SnapshotEveryBytes {
		sn.shipped = 0
		select {
		case sn.want <- struct{}{}:
		default:
		}
	}
}

func (sn *snapshotter) stop() {
	close(sn.quit)
	<-sn.done
}

// drain ships every record from *next in batches and releases them, each
// write bounded by ship. Records it cannot ship — dropped by a full
// journal (etcd fell behind), or one larger than a batch — are covered by
// a snapshot instead when there is a store: once it is published they are
// durable, and shipping goes on after its sequence. Without a store the
// leader steps down.
func (n *Node) drain(ship context.Context, sess *concurrency.Session, next *uint64, buf []byte, sn *snapshotter) error {
	for {
		size, after, need, err := n.j.ReadBatch(*next, buf)
		var unshippable error
		switch {
		case need > len(buf):
			unshippable = fmt.Errorf("%w: record %d needs %d bytes, the limit is %d", ErrRecordTooLarge, *next, need, len(buf))
		case errors.Is(err, ErrOverrun):
			unshippable = fmt.Errorf("%w: reading from %d: %w", ErrJournal, *next, err)
		case err != nil:
			return fmt.Errorf("%w: reading from %d: %w", ErrJournal, *next, err)
		}
		if unshippable != nil {
			if n.cfg.Snapshots == nil {
				return unshippable
			}
			if err := n.resync(ship, sess, next, unshippable); err != nil {
				return err
			}
			continue
		}
		if size == 0 {
			return nil
		}
		if err := n.commit(ship, sess, *next, buf[:size]); err != nil {
			return err
		}
		n.update(func() {
			n.durable = after - 1
			n.shipped += uint64(size)
		})
		if err := n.j.Release(after - 1); err != nil {
			return fmt.Errorf("%w: releasing up to %d: %w", ErrJournal, after-1, err)
		}
		*next = after
		sn.shippedBytes(size)
	}
}

// resync publishes a snapshot (bounded by ship) covering the records from
// *next that cannot be shipped (why), makes them durable and moves *next
// after it. A snapshot that cannot be published makes the leader step
// down (why and the snapshot's error).
func (n *Node) resync(ship context.Context, sess *concurrency.Session, next *uint64, why error) error {
	n.cfg.Logger.Warn("ha journal records cannot be shipped; covering them with a snapshot", "name", n.cfg.Name, "from", *next, "why", why)
	seq, err := n.snapshot(ship)
	if err != nil {
		if sess.Ctx().Err() == nil && errors.Is(context.Cause(ship), errCloseBound) {
			return fmt.Errorf("%w: covering the records from %d with a snapshot: %v", errCloseBound, *next, err)
		}
		if errors.Is(err, ErrFenced) {
			return err
		}
		return fmt.Errorf("%w; and no snapshot covers them: %w", why, err)
	}
	if seq < *next {
		return fmt.Errorf("%w; the snapshot published ends at %d", why, seq)
	}
	n.update(func() { n.durable = max(n.durable, seq) })
	if err := n.j.Release(seq); err != nil {
		return fmt.Errorf("%w: releasing up to %d: %w", ErrJournal, seq, err)
	}
	*next = seq + 1
	return nil
}

// commit stores one batch under its key, fenced by the election key. A
// transient etcd error is retried while ship lasts (the session lives and
// Close did not give up); an attempt that committed although its answer
// was lost is recognised on the retry (the key holds these very bytes).
func (n *Node) commit(ship context.Context, sess *concurrency.Session, first uint64, batch []byte) error {
	leaderKey, leaderRev := n.fence()
	key := JournalKey(n.cfg.Prefix, first)
	for attempt := 0; ; attempt++ {
		sent := time.Now()
		err := appendFenced(ship, n.cli, leaderKey, leaderRev, key, batch, n.cfg.SessionTTL)
		if err == nil {
			n.proven(sent)
			return nil
		}
		if sess.Ctx().Err() != nil {
			return fmt.Errorf("%w: the session ended while storing %s: %w", ErrFenced, key, err)
		}
		// etcd's answer (another node leads, another batch is there) says
		// more than Close's bound passing meanwhile.
		if ship.Err() != nil && !errors.Is(err, ErrFenced) && !errors.Is(err, ErrConflict) {
			return fmt.Errorf("%w: storing %s: %v", context.Cause(ship), key, err)
		}
		if !transient(err) {
			return err
		}
		n.cfg.Logger.Warn("ha batch write failed; retrying", "name", n.cfg.Name, "key", key, "err", err)
		select {
		case <-sess.Done():
			return fmt.Errorf("%w: the session ended while storing %s: %w", ErrFenced, key, err)
		default:
		}
		if !backoff(ship, attempt) {
			if sess.Ctx().Err() != nil {
				return fmt.Errorf("%w: the session ended while storing %s: %w", ErrFenced, key, err)
			}
			return fmt.Errorf("%w: storing %s: %v", context.Cause(ship), key, err)
		}
	}
}

// appendFenced is one attempt to put batch under key, only while
// leaderKey has create revision leaderRev and key is absent (or already
// holds batch). ErrFenced when leaderKey moved on, ErrConflict when key
// holds other bytes, else the etcd error.
func appendFenced(ctx context.Context, cli *clientv3.Client, leaderKey string, leaderRev int64, key string, batch []byte, timeout time.Duration) error {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := cli.Txn(tctx).
		If(clientv3.Compare(clientv3.CreateRevision(leaderKey), "=", leaderRev),
			clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(batch))).
		Else(clientv3.OpGet(leaderKey), clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return err
	}
	if resp.Succeeded {
		return nil
	}
	leader := resp.Responses[0].GetResponseRange().Kvs
	if len(leader) == 0 || leader[0].CreateRevision != leaderRev {
		return fmt.Errorf("%w: %s no longer has create revision %d (another node leads): %s not stored", ErrFenced, leaderKey, leaderRev, key)
	}
	if existing := resp.Responses[1].GetResponseRange().Kvs; len(existing) == 1 && bytes.Equal(existing[0].Value, batch) {
		return nil
	}
	return fmt.Errorf("%w: %s already holds a different batch", ErrConflict, key)
}

// watchFence returns a channel closed when the election key is deleted
// (its session's end is seen through sess.Done, but an operator or a bug
// may delete the key alone): an idle leader then steps down at once
// instead of at its next write, which the fence would refuse anyway.
func (n *Node) watchFence(ctx context.Context) <-chan struct{} {
	key, rev := n.fence()
	lost := make(chan struct{})
	go func() {
		from := rev
		for attempt := 0; ctx.Err() == nil; attempt++ {
			for wr := range n.cli.Watch(clientv3.WithRequireLeader(ctx), key, clientv3.WithRev(from)) {
				if wr.Err() != nil {
					break
				}
				for _, ev := range wr.Events {
					if ev.Type == clientv3.EventTypeDelete {
						close(lost)
						return
					}
				}
				from = wr.Header.Revision + 1
			}
			if ctx.Err() != nil {
				return
			}
			// The watch broke (etcd restarted, history compacted): check
			// the key itself, then watch from now.
			hctx, cancel := context.WithTimeout(ctx, n.cfg.SessionTTL)
			resp, err := n.cli.Get(hctx, key)
			cancel()
			if err == nil {
				if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != rev {
					close(lost)
					return
				}
				from = resp.Header.Revision + 1
				attempt = 0
			}
			if !backoff(ctx, attempt) {
				return
			}
		}
	}()
	return lost
}
