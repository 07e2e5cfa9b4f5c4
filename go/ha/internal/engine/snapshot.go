package engine

// Snapshots and journal garbage collection. The leader writes its
// master's snapshot (journal sequence s) to the snapshot store, reads it
// back and checks it, publishes {seq, location, checksum, size, created}
// under <prefix>/snapshot in a transaction fenced like the journal
// batches, then deletes, in another fenced transaction, every batch whose
// records are all at or below s, and compacts etcd's revision history up
// to that delete: etcd then holds the journal after the latest snapshot
// and little history. A node that starts, or finds the batches it needs
// collected, restores the published snapshot and applies the journal
// after it.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// SnapshotRecord is the JSON value of SnapshotKey: the latest published
// snapshot.
type SnapshotRecord struct {
	// Seq is the last journal sequence the snapshot includes.
	Seq uint64 `json:"seq"`
	// Location is where the store keeps it (SnapshotStore.Put's answer).
	Location string `json:"location"`
	// Checksum is the SHA-256 of the bytes, in hex.
	Checksum string `json:"checksum"`
	// Size is the length of the bytes.
	Size int64 `json:"size"`
	// Created is when the leader published it (its wall clock, RFC 3339).
	Created time.Time `json:"created"`
	// Node is the name of the leader that published it.
	Node string `json:"node"`
}

// SnapshotStats are a node's snapshot figures.
type SnapshotStats struct {
	// Seq is the journal sequence of the latest snapshot this node
	// published or restored (0: none).
	Seq uint64
	// Bytes is that snapshot's size.
	Bytes int64
	// Published counts the snapshots this node published.
	Published uint64
	// GCSeq is the sequence up to which this node, leading, collected the
	// journal in etcd (0: never).
	GCSeq uint64
	// LoadFailures counts the snapshots this node could not load
	// (unreadable, a checksum mismatch, refused by the master).
	LoadFailures uint64
}

// snapshotError is a snapshot that could not be loaded: unreadable,
// a checksum mismatch, refused by the master. The node stays a standby
// and tries again (a leader publishes newer ones).
type snapshotError struct {
	rec SnapshotRecord
	err error
}

func (e *snapshotError) Error() string {
	return fmt.Sprintf("ha: snapshot %d at %q: %v", e.rec.Seq, e.rec.Location, e.err)
}
func (e *snapshotError) Unwrap() error { return e.err }

func checksum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// decodeRecord parses a snapshot record's value.
func decodeRecord(v []byte) (SnapshotRecord, error) {
	var r SnapshotRecord
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("%w: the record in etcd does not parse: %w", ErrSnapshot, err)
	}
	if r.Seq == 0 || r.Location == "" || len(r.Checksum) != 64 || r.Size <= 0 {
		return r, fmt.Errorf("%w: the record in etcd is incomplete: %s", ErrSnapshot, v)
	}
	return r, nil
}

// fetchSnapshot reads the record's bytes from the store and checks them
// against it.
func fetchSnapshot(ctx context.Context, store SnapshotStore, rec SnapshotRecord) ([]byte, error) {
	if store == nil {
		return nil, &snapshotError{rec, fmt.Errorf("%w: this node has no snapshot store (Config.Snapshots)", ErrSnapshot)}
	}
	b, err := store.Get(ctx, rec.Location)
	if err != nil {
		return nil, &snapshotError{rec, fmt.Errorf("%w: unreadable: %w", ErrSnapshot, err)}
	}
	if int64(len(b)) != rec.Size {
		return nil, &snapshotError{rec, fmt.Errorf("%w: %d bytes, the record says %d", ErrSnapshot, len(b), rec.Size)}
	}
	if sum := checksum(b); sum != rec.Checksum {
		return nil, &snapshotError{rec, fmt.Errorf("%w: checksum mismatch: the bytes hash to %s, the record says %s", ErrSnapshot, sum, rec.Checksum)}
	}
	return b, nil
}

// restoreSnapshot installs rec on the standby master.
func (n *Node) restoreSnapshot(ctx context.Context, rec SnapshotRecord) error {
	b, err := fetchSnapshot(ctx, n.cfg.Snapshots, rec)
	if err != nil {
		return err
	}
	applied, err := n.j.Restore(b)
	if err != nil {
		return &snapshotError{rec, fmt.Errorf("%w: the master refused it: %w", ErrSnapshot, err)}
	}
	if applied != rec.Seq {
		return &snapshotError{rec, fmt.Errorf("%w: restored to sequence %d, the record says %d", ErrSnapshot, applied, rec.Seq)}
	}
	n.update(func() {
		n.applied = applied
		n.snap.Seq, n.snap.Bytes = rec.Seq, rec.Size
	})
	n.cfg.Logger.Info("ha restored a snapshot", "name", n.cfg.Name, "seq", rec.Seq, "location", rec.Location, "bytes", rec.Size)
	return nil
}

