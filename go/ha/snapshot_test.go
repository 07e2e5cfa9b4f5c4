package ha_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
	"github.com/kvcache-ai/libmooncake_meta/go/ha"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/internal/etcdtest"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Snapshots and journal GC with real masters and a real etcd.

func newDirStore(t *testing.T) *ha.DirStore {
	t.Helper()
	s, err := ha.NewDirStore(filepath.Join(t.TempDir(), "snapshots"))
	must(t, "NewDirStore", err)
	return s
}

// withSnapshots gives a node the store; the thresholds are the arguments.
func withSnapshots(store ha.SnapshotStore, everyBytes int64, edit func(*ha.Config)) func(*ha.Config) {
	return func(c *ha.Config) {
		c.Snapshots = store
		c.SnapshotEveryBytes = everyBytes
		c.SnapshotInterval = time.Hour
		if edit != nil {
			edit(c)
		}
	}
}

// batchSpans is every journal batch in etcd: its first and last sequence
// (from the batch header, docs/CONTRACT.md §12.2).
func batchSpans(t *testing.T, cli *clientv3.Client) [][2]uint64 {
	t.Helper()
	r, err := cli.Get(boundedCtx(t), ha.JournalPrefix(prefix), clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	must(t, "Get journal", err)
	var out [][2]uint64
	for _, kv := range r.Kvs {
		if len(kv.Value) < 40 {
			t.Fatalf("batch %s: %d bytes", kv.Key, len(kv.Value))
		}
		first := binary.LittleEndian.Uint64(kv.Value[16:])
		count := uint64(binary.LittleEndian.Uint32(kv.Value[24:]))
		if string(kv.Key) != ha.JournalKey(prefix, first) {
			t.Fatalf("batch starting at %d under %s", first, kv.Key)
		}
		out = append(out, [2]uint64{first, first + count - 1})
	}
	return out
}

// A standby started late catches up from the snapshot and the journal
// after it and, promoted, has the same objects, replicas, soft-pin
// deadlines and group retention as the leader (the write in flight at the
// snapshot ends on it); no journal batch at or below the snapshot remains
// in etcd and the history before its collection is compacted.
func TestLateStandbyCatchesUpFromSnapshotAndJournal(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	store := newDirStore(t)
	small := withSnapshots(store, 1<<40, func(c *ha.Config) { c.MaxBatchBytes = ha.MinMaxBatchBytes })
	ma := newStandby(t)
	a := startNode(t, cli, "a", ma, small)
	waitRole(t, a, ha.RoleLeader)
	tok := workload(t, ma, 90)
	must(t, "Sync", a.Sync(boundedCtx(t)))
	if spans := batchSpans(t, cli); len(spans) < 3 {
		t.Fatalf("journal batches %v; want several", spans)
	}
	r, err := cli.Get(boundedCtx(t), prefix+"/none")
	must(t, "Get", err)
	before := r.Header.Revision

	seq, err := a.Snapshot(boundedCtx(t))
	must(t, "Snapshot", err)
	if last := lastSeq(t, ma); seq != last {
		t.Fatalf("snapshot at %d, the journal's last record %d", seq, last)
	}
	if st := a.Snapshots(); st.Seq != seq || st.GCSeq != seq || st.Published != 1 {
		t.Fatalf("leader's figures %+v after the snapshot at %d", st, seq)
	}
	// After the snapshot: more objects, an upsert and a pin moved on.
	for i := range 12 {
		key := fmt.Sprintf("after/%02d", i)
		_, wt, err := ma.PutStart(c1, key, 4096, mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(time.Duration(i+2) * time.Minute)})
		must(t, "PutStart "+key, err)
		must(t, "PutEnd "+key, ma.PutEnd(c1, key, mm.SelectAll, wt))
		_, err = ma.AdvanceTime(time.Second)
		must(t, "AdvanceTime", err)
	}
	_, wt, err := ma.UpsertStart(c1, "obj/0000", 8192, mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(3 * time.Hour)})
	must(t, "UpsertStart", err)
	must(t, "UpsertEnd", ma.UpsertEnd(c1, "obj/0000", mm.SelectAll, wt))
	must(t, "Sync", a.Sync(boundedCtx(t)))

	spans := batchSpans(t, cli)
	if len(spans) == 0 {
		t.Fatal("no journal after the snapshot")
	}
	for _, s := range spans {
		if s[1] <= seq {
			t.Fatalf("batch %v at or below the snapshot's sequence %d is still in etcd", s, seq)
		}
	}
	if _, err := cli.Get(boundedCtx(t), ha.JournalPrefix(prefix), clientv3.WithPrefix(), clientv3.WithRev(before)); !errorsIs(err, rpctypes.ErrCompacted) {
		t.Fatalf("revision %d after the collection: %v, want ErrCompacted", before, err)
	}

	mb := newStandby(t)
	b := startNode(t, cli, "b", mb, small)
	must(t, "late standby WaitApplied", b.WaitApplied(boundedCtx(t), a.DurableSeq()))
	if st := b.Snapshots(); st.Seq != seq || st.LoadFailures != 0 {
		t.Fatalf("late standby's figures %+v: it did not start from the snapshot at %d", st, seq)
	}
	want := view(t, ma)
	must(t, "Close the leader", a.Close())
	waitRole(t, b, ha.RoleLeader)
	sameObjects(t, view(t, mb), want)
	// The write in flight when the snapshot was taken ends on the promoted
	// standby: its replicas become readable. Its pending soft-pin intent
	// is not in the snapshot (docs/CONTRACT.md §12.3: a snapshot holds no
	// writes in flight), so that End commits no deadline here, unlike on
	// a standby that applied the journal from the write's Start.
	must(t, "PutEnd in-flight on the promoted standby", mb.PutEnd(c1, "in-flight", mm.SelectAll, tok))
	rs, err := mb.GetReplicaList("in-flight")
	must(t, "GetReplicaList in-flight", err)
	if len(rs) == 0 || rs[0].Status != mm.ReplicaComplete {
		t.Fatalf("in-flight after its End: %+v", rs)
	}
	must(t, "Sync on the new leader", b.Sync(boundedCtx(t)))
}

