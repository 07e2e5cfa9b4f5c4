package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/kvcache-ai/libmooncake_meta/go/ha/client"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/internal/etcdtest"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server/api"
)

const prefix = "/mooncake/clienttest"

// A call the leader answered 200 with an answer that cannot be decoded,
// or that breaks off, may have taken effect: the client returns an
// *AnswerError and does not send it again (once more would run a write
// twice). A call that got no answer at all is still sent to the leader
// etcd names. The leader is an httptest server that etcd names.
func TestAnAnswerThatCannotBeReadIsNotSentAgain(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	var mu sync.Mutex
	posts := map[string]int{}
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		posts[r.URL.Path]++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case api.PathGet:
			// Not a GetResponse.
			io.WriteString(w, `{"replicas":5}`)
		case api.PathExist:
			// 10 bytes of the 100 announced, then the connection is cut.
			w.Header().Set("Content-Length", "100")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, `{"exists":`)
			http.NewResponseController(w).Flush()
			panic(http.ErrAbortHandler)
		default:
			io.WriteString(w, `{"pinned":true,"deadline_ms":7}`)
		}
	}))
	t.Cleanup(leader.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	// The election's first key names the leader; its node entry, its URL.
	if _, err := cli.Put(ctx, prefix+"/leader/1", "l"); err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(api.NodeInfo{Name: "l", URL: leader.URL})
	if _, err := cli.Put(ctx, api.NodeKey(prefix, "l"), string(info)); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cli, prefix, nil)
	if err != nil {
		t.Fatal(err)
	}
	count := func(path string) int {
		mu.Lock()
		defer mu.Unlock()
		return posts[path]
	}

	for _, call := range []struct {
		path string
		out  any
	}{{api.PathGet, &api.GetResponse{}}, {api.PathExist, &api.ExistResponse{}}} {
		path := call.path
		err := c.Call(ctx, path, api.KeyRequest{Key: "k"}, call.out)
		var ae *client.AnswerError
		if !errors.As(err, &ae) || ae.Status != http.StatusOK || ae.URL != leader.URL+path {
			t.Fatalf("%s: Call = %v, want an *AnswerError for HTTP 200 from %s", path, err, leader.URL+path)
		}
		if n := count(path); n != 1 {
			t.Fatalf("%s: %d POSTs, want 1 (%v)", path, n, err)
		}
	}

	// A node that cannot be reached: sent again, to the leader.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "http://" + l.Addr().String()
	l.Close()
	c.Prefer(gone)
	var pin api.SoftPinResponse
	if err := c.Call(ctx, api.PathSoftPin, api.KeyRequest{Key: "k"}, &pin); err != nil || !pin.Pinned || count(api.PathSoftPin) != 1 {
		t.Fatalf("a call to a node that is gone: %v, %+v, %d POSTs to the leader; want it answered by the leader", err, pin, count(api.PathSoftPin))
	}
}
