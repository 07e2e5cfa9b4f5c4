package server_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvcache-ai/libmooncake_meta/go/ha"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/internal/etcdtest"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server/api"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// scrape returns the *_total samples of s's /metrics.
func scrape(t *testing.T, s *server.Server) map[string]float64 {
	t.Helper()
	st, body := do(t, nil, http.MethodGet, s.URL()+api.PathMetrics, "", nil)
	if st != http.StatusOK {
		t.Fatalf("GET /metrics: %d %q", st, body)
	}
	out := make(map[string]float64)
	for line := range strings.Lines(string(body)) {
		f := strings.Fields(line)
		if len(f) != 2 || strings.HasPrefix(f[0], "#") || !strings.HasSuffix(f[0], "_total") {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		must(t, "parsing "+line, err)
		out[f[0]] = v
	}
	return out
}

// No counter of the process goes backwards when its node restarts a
// generation (a fresh standby master after a step-down): the master's
// *_total samples carry the retired master's counts (they restarted from
// 0 with the new master), as the node's own mooncake_meta_ha_* ones do.
func TestMasterCountersDoNotGoBackwardsAcrossGenerations(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	a := startServer(t, cli, "a", nil)
	waitRole(t, a, ha.RoleLeader)
	for i := range 20 {
		writePinned(t, a, "prompt/"+strconv.Itoa(i), time.Hour)
	}
	// Starts refused for want of space: counted by the master alone (a
	// refusal records nothing in the journal, so a new master that
	// replays it does not count them again).
	for range 3 {
		refused(t, a, api.PathPutStart, "application/json", `{"client_id":7,"key":"huge","size":1073741824}`,
			http.StatusInsufficientStorage, "NO_AVAILABLE_HANDLE")
	}
	before := scrape(t, a)
	const appended, failures = "master_journal_records_appended_total", "master_put_start_failures_total"
	if before[appended] < 40 || before[failures] != 3 {
		t.Fatalf("%s %v after 20 puts, %s %v after 3 refused", appended, before[appended], failures, before[failures])
	}
	for restart := uint64(1); restart <= 2; restart++ {
		r, err := cli.Get(boundedCtx(t), prefix+"/leader/", clientv3.WithFirstCreate()...)
		if err != nil || len(r.Kvs) != 1 {
			t.Fatalf("leader key: %v %v", r, err)
		}
		_, err = cli.Revoke(boundedCtx(t), clientv3.LeaseID(r.Kvs[0].Lease))
		must(t, "Revoke the leader's lease", err)
		must(t, "WaitRestarts", a.WaitRestarts(boundedCtx(t), restart))
		waitRole(t, a, ha.RoleLeader)
		writePinned(t, a, "after/"+strconv.FormatUint(restart, 10), time.Hour)
		after := scrape(t, a)
		for name, v := range before {
			if after[name] < v {
				t.Errorf("restart %d: %s went from %v to %v", restart, name, v, after[name])
			}
		}
		if after[appended] < before[appended]+2 {
			t.Errorf("restart %d: %s %v, want the %v before plus the new generation's put", restart, appended, after[appended], before[appended])
		}
		// The refusals of every generation, the new one's included.
		refused(t, a, api.PathPutStart, "application/json", `{"client_id":7,"key":"huge","size":1073741824}`,
			http.StatusInsufficientStorage, "NO_AVAILABLE_HANDLE")
		after = scrape(t, a)
		if want := float64(3 + restart); after[failures] != want {
			t.Errorf("restart %d: %s %v, want %v", restart, failures, after[failures], want)
		}
		if after["mooncake_meta_ha_node_restarts_total"] != float64(restart) {
			t.Errorf("restart %d: mooncake_meta_ha_node_restarts_total %v", restart, after["mooncake_meta_ha_node_restarts_total"])
		}
		before = after
	}
}
