package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// An error that is the request's context ending (its client closed its
// side of the connection) is answered by aborting the connection: a
// handler that returned without writing had net/http send an empty 200
// OK, a success for a call whose outcome is unknown. The handler's
// deferred releases (a heavy call's slot) still run.
func TestFailAbortsTheConnectionOfAClientThatWentAway(t *testing.T) {
	s := &Server{log: slog.New(slog.DiscardHandler)}
	slots := make(chan struct{}, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		slots <- struct{}{}
		defer func() { <-slots }()
		ctx, cancel := context.WithCancel(r.Context())
		cancel() // as net/http does at the client's EOF
		s.fail(w, r.WithContext(ctx), fmt.Errorf("waiting for durability: %w", context.Canceled))
	}))
	defer ts.Close()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := hc.Post(ts.URL+"/v1/put/start", "application/json", nil)
	if err == nil {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		t.Fatalf("a call whose client went away was answered HTTP %d %q, want the connection closed without an answer", res.StatusCode, b)
	}
	if len(slots) != 0 {
		t.Fatal("the aborted handler's deferred release did not run")
	}
}
