// Package server is the library behind mooncake-meta-server: an HTTP
// server over one HA node (package ha). The node's master starts as a
// standby with a journal and follows the cluster's journal in etcd; once
// elected it serves the JSON API of package api, and every answer is given
// only after node.Sync confirmed that the journal records covering the
// call are in etcd, so no failover loses a change a client was told about.
// A follower answers the API with 503 NOT_LEADER naming the leader.
//
// The node publishes its URL under api.NodeKey(prefix, name) with a lease
// of its session TTL, so clients find the leader's address from its name.
// A node that steps down (its master led and holds changes nobody
// acknowledged) is replaced by a fresh standby master and node.
package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
	"github.com/kvcache-ai/libmooncake_meta/go/ha"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server/api"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/net/netutil"
)

// Defaults of Config.
const (
	// DefaultMaxRequestBytes bounds a request body: 1 MiB.
	DefaultMaxRequestBytes = 1 << 20
	// DefaultWriteTimeout bounds how long a call waits for its change to
	// be durable before answering 503 NOT_DURABLE.
	DefaultWriteTimeout = 5 * time.Second
	// DefaultReadTimeout bounds reading one request, headers and body.
	DefaultReadTimeout = 30 * time.Second
	// DefaultAnswerTimeout bounds how long sending an answer may stall.
	DefaultAnswerTimeout = 30 * time.Second
	// DefaultIdleTimeout closes a keep-alive connection idle this long:
	// longer than the 90 s after which Go's http.Transport closes its own
	// idle connections, so a client seldom reuses one the server closed.
	DefaultIdleTimeout = 2 * time.Minute
	// maxHeaderBytes bounds a request's header: the API's are a few
	// hundred bytes.
	maxHeaderBytes = 64 << 10
	// maxReadHeaderTimeout bounds reading a request's header, when
	// ReadTimeout is longer.
	maxReadHeaderTimeout = 10 * time.Second
	// DefaultMaxCallEntries bounds the entries of one list in a request
	// (the groups of a retain or release, a Start's preferred segments).
	DefaultMaxCallEntries = 4096
	// DefaultMaxHeavyRequests bounds the retains and releases served at
	// once.
	DefaultMaxHeavyRequests = 64
	// DefaultMaxSnapshotRequests bounds the /v1/snapshot calls served at
	// once: each holds the master's whole snapshot while it is sent.
	DefaultMaxSnapshotRequests = 2
	// connectionCap is the most connections DefaultMaxConnections allows.
	connectionCap = 4096
	// fdReserve is the file descriptors kept, below the process's
	// RLIMIT_NOFILE soft limit, for what is not a client connection: the
	// etcd client's connections, snapshot files, the listener, logs.
	fdReserve = 256
)

// MaxConnectionsLimit is the most client connections this process can
// hold with file descriptors to spare: RLIMIT_NOFILE's soft limit (which
// the Go runtime raises at start to one less than the hard limit, when it
// is lower) less a reserve for the etcd client and snapshot files of 256,
// or of half the limit when the limit is 512 or less.
func MaxConnectionsLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return connectionCap
	}
	if rl.Cur > math.MaxInt32 {
		return math.MaxInt32
	}
	n := int(rl.Cur)
	return n - min(fdReserve, n/2)
}

// DefaultMaxConnections is Config.MaxConnections' default:
// min(4096, MaxConnectionsLimit()).
func DefaultMaxConnections() int { return max(1, min(connectionCap, MaxConnectionsLimit())) }

