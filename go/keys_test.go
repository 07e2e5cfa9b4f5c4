package mooncakemeta_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
)

// Tenants, listing, removal, segments and replication tasks.

// docs/CONTRACT.md §2: a key lives in its tenant; "" and "default" are the
// default tenant.
func TestTenantsAreSeparateKeyspaces(t *testing.T) {
	m := newMaster(t)
	acme := m.Tenant("acme")
	put(t, acme, "k", 4096, mm.ReplicateConfig{})
	if ok, _ := m.Exist("k"); ok {
		t.Fatal("default tenant sees acme's key")
	}
	if ok, err := acme.Exist("k"); err != nil || !ok {
		t.Fatalf("acme.Exist = %v, %v", ok, err)
	}
	put(t, m.Keyspace, "d", 4096, mm.ReplicateConfig{})
	if ok, _ := m.Tenant(mm.DefaultTenant).Exist("d"); !ok {
		t.Fatal(`Tenant("default") is not the default tenant`)
	}
	if m.Name() != mm.DefaultTenant || acme.Name() != "acme" || acme.Master() != m {
		t.Fatal("keyspace accessors")
	}
	if n, _ := m.KeyCount(); n != 2 {
		t.Fatalf("KeyCount = %d, want 2", n)
	}
	_, err := m.Tenant("bad\xff").Exist("k")
	wantErr(t, "invalid UTF-8 tenant", err, mm.ErrInvalidUTF8)
}

// ListKeys pages in byte order with a cursor; RemoveByRegex stays in its
// tenant unless asked for all.
func TestListKeysAndRemoveByRegex(t *testing.T) {
	m := newMaster(t)
	var want []string
	for _, key := range []string{"b/2", "a/1", "b/1", "a/2", "c"} {
		put(t, m.Keyspace, key, 1024, mm.ReplicateConfig{})
	}
	put(t, m.Tenant("other"), "a/9", 1024, mm.ReplicateConfig{})
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		keys, next, err := m.ListKeys("", after, 2)
		must(t, "ListKeys", err)
		got = append(got, keys...)
		if next == "" {
			break
		}
		if pages > 5 {
			t.Fatal("ListKeys does not terminate")
		}
		after = next
	}
	want = []string{"a/1", "a/2", "b/1", "b/2", "c"}
	if !slices.Equal(got, want) {
		t.Fatalf("paged listing %v, want %v", got, want)
	}
	keys, next, err := m.ListKeys("b/", "", 0)
	must(t, "ListKeys(prefix)", err)
	if !slices.Equal(keys, []string{"b/1", "b/2"}) || next != "" {
		t.Fatalf("prefix listing %v %q", keys, next)
	}

	n, err := m.RemoveByRegex("^a/", true)
	must(t, "RemoveByRegex", err)
	if n != 2 {
		t.Fatalf("RemoveByRegex removed %d, want 2 (the other tenant's a/9 stays)", n)
	}
	n, err = m.RemoveByRegexAllTenants("^a/", true)
	must(t, "RemoveByRegexAllTenants", err)
	if n != 1 {
		t.Fatalf("RemoveByRegexAllTenants removed %d, want 1", n)
	}
	_, err = m.RemoveByRegex("(", true)
	wantErr(t, "bad pattern", err, mm.ErrInvalidParams)
	n, err = m.RemoveAll(false)
	must(t, "RemoveAll", err)
	if n != 3 {
		t.Fatalf("RemoveAll removed %d, want 3", n)
	}
}

