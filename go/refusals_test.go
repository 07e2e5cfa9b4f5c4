package mooncakemeta_test

import (
	"testing"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
)

// docs/CONTRACT.md §3 batch forms: a malformed key (empty, or not UTF-8)
// fails on its own, as a single call on it would; the other keys are
// processed and their results stay with them.
func TestABatchKeyThatIsMalformedFailsAlone(t *testing.T) {
	m := newMaster(t)
	keys := []string{"a", "", "\xff", "b"}
	starts, err := m.BatchPutStart(c1, keys, []uint64{4096, 4096, 4096, 8192}, mm.ReplicateConfig{})
	wantErr(t, "BatchPutStart", err, mm.ErrInvalidParams)
	wantErr(t, "empty key", starts[1].Err, mm.ErrInvalidParams)
	wantErr(t, "non-UTF-8 key", starts[2].Err, mm.ErrInvalidUTF8)
	must(t, "keys[0]", starts[0].Err)
	must(t, "keys[3]", starts[3].Err)
	if len(starts[3].Replicas) != 1 || starts[3].Replicas[0].Size != 8192 {
		t.Fatalf("keys[3] got %+v, want its own 8192-byte replica", starts[3].Replicas)
	}
	errs, err := m.BatchPutEnd(c1, keys, mm.SelectAll, nil)
	wantErr(t, "BatchPutEnd", err, mm.ErrInvalidParams)
	must(t, "End keys[0]", errs[0])
	wantErr(t, "End non-UTF-8 key", errs[2], mm.ErrInvalidUTF8)
	errs, err = m.BatchRemove(keys, true)
	wantErr(t, "BatchRemove", err, mm.ErrInvalidParams)
	must(t, "Remove keys[3]", errs[3])
	if n, err := m.KeyCount(); err != nil || n != 0 {
		t.Fatalf("KeyCount %d, %v: both good keys removed", n, err)
	}
	invariants(t, m)
}

// docs/CONTRACT.md §3 PutEnd: with no write in flight an End selecting a
// copy's PROCESSING target is ErrInvalidWrite (the End never completes it);
// one selecting only other kinds is an OK no-op.
func TestAnEndWithNoWriteInFlightRefusesATasksTarget(t *testing.T) {
	m := newMaster(t)
	tok := put(t, m.Keyspace, "k", 4096, mm.ReplicateConfig{PreferredSegments: []string{"mem0"}})
	_, err := m.CopyStart("k", "mem1")
	must(t, "CopyStart", err)
	wantErr(t, "PutEnd(all)", m.PutEnd(c1, "k", mm.SelectAll, tok), mm.ErrInvalidWrite)
	wantErr(t, "UpsertEnd(memory)", m.UpsertEnd(c1, "k", mm.SelectMemory, mm.NoToken), mm.ErrInvalidWrite)
	must(t, "PutEnd(NOF_SSD)", m.PutEnd(c1, "k", mm.SelectNofSSD, tok))
	must(t, "CopyEnd", m.CopyEnd("k"))
	must(t, "PutEnd(all) after the copy", m.PutEnd(c1, "k", mm.SelectAll, tok))
	invariants(t, m)
}

// docs/CONTRACT.md §2: a client's segments of one pool cover distinct
// bytes; another client's, or the other pool's, may sit at the same
// addresses.
func TestAMountOverAClientsSegmentIsRefused(t *testing.T) {
	m := newMaster(t) // mem0 at 1<<40
	_, err := m.MountSegment(c1, "b", (1<<40)+4096, 4096, mm.PoolMemory)
	wantErr(t, "a mount over mem0's bytes", err, mm.ErrInvalidParams)
	_, err = m.MountSegment(c2, "c", 1<<40, 4096, mm.PoolMemory)
	must(t, "another client", err)
	_, err = m.MountSegment(c1, "d", 1<<40, 4096, mm.PoolNofSSD)
	must(t, "the other pool", err)
	invariants(t, m)
}
