package engine

// Snapshots and journal GC against a real etcd, with the fake journal:
// publication, collection and compaction, catch-up from a snapshot, a
// corrupt snapshot refused, the fence on publication and collection, and
// an overrun or an oversized record covered by a snapshot. Every wait is
// bounded and ends on an observable event.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvcache-ai/libmooncake_meta/go/ha/internal/etcdtest"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

func newStore(t *testing.T) *DirStore {
	t.Helper()
	s, err := NewDirStore(filepath.Join(t.TempDir(), "snapshots"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// waitSnapshots returns once cond holds of n's snapshot figures.
func waitSnapshots(t *testing.T, n *Node, what string, cond func(SnapshotStats) bool) SnapshotStats {
	t.Helper()
	var st SnapshotStats
	err := n.await(boundedCtx(t), func() bool { st = n.snap; return cond(st) })
	if err != nil {
		t.Fatalf("%s: waiting for %s: %v (figures %+v)", n.cfg.Name, what, err, n.Snapshots())
	}
	return st
}

func readRecord(t *testing.T, cli *clientv3.Client, prefix string) (SnapshotRecord, int64) {
	t.Helper()
	r, err := cli.Get(boundedCtx(t), SnapshotKey(prefix))
	if err != nil || len(r.Kvs) != 1 {
		t.Fatalf("snapshot record: %v, %d keys", err, len(r.Kvs))
	}
	rec, err := decodeRecord(r.Kvs[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	return rec, r.Kvs[0].ModRevision
}

// journalBatches returns every batch in etcd: first and last sequence.
func journalBatches(t *testing.T, cli *clientv3.Client, prefix string) [][2]uint64 {
	t.Helper()
	r, err := cli.Get(boundedCtx(t), JournalPrefix(prefix), clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]uint64
	for _, kv := range r.Kvs {
		var b fakeBatch
		if err := json.Unmarshal(kv.Value, &b); err != nil {
			t.Fatalf("batch %s: %v", kv.Key, err)
		}
		out = append(out, [2]uint64{b.First, b.First + uint64(len(b.Recs)) - 1})
	}
	return out
}

// manualSnapshots gives a node the store and thresholds no test reaches:
// the test takes the snapshots (Node.snapshot).
func manualSnapshots(store SnapshotStore) func(*Config) {
	return func(c *Config) {
		c.Snapshots = store
		c.SnapshotEveryBytes = 1 << 40
		c.SnapshotInterval = time.Hour
	}
}

func appendDurable(t *testing.T, n *Node, j *fakeJournal, recs ...string) uint64 {
	t.Helper()
	var seq uint64
	for _, r := range recs {
		seq = j.append(r)
	}
	if err := n.WaitDurable(boundedCtx(t), seq); err != nil {
		t.Fatalf("WaitDurable(%d): %v", seq, err)
	}
	return seq
}

// The leader publishes a snapshot, deletes every batch it covers and
// compacts etcd's history; a standby started later restores it, applies
// the journal after it and, promoted, has every record.
func TestSnapshotCollectsTheJournalAndALateStandbyStartsFromIt(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	store := newStore(t)
	ja := newFakeStandby()
	a := startNode(t, cli, "/c", "a", ja, manualSnapshots(store))
	waitRole(t, a, RoleLeader)
	appendDurable(t, a, ja, "r1")
	r, err := cli.Get(boundedCtx(t), "/c/none")
	if err != nil {
		t.Fatal(err)
	}
	before := r.Header.Revision
	var last uint64
	for i := range 20 {
		last = appendDurable(t, a, ja, strings.Repeat("x", i+1), strings.Repeat("y", i+1))
	}
	if len(journalBatches(t, cli, "/c")) < 20 {
		t.Fatalf("the journal has %d batches, want >= 20", len(journalBatches(t, cli, "/c")))
	}
	seq, err := a.snapshot(boundedCtx(t))
	if err != nil || seq != last {
		t.Fatalf("snapshot: seq %d, %v; want %d", seq, err, last)
	}
	rec, _ := readRecord(t, cli, "/c")
	st := a.Snapshots()
	if rec.Seq != last || st.Seq != last || st.Published != 1 || st.GCSeq != last || rec.Node != "a" || rec.Size != st.Bytes {
		t.Fatalf("record %+v, figures %+v, want seq %d", rec, st, last)
	}
	if b := journalBatches(t, cli, "/c"); len(b) != 0 {
		t.Fatalf("batches %v remain at or below the snapshot's sequence %d", b, rec.Seq)
	}
	// The history before the collection is compacted.
	if _, err := cli.Get(boundedCtx(t), JournalPrefix("/c"), clientv3.WithPrefix(), clientv3.WithRev(before)); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Fatalf("reading revision %d after the collection: %v, want ErrCompacted", before, err)
	}
	// Nothing new: no second snapshot.
	if seq, err := a.snapshot(boundedCtx(t)); err != nil || seq != last || a.Snapshots().Published != 1 {
		t.Fatalf("idle snapshot: %d, %v, %+v", seq, err, a.Snapshots())
	}

	// Records after the snapshot stay in the journal, for the late standby.
	final := appendDurable(t, a, ja, "after-1", "after-2")
	if b := journalBatches(t, cli, "/c"); len(b) == 0 || b[0][0] != last+1 {
		t.Fatalf("batches after the snapshot: %v", b)
	}
	jb := newFakeStandby()
	b := startNode(t, cli, "/c", "b", jb, manualSnapshots(store))
	if err := b.WaitApplied(boundedCtx(t), final); err != nil {
		t.Fatalf("late standby: %v", err)
	}
	if jb.restored() != 1 || b.Snapshots().Seq != last {
		t.Fatalf("late standby restored %d snapshots, figures %+v", jb.restored(), b.Snapshots())
	}
	if err := a.Close(); err != nil {
		t.Fatalf("Close a: %v", err)
	}
	waitRole(t, b, RoleLeader)
	if got, want := jb.records(), ja.records(); !slices.Equal(got, want) {
		t.Fatalf("promoted standby holds %d records, the leader had %d", len(got), len(want))
	}
}

// SnapshotEveryBytes triggers snapshots as the journal is shipped; the
// store keeps SnapshotKeep of them, the published one among them.
func TestShippedBytesTriggerSnapshotsAndTheStoreIsPruned(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	store := newStore(t)
	ja := newFakeStandby()
	a := startNode(t, cli, "/c", "a", ja, func(c *Config) {
		c.Snapshots = store
		c.SnapshotEveryBytes = 1
		c.SnapshotInterval = time.Hour
		c.SnapshotKeep = 3
	})
	waitRole(t, a, RoleLeader)
	var seq uint64
	for i := range 5 {
		seq = appendDurable(t, a, ja, strings.Repeat("z", i+1))
		waitSnapshots(t, a, "a snapshot of the shipped record", func(s SnapshotStats) bool { return s.GCSeq >= seq })
	}
	rec, _ := readRecord(t, cli, "/c")
	stored, err := store.List(boundedCtx(t))
	if err != nil || len(stored) != 3 || stored[2].Location != rec.Location || rec.Seq != seq {
		t.Fatalf("stored %v (%v), record %+v, want 3 ending with the published one at %d", stored, err, rec, seq)
	}
}

// A snapshot whose bytes do not match the record (a flipped byte) is
// refused: the new standby stays a follower that applied nothing and
// never campaigns, and it catches up from the next good snapshot.
func TestCorruptSnapshotIsRefusedAndTheStandbyRetries(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	store := newStore(t)
	ja := newFakeStandby()
	a := startNode(t, cli, "/c", "a", ja, manualSnapshots(store))
	waitRole(t, a, RoleLeader)
	appendDurable(t, a, ja, "one", "two")
	if _, err := a.snapshot(boundedCtx(t)); err != nil {
		t.Fatal(err)
	}
	rec, _ := readRecord(t, cli, "/c")
	path := filepath.Join(store.Dir(), rec.Location)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// One flipped bit that leaves the bytes a valid (fake) snapshot: only
	// the checksum tells.
	i := bytes.Index(b, []byte(`"two"`))
	if i < 0 {
		t.Fatalf("snapshot %s", b)
	}
	b[i+3] ^= 0x01 // "two" -> "twn"
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	jb := newFakeStandby()
	nb := startNode(t, cli, "/c", "b", jb, manualSnapshots(store))
	waitSnapshots(t, nb, "a refused snapshot", func(s SnapshotStats) bool { return s.LoadFailures >= 2 })
	if nb.AppliedSeq() != 0 || jb.restored() != 0 || nb.Role() != RoleFollower {
		t.Fatalf("after a corrupt snapshot: applied %d, restored %d, role %s", nb.AppliedSeq(), jb.restored(), nb.Role())
	}
	// It never campaigned: a's key is the only candidate.
	r, err := cli.Get(boundedCtx(t), ElectionPrefix("/c")+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || r.Count != 1 {
		t.Fatalf("candidates: %v, %v", r, err)
	}
	last := appendDurable(t, a, ja, "three")
	if _, err := a.snapshot(boundedCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := nb.WaitApplied(boundedCtx(t), last); err != nil {
		t.Fatalf("after a good snapshot: %v", err)
	}
	if !slices.Equal(jb.records(), ja.records()) {
		t.Fatalf("standby %v, leader %v", jb.records(), ja.records())
	}
}

// A deposed leader can neither publish a snapshot record nor collect the
// journal: both are fenced by its election key's create revision.
func TestDeposedLeaderCannotPublishASnapshotNorCollect(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	ctx := boundedCtx(t)
	s1, err := concurrency.NewSession(cli, concurrency.WithTTL(5))
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	e1 := concurrency.NewElection(s1, ElectionPrefix("/c"))
	if err := e1.Campaign(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	good := SnapshotRecord{Seq: 1, Location: "l1", Checksum: strings.Repeat("0", 64), Size: 1, Node: "one"}
	if _, err := publishFenced(ctx, cli, "/c", e1.Key(), e1.Rev(), good, time.Second); err != nil {
		t.Fatalf("leader's publication: %v", err)
	}
	if err := appendFenced(ctx, cli, e1.Key(), e1.Rev(), JournalKey("/c", 1), encode(1, []string{"a"}), time.Second); err != nil {
		t.Fatal(err)
	}
	s2, err := concurrency.NewSession(cli, concurrency.WithTTL(5))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, err := cli.Revoke(ctx, s1.Lease()); err != nil {
		t.Fatal(err)
	}
	e2 := concurrency.NewElection(s2, ElectionPrefix("/c"))
	if err := e2.Campaign(ctx, "two"); err != nil {
		t.Fatal(err)
	}
	stale := SnapshotRecord{Seq: 9, Location: "l9", Checksum: strings.Repeat("1", 64), Size: 9, Node: "one"}
	if _, err := publishFenced(ctx, cli, "/c", e1.Key(), e1.Rev(), stale, time.Second); !errors.Is(err, ErrFenced) {
		t.Fatalf("deposed leader's publication = %v, want ErrFenced", err)
	}
	if rec, _ := readRecord(t, cli, "/c"); rec.Seq != 1 || rec.Location != "l1" {
		t.Fatalf("record after the deposed publication: %+v", rec)
	}
	n := &Node{cfg: Config{Prefix: "/c", SessionTTL: time.Second}, cli: cli, j: newFakeStandby()}
	if _, _, err := n.collectFenced(ctx, e1.Key(), e1.Rev(), 1); !errors.Is(err, ErrFenced) {
		t.Fatalf("deposed leader's collection = %v, want ErrFenced", err)
	}
	if b := journalBatches(t, cli, "/c"); len(b) != 1 {
		t.Fatalf("batches after the deposed collection: %v", b)
	}
}

// With a store, records the leader's journal dropped (etcd fell behind)
// or one larger than a batch are covered by a snapshot: WaitDurable
// succeeds once it is published, the leader goes on, and a standby
// started later (or following) has them.
func TestOverrunAndOversizedRecordsAreCoveredByASnapshot(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	store := newStore(t)
	ja := newFakeStandby()
	a := startNode(t, cli, "/c", "a", ja, manualSnapshots(store))
	waitRole(t, a, RoleLeader)
	jf := newFakeStandby()
	f := startNode(t, cli, "/c", "f", jf, manualSnapshots(store))
	kept := appendDurable(t, a, ja, "kept")
	if err := f.WaitApplied(boundedCtx(t), kept); err != nil {
		t.Fatal(err)
	}
	lost := ja.appendDropped("lost")
	if err := a.WaitDurable(boundedCtx(t), lost); err != nil {
		t.Fatalf("WaitDurable past an overrun: %v", err)
	}
	if rec, _ := readRecord(t, cli, "/c"); rec.Seq < lost {
		t.Fatalf("record %+v does not cover %d", rec, lost)
	}
	big := ja.append(strings.Repeat("B", MinMaxBatchBytes*2))
	if err := a.WaitDurable(boundedCtx(t), big); err != nil {
		t.Fatalf("WaitDurable of an oversized record: %v", err)
	}
	after := appendDurable(t, a, ja, "after")
	if a.Role() != RoleLeader {
		t.Fatalf("leader's role %s", a.Role())
	}
	// The follower met the gaps and restored the snapshots.
	if err := f.WaitApplied(boundedCtx(t), after); err != nil {
		t.Fatalf("follower: %v", err)
	}
	if !slices.Equal(jf.records(), ja.records()) || jf.restored() == 0 {
		t.Fatalf("follower %d records (%d restores), leader %d", len(jf.records()), jf.restored(), len(ja.records()))
	}
	jl := newFakeStandby()
	l := startNode(t, cli, "/c", "late", jl, manualSnapshots(store))
	if err := l.WaitApplied(boundedCtx(t), after); err != nil {
		t.Fatalf("late standby: %v", err)
	}
	if !slices.Equal(jl.records(), ja.records()) {
		t.Fatalf("late standby %d records, leader %d", len(jl.records()), len(ja.records()))
	}
}

// DirStore: Put never reuses a location, Get returns the bytes, a file
// not named by Put is ignored, Prune keeps the newest and never what is
// newer than the published one, and a location outside the store is
// refused.
func TestDirStore(t *testing.T) {
	ctx := boundedCtx(t)
	s := newStore(t)
	var locs []string
	for _, seq := range []uint64{5, 7, 7, 9, 12} {
		l, err := s.Put(ctx, seq, []byte{byte(seq)})
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(locs, l) {
			t.Fatalf("location %s returned twice", l)
		}
		locs = append(locs, l)
	}
	if err := os.WriteFile(filepath.Join(s.Dir(), "notes.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, locs[3])
	if err != nil || !bytes.Equal(got, []byte{9}) {
		t.Fatalf("Get: %v, %v", got, err)
	}
	for _, bad := range []string{"../x", "notes.txt", filepath.Join("..", locs[0]), ""} {
		if _, err := s.Get(ctx, bad); err == nil {
			t.Fatalf("Get(%q) succeeded", bad)
		}
	}
	// Published: the one at 9; 12 may be another leader's, unpublished.
	n, err := Prune(ctx, s, 2, locs[3], 9, "")
	if err != nil || n != 2 {
		t.Fatalf("Prune: %d, %v", n, err)
	}
	list, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for _, e := range list {
		seqs = append(seqs, e.Seq)
	}
	if !slices.Equal(seqs, []uint64{7, 9, 12}) {
		t.Fatalf("after Prune: %v", seqs)
	}
	if err := s.Delete(ctx, locs[0]); err != nil {
		t.Fatalf("deleting an absent snapshot: %v", err)
	}
	entries, _ := os.ReadDir(s.Dir())
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			t.Fatalf("temporary file %s left", e.Name())
		}
	}
}

// Prune keeps the snapshot published before the current one ahead of a
// newer file no record named (kept because its publication's answer was
// lost): with SnapshotKeep 2 it kept the orphan and deleted the fallback.
func TestPruneKeepsThePreviousPublishedAheadOfAnOrphan(t *testing.T) {
	ctx := boundedCtx(t)
	s := newStore(t)
	put := func(seq uint64) string {
		l, err := s.Put(ctx, seq, []byte{byte(seq)})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	older, prev, orphan, current := put(3), put(5), put(7), put(9)
	stored := func() []string {
		list, err := s.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var locs []string
		for _, e := range list {
			locs = append(locs, e.Location)
		}
		return locs
	}
	if n, err := Prune(ctx, s, 2, current, 9, prev); err != nil || n != 2 {
		t.Fatalf("Prune: %d, %v", n, err)
	}
	if got := stored(); !slices.Equal(got, []string{prev, current}) {
		t.Fatalf("after Prune with keep 2: %v, want the previous published %s and the current %s (older %s, orphan %s gone)", got, prev, current, older, orphan)
	}
	// With room for more, the newest others fill it after prev; an unknown
	// prev (or none) leaves the newest, as before.
	o2, p2, c2 := put(11), put(13), put(15)
	if n, err := Prune(ctx, s, 3, c2, 15, "snapshot-gone"); err != nil || n != 2 {
		t.Fatalf("Prune with an unknown prev: %d, %v", n, err)
	}
	if got := stored(); !slices.Equal(got, []string{o2, p2, c2}) {
		t.Fatalf("after Prune with keep 3: %v", got)
	}
	if n, err := Prune(ctx, s, 1, c2, 15, p2); err != nil || n != 2 {
		t.Fatalf("Prune with keep 1: %d, %v", n, err)
	}
	if got := stored(); !slices.Equal(got, []string{c2}) {
		t.Fatalf("after Prune with keep 1: %v", got)
	}
}

// gatedJournal blocks Apply until the gate opens: a follower that falls
// behind while the leader snapshots and collects.
type gatedJournal struct {
	*fakeJournal
	gate chan struct{}
}

func (g gatedJournal) Apply(batch []byte) (uint64, error) {
	<-g.gate
	return g.fakeJournal.Apply(batch)
}

// A follower stuck while the leader ships, snapshots, deletes the batches
// and compacts the history it has not applied yet ends up with every
// record: from the watch's events, or, when they were compacted away,
// from the newer snapshot and the journal after it.
func TestAFollowerBehindTheCollectionCatchesUp(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	store := newStore(t)
	ja := newFakeStandby()
	a := startNode(t, cli, "/c", "a", ja, manualSnapshots(store))
	waitRole(t, a, RoleLeader)
	first := appendDurable(t, a, ja, "first")
	jf := gatedJournal{newFakeStandby(), make(chan struct{})}
	f := startNode(t, cli, "/c", "f", jf, manualSnapshots(store))
	var last uint64
	for i := range 50 {
		last = appendDurable(t, a, ja, strings.Repeat("s", i+1))
	}
	if _, err := a.snapshot(boundedCtx(t)); err != nil {
		t.Fatal(err)
	}
	last = appendDurable(t, a, ja, "after")
	if f.AppliedSeq() >= first {
		t.Fatalf("the gated follower applied %d", f.AppliedSeq())
	}
	close(jf.gate)
	if err := f.WaitApplied(boundedCtx(t), last); err != nil {
		t.Fatalf("follower: %v", err)
	}
	if !slices.Equal(jf.records(), ja.records()) {
		t.Fatalf("follower %d records, leader %d", len(jf.records()), len(ja.records()))
	}
}

// A publication that commits in etcd although its answer is lost (the
// call was cancelled after etcd applied it) may be the published
// snapshot: its file stays in the store, and a node started afterwards
// restores it.
func TestASnapshotWhosePublicationAnswerIsLostIsKept(t *testing.T) {
	c := etcdtest.Start(t)
	cli := c.Client(t)
	cliA := c.Client(t)
	kv := &loseAnswerKV{KV: cliA.KV, key: SnapshotKey("/c")}
	cliA.KV = kv
	store := newStore(t)
	ja := newFakeStandby()
	a := startNode(t, cliA, "/c", "a", ja, manualSnapshots(store))
	waitRole(t, a, RoleLeader)
	last := appendDurable(t, a, ja, "one", "two")
	kv.armed.Store(true)
	if seq, err := a.Snapshot(boundedCtx(t)); err == nil {
		t.Fatalf("Snapshot = %d, nil; want the lost answer's error", seq)
	}
	if kv.armed.Load() {
		t.Fatal("no publication was attempted")
	}
	rec, _ := readRecord(t, cli, "/c")
	if rec.Seq != last {
		t.Fatalf("record %+v, want seq %d", rec, last)
	}
	if _, err := store.Get(boundedCtx(t), rec.Location); err != nil {
		t.Fatalf("the published snapshot %s is gone from the store: %v", rec.Location, err)
	}
	jc := newFakeStandby()
	nc := startNode(t, cli, "/c", "c", jc, manualSnapshots(store))
	if err := nc.WaitApplied(boundedCtx(t), last); err != nil {
		t.Fatalf("new standby: %v (figures %+v)", err, nc.Snapshots())
	}
	if jc.restored() != 1 || nc.Role() != RoleFollower || !slices.Equal(jc.records(), ja.records()) {
		t.Fatalf("new standby: %d restores, role %s, records %v (leader %v)", jc.restored(), nc.Role(), jc.records(), ja.records())
	}
}

// A standby whose next batches are in etcd but end below the published
// snapshot (the leader published it before shipping the records after
// its durable sequence, then went away) catches up to the snapshot: it
// restores it after the last batch, so it is never promoted below it
// (its own records would then reuse sequences the snapshot holds).
func TestCatchUpEndsAtThePublishedSnapshotWhenTheBatchesEndBelowIt(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	ctx := boundedCtx(t)
	store := newStore(t)
	recs := []string{"r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8"}
	for _, b := range []struct{ first, last int }{{1, 3}, {4, 5}} {
		if _, err := cli.Put(ctx, JournalKey("/c", uint64(b.first)), string(encode(uint64(b.first), recs[b.first-1:b.last]))); err != nil {
			t.Fatal(err)
		}
	}
	data, err := json.Marshal(fakeSnapshot{Seq: 8, Recs: recs})
	if err != nil {
		t.Fatal(err)
	}
	loc, err := store.Put(ctx, 8, data)
	if err != nil {
		t.Fatal(err)
	}
	v, err := json.Marshal(SnapshotRecord{Seq: 8, Location: loc, Checksum: checksum(data), Size: int64(len(data)), Created: time.Now().UTC(), Node: "gone"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, SnapshotKey("/c"), string(v)); err != nil {
		t.Fatal(err)
	}
	// A standby that applied 1..3.
	standby := func() *fakeJournal {
		j := newFakeStandby()
		if applied, err := j.Apply(encode(1, recs[:3])); err != nil || applied != 3 {
			t.Fatalf("Apply: %d, %v", applied, err)
		}
		return j
	}

	j := standby()
	cfg, err := Config{Client: cli, Prefix: "/c", Name: "b", Snapshots: store}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{cfg: cfg, j: j, cli: cli, changed: make(chan struct{}), applied: 3}
	if _, err := n.catchUp(ctx); err != nil {
		t.Fatalf("catchUp: %v", err)
	}
	if n.AppliedSeq() != 8 || !slices.Equal(j.records(), recs) {
		t.Fatalf("catchUp ended at %d with %v, want 8 with %v", n.AppliedSeq(), j.records(), recs)
	}

	// Elected, such a standby is promoted at the snapshot's sequence.
	jl := standby()
	l := startNode(t, cli, "/c", "l", jl, manualSnapshots(store))
	waitRole(t, l, RoleLeader)
	if l.DurableSeq() != 8 || !slices.Equal(jl.records(), recs) {
		t.Fatalf("promoted at %d with %v, want 8 with %v", l.DurableSeq(), jl.records(), recs)
	}
}

// A snapshot whose publication failed is deleted only when no record can
// name it: the record does not, and the election key that fenced the
// publication is gone (an attempt still in flight then fails its fence).
// Past the leader's lease etcd is not asked, and the file stays.
func TestAnUnpublishedSnapshotIsDeletedOnlyWhenNoRecordCanNameIt(t *testing.T) {
	c := etcdtest.Start(t)
	cli := c.Client(t)
	cliN := c.Client(t)
	kv := &stallKV{KV: cliN.KV, prefix: SnapshotKey("/c")}
	cliN.KV = kv
	ctx := boundedCtx(t)
	store := newStore(t)
	cfg, err := Config{Client: cliN, Prefix: "/c", Name: "a", Snapshots: store}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{cfg: cfg, cli: cliN, changed: make(chan struct{})}
	n.leaseUntil = time.Now().Add(time.Hour)
	put := func(seq uint64) SnapshotRecord {
		data := []byte(strings.Repeat("s", int(seq)))
		loc, err := store.Put(ctx, seq, data)
		if err != nil {
			t.Fatal(err)
		}
		return SnapshotRecord{Seq: seq, Location: loc, Checksum: checksum(data), Size: int64(len(data)), Created: time.Now().UTC(), Node: "a"}
	}
	publish := func(rec SnapshotRecord) {
		v, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Put(ctx, SnapshotKey("/c"), string(v)); err != nil {
			t.Fatal(err)
		}
	}
	stored := func(rec SnapshotRecord) bool {
		_, err := store.Get(ctx, rec.Location)
		return err == nil
	}
	key := ElectionPrefix("/c") + "/a"
	r, err := cli.Put(ctx, key, "a")
	if err != nil {
		t.Fatal(err)
	}
	rev := r.Header.Revision

	s1, s2, s3 := put(1), put(2), put(3)
	// No record, but the key stands: the publication may still commit.
	n.discardUnpublished(context.Background(), store, s1, key, rev)
	if !stored(s1) {
		t.Fatal("deleted while the election key stands")
	}
	publish(s2)
	if _, err := cli.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	// The record names it: published although the answer was lost.
	n.discardUnpublished(context.Background(), store, s2, key, rev)
	if !stored(s2) || n.recordSeq() != 2 {
		t.Fatalf("published snapshot: stored %v, record seq seen %d", stored(s2), n.recordSeq())
	}
	// Another is published and the key is gone: never published.
	n.discardUnpublished(context.Background(), store, s3, key, rev)
	if stored(s3) {
		t.Fatal("an unpublished snapshot of a deposed leader was kept")
	}
	// The same, past the lease: kept, and etcd not asked.
	s4 := put(4)
	reads := kv.reads.Load()
	n.leaseUntil = time.Now().Add(-time.Millisecond)
	n.discardUnpublished(context.Background(), store, s4, key, rev)
	if !stored(s4) || kv.reads.Load() != reads {
		t.Fatalf("past the lease: stored %v, %d reads of the record sent", stored(s4), kv.reads.Load()-reads)
	}
}

// CheckPublishedSnapshot reads the record as a node does and opens the
// snapshot through the store (Size, or Get for a store without it): a
// record that does not parse strictly, a location that is not one of the
// store's, a missing snapshot or one of another size is refused.
func TestCheckPublishedSnapshot(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	ctx := boundedCtx(t)
	store := newStore(t)
	getOnly := struct{ SnapshotStore }{store}
	if err := CheckPublishedSnapshot(ctx, cli, "/c", store); err != nil {
		t.Fatalf("no record: %v", err)
	}
	data := []byte("the snapshot's bytes")
	loc, err := store.Put(ctx, 7, data)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(store.Dir(), "notes.txt"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	good := SnapshotRecord{Seq: 7, Location: loc, Checksum: checksum(data), Size: int64(len(data)), Created: time.Now().UTC(), Node: "a"}
	record := func(edit func(*SnapshotRecord)) string {
		r := good
		if edit != nil {
			edit(&r)
		}
		v, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return string(v)
	}
	publish := func(v string) {
		if _, err := cli.Put(ctx, SnapshotKey("/c"), v); err != nil {
			t.Fatal(err)
		}
	}
	publish(record(nil))
	for _, s := range []SnapshotStore{store, getOnly} {
		if err := CheckPublishedSnapshot(ctx, cli, "/c", s); err != nil {
			t.Fatalf("the published snapshot (%T): %v", s, err)
		}
	}
	for _, c := range []struct {
		name, value string
		missing     bool
	}{
		{"an unknown field", strings.Replace(record(nil), "{", `{"extra":1,`, 1), false},
		{"no checksum", record(func(r *SnapshotRecord) { r.Checksum = "" }), false},
		{"a file that is not one of the store's", record(func(r *SnapshotRecord) { r.Location = "notes.txt" }), false},
		{"a path", record(func(r *SnapshotRecord) { r.Location = "../snapshots/" + loc }), false},
		{"another size", record(func(r *SnapshotRecord) { r.Size++ }), false},
		{"a missing snapshot", record(func(r *SnapshotRecord) { r.Location = fmt.Sprintf("snapshot-%020d-%016x.mcms", 8, 0) }), true},
	} {
		publish(c.value)
		for _, s := range []SnapshotStore{store, getOnly} {
			err := CheckPublishedSnapshot(ctx, cli, "/c", s)
			if !errors.Is(err, ErrSnapshot) || c.missing && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s (%T): %v, want ErrSnapshot", c.name, s, err)
			}
		}
	}
}