func errorsIs(err, target error) bool { return err != nil && errors.Is(err, target) }

// backend is etcd's backend size now: the file and the part in use.
func backend(t *testing.T, cli *clientv3.Client) (int64, int64) {
	t.Helper()
	st, err := cli.Status(boundedCtx(t), cli.Endpoints()[0])
	must(t, "Status", err)
	return st.DbSize, st.DbSizeInUse
}

// journalKeys counts the journal batches in etcd.
func journalKeys(t *testing.T, cli *clientv3.Client) int64 {
	t.Helper()
	r, err := cli.Get(boundedCtx(t), ha.JournalPrefix(prefix), clientv3.WithPrefix(), clientv3.WithCountOnly())
	must(t, "Get journal", err)
	return r.Count
}

// journalBytes is the size of the journal batches in etcd.
func journalBytes(t *testing.T, cli *clientv3.Client) int64 {
	t.Helper()
	r, err := cli.Get(boundedCtx(t), ha.JournalPrefix(prefix), clientv3.WithPrefix())
	must(t, "Get journal", err)
	var n int64
	for _, kv := range r.Kvs {
		n += int64(len(kv.Value))
	}
	return n
}

// Under a sustained write load (a fixed number of writes, each round
// acknowledged by Sync) the leader's snapshots keep etcd bounded: its
// backend file stays a fraction of the journal volume shipped (without
// collection it would hold all of it, and without compaction its history
// too), and after a last snapshot no journal is left and the backend in
// use is small.
func TestBackendStaysBoundedUnderSustainedWrites(t *testing.T) {
	const (
		rounds     = 60
		perRound   = 1000
		keys       = 2000
		everyBytes = 256 << 10
		// The backend's bound: a few snapshot intervals of journal and
		// their history, etcd's own pages, bbolt's free pages.
		bound = 16 * everyBytes
	)
	cli := etcdtest.Start(t).Client(t)
	store := newDirStore(t)
	ma := newStandby(t)
	a := startNode(t, cli, "a", ma, withSnapshots(store, everyBytes, nil))
	waitRole(t, a, ha.RoleLeader)
	_, err := ma.MountSegment(c1, "mem0", 1<<40, 1<<30, mm.PoolMemory)
	must(t, "MountSegment", err)
	var maxSize, maxJournal int64
	for r := range rounds {
		for i := range perRound {
			key := fmt.Sprintf("k/%05d", (r*perRound+i)%keys)
			_, wt, err := ma.UpsertStart(c1, key, 4096, mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(time.Hour)})
			must(t, "UpsertStart "+key, err)
			must(t, "UpsertEnd "+key, ma.UpsertEnd(c1, key, mm.SelectAll, wt))
		}
		must(t, "Sync", a.Sync(boundedCtx(t)))
		// The leader snapshots in the background: on a slow machine the
		// writes may run ahead of it. Wait for it once the journal in
		// etcd holds three intervals (then a snapshot is due: the leader
		// asked for one at each interval shipped since the last), so the
		// bound below checks the collection, not the relative speeds.
		for {
			published := a.Snapshots().Published
			if journalBytes(t, cli) <= 3*everyBytes {
				break
			}
			must(t, "waiting for the due snapshot", a.WaitSnapshots(boundedCtx(t), func(s ha.SnapshotStats) bool { return s.Published > published }))
		}
		size, inUse := backend(t, cli)
		j := journalBytes(t, cli)
		t.Logf("round %d: shipped %d bytes, journal in etcd %d bytes, backend %d bytes (%d in use), snapshots %+v",
			r, a.ShippedBytes(), j, size, inUse, a.Snapshots())
		maxSize, maxJournal = max(maxSize, size), max(maxJournal, j)
	}
	shipped := int64(a.ShippedBytes())
	if shipped < 2*bound {
		t.Fatalf("only %d journal bytes shipped: the load does not exceed the bound %d", shipped, bound)
	}
	if maxSize > bound || maxJournal > bound {
		t.Fatalf("etcd's backend reached %d bytes and its journal %d, bound %d (shipped %d)", maxSize, maxJournal, bound, shipped)
	}
	seq, err := a.Snapshot(boundedCtx(t))
	must(t, "Snapshot", err)
	if k := journalKeys(t, cli); k != 0 || seq != lastSeq(t, ma) {
		t.Fatalf("after the last snapshot (at %d of %d): %d journal keys", seq, lastSeq(t, ma), k)
	}
	size, inUse := backend(t, cli)
	if inUse > 4*everyBytes {
		t.Fatalf("after the last snapshot the backend uses %d bytes (file %d)", inUse, size)
	}
	t.Logf("shipped %d journal bytes (%d records); backend max %d bytes, now %d (%d in use); journal in etcd max %d bytes; %d snapshots",
		shipped, lastSeq(t, ma), maxSize, size, inUse, maxJournal, a.Snapshots().Published)
}
