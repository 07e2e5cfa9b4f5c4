// Package engine is the etcd side of high availability: leader election,
// fenced journal shipping and the standby follower, over a small Journal
// interface so it is tested without the C library (package ha adapts a
// mooncakemeta.Master to it).
package engine

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Defaults of Config.
const (
	// DefaultSessionTTL is the lease TTL of a node's etcd session: a
	// leader that stops refreshing it is deposed this long after its last
	// refresh.
	DefaultSessionTTL = 10 * time.Second
	// DefaultMaxBatchBytes bounds one journal batch (one etcd value, one
	// transaction): 1 MiB, under etcd's default request limit of 1.5 MiB
	// (--max-request-bytes) with room for the key and the transaction.
	DefaultMaxBatchBytes = 1 << 20
	// DefaultFlushInterval is how often a leader looks for journal records
	// that no WaitDurable asked for (maintenance: expiry, eviction, sweeps).
	DefaultFlushInterval = 10 * time.Millisecond
	// DefaultSnapshotInterval is the longest a leader goes without a
	// snapshot while its journal has new records.
	DefaultSnapshotInterval = 5 * time.Minute
	// DefaultSnapshotEveryBytes is how many journal bytes a leader ships
	// before its next snapshot: 64 MiB keeps etcd's backend far below its
	// default 2 GiB quota (README, "Snapshots and journal GC").
	DefaultSnapshotEveryBytes = 64 << 20
	// DefaultSnapshotKeep is how many snapshots the store keeps, the
	// published one included.
	DefaultSnapshotKeep = 2
)

// Limits of Config.MaxBatchBytes. The upper one is for an etcd whose
// --max-request-bytes was raised, used through a client whose
// MaxCallSendMsgSize was raised: each must exceed MaxBatchBytes by at
// least 4 KiB.
const (
	MinMaxBatchBytes = 4 << 10
	MaxMaxBatchBytes = 64 << 20
)

// Config configures a node. Client, Prefix and Name are required; a zero
// SessionTTL, MaxBatchBytes or FlushInterval takes its default.
type Config struct {
	// Client is the etcd client the node uses (the caller owns it and
	// closes it after Node.Close).
	Client *clientv3.Client
	// Prefix names the cluster: its keys are <Prefix>/leader/... (the
	// election), <Prefix>/journal/<first sequence, 20 digits> (the
	// journal batches) and <Prefix>/snapshot (the latest snapshot's
	// record). Every node of one cluster uses the same prefix; it
	// must not be empty nor end with "/".
	Prefix string
	// Name identifies this node to the others: the value of its election
	// key (a server puts its client address here). Not empty.
	Name string
	// SessionTTL is the TTL of the node's etcd lease, a whole number of
	// seconds >= 1 (etcd counts leases in seconds). A leader renews it
	// every third of a TTL and counts on it until a TTL, less a tenth,
	// after it sent the last renewal etcd answered: until then no other
	// node can be elected, so it acknowledges reads without asking etcd;
	// then it steps down.
	SessionTTL time.Duration
	// MaxBatchBytes bounds one journal batch, in [MinMaxBatchBytes,
	// MaxMaxBatchBytes]. A single journal record larger than this cannot
	// be shipped: a snapshot covers it, or without Snapshots the leader
	// stops with ErrRecordTooLarge. A batch travels in one transaction
	// that adds the keys and the fence (4 KiB is ample for a Prefix
	// under 512 bytes), so both ends must take MaxBatchBytes plus that:
	// etcd's --max-request-bytes (1.5 MiB by default) and Client's
	// clientv3.Config.MaxCallSendMsgSize (2 MiB when zero). A client
	// refuses a larger call itself, the batch is not stored and the
	// leader steps down; Start cannot read the client's limit to check
	// it. The default MaxBatchBytes fits both defaults.
	MaxBatchBytes int
	// FlushInterval is how often a leader ships records nobody waits for
	// (> 0); WaitDurable ships at once.
	FlushInterval time.Duration
	// Logger receives the node's structured log; nil discards it.
	Logger *slog.Logger

	// Snapshots is where the leader writes snapshots and every node reads
	// the latest one from; every node of the cluster must reach the same
	// store. nil: no snapshots and no journal garbage collection (etcd
	// grows until its quota), and a leader whose journal overran steps
	// down.
	Snapshots SnapshotStore
	// SnapshotInterval (> 0): a leader takes a snapshot at most this long
	// after its last one, when records were shipped since.
	SnapshotInterval time.Duration
	// SnapshotEveryBytes (> 0): a leader takes a snapshot once it shipped
	// this many journal bytes since its last one.
	SnapshotEveryBytes int64
	// SnapshotKeep (>= 1) is how many snapshots the store keeps: the
	// published one, the one published before it, then the newest others.
	SnapshotKeep int

	// pageBytes bounds one range read of a catch-up (0: 16 MiB); tests
	// shrink it to page through a small journal.
	pageBytes int
}

