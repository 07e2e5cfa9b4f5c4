package server_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kvcache-ai/libmooncake_meta/go/ha"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/internal/etcdtest"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server/api"
)

// dial opens a raw connection to s; rcvbuf > 0 shrinks its receive buffer
// (before the handshake, so the window stays small).
func dial(t *testing.T, s *server.Server, rcvbuf int) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: bound}
	if rcvbuf > 0 {
		d.Control = func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf)
			})
			return errors.Join(err, serr)
		}
	}
	conn, err := d.Dial("tcp", strings.TrimPrefix(s.URL(), "http://"))
	must(t, "dial", err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

// untilClosed reads conn until the server closes it, failing the test if
// it is still open after bound.
func untilClosed(t *testing.T, what string, conn net.Conn) string {
	t.Helper()
	must(t, "SetReadDeadline", conn.SetReadDeadline(time.Now().Add(bound)))
	data, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: the server held the connection open for %v (read %q)", what, bound, data)
	}
	return string(data)
}

// A connection that sends a request's header and then trickles (here:
// stops) its body is answered 400 and closed after ReadTimeout; one left
// idle after an answer is closed after IdleTimeout; a header beyond the
// server's bound is refused.
func TestASlowRequestAnIdleConnectionAndAHugeHeaderAreRefused(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	a := startServer(t, cli, "a", func(c *server.Config) {
		c.ReadTimeout = 500 * time.Millisecond
		c.IdleTimeout = 500 * time.Millisecond
	})

	slow := dial(t, a, 0)
	_, err := io.WriteString(slow, "POST "+api.PathGet+" HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	must(t, "writing the slow request", err)
	if got := untilClosed(t, "a body that stops", slow); !strings.HasPrefix(got, "HTTP/1.1 400 ") || !strings.Contains(got, api.ErrNameBadRequest) {
		t.Fatalf("a body that stops: answered %q, want 400 %s", got, api.ErrNameBadRequest)
	}

	idle := dial(t, a, 0)
	_, err = io.WriteString(idle, "GET "+api.PathHealthz+" HTTP/1.1\r\nHost: a\r\n\r\n")
	must(t, "writing the request", err)
	if got := untilClosed(t, "an idle connection", idle); !strings.HasPrefix(got, "HTTP/1.1 200 ") || !strings.HasSuffix(got, "ok\n") {
		t.Fatalf("healthz on the idle connection: %q", got)
	}

	req, err := http.NewRequestWithContext(boundedCtx(t), http.MethodGet, a.URL()+api.PathHealthz, nil)
	must(t, "NewRequest", err)
	req.Header.Set("X-Padding", strings.Repeat("p", 100<<10))
	res, err := http.DefaultClient.Do(req)
	must(t, "GET with a 100 KiB header", err)
	res.Body.Close()
	if res.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("a 100 KiB header: HTTP %d, want 431", res.StatusCode)
	}
}

// logWatch passes records on and closes seen at the first with message msg.
type logWatch struct {
	slog.Handler
	msg  string
	seen chan struct{}
	once *sync.Once
}

func (h logWatch) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(func() { close(h.seen) })
	}
	return h.Handler.Handle(ctx, r)
}

func (h logWatch) WithAttrs(as []slog.Attr) slog.Handler {
	h.Handler = h.Handler.WithAttrs(as)
	return h
}

func (h logWatch) WithGroup(name string) slog.Handler {
	h.Handler = h.Handler.WithGroup(name)
	return h
}

// A client that does not read its answer (here a snapshot larger than the
// connection's buffers) loses its connection AnswerTimeout after the
// answer started, instead of holding the server's goroutine and answer.
func TestAnAnswerTheClientDoesNotReadIsCutOff(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	w := logWatch{Handler: slog.NewTextHandler(t.Output(), nil), msg: "the answer was not delivered",
		seen: make(chan struct{}), once: new(sync.Once)}
	a := startServer(t, cli, "a", func(c *server.Config) {
		c.AnswerTimeout = 500 * time.Millisecond
		c.Logger = slog.New(w)
	})
	waitRole(t, a, ha.RoleLeader)
	// About 9.6 MB of retained group ids (random: a snapshot may be
	// compressed), in calls whose journal records fit one batch. The
	// server's send buffer holds at most 4 MiB (tcp_wmem's default
	// maximum) and the client's a few KiB.
	for i := range 12 {
		groups := make([]string, 800)
		for j := range groups {
			b := make([]byte, 500)
			rand.Read(b)
			groups[j] = fmt.Sprintf("%02d-%03d-%s", i, j, hex.EncodeToString(b))
		}
		var gr api.GroupsResponse
		call(t, a, api.PathRetainGroups, api.RetainRequest{Groups: groups, TTLMs: 3_600_000}, &gr)
	}

	conn := dial(t, a, 4096)
	_, err := io.WriteString(conn, "POST "+api.PathSnapshot+" HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"+
		"Accept: application/octet-stream\r\nContent-Length: 2\r\n\r\n{}")
	must(t, "writing the request", err)
	select {
	case <-w.seen:
	case <-boundedCtx(t).Done():
		t.Fatalf("the snapshot's answer, unread, was not cut off in %v", bound)
	}
	got := untilClosed(t, "a cut-off answer", conn)
	head, body, ok := strings.Cut(got, "\r\n\r\n")
	var length int
	for _, line := range strings.Split(head, "\r\n") {
		if v, found := strings.CutPrefix(line, "Content-Length: "); found {
			fmt.Sscan(v, &length)
		}
	}
	if !ok || !strings.HasPrefix(head, "HTTP/1.1 200 ") || length < 8<<20 || len(body) >= length {
		t.Fatalf("the cut-off answer: header %q, %d of %d bytes: want a 200 header of a snapshot over 8 MiB, cut short", head, len(body), length)
	}
	t.Logf("the snapshot's answer was cut off after %d of %d bytes", len(body), length)
}
