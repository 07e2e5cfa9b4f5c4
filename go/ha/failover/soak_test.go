package failover

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kvcache-ai/libmooncake_meta/go/ha/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// SoakEnv turns on TestSoak and TestDurableWriteFigures (make
// test-ha-soak, not in CI): its value is the number of failovers of the
// soak.
const SoakEnv = "MOONCAKE_META_HA_SOAK"

func soakFailovers(t *testing.T) int {
	t.Helper()
	v := os.Getenv(SoakEnv)
	if v == "" {
		t.Skipf("the soak runs with %s=<failovers> (make test-ha-soak)", SoakEnv)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a number of failovers >= 1", SoakEnv, v)
	}
	return n
}

// etcdUsage is what the cluster's journal takes in etcd: the keys and
// values under prefix/journal/ (read in pages) and etcd's backend size.
func etcdUsage(t *testing.T, cli *clientv3.Client, prefix string) (journalBytes, dbSize int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), eventBound)
	defer cancel()
	start := prefix + "/journal/"
	end := clientv3.GetPrefixRangeEnd(start)
	for key := start; ; {
		r, err := cli.Get(ctx, key, clientv3.WithRange(end), clientv3.WithLimit(256))
		if err != nil {
			t.Fatalf("reading the journal keys: %v", err)
		}
		for _, kv := range r.Kvs {
			journalBytes += int64(len(kv.Key) + len(kv.Value))
		}
		if !r.More || len(r.Kvs) == 0 {
			break
		}
		key = string(r.Kvs[len(r.Kvs)-1].Key) + "\x00"
	}
	eps := cli.Endpoints()
	st, err := cli.Status(ctx, eps[0])
	if err != nil {
		t.Fatalf("etcd status: %v", err)
	}
	return journalBytes, st.DbSize
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// The soak: failovers in a row under a continuous write load with soft
// pins, alternating roles: kill the leader (SIGKILL) mid-stream, time the
// standby's first acknowledged write, restart the killed server as a
// standby (it catches up from etcd), wait until it is a caught-up
// follower, kill the new leader, and so on. At the end every acknowledged
// write is read back from the last leader: none may be lost.
func TestSoak(t *testing.T) {
	n := soakFailovers(t)
	c := etcdtest.Start(t)
	cli := c.Client(t)
	const prefix = "/failover/soak"
	eps := c.Endpoints()
	var mu sync.Mutex
	servers := []*server{startServer(t, serverOpts{etcd: eps, prefix: prefix, name: "s0"})}
	servers[0].waitRole("leader")
	servers = append(servers, startServer(t, serverOpts{etcd: eps, prefix: prefix, name: "s1"}))
	servers[1].waitRole("follower")
	l := newLoad(t, prefix, func() []*server {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(servers)
	})
	l.mount()
	jBefore, dbBefore := etcdUsage(t, cli, prefix)
	began := time.Now()
	l.run(4)
	defer l.halt()

	leader, standby := 0, 1
	var times []time.Duration
	for i := range n {
		servers[standby].waitCaughtUp(servers[leader])
		l.waitEnded(l.ended.Load() + 200)
		waitUntil(t, eventBound, "calls in flight to the leader", func() (bool, error) { return l.callsInFlight(servers[leader]) > 0, nil })
		victim := servers[leader]
		victim.kill()
		killed := time.Now()
		first := l.waitAckBy(servers[standby].opts.name, killed)
		times = append(times, first.at.Sub(killed))
		t.Logf("failover %d: %s killed, %s served %v later", i+1, victim.opts.name, servers[standby].opts.name, first.at.Sub(killed))
		restarted := startServer(t, serverOpts{etcd: eps, prefix: prefix, name: victim.opts.name})
		mu.Lock()
		servers[leader] = restarted
		mu.Unlock()
		leader, standby = standby, leader
	}
	servers[standby].waitCaughtUp(servers[leader])
	l.halt()
	elapsed := time.Since(began)
	jAfter, dbAfter := etcdUsage(t, cli, prefix)

	l.mu.Lock()
	acked := len(l.acks)
	l.mu.Unlock()
	ended := l.ended.Load()
	rep := l.check(servers[leader])
	fmt.Printf("\nsoak: %d failovers (session TTL %v), 4 writers, %v\n", n, sessionTTL, elapsed.Round(time.Millisecond))
	fmt.Printf("  acknowledged writes lost: %d\n", len(rep.lost))
	fmt.Printf("  checked on %s: %d ended writes, %d in flight (ended there), %d retained groups; %d unacknowledged Starts not checked\n",
		servers[leader].opts.name, rep.ended, rep.inFlight, rep.groups, rep.uncertain)
	fmt.Printf("  failover (SIGKILL to the standby's first acknowledged write): median %v, max %v, min %v\n",
		median(times).Round(time.Millisecond), slices.Max(times).Round(time.Millisecond), slices.Min(times).Round(time.Millisecond))
	over := 0
	for _, d := range times {
		if d > 2*sessionTTL {
			over++
		}
	}
	fmt.Printf("  failovers slower than 2 session TTLs (%v): %d of %d\n", 2*sessionTTL, over, len(times))
	fmt.Printf("  durable writes (Start+End pairs ended) per second, failovers included: %.0f; acknowledged write calls per second: %.0f\n",
		float64(ended)/elapsed.Seconds(), float64(acked)/elapsed.Seconds())
	fmt.Printf("  etcd: journal keys+values %d bytes (%.0f per ended write), backend db size %d -> %d bytes\n",
		jAfter-jBefore, float64(jAfter-jBefore)/float64(ended), dbBefore, dbAfter)
	if len(rep.lost) > 0 {
		k := min(len(rep.lost), 20)
		t.Fatalf("%d acknowledged writes lost; the first %d:\n%s", len(rep.lost), k, joinLines(rep.lost[:k]))
	}
}
