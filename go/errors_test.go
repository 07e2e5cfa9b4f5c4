package mooncakemeta_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
)

// Errors, configuration and the manual clock.

// Every sentinel names a code the library defines, matches any *Error of
// its code through errors.Is (also wrapped), and no other.
func TestSentinelsMatchByCode(t *testing.T) {
	sentinels := []*mm.Error{
		mm.ErrInternal, mm.ErrSegmentNotFound, mm.ErrSegmentAlreadyExists, mm.ErrNoAvailableHandle,
		mm.ErrInvalidParams, mm.ErrIllegalClient, mm.ErrInvalidWrite, mm.ErrReplicaNotReady,
		mm.ErrNotFound, mm.ErrAlreadyExists, mm.ErrHasLease, mm.ErrHasReplicationTask,
		mm.ErrNoReplicationTask, mm.ErrReplicaNotFound, mm.ErrReplicaGone, mm.ErrReplicaBusy,
		mm.ErrUnavailableInCurrentStatus, mm.ErrSerializeFail, mm.ErrDeserializeFail,
		mm.ErrNullArgument, mm.ErrInvalidUTF8, mm.ErrBufferTooSmall, mm.ErrStructSizeUnsupported,
		mm.ErrUnknownFlags, mm.ErrPanic, mm.ErrStaleWriteToken, mm.ErrClockUnsupported,
		mm.ErrGroupRetentionFull, mm.ErrJournalOverrun,
	}
	seen := map[mm.Code]bool{}
	for _, s := range sentinels {
		name := s.Code.String()
		if strings.HasPrefix(name, "UNKNOWN_STATUS") || seen[s.Code] {
			t.Fatalf("sentinel code %d: name %q (duplicate %v)", s.Code, name, seen[s.Code])
		}
		seen[s.Code] = true
		err := fmt.Errorf("wrapped: %w", &mm.Error{Code: s.Code, Message: "details"})
		for _, other := range sentinels {
			if got := errors.Is(err, other); got != (other == s) {
				t.Fatalf("errors.Is(%v, %v) = %v", err, other, got)
			}
		}
		if errors.Is(err, mm.ErrClosed) {
			t.Fatalf("%v matches ErrClosed", err)
		}
	}
	if got := mm.Code(-4242).String(); got != "UNKNOWN_STATUS(-4242)" {
		t.Fatalf("unknown code name %q", got)
	}
	if got := mm.CodeObjectHasLease.String(); got != "OBJECT_HAS_LEASE" {
		t.Fatalf("name %q", got)
	}
}

// Errors from the library carry its code and message.
func TestLibraryErrorsCarryCodeAndMessage(t *testing.T) {
	m := newMaster(t)
	_, err := m.GetReplicaList("missing")
	var e *mm.Error
	if !errors.As(err, &e) || e.Code != mm.CodeObjectNotFound || !strings.Contains(e.Message, "mooncake_meta_get_replica_list") {
		t.Fatalf("error %#v", err)
	}
	if !strings.HasPrefix(err.Error(), "mooncakemeta: OBJECT_NOT_FOUND: ") {
		t.Fatalf("Error() = %q", err.Error())
	}
}

// docs/CONTRACT.md §9: configuration rules are checked at creation, durations
// are whole milliseconds, and the zero Config is not usable.
func TestConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  mm.Option
	}{
		{"default TTL above the maximum", mm.WithDefaultSoftPinTTL(25 * time.Hour)},
		{"eviction ratio above 1", mm.WithEvictionRatio(1.5)},
		{"watermark 0", mm.WithEvictionHighWatermarkRatio(0)},
		{"release not above discard", mm.WithPutStartReleaseTimeout(30 * time.Second)},
		{"no shards", mm.WithShardCount(0)},
		{"expected objects above the maximum", mm.WithExpectedObjects(mm.MaxExpectedObjects + 1)},
		{"lease not whole milliseconds", mm.WithKVLeaseTTL(1500 * time.Microsecond)},
		{"negative interval", mm.WithSweepInterval(-time.Second)},
		{"clock at MaxInstant", mm.WithManualClock(mm.MaxInstant)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mm.New(tc.opt)
			wantErr(t, "New", err, mm.ErrInvalidParams)
			c := mm.DefaultConfig()
			tc.opt(&c)
			wantErr(t, "Validate", c.Validate(), mm.ErrInvalidParams)
		})
	}
	_, err := mm.NewWithConfig(mm.Config{})
	wantErr(t, "zero Config", err, mm.ErrInvalidParams)
	must(t, "DefaultConfig", mm.DefaultConfig().Validate())
	must(t, "DeterministicConfig", mm.DeterministicConfig(t0).Validate())

	// Non-default settings take effect: a 1 s lease and a 1 min default TTL.
	m := newMaster(t, mm.WithKVLeaseTTL(time.Second), mm.WithDefaultSoftPinTTL(time.Minute), mm.WithShardCount(8))
	put(t, m.Keyspace, "k", 4096, mm.ReplicateConfig{WithSoftPin: true})
	if got := deadline(t, m.Keyspace, "k"); got != at(t0.Add(time.Minute)) {
		t.Fatalf("deadline %s, want t0+1min", got)
	}
	_, err = m.GetReplicaList("k")
	must(t, "GetReplicaList", err)
	wantErr(t, "Remove under the lease", m.Remove("k", false), mm.ErrHasLease)
	advance(t, m, time.Second)
	must(t, "Remove after the lease", m.Remove("k", false))
}