// publishFenced stores rec under the snapshot key only while leaderKey
// has create revision leaderRev, and returns the revision it committed at.
func publishFenced(ctx context.Context, cli *clientv3.Client, prefix, leaderKey string, leaderRev int64, rec SnapshotRecord, timeout time.Duration) (int64, error) {
	v, err := json.Marshal(rec)
	if err != nil {
		return 0, err
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := cli.Txn(tctx).
		If(clientv3.Compare(clientv3.CreateRevision(leaderKey), "=", leaderRev)).
		Then(clientv3.OpPut(SnapshotKey(prefix), string(v))).
		Commit()
	if err != nil {
		return 0, err
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("%w: %s no longer has create revision %d (another node leads): snapshot %d not published", ErrFenced, leaderKey, leaderRev, rec.Seq)
	}
	return resp.Header.Revision, nil
}

// seqOfKey is the first sequence a journal key names.
func seqOfKey(prefix, key string) (uint64, error) {
	digits, ok := strings.CutPrefix(key, JournalPrefix(prefix))
	if !ok || len(digits) != 20 {
		return 0, fmt.Errorf("%q is not a journal key", key)
	}
	return strconv.ParseUint(digits, 10, 64)
}

// collectFenced deletes every journal batch whose records are all at or
// below seq, fenced by leaderKey, and returns how many it deleted and the
// revision of the delete (0: nothing to delete). A batch's last sequence
// is the next key's first less one; the newest batch at or below seq + 1
// is decoded (its record count) to tell whether it ends at or below seq.
func (n *Node) collectFenced(ctx context.Context, leaderKey string, leaderRev int64, seq uint64) (int64, int64, error) {
	tctx, cancel := context.WithTimeout(ctx, n.cfg.SessionTTL)
	defer cancel()
	prefix := JournalPrefix(n.cfg.Prefix)
	resp, err := n.cli.Get(tctx, prefix, clientv3.WithRange(JournalKey(n.cfg.Prefix, seq+1)),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithLimit(1))
	if err != nil {
		return 0, 0, err
	}
	if len(resp.Kvs) == 0 {
		return 0, 0, nil
	}
	// Every batch before kv ends before kv's first sequence <= seq.
	kv := resp.Kvs[0]
	end := string(kv.Key)
	last, err := n.j.BatchLast(kv.Value)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: batch %s: %w", ErrJournal, kv.Key, err)
	}
	if last <= seq {
		end += "\x00"
	}
	if end == prefix {
		return 0, 0, nil
	}
	del, err := n.cli.Txn(tctx).
		If(clientv3.Compare(clientv3.CreateRevision(leaderKey), "=", leaderRev)).
		Then(clientv3.OpDelete(prefix, clientv3.WithRange(end))).
		Commit()
	if err != nil {
		return 0, 0, err
	}
	if !del.Succeeded {
		return 0, 0, fmt.Errorf("%w: %s no longer has create revision %d: the journal up to %d not collected", ErrFenced, leaderKey, leaderRev, seq)
	}
	deleted := del.Responses[0].GetResponseDeleteRange().Deleted
	if deleted == 0 {
		return 0, 0, nil
	}
	return deleted, del.Header.Revision, nil
}

