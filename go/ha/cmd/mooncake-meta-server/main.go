// Command mooncake-meta-server is the reference server of the HA module: a
// Mooncake metadata master that starts as a standby, follows the cluster's
// journal in etcd, campaigns, and once elected serves the JSON API of
// package server/api on HTTP (or HTTPS), acknowledging every call only
// once its change is durable in etcd. Run it with -h for the flags.
//
// It logs JSON lines (log/slog) to stderr. SIGTERM or SIGINT stops it
// gracefully: requests in flight finish, a leader ships what its journal
// holds and resigns (a standby takes over at once), its etcd entries go.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
	"github.com/kvcache-ai/libmooncake_meta/go/ha"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// DefaultJournalCapacityBytes is the journal's default size: 256 MiB. The
// journal holds what is not in etcd yet. A put (Start + End) records about
// 190 bytes (bench/README.md, "Journal and standby results" and "High
// availability"), so 256 MiB holds over 10^6 puts: a whole default session TTL (10 s) of etcd stall
// at 100 000 puts/s, far above what one HTTP server answers. Records a
// journal that overran dropped are covered by a snapshot before they are
// acknowledged (a full snapshot per overrun), so size it for the stalls to
// ride out.
const DefaultJournalCapacityBytes = 256 << 20

type options struct {
	listen, advertise             string
	etcdEndpoints, prefix, name   string
	etcdDialTimeout               time.Duration
	sessionTTL                    time.Duration
	maxBatchBytes                 int
	journalBytes                  uint64
	leaseTTL, defaultPin, maxPin  time.Duration
	maxGroupTTL                   time.Duration
	maxGroups, shards, expected   uint64
	commitPresized                bool
	tlsCert, tlsKey, tlsCA        string
	etcdCert, etcdKey, etcdCA     string
	maxRequestBytes               int64
	writeTimeout, shutdownTimeout time.Duration
	readTimeout, answerTimeout    time.Duration
	idleTimeout                   time.Duration
	maxConnections, maxEntries    int
	maxHeavy, maxSnapshotCalls    int
	logLevel                      string
	dataDir, snapshotDir          string
	snapshotInterval              time.Duration
	snapshotEveryBytes            int64
	snapshotKeep                  int
}