// Config configures a server. Etcd, Prefix, Name and Master are required.
type Config struct {
	// Etcd is the etcd client (the caller closes it after Close).
	Etcd *clientv3.Client
	// Prefix is the cluster's etcd prefix (ha.Config.Prefix).
	Prefix string
	// Name is the node's name, unique in the cluster (ha.Config.Name).
	Name string
	// URL is the base URL clients reach this node at, published in etcd;
	// empty: derived from the listener (http:// or https:// and its
	// address), which must then not be an unspecified address (0.0.0.0).
	URL string
	// SessionTTL, MaxBatchBytes and FlushInterval are the ha.Config
	// fields (zero: their defaults; a value ha.Config.Validate refuses,
	// such as a negative or fractional SessionTTL, makes Start fail
	// before it writes to etcd). A batch's transaction is up to
	// MaxBatchBytes plus 4 KiB: both the Etcd client's
	// MaxCallSendMsgSize (2 MiB when zero, so a MaxBatchBytes of 2 MiB
	// already exceeds it) and etcd's --max-request-bytes (1.5 MiB by
	// default) must take that, or the leader steps down at its first
	// such batch.
	SessionTTL    time.Duration
	MaxBatchBytes int
	FlushInterval time.Duration
	// Snapshots, SnapshotInterval, SnapshotEveryBytes and SnapshotKeep
	// are the ha.Config fields: the store every node of the cluster
	// reaches (nil: no snapshots, no journal collection) and when the
	// leader takes one (zero: the defaults).
	Snapshots          ha.SnapshotStore
	SnapshotInterval   time.Duration
	SnapshotEveryBytes int64
	SnapshotKeep       int
	// Master is the configuration of the node's masters (start from
	// mooncakemeta.DefaultConfig); Standby is forced on and
	// JournalCapacityBytes must be > 0.
	Master mm.Config
	// TLS, when not nil, serves HTTPS with it (client certificates as it
	// says).
	TLS *tls.Config
	// MaxRequestBytes bounds a request body (0: DefaultMaxRequestBytes).
	MaxRequestBytes int64
	// WriteTimeout bounds the wait for durability (0: DefaultWriteTimeout).
	WriteTimeout time.Duration
	// ReadTimeout bounds reading one request, headers and body, from its
	// first byte (0: DefaultReadTimeout): a client that trickles its body
	// is answered 400 and its connection closed. It does not bound the
	// call nor its wait for durability: net/http lifts the deadline once
	// the body is read.
	ReadTimeout time.Duration
	// AnswerTimeout bounds how long sending an answer may stall (0:
	// DefaultAnswerTimeout): each write of up to 64 KiB of it must be
	// taken by the connection within it. A client that stops reading
	// its answer loses its connection; a slow one that keeps reading
	// (at least 64 KiB per AnswerTimeout) gets all of it, however long
	// the answer (a /v1/snapshot).
	AnswerTimeout time.Duration
	// IdleTimeout closes a keep-alive connection with no request for this
	// long (0: DefaultIdleTimeout).
	IdleTimeout time.Duration
	// MaxConnections bounds the client connections open at once (0:
	// DefaultMaxConnections()): past it the server accepts no connection
	// until one closes (they wait in the listener's backlog), so clients
	// cannot take the file descriptors the etcd client and the snapshots
	// need. While MaxConnections are open, keep-alive connections that
	// are idle (between requests) are closed, and so is one as it
	// becomes idle, so a waiting connection gets in as soon as any
	// request ends; the clients send their next requests on new
	// connections. Below the bound idle connections close after
	// IdleTimeout; a request's header must arrive within 10 s (or
	// ReadTimeout).
	MaxConnections int
	// MaxCallEntries bounds each list of a request: the groups of a
	// retain or release, a Start's config.preferred_segments (0:
	// DefaultMaxCallEntries); a longer one is refused, 400
	// INVALID_PARAMS, before anything is done.
	MaxCallEntries int
	// MaxHeavyRequests bounds the retains and releases served at once,
	// from their body's arrival to their answer's end (0:
	// DefaultMaxHeavyRequests); MaxSnapshotRequests bounds the
	// /v1/snapshot calls (0: DefaultMaxSnapshotRequests). A call past
	// either is answered 429 TOO_MANY_REQUESTS (Retry-After: 1) at once,
	// having done nothing.
	MaxHeavyRequests    int
	MaxSnapshotRequests int
	// Logger receives the structured log (nil: discarded).
	Logger *slog.Logger
}

// counters are per-node totals the metrics carry across generations.
type counters struct {
	snapshots, loadFailures, shipped uint64
}

// generation is one master and the node driving it: replaced when the
// node stops on its own.
type generation struct {
	m *mm.Master
	n *ha.Node
}

// Server is a running server: Close stops it.
type Server struct {
	cfg  Config
	log  *slog.Logger
	http *http.Server
	l    net.Listener
	url  string

	mu      sync.Mutex
	cur     *generation
	closed  bool
	swapped chan struct{} // closed and replaced when cur is replaced

	closing   chan struct{}
	supDone   chan struct{}
	regDone   chan struct{}
	serveDone chan struct{}
	serveErr  error
	closeOnce sync.Once
	closeErr  error
	leaders   *leaderCache // the leader named in NOT_LEADER answers
	restarts  uint64       // generations started after the first (under mu)
	prevGens  counters     // the counters of the generations replaced (under mu)
	// prevMaster sums the retired masters' cumulative samples; lastMaster
	// is the highest value each was rendered with (both under mu).
	prevMaster masterTotals
	lastMaster masterTotals

	heavy     chan struct{} // a slot per retain or release served
	snapshots chan struct{} // a slot per /v1/snapshot served
	throttled atomic.Uint64 // heavy calls answered 429
}

