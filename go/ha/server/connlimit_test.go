package server_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kvcache-ai/libmooncake_meta/go/ha"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/internal/etcdtest"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server/api"
)

// Idle keep-alive connections do not keep a new one waiting at
// MaxConnections: four pooled clients that each made one request and
// stay idle (IdleTimeout is minutes) left a fifth client's /healthz
// unaccepted until one of them timed out. At the bound idle connections
// are closed, so the fifth is served at once; the pooled clients are
// served again (on new connections). And when every connection is busy,
// one waiting gets in as soon as a request ends: that connection, idle
// then, is closed once its answer is sent.
func TestIdleConnectionsDoNotKeepANewOneWaitingAtMaxConnections(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	const limit = 4
	a := startServer(t, cli, "a", func(c *server.Config) {
		c.MaxConnections = limit
		c.IdleTimeout = 10 * time.Minute
		c.ReadTimeout = 10 * time.Minute // the busy calls below are not cut short
	})
	waitRole(t, a, ha.RoleLeader)
	healthz := func(hc *http.Client, what string) {
		t.Helper()
		hc.Timeout = 10 * time.Second
		res, err := hc.Get(a.URL() + api.PathHealthz)
		if err != nil {
			t.Fatalf("%s: GET /healthz: %v", what, err)
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK || string(b) != "ok\n" {
			t.Fatalf("%s: GET /healthz: %d %q (%v)", what, res.StatusCode, b, err)
		}
	}
	pooled := make([]*http.Client, limit)
	for i := range pooled {
		tr := &http.Transport{MaxIdleConnsPerHost: 1, IdleConnTimeout: 10 * time.Minute}
		t.Cleanup(tr.CloseIdleConnections)
		pooled[i] = &http.Client{Transport: tr}
		healthz(pooled[i], fmt.Sprintf("pooled client %d", i))
	}
	start := time.Now()
	fifth := &http.Transport{DisableKeepAlives: true}
	healthz(&http.Client{Transport: fifth}, "a fifth client while four connections are idle")
	t.Logf("the fifth client was served in %v", time.Since(start))
	for i, hc := range pooled {
		healthz(hc, fmt.Sprintf("pooled client %d again", i))
		hc.Transport.(*http.Transport).CloseIdleConnections()
	}

	// Four connections busy: each sent a call's header and half its body.
	const body = `{"key":"k"}`
	busy := make([]net.Conn, limit)
	for i := range busy {
		busy[i] = dial(t, a, 0)
		_, err := fmt.Fprintf(busy[i], "POST %s HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
			api.PathExist, len(body), body[:5])
		must(t, "writing half a call", err)
	}
	waiting := dial(t, a, 0)
	_, err := io.WriteString(waiting, "GET "+api.PathHealthz+" HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	must(t, "writing a request past the bound", err)
	must(t, "SetReadDeadline", waiting.SetReadDeadline(time.Now().Add(500*time.Millisecond)))
	if b, err := io.ReadAll(waiting); err == nil || len(b) != 0 {
		t.Fatalf("a connection past MaxConnections %d busy ones was served: %q (%v)", limit, b, err)
	}
	// One call ends: its answer is sent whole, then its connection closed.
	_, err = io.WriteString(busy[0], body[5:])
	must(t, "writing the rest of the call", err)
	must(t, "SetReadDeadline", busy[0].SetReadDeadline(time.Now().Add(10*time.Second)))
	if got, err := io.ReadAll(busy[0]); err != nil || !strings.HasPrefix(string(got), "HTTP/1.1 200 ") || !strings.HasSuffix(string(got), "{\"exists\":false}\n") {
		t.Fatalf("the call that ended: %q (%v), want its answer and then the connection closed at once", got, err)
	}
	must(t, "SetReadDeadline", waiting.SetReadDeadline(time.Now().Add(10*time.Second)))
	if got, err := io.ReadAll(waiting); err != nil || !strings.HasPrefix(string(got), "HTTP/1.1 200 ") || !strings.HasSuffix(string(got), "ok\n") {
		t.Fatalf("the connection waiting once a call ended: %q (%v), want the healthz answer at once", got, err)
	}
}
