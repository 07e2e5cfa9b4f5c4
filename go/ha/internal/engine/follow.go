package engine

// The standby side: read every batch after the applied sequence, then
// watch <prefix>/journal/ from the revision after that read and apply each
// new batch in order. A batch the master refuses (a gap, corrupt bytes) is
// fatal for the node; an interrupted watch (etcd restarted, the revision
// compacted) is followed by a new read.

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// applyError is a batch the master refused: retrying cannot help.
type applyError struct {
	key string
	err error
}

func (e *applyError) Error() string {
	return fmt.Sprintf("%v: applying %s: %v", ErrJournal, e.key, e.err)
}
func (e *applyError) Unwrap() []error { return []error{ErrJournal, e.err} }

// gapError is a batch that starts after the applied sequence + 1: the
// records between were collected (a snapshot covers them) or dropped by
// the leader's journal (a snapshot it published covers them). A new
// catch-up restores the snapshot.
type gapError struct {
	key     string
	applied uint64
}

func (e *gapError) Error() string {
	return fmt.Sprintf("batch %s starts after the applied sequence %d + 1", e.key, e.applied)
}

// follow applies the journal from etcd until ctx ends (nil) or a batch is
// refused (the error). ready is closed after the first catch-up that
// succeeded: until then the master is not known to be current, and the
// node does not campaign.
func (n *Node) follow(ctx context.Context, ready chan<- struct{}) error {
	for attempt := 0; ; {
		rev, err := n.catchUp(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			var ae *applyError
			if errors.As(err, &ae) {
				return err
			}
			var se *snapshotError
			if errors.As(err, &se) {
				n.update(func() { n.snap.LoadFailures++ })
				n.cfg.Logger.Error("ha snapshot refused; staying a standby and retrying", "name", n.cfg.Name, "err", err)
			} else {
				n.cfg.Logger.Warn("ha journal read failed; retrying", "name", n.cfg.Name, "err", err)
			}
			if !backoff(ctx, attempt) {
				return nil
			}
			attempt++
			continue
		}
		if ready != nil {
			close(ready)
			ready = nil
		}
		attempt = 0
		err = n.watch(ctx, rev)
		if ctx.Err() != nil {
			return nil
		}
		var ae *applyError
		if errors.As(err, &ae) {
			return err
		}
		n.cfg.Logger.Info("ha journal watch ended; reading again", "name", n.cfg.Name, "err", err)
	}
}

// catchUp applies every batch in etcd after the master's applied sequence
// and returns the revision it read at. When the batch holding the next
// sequence is gone (collected after a snapshot, or never shipped: the
// leader's journal overran) or the master has applied nothing yet, it
// first restores the published snapshot, if that is newer.
//
// It ends at or above the published snapshot's sequence: when the batches
// end below it, the snapshot is restored after them. A snapshot holds
// every record its leader's master had appended, shipped or not (and one
// that covers records the leader could not ship holds records no batch
// does), so a standby whose batches end below it would, promoted, number
// its own records inside the snapshot's range while every node restoring
// the snapshot holds the old leader's records under those numbers.
func (n *Node) catchUp(ctx context.Context) (int64, error) {
	// Each restore raises the applied sequence, so this ends.
	for {
		from := n.AppliedSeq() + 1
		start := JournalKey(n.cfg.Prefix, from)
		end := clientv3.GetPrefixRangeEnd(JournalPrefix(n.cfg.Prefix))
		// One revision: the record, the last batch below start (it may
		// hold records from `from` on: a master resumed from a snapshot
		// taken inside a batch; Apply skips what it already has) and
		// whether a batch starts at start.
		resp, err := n.cli.Txn(ctx).Then(
			clientv3.OpGet(SnapshotKey(n.cfg.Prefix)),
			clientv3.OpGet(JournalPrefix(n.cfg.Prefix), clientv3.WithRange(start),
				clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithLimit(1)),
			clientv3.OpGet(start, clientv3.WithRange(end), clientv3.WithLimit(1), clientv3.WithKeysOnly()),
		).Commit()
		if err != nil {
			return 0, err
		}
		rev := resp.Header.Revision
		var rec *SnapshotRecord
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 1 {
			r, err := decodeRecord(kvs[0].Value)
			if err != nil {
				return 0, &snapshotError{r, err}
			}
			rec = &r
			n.update(func() { n.sawRecord(r) })
		}
		below := resp.Responses[1].GetResponseRange().Kvs
		next := resp.Responses[2].GetResponseRange().Kvs
		covered := len(next) == 1 && string(next[0].Key) == start
		if !covered && len(below) == 1 {
			last, err := n.j.BatchLast(below[0].Value)
			if err != nil {
				return 0, &applyError{key: string(below[0].Key), err: err}
			}
			covered = last >= from
		}
		if rec != nil && rec.Seq >= from && (!covered || from == 1) {
			if err := n.restoreSnapshot(ctx, *rec); err != nil {
				return 0, err
			}
			continue
		}
		done, err := n.applyFrom(ctx, rev, start, end, below, rec)
		if err != nil {
			return rev, err
		}
		if !done {
			continue // a gap the snapshot covers: restore it
		}
		if rec != nil && rec.Seq > n.AppliedSeq() {
			// The batches end below the snapshot (its leader published it
			// before shipping the rest, then went away).
			if err := n.restoreSnapshot(ctx, *rec); err != nil {
				return 0, err
			}
			continue
		}
		return rev, nil
	}
}