// docs/CONTRACT.md §3 Remove: missing, not ready, lease; pins never block.
func TestRemoveRules(t *testing.T) {
	m := newMaster(t)
	wantErr(t, "missing", m.Remove("k", false), mm.ErrNotFound)
	_, tok, err := m.PutStart(c1, "k", 4096, mm.ReplicateConfig{WithSoftPin: true, WithHardPin: true})
	must(t, "PutStart", err)
	wantErr(t, "PROCESSING", m.Remove("k", true), mm.ErrReplicaNotReady)
	must(t, "PutEnd", m.PutEnd(c1, "k", mm.SelectAll, tok))
	_, err = m.GetReplicaList("k")
	must(t, "GetReplicaList", err)
	wantErr(t, "leased", m.Remove("k", false), mm.ErrHasLease)
	advance(t, m, lease)
	must(t, "soft- and hard-pinned, lease expired", m.Remove("k", false))
	if g := gauge(t, m); g != 0 {
		t.Fatalf("gauge %d after removing the pinned object", g)
	}
	invariants(t, m)
}

// docs/CONTRACT.md §3 Remove order: a replica not COMPLETE (ErrReplicaNotReady),
// a write's or a running copy's PROCESSING target, even forced; a task
// whose replicas are all COMPLETE is ErrHasReplicationTask (core tests).
func TestRemoveReportsAWriteBeforeATask(t *testing.T) {
	m := newMaster(t)
	put(t, m.Keyspace, "copy", 4096, mm.ReplicateConfig{PreferredSegments: []string{"mem0"}})
	_, err := m.CopyStart("copy", "mem1")
	must(t, "CopyStart", err)
	for _, force := range []bool{false, true} {
		wantErr(t, "copy running", m.Remove("copy", force), mm.ErrReplicaNotReady)
	}
	_, tok, err := m.PutStart(c1, "both", 4096, mm.ReplicateConfig{ReplicaNum: 1, PreferredSegments: []string{"mem0"}, NofSSDReplicaNum: 1})
	must(t, "PutStart", err)
	must(t, "PutEnd(memory)", m.PutEnd(c1, "both", mm.SelectMemory, tok))
	_, err = m.CopyStart("both", "mem1")
	must(t, "CopyStart", err)
	for _, force := range []bool{false, true} {
		wantErr(t, "write and copy", m.Remove("both", force), mm.ErrReplicaNotReady)
	}
	must(t, "PutEnd(nof)", m.PutEnd(c1, "both", mm.SelectNofSSD, tok))
	wantErr(t, "copy only", m.Remove("both", true), mm.ErrReplicaNotReady)
	must(t, "CopyEnd", m.CopyEnd("both"))
	must(t, "Remove", m.Remove("both", true))
	invariants(t, m)
}

// docs/CONTRACT.md §2: unmount drops the segment's replicas and erases objects
// left without one; names and ids round-trip.
func TestSegments(t *testing.T) {
	m := newMaster(t)
	id, err := m.MountSegment(c2, "extra", 8<<40, segSize, mm.PoolMemory)
	must(t, "MountSegment", err)
	again, err := m.MountSegment(c2, "extra", 8<<40, segSize, mm.PoolMemory)
	if err != nil || again != id {
		t.Fatalf("identical remount: %d, %v (first %d)", again, err, id)
	}
	_, err = m.MountSegment(c2, "extra", 9<<40, segSize, mm.PoolMemory)
	wantErr(t, "same name elsewhere", err, mm.ErrSegmentAlreadyExists)
	name, err := m.SegmentName(id)
	if err != nil || name != "extra" {
		t.Fatalf("SegmentName = %q, %v", name, err)
	}
	long := "segment-with-a-name-longer-than-the-first-buffer-of-sixty-four-bytes"
	lid, err := m.MountSegment(c2, long, 10<<40, segSize, mm.PoolMemory)
	must(t, "MountSegment(long)", err)
	if name, err := m.SegmentName(lid); err != nil || name != long {
		t.Fatalf("SegmentName(long) = %q, %v", name, err)
	}
	_, err = m.SegmentName(9999)
	wantErr(t, "unknown id", err, mm.ErrSegmentNotFound)

	put(t, m.Keyspace, "k", 4096, mm.ReplicateConfig{PreferredSegments: []string{"extra"}})
	rs, err := m.GetReplicaList("k")
	must(t, "GetReplicaList", err)
	if rs[0].Segment != id {
		t.Fatalf("preferred segment ignored: replica on %d, want %d", rs[0].Segment, id)
	}
	_, err = m.UnmountSegment(c1, "extra")
	wantErr(t, "unmount by another owner", err, mm.ErrIllegalClient)
	rep, err := m.UnmountClient(c2)
	must(t, "UnmountClient", err)
	if rep.ReplicasDropped != 1 || rep.ObjectsErased != 1 {
		t.Fatalf("unmount report %+v", rep)
	}
	_, err = m.UnmountSegment(c2, "extra")
	wantErr(t, "unmount twice", err, mm.ErrSegmentNotFound)
	invariants(t, m)
}