func (c Config) withDefaults() (Config, error) {
	if c.Etcd == nil {
		return c, errors.New("server: Config.Etcd is nil")
	}
	if c.Prefix == "" || strings.HasSuffix(c.Prefix, "/") {
		return c, fmt.Errorf("server: Config.Prefix %q must not be empty nor end with \"/\"", c.Prefix)
	}
	if c.Name == "" || strings.Contains(c.Name, "/") {
		return c, fmt.Errorf("server: Config.Name %q must not be empty nor contain \"/\"", c.Name)
	}
	if c.Master.JournalCapacityBytes == 0 {
		return c, errors.New("server: Config.Master.JournalCapacityBytes must be > 0 (an HA node ships its master's journal)")
	}
	c.Master.Standby = true
	if err := c.Master.Validate(); err != nil {
		return c, fmt.Errorf("server: Config.Master: %w", err)
	}
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.MaxRequestBytes < 0 {
		return c, fmt.Errorf("server: Config.MaxRequestBytes %d is negative", c.MaxRequestBytes)
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.WriteTimeout < 0 {
		return c, fmt.Errorf("server: Config.WriteTimeout %v is negative", c.WriteTimeout)
	}
	for _, n := range []struct {
		name string
		v    *int
		def  int
	}{
		{"MaxConnections", &c.MaxConnections, DefaultMaxConnections()},
		{"MaxCallEntries", &c.MaxCallEntries, DefaultMaxCallEntries},
		{"MaxHeavyRequests", &c.MaxHeavyRequests, DefaultMaxHeavyRequests},
		{"MaxSnapshotRequests", &c.MaxSnapshotRequests, DefaultMaxSnapshotRequests},
	} {
		if *n.v == 0 {
			*n.v = n.def
		}
		if *n.v < 0 {
			return c, fmt.Errorf("server: Config.%s %d is negative", n.name, *n.v)
		}
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"ReadTimeout", &c.ReadTimeout, DefaultReadTimeout},
		{"AnswerTimeout", &c.AnswerTimeout, DefaultAnswerTimeout},
		{"IdleTimeout", &c.IdleTimeout, DefaultIdleTimeout},
	} {
		if *d.v == 0 {
			*d.v = d.def
		}
		if *d.v < 0 {
			return c, fmt.Errorf("server: Config.%s %v is negative", d.name, *d.v)
		}
	}
	if c.SessionTTL == 0 {
		c.SessionTTL = ha.DefaultSessionTTL
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	// The node's configuration is checked here, before Start writes the
	// node's entry to etcd, not only once the node starts: a bad value
	// (a SessionTTL that is not whole seconds >= 1s, a MaxBatchBytes out
	// of range) leaves etcd untouched.
	if err := c.haConfig(c.Logger).Validate(); err != nil {
		return c, fmt.Errorf("server: %w", err)
	}
	return c, nil
}

// haConfig is the configuration of the node of every generation.
func (c *Config) haConfig(log *slog.Logger) ha.Config {
	return ha.Config{
		Client:        c.Etcd,
		Prefix:        c.Prefix,
		Name:          c.Name,
		SessionTTL:    c.SessionTTL,
		MaxBatchBytes: c.MaxBatchBytes,
		FlushInterval: c.FlushInterval,
		Logger:        log,

		Snapshots:          c.Snapshots,
		SnapshotInterval:   c.SnapshotInterval,
		SnapshotEveryBytes: c.SnapshotEveryBytes,
		SnapshotKeep:       c.SnapshotKeep,
	}
}

// Start starts a server on l (it takes l over and closes it on Close; on
// an error l stays the caller's): a standby master and its node, the
// node's entry in etcd, and the HTTP (or HTTPS, with cfg.TLS) server. ctx
// bounds the start only.
func Start(ctx context.Context, cfg Config, l net.Listener) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	url := cfg.URL
	if url == "" {
		if url, err = listenerURL(l.Addr(), cfg.TLS != nil); err != nil {
			return nil, err
		}
	}
	s := &Server{
		cfg:        cfg,
		log:        cfg.Logger.With("node", cfg.Name),
		url:        url,
		swapped:    make(chan struct{}),
		closing:    make(chan struct{}),
		supDone:    make(chan struct{}),
		regDone:    make(chan struct{}),
		serveDone:  make(chan struct{}),
		lastMaster: make(masterTotals),
		heavy:      make(chan struct{}, cfg.MaxHeavyRequests),
		snapshots:  make(chan struct{}, cfg.MaxSnapshotRequests),
	}
	s.leaders = newLeaderCache(s.leader)
	lease, err := s.register(ctx)
	if err != nil {
		return nil, err
	}
	g, err := s.newGeneration(ctx)
	if err != nil {
		s.revoke(lease)
		return nil, err
	}
	s.cur = g
	go s.keepRegistered(lease)
	go s.supervise()
	// Bounded before TLS, so handshakes count too. At the bound, idle
	// keep-alive connections are closed (idleCloser, the ConnState hook).
	l = netutil.LimitListener(l, cfg.MaxConnections)
	if cfg.TLS != nil {
		l = tls.NewListener(l, cfg.TLS)
	}
	s.l = l
	// No http.Server.WriteTimeout: it would run from the request's start
	// and could cut off an answer that waited for durability, leaving the
	// client no status line (so it would send the call again), or a long
	// answer a client is reading. An answer's stalls are bounded instead
	// (answerWriter).
	s.http = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: min(maxReadHeaderTimeout, cfg.ReadTimeout),
		ReadTimeout:       cfg.ReadTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ConnState:         newIdleCloser(cfg.MaxConnections).track,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		TLSConfig:         cfg.TLS,
	}
	go func() {
		defer close(s.serveDone)
		if err := s.http.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			s.serveErr = err
			s.log.Error("http server failed", "err", err)
		}
	}()
	s.log.Info("server started", "url", url, "prefix", cfg.Prefix)
	return s, nil
}

