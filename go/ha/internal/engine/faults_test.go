package engine

// Faults injected into a real etcd client, for the cases a live etcd does
// not produce on demand: a node whose keep-alives and watches stop
// reaching etcd while it does not notice (cut off from etcd, or paused),
// a transaction that commits although its answer is lost, and journal
// writes that etcd never answers while the node's lease stays alive.

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// cutOff wraps a client's Lease and Watcher: once cut, keep-alives no
// longer reach etcd and watches deliver nothing more, yet no channel
// closes and no call fails at once, so nothing tells the node: its lease
// expires in etcd while it believes it holds it.
type cutOff struct {
	once sync.Once
	cut  chan struct{}
}

func newCutOff(cli *clientv3.Client) *cutOff {
	c := &cutOff{cut: make(chan struct{})}
	cli.Lease = &cutLease{Lease: cli.Lease, c: c}
	cli.Watcher = &cutWatcher{Watcher: cli.Watcher, c: c}
	return c
}

func (c *cutOff) cutNow() { c.once.Do(func() { close(c.cut) }) }

type cutLease struct {
	clientv3.Lease
	c *cutOff
}

// KeepAlive runs the real keep-alive until the cut, then stops it (no more
// keep-alives are sent) and leaves the caller's channel open until ctx
// ends, as a client that has not yet noticed its lease is gone.
func (l *cutLease) KeepAlive(ctx context.Context, id clientv3.LeaseID) (<-chan *clientv3.LeaseKeepAliveResponse, error) {
	kctx, cancel := context.WithCancel(ctx)
	real, err := l.Lease.KeepAlive(kctx, id)
	if err != nil {
		cancel()
		return nil, err
	}
	out := make(chan *clientv3.LeaseKeepAliveResponse)
	go func() {
		defer close(out)
		defer cancel()
		for {
			select {
			case resp, ok := <-real:
				if !ok {
					return
				}
				select {
				case out <- resp:
				case <-l.c.cut:
				case <-ctx.Done():
					return
				}
			case <-l.c.cut:
				cancel()
				<-ctx.Done()
				return
			}
		}
	}()
	return out, nil
}

// KeepAliveOnce waits for ctx after the cut: the request never arrives.
func (l *cutLease) KeepAliveOnce(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	select {
	case <-l.c.cut:
		<-ctx.Done()
		return nil, ctx.Err()
	default:
	}
	return l.Lease.KeepAliveOnce(ctx, id)
}

type cutWatcher struct {
	clientv3.Watcher
	c *cutOff
}

// Watch forwards the real watch until the cut, then delivers nothing more
// and closes only when ctx ends.
func (w *cutWatcher) Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan {
	real := w.Watcher.Watch(ctx, key, opts...)
	out := make(chan clientv3.WatchResponse)
	go func() {
		defer close(out)
		for {
			select {
			case wr, ok := <-real:
				if !ok {
					return
				}
				select {
				case out <- wr:
				case <-w.c.cut:
					<-ctx.Done()
					return
				case <-ctx.Done():
					return
				}
			case <-w.c.cut:
				<-ctx.Done()
				return
			}
		}
	}()
	return out
}

// loseAnswerKV wraps a client's KV: while armed, the next transaction that
// puts key is committed in etcd and then answers context.Canceled, as a
// call cancelled after etcd applied it.
type loseAnswerKV struct {
	clientv3.KV
	key   string
	armed atomic.Bool
}

func (k *loseAnswerKV) Txn(ctx context.Context) clientv3.Txn {
	return &loseAnswerTxn{Txn: k.KV.Txn(ctx), kv: k}
}

type loseAnswerTxn struct {
	clientv3.Txn
	kv   *loseAnswerKV
	puts bool
}

func (t *loseAnswerTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	t.Txn = t.Txn.If(cs...)
	return t
}

func (t *loseAnswerTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	for _, op := range ops {
		if op.IsPut() && string(op.KeyBytes()) == t.kv.key {
			t.puts = true
		}
	}
	t.Txn = t.Txn.Then(ops...)
	return t
}

func (t *loseAnswerTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.Txn = t.Txn.Else(ops...)
	return t
}

func (t *loseAnswerTxn) Commit() (*clientv3.TxnResponse, error) {
	resp, err := t.Txn.Commit()
	if err == nil && t.puts && resp.Succeeded && t.kv.armed.CompareAndSwap(true, false) {
		return nil, context.Canceled
	}
	return resp, err
}

// stallKV wraps a client's KV: while stalled, a transaction that puts a
// key under prefix (or, with stallReads, reads one in its Then branch)
// never reaches etcd and never answers (it returns only when its context
// ends), as an etcd that accepts the node's lease renewals but does not
// apply its writes. Each stalled transaction sends on blocked, if there
// is room. reads counts the transactions committed, stalled or not, that
// read a key under prefix in their Then branch.
type stallKV struct {
	clientv3.KV
	prefix     string
	stalled    atomic.Bool
	stallReads bool
	blocked    chan struct{}
	reads      atomic.Int64
}

func (k *stallKV) Txn(ctx context.Context) clientv3.Txn {
	return &stallTxn{Txn: k.KV.Txn(ctx), kv: k, ctx: ctx}
}

type stallTxn struct {
	clientv3.Txn
	kv    *stallKV
	ctx   context.Context
	puts  bool
	reads bool
}

func (t *stallTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	t.Txn = t.Txn.If(cs...)
	return t
}

func (t *stallTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	for _, op := range ops {
		if op.IsPut() && strings.HasPrefix(string(op.KeyBytes()), t.kv.prefix) {
			t.puts = true
		}
		if op.IsGet() && strings.HasPrefix(string(op.KeyBytes()), t.kv.prefix) {
			t.reads = true
		}
	}
	t.Txn = t.Txn.Then(ops...)
	return t
}

func (t *stallTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.Txn = t.Txn.Else(ops...)
	return t
}

func (t *stallTxn) Commit() (*clientv3.TxnResponse, error) {
	if t.reads {
		t.kv.reads.Add(1)
	}
	if (t.puts || t.reads && t.kv.stallReads) && t.kv.stalled.Load() {
		select {
		case t.kv.blocked <- struct{}{}:
		default:
		}
		<-t.ctx.Done()
		return nil, t.ctx.Err()
	}
	return t.Txn.Commit()
}
