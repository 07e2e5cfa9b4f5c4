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
