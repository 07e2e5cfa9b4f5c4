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

// follow applies the journal from etcd until ctx ends (nil) or a batch is
// refused (the error).
func (n *Node) follow(ctx context.Context) error {
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
			n.cfg.Logger.Warn("ha journal read failed; retrying", "name", n.cfg.Name, "err", err)
			if !backoff(ctx, attempt) {
				return nil
			}
			attempt++
			continue
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
// and returns the revision it read at.
func (n *Node) catchUp(ctx context.Context) (int64, error) {
	from := n.AppliedSeq() + 1
	start := JournalKey(n.cfg.Prefix, from)
	// The last batch below start may hold records from `from` on (a
	// master resumed from a snapshot taken inside a batch); Apply skips
	// what it already has.
	resp, err := n.cli.Get(ctx, JournalPrefix(n.cfg.Prefix), clientv3.WithRange(start),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithLimit(1))
	if err != nil {
		return 0, err
	}
	rev := resp.Header.Revision
	for _, kv := range resp.Kvs {
		if err := n.apply(string(kv.Key), kv.Value); err != nil {
			return 0, err
		}
	}
	end := clientv3.GetPrefixRangeEnd(JournalPrefix(n.cfg.Prefix))
	// At most about pageBytes per read: pageBytes / MaxBatchBytes batches.
	page := int64(max(1, n.cfg.pageBytes/n.cfg.MaxBatchBytes))
	for key := start; ; {
		page, err := n.cli.Get(ctx, key, clientv3.WithRange(end), clientv3.WithRev(rev), clientv3.WithLimit(page))
		if err != nil {
			return 0, err
		}
		for _, kv := range page.Kvs {
			if err := n.apply(string(kv.Key), kv.Value); err != nil {
				return 0, err
			}
		}
		if !page.More || len(page.Kvs) == 0 {
			return rev, nil
		}
		key = string(page.Kvs[len(page.Kvs)-1].Key) + "\x00"
	}
}

// watch applies the batches put after revision rev until the watch ends
// (its reason) or a batch is refused (an applyError).
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
			if err := n.apply(string(ev.Kv.Key), ev.Kv.Value); err != nil {
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
