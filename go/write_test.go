package mooncakemeta_test

import (
	"errors"
	"testing"
	"time"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
)

// Write tokens, batch calls with per-key errors, and the write lifecycle
// errors.

// docs/CONTRACT.md §7: every Start returns a new token; End/Revoke with a token
// that is not the current write's is STALE_WRITE_TOKEN whether or not a
// write is in flight; NoToken behaves as upstream.
func TestWriteTokenRejectsStaleEnds(t *testing.T) {
	m := newMaster(t)
	_, tok1, err := m.PutStart(c1, "k", 4096, mm.ReplicateConfig{})
	must(t, "PutStart", err)
	if tok1 == mm.NoToken {
		t.Fatal("PutStart returned no token")
	}
	wantErr(t, "PutEnd(wrong token)", m.PutEnd(c1, "k", mm.SelectAll, tok1+1000), mm.ErrStaleWriteToken)
	wantErr(t, "PutRevoke(wrong token)", m.PutRevoke(c1, "k", mm.SelectAll, tok1+1000), mm.ErrStaleWriteToken)
	must(t, "PutEnd(token)", m.PutEnd(c1, "k", mm.SelectAll, tok1))

	// The in-place upsert gets a new token; the old one is stale now,
	// even for the object whose write it was.
	_, tok2, err := m.UpsertStart(c1, "k", 4096, mm.ReplicateConfig{})
	must(t, "UpsertStart", err)
	if tok2 == tok1 || tok2 == mm.NoToken {
		t.Fatalf("upsert token %d (put token %d)", tok2, tok1)
	}
	wantErr(t, "UpsertEnd(old token)", m.UpsertEnd(c1, "k", mm.SelectAll, tok1), mm.ErrStaleWriteToken)
	must(t, "UpsertEnd(no token)", m.UpsertEnd(c1, "k", mm.SelectAll, mm.NoToken))
	// No write in flight: a stale token is still stale, the current one
	// and NoToken are a no-op End.
	wantErr(t, "PutEnd(old token) after the write", m.PutEnd(c1, "k", mm.SelectAll, tok1), mm.ErrStaleWriteToken)
	must(t, "PutEnd(current token) after the write", m.PutEnd(c1, "k", mm.SelectAll, tok2))
	must(t, "PutEnd(no token) after the write", m.PutEnd(c1, "k", mm.SelectAll, mm.NoToken))
	wantErr(t, "PutRevoke with no write in flight", m.PutRevoke(c1, "k", mm.SelectAll, mm.NoToken), mm.ErrInvalidWrite)
	invariants(t, m)
}

// docs/CONTRACT.md §3 PutEnd order: OBJECT_NOT_FOUND, then ILLEGAL_CLIENT, then
// STALE_WRITE_TOKEN.
func TestEndErrorOrder(t *testing.T) {
	m := newMaster(t)
	wantErr(t, "missing", m.PutEnd(c1, "nope", mm.SelectAll, 99), mm.ErrNotFound)
	_, tok, err := m.PutStart(c1, "k", 4096, mm.ReplicateConfig{})
	must(t, "PutStart", err)
	wantErr(t, "other client", m.PutEnd(c2, "k", mm.SelectAll, tok+1), mm.ErrIllegalClient)
	wantErr(t, "stale", m.PutEnd(c1, "k", mm.SelectAll, tok+1), mm.ErrStaleWriteToken)
	_, _, err = m.PutStart(c1, "k", 4096, mm.ReplicateConfig{})
	wantErr(t, "young write", err, mm.ErrAlreadyExists)
	_, _, err = m.PutStart(c1, "", 4096, mm.ReplicateConfig{})
	wantErr(t, "empty key", err, mm.ErrInvalidParams)
	_, _, err = m.PutStart(c1, "big", 1<<40, mm.ReplicateConfig{})
	wantErr(t, "no room", err, mm.ErrNoAvailableHandle)
}

