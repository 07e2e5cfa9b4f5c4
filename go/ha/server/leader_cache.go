package server

import (
	"context"
	"sync"
	"time"
)

// leaderCacheTTL is how long a follower reuses the leader it looked up
// for its NOT_LEADER answers. A leader change shows within it (the name is
// a hint: a client sent to a node that no longer leads is answered
// NOT_LEADER again, naming the new one).
const leaderCacheTTL = 500 * time.Millisecond

// leaderCache names the leader for NOT_LEADER answers from one etcd lookup
// per leaderCacheTTL, one lookup at a time: a follower under a storm of
// calls meant for the leader asks etcd once per period, not twice per
// call. Only a leader with a URL is kept: "no leader" (an election under
// way) and a failed lookup are asked again by the next call, and the
// callers waiting on a lookup get its answer. The lookup runs on its own
// deadline, not on the context of the call that started it, so a client
// that hangs up does not fail the others waiting on it.
type leaderCache struct {
	lookup func(context.Context) (name, url string, err error)
	ttl    time.Duration
	now    func() time.Time

	mu      sync.Mutex
	name    string
	url     string
	at      time.Time
	valid   bool
	lastErr error
	wait    chan struct{} // closed when the lookup in flight ends (nil: none)
}

func newLeaderCache(lookup func(context.Context) (string, string, error)) *leaderCache {
	return &leaderCache{lookup: lookup, ttl: leaderCacheTTL, now: time.Now}
}

// get returns the leader's name and URL: the cached answer while it is
// fresh, else the answer of the lookup in flight (waited for until ctx
// ends), else a new lookup's.
func (c *leaderCache) get(ctx context.Context) (string, string, error) {
	c.mu.Lock()
	if c.valid && c.now().Sub(c.at) < c.ttl {
		name, url := c.name, c.url
		c.mu.Unlock()
		return name, url, nil
	}
	if ch := c.wait; ch != nil {
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return "", "", ctx.Err()
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.lastErr != nil {
			return "", "", c.lastErr
		}
		return c.name, c.url, nil
	}
	ch := make(chan struct{})
	c.wait = ch
	c.mu.Unlock()
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
	name, url, err := c.lookup(lctx)
	cancel()
	c.mu.Lock()
	c.lastErr = err
	// The answer the waiters read; kept for the next calls only when it
	// names a leader they can be sent to.
	c.name, c.url = name, url
	c.valid = err == nil && name != "" && url != ""
	if c.valid {
		c.at = c.now()
	}
	c.wait = nil
	close(ch)
	c.mu.Unlock()
	return name, url, err
}
