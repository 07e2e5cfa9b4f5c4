package mooncakemeta_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
)

const retainTTL = time.Minute

// Per-group results, the shared TTL checks refusing the whole call, the
// admission limit and errors.Is on ErrGroupRetentionFull.
func TestRetainGroupsResultsAndLimits(t *testing.T) {
	m := newMaster(t, mm.WithMaxRetainedGroups(2), mm.WithMaxGroupRetentionTTL(time.Hour))
	rs, err := m.RetainGroups([]string{"a", "", "b", "c"}, retainTTL)
	if err != nil {
		t.Fatalf("RetainGroups: %v", err)
	}
	want := t0 + mm.Instant(retainTTL/time.Millisecond)
	if rs[0].Err != nil || rs[0].Deadline != want || rs[2].Err != nil || rs[2].Deadline != want {
		t.Fatalf("retained groups: %+v", rs)
	}
	if !errors.Is(rs[1].Err, mm.ErrInvalidParams) {
		t.Fatalf("empty id: %v", rs[1].Err)
	}
	if !errors.Is(rs[3].Err, mm.ErrGroupRetentionFull) || rs[3].Deadline != 0 {
		t.Fatalf("over the limit: %+v", rs[3])
	}
	for _, ttl := range []time.Duration{0, time.Hour + time.Millisecond, time.Microsecond} {
		if rs, err := m.RetainGroups([]string{"a"}, ttl); !errors.Is(err, mm.ErrInvalidParams) || rs != nil {
			t.Fatalf("ttl %v: %v %v", ttl, rs, err)
		}
	}
	if rs, err := m.RetainGroups(nil, retainTTL); err != nil || len(rs) != 0 {
		t.Fatalf("empty batch: %v %v", rs, err)
	}
	mt, err := m.Metrics()
	if err != nil || mt.RetainedGroupCount != 2 {
		t.Fatalf("gauge: %d %v", mt.RetainedGroupCount, err)
	}
	if err := m.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// A retained prefix: a read that does not extend it, a member that joins
// late, eviction skipping the group, release, and expiry by cleanup.
func TestRetainedGroupLifecycle(t *testing.T) {
	m := newMaster(t)
	g := mm.ReplicateConfig{Group: "prefix"}
	put(t, m.Keyspace, "p0", 4096, g)
	if _, err := m.RetainGroups([]string{"prefix", "other"}, retainTTL); err != nil {
		t.Fatal(err)
	}
	if _, err := m.AdvanceTime(time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := m.GetReplicaList("p0"); err != nil {
		t.Fatal(err)
	}
	d, ok, err := m.GroupRetentionDeadline("prefix")
	if err != nil || !ok || d != t0+60_000 {
		t.Fatalf("deadline after a read: %d %v %v", d, ok, err)
	}
	put(t, m.Keyspace, "p1", 4096, g)
	put(t, m.Keyspace, "plain", 4096, mm.ReplicateConfig{})
	if _, err := m.AdvanceTime(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	r, err := m.RunEviction(1, 0)
	if err != nil || r.Evicted != 1 {
		t.Fatalf("eviction: %+v %v", r, err)
	}
	keys, _, err := m.ListKeys("", "", 0)
	if err != nil || strings.Join(keys, ",") != "p0,p1" {
		t.Fatalf("left: %v %v", keys, err)
	}
	errs, err := m.ReleaseGroups([]string{"other", "never", ""})
	if err != nil || errs[0] != nil || errs[1] != nil || !errors.Is(errs[2], mm.ErrInvalidParams) {
		t.Fatalf("release: %v %v", errs, err)
	}
	if _, err := m.AdvanceTime(time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := m.RunCleanup(); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := m.GroupRetentionDeadline("prefix"); ok {
		t.Fatal("retention outlived its deadline")
	}
	mt, _ := m.Metrics()
	if mt.RetainedGroupCount != 0 {
		t.Fatalf("gauge after expiry: %d", mt.RetainedGroupCount)
	}
	// Tenants scope groups.
	if _, err := m.Tenant("t2").RetainGroups([]string{"prefix"}, retainTTL); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := m.GroupRetentionDeadline("prefix"); ok {
		t.Fatal("another tenant's retention leaked")
	}
	if err := m.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

func TestRetentionConfigIsValidated(t *testing.T) {
	for _, o := range []mm.Option{mm.WithMaxGroupRetentionTTL(0), mm.WithMaxRetainedGroups(0)} {
		c := mm.DefaultConfig()
		o(&c)
		if err := c.Validate(); !errors.Is(err, mm.ErrInvalidParams) || !strings.Contains(err.Error(), "Config.Max") {
			t.Fatalf("Validate: %v", err)
		}
	}
}
