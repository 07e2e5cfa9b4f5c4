package failover

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvcache-ai/libmooncake_meta/go/ha/internal/engine"
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

// journalMeter counts the bytes (key + value) of every journal batch put
// under a cluster's prefix from its start on, by watching etcd: garbage
// collection deleting old batches does not change the count. It watches
// the whole cluster prefix, so that a marker key it puts beside the
// journal (<prefix>/meter, which no node reads) tells when the watch has
// delivered everything up to a revision.
type journalMeter struct {
	cli     *clientv3.Client
	journal string
	marker  string
	bytes   atomic.Int64
	seen    atomic.Int64 // the revision the watch has delivered up to
	cancel  context.CancelFunc
	done    chan struct{}
}

func meterJournal(t *testing.T, cli *clientv3.Client, prefix string) *journalMeter {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	m := &journalMeter{cli: cli, journal: engine.JournalPrefix(prefix), marker: prefix + "/meter", cancel: cancel, done: make(chan struct{})}
	r, err := cli.Put(ctx, m.marker, "start")
	if err != nil {
		cancel()
		t.Fatalf("etcd: %v", err)
	}
	m.seen.Store(r.Header.Revision)
	ch := cli.Watch(ctx, prefix+"/", clientv3.WithPrefix(), clientv3.WithRev(r.Header.Revision+1))
	go func() {
		defer close(m.done)
		for wr := range ch {
			for _, ev := range wr.Events {
				if ev.Type == clientv3.EventTypePut && strings.HasPrefix(string(ev.Kv.Key), m.journal) {
					m.bytes.Add(int64(len(ev.Kv.Key) + len(ev.Kv.Value)))
				}
				m.seen.Store(ev.Kv.ModRevision)
			}
		}
	}()
	t.Cleanup(m.stop)
	return m
}

func (m *journalMeter) stop() {
	m.cancel()
	<-m.done
}

// total returns the journal bytes put so far: it puts the marker and waits
// until the watch has delivered it (and so everything before it).
func (m *journalMeter) total(t *testing.T) int64 {
	t.Helper()
	r, err := m.cli.Put(context.Background(), m.marker, "total")
	if err != nil {
		t.Fatalf("etcd: %v", err)
	}
	waitUntil(t, eventBound, "the journal watch to deliver the marker", func() (bool, error) {
		return m.seen.Load() >= r.Header.Revision, nil
	})
	return m.bytes.Load()
}

// dbSize is etcd's backend size (the first endpoint's).
func dbSize(t *testing.T, cli *clientv3.Client) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), eventBound)
	defer cancel()
	st, err := cli.Status(ctx, cli.Endpoints()[0])
	if err != nil {
		t.Fatalf("etcd status: %v", err)
	}
	return st.DbSize
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
	snaps := t.TempDir()
	var mu sync.Mutex
	servers := []*server{startServer(t, serverOpts{etcd: eps, prefix: prefix, name: "s0", snapshots: snaps})}
	servers[0].waitRole("leader")
	servers = append(servers, startServer(t, serverOpts{etcd: eps, prefix: prefix, name: "s1", snapshots: snaps}))
	servers[1].waitRole("follower")
	l := newLoad(t, prefix, func() []*server {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(servers)
	})
	l.mount()
	meter, dbBefore := meterJournal(t, cli, prefix), dbSize(t, cli)
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
		restarted := startServer(t, serverOpts{etcd: eps, prefix: prefix, name: victim.opts.name, snapshots: snaps})
		mu.Lock()
		servers[leader] = restarted
		mu.Unlock()
		leader, standby = standby, leader
	}
	servers[standby].waitCaughtUp(servers[leader])
	l.halt()
	elapsed := time.Since(began)
	journal, dbAfter := meter.total(t), dbSize(t, cli)

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
	fmt.Printf("  etcd: journal batches put (keys+values) %d bytes (%.0f per ended write), backend db size %d -> %d bytes\n",
		journal, float64(journal)/float64(ended), dbBefore, dbAfter)
	if len(rep.lost) > 0 {
		k := min(len(rep.lost), 20)
		t.Fatalf("%d acknowledged writes lost; the first %d:\n%s", len(rep.lost), k, joinLines(rep.lost[:k]))
	}
}
