package mooncakemeta_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
)

// Deterministic cleanup and eviction, the soft-pin gauge, and metrics.

// docs/CONTRACT.md §4.8/§4.9: cleanup clears exactly the due deadlines (run_cleanup_at
// does not move the clock), the gauge follows, and the index empties.
func TestCleanupExpiresDueDeadlinesAndGaugeFollows(t *testing.T) {
	m := newMaster(t)
	for _, p := range []struct {
		key string
		ttl time.Duration
	}{{"a", time.Second}, {"b", 2 * time.Second}, {"c", 3 * time.Second}} {
		put(t, m.Keyspace, p.key, 4096, mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(p.ttl)})
	}
	put(t, m.Keyspace, "plain", 4096, mm.ReplicateConfig{})
	if g := gauge(t, m); g != 3 {
		t.Fatalf("gauge = %d, want 3", g)
	}
	if _, live, err := m.IndexSizes(); err != nil || live != 3 {
		t.Fatalf("index live = %d, %v; want 3", live, err)
	}

	// Nothing due: nothing popped, no shard touched.
	stats, err := m.RunCleanup()
	must(t, "RunCleanup", err)
	if stats.Popped != 0 || stats.Expired != 0 || stats.ShardsTouched != 0 {
		t.Fatalf("cleanup with nothing due: %+v", stats)
	}

	stats, err = m.RunCleanupAt(t0.Add(time.Second))
	must(t, "RunCleanupAt", err)
	if stats.Expired != 1 || stats.Popped != 1 {
		t.Fatalf("cleanup at t0+1s: %+v, want 1 expired", stats)
	}
	if now(t, m) != t0 {
		t.Fatal("RunCleanupAt moved the clock")
	}
	if g := gauge(t, m); g != 2 {
		t.Fatalf("gauge = %d, want 2", g)
	}
	if deadline(t, m.Keyspace, "a") != "none" || deadline(t, m.Keyspace, "b") == "none" {
		t.Fatal("cleanup cleared the wrong deadline")
	}

	advance(t, m, 5*time.Second)
	stats, err = m.RunCleanup()
	must(t, "RunCleanup", err)
	if stats.Expired != 2 {
		t.Fatalf("cleanup at t0+5s: %+v, want 2 expired", stats)
	}
	met, err := m.Metrics()
	must(t, "Metrics", err)
	if met.SoftPinKeyCount != 0 || met.IndexLiveRegistrations != 0 || met.CleanupExpired != 3 ||
		met.CleanupCycles != 3 || met.KeyCount != 4 {
		t.Fatalf("metrics after cleanup: %+v", met)
	}
	// Objects outlive their pins: only the pin goes.
	if n, _ := m.KeyCount(); n != 4 {
		t.Fatalf("KeyCount = %d, want 4", n)
	}
	invariants(t, m)
}

// docs/CONTRACT.md §4.9/§10: the gauge is exported as master_soft_pin_key_count in the
// Prometheus text, with the per-segment series.
func TestPrometheusTextCarriesGaugeAndSegments(t *testing.T) {
	m := newMaster(t)
	put(t, m.Keyspace, "a", 4096, mm.ReplicateConfig{WithSoftPin: true})
	text, err := m.MetricsPrometheus()
	must(t, "MetricsPrometheus", err)
	for _, want := range []string{"\nmaster_soft_pin_key_count 1\n", "\nmaster_key_count 1\n", `segment="mem0"`} {
		if !strings.Contains("\n"+text, want) {
			t.Fatalf("Prometheus text lacks %q:\n%s", want, text)
		}
	}
}

// docs/CONTRACT.md §5/§4.7: candidates go in (lease, creation) order; the first pass
// skips active pins, hard pins are never evicted; the second pass takes
// pinned candidates when allowed.
func TestEvictionOrderFollowsLeaseThenAge(t *testing.T) {
	m := newMaster(t)
	// Leases: PutEnd sets lease = now, so each key's lease is its End time.
	keys := []string{"k0", "k1", "k2", "k3", "k4"}
	for i, key := range keys {
		cfg := mm.ReplicateConfig{}
		if i == 0 {
			cfg = mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(time.Hour)}
		}
		put(t, m.Keyspace, key, 4096, cfg)
		advance(t, m, time.Millisecond)
	}
	put(t, m.Keyspace, "hard", 4096, mm.ReplicateConfig{WithHardPin: true})
	// A read renews k1's lease past the others: it becomes the youngest.
	advance(t, m, time.Second)
	_, err := m.GetReplicaList("k1")
	must(t, "GetReplicaList", err)
	advance(t, m, lease+time.Second) // every lease has expired

	alive := func() string {
		var s []string
		for _, key := range append(keys, "hard") {
			if _, _, err := m.SoftPinDeadline(key); err == nil { // grants no lease
				s = append(s, key)
			} else if !errors.Is(err, mm.ErrNotFound) {
				t.Fatal(err)
			}
		}
		return strings.Join(s, " ")
	}

	// Base: 5 (the hard-pinned object is not in it). target 0.4 → 2 objects,
	// oldest lease first, skipping the pinned k0.
	rep, err := m.RunEviction(0.4, 0)
	must(t, "RunEviction", err)
	if rep.Base != 5 || rep.Evicted != 2 || rep.EvictedPinned != 0 {
		t.Fatalf("first run: %+v", rep)
	}
	if got := alive(); got != "k0 k1 k4 hard" {
		t.Fatalf("after first run alive = %q, want \"k0 k1 k4 hard\"", got)
	}
	// Everything: the first pass takes k4 then k1; the second pass takes
	// the pinned k0 (allowed by default); the hard pin stays.
	rep, err = m.RunEviction(1, 1)
	must(t, "RunEviction", err)
	if rep.Evicted != 3 || rep.EvictedPinned != 1 {
		t.Fatalf("second run: %+v", rep)
	}
	if got := alive(); got != "hard" {
		t.Fatalf("after second run alive = %q, want \"hard\"", got)
	}
	if g := gauge(t, m); g != 0 {
		t.Fatalf("gauge = %d after evicting the pinned object", g)
	}
	met, err := m.Metrics()
	must(t, "Metrics", err)
	if met.EvictedKeys != 5 || met.EvictionAttempts != 2 {
		t.Fatalf("eviction metrics: %+v", met)
	}
	invariants(t, m)
}

