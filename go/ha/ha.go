// Package ha makes a mooncakemeta master highly available on etcd: leader
// election, fenced journal shipping with group commit, and standbys that
// apply the journal and are promoted when the leader is gone
// (docs/CONTRACT.md §12 describes the journal, standby mode and promote).
//
// Every node starts with a standby master (Config.Standby and
// Config.JournalCapacityBytes > 0) and campaigns under <Prefix>/leader
// while it applies the batches under <Prefix>/journal/. The elected node
// applies every batch committed before its election, promotes its master
// and ships the master's journal: each batch (at most MaxBatchBytes, 1 MiB
// by default, under etcd's 1.5 MiB request limit) is one transaction that
// stores <Prefix>/journal/<first sequence, 20 digits> only if the
// leader's election key still has the create revision it was elected
// with. A deposed leader's write therefore fails; it steps down and
// acknowledges nothing more. A call that stores nothing (a read) is
// acknowledged on the leader's lease instead: the leader renews its
// session's lease itself and counts on it, on its monotonic clock, until
// a TTL less a tenth after it sent the last renewal etcd answered (etcd
// elects no other node before the lease expired there); once it can no
// longer count on it, it acknowledges nothing more and steps down. A
// server serves a call, read or write, and answers the client only once
// Sync (or WaitDurable for the call's records) returned nil.
//
// With a snapshot store (Config.Snapshots; DirStore, a directory every
// node reaches, is the default one) the leader takes a snapshot every
// SnapshotInterval or SnapshotEveryBytes of journal shipped, writes it to
// the store, reads it back, publishes {seq, location, checksum, size,
// created} under <Prefix>/snapshot in a transaction fenced like the
// batches, deletes the batches it covers (fenced too) and compacts etcd's
// revision history, so etcd holds about one snapshot interval of journal.
// A node starting, missing batches that were collected, or whose batches
// end below the published snapshot (it may hold records not yet shipped),
// restores the published snapshot (its checksum checked; a node that
// cannot load it stays a standby that retries and never campaigns) and
// applies the journal after it: a node is never promoted below it.
// Records the leader cannot ship — dropped by a full journal, or larger
// than MaxBatchBytes — are covered by a snapshot instead: WaitDurable
// acknowledges them once it is published.
//
// A master that led and stepped down holds changes no one acknowledged
// and cannot follow again: the process starts a new standby master and a
// new node. Without a store, a journal record larger than MaxBatchBytes,
// or a journal that overran, makes the leader step down too.
package ha

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	mooncakemeta "github.com/kvcache-ai/libmooncake_meta/go"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/internal/engine"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Config configures a node: the etcd client, the cluster prefix, the
// node's name, the session TTL, the batch limit, the flush interval and a
// logger. See the fields' documentation: a zero SessionTTL,
// MaxBatchBytes, FlushInterval or snapshot setting takes its default.
// Config.Validate checks one as Start does, without touching etcd.
type Config = engine.Config

// Role is what a node is doing: RoleFollower, RolePromoting, RoleLeader or
// RoleStopped.
type Role = engine.Role

// The roles.
const (
	RoleFollower  = engine.RoleFollower
	RolePromoting = engine.RolePromoting
	RoleLeader    = engine.RoleLeader
	RoleStopped   = engine.RoleStopped
)

// Defaults and limits of Config.
const (
	DefaultSessionTTL    = engine.DefaultSessionTTL
	DefaultMaxBatchBytes = engine.DefaultMaxBatchBytes
	DefaultFlushInterval = engine.DefaultFlushInterval
	MinMaxBatchBytes     = engine.MinMaxBatchBytes
	MaxMaxBatchBytes     = engine.MaxMaxBatchBytes

	DefaultSnapshotInterval   = engine.DefaultSnapshotInterval
	DefaultSnapshotEveryBytes = engine.DefaultSnapshotEveryBytes
	DefaultSnapshotKeep       = engine.DefaultSnapshotKeep
)

// SnapshotStore is where a leader writes snapshots and every node reads
// the latest one from (Config.Snapshots); DirStore is the default one.
type SnapshotStore = engine.SnapshotStore

// StoredSnapshot is one entry of SnapshotStore.List.
type StoredSnapshot = engine.StoredSnapshot

// DirStore keeps snapshots as files in a directory every node reaches.
type DirStore = engine.DirStore

// NewDirStore opens (creating it if needed) a snapshot directory.
func NewDirStore(dir string) (*DirStore, error) { return engine.NewDirStore(dir) }

// CheckPublishedSnapshot checks that store can open the snapshot the
// cluster under prefix published, as a node must to start from it (check
// before Start that a node's store is the cluster's): the record parses
// as a node reads it and the store has a snapshot of its size at its
// location. nil when none was published; an error wrapping ErrSnapshot
// when it cannot be opened (or the record does not parse); etcd's error.
// The checksum is not checked.
func CheckPublishedSnapshot(ctx context.Context, cli *clientv3.Client, prefix string, store SnapshotStore) error {
	return engine.CheckPublishedSnapshot(ctx, cli, prefix, store)
}