// docs/CONTRACT.md §3 batch forms: keys processed in order as single calls with
// per-key results; the call's error is the first failure.
func TestBatchCallsReportPerKeyErrors(t *testing.T) {
	m := newMaster(t)
	put(t, m.Keyspace, "exists", 4096, mm.ReplicateConfig{})
	keys := []string{"a", "exists", "b"}
	starts, err := m.BatchPutStart(c1, keys, []uint64{4096, 4096, 8192},
		mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(time.Minute)})
	wantErr(t, "BatchPutStart", err, mm.ErrAlreadyExists)
	if starts[0].Err != nil || starts[2].Err != nil || !errors.Is(starts[1].Err, mm.ErrAlreadyExists) {
		t.Fatalf("per-key start errors: %v %v %v", starts[0].Err, starts[1].Err, starts[2].Err)
	}
	if len(starts[0].Replicas) != 1 || starts[2].Replicas[0].Size != 8192 || starts[1].Replicas != nil {
		t.Fatalf("per-key replicas: %+v", starts)
	}

	// Tokens per key: b's is wrong.
	tokens := []mm.WriteToken{starts[0].Token, mm.NoToken, starts[2].Token + 1000}
	errs, err := m.BatchPutEnd(c1, keys, mm.SelectAll, tokens)
	wantErr(t, "BatchPutEnd", err, mm.ErrStaleWriteToken)
	if errs[0] != nil || errs[1] != nil || !errors.Is(errs[2], mm.ErrStaleWriteToken) {
		t.Fatalf("per-key end errors: %v", errs)
	}
	errs, err = m.BatchPutEnd(c1, []string{"b"}, mm.SelectAll, nil)
	must(t, "BatchPutEnd(b, no tokens)", err)
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	if deadline(t, m.Keyspace, "a") != at(t0.Add(time.Minute)) || gauge(t, m) != 2 {
		t.Fatal("the batch's shared soft-pin request was not committed per key")
	}

	exist, err := m.BatchExist([]string{"a", "missing", "b"})
	must(t, "BatchExist", err)
	if !exist[0].Exists || exist[1].Exists || !exist[2].Exists {
		t.Fatalf("BatchExist: %+v", exist)
	}

	advance(t, m, lease) // the leases BatchExist granted have expired
	gets, err := m.BatchGetReplicaList([]string{"a", "missing", "exists"})
	wantErr(t, "BatchGetReplicaList", err, mm.ErrNotFound)
	if len(gets[0].Replicas) != 1 || !errors.Is(gets[1].Err, mm.ErrNotFound) || len(gets[2].Replicas) != 1 {
		t.Fatalf("BatchGetReplicaList: %+v", gets)
	}

	// Leases from the Get above block a non-forced remove of a and exists.
	errs, err = m.BatchRemove([]string{"b", "a", "missing"}, false)
	wantErr(t, "BatchRemove", err, mm.ErrHasLease)
	if errs[0] != nil || !errors.Is(errs[1], mm.ErrHasLease) || !errors.Is(errs[2], mm.ErrNotFound) {
		t.Fatalf("BatchRemove: %v", errs)
	}
	errs, err = m.BatchRemove([]string{"a"}, true)
	must(t, "BatchRemove(force)", err)

	// Empty batches are fine; mismatched arrays refuse every key.
	if res, err := m.BatchExist(nil); err != nil || len(res) != 0 {
		t.Fatalf("empty batch: %v, %v", res, err)
	}
	res, err := m.BatchPutStart(c1, []string{"x", "y"}, []uint64{1}, mm.ReplicateConfig{})
	wantErr(t, "mismatched sizes", err, mm.ErrInvalidParams)
	if len(res) != 2 || !errors.Is(res[0].Err, mm.ErrInvalidParams) || !errors.Is(res[1].Err, mm.ErrInvalidParams) {
		t.Fatalf("mismatched sizes: %+v", res)
	}
	invariants(t, m)
}

// A batch the library refuses as a whole fails even when it has no key to
// carry the failure, as the single calls do.
func TestEmptyBatchesTheLibraryRefusesFail(t *testing.T) {
	m := newMaster(t)
	bad := m.Tenant("bad\xff")
	_, err := bad.BatchExist(nil)
	wantErr(t, "BatchExist, bad tenant", err, mm.ErrInvalidUTF8)
	_, err = bad.BatchGetReplicaList(nil)
	wantErr(t, "BatchGetReplicaList, bad tenant", err, mm.ErrInvalidUTF8)
	_, err = bad.BatchRemove(nil, false)
	wantErr(t, "BatchRemove, bad tenant", err, mm.ErrInvalidUTF8)
	_, err = bad.BatchPutStart(c1, nil, nil, mm.ReplicateConfig{})
	wantErr(t, "BatchPutStart, bad tenant", err, mm.ErrInvalidUTF8)
	_, err = m.BatchPutEnd(c1, nil, mm.Selector(9), nil)
	wantErr(t, "BatchPutEnd, unknown selector", err, mm.ErrInvalidParams)
	_, err = m.BatchPutRevoke(c1, nil, mm.Selector(9), nil)
	wantErr(t, "BatchPutRevoke, unknown selector", err, mm.ErrInvalidParams)
}

