package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvcache-ai/libmooncake_meta/go/ha"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/internal/etcdtest"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server/api"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// journalGate holds back the etcd transactions that put journal batches
// while it is shut: the leader's records then stay undurable, as with a
// slow etcd. It wraps the KV of the client the server is given.
type journalGate struct {
	clientv3.KV
	prefix  string
	mu      sync.Mutex
	open    chan struct{} // not nil while shut: closed when it opens
	waiting chan struct{} // a token when a batch starts waiting
}

func gateJournal(cli *clientv3.Client) *journalGate {
	g := &journalGate{KV: cli.KV, prefix: ha.JournalPrefix(prefix), waiting: make(chan struct{}, 1)}
	cli.KV = g
	return g
}

func (g *journalGate) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open == nil {
		g.open = make(chan struct{})
	}
}

func (g *journalGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open != nil {
		close(g.open)
		g.open = nil
	}
}

func (g *journalGate) wait(ctx context.Context) error {
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	if open == nil {
		return nil
	}
	select {
	case g.waiting <- struct{}{}:
	default:
	}
	select {
	case <-open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *journalGate) Txn(ctx context.Context) clientv3.Txn {
	return &gatedTxn{Txn: g.KV.Txn(ctx), g: g, ctx: ctx}
}

type gatedTxn struct {
	clientv3.Txn
	g       *journalGate
	ctx     context.Context
	journal bool // the transaction puts a journal batch
}

func (t *gatedTxn) note(ops []clientv3.Op) {
	for _, op := range ops {
		if op.IsPut() && strings.HasPrefix(string(op.KeyBytes()), t.g.prefix) {
			t.journal = true
		}
	}
}

func (t *gatedTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	t.Txn = t.Txn.If(cs...)
	return t
}

func (t *gatedTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.note(ops)
	t.Txn = t.Txn.Then(ops...)
	return t
}

func (t *gatedTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.note(ops)
	t.Txn = t.Txn.Else(ops...)
	return t
}

func (t *gatedTxn) Commit() (*clientv3.TxnResponse, error) {
	if t.journal {
		if err := t.g.wait(t.ctx); err != nil {
			return nil, err
		}
	}
	return t.Txn.Commit()
}

type answer struct {
	status int
	body   []byte
}

// post sends body to path on s in the background.
func post(t *testing.T, s *server.Server, path, body string) <-chan answer {
	t.Helper()
	ch := make(chan answer, 1)
	ctx := boundedCtx(t)
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+path, strings.NewReader(body))
		if err != nil {
			ch <- answer{status: -1, body: []byte(err.Error())}
			return
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			ch <- answer{status: -1, body: []byte(err.Error())}
			return
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			ch <- answer{status: -1, body: []byte(err.Error())}
			return
		}
		ch <- answer{status: res.StatusCode, body: b}
	}()
	return ch
}

func receive(t *testing.T, what string, ch <-chan answer) answer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-boundedCtx(t).Done():
		t.Fatalf("%s: no answer in %v", what, bound)
		return answer{}
	}
}

// A refusal of the library can rest on another client's change that is
// not durable yet: it is not given before that change is in etcd, or a
// failover in between could undo what the refusal showed. Here a remove
// waits for etcd (the journal's transactions held back); a get of the
// same key must not answer 404 meanwhile, nor a Start of a key another
// Start is writing answer OBJECT_ALREADY_EXISTS. The server's ReadTimeout
// is shorter than the wait: a call waiting for durability outlives it.
func TestARefusalIsNotGivenBeforeWhatItRestsOnIsDurable(t *testing.T) {
	cluster := etcdtest.Start(t)
	cli := cluster.Client(t)
	scli := cluster.Client(t)
	gate := gateJournal(scli)
	// Only the answers' Sync ships the journal; the durability wait
	// outlasts the test's hold.
	a := startServer(t, scli, "a", func(c *server.Config) {
		c.FlushInterval = time.Hour
		c.WriteTimeout = bound
		c.ReadTimeout = 500 * time.Millisecond
	})
	// Cleanups run last first: the gate opens before the server closes
	// (a closing leader ships its journal first).
	t.Cleanup(gate.release)
	waitRole(t, a, ha.RoleLeader)
	writePinned(t, a, "k", time.Hour)

	// hold is how long an answer that would expose an undurable change
	// gets to arrive while the journal is held back: ample for an answer
	// that does not wait (they take milliseconds); an answer that waits
	// never arrives before the gate opens, however long it is.
	const hold = 2 * time.Second
	for _, c := range []struct {
		name                   string
		changePath, changeBody string // the change held back
		thenPath, thenBody     string // the call whose answer waits for it
		status                 int    // that answer once the change is durable
		errName                string
	}{
		{"get after a remove", api.PathRemove, `{"key":"k","force":true}`,
			api.PathGet, `{"key":"k"}`, http.StatusNotFound, "OBJECT_NOT_FOUND"},
		{"put start after a put start", api.PathPutStart, `{"client_id":7,"key":"k2","size":4096}`,
			api.PathPutStart, `{"client_id":7,"key":"k2","size":4096}`, http.StatusConflict, "OBJECT_ALREADY_EXISTS"},
	} {
		gate.shut()
		// Drop a token left by an earlier round.
		select {
		case <-gate.waiting:
		default:
		}
		change := post(t, a, c.changePath, c.changeBody)
		// The change is in the master once its batch waits at the gate.
		select {
		case <-gate.waiting:
		case ans := <-change:
			t.Fatalf("%s: the change was answered %d %s while its batch was held back", c.name, ans.status, ans.body)
		case <-boundedCtx(t).Done():
			t.Fatalf("%s: no journal batch reached etcd", c.name)
		}
		then := post(t, a, c.thenPath, c.thenBody)
		select {
		case ans := <-then:
			t.Fatalf("%s: answered %d %s while the change it rests on was not durable", c.name, ans.status, ans.body)
		case ans := <-change:
			t.Fatalf("%s: the change was answered %d %s while its batch was held back", c.name, ans.status, ans.body)
		case <-time.After(hold):
		}
		gate.release()
		if ans := receive(t, c.name+": the change", change); ans.status != http.StatusOK {
			t.Fatalf("%s: the change answered %d %s once durable, want 200", c.name, ans.status, ans.body)
		}
		ans := receive(t, c.name, then)
		var e api.Error
		if err := json.Unmarshal(ans.body, &e); err != nil || ans.status != c.status || e.Name != c.errName {
			t.Fatalf("%s: answered %d %s once the change was durable, want %d %s", c.name, ans.status, ans.body, c.status, c.errName)
		}
	}
	// What the refusals showed is in etcd: a standby built from it agrees.
	m := replay(t, cli)
	if ok, err := m.Exist("k"); err != nil || ok {
		t.Fatalf("replayed journal: k exists %v (%v), want it removed", ok, err)
	}
}