// connectionLimitRule states server.MaxConnectionsLimit(), the most
// --max-connections takes.
const connectionLimitRule = "the RLIMIT_NOFILE soft limit (Go raises it at start to the hard limit less one, when it is lower) " +
	"less the file descriptors kept for etcd and snapshot files: 256, or half the limit when it is 512 or less"

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	def := mm.DefaultConfig()
	host, _ := os.Hostname()
	o := &options{}
	fs := flag.NewFlagSet("mooncake-meta-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.listen, "listen", "127.0.0.1:7480", "HTTP listen address (loopback unless told otherwise)")
	fs.StringVar(&o.advertise, "advertise-url", "", "base URL clients reach this node at, published in etcd (default: from --listen; required when it listens on all addresses)")
	fs.StringVar(&o.etcdEndpoints, "etcd-endpoints", "127.0.0.1:2379", "etcd endpoints, comma-separated")
	fs.DurationVar(&o.etcdDialTimeout, "etcd-dial-timeout", 5*time.Second, "timeout of the first etcd connection")
	fs.StringVar(&o.prefix, "cluster-prefix", "/mooncake/meta", "etcd prefix naming the cluster (the same on every node)")
	fs.StringVar(&o.name, "node-name", "", "this node's name, unique in the cluster (default: <hostname>:<listen port>)")
	fs.DurationVar(&o.sessionTTL, "session-ttl", ha.DefaultSessionTTL, "etcd session TTL, whole seconds >= 1s: a leader that stops refreshing it is deposed after it")
	fs.IntVar(&o.maxBatchBytes, "max-batch-bytes", ha.DefaultMaxBatchBytes, fmt.Sprintf("largest journal batch (one etcd transaction), in [%d, %d] (%d KiB to %d MiB): "+
		"etcd's --max-request-bytes must exceed it by 4 KiB (etcd's default, 1.5 MiB, fits the default); the etcd client's send limit is raised to fit it",
		ha.MinMaxBatchBytes, ha.MaxMaxBatchBytes, ha.MinMaxBatchBytes>>10, ha.MaxMaxBatchBytes>>20))
	fs.Uint64Var(&o.journalBytes, "journal-capacity-bytes", DefaultJournalCapacityBytes, "journal capacity: what is not in etcd yet (256 MiB: over 10^6 puts at ~175 B each)")
	fs.DurationVar(&o.leaseTTL, "lease-ttl", def.KVLeaseTTL, "read lease granted by get and exist")
	fs.DurationVar(&o.defaultPin, "default-soft-pin-ttl", def.DefaultSoftPinTTL, "soft-pin TTL of an ENABLE without ttl_ms")
	fs.DurationVar(&o.maxPin, "max-soft-pin-ttl", def.MaxSoftPinTTL, "largest soft-pin TTL a write may ask for")
	fs.DurationVar(&o.maxGroupTTL, "max-group-retention-ttl", def.MaxGroupRetentionTTL, "largest group retention TTL")
	fs.Uint64Var(&o.maxGroups, "max-retained-groups", def.MaxRetainedGroups, "groups retained at once, at most")
	fs.Uint64Var(&o.shards, "shard-count", def.ShardCount, "metadata shards, in [1, 2^20]")
	fs.Uint64Var(&o.expected, "expected-objects", def.ExpectedObjects, "objects to pre-size the tables for (0: no presizing)")
	fs.BoolVar(&o.commitPresized, "commit-presized", def.CommitPresized, "with --expected-objects: allocate the presized tables at start, resident, on huge pages where the system gives them")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "server certificate (PEM) for HTTPS; with --tls-key")
	fs.StringVar(&o.tlsKey, "tls-key", "", "server private key (PEM)")
	fs.StringVar(&o.tlsCA, "tls-client-ca", "", "CA bundle (PEM): clients must present a certificate it signed")
	fs.StringVar(&o.etcdCert, "etcd-cert", "", "client certificate (PEM) for etcd; with --etcd-key")
	fs.StringVar(&o.etcdKey, "etcd-key", "", "client private key (PEM) for etcd")
	fs.StringVar(&o.etcdCA, "etcd-ca", "", "CA bundle (PEM) that signed etcd's server certificate (turns on TLS to etcd)")
	fs.Int64Var(&o.maxRequestBytes, "max-request-bytes", server.DefaultMaxRequestBytes, "largest request body; more is 413")
	fs.DurationVar(&o.writeTimeout, "write-timeout", server.DefaultWriteTimeout, "how long a call waits for its change to be durable before 503 NOT_DURABLE")
	fs.DurationVar(&o.readTimeout, "read-timeout", server.DefaultReadTimeout, "how long a request, header and body, may take to arrive; past it 400 and the connection closed")
	fs.DurationVar(&o.answerTimeout, "answer-timeout", server.DefaultAnswerTimeout, "how long sending an answer may stall (each 64 KiB of it must be taken within it); past it the connection is closed")
	fs.DurationVar(&o.idleTimeout, "idle-timeout", server.DefaultIdleTimeout, "how long a keep-alive connection may wait for its next request")
	fs.IntVar(&o.maxConnections, "max-connections", server.DefaultMaxConnections(), fmt.Sprintf("client connections open at once, at most; at it, idle keep-alive connections are closed, and new ones wait, unaccepted, until one closes "+
		"(min(4096, L) by default, at most L: %d here; L is %s)", server.MaxConnectionsLimit(), connectionLimitRule))
	fs.IntVar(&o.maxEntries, "max-call-entries", server.DefaultMaxCallEntries, "entries of one list in a request (the groups of a retain or release, a Start's preferred_segments), at most; more is 400 INVALID_PARAMS")
	fs.IntVar(&o.maxHeavy, "max-heavy-requests", server.DefaultMaxHeavyRequests, "/v1/groups/retain and /v1/groups/release calls served at once, at most; more is 429 TOO_MANY_REQUESTS")
	fs.IntVar(&o.maxSnapshotCalls, "max-snapshot-requests", server.DefaultMaxSnapshotRequests, "/v1/snapshot calls served at once (each holds the master's whole snapshot), at most; more is 429 TOO_MANY_REQUESTS")
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long a graceful shutdown waits for requests in flight")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&o.dataDir, "data-dir", "mooncake-meta-data", "directory of the node's files (created if absent)")
	fs.StringVar(&o.snapshotDir, "snapshot-dir", "", "snapshot store: a directory every node of the cluster reaches (the same path on one machine, or a shared filesystem); a node that does not find the cluster's published snapshot in it refuses to start (default: <data-dir>/snapshots, so nodes on several hosts need it on a shared filesystem)")
	fs.DurationVar(&o.snapshotInterval, "snapshot-interval", ha.DefaultSnapshotInterval, "longest time between two snapshots of the leader while the journal grows")
	fs.Int64Var(&o.snapshotEveryBytes, "snapshot-every-bytes", ha.DefaultSnapshotEveryBytes, "journal bytes shipped between two snapshots, at most: bounds the journal held in etcd")
	fs.IntVar(&o.snapshotKeep, "snapshot-keep", ha.DefaultSnapshotKeep, "snapshots kept in the store, the published one included")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() != 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	_, port, err := net.SplitHostPort(o.listen)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: %w", o.listen, err)
	}
	if o.name == "" {
		if host == "" {
			return nil, errors.New("--node-name is required: the hostname is unknown")
		}
		o.name = host + ":" + port
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	if o.tlsCA != "" && o.tlsCert == "" {
		return nil, errors.New("--tls-client-ca needs --tls-cert and --tls-key")
	}
	if (o.etcdCert == "") != (o.etcdKey == "") {
		return nil, errors.New("--etcd-cert and --etcd-key go together")
	}
	// Checked here, before any etcd call, and an explicit 0 is refused:
	// the library's zero-means-default would silently replace it.
	if o.sessionTTL < time.Second || o.sessionTTL%time.Second != 0 {
		return nil, fmt.Errorf("--session-ttl %v must be a whole number of seconds >= 1s (etcd counts leases in seconds)", o.sessionTTL)
	}
	if o.maxBatchBytes < ha.MinMaxBatchBytes || o.maxBatchBytes > ha.MaxMaxBatchBytes {
		return nil, fmt.Errorf("--max-batch-bytes %d must be in [%d, %d] (%d KiB to %d MiB)", o.maxBatchBytes,
			ha.MinMaxBatchBytes, ha.MaxMaxBatchBytes, ha.MinMaxBatchBytes>>10, ha.MaxMaxBatchBytes>>20)
	}
	if o.maxRequestBytes <= 0 {
		return nil, fmt.Errorf("--max-request-bytes %d must be > 0", o.maxRequestBytes)
	}
	if o.writeTimeout <= 0 || o.shutdownTimeout <= 0 || o.etcdDialTimeout <= 0 {
		return nil, errors.New("--write-timeout, --shutdown-timeout and --etcd-dial-timeout must be > 0")
	}
	if o.readTimeout <= 0 || o.answerTimeout <= 0 || o.idleTimeout <= 0 {
		return nil, errors.New("--read-timeout, --answer-timeout and --idle-timeout must be > 0")
	}
	if limit := server.MaxConnectionsLimit(); o.maxConnections < 1 || o.maxConnections > limit {
		return nil, fmt.Errorf("--max-connections %d must be in [1, %d]: %s (raise the hard limit for more: ulimit -Hn, systemd's LimitNOFILE=)",
			o.maxConnections, limit, connectionLimitRule)
	}
	if o.maxEntries < 1 {
		return nil, fmt.Errorf("--max-call-entries %d must be >= 1", o.maxEntries)
	}
	if o.maxHeavy < 1 {
		return nil, fmt.Errorf("--max-heavy-requests %d must be >= 1", o.maxHeavy)
	}
	if o.maxSnapshotCalls < 1 {
		return nil, fmt.Errorf("--max-snapshot-requests %d must be >= 1", o.maxSnapshotCalls)
	}
	if o.snapshotInterval <= 0 || o.snapshotEveryBytes <= 0 || o.snapshotKeep <= 0 {
		return nil, errors.New("--snapshot-interval, --snapshot-every-bytes and --snapshot-keep must be > 0")
	}
	if o.snapshotDir == "" {
		if o.dataDir == "" {
			return nil, errors.New("--data-dir or --snapshot-dir is required")
		}
		o.snapshotDir = filepath.Join(o.dataDir, "snapshots")
	}
	if o.journalBytes == 0 {
		return nil, errors.New("--journal-capacity-bytes must be > 0: an HA node ships its master's journal")
	}
	return o, nil
}

