package mooncakemeta_test

import (
	"fmt"
	"reflect"
	"testing"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
)

// placements writes 200 keys of one replica on a master seeded by seed
// (newMaster's two memory segments, one more of its own) and returns
// where each went.
func placements(t *testing.T, seed uint64) []mm.Replica {
	t.Helper()
	m := newMaster(t, mm.WithSeed(seed))
	if _, err := m.MountSegment(c1, "mem2", 8<<40, segSize, mm.PoolMemory); err != nil {
		t.Fatalf("MountSegment: %v", err)
	}
	var out []mm.Replica
	for i := 0; i < 200; i++ {
		rs, _, err := m.PutStart(c1, fmt.Sprintf("k%d", i), 4096, mm.ReplicateConfig{})
		if err != nil {
			t.Fatalf("PutStart k%d: %v", i, err)
		}
		out = append(out, rs...)
	}
	return out
}

// Config.Seed (docs/CONTRACT.md §9): one seed places the same writes
// alike in every master; another seed places them otherwise.
func TestASeedMakesPlacementsRepeat(t *testing.T) {
	a, b, c := placements(t, 7), placements(t, 7), placements(t, 8)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("two masters seeded 7 placed differently:\n%v\n%v", a, b)
	}
	if reflect.DeepEqual(a, c) {
		t.Fatalf("masters seeded 7 and 8 placed 200 writes alike")
	}
	if cfg := mm.DeterministicConfig(t0); !cfg.FixedSeed || cfg.Seed != 1 {
		t.Fatalf("DeterministicConfig: FixedSeed %v Seed %d, want true 1", cfg.FixedSeed, cfg.Seed)
	}
}
