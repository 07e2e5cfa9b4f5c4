package mooncakemeta_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
)

const retainTTL = time.Minute

// Per-group results, the admission limit and errors.Is on
// ErrGroupRetentionFull.
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

// checkEach checks that every one of n results is err's refusal.
func checkEach(t *testing.T, what string, errs []error, n int, err error) {
	t.Helper()
	if !errors.Is(err, mm.ErrInvalidParams) || len(errs) != n {
		t.Fatalf("%s: %d results, %v", what, len(errs), err)
	}
	for i, e := range errs {
		if !errors.Is(e, mm.ErrInvalidParams) {
			t.Fatalf("%s: result %d: %v", what, i, e)
		}
	}
}

// A bad shared argument (the TTL, checked in Go or by the library, or the
// tenant) fails every entry with ErrInvalidParams, returns that error and
// changes nothing; a good call still works.
func TestBadSharedArgumentsFailEveryEntry(t *testing.T) {
	m := newMaster(t, mm.WithMaxGroupRetentionTTL(time.Hour), mm.WithJournalCapacityBytes(1<<20))
	if _, err := m.RetainGroups([]string{"a"}, retainTTL); err != nil {
		t.Fatal(err)
	}
	before, err := m.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"a", "b", ""}
	retainErrs := func(rs []mm.RetainResult) []error {
		errs := make([]error, len(rs))
		for i, r := range rs {
			if r.Deadline != 0 {
				t.Fatalf("refused result %d has deadline %d", i, r.Deadline)
			}
			errs[i] = r.Err
		}
		return errs
	}
	for _, ttl := range []time.Duration{0, -time.Second, time.Hour + time.Millisecond, time.Microsecond} {
		rs, err := m.RetainGroups(ids, ttl)
		checkEach(t, "ttl "+ttl.String(), retainErrs(rs), len(ids), err)
	}
	bad := m.Tenant("a\x00b")
	rs, err := bad.RetainGroups(ids, retainTTL)
	checkEach(t, "retain, bad tenant", retainErrs(rs), len(ids), err)
	if !strings.Contains(err.Error(), "tenant") {
		t.Fatalf("bad tenant: %v", err)
	}
	errs, err := bad.ReleaseGroups(ids)
	checkEach(t, "release, bad tenant", errs, len(ids), err)
	rs, err = m.RetainGroups(nil, 0)
	checkEach(t, "empty batch, ttl 0", retainErrs(rs), 0, err)
	// Nothing changed: the deadlines, the gauge, the journal.
	if d, ok, _ := m.GroupRetentionDeadline("a"); !ok || d != t0+mm.Instant(retainTTL/time.Millisecond) {
		t.Fatalf("a: %d %v", d, ok)
	}
	if _, ok, _ := m.GroupRetentionDeadline("b"); ok {
		t.Fatal("b retained by a refused call")
	}
	after, err := m.Metrics()
	if err != nil || after.RetainedGroupCount != 1 || after.JournalLastSeq != before.JournalLastSeq {
		t.Fatalf("changed: %d groups, journal %d -> %d, %v", after.RetainedGroupCount,
			before.JournalLastSeq, after.JournalLastSeq, err)
	}
	// A good call still works.
	if rs, err := m.RetainGroups([]string{"b"}, retainTTL); err != nil || rs[0].Err != nil {
		t.Fatalf("good retain: %+v %v", rs, err)
	}
	if errs, err := m.ReleaseGroups([]string{"a", "b"}); err != nil || errs[0] != nil || errs[1] != nil {
		t.Fatalf("good release: %v %v", errs, err)
	}
	if mt, _ := m.Metrics(); mt.RetainedGroupCount != 0 {
		t.Fatalf("gauge: %d", mt.RetainedGroupCount)
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

// On a closed master, as a batch: one result per id, each with ErrClosed.
func TestRetentionAfterCloseAnswersEveryEntry(t *testing.T) {
	m := newMaster(t)
	m.Close()
	rs, err := m.RetainGroups([]string{"a", "b"}, retainTTL)
	if !errors.Is(err, mm.ErrClosed) || len(rs) != 2 || !errors.Is(rs[1].Err, mm.ErrClosed) {
		t.Fatalf("retain: %+v %v", rs, err)
	}
	errs, err := m.ReleaseGroups([]string{"a"})
	if !errors.Is(err, mm.ErrClosed) || len(errs) != 1 || !errors.Is(errs[0], mm.ErrClosed) {
		t.Fatalf("release: %v %v", errs, err)
	}
}

// An id that is not UTF-8 fails only its own entry (ErrInvalidUTF8); the
// other groups are retained and released.
func TestAnIDThatIsNotUTF8FailsAlone(t *testing.T) {
	m := newMaster(t, mm.WithMaxGroupRetentionTTL(time.Hour))
	ids := []string{"a", "\xff", "b"}
	rs, err := m.RetainGroups(ids, time.Minute)
	if err != nil || len(rs) != 3 {
		t.Fatalf("RetainGroups: %v, %d results", err, len(rs))
	}
	if rs[0].Err != nil || rs[2].Err != nil || !errors.Is(rs[1].Err, mm.ErrInvalidUTF8) {
		t.Fatalf("RetainGroups results %+v", rs)
	}
	errs, err := m.ReleaseGroups(ids)
	if err != nil || errs[0] != nil || errs[2] != nil || !errors.Is(errs[1], mm.ErrInvalidUTF8) {
		t.Fatalf("ReleaseGroups: %v %v", errs, err)
	}
}