// SnapshotRecord is the JSON value of SnapshotKey: the latest published
// snapshot (seq, location, checksum, size, created, node).
type SnapshotRecord = engine.SnapshotRecord

// SnapshotStats are a node's snapshot figures (Node.Snapshots).
type SnapshotStats = engine.SnapshotStats

// SnapshotKey is the etcd key of a cluster's snapshot record.
func SnapshotKey(prefix string) string { return engine.SnapshotKey(prefix) }

// JournalPrefix is the etcd prefix of a cluster's journal batches.
func JournalPrefix(prefix string) string { return engine.JournalPrefix(prefix) }

// The errors, matched with errors.Is.
var (
	ErrInvalidConfig  = engine.ErrInvalidConfig
	ErrNotStandby     = engine.ErrNotStandby
	ErrNotLeader      = engine.ErrNotLeader
	ErrFenced         = engine.ErrFenced
	ErrRecordTooLarge = engine.ErrRecordTooLarge
	ErrConflict       = engine.ErrConflict
	ErrJournal        = engine.ErrJournal
	ErrSnapshot       = engine.ErrSnapshot
	ErrClosed         = engine.ErrClosed
)

// Node is one member of a cluster. Its methods may be called from any
// number of goroutines.
type Node struct {
	n *engine.Node
}

// Start checks cfg and m (a standby with a journal) and starts the node as
// a follower that catches up from etcd and campaigns in the background.
// ctx bounds only the checks. The node uses m until Close; close m after
// the node.
func Start(ctx context.Context, cfg Config, m *mooncakemeta.Master) (*Node, error) {
	if m == nil {
		return nil, errors.New("ha: Start: the master is nil")
	}
	n, err := engine.Start(ctx, cfg, masterJournal{m})
	if err != nil {
		return nil, err
	}
	return &Node{n: n}, nil
}

// Role is the node's role now.
func (n *Node) Role() Role { return n.n.Role() }

// Err is why the node stopped: nil while it runs and after a clean Close.
func (n *Node) Err() error { return n.n.Err() }

// Done is closed when the node has stopped (Close, or it stepped down) and
// given up its election key and lease.
func (n *Node) Done() <-chan struct{} { return n.n.Done() }

// AppliedSeq is the last journal sequence the master applied from etcd.
func (n *Node) AppliedSeq() uint64 { return n.n.AppliedSeq() }

// DurableSeq is the sequence up to which every record is in etcd, or
// covered by a published snapshot.
func (n *Node) DurableSeq() uint64 { return n.n.DurableSeq() }

// ShippedBytes is how many journal bytes this node stored in etcd while
// leading.
func (n *Node) ShippedBytes() uint64 { return n.n.ShippedBytes() }

// Snapshots returns the node's snapshot figures: the latest snapshot it
// published or restored, how many it published, how far it collected the
// journal.
func (n *Node) Snapshots() SnapshotStats { return n.n.Snapshots() }

// WaitRole returns when the node has role want, ctx ends, or the node
// stops first (why it stopped; nil when want is RoleStopped).
func (n *Node) WaitRole(ctx context.Context, want Role) error { return n.n.WaitRole(ctx, want) }

// WaitApplied returns when the master has applied every record up to seq
// from etcd, ctx ends, or the node stops first.
func (n *Node) WaitApplied(ctx context.Context, seq uint64) error {
	return n.n.WaitApplied(ctx, seq)
}

// WaitDurable returns nil once every journal record up to seq is in etcd
// (a standby promoted later has the change) and the node is known to have
// led at some moment since the call began (its lease had not run out, or
// a write it stored since proves it). It fails with ErrNotLeader on a node
// that does not lead, with ErrFenced once the node's lease ran out, and
// with the node's error (ErrFenced, ...) once the node stepped down,
// unless a write it sent after the call began stored seq.
func (n *Node) WaitDurable(ctx context.Context, seq uint64) error {
	return n.n.WaitDurable(ctx, seq)
}

// Sync is WaitDurable for every change the master recorded before the
// call (its journal's last sequence): call it after a write, or a read,
// and before answering the client.
func (n *Node) Sync(ctx context.Context) error { return n.n.Sync(ctx) }

// Snapshot takes a snapshot of the leader's master now, writes it to
// Config.Snapshots, publishes its record under SnapshotKey and deletes the
// journal batches it covers from etcd (then compacts etcd's history), as
// the leader does every SnapshotInterval or SnapshotEveryBytes; it returns
// the published sequence. ErrNotLeader on a node that does not lead,
// ErrSnapshot without a store, when it cannot be written, or when ctx
// ends before it is published (the node still leads), ErrFenced when
// leadership was lost.
func (n *Node) Snapshot(ctx context.Context) (uint64, error) { return n.n.Snapshot(ctx) }

