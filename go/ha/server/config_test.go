package server_test

import (
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
	"github.com/kvcache-ai/libmooncake_meta/go/ha"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/internal/etcdtest"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A node configuration ha.Config refuses makes Start fail before it writes
// anything to etcd: no node entry, no lease, no election key. A zero
// SessionTTL or MaxBatchBytes takes its default (documented).
func TestStartRefusesABadNodeConfigBeforeWritingToEtcd(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	for _, c := range []struct {
		name string
		edit func(*server.Config)
		want string
	}{
		{"negative TTL", func(c *server.Config) { c.SessionTTL = -time.Second }, "Config.SessionTTL -1s"},
		{"fractional TTL", func(c *server.Config) { c.SessionTTL = 1500 * time.Millisecond }, "Config.SessionTTL 1.5s"},
		{"sub-second TTL", func(c *server.Config) { c.SessionTTL = 500 * time.Millisecond }, "Config.SessionTTL 500ms"},
		{"negative batch", func(c *server.Config) { c.MaxBatchBytes = -5 }, "Config.MaxBatchBytes -5"},
		{"tiny batch", func(c *server.Config) { c.MaxBatchBytes = ha.MinMaxBatchBytes - 1 }, "Config.MaxBatchBytes"},
		{"huge batch", func(c *server.Config) { c.MaxBatchBytes = ha.MaxMaxBatchBytes + 1 }, "Config.MaxBatchBytes"},
		{"negative flush interval", func(c *server.Config) { c.FlushInterval = -time.Millisecond }, "Config.FlushInterval"},
		{"negative snapshot keep", func(c *server.Config) { c.SnapshotKeep = -1 }, "Config.SnapshotKeep"},
	} {
		t.Run(c.name, func(t *testing.T) {
			mc := mm.DefaultConfig()
			mc.JournalCapacityBytes = 1 << 20
			cfg := server.Config{Etcd: cli, Prefix: prefix, Name: "bad", Master: mc,
				Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}
			c.edit(&cfg)
			l, err := net.Listen("tcp", "127.0.0.1:0")
			must(t, "Listen", err)
			defer l.Close()
			s, err := server.Start(boundedCtx(t), cfg, l)
			if err == nil {
				s.Close(boundedCtx(t))
				t.Fatal("Start accepted the configuration")
			}
			if !errors.Is(err, ha.ErrInvalidConfig) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Start = %v, want ErrInvalidConfig naming %q", err, c.want)
			}
			resp, err := cli.Get(boundedCtx(t), prefix+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
			must(t, "reading the cluster's keys", err)
			leases, err := cli.Leases(boundedCtx(t))
			must(t, "listing the leases", err)
			if resp.Count != 0 || len(leases.Leases) != 0 {
				t.Fatalf("a refused Start left %d keys and %d leases in etcd", resp.Count, len(leases.Leases))
			}
		})
	}
	// Zero takes the defaults: the server starts and leads.
	s := startServer(t, cli, "zero", func(c *server.Config) { c.SessionTTL, c.MaxBatchBytes = 0, 0 })
	waitRole(t, s, ha.RoleLeader)
}
