package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvcache-ai/libmooncake_meta/go/ha/internal/etcdtest"
)

// lockedBuffer is a log destination the test reads while the node writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A leader whose journal writes etcd never answers, while its lease stays
// alive, gives up shipping a SessionTTL after Close: Close returns an
// error (ErrClosed) and logs how many records it left unshipped, a
// WaitDurable waiting meanwhile fails, what was acknowledged stays, the
// records left were never stored, and the standby takes over. Once with
// the write that stalls started by a WaitDurable before Close, once with
// it started by Close's own last drain.
func TestCloseGivesUpShippingAfterTheSessionTTL(t *testing.T) {
	for _, tc := range []struct {
		name     string
		inFlight bool
	}{
		{"a drain in flight when Close is called", true},
		{"Close's last drain", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := etcdtest.Start(t)
			cliA := c.Client(t)
			kv := &stallKV{KV: cliA.KV, prefix: JournalPrefix("/c"), blocked: make(chan struct{}, 1)}
			cliA.KV = kv
			var logs lockedBuffer
			// The bound is the TTL: short, so the test is; the lease must
			// stay alive throughout (it renews every third of it).
			const ttl = 2 * time.Second
			ja, jb := newFakeStandby(), newFakeStandby()
			a := startNode(t, cliA, "/c", "a", ja, func(c *Config) {
				c.SessionTTL = ttl
				c.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(t.Output(), &logs), nil))
				if !tc.inFlight {
					// Only a WaitDurable or Close ships.
					c.FlushInterval = time.Hour
				}
			})
			waitRole(t, a, RoleLeader)
			b := startNode(t, c.Client(t), "/c", "b", jb, nil)
			acked := appendDurable(t, a, ja, "acked")
			if err := b.WaitApplied(boundedCtx(t), acked); err != nil {
				t.Fatalf("WaitApplied: %v", err)
			}

			kv.stalled.Store(true)
			var last uint64
			for i := range 3 {
				last = ja.append(fmt.Sprintf("unshipped-%d", i))
			}
			waited := make(chan error, 1)
			if tc.inFlight {
				go func() { waited <- a.WaitDurable(context.Background(), last) }()
				select {
				case <-kv.blocked:
				case <-boundedCtx(t).Done():
					t.Fatal("the WaitDurable's drain sent no journal write")
				}
			}
			start := time.Now()
			closed := make(chan error, 1)
			go func() { closed <- a.Close() }()
			var err error
			select {
			case err = <-closed:
			case <-time.After(20 * ttl):
				// Let the writes through, so the node's cleanup ends.
				kv.stalled.Store(false)
				t.Fatalf("Close did not return within %v (20 session TTLs) while etcd did not answer journal writes", 20*ttl)
			}
			elapsed := time.Since(start)
			t.Logf("Close returned after %v: %v", elapsed, err)
			if !tc.inFlight {
				select {
				case <-kv.blocked:
				default:
					t.Fatal("Close sent no journal write")
				}
			}
			if errors.Is(err, ErrFenced) {
				t.Fatalf("Close = %v: the session ended, so the bound was not what stopped it", err)
			}
			if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "3 journal records") {
				t.Fatalf("Close = %v, want ErrClosed counting 3 journal records", err)
			}
			if elapsed < ttl {
				t.Fatalf("Close gave up after %v, before the session TTL %v", elapsed, ttl)
			}
			if !strings.Contains(logs.String(), "unshipped=3") {
				t.Fatalf("no log line counts the 3 unshipped records:\n%s", logs.String())
			}
			if tc.inFlight {
				if werr := <-waited; !errors.Is(werr, ErrClosed) {
					t.Fatalf("WaitDurable waiting during Close = %v, want ErrClosed", werr)
				}
			}
			if werr := a.WaitDurable(boundedCtx(t), last); !errors.Is(werr, ErrClosed) {
				t.Fatalf("WaitDurable after Close = %v, want ErrClosed", werr)
			}
			if d := a.DurableSeq(); d != acked {
				t.Fatalf("durable %d after Close, want %d", d, acked)
			}
			// a resigned: b leads with what was acknowledged, and nothing
			// of the records a gave up is in etcd.
			waitRole(t, b, RoleLeader)
			if got := jb.records(); !slices.Equal(got, []string{"acked"}) {
				t.Fatalf("new leader has %v", got)
			}
			if got := storedRecords(t, c.Client(t), "/c"); !slices.Equal(got, []string{"acked"}) {
				t.Fatalf("stored %v", got)
			}
		})
	}
}

