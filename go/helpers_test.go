package mooncakemeta_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
)

// Shared fixture: a deterministic master (manual clock at t0, background
// work off) with two memory segments and one second-pool segment.

const (
	t0         mm.Instant  = 1_000_000
	c1         mm.ClientID = 1
	c2         mm.ClientID = 2
	defaultTTL             = 30 * time.Minute
	maxTTL                 = 24 * time.Hour
	lease                  = 10 * time.Second
	segSize                = 1 << 20
)

func newMaster(t testing.TB, opts ...mm.Option) *mm.Master {
	t.Helper()
	m, err := mm.New(append([]mm.Option{mm.WithDeterministic(t0)}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	for i, name := range []string{"mem0", "mem1"} {
		if _, err := m.MountSegment(c1, name, uint64(i+1)<<40, segSize, mm.PoolMemory); err != nil {
			t.Fatalf("MountSegment %s: %v", name, err)
		}
	}
	if _, err := m.MountSegment(c1, "nof0", 16<<40, segSize, mm.PoolNofSSD); err != nil {
		t.Fatalf("MountSegment nof0: %v", err)
	}
	return m
}

// put writes key (PutStart + PutEnd of every replica) and returns the
// write's token.
func put(t testing.TB, k mm.Keyspace, key string, size uint64, cfg mm.ReplicateConfig) mm.WriteToken {
	t.Helper()
	_, tok, err := k.PutStart(c1, key, size, cfg)
	if err != nil {
		t.Fatalf("PutStart %q: %v", key, err)
	}
	if err := k.PutEnd(c1, key, mm.SelectAll, tok); err != nil {
		t.Fatalf("PutEnd %q: %v", key, err)
	}
	return tok
}

// upsert writes key with UpsertStart + UpsertEnd.
func upsert(t testing.TB, k mm.Keyspace, key string, size uint64, cfg mm.ReplicateConfig) mm.WriteToken {
	t.Helper()
	_, tok, err := k.UpsertStart(c1, key, size, cfg)
	if err != nil {
		t.Fatalf("UpsertStart %q: %v", key, err)
	}
	if err := k.UpsertEnd(c1, key, mm.SelectAll, tok); err != nil {
		t.Fatalf("UpsertEnd %q: %v", key, err)
	}
	return tok
}

func advance(t testing.TB, m *mm.Master, d time.Duration) mm.Instant {
	t.Helper()
	now, err := m.AdvanceTime(d)
	if err != nil {
		t.Fatalf("AdvanceTime: %v", err)
	}
	return now
}

func now(t testing.TB, m *mm.Master) mm.Instant {
	t.Helper()
	n, err := m.Now()
	if err != nil {
		t.Fatalf("Now: %v", err)
	}
	return n
}

// deadline returns key's committed soft-pin deadline, or "none".
func deadline(t testing.TB, k mm.Keyspace, key string) string {
	t.Helper()
	d, ok, err := k.SoftPinDeadline(key)
	if err != nil {
		t.Fatalf("SoftPinDeadline %q: %v", key, err)
	}
	if !ok {
		return "none"
	}
	return fmt.Sprint(uint64(d))
}

func at(i mm.Instant) string { return fmt.Sprint(uint64(i)) }

func gauge(t testing.TB, m *mm.Master) uint64 {
	t.Helper()
	s, err := m.Metrics()
	if err != nil {
		t.Fatalf("Metrics: %v", err)
	}
	return s.SoftPinKeyCount
}

func invariants(t testing.TB, m *mm.Master) {
	t.Helper()
	if err := m.CheckInvariants(); err != nil {
		t.Fatalf("invariants: %v", err)
	}
}

func wantErr(t testing.TB, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

func must(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
