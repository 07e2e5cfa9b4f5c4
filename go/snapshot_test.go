package mooncakemeta_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
)

// Snapshots: round trip, corrupt input, candidates, files.

// fill writes a pinned, a hard-pinned, a leased and an unleased object,
// in two tenants.
func fill(t *testing.T, m *mm.Master) {
	t.Helper()
	put(t, m.Keyspace, "pinned", 4096, mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(time.Hour)})
	put(t, m.Keyspace, "hard", 4096, mm.ReplicateConfig{WithHardPin: true})
	put(t, m.Tenant("acme"), "leased", 8192, mm.ReplicateConfig{ReplicaNum: 2})
	_, err := m.Tenant("acme").GetReplicaList("leased")
	must(t, "GetReplicaList", err)
	put(t, m.Keyspace, "unleased", 4096, mm.ReplicateConfig{})
}

// docs/CONTRACT.md §6: snapshot keeps soft-pin deadlines; restore applies the survival
// rule (live lease, active pin or hard pin) and the encoding is canonical.
func TestSnapshotRoundTripKeepsPinsAndIsCanonical(t *testing.T) {
	src := newMaster(t)
	fill(t, src)
	must(t, "Remove", src.Remove("unleased", true))
	snap, err := src.Snapshot()
	must(t, "Snapshot", err)

	dst := newMaster(t) // same clock instant, same segments
	rep, err := dst.Restore(snap)
	must(t, "Restore", err)
	if rep.ObjectsRestored != 3 || rep.ObjectsDropped != 0 || rep.SoftPinsRestored != 1 || rep.CreatedAt != t0 {
		t.Fatalf("report: %+v", rep)
	}
	if got, want := deadline(t, dst.Keyspace, "pinned"), deadline(t, src.Keyspace, "pinned"); got != want {
		t.Fatalf("restored deadline %s, want %s", got, want)
	}
	if g := gauge(t, dst); g != 1 {
		t.Fatalf("restored gauge = %d, want 1", g)
	}
	again, err := dst.Snapshot()
	must(t, "Snapshot after restore", err)
	if !bytes.Equal(again, snap) {
		t.Fatal("snapshot(restore(s)) != s")
	}
	invariants(t, dst)
}

// docs/CONTRACT.md §6 survival: an object with neither a live lease, an active pin nor a
// hard pin is dropped; an expired deadline is normalised.
func TestRestoreDropsUnprotectedObjects(t *testing.T) {
	src := newMaster(t)
	fill(t, src)
	snap, err := src.Snapshot()
	must(t, "Snapshot", err)

	dst := newMaster(t)
	advance(t, dst, 2*time.Hour) // leases and the pin have expired
	rep, err := dst.Restore(snap)
	must(t, "Restore", err)
	if rep.ObjectsRestored != 1 || rep.ObjectsDropped != 3 || rep.SoftPinsRestored != 0 || rep.SoftPinsNormalised != 1 {
		t.Fatalf("report: %+v", rep)
	}
	if _, _, err := dst.SoftPinDeadline("hard"); err != nil {
		t.Fatalf("hard-pinned object dropped: %v", err)
	}
	if g := gauge(t, dst); g != 0 {
		t.Fatalf("gauge = %d, want 0", g)
	}
	invariants(t, dst)
}

// docs/CONTRACT.md §6 failure: corrupt, truncated or empty input is DESERIALIZE_FAIL and
// leaves the live master untouched.
func TestRestoreRejectsCorruptInputAndKeepsState(t *testing.T) {
	src := newMaster(t)
	fill(t, src)
	snap, err := src.Snapshot()
	must(t, "Snapshot", err)

	dst := newMaster(t)
	put(t, dst.Keyspace, "mine", 4096, mm.ReplicateConfig{WithSoftPin: true})
	before, err := dst.Snapshot()
	must(t, "Snapshot", err)

	flipped := bytes.Clone(snap)
	flipped[len(flipped)/2] ^= 0x40
	for name, data := range map[string][]byte{
		"flipped byte": flipped,
		"truncated":    snap[:len(snap)-1],
		"header only":  snap[:8],
		"empty":        {},
		"nil":          nil,
		"garbage":      []byte("not a snapshot at all"),
	} {
		_, err := dst.Restore(data)
		wantErr(t, name, err, mm.ErrDeserializeFail)
		after, err := dst.Snapshot()
		must(t, "Snapshot", err)
		if !bytes.Equal(after, before) {
			t.Fatalf("%s: a failed restore changed the master", name)
		}
	}
	_, err = dst.RestoreCandidates()
	wantErr(t, "no candidates", err, mm.ErrDeserializeFail)
	_, err = dst.RestoreCandidates(flipped, nil)
	wantErr(t, "only bad candidates", err, mm.ErrDeserializeFail)
	invariants(t, dst)
}