// docs/CONTRACT.md §5: with allow_evict_soft_pinned_objects off, the second pass never
// takes an active pin.
func TestEvictionSparesPinsWhenNotAllowed(t *testing.T) {
	m := newMaster(t, mm.WithAllowEvictSoftPinned(false))
	put(t, m.Keyspace, "pinned", 4096, mm.ReplicateConfig{WithSoftPin: true})
	put(t, m.Keyspace, "plain", 4096, mm.ReplicateConfig{})
	advance(t, m, time.Second)
	rep, err := m.RunEviction(1, 1)
	must(t, "RunEviction", err)
	if rep.Evicted != 1 || rep.EvictedPinned != 0 {
		t.Fatalf("report: %+v", rep)
	}
	if _, _, err := m.SoftPinDeadline("pinned"); err != nil {
		t.Fatalf("pinned object evicted: %v", err)
	}
}

// docs/CONTRACT.md §4.7: an expired pin protects nothing even before cleanup, and the
// run normalises it.
func TestEvictionIgnoresAndNormalisesExpiredPins(t *testing.T) {
	m := newMaster(t, mm.WithAllowEvictSoftPinned(false))
	put(t, m.Keyspace, "k", 4096, mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(time.Second)})
	advance(t, m, 2*time.Second)
	rep, err := m.RunEviction(1, 1)
	must(t, "RunEviction", err)
	if rep.Evicted != 1 || rep.Normalised != 1 {
		t.Fatalf("report: %+v", rep)
	}
	if g := gauge(t, m); g != 0 {
		t.Fatalf("gauge = %d", g)
	}
	invariants(t, m)
}

// docs/CONTRACT.md §5 trigger: below the high watermark nothing runs unless forced.
func TestEvictIfNeededRunsOnlyWhenTriggered(t *testing.T) {
	m := newMaster(t)
	put(t, m.Keyspace, "k", 4096, mm.ReplicateConfig{})
	advance(t, m, time.Second)
	_, ran, err := m.EvictIfNeeded(false)
	must(t, "EvictIfNeeded", err)
	if ran {
		t.Fatal("eviction ran below the watermark")
	}
	rep, ran, err := m.EvictIfNeeded(true)
	must(t, "EvictIfNeeded(force)", err)
	if !ran || rep.Evicted != 1 {
		t.Fatalf("forced eviction: ran %v, %+v", ran, rep)
	}
	_, err = m.RunEviction(1.5, 0)
	wantErr(t, "RunEviction(1.5)", err, mm.ErrInvalidParams)
}

// docs/CONTRACT.md §1 and §3.1: a stale write is swept and its buffers held until the
// release timeout, then freed; allocated bytes follow.
func TestSweepAndReleaseDiscarded(t *testing.T) {
	m := newMaster(t)
	_, _, err := m.PutStart(c1, "k", 4096, mm.ReplicateConfig{})
	must(t, "PutStart", err)
	release := 10 * time.Minute
	n, err := m.SweepStaleWritesAt(t0.Add(release))
	must(t, "SweepStaleWritesAt", err)
	if n != 0 {
		t.Fatalf("swept %d writes at exactly the release timeout", n)
	}
	n, err = m.SweepStaleWritesAt(t0.Add(release + time.Millisecond))
	must(t, "SweepStaleWritesAt", err)
	if n != 1 {
		t.Fatalf("swept %d writes, want 1", n)
	}
	met, _ := m.Metrics()
	if met.KeyCount != 0 || met.MemoryAllocatedBytes != 4096 || met.DiscardedStagingBytes != 4096 {
		t.Fatalf("after sweep: %+v", met)
	}
	freed, err := m.ReleaseDiscardedAt(t0.Add(2*release + time.Millisecond))
	must(t, "ReleaseDiscardedAt", err)
	met, _ = m.Metrics()
	if freed != 1 || met.MemoryAllocatedBytes != 0 {
		t.Fatalf("released %d, allocated %d", freed, met.MemoryAllocatedBytes)
	}
	must(t, "RunMaintenanceTick", m.RunMaintenanceTick())
	invariants(t, m)
}