// listenerURL is the URL of a listener's address.
func listenerURL(a net.Addr, tlsOn bool) (string, error) {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return "", fmt.Errorf("server: the listener's address %v is not TCP: set Config.URL", a)
	}
	if ta.IP == nil || ta.IP.IsUnspecified() {
		return "", fmt.Errorf("server: the listener's address %v is unspecified: set Config.URL (--advertise-url) to the address clients use", a)
	}
	scheme := "http"
	if tlsOn {
		scheme = "https"
	}
	return scheme + "://" + ta.String(), nil
}

// Done is closed when the HTTP server has stopped serving (Close, or a
// listener failure: then Close returns that error).
func (s *Server) Done() <-chan struct{} { return s.serveDone }

// URL is the base URL the server publishes.
func (s *Server) URL() string { return s.url }

// Name is the node's name.
func (s *Server) Name() string { return s.cfg.Name }

// current is the generation serving now.
func (s *Server) current() *generation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// Role is the node's role now.
func (s *Server) Role() ha.Role { return s.current().n.Role() }

// WaitRole returns once the current node has role want or ctx ends.
func (s *Server) WaitRole(ctx context.Context, want ha.Role) error {
	for {
		g := s.current()
		err := g.n.WaitRole(ctx, want)
		if err == nil || ctx.Err() != nil {
			return err
		}
		// That node stopped: wait for its replacement.
		select {
		case <-s.closing:
			return ha.ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		case <-s.replaced(g):
		}
	}
}

// replaced returns a channel closed once g is no longer current.
func (s *Server) replaced(g *generation) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != g {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	return s.swapped
}

// Restarts is how many fresh standby masters the server started after its
// node stepped down.
func (s *Server) Restarts() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

// WaitRestarts returns once Restarts() >= n, or ctx ends.
func (s *Server) WaitRestarts(ctx context.Context, n uint64) error {
	for {
		s.mu.Lock()
		done, ch := s.restarts >= n, s.swapped
		s.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// newGeneration creates a standby master and starts its node.
func (s *Server) newGeneration(ctx context.Context) (*generation, error) {
	m, err := mm.NewWithConfig(s.cfg.Master)
	if err != nil {
		return nil, fmt.Errorf("server: creating the standby master: %w", err)
	}
	n, err := ha.Start(ctx, s.cfg.haConfig(s.log), m)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("server: starting the HA node: %w", err)
	}
	return &generation{m: m, n: n}, nil
}

// supervise replaces a node that stopped on its own (it stepped down)
// with a fresh standby master and node, until Close.
func (s *Server) supervise() {
	defer close(s.supDone)
	for {
		g := s.current()
		select {
		case <-s.closing:
			return
		case <-g.n.Done():
		}
		s.log.Warn("the node stopped; starting a new standby", "err", g.n.Err())
		var next *generation
		for attempt := 0; ; attempt++ {
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.SessionTTL)
			var err error
			next, err = s.newGeneration(ctx)
			cancel()
			if err == nil {
				break
			}
			s.log.Error("restarting the node failed; retrying", "err", err, "attempt", attempt)
			t := time.NewTimer(min(100*time.Millisecond<<min(attempt, 4), 2*time.Second))
			select {
			case <-s.closing:
				t.Stop()
				return
			case <-t.C:
			}
		}
		// The retired master's counters, carried into the metrics (calls
		// still on it may count a little more: the metrics never show
		// less than they did).
		retired, merr := g.m.MetricsPrometheus()
		if merr != nil {
			s.log.Warn("reading the retired master's metrics failed; its counts are not carried", "err", merr)
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			next.n.Close()
			next.m.Close()
			return
		}
		s.retireTotals(retired)
		s.cur = next
		s.restarts++
		st := g.n.Snapshots()
		s.prevGens.snapshots += st.Published
		s.prevGens.loadFailures += st.LoadFailures
		s.prevGens.shipped += g.n.ShippedBytes()
		close(s.swapped)
		s.swapped = make(chan struct{})
		s.mu.Unlock()
		// Calls still on the old master finish first (Close waits for
		// them); none is acknowledged, since its node has stopped.
		g.m.Close()
	}
}