// docs/CONTRACT.md §3/§4.6: copy, move, promotion and local-disk replicas work
// and never touch soft-pin state.
func TestReplicationTasksLeaveSoftPinAlone(t *testing.T) {
	m := newMaster(t)
	put(t, m.Keyspace, "k", 4096, mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(time.Hour)})
	pinned := deadline(t, m.Keyspace, "k")
	other := otherSegment(t, m, "k")

	targets, err := m.CopyStart("k", other)
	must(t, "CopyStart", err)
	if len(targets) != 1 || targets[0].Status != mm.ReplicaProcessing {
		t.Fatalf("copy targets %+v", targets)
	}
	_, err = m.CopyStart("k", other)
	wantErr(t, "second task", err, mm.ErrHasReplicationTask)
	must(t, "CopyRevoke", m.CopyRevoke("k"))
	wantErr(t, "CopyEnd without a task", m.CopyEnd("k"), mm.ErrNoReplicationTask)
	_, err = m.CopyStart("k", "nowhere")
	wantErr(t, "unknown segment", err, mm.ErrSegmentNotFound)

	from := "mem0"
	if other == "mem0" {
		from = "mem1"
	}
	target, err := m.MoveStart("k", from, other)
	must(t, "MoveStart", err)
	must(t, "MoveEnd", m.MoveEnd("k"))
	rs, err := m.GetReplicaList("k")
	must(t, "GetReplicaList", err)
	if len(rs) != 1 || rs[0].ID != target.ID {
		t.Fatalf("after move: %+v (target %+v)", rs, target)
	}
	_, err = m.MoveStart("k", from, other)
	wantErr(t, "move from a segment without a replica", err, mm.ErrReplicaNotFound)
	wantErr(t, "MoveRevoke without a task", m.MoveRevoke("k"), mm.ErrNoReplicationTask)

	disk, err := m.AddLocalDiskReplica(c2, "cold", 4096)
	must(t, "AddLocalDiskReplica", err)
	if disk.Kind != mm.ReplicaLocalDisk || disk.Segment != mm.NoSegment || disk.Client != c2 {
		t.Fatalf("local-disk replica %+v", disk)
	}
	staged, err := m.PromotionStart("cold", other)
	must(t, "PromotionStart", err)
	if staged.Kind != mm.ReplicaMemory || staged.Status != mm.ReplicaProcessing {
		t.Fatalf("staged %+v", staged)
	}
	must(t, "PromotionEnd", m.PromotionEnd("cold", true))
	_, err = m.PromotionStart("cold")
	wantErr(t, "promotion with a memory replica", err, mm.ErrUnavailableInCurrentStatus)
	_, err = m.AddLocalDiskReplica(c2, "cold", 1)
	wantErr(t, "size mismatch", err, mm.ErrInvalidParams)

	if got := deadline(t, m.Keyspace, "k"); got != pinned {
		t.Fatalf("a replication task moved the deadline: %s, want %s", got, pinned)
	}
	if d := deadline(t, m.Keyspace, "cold"); d != "none" {
		t.Fatalf("promotion pinned the object: %s", d)
	}
	if !errors.Is(m.PromotionEnd("cold", false), mm.ErrNoReplicationTask) {
		t.Fatal("PromotionEnd without a task")
	}
	invariants(t, m)
}