// snapshot takes, stores, verifies and publishes a snapshot of the
// leader's master, then collects the journal it covers, and returns the
// sequence of the latest published snapshot (this one, or an earlier one
// that is as new: nothing was recorded since). Serialised by n.snapMu.
// ErrFenced when leadership was lost. After an error the record is the
// one before, or, when a publication's answer was lost, this snapshot
// (its file is then kept: see discardUnpublished).
//
// The snapshot holds every record the master appended, shipped or not,
// so its sequence may be above the durable one. That is safe: every node
// catching up ends at or above the published sequence (catchUp), so a
// leader elected after this one is promoted at or above it, and records
// of the snapshot that no one acknowledged are kept, as any change whose
// answer was not given may be. Shipping them before publishing would not
// do: resync publishes a snapshot precisely because its records cannot
// be shipped.
func (n *Node) snapshot(ctx context.Context) (uint64, error) {
	n.snapMu.Lock()
	defer n.snapMu.Unlock()
	store := n.cfg.Snapshots
	last, err := n.j.LastSeq()
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrJournal, err)
	}
	published := n.recordSeq()
	// The snapshot published before this one, which pruning keeps first.
	prev := n.recordLoc()
	if last <= published {
		return published, nil
	}
	data, seq, err := n.j.Snapshot()
	if err != nil {
		return 0, fmt.Errorf("%w: taking it: %w", ErrSnapshot, err)
	}
	if seq <= published {
		return published, nil
	}
	loc, err := store.Put(ctx, seq, data)
	if err != nil {
		return 0, fmt.Errorf("%w: storing %d: %w", ErrSnapshot, seq, err)
	}
	rec := SnapshotRecord{Seq: seq, Location: loc, Checksum: checksum(data), Size: int64(len(data)), Created: time.Now().UTC(), Node: n.cfg.Name}
	// Read back what the store kept before anyone is told of it.
	if _, err := fetchSnapshot(ctx, store, rec); err != nil {
		store.Delete(ctx, loc)
		return 0, fmt.Errorf("%w: verifying %d: %w", ErrSnapshot, seq, err)
	}
	leaderKey, leaderRev := n.fence()
	var rev int64
	for attempt := 0; ; attempt++ {
		sent := time.Now()
		rev, err = publishFenced(ctx, n.cli, n.cfg.Prefix, leaderKey, leaderRev, rec, n.cfg.SessionTTL)
		if err == nil {
			n.proven(sent)
			break
		}
		if errors.Is(err, ErrFenced) || !transient(err) || !backoff(ctx, attempt) {
			if ctx.Err() != nil {
				// The leader is stopping (or the caller gave up), perhaps
				// because etcd does not answer: the file is kept without
				// asking etcd whether the attempt cut short committed. It
				// is not deleted by anyone who knows it was never
				// published: Prune keeps it among the stored snapshots
				// (after the published one and the one published before
				// it, never a newer one) and deletes it when it falls out
				// of the SnapshotKeep it keeps.
				n.cfg.Logger.Warn("ha snapshot kept: its publication was cut short", "name", n.cfg.Name, "seq", rec.Seq, "location", rec.Location, "err", err)
				if !errors.Is(err, ErrFenced) {
					return 0, fmt.Errorf("%w: publishing snapshot %d was cut short (the session ended, or the node is stopping): %w", ErrFenced, seq, err)
				}
				return 0, err
			}
			n.discardUnpublished(ctx, store, rec, leaderKey, leaderRev)
			return 0, err
		}
	}
	n.update(func() {
		n.sawRecord(rec)
		n.snap.Seq, n.snap.Bytes = seq, rec.Size
		n.snap.Published++
	})
	n.cfg.Logger.Info("ha published a snapshot", "name", n.cfg.Name, "seq", seq, "location", loc, "bytes", rec.Size, "revision", rev)
	if _, err := Prune(ctx, store, n.cfg.SnapshotKeep, loc, seq, prev); err != nil {
		n.cfg.Logger.Warn("ha snapshot pruning failed", "name", n.cfg.Name, "err", err)
	}
	if err := n.collect(ctx, leaderKey, leaderRev, seq); err != nil {
		if errors.Is(err, ErrFenced) {
			return 0, err
		}
		// The snapshot is published: the next one collects.
		n.cfg.Logger.Warn("ha journal collection failed", "name", n.cfg.Name, "upto", seq, "err", err)
	}
	return seq, nil
}

// discardUnpublished deletes the stored snapshot rec whose publication
// failed, but only once no record can name it, now or later. An attempt
// whose answer was lost (cancelled, timed out, cut off) may have
// committed, or may still commit while etcd holds it in flight, so an
// error does not say the record is absent, nor does a read that finds it
// absent while the election key stands. One read at one revision settles
// it: once the election key no longer has leaderRev, every attempt still
// in flight fails its fence, and a record that does not name the
// snapshot then never will. Otherwise the file stays (Prune deletes it
// when it falls out of the SnapshotKeep it keeps, the published one and
// the one published before it first; never while it is the published one
// or newer): deleting a published snapshot leaves every standby that
// needs it unable to start.
//
// The read and the delete are bounded by the leader's lease (lease.go) and
// end with ctx (the snapshot's: the node stopping): the node still reports
// RoleLeader meanwhile, and past its lease another node may lead. With the
// lease run out, or ctx ended, the file stays.
func (n *Node) discardUnpublished(ctx context.Context, store SnapshotStore, rec SnapshotRecord, leaderKey string, leaderRev int64) {
	n.mu.Lock()
	until := n.leaseUntil
	n.mu.Unlock()
	if !time.Now().Before(until) {
		n.cfg.Logger.Warn("ha snapshot kept: the lease ran out before etcd could be asked whether it was published", "name", n.cfg.Name, "seq", rec.Seq, "location", rec.Location)
		return
	}
	ctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	resp, err := n.cli.Txn(ctx).Then(clientv3.OpGet(SnapshotKey(n.cfg.Prefix)), clientv3.OpGet(leaderKey)).Commit()
	if err != nil {
		n.cfg.Logger.Warn("ha snapshot kept: whether it was published is unknown", "name", n.cfg.Name, "seq", rec.Seq, "location", rec.Location, "err", err)
		return
	}
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 1 {
		// A record that does not parse names no snapshot anyone can load.
		if r, err := decodeRecord(kvs[0].Value); err == nil {
			n.update(func() { n.sawRecord(r) })
			if r.Location == rec.Location {
				n.cfg.Logger.Warn("ha snapshot published although the answer was lost", "name", n.cfg.Name, "seq", rec.Seq, "location", rec.Location)
				return
			}
		}
	}
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) == 1 && kvs[0].CreateRevision == leaderRev {
		n.cfg.Logger.Warn("ha snapshot kept: its publication may still commit", "name", n.cfg.Name, "seq", rec.Seq, "location", rec.Location)
		return
	}
	// Never published: no one refers to it (a deposed leader's snapshot
	// is not another's to keep).
	if err := store.Delete(ctx, rec.Location); err != nil {
		n.cfg.Logger.Warn("ha unpublished snapshot not deleted", "name", n.cfg.Name, "location", rec.Location, "err", err)
	}
}