// A leader that stops while a snapshot's publication is in flight keeps
// the snapshot's file without asking etcd whether the attempt cut short
// committed: etcd may be what does not answer, and asking would hold the
// node up for one more TTL. Once for the background snapshotter, cut
// short by Close, and once for a snapshot covering an overrun (resync,
// inside a drain), cut short by Close's bound. In both, etcd answers no
// transaction on the snapshot key, reads included.
func TestAStoppingLeaderKeepsASnapshotWhosePublicationWasCutShort(t *testing.T) {
	for _, tc := range []struct {
		name   string
		resync bool
	}{
		{"the snapshotter's, cut short by Close", false},
		{"an overrun's, cut short by Close's bound", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := etcdtest.Start(t)
			cliA := c.Client(t)
			kv := &stallKV{KV: cliA.KV, prefix: SnapshotKey("/c"), stallReads: true, blocked: make(chan struct{}, 1)}
			cliA.KV = kv
			store := newStore(t)
			ja := newFakeStandby()
			a := startNode(t, cliA, "/c", "a", ja, func(c *Config) {
				manualSnapshots(store)(c)
				if tc.resync {
					// Close's bound ends the publication: a short TTL, so
					// the test is short.
					c.SessionTTL = 2 * time.Second
				} else {
					// A snapshot once anything was shipped.
					c.SnapshotEveryBytes = 1
				}
			})
			waitRole(t, a, RoleLeader)
			reads := kv.reads.Load()
			kv.stalled.Store(true)
			if tc.resync {
				ja.appendDropped("dropped")
			} else {
				appendDurable(t, a, ja, "shipped")
			}
			select {
			case <-kv.blocked:
			case <-boundedCtx(t).Done():
				t.Fatal("no snapshot publication was sent")
			}
			err := a.Close()
			t.Logf("Close: %v", err)
			if tc.resync && !errors.Is(err, ErrClosed) || !tc.resync && err != nil {
				t.Fatalf("Close = %v", err)
			}
			if n := kv.reads.Load() - reads; n != 0 {
				t.Fatalf("the stopping leader sent %d reads of the snapshot key to an etcd that does not answer them", n)
			}
			if got, err := store.List(boundedCtx(t)); err != nil || len(got) != 1 {
				t.Fatalf("store after Close: %v, %v; want the snapshot whose publication was cut short", got, err)
			}
		})
	}
}

// blockPutStore is a store whose Put waits until release is closed (as a
// store call that does not see its context), closing entered when the
// first one starts waiting.
type blockPutStore struct {
	SnapshotStore
	once             sync.Once
	entered, release chan struct{}
}

func (s *blockPutStore) Put(ctx context.Context, seq uint64, data []byte) (string, error) {
	s.once.Do(func() { close(s.entered) })
	<-s.release
	return s.SnapshotStore.Put(ctx, seq, data)
}

// A leader that steps down while a snapshot is in progress reports
// RoleStopped before that snapshot ends: a server asks its role before
// serving a call, and this master's changes will be thrown away.
func TestALeaderStoppingReportsItBeforeItsSnapshotEnds(t *testing.T) {
	c := etcdtest.Start(t)
	cli := c.Client(t)
	store := &blockPutStore{SnapshotStore: newStore(t), entered: make(chan struct{}), release: make(chan struct{})}
	ja := newFakeStandby()
	a := startNode(t, c.Client(t), "/c", "a", ja, func(c *Config) {
		manualSnapshots(store)(c)
		c.SnapshotEveryBytes = 1
	})
	// Before the node's Close (cleanups run last first).
	released := sync.OnceFunc(func() { close(store.release) })
	t.Cleanup(released)
	waitRole(t, a, RoleLeader)
	appendDurable(t, a, ja, "shipped")
	select {
	case <-store.entered:
	case <-boundedCtx(t).Done():
		t.Fatal("no snapshot was stored")
	}
	key, _ := a.fence()
	if _, err := cli.Delete(boundedCtx(t), key); err != nil {
		t.Fatal(err)
	}
	waitRole(t, a, RoleStopped)
	if !errors.Is(a.Err(), ErrFenced) {
		t.Fatalf("Err = %v, want ErrFenced", a.Err())
	}
	select {
	case <-a.Done():
		t.Fatal("the node finished stopping before its snapshot ended")
	default:
	}
	released()
	if err := a.Close(); !errors.Is(err, ErrFenced) {
		t.Fatalf("Close = %v, want ErrFenced", err)
	}
}

