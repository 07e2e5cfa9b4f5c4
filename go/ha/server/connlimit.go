package server

import (
	"net"
	"net/http"
	"sync"
)

// idleCloser keeps idle keep-alive connections from holding the server's
// connections at Config.MaxConnections. The listener (netutil's
// LimitListener) accepts no connection past the bound until one closes,
// and a keep-alive connection between requests holds its place until
// IdleTimeout (minutes): clients that each keep one connection pooled
// could leave a new one, a /healthz among them, unaccepted for that long.
// So while the open connections are at the bound, those that are idle
// (between requests, http.StateIdle) are closed, and so is one that
// becomes idle then: a connection waiting in the listener's backlog gets
// in as soon as any request ends. A client whose idle connection is
// closed sends its next request on a new one (as after IdleTimeout).
//
// It is an http.Server's ConnState hook.
type idleCloser struct {
	limit int

	mu   sync.Mutex
	open map[net.Conn]http.ConnState // what net/http said of each, or stateClosing
}

// stateClosing marks a connection closeIdle is closing: still open (and
// counted) until net/http reports it closed.
const stateClosing http.ConnState = -1

func newIdleCloser(limit int) *idleCloser {
	return &idleCloser{limit: limit, open: make(map[net.Conn]http.ConnState)}
}

// track is the ConnState hook.
func (c *idleCloser) track(conn net.Conn, st http.ConnState) {
	c.mu.Lock()
	switch st {
	case http.StateClosed, http.StateHijacked:
		delete(c.open, conn)
		c.mu.Unlock()
		return
	case http.StateIdle:
		if len(c.open) >= c.limit {
			// At the bound: this connection, whose answer is sent
			// (net/http reports it idle once the answer is flushed),
			// makes room. Closed here, on its own goroutine.
			c.open[conn] = stateClosing
			c.mu.Unlock()
			conn.Close()
			return
		}
	}
	prev, known := c.open[conn]
	if known && prev == stateClosing {
		// Being closed: it stays so.
		c.mu.Unlock()
		return
	}
	c.open[conn] = st
	var idle []net.Conn
	if st == http.StateNew && len(c.open) >= c.limit {
		for other, ost := range c.open {
			if ost == http.StateIdle {
				c.open[other] = stateClosing
				idle = append(idle, other)
			}
		}
	}
	c.mu.Unlock()
	if len(idle) > 0 {
		// net/http reports StateNew on its accepting goroutine: the
		// closes (a TLS connection's sends its close_notify alert, up
		// to a few seconds) are not its.
		go func() {
			for _, other := range idle {
				other.Close()
			}
		}()
	}
}