// docs/CONTRACT.md §6 candidates: newest valid first; rejected newer ones are counted.
func TestRestoreCandidatesPicksNewestValid(t *testing.T) {
	src := newMaster(t)
	put(t, src.Keyspace, "old", 4096, mm.ReplicateConfig{WithSoftPin: true})
	older, err := src.Snapshot()
	must(t, "Snapshot", err)
	advance(t, src, time.Second)
	put(t, src.Keyspace, "new", 4096, mm.ReplicateConfig{WithSoftPin: true})
	newer, err := src.Snapshot()
	must(t, "Snapshot", err)
	advance(t, src, time.Second)
	newest, err := src.Snapshot()
	must(t, "Snapshot", err)
	newest[len(newest)-1] ^= 1 // the newest is corrupt

	dst := newMaster(t)
	advance(t, dst, 2*time.Second)
	rep, err := dst.RestoreCandidates(older, newest, newer)
	must(t, "RestoreCandidates", err)
	if rep.Candidate != 2 || rep.CandidatesRejected != 1 || rep.ObjectsRestored != 2 {
		t.Fatalf("report: %+v", rep)
	}
	if _, _, err := dst.SoftPinDeadline("new"); err != nil {
		t.Fatalf("the newer snapshot was not the one restored: %v", err)
	}
}

// Snapshot files are written atomically and restored as candidates; an
// unreadable file is a rejected candidate.
func TestSnapshotFiles(t *testing.T) {
	src := newMaster(t)
	fill(t, src)
	dir := t.TempDir()
	path := filepath.Join(dir, "master.snap")
	must(t, "SaveSnapshot", src.SaveSnapshot(path))
	onDisk, err := os.ReadFile(path)
	must(t, "ReadFile", err)
	inMemory, err := src.Snapshot()
	must(t, "Snapshot", err)
	if !bytes.Equal(onDisk, inMemory) {
		t.Fatal("the file differs from the in-memory snapshot")
	}

	dst := newMaster(t)
	rep, err := dst.RestoreFiles(filepath.Join(dir, "missing.snap"), path)
	must(t, "RestoreFiles", err)
	if rep.Candidate != 1 || rep.CandidatesRejected != 1 {
		t.Fatalf("report: %+v", rep)
	}
	_, err = dst.RestoreFiles(filepath.Join(dir, "missing.snap"))
	wantErr(t, "RestoreFiles(missing)", err, mm.ErrDeserializeFail)
	err = src.SaveSnapshot(filepath.Join(dir, "no-such-dir", "x.snap"))
	wantErr(t, "SaveSnapshot into a missing directory", err, mm.ErrSerializeFail)
	err = src.SaveSnapshot("bad\x00path")
	wantErr(t, "SaveSnapshot with a NUL", err, mm.ErrInvalidParams)
}

