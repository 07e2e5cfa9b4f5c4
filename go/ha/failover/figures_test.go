package failover

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
	"github.com/kvcache-ai/libmooncake_meta/go/ha"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/internal/etcdtest"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server/api"
)

// figureWindow is how long one measurement runs; figureRounds how often
// each is repeated (the figures are medians over the rounds, the ways
// measured in turn within a round, so they see the same machine load).
const (
	figureWindow = 2 * time.Second
	figureRounds = 3
	// figureSegSize holds every pinned object a window writes (no eviction
	// may interfere with the measurement).
	figureSegSize = uint64(1) << 40
)

// pairs runs clients goroutines, each writing fresh keys with put(key)
// (one soft-pinned Start+End pair) for figureWindow, and returns the
// pairs per second.
func pairs(t *testing.T, clients int, put func(c int, key string) error) (count int64, perSec float64) {
	t.Helper()
	var done atomic.Int64
	var failed atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := put(c, fmt.Sprintf("fig/%d/%d", figureKeys.Add(1), c)); err != nil {
					failed.Store(err)
					return
				}
				done.Add(1)
			}
		}()
	}
	began := time.Now()
	time.AfterFunc(figureWindow, func() { close(stop) })
	wg.Wait()
	elapsed := time.Since(began)
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("a measured write failed: %v", err)
	}
	return done.Load(), float64(done.Load()) / elapsed.Seconds()
}

// figureKeys numbers the measured keys: every write makes a new object.
var figureKeys atomic.Int64