// docs/CONTRACT.md §9: ExpectedObjects pre-sizes the shards (0 = none, at
// most MaxExpectedObjects) and a presized master holds more objects than it
// expected like any other.
func TestExpectedObjects(t *testing.T) {
	if d := mm.DefaultConfig().ExpectedObjects; d != 0 {
		t.Fatalf("DefaultConfig().ExpectedObjects = %d, want 0", d)
	}
	c := mm.DefaultConfig()
	c.ExpectedObjects = mm.MaxExpectedObjects
	must(t, "Validate at the maximum", c.Validate())
	m := newMaster(t, mm.WithShardCount(4), mm.WithExpectedObjects(64))
	for i := 0; i < 200; i++ {
		put(t, m.Keyspace, fmt.Sprintf("k%d", i), 64, mm.ReplicateConfig{WithSoftPin: true})
	}
	if n, err := m.KeyCount(); err != nil || n != 200 {
		t.Fatalf("KeyCount = %d, %v; want 200", n, err)
	}
	if g := gauge(t, m); g != 200 {
		t.Fatalf("soft-pin gauge %d, want 200", g)
	}
	invariants(t, m)
}

// docs/CONTRACT.md §9: CommitPresized (off by default) allocates the presized
// tables at creation and makes them resident, or falls back silently; a
// master built with it works like any other, with or without presizing.
func TestCommitPresized(t *testing.T) {
	if mm.DefaultConfig().CommitPresized {
		t.Fatal("DefaultConfig().CommitPresized = true, want false")
	}
	c := mm.DefaultConfig()
	mm.WithCommitPresized(true)(&c)
	if !c.CommitPresized {
		t.Fatal("WithCommitPresized(true) did not set Config.CommitPresized")
	}
	c.ExpectedObjects = 10000
	must(t, "Validate", c.Validate())
	m := newMaster(t, mm.WithShardCount(4), mm.WithExpectedObjects(10000), mm.WithCommitPresized(true))
	for i := 0; i < 200; i++ {
		put(t, m.Keyspace, fmt.Sprintf("k%d", i), 64, mm.ReplicateConfig{WithSoftPin: true})
	}
	if n, err := m.KeyCount(); err != nil || n != 200 {
		t.Fatalf("KeyCount = %d, %v; want 200", n, err)
	}
	rs, err := m.GetReplicaList("k7")
	must(t, "GetReplicaList", err)
	if len(rs) != 1 || rs[0].Size != 64 {
		t.Fatalf("GetReplicaList(k7) = %+v, want one replica of 64 bytes", rs)
	}
	invariants(t, m)
	// Without ExpectedObjects there is nothing to commit.
	invariants(t, newMaster(t, mm.WithCommitPresized(true)))
}

// docs/CONTRACT.md §1: the manual clock only moves forward; a system-clock master
// refuses manual-clock calls.
func TestManualClock(t *testing.T) {
	m := newMaster(t)
	if now(t, m) != t0 {
		t.Fatal("clock does not start at t0")
	}
	if got := advance(t, m, 1500*time.Millisecond); got != t0+1500 {
		t.Fatalf("AdvanceTime → %d", got)
	}
	must(t, "SetTime", m.SetTime(t0+5000))
	wantErr(t, "SetTime backwards", m.SetTime(t0), mm.ErrClockUnsupported)
	_, err := m.AdvanceTime(time.Microsecond)
	wantErr(t, "AdvanceTime(1µs)", err, mm.ErrInvalidParams)
	if now(t, m) != t0+5000 {
		t.Fatal("a refused clock call moved the clock")
	}

	sys, err := mm.New(mm.WithSoftPinCleanupInterval(0), mm.WithEvictionCheckInterval(0), mm.WithSweepInterval(0))
	must(t, "New(system clock)", err)
	defer sys.Close()
	wantErr(t, "SetTime on the system clock", sys.SetTime(t0), mm.ErrClockUnsupported)
	wall, err := sys.Now()
	must(t, "Now", err)
	if d := time.Since(wall.Time()); d < -time.Minute || d > time.Minute {
		t.Fatalf("system clock reads %v", wall.Time())
	}
	if mm.InstantOf(wall.Time()) != wall {
		t.Fatal("Instant does not round-trip through time.Time")
	}
	if mm.MaxInstant.Add(time.Hour) != mm.MaxInstant {
		t.Fatal("Instant.Add does not saturate")
	}
	if got := mm.Instant(math.MaxUint64).Add(0); got != mm.MaxInstant {
		t.Fatalf("Instant.Add(0) of an instant past MaxInstant = %d, want MaxInstant", got)
	}
}

// The linked library is the one the header describes.
func TestLibraryVersion(t *testing.T) {
	if mm.ABIVersion() != 1 || !strings.Contains(mm.Version(), ".") {
		t.Fatalf("ABI %d, version %q", mm.ABIVersion(), mm.Version())
	}
}

// errors.Is with a typed-nil *Error target is false, never a panic.
func TestIsWithATypedNilTargetIsFalse(t *testing.T) {
	var target *mm.Error
	if errors.Is(mm.ErrNotFound, target) {
		t.Fatal("errors.Is(ErrNotFound, (*Error)(nil)) = true")
	}
}