func (o *options) masterConfig() (mm.Config, error) {
	c := mm.DefaultConfig()
	c.KVLeaseTTL = o.leaseTTL
	c.DefaultSoftPinTTL = o.defaultPin
	c.MaxSoftPinTTL = o.maxPin
	c.MaxGroupRetentionTTL = o.maxGroupTTL
	c.MaxRetainedGroups = o.maxGroups
	c.ShardCount = o.shards
	c.ExpectedObjects = o.expected
	c.CommitPresized = o.commitPresized
	c.JournalCapacityBytes = o.journalBytes
	c.Standby = true
	return c, c.Validate()
}

// loadPool reads a PEM CA bundle.
func loadPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

func (o *options) serverTLS() (*tls.Config, error) {
	if o.tlsCert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	c := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if o.tlsCA != "" {
		pool, err := loadPool(o.tlsCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-client-ca: %w", err)
		}
		c.ClientCAs = pool
		c.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return c, nil
}

func (o *options) etcdTLS() (*tls.Config, error) {
	if o.etcdCA == "" && o.etcdCert == "" {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.etcdCA != "" {
		pool, err := loadPool(o.etcdCA)
		if err != nil {
			return nil, fmt.Errorf("--etcd-ca: %w", err)
		}
		c.RootCAs = pool
	}
	if o.etcdCert != "" {
		cert, err := tls.LoadX509KeyPair(o.etcdCert, o.etcdKey)
		if err != nil {
			return nil, fmt.Errorf("--etcd-cert/--etcd-key: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// etcdSendHeadroom is what an etcd call adds to the journal batch it
// carries (the key, the fence's comparisons, gRPC framing), with room to
// spare.
const etcdSendHeadroom = 1 << 20

// etcdConfig is the etcd client's configuration. The client refuses to
// send a call above MaxCallSendMsgSize (2 MiB by default), so the limit is
// raised to fit a journal batch of --max-batch-bytes: a larger batch
// would fail on the client and make the leader step down. The receive
// limit stays the client's default (math.MaxInt32), which reads any batch
// back.
func (o *options) etcdConfig(tlsCfg *tls.Config) (clientv3.Config, error) {
	var eps []string
	for _, e := range strings.Split(o.etcdEndpoints, ",") {
		if e = strings.TrimSpace(e); e != "" {
			eps = append(eps, e)
		}
	}
	if len(eps) == 0 {
		return clientv3.Config{}, fmt.Errorf("--etcd-endpoints %q names no endpoint", o.etcdEndpoints)
	}
	return clientv3.Config{
		Endpoints:          eps,
		DialTimeout:        o.etcdDialTimeout,
		TLS:                tlsCfg,
		Logger:             zap.NewNop(),
		MaxCallSendMsgSize: max(2<<20, o.maxBatchBytes+etcdSendHeadroom),
	}, nil
}

// checkSnapshotDir refuses to start a node whose snapshot directory cannot
// open the snapshot the cluster published (ha.CheckPublishedSnapshot; the
// record names a file of the leader's --snapshot-dir). Such a node could
// not restore the cluster's state once the journal it covers was
// collected: it would stay a standby that never campaigns.
func checkSnapshotDir(ctx context.Context, cli *clientv3.Client, prefix string, store *ha.DirStore) error {
	err := ha.CheckPublishedSnapshot(ctx, cli, prefix, store)
	if errors.Is(err, ha.ErrSnapshot) {
		return fmt.Errorf("--snapshot-dir %q: %w; when the published snapshot cannot be opened, the likely cause is that every node of a cluster "+
			"must use the same snapshot directory (one machine, or a shared filesystem), or this node cannot restore the cluster's state and never leads", store.Dir(), err)
	}
	return err
}

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "mooncake-meta-server:", err)
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		fmt.Fprintf(stderr, "mooncake-meta-server: --log-level %q: %v\n", o.logLevel, err)
		return 2
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	if err := serve(o, log); err != nil {
		log.Error("mooncake-meta-server failed", "err", err)
		return 1
	}
	return 0
}

func serve(o *options, log *slog.Logger) error {
	mcfg, err := o.masterConfig()
	if err != nil {
		return err
	}
	srvTLS, err := o.serverTLS()
	if err != nil {
		return err
	}
	etcdTLS, err := o.etcdTLS()
	if err != nil {
		return err
	}
	ecfg, err := o.etcdConfig(etcdTLS)
	if err != nil {
		return err
	}
	cli, err := clientv3.New(ecfg)
	if err != nil {
		return fmt.Errorf("etcd client: %w", err)
	}
	defer cli.Close()
	store, err := ha.NewDirStore(o.snapshotDir)
	if err != nil {
		return fmt.Errorf("--snapshot-dir %q: %w", o.snapshotDir, err)
	}
	// The check and the start each get the time of a first etcd
	// connection and a session TTL.
	startBudget := o.etcdDialTimeout + o.sessionTTL
	cctx, ccancel := context.WithTimeout(context.Background(), startBudget)
	err = checkSnapshotDir(cctx, cli, o.prefix, store)
	ccancel()
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), startBudget)
	srv, err := server.Start(ctx, server.Config{
		Etcd: cli, Prefix: o.prefix, Name: o.name, URL: o.advertise,
		SessionTTL: o.sessionTTL, MaxBatchBytes: o.maxBatchBytes,
		Master: mcfg, TLS: srvTLS,
		MaxRequestBytes: o.maxRequestBytes, WriteTimeout: o.writeTimeout,
		ReadTimeout: o.readTimeout, AnswerTimeout: o.answerTimeout, IdleTimeout: o.idleTimeout,
		MaxConnections: o.maxConnections, MaxCallEntries: o.maxEntries,
		MaxHeavyRequests: o.maxHeavy, MaxSnapshotRequests: o.maxSnapshotCalls,
		Logger:    log,
		Snapshots: store, SnapshotInterval: o.snapshotInterval,
		SnapshotEveryBytes: o.snapshotEveryBytes, SnapshotKeep: o.snapshotKeep,
	}, l)
	cancel()
	if err != nil {
		l.Close()
		return err
	}
	log.Info("mooncake-meta-server listening", "listen", l.Addr().String(), "url", srv.URL(), "name", o.name,
		"etcd", ecfg.Endpoints, "prefix", o.prefix, "snapshot_dir", o.snapshotDir, "library", mm.Version())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	select {
	case sig := <-sigs:
		log.Info("shutting down", "signal", sig.String())
	case <-srv.Done():
		log.Error("the HTTP server stopped; shutting down")
	}
	signal.Stop(sigs)
	sctx, scancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
	defer scancel()
	return srv.Close(sctx)
}