// applyFrom applies the batch below (if any) and every batch from key
// start at revision rev. It returns false (and nil) when it met a gap the
// snapshot record rec covers: the caller restores it.
func (n *Node) applyFrom(ctx context.Context, rev int64, start, end string, below []*mvccpb.KeyValue, rec *SnapshotRecord) (bool, error) {
	for _, kv := range below {
		if err := n.apply(string(kv.Key), kv.Value); err != nil {
			return false, err
		}
	}
	// At most about pageBytes per read: pageBytes / MaxBatchBytes batches.
	limit := int64(max(1, n.cfg.pageBytes/n.cfg.MaxBatchBytes))
	for key := start; ; {
		page, err := n.cli.Get(ctx, key, clientv3.WithRange(end), clientv3.WithRev(rev), clientv3.WithLimit(limit))
		if err != nil {
			return false, err
		}
		for _, kv := range page.Kvs {
			first, err := seqOfKey(n.cfg.Prefix, string(kv.Key))
			if err != nil {
				return false, &applyError{key: string(kv.Key), err: err}
			}
			if applied := n.AppliedSeq(); first > applied+1 && rec != nil && rec.Seq > applied {
				// The leader's journal overran here: the snapshot covers
				// the records it could not ship.
				return false, nil
			}
			// A gap nothing covers is refused by Apply (fatal).
			if err := n.apply(string(kv.Key), kv.Value); err != nil {
				return false, err
			}
		}
		if !page.More || len(page.Kvs) == 0 {
			return true, nil
		}
		key = string(page.Kvs[len(page.Kvs)-1].Key) + "\x00"
	}
}

// watch applies the batches put after revision rev until the watch ends
// (its reason: an error, or a gapError when a batch skips sequences) or
// a batch is refused (an applyError).
func (n *Node) watch(ctx context.Context, rev int64) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range n.cli.Watch(wctx, JournalPrefix(n.cfg.Prefix), clientv3.WithPrefix(), clientv3.WithRev(rev+1)) {
		if err := wr.Err(); err != nil {
			return err
		}
		for _, ev := range wr.Events {
			// Deletions are garbage collection of applied batches.
			if ev.Type != clientv3.EventTypePut {
				continue
			}
			key := string(ev.Kv.Key)
			first, err := seqOfKey(n.cfg.Prefix, key)
			if err != nil {
				return &applyError{key: key, err: err}
			}
			if applied := n.AppliedSeq(); first > applied+1 {
				return &gapError{key: key, applied: applied}
			}
			if err := n.apply(key, ev.Kv.Value); err != nil {
				return err
			}
		}
	}
	return errors.New("watch channel closed")
}

func (n *Node) apply(key string, batch []byte) error {
	applied, err := n.j.Apply(batch)
	if err != nil {
		// The records before a refused one stay applied.
		if applied > n.AppliedSeq() {
			n.setApplied(applied)
		}
		return &applyError{key: key, err: err}
	}
	n.setApplied(applied)
	return nil
}