// Validate reports whether Start would accept c, without touching etcd:
// nil, or an error wrapping ErrInvalidConfig naming the first bad field.
// Zero fields take their defaults, as in Start.
func (c Config) Validate() error {
	_, err := c.withDefaults()
	return err
}

// withDefaults returns c with the zero fields defaulted, or an error
// naming the first bad field.
func (c Config) withDefaults() (Config, error) {
	if c.Client == nil {
		return c, fmt.Errorf("%w: Config.Client is nil", ErrInvalidConfig)
	}
	if c.Prefix == "" || strings.HasSuffix(c.Prefix, "/") {
		return c, fmt.Errorf("%w: Config.Prefix %q must not be empty nor end with \"/\"", ErrInvalidConfig, c.Prefix)
	}
	if c.Name == "" {
		return c, fmt.Errorf("%w: Config.Name is empty", ErrInvalidConfig)
	}
	if c.SessionTTL == 0 {
		c.SessionTTL = DefaultSessionTTL
	}
	if c.SessionTTL < time.Second || c.SessionTTL%time.Second != 0 {
		return c, fmt.Errorf("%w: Config.SessionTTL %v must be a whole number of seconds >= 1s", ErrInvalidConfig, c.SessionTTL)
	}
	if c.MaxBatchBytes == 0 {
		c.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if c.MaxBatchBytes < MinMaxBatchBytes || c.MaxBatchBytes > MaxMaxBatchBytes {
		return c, fmt.Errorf("%w: Config.MaxBatchBytes %d must be in [%d, %d]", ErrInvalidConfig, c.MaxBatchBytes, MinMaxBatchBytes, MaxMaxBatchBytes)
	}
	if c.FlushInterval == 0 {
		c.FlushInterval = DefaultFlushInterval
	}
	if c.FlushInterval < 0 {
		return c, fmt.Errorf("%w: Config.FlushInterval %v is negative", ErrInvalidConfig, c.FlushInterval)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.SnapshotInterval == 0 {
		c.SnapshotInterval = DefaultSnapshotInterval
	}
	if c.SnapshotInterval < 0 {
		return c, fmt.Errorf("%w: Config.SnapshotInterval %v is negative", ErrInvalidConfig, c.SnapshotInterval)
	}
	if c.SnapshotEveryBytes == 0 {
		c.SnapshotEveryBytes = DefaultSnapshotEveryBytes
	}
	if c.SnapshotEveryBytes < 0 {
		return c, fmt.Errorf("%w: Config.SnapshotEveryBytes %d is negative", ErrInvalidConfig, c.SnapshotEveryBytes)
	}
	if c.SnapshotKeep == 0 {
		c.SnapshotKeep = DefaultSnapshotKeep
	}
	if c.SnapshotKeep < 0 {
		return c, fmt.Errorf("%w: Config.SnapshotKeep %d is negative", ErrInvalidConfig, c.SnapshotKeep)
	}
	if c.pageBytes == 0 {
		c.pageBytes = 16 << 20
	}
	return c, nil
}

// ElectionPrefix is the election's key prefix of a cluster (the leader's
// key is ElectionPrefix(prefix) + "/" + its lease id in hex).
func ElectionPrefix(prefix string) string { return prefix + "/leader" }

// JournalPrefix is the prefix of a cluster's journal batches.
func JournalPrefix(prefix string) string { return prefix + "/journal/" }

// SnapshotKey is the key of a cluster's snapshot record (JSON, see
// SnapshotRecord).
func SnapshotKey(prefix string) string { return prefix + "/snapshot" }

// JournalKey is the key of the batch whose first record is seq: 20
// zero-padded digits, so the keys sort in sequence order.
func JournalKey(prefix string, seq uint64) string {
	return fmt.Sprintf("%s%020d", JournalPrefix(prefix), seq)
}
