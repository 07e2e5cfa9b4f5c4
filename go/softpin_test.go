package mooncakemeta_test

import (
	"testing"
	"time"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
)

// Soft-pin actions through both configuration paths, TTL validation, and
// reads that must not renew a pin.

// docs/CONTRACT.md §4.1/§4.3: on a new object, each request commits at the End that
// makes it readable: ENABLE → End + TTL (legacy: the default TTL),
// PRESERVE/DISABLE/ENABLE 0 → none.
func TestActionsOnNewObjectThroughBothConfigPaths(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  mm.ReplicateConfig
		want time.Duration // -1: no deadline
	}{
		{"legacy with_soft_pin=1", mm.ReplicateConfig{WithSoftPin: true}, defaultTTL},
		{"legacy with_soft_pin=0", mm.ReplicateConfig{Legacy: true}, -1},
		{"explicit zero value (PRESERVE)", mm.ReplicateConfig{}, -1},
		{"explicit PRESERVE", mm.ReplicateConfig{SoftPinAction: mm.Preserve}, -1},
		{"explicit ENABLE default TTL", mm.ReplicateConfig{SoftPinAction: mm.Enable}, defaultTTL},
		{"explicit ENABLE 5s", mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(5 * time.Second)}, 5 * time.Second},
		{"explicit ENABLE max TTL", mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(maxTTL)}, maxTTL},
		{"explicit ENABLE 0 (ordinary cache)", mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(0)}, -1},
		{"explicit DISABLE", mm.ReplicateConfig{SoftPinAction: mm.Disable}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMaster(t)
			_, tok, err := m.PutStart(c1, "k", 4096, tc.cfg)
			must(t, "PutStart", err)
			// Nothing commits at Start; every action (PRESERVE included)
			// is the pending intent of the write in flight.
			if got := deadline(t, m.Keyspace, "k"); got != "none" {
				t.Fatalf("deadline after Start = %s, want none", got)
			}
			pending, err := m.HasPendingSoftPin("k")
			must(t, "HasPendingSoftPin", err)
			if !pending {
				t.Fatal("no pending intent after Start")
			}
			end := advance(t, m, 7*time.Second) // the TTL counts from End
			must(t, "PutEnd", m.PutEnd(c1, "k", mm.SelectAll, tok))
			want, wantGauge := "none", uint64(0)
			if tc.want >= 0 {
				want, wantGauge = at(end.Add(tc.want)), 1
			}
			if got := deadline(t, m.Keyspace, "k"); got != want {
				t.Fatalf("deadline after End = %s, want %s", got, want)
			}
			if pending, _ := m.HasPendingSoftPin("k"); pending {
				t.Fatal("pending survives the End that committed it")
			}
			if g := gauge(t, m); g != wantGauge {
				t.Fatalf("gauge = %d, want %d", g, wantGauge)
			}
			invariants(t, m)
		})
	}
}

