package server_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/kvcache-ai/libmooncake_meta/go/ha"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/internal/etcdtest"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server/api"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// clientClosed is the server's debug line for a client whose side of the
// connection ended while its call waits for durability.
const clientClosed = "the client closed its connection, or its sending side, while its call waits for durability; it is answered once the wait ends"

// pausedStart starts a leader whose log is watched for msgs (debug level
// on), mounts a segment, pauses etcd, and sends a PutStart of key on a raw
// connection: the call then waits for durability. The caller continues
// etcd (etcd.Members[0].Continue).
func pausedStart(t *testing.T, key string, msgs ...string) (*etcdtest.Cluster, *clientv3.Client, *server.Server, logWatch, net.Conn) {
	t.Helper()
	etcd := etcdtest.Start(t)
	cli := etcd.Client(t)
	h := newLogWatch(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}), msgs...)
	a := startServer(t, cli, "a", func(c *server.Config) {
		c.Logger = slog.New(h)
		c.WriteTimeout = bound
	})
	waitRole(t, a, ha.RoleLeader)
	call(t, a, api.PathMount, api.MountRequest{ClientID: 7, Name: "seg0", Base: 1 << 40, Size: 64 << 20}, nil)
	must(t, "pausing etcd", etcd.Members[0].Pause(t))
	conn := dial(t, a, 0)
	body := fmt.Sprintf(`{"client_id":7,"key":%q,"size":4096}`, key)
	_, err := fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		api.PathPutStart, len(body), body)
	must(t, "writing the request", err)
	return etcd, cli, a, h, conn
}

// noAnswerYet fails the test if conn holds an answer, or was closed,
// within wait.
func noAnswerYet(t *testing.T, what string, br *bufio.Reader, conn net.Conn, wait time.Duration) {
	t.Helper()
	must(t, "SetReadDeadline", conn.SetReadDeadline(time.Now().Add(wait)))
	_, err := br.Peek(1)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		got, _ := io.ReadAll(br)
		t.Fatalf("%s: the connection held %q (%v) while etcd is paused, want no answer yet", what, got, err)
	}
}

// A client that closes its sending side (shutdown(SHUT_WR)) once its call
// is sent, and reads on, while the call waits for durability (etcd is
// paused), is not answered before the change is durable: net/http cancels
// the request's context at that EOF, which ended the wait, and the handler
// returned without a word, so net/http sent an empty 200 OK for a change
// nobody knew to be durable. The wait goes on; once etcd is back the
// client gets its call's true answer, and the write it acknowledged is in
// etcd's journal.
func TestAHalfClosedClientIsAnsweredOnlyOnceItsChangeIsDurable(t *testing.T) {
	etcd, cli, a, h, conn := pausedStart(t, "half-closed", clientClosed)
	br := bufio.NewReader(conn)
	noAnswerYet(t, "the call", br, conn, 200*time.Millisecond)
	must(t, "CloseWrite", conn.(*net.TCPConn).CloseWrite())
	// Without the fix the empty 200 came at once.
	noAnswerYet(t, "after CloseWrite", br, conn, time.Second)
	select {
	case <-h.first: // the server saw the EOF
	case <-boundedCtx(t).Done():
		t.Fatalf("the server did not notice the client's CloseWrite in %v", bound)
	}
	noAnswerYet(t, "once the server saw the CloseWrite", br, conn, 300*time.Millisecond)
	must(t, "continuing etcd", etcd.Members[0].Continue())
	must(t, "SetReadDeadline", conn.SetReadDeadline(time.Now().Add(bound)))
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the half-closed client got no answer once etcd was back: %v", err)
	}
	data, err := io.ReadAll(res.Body)
	res.Body.Close()
	must(t, "reading the answer", err)
	var st api.StartResponse
	if res.StatusCode != http.StatusOK || json.Unmarshal(data, &st) != nil || st.Token == 0 || len(st.Replicas) != 1 {
		t.Fatalf("the half-closed client's answer: HTTP %d %q, want 200 with the Start's token and replica", res.StatusCode, data)
	}
	// The answer is the true one: its token ends the write, and a standby
	// replaying etcd's journal holds the object.
	call(t, a, api.PathPutEnd, api.EndRequest{ClientID: 7, Key: "half-closed", Token: st.Token}, nil)
	m := replay(t, cli)
	if ok, err := m.Tenant("").Exist("half-closed"); err != nil || !ok {
		t.Fatalf("the acknowledged write is not in etcd's journal: exists %v, %v", ok, err)
	}
}
