package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
	"github.com/kvcache-ai/libmooncake_meta/go/ha"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/internal/etcdtest"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server/api"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// BenchmarkSustainedUpserts drives a leader server with 32 HTTP clients,
// each writing soft-pinned objects (upsert start + end, every answer
// durable) over a fixed key set, b.N pairs in all, and reports the rate,
// the journal bytes it ships to etcd per second and per pair, and etcd's
// backend: its growth per pair without snapshots (gc=off), its largest
// size with them (a snapshot every 64 MiB, the default, or 4 MiB or 1 MiB
// of journal; 64 MiB needs over 350 000 pairs per snapshot). The numbers
// go to bench/README.md ("High availability"). Run it with a fixed count:
//
//	go test -run '^$' -bench SustainedUpserts -benchtime 40000x ./server/
func BenchmarkSustainedUpserts(b *testing.B) {
	for _, every := range []int64{0, ha.DefaultSnapshotEveryBytes, 4 << 20, 1 << 20} {
		name := "gc=off"
		if every > 0 {
			name = fmt.Sprintf("snapshot-every=%dMiB", every>>20)
		}
		b.Run(name, func(b *testing.B) { benchUpserts(b, every) })
	}
}

// benchUpserts runs the load on a server that takes a snapshot every
// everyBytes of journal (0: no snapshot store).
func benchUpserts(b *testing.B, everyBytes int64) {
	const (
		clients = 32
		keys    = 50000
	)
	gc := everyBytes > 0
	cli := etcdtest.Start(b).Client(b)
	mc := mm.DefaultConfig()
	mc.JournalCapacityBytes = 256 << 20
	cfg := server.Config{Etcd: cli, Prefix: prefix, Name: "bench", Master: mc, Logger: slog.New(slog.DiscardHandler)}
	if gc {
		store, err := ha.NewDirStore(filepath.Join(b.TempDir(), "snapshots"))
		if err != nil {
			b.Fatal(err)
		}
		cfg.Snapshots, cfg.SnapshotEveryBytes, cfg.SnapshotInterval = store, everyBytes, time.Hour
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	// Bounds the setup, not the run.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := server.Start(ctx, cfg, l)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	if err := s.WaitRole(ctx, ha.RoleLeader); err != nil {
		b.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	post := func(path string, req, resp any) error {
		body, _ := json.Marshal(req)
		r, err := hc.Post(s.URL()+path, "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		defer r.Body.Close()
		data, _ := io.ReadAll(r.Body)
		if r.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %d %s", path, r.StatusCode, data)
		}
		if resp != nil {
			return json.Unmarshal(data, resp)
		}
		return nil
	}
	if err := post(api.PathMount, api.MountRequest{ClientID: 1, Name: "seg0", Base: 1 << 40, Size: 1 << 34}, nil); err != nil {
		b.Fatal(err)
	}
	metric := func(name string) float64 {
		r, err := hc.Get(s.URL() + api.PathMetrics)
		if err != nil {
			b.Fatal(err)
		}
		defer r.Body.Close()
		data, _ := io.ReadAll(r.Body)
		var v float64
		for _, line := range bytes.Split(data, []byte("\n")) {
			if bytes.HasPrefix(line, []byte(name+" ")) {
				fmt.Sscan(string(line[len(name)+1:]), &v)
			}
		}
		return v
	}
	status := func() (*clientv3.StatusResponse, error) {
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return cli.Status(sctx, cli.Endpoints()[0])
	}
	dbSize := func() int64 {
		st, err := status()
		if err != nil {
			b.Fatal(err)
		}
		return st.DbSize
	}
	var maxDB int64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			st, err := status()
			if err == nil {
				maxDB = max(maxDB, st.DbSize)
			}
			select {
			case <-stopSampling:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	db0, shipped0 := dbSize(), metric("mooncake_meta_ha_journal_shipped_bytes_total")
	ttl := uint64(3_600_000)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < b.N; i += clients {
				key := fmt.Sprintf("obj/%06d", i%keys)
				var st api.StartResponse
				if err := post(api.PathUpsertStart, api.StartRequest{ClientID: 1, Key: key, Size: 4096, Config: api.ReplicateConfig{SoftPinAction: "ENABLE", TTLMs: &ttl}}, &st); err != nil {
					errs <- err
					return
				}
				if err := post(api.PathUpsertEnd, api.EndRequest{ClientID: 1, Key: key, Token: st.Token}, nil); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(stopSampling)
	<-sampled
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	shipped := metric("mooncake_meta_ha_journal_shipped_bytes_total") - shipped0
	db := dbSize()
	maxDB = max(maxDB, db)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "pairs/s")
	b.ReportMetric(shipped/elapsed.Seconds(), "journal-B/s")
	b.ReportMetric(shipped/float64(b.N), "journal-B/pair")
	b.ReportMetric(float64(db-db0)/float64(b.N), "etcd-growth-B/pair")
	b.ReportMetric(float64(maxDB), "etcd-max-B")
	b.ReportMetric(metric("mooncake_meta_ha_snapshots_total"), "snapshots")
	b.ReportMetric(metric("mooncake_meta_ha_snapshot_bytes"), "snapshot-B")
}