// docs/CONTRACT.md §4.3 table, row "active D": an upsert of a pinned object applies its
// own action at its End: PRESERVE keeps D, ENABLE replaces it (even with a
// shorter TTL), ENABLE 0 and DISABLE clear it.
func TestActionsOnPinnedObjectThroughBothConfigPaths(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  mm.ReplicateConfig
		want string // "keep", "none" or a TTL from the upsert's End
		ttl  time.Duration
	}{
		{name: "legacy with_soft_pin=1", cfg: mm.ReplicateConfig{WithSoftPin: true}, want: "ttl", ttl: defaultTTL},
		{name: "legacy with_soft_pin=0", cfg: mm.ReplicateConfig{Legacy: true}, want: "keep"},
		{name: "explicit PRESERVE", cfg: mm.ReplicateConfig{}, want: "keep"},
		{name: "explicit ENABLE shorter", cfg: mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(time.Second)}, want: "ttl", ttl: time.Second},
		{name: "explicit ENABLE 0", cfg: mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(0)}, want: "none"},
		{name: "explicit DISABLE", cfg: mm.ReplicateConfig{SoftPinAction: mm.Disable}, want: "none"},
	} {
		for _, size := range []uint64{4096, 8192} { // in place (case B), new size (case C)
			t.Run(tc.name+"/size "+at(mm.Instant(size)), func(t *testing.T) {
				m := newMaster(t)
				put(t, m.Keyspace, "k", 4096, mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(time.Hour)})
				pinned := deadline(t, m.Keyspace, "k")
				advance(t, m, time.Minute)
				_, tok, err := m.UpsertStart(c1, "k", size, tc.cfg)
				must(t, "UpsertStart", err)
				// The committed deadline stays while the upsert is in flight.
				if got := deadline(t, m.Keyspace, "k"); got != pinned {
					t.Fatalf("deadline during upsert = %s, want %s", got, pinned)
				}
				end := advance(t, m, time.Second)
				must(t, "UpsertEnd", m.UpsertEnd(c1, "k", mm.SelectAll, tok))
				want, wantGauge := pinned, uint64(1)
				switch tc.want {
				case "none":
					want, wantGauge = "none", 0
				case "ttl":
					want = at(end.Add(tc.ttl))
				}
				if got := deadline(t, m.Keyspace, "k"); got != want {
					t.Fatalf("deadline after upsert = %s, want %s", got, want)
				}
				if g := gauge(t, m); g != wantGauge {
					t.Fatalf("gauge = %d, want %d", g, wantGauge)
				}
				invariants(t, m)
			})
		}
	}
}

// docs/CONTRACT.md §4.1: a TTL is whole milliseconds, at most the master's maximum, and
// only with ENABLE; the legacy path carries no TTL; every rejection
// happens before any side effect.
func TestSoftPinTTLValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  mm.ReplicateConfig
		ok   bool
	}{
		{"sub-millisecond TTL is not rounded to 0", mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(500 * time.Microsecond)}, false},
		{"fractional milliseconds", mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(1500 * time.Microsecond)}, false},
		{"one nanosecond", mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(time.Nanosecond)}, false},
		{"negative", mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(-time.Millisecond)}, false},
		{"above the maximum", mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(maxTTL + time.Millisecond)}, false},
		{"with PRESERVE", mm.ReplicateConfig{SoftPinAction: mm.Preserve, SoftPinTTL: mm.TTL(time.Second)}, false},
		{"zero with PRESERVE", mm.ReplicateConfig{SoftPinAction: mm.Preserve, SoftPinTTL: mm.TTL(0)}, false},
		{"with DISABLE", mm.ReplicateConfig{SoftPinAction: mm.Disable, SoftPinTTL: mm.TTL(time.Second)}, false},
		{"unknown action", mm.ReplicateConfig{SoftPinAction: 3}, false},
		{"with the legacy WithSoftPin", mm.ReplicateConfig{WithSoftPin: true, SoftPinTTL: mm.TTL(time.Second)}, false},
		{"DISABLE with the legacy WithSoftPin", mm.ReplicateConfig{WithSoftPin: true, SoftPinAction: mm.Disable}, false},
		{"group with the legacy path", mm.ReplicateConfig{Legacy: true, Group: "g"}, false},
		{"negative replica count", mm.ReplicateConfig{ReplicaNum: -1}, false},
		// Counts size the replica buffer: 1<<31 used to make a 100 GB slice.
		{"replica count above the maximum", mm.ReplicateConfig{ReplicaNum: mm.MaxReplicasPerPool + 1}, false},
		{"huge replica count", mm.ReplicateConfig{ReplicaNum: 1 << 31}, false},
		{"huge second-pool count", mm.ReplicateConfig{NofSSDReplicaNum: 1 << 31}, false},
		{"whole milliseconds", mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(1234 * time.Millisecond)}, true},
		{"exactly the maximum", mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(maxTTL)}, true},
		{"zero with ENABLE", mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(0)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMaster(t)
			for _, upsertPath := range []bool{false, true} {
				key := "put"
				start := m.PutStart
				if upsertPath {
					key, start = "upsert", m.UpsertStart
				}
				_, _, err := start(c1, key, 4096, tc.cfg)
				if tc.ok {
					must(t, key, err)
					continue
				}
				wantErr(t, key, err, mm.ErrInvalidParams)
				// No side effect: the key was not created.
				_, _, err = m.SoftPinDeadline(key)
				wantErr(t, key+" after rejection", err, mm.ErrNotFound)
			}
			keys := []string{"b1", "b2"}
			res, err := m.BatchPutStart(c1, keys, []uint64{4096, 4096}, tc.cfg)
			if tc.ok {
				must(t, "BatchPutStart", err)
				return
			}
			wantErr(t, "BatchPutStart", err, mm.ErrInvalidParams)
			for i, r := range res {
				wantErr(t, "BatchPutStart "+keys[i], r.Err, mm.ErrInvalidParams)
			}
			if n, _ := m.KeyCount(); n != 0 {
				t.Fatalf("a refused batch created %d objects", n)
			}
			// The master-independent part is also caught without a master.
			if tc.name != "above the maximum" {
				wantErr(t, "Validate", tc.cfg.Validate(), mm.ErrInvalidParams)
			}
		})
	}
}