// A batch revoke and upsert behave as the single calls, key by key.
func TestBatchUpsertAndRevoke(t *testing.T) {
	m := newMaster(t)
	put(t, m.Keyspace, "a", 4096, mm.ReplicateConfig{WithSoftPin: true})
	// Copy a's data to a second segment: an in-place upsert then returns
	// two replicas, more than the batch layout's stride of one.
	_, err := m.CopyStart("a", otherSegment(t, m, "a"))
	must(t, "CopyStart", err)
	must(t, "CopyEnd", m.CopyEnd("a"))
	starts, err := m.BatchUpsertStart(c1, []string{"a", "n"}, []uint64{4096, 4096}, mm.ReplicateConfig{})
	must(t, "BatchUpsertStart", err)
	if len(starts[0].Replicas) != 2 || len(starts[1].Replicas) != 1 {
		t.Fatalf("BatchUpsertStart replicas: %d, %d", len(starts[0].Replicas), len(starts[1].Replicas))
	}
	errs, err := m.BatchPutRevoke(c1, []string{"a", "n"}, mm.SelectAll,
		[]mm.WriteToken{starts[0].Token, starts[1].Token})
	must(t, "BatchPutRevoke", err)
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	// Revoking an in-place upsert erases the object and its deadline.
	if n, _ := m.KeyCount(); n != 0 || gauge(t, m) != 0 {
		t.Fatalf("after revokes: %d keys, gauge %d", n, gauge(t, m))
	}
	invariants(t, m)
}

// docs/CONTRACT.md §2: NOF_SSD replicas through the explicit path, and ends per
// selector.
func TestSecondPoolReplicasAndSelectors(t *testing.T) {
	m := newMaster(t)
	rs, tok, err := m.PutStart(c1, "k", 4096, mm.ReplicateConfig{ReplicaNum: 1, NofSSDReplicaNum: 1})
	must(t, "PutStart", err)
	if len(rs) != 2 || rs[0].Kind == rs[1].Kind {
		t.Fatalf("replicas: %+v", rs)
	}
	must(t, "PutEnd(MEMORY)", m.PutEnd(c1, "k", mm.SelectMemory, tok))
	got, err := m.GetReplicaList("k")
	must(t, "GetReplicaList", err)
	if len(got) != 1 || got[0].Kind != mm.ReplicaMemory || got[0].Status != mm.ReplicaComplete {
		t.Fatalf("readable after the MEMORY end: %+v", got)
	}
	must(t, "PutEnd(NOF_SSD)", m.PutEnd(c1, "k", mm.SelectNofSSD, tok))
	got, err = m.GetReplicaList("k")
	must(t, "GetReplicaList", err)
	if len(got) != 2 {
		t.Fatalf("readable after both ends: %+v", got)
	}
	_, _, err = m.PutStart(c1, "nof-only", 4096, mm.ReplicateConfig{NofSSDReplicaNum: 1})
	must(t, "PutStart(NOF_SSD only)", err)
	_, _, err = m.PutStart(c1, "legacy-nof", 4096, mm.ReplicateConfig{Legacy: true, NofSSDReplicaNum: 1})
	wantErr(t, "NOF_SSD through the legacy path", err, mm.ErrInvalidParams)
}

// otherSegment returns the memory segment that does not hold key's single
// replica.
func otherSegment(t *testing.T, m *mm.Master, key string) string {
	t.Helper()
	rs, err := m.GetReplicaList(key)
	must(t, "GetReplicaList", err)
	name, err := m.SegmentName(rs[0].Segment)
	must(t, "SegmentName", err)
	if name == "mem0" {
		return "mem1"
	}
	return "mem0"
}

// docs/CONTRACT.md §2: an Upsert that names no group keeps the object's group —
// through the legacy path (which has no group field) and through the
// explicit path with Group empty, in place and resized; naming another
// group is ErrInvalidParams. Membership shows through the shared lease: a
// read of one member blocks the non-forced removal of the others.
func TestUpsertWithoutGroupKeepsTheGroup(t *testing.T) {
	m := newMaster(t)
	grouped := mm.ReplicateConfig{ReplicaNum: 1, Group: "g"}
	for _, key := range []string{"a", "b", "c", "d", "e"} {
		put(t, m.Keyspace, key, 4096, grouped)
	}
	upsert(t, m.Keyspace, "b", 4096, mm.ReplicateConfig{Legacy: true})
	upsert(t, m.Keyspace, "c", 8192, mm.ReplicateConfig{Legacy: true})
	upsert(t, m.Keyspace, "d", 4096, mm.ReplicateConfig{})
	upsert(t, m.Keyspace, "e", 8192, mm.ReplicateConfig{})
	_, _, err := m.UpsertStart(c1, "b", 4096, mm.ReplicateConfig{Group: "h"})
	wantErr(t, "UpsertStart naming another group", err, mm.ErrInvalidParams)
	ok, err := m.Exist("a")
	must(t, "Exist", err)
	if !ok {
		t.Fatal("a does not exist")
	}
	for _, key := range []string{"b", "c", "d", "e"} {
		wantErr(t, "Remove "+key+" under the group lease", m.Remove(key, false), mm.ErrHasLease)
	}
	invariants(t, m)
}