// A leader closed while its snapshotter is stuck in a store call keeps
// its lease-renewing loop until the snapshot ends; a renewal then must not
// give the stopped node its lease back: once it has resigned and another
// node leads and has acknowledged a write it lacks, it acknowledges
// nothing (a read served from its master would be stale).
func TestAStoppedLeaderAcknowledgesNothingAfterItResigned(t *testing.T) {
	c := etcdtest.Start(t)
	const ttl = 2 * time.Second
	store := &blockPutStore{SnapshotStore: newStore(t), entered: make(chan struct{}), release: make(chan struct{})}
	released := sync.OnceFunc(func() { close(store.release) })
	t.Cleanup(released)
	ja, jb := newFakeStandby(), newFakeStandby()
	a := startNode(t, c.Client(t), "/c", "a", ja, func(cfg *Config) {
		cfg.SessionTTL = ttl
		cfg.Snapshots = store
		cfg.SnapshotInterval = 300 * time.Millisecond
	})
	waitRole(t, a, RoleLeader)
	b := startNode(t, c.Client(t), "/c", "b", jb, func(cfg *Config) {
		cfg.SessionTTL = ttl
		cfg.Snapshots = newStore(t)
		cfg.SnapshotInterval = time.Hour
	})
	acked := appendDurable(t, a, ja, "r1", "r2")
	if err := b.WaitApplied(boundedCtx(t), acked); err != nil {
		t.Fatal(err)
	}
	select {
	case <-store.entered:
	case <-boundedCtx(t).Done():
		t.Fatal("no snapshot started")
	}
	closed := make(chan error, 1)
	go func() { closed <- a.Close() }()
	waitRole(t, a, RoleStopped)
	// The renewing loop runs every third of the TTL until the snapshot
	// ends: give it two turns.
	time.Sleep(ttl)
	a.mu.Lock()
	leaseUntil := a.leaseUntil
	a.mu.Unlock()
	if !leaseUntil.IsZero() {
		t.Errorf("a stopped node's lease was renewed to %v from now", time.Until(leaseUntil))
	}
	released()
	select {
	case <-a.Done():
	case <-boundedCtx(t).Done():
		t.Fatal("a did not finish stopping")
	}
	<-closed
	waitRole(t, b, RoleLeader)
	appendDurable(t, b, jb, "written-on-b")
	if err := a.WaitDurable(boundedCtx(t), acked); err == nil {
		t.Fatal("a stopped, resigned node acknowledged after another node acknowledged a write")
	}
}

// cancelOnPutStore stores a snapshot, then ends the caller's context as
// the store call returns; its reads ignore their context, so the snapshot
// reaches its publication with the caller's context ended.
type cancelOnPutStore struct {
	SnapshotStore
	cancel context.CancelFunc
}

func (s *cancelOnPutStore) Put(ctx context.Context, seq uint64, data []byte) (string, error) {
	loc, err := s.SnapshotStore.Put(ctx, seq, data)
	s.cancel()
	return loc, err
}

func (s *cancelOnPutStore) Get(_ context.Context, location string) ([]byte, error) {
	return s.SnapshotStore.Get(context.Background(), location)
}

// A snapshot whose publication the caller's context cut short is
// ErrSnapshot, not ErrFenced: the node still leads, and ErrFenced would
// tell the caller to replace it.
func TestASnapshotCutShortByItsCallerIsNotALostLeadership(t *testing.T) {
	c := etcdtest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := &cancelOnPutStore{SnapshotStore: newStore(t), cancel: cancel}
	ja := newFakeStandby()
	a := startNode(t, c.Client(t), "/c", "a", ja, manualSnapshots(store))
	waitRole(t, a, RoleLeader)
	appendDurable(t, a, ja, "r1")
	_, err := a.Snapshot(ctx)
	if errors.Is(err, ErrFenced) || !errors.Is(err, ErrSnapshot) {
		t.Fatalf("Snapshot = %v, want ErrSnapshot and not ErrFenced", err)
	}
	if a.Role() != RoleLeader {
		t.Fatalf("role %s after a cut-short snapshot", a.Role())
	}
	// The node goes on: the next snapshot is published.
	if _, err := a.Snapshot(boundedCtx(t)); err != nil {
		t.Fatalf("the next snapshot: %v", err)
	}
}
