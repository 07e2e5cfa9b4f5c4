package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/kvcache-ai/libmooncake_meta/go/ha"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/internal/etcdtest"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server/api"
)

// A node that steps down for a reason of etcd's own (here: a batch larger
// than etcd accepts, which no retry fixes) before the call's change is
// durable answers 503 NOT_LEADER with the cause, not 500: nothing was
// acknowledged and the client should look for the leader.
func TestACallWhoseNodeStepsDownOnAnEtcdErrorIsNotLeader(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	a := startServer(t, cli, "a", func(c *server.Config) {
		// Batches up to 8 MiB, above etcd's 1.5 MiB request limit.
		c.MaxBatchBytes = 8 << 20
		c.MaxRequestBytes = 8 << 20
	})
	waitRole(t, a, ha.RoleLeader)
	// One retain of 3000 groups with 1000-byte ids records about 3 MB in
	// one call: one batch etcd refuses.
	groups := make([]string, 3000)
	for i := range groups {
		groups[i] = fmt.Sprintf("%04d-%s", i, strings.Repeat("g", 995))
	}
	b, err := json.Marshal(api.RetainRequest{Groups: groups, TTLMs: 60_000})
	must(t, "Marshal", err)
	st, data := do(t, nil, http.MethodPost, a.URL()+api.PathRetainGroups, "application/json", b)
	var e api.Error
	must(t, "decoding the answer "+string(data), json.Unmarshal(data, &e))
	if st != http.StatusServiceUnavailable || e.Name != api.ErrNameNotLeader || e.Message == "" {
		t.Fatalf("retain of an oversized batch: HTTP %d %+v, want 503 NOT_LEADER with the cause", st, e)
	}
	t.Logf("answer: HTTP %d %s: %s", st, e.Name, e.Message)
	// The server replaced the node that stepped down and, alone, leads again.
	must(t, "WaitRestarts", a.WaitRestarts(boundedCtx(t), 1))
	waitRole(t, a, ha.RoleLeader)
}
