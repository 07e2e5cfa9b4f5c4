package mooncakemeta_test

import (
	"fmt"
	"testing"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
)

// BenchmarkExist measures one Exist call through cgo on a readable object
// (the Go side of the boundary benchmark: call guard, cgo transition, key
// passed without copying, lease grant). Figures are printed by go test
// -bench, never asserted.
func BenchmarkExist(b *testing.B) {
	m := newMaster(b)
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = fmt.Sprintf("bench/key/%010d", i)
		put(b, m.Keyspace, keys[i], 1024, mm.ReplicateConfig{})
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		ok, err := m.Exist(keys[i&1023])
		if err != nil || !ok {
			b.Fatal(ok, err)
		}
		i++
	}
}

// BenchmarkExistParallel is BenchmarkExist from GOMAXPROCS goroutines.
func BenchmarkExistParallel(b *testing.B) {
	m := newMaster(b)
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = fmt.Sprintf("bench/key/%010d", i)
		put(b, m.Keyspace, keys[i], 1024, mm.ReplicateConfig{})
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if ok, err := m.Exist(keys[i&1023]); err != nil || !ok {
				b.Fatal(ok, err)
			}
			i++
		}
	})
}

// BenchmarkCgoFloor is one trivial cgo call (ABIVersion): the fixed cost
// under BenchmarkExist's figure.
func BenchmarkCgoFloor(b *testing.B) {
	for b.Loop() {
		if mm.ABIVersion() == 0 {
			b.Fatal("no ABI version")
		}
	}
}
