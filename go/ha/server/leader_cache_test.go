package server

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A follower under a storm of calls for the leader looks the leader up once
// per period, one lookup at a time; a failed lookup is not kept.
func TestLeaderCacheLooksUpOncePerPeriod(t *testing.T) {
	var lookups atomic.Int32
	release := make(chan struct{})
	fail := atomic.Bool{}
	c := newLeaderCache(func(ctx context.Context) (string, string, error) {
		lookups.Add(1)
		<-release
		if fail.Load() {
			return "", "", errors.New("etcd unreachable")
		}
		return "a", "http://a", nil
	})
	now := time.Unix(1000, 0)
	var clock sync.Mutex
	c.now = func() time.Time { clock.Lock(); defer clock.Unlock(); return now }
	advance := func(d time.Duration) { clock.Lock(); now = now.Add(d); clock.Unlock() }

	// 50 concurrent misses: one lookup, every caller gets its answer.
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name, url, err := c.get(context.Background())
			if err == nil && (name != "a" || url != "http://a") {
				err = errors.New("wrong leader " + name + " " + url)
			}
			errs <- err
		}()
	}
	for lookups.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := lookups.Load(); n != 1 {
		t.Fatalf("%d lookups for 50 concurrent calls, want 1", n)
	}
	// Fresh: no lookup.
	advance(leaderCacheTTL - time.Millisecond)
	if _, _, err := c.get(context.Background()); err != nil || lookups.Load() != 1 {
		t.Fatalf("within the period: err %v, %d lookups", err, lookups.Load())
	}
	// Stale: looked up again; a failure is returned and not kept.
	advance(2 * time.Millisecond)
	fail.Store(true)
	if _, _, err := c.get(context.Background()); err == nil || lookups.Load() != 2 {
		t.Fatalf("after the period with etcd down: err %v, %d lookups", err, lookups.Load())
	}
	fail.Store(false)
	if name, _, err := c.get(context.Background()); err != nil || name != "a" || lookups.Load() != 3 {
		t.Fatalf("after a failed lookup: %q, err %v, %d lookups", name, err, lookups.Load())
	}
	// "No leader" (an election under way) is not kept: the next call asks.
	advance(leaderCacheTTL)
	c.lookup = func(ctx context.Context) (string, string, error) {
		lookups.Add(1)
		return "", "", nil
	}
	before := lookups.Load()
	for range 2 {
		if name, _, err := c.get(context.Background()); err != nil || name != "" {
			t.Fatalf("no leader: %q, %v", name, err)
		}
	}
	if n := lookups.Load() - before; n != 2 {
		t.Fatalf("%d lookups for 2 calls while no leader is known, want 2", n)
	}
	// The lookup outlives the call that started it: a caller that hangs up
	// does not cancel it for the others.
	gotCtxErr := make(chan error, 1)
	c.lookup = func(ctx context.Context) (string, string, error) {
		time.Sleep(10 * time.Millisecond)
		gotCtxErr <- ctx.Err()
		return "a", "http://a", nil
	}
	hungUp, hangUp := context.WithCancel(context.Background())
	go func() { time.Sleep(time.Millisecond); hangUp() }()
	c.get(hungUp)
	if err := <-gotCtxErr; err != nil {
		t.Fatalf("the lookup saw its starter's cancellation: %v", err)
	}
	// A waiter whose context ends stops waiting for the lookup in flight.
	advance(leaderCacheTTL)
	block := make(chan struct{})
	c.lookup = func(ctx context.Context) (string, string, error) { <-block; return "b", "", nil }
	go c.get(context.Background())
	for {
		c.mu.Lock()
		inFlight := c.wait != nil
		c.mu.Unlock()
		if inFlight {
			break
		}
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := c.get(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled waiter: %v", err)
	}
	close(block)
}
