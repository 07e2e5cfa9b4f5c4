package server_test

import (
	"bufio"
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

// logWatch passes records on and sends the first whose message is one of
// msgs on first (buffered, one record).
type logWatch struct {
	slog.Handler
	msgs  []string
	first chan slog.Record
	once  *sync.Once
}

func newLogWatch(h slog.Handler, msgs ...string) logWatch {
	return logWatch{Handler: h, msgs: msgs, first: make(chan slog.Record, 1), once: new(sync.Once)}
}

func (h logWatch) Handle(ctx context.Context, r slog.Record) error {
	for _, m := range h.msgs {
		if r.Message == m {
			h.once.Do(func() { h.first <- r })
		}
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

// smallSendBuffers is a listener whose connections have a send buffer of
// size bytes (the kernel doubles it and turns its autotuning off), so an
// answer outgrows the connection's buffers whatever the host's tcp_wmem.
type smallSendBuffers struct {
	net.Listener
	t    *testing.T
	size int
}

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if err := c.(*net.TCPConn).SetWriteBuffer(l.size); err != nil {
		l.t.Errorf("SetWriteBuffer: %v", err)
	}
	return c, nil
}

// startSmallBuffered starts a leading server whose connections send
// through 16 KiB buffers (32 KiB in the kernel), and whose master's
// snapshot is over 1 MiB: random retained group ids (a snapshot may be
// compressed), in calls whose journal records fit one batch.
func startSmallBuffered(t *testing.T, edit func(*server.Config)) *server.Server {
	t.Helper()
	cli := etcdtest.Start(t).Client(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, "Listen", err)
	a := startServerOn(t, cli, "a", smallSendBuffers{Listener: l, t: t, size: 16 << 10}, edit)
	waitRole(t, a, ha.RoleLeader)
	for i := range 2 {
		groups := make([]string, 800)
		for j := range groups {
			b := make([]byte, 500)
			rand.Read(b)
			groups[j] = fmt.Sprintf("%02d-%03d-%s", i, j, hex.EncodeToString(b))
		}
		var gr api.GroupsResponse
		call(t, a, api.PathRetainGroups, api.RetainRequest{Groups: groups, TTLMs: 3_600_000}, &gr)
	}
	return a
}

// snapshotRequest asks for the master's snapshot as bytes.
const snapshotRequest = "POST " + api.PathSnapshot + " HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n" +
	"Accept: application/octet-stream\r\nContent-Length: 2\r\n\r\n{}"

// A client that does not read its answer (a snapshot larger than the
// connection's buffers) loses its connection AnswerTimeout after the
// answer stalled, instead of holding the server's goroutine and answer.
func TestAnAnswerTheClientDoesNotReadIsCutOff(t *testing.T) {
	w := newLogWatch(slog.NewTextHandler(t.Output(), nil), "the answer was not delivered")
	a := startSmallBuffered(t, func(c *server.Config) {
		c.AnswerTimeout = 500 * time.Millisecond
		c.Logger = slog.New(w)
	})
	conn := dial(t, a, 4096)
	_, err := io.WriteString(conn, snapshotRequest)
	must(t, "writing the request", err)
	select {
	case <-w.first:
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
	if !ok || !strings.HasPrefix(head, "HTTP/1.1 200 ") || length < 1<<20 || len(body) >= length {
		t.Fatalf("the cut-off answer: header %q, %d of %d bytes: want a 200 header of a snapshot over 1 MiB, cut short", head, len(body), length)
	}
	t.Logf("the snapshot's answer was cut off after %d of %d bytes", len(body), length)
}

// pacedReader reads at most every bytes, then pauses before reading on.
type pacedReader struct {
	r     io.Reader
	every int
	pause time.Duration
	left  int
}

func (p *pacedReader) Read(b []byte) (int, error) {
	if p.left == 0 {
		time.Sleep(p.pause)
		p.left = p.every
	}
	n, err := p.r.Read(b[:min(len(b), p.left)])
	p.left -= n
	return n, err
}

// A client that reads its answer slowly but steadily (16 KiB every 50 ms,
// about 320 KiB/s: a 64 KiB write is taken well within AnswerTimeout)
// gets all of it, though the whole takes longer than AnswerTimeout.
func TestASlowAnswerThatKeepsMovingIsSentWhole(t *testing.T) {
	const answerTimeout = 2 * time.Second
	a := startSmallBuffered(t, func(c *server.Config) { c.AnswerTimeout = answerTimeout })
	conn := dial(t, a, 4096)
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(snapshotRequest)))
	must(t, "parsing the request", err)
	_, err = io.WriteString(conn, snapshotRequest)
	must(t, "writing the request", err)
	must(t, "SetReadDeadline", conn.SetReadDeadline(time.Now().Add(bound)))
	start := time.Now()
	res, err := http.ReadResponse(bufio.NewReader(&pacedReader{r: conn, every: 16 << 10, pause: 50 * time.Millisecond}), req)
	must(t, "reading the answer's header", err)
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	took := time.Since(start)
	if err != nil || res.StatusCode != http.StatusOK || int64(len(body)) != res.ContentLength || len(body) < 1<<20 {
		t.Fatalf("HTTP %d, %d of %d bytes in %v (%v): want a whole snapshot over 1 MiB", res.StatusCode, len(body), res.ContentLength, took, err)
	}
	t.Logf("read %d bytes in %v (AnswerTimeout %v)", len(body), took, answerTimeout)
}

// Between two requests of a keep-alive connection no write deadline is
// left from the previous answer: what net/http itself answers on it (a
// 431 to a header too large) arrives, however long the connection was
// idle, and so does the next answer.
func TestAnIdleKeepAliveConnectionHasNoAnswerDeadlineLeft(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	const answerTimeout = 200 * time.Millisecond
	a := startServer(t, cli, "a", func(c *server.Config) { c.AnswerTimeout = answerTimeout })
	conn := dial(t, a, 0)
	br := bufio.NewReader(conn)
	must(t, "SetReadDeadline", conn.SetReadDeadline(time.Now().Add(bound)))
	for _, what := range []string{"the first request", "a request after an idle spell"} {
		_, err := io.WriteString(conn, "GET "+api.PathHealthz+" HTTP/1.1\r\nHost: a\r\n\r\n")
		must(t, "writing "+what, err)
		res, err := http.ReadResponse(br, nil)
		must(t, "reading the answer to "+what, err)
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK || string(body) != "ok\n" {
			t.Fatalf("%s: HTTP %d %q (%v)", what, res.StatusCode, body, err)
		}
		// Idle past the answer's deadline, were it left.
		time.Sleep(3 * answerTimeout)
	}
	_, err := io.WriteString(conn, "GET "+api.PathHealthz+" HTTP/1.1\r\nHost: a\r\nX-Padding: "+strings.Repeat("p", 100<<10)+"\r\n\r\n")
	must(t, "writing a 100 KiB header", err)
	if got := untilClosed(t, "a header too large", conn); !strings.HasPrefix(got, "HTTP/1.1 431 ") {
		t.Fatalf("a 100 KiB header after an idle spell: answered %q, want 431", got)
	}
}