// docs/CONTRACT.md §6, §12.3: a snapshot's journal sequence, read from its
// header, is the one a standby restored from it resumes after; a master
// without journal records none (0); a damaged frame is refused.
func TestSnapshotJournalSeq(t *testing.T) {
	plain := newMaster(t)
	fill(t, plain)
	snap, err := plain.Snapshot()
	must(t, "Snapshot", err)
	if seq, err := mm.SnapshotJournalSeq(snap); err != nil || seq != 0 {
		t.Fatalf("no journal: seq %d, err %v", seq, err)
	}

	for _, wall := range []bool{false, true} {
		opts := []mm.Option{mm.WithJournalCapacityBytes(1 << 20)}
		if !wall {
			opts = append(opts, mm.WithDeterministic(t0))
		}
		m, err := mm.New(opts...)
		must(t, "New", err)
		t.Cleanup(func() { m.Close() })
		_, err = m.MountSegment(1, "seg", 1<<40, 64<<20, mm.PoolMemory)
		must(t, "MountSegment", err)
		fill(t, m)
		st, err := m.JournalStats()
		must(t, "JournalStats", err)
		snap, err := m.Snapshot()
		must(t, "Snapshot", err)
		seq, err := mm.SnapshotJournalSeq(snap)
		if err != nil || seq != st.LastSeq || seq == 0 {
			t.Fatalf("wall %v: seq %d, err %v; the journal's last is %d", wall, seq, err, st.LastSeq)
		}
		standby, err := mm.New(mm.WithStandby(true))
		must(t, "New standby", err)
		t.Cleanup(func() { standby.Close() })
		_, err = standby.Restore(snap)
		must(t, "Restore on the standby", err)
		if _, applied, err := standby.StandbyState(); err != nil || applied != seq {
			t.Fatalf("the restored standby's applied sequence is %d (%v), the header's %d", applied, err, seq)
		}

		for i, damage := range []func([]byte){
			func(b []byte) { b[0] ^= 1 },           // magic
			func(b []byte) { b[8] = 9 },            // version
			func(b []byte) { b[12] = 1 },           // flags
			func(b []byte) { b[16]++ },             // payload length
			func(b []byte) { b[len(b)-1] ^= 0x80 }, // payload: the CRC
		} {
			bad := bytes.Clone(snap)
			damage(bad)
			if _, err := mm.SnapshotJournalSeq(bad); !errors.Is(err, mm.ErrDeserializeFail) {
				t.Fatalf("damage %d: %v, want ErrDeserializeFail", i, err)
			}
		}
		if _, err := mm.SnapshotJournalSeq(snap[:20]); !errors.Is(err, mm.ErrDeserializeFail) {
			t.Fatalf("truncated: %v", err)
		}

		// A write in flight makes the snapshot format 5, whose header
		// carries the journal sequence at the same place.
		if _, _, err := m.PutStart(c1, "in-flight", 4096, mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(time.Hour)}); err != nil {
			t.Fatalf("PutStart: %v", err)
		}
		st, err = m.JournalStats()
		must(t, "JournalStats", err)
		v5, err := m.Snapshot()
		must(t, "Snapshot", err)
		if v5[8] != 5 {
			t.Fatalf("a snapshot with a write in flight is format %d, want 5", v5[8])
		}
		if seq, err := mm.SnapshotJournalSeq(v5); err != nil || seq != st.LastSeq {
			t.Fatalf("format 5: seq %d, err %v; the journal's last is %d", seq, err, st.LastSeq)
		}
	}

	// Format 5 without a journal: sequence 0, not an error.
	if _, _, err := plain.PutStart(c1, "in-flight", 4096, mm.ReplicateConfig{}); err != nil {
		t.Fatalf("PutStart: %v", err)
	}
	v5, err := plain.Snapshot()
	must(t, "Snapshot", err)
	if v5[8] != 5 {
		t.Fatalf("a snapshot with a write in flight is format %d, want 5", v5[8])
	}
	if seq, err := mm.SnapshotJournalSeq(v5); err != nil || seq != 0 {
		t.Fatalf("format 5 without journal: seq %d, err %v", seq, err)
	}
}

// docs/CONTRACT.md §10: counters are not part of a snapshot; a restore
// keeps the counts the master had (it neither resets nor replaces them).
func TestRestoreKeepsTheCounters(t *testing.T) {
	m := newMaster(t)
	fill(t, m)
	snap, err := m.Snapshot()
	must(t, "Snapshot", err)
	_, err = m.RunEviction(0.5, 0.5)
	must(t, "RunEviction", err)
	before, err := m.Metrics()
	must(t, "Metrics", err)
	if before.EvictionAttempts == 0 {
		t.Fatal("the eviction run was not counted")
	}
	_, err = m.Restore(snap)
	must(t, "Restore", err)
	after, err := m.Metrics()
	must(t, "Metrics after Restore", err)
	if after.EvictionAttempts != before.EvictionAttempts || after.EvictedKeys != before.EvictedKeys {
		t.Fatalf("counters after restore: attempts %d evicted %d, before %d %d",
			after.EvictionAttempts, after.EvictedKeys, before.EvictionAttempts, before.EvictedKeys)
	}
}