// docs/CONTRACT.md §4.6: Get, Exist and their batch forms grant leases only; they never
// extend, reactivate or normalise a soft pin, nor move the gauge.
func TestReadsDoNotRenewSoftPin(t *testing.T) {
	m := newMaster(t)
	put(t, m.Keyspace, "k", 4096, mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(10 * time.Second)})
	pinned := deadline(t, m.Keyspace, "k")
	for i := 0; i < 3; i++ {
		advance(t, m, 3*time.Second)
		if ok, err := m.Exist("k"); err != nil || !ok {
			t.Fatalf("Exist = %v, %v", ok, err)
		}
		_, err := m.GetReplicaList("k")
		must(t, "GetReplicaList", err)
		_, err = m.BatchExist([]string{"k"})
		must(t, "BatchExist", err)
		_, err = m.BatchGetReplicaList([]string{"k"})
		must(t, "BatchGetReplicaList", err)
		if got := deadline(t, m.Keyspace, "k"); got != pinned {
			t.Fatalf("deadline moved by reads: %s, want %s", got, pinned)
		}
	}
	// Past the deadline, reads do not reactivate or normalise it either.
	advance(t, m, 2*time.Second)
	_, err := m.GetReplicaList("k")
	must(t, "GetReplicaList", err)
	if got := deadline(t, m.Keyspace, "k"); got != pinned {
		t.Fatalf("expired deadline touched by a read: %s, want %s", got, pinned)
	}
	if g := gauge(t, m); g != 1 {
		t.Fatalf("gauge = %d, want 1 (stored-but-expired until cleanup)", g)
	}
	stats, err := m.RunCleanup()
	must(t, "RunCleanup", err)
	if stats.Expired != 1 || deadline(t, m.Keyspace, "k") != "none" || gauge(t, m) != 0 {
		t.Fatalf("cleanup: %+v, deadline %s, gauge %d", stats, deadline(t, m.Keyspace, "k"), gauge(t, m))
	}
	invariants(t, m)
}

// docs/CONTRACT.md §4.4: a revoke of the only eligible replica clears pending and never
// commits; a later write starts afresh.
func TestRevokeClearsPendingWithoutCommitting(t *testing.T) {
	m := newMaster(t)
	_, tok, err := m.PutStart(c1, "k", 4096, mm.ReplicateConfig{WithSoftPin: true})
	must(t, "PutStart", err)
	must(t, "PutRevoke", m.PutRevoke(c1, "k", mm.SelectAll, tok))
	_, _, err = m.SoftPinDeadline("k")
	wantErr(t, "after revoking the only replica", err, mm.ErrNotFound)
	if g := gauge(t, m); g != 0 {
		t.Fatalf("gauge = %d after a revoke", g)
	}
	invariants(t, m)
}