// collect deletes the journal batches snapshot seq covers and compacts
// etcd's history up to that delete (waiting until etcd applied the
// compaction, so its backend has the pages back when collect returns).
func (n *Node) collect(ctx context.Context, leaderKey string, leaderRev int64, seq uint64) error {
	deleted, rev, err := n.collectFenced(ctx, leaderKey, leaderRev, seq)
	if err != nil {
		return err
	}
	n.update(func() { n.snap.GCSeq = max(n.snap.GCSeq, seq) })
	if deleted == 0 {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, n.cfg.SessionTTL)
	defer cancel()
	if _, err := n.cli.Compact(cctx, rev, clientv3.WithCompactPhysical()); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return fmt.Errorf("compacting etcd up to revision %d: %w", rev, err)
	}
	n.cfg.Logger.Info("ha journal collected", "name", n.cfg.Name, "upto", seq, "batches", deleted, "compacted", rev)
	return nil
}

// recordSeq is the sequence of the newest snapshot record seen in etcd.
func (n *Node) recordSeq() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.recSeq
}

// sawRecord notes a snapshot record seen in etcd (or published by this
// node), if it is the newest seen. Under n.mu.
func (n *Node) sawRecord(r SnapshotRecord) {
	if r.Seq >= n.recSeq {
		n.recSeq, n.recLoc = r.Seq, r.Location
	}
}

// recordLoc is the location of the newest snapshot record seen in etcd.
func (n *Node) recordLoc() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.recLoc
}

// Snapshots returns the node's snapshot figures.
func (n *Node) Snapshots() SnapshotStats {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.snap
}

// Snapshot takes a snapshot now, publishes it and collects the journal it
// covers (what the leader does every SnapshotInterval or
// SnapshotEveryBytes), and returns the published sequence. ErrNotLeader on
// a node that does not lead; ErrSnapshot without a store.
func (n *Node) Snapshot(ctx context.Context) (uint64, error) {
	if n.cfg.Snapshots == nil {
		return 0, fmt.Errorf("%w: this node has no snapshot store (Config.Snapshots)", ErrSnapshot)
	}
	n.mu.Lock()
	role, err := n.role, n.stopErr()
	n.mu.Unlock()
	switch role {
	case RoleLeader:
	case RoleStopped:
		return 0, err
	default:
		return 0, fmt.Errorf("%w (role %s)", ErrNotLeader, role)
	}
	seq, err := n.snapshot(ctx)
	// A publication cut short by the caller's context is not a lost
	// leadership: ErrFenced would tell the caller to replace a leader that
	// still leads. (The snapshotter's own context ends only when the
	// leader stops, where ErrFenced is right.)
	if errors.Is(err, ErrFenced) && ctx.Err() != nil && n.Role() == RoleLeader {
		return 0, fmt.Errorf("%w: the caller's context ended before the snapshot was published (%w); this node still leads", ErrSnapshot, context.Cause(ctx))
	}
	return seq, err
}

// WaitSnapshots returns when cond (called with the node's lock held: it
// must not call the node) holds of the node's snapshot figures, ctx ends,
// or the node stops first.
func (n *Node) WaitSnapshots(ctx context.Context, cond func(SnapshotStats) bool) error {
	return n.await(ctx, func() bool { return cond(n.snap) })
}