func medianF(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Durable writes per second (make test-ha-soak): soft-pinned put pairs
// (Start + End, ENABLE with a TTL) by concurrent clients, measured three
// ways in one process, in turn:
//   - server: through a mooncake-meta-server leader process (with a
//     standby following), every call answered only once durable in etcd
//     (group commit: the records of concurrent calls share a transaction);
//   - ha.Node: the Go API's master in this process, led by an ha.Node on
//     the same etcd, Sync after each call (what the server does, without
//     HTTP);
//   - journal off: the Go API's master in this process with no journal
//     (the server cannot run without one).
//
// It also reports the journal's bytes in etcd per pair (keys + values of
// the batches) and the growth of etcd's backend.
func TestDurableWriteFigures(t *testing.T) {
	soakFailovers(t)
	c := etcdtest.Start(t)
	cli := c.Client(t)
	eps := c.Endpoints()
	snaps := t.TempDir()
	const srvPrefix, nodePrefix = "/failover/fig/server", "/failover/fig/node"
	s0 := startServer(t, serverOpts{etcd: eps, prefix: srvPrefix, name: "s0", snapshots: snaps})
	s0.waitRole("leader")
	s1 := startServer(t, serverOpts{etcd: eps, prefix: srvPrefix, name: "s1", snapshots: snaps})
	s1.waitRole("follower")
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 30 * time.Second}
	if err := post(hc, s0.url, api.PathMount, api.MountRequest{ClientID: 1, Name: "seg0", Base: segBase, Size: figureSegSize}, nil); err != nil {
		t.Fatalf("mount: %v", err)
	}
	ttl := pinTTLMs
	viaServer := func(c int, key string) error {
		var sr api.StartResponse
		if err := post(hc, s0.url, api.PathPutStart, api.StartRequest{ClientID: uint64(100 + c), Key: key, Size: objectSize,
			Config: api.ReplicateConfig{SoftPinAction: api.SoftPinEnable, TTLMs: &ttl}}, &sr); err != nil {
			return err
		}
		return post(hc, s0.url, api.PathPutEnd, api.EndRequest{ClientID: uint64(100 + c), Key: key, Token: sr.Token}, nil)
	}

	pin := time.Duration(pinTTLMs) * time.Millisecond
	cfg := mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: &pin}
	newMaster := func(journal bool) *mm.Master {
		mc := mm.DefaultConfig()
		if journal {
			mc.JournalCapacityBytes = 64 << 20
			mc.Standby = true
		}
		m, err := mm.NewWithConfig(mc)
		if err != nil {
			t.Fatalf("master: %v", err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	mount := func(m *mm.Master) {
		if _, err := m.MountSegment(1, "seg0", segBase, figureSegSize, mm.PoolMemory); err != nil {
			t.Fatalf("mount: %v", err)
		}
	}
	plain := newMaster(false)
	mount(plain)
	journalOff := func(c int, key string) error {
		k := plain.Tenant("")
		_, tok, err := k.PutStart(mm.ClientID(100+c), key, objectSize, cfg)
		if err != nil {
			return err
		}
		return k.PutEnd(mm.ClientID(100+c), key, mm.SelectAll, tok)
	}

	led := newMaster(true)
	ctx, cancel := context.WithTimeout(context.Background(), eventBound)
	defer cancel()
	node, err := ha.Start(ctx, ha.Config{Client: cli, Prefix: nodePrefix, Name: "n0", SessionTTL: sessionTTL}, led)
	if err != nil {
		t.Fatalf("ha.Start: %v", err)
	}
	defer node.Close()
	if err := node.WaitRole(ctx, ha.RoleLeader); err != nil {
		t.Fatalf("the node did not lead: %v", err)
	}
	mount(led)
	viaNode := func(c int, key string) error {
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		k := led.Tenant("")
		_, tok, err := k.PutStart(mm.ClientID(100+c), key, objectSize, cfg)
		if err != nil {
			return err
		}
		if err := node.Sync(sctx); err != nil {
			return err
		}
		if err := k.PutEnd(mm.ClientID(100+c), key, mm.SelectAll, tok); err != nil {
			return err
		}
		return node.Sync(sctx)
	}

	type way struct {
		name string
		put  func(int, string) error
	}
	ways := []way{{"server", viaServer}, {"ha.Node", viaNode}, {"journal off", journalOff}}
	concurrency := []int{1, 16, 64}
	rates := map[string][]float64{}
	var srvPairs, nodePairs int64
	meter, nodeMeter, db0 := meterJournal(t, cli, srvPrefix), meterJournal(t, cli, nodePrefix), dbSize(t, cli)
	for range figureRounds {
		for _, n := range concurrency {
			for _, w := range ways {
				cnt, r := pairs(t, n, w.put)
				k := fmt.Sprintf("%s/%d", w.name, n)
				rates[k] = append(rates[k], r)
				switch w.name {
				case "server":
					srvPairs += cnt
				case "ha.Node":
					nodePairs += cnt
				}
			}
		}
	}
	journal, nodeJournal, db1 := meter.total(t), nodeMeter.total(t), dbSize(t, cli)
	fmt.Printf("\ndurable soft-pinned put pairs (Start+End) per second, median of %d rounds of %v (GOMAXPROCS %d, etcd %d member):\n",
		figureRounds, figureWindow, runtime.GOMAXPROCS(0), len(c.Members))
	fmt.Printf("  %-8s %12s %12s %12s %14s\n", "clients", "server", "ha.Node", "journal off", "server/off")
	for _, n := range concurrency {
		s, h, o := medianF(rates[fmt.Sprintf("server/%d", n)]), medianF(rates[fmt.Sprintf("ha.Node/%d", n)]), medianF(rates[fmt.Sprintf("journal off/%d", n)])
		fmt.Printf("  %-8d %12.0f %12.0f %12.0f %14.5f\n", n, s, h, o, s/o)
	}
	fmt.Printf("etcd: %.0f journal bytes (keys+values of the batches) per server put pair, %.0f per ha.Node pair;\n",
		float64(journal)/float64(srvPairs), float64(nodeJournal)/float64(nodePairs))
	fmt.Printf("  backend (db) %d -> %d bytes for %d pairs of both: %.0f bytes of growth per pair, %.1f per journal byte (no compaction)\n",
		db0, db1, srvPairs+nodePairs, float64(db1-db0)/float64(srvPairs+nodePairs), float64(db1-db0)/float64(journal+nodeJournal))
}