// register publishes the node's URL under a new lease of the session TTL.
func (s *Server) register(ctx context.Context) (clientv3.LeaseID, error) {
	// A whole number of seconds >= 1 (withDefaults checked it).
	lease, err := s.cfg.Etcd.Grant(ctx, int64(s.cfg.SessionTTL/time.Second))
	if err != nil {
		return 0, fmt.Errorf("server: etcd lease for the node entry: %w", err)
	}
	info, _ := json.Marshal(api.NodeInfo{Name: s.cfg.Name, URL: s.url})
	key := api.NodeKey(s.cfg.Prefix, s.cfg.Name)
	prev, err := s.cfg.Etcd.Put(ctx, key, string(info), clientv3.WithLease(lease.ID), clientv3.WithPrevKV())
	if err != nil {
		s.revoke(lease.ID)
		return 0, fmt.Errorf("server: publishing %s: %w", key, err)
	}
	if prev.PrevKv != nil && string(prev.PrevKv.Value) != string(info) {
		s.log.Warn("replaced another entry under this node's name (a restart, or two nodes share a name)",
			"key", key, "previous", string(prev.PrevKv.Value))
	}
	return lease.ID, nil
}

// keepRegistered keeps the node's entry alive, publishing it again under a
// new lease when the lease is lost (etcd unreachable past the TTL), and
// revokes it on Close.
func (s *Server) keepRegistered(lease clientv3.LeaseID) {
	defer close(s.regDone)
	for attempt := 0; ; {
		if lease != 0 {
			kctx, cancel := context.WithCancel(context.Background())
			ka, err := s.cfg.Etcd.KeepAlive(kctx, lease)
			if err == nil {
				attempt = 0
				for open := true; open; {
					select {
					case <-s.closing:
						cancel()
						s.revoke(lease)
						return
					case _, open = <-ka:
					}
				}
			}
			cancel()
			s.log.Warn("the node entry's lease was lost; publishing it again", "err", err)
			lease = 0
		}
		t := time.NewTimer(min(100*time.Millisecond<<min(attempt, 4), 2*time.Second))
		select {
		case <-s.closing:
			t.Stop()
			return
		case <-t.C:
		}
		attempt++
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.SessionTTL)
		l, err := s.register(ctx)
		cancel()
		if err != nil {
			s.log.Warn("publishing the node entry failed; retrying", "err", err)
			continue
		}
		lease = l
	}
}

// revoke revokes lease, waiting up to a session TTL (at least a second:
// a clean-up never runs with a deadline already past).
func (s *Server) revoke(lease clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(), max(s.cfg.SessionTTL, time.Second))
	defer cancel()
	if _, err := s.cfg.Etcd.Revoke(ctx, lease); err != nil {
		s.log.Warn("revoking the node entry's lease failed (it expires instead)", "err", err)
	}
}

// Close stops the server gracefully: the HTTP server stops taking requests
// and finishes those in flight (bounded by ctx; then their connections are
// closed), the node stops (a leader ships what its journal holds and
// resigns, so a standby takes over at once), the node's entry is removed
// from etcd and the master is freed. It returns the node's error, if any.
// Idempotent.
func (s *Server) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		if err := s.http.Shutdown(ctx); err != nil {
			s.log.Warn("http shutdown cut short; closing connections", "err", err)
			s.http.Close()
		}
		<-s.serveDone
		s.mu.Lock()
		s.closed = true
		g := s.cur
		s.mu.Unlock()
		close(s.closing)
		<-s.supDone
		s.closeErr = g.n.Close()
		<-s.regDone
		g.m.Close()
		s.log.Info("server stopped", "err", s.closeErr)
		if s.closeErr == nil {
			s.closeErr = s.serveErr
		}
	})
	return s.closeErr
}