// WaitSnapshots returns when cond holds of the node's snapshot figures
// (cond must not call the node), ctx ends, or the node stops first.
func (n *Node) WaitSnapshots(ctx context.Context, cond func(SnapshotStats) bool) error {
	return n.n.WaitSnapshots(ctx, cond)
}

// Close stops the node: a leader ships what its journal holds and resigns
// (a standby takes over at once), a follower withdraws. A leader gives up
// shipping a SessionTTL after Close was called (etcd keeps its lease but
// does not store its writes): it logs how many records it left, none of
// them acknowledged, resigns, and Close returns an error wrapping
// ErrClosed that counts them. Idempotent; it returns the error the node
// stopped with, if any.
func (n *Node) Close() error { return n.n.Close() }

// Leader returns the name (Config.Name) of the cluster's leader and
// whether there is one.
func Leader(ctx context.Context, cli *clientv3.Client, prefix string) (string, bool, error) {
	return engine.Leader(ctx, cli, prefix)
}

// JournalKey is the etcd key of the batch whose first record is seq.
func JournalKey(prefix string, seq uint64) string { return engine.JournalKey(prefix, seq) }

// masterJournal adapts a Master to the engine's Journal.
type masterJournal struct{ m *mooncakemeta.Master }

func (a masterJournal) ReadBatch(from uint64, buf []byte) (int, uint64, int, error) {
	n, next, need, err := a.m.JournalRead(from, buf)
	if errors.Is(err, mooncakemeta.ErrJournalOverrun) {
		err = fmt.Errorf("%w: %w", engine.ErrOverrun, err)
	}
	return n, next, need, err
}

func (a masterJournal) Snapshot() ([]byte, uint64, error) {
	b, err := a.m.Snapshot()
	if err != nil {
		return nil, 0, err
	}
	seq, err := mooncakemeta.SnapshotJournalSeq(b)
	return b, seq, err
}

func (a masterJournal) Restore(data []byte) (uint64, error) {
	if _, err := a.m.Restore(data); err != nil {
		return 0, err
	}
	_, applied, err := a.m.StandbyState()
	if err != nil {
		return 0, err
	}
	// The restore recorded a reset in the standby's own journal: release
	// it, as Apply does what it records.
	st, err := a.m.JournalStats()
	if err != nil {
		return applied, err
	}
	if upto := min(applied, st.LastSeq); upto > st.ReleasedUpto {
		if _, err := a.m.JournalRelease(upto); err != nil {
			return applied, err
		}
	}
	return applied, nil
}

// BatchLast reads a journal batch's header (docs/CONTRACT.md §12.2: 8
// bytes of magic, version and flags u32, first sequence u64, record count
// u32, ...): its last sequence is first + count - 1.
func (a masterJournal) BatchLast(batch []byte) (uint64, error) {
	if len(batch) < 40 || string(batch[:8]) != "\x89MCJRNL\n" {
		return 0, fmt.Errorf("not a journal batch (%d bytes)", len(batch))
	}
	first := binary.LittleEndian.Uint64(batch[16:])
	count := uint64(binary.LittleEndian.Uint32(batch[24:]))
	if first == 0 || count == 0 || first+count-1 < first {
		return 0, fmt.Errorf("journal batch header: first sequence %d, %d records", first, count)
	}
	return first + count - 1, nil
}

func (a masterJournal) Release(upto uint64) error {
	_, err := a.m.JournalRelease(upto)
	return err
}

func (a masterJournal) LastSeq() (uint64, error) {
	st, err := a.m.JournalStats()
	return st.LastSeq, err
}

func (a masterJournal) Apply(batch []byte) (uint64, error) {
	r, err := a.m.ApplyJournal(batch)
	if err != nil {
		// The records before a refused one stay applied.
		if _, applied, serr := a.m.StandbyState(); serr == nil {
			return applied, err
		}
		return 0, err
	}
	// A standby journals what it applies (for a standby of it); nothing
	// here reads that journal, so release it rather than let it fill up
	// and count drops.
	st, err := a.m.JournalStats()
	if err != nil {
		return r.LastSeq, err
	}
	if upto := min(r.LastSeq, st.LastSeq); upto > st.ReleasedUpto {
		if _, err := a.m.JournalRelease(upto); err != nil {
			return r.LastSeq, err
		}
	}
	return r.LastSeq, nil
}

func (a masterJournal) Promote() (uint64, error) {
	r, err := a.m.Promote()
	return r.AppliedSeq, err
}

func (a masterJournal) State() (bool, uint64, uint64, error) {
	standby, applied, err := a.m.StandbyState()
	if err != nil {
		return false, 0, 0, err
	}
	st, err := a.m.JournalStats()
	if err != nil {
		return false, 0, 0, err
	}
	return standby, applied, st.CapacityBytes, nil
}
