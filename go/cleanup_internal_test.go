package mooncakemeta

import (
	"runtime"
	"testing"
	"time"
)

// Masters dropped without Close are freed by their cleanup, each once; a
// closed master's cleanup is cancelled (Close freed it: a second free would
// be a double free), and a master still referenced is not freed.
func TestCleanupIsASafetyNet(t *testing.T) {
	const dropped = 25
	before := cleanupFrees.Load()
	kept := make([]*Master, 0, 3)
	for i := 0; i < 2*dropped; i++ {
		m, err := New(WithDeterministic(1_000_000))
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 0; i < 3; i++ {
		m, err := New(WithDeterministic(1_000_000))
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, m)
	}
	// Cleanups run on their own goroutine some time after a collection.
	deadline := time.Now().Add(30 * time.Second)
	for cleanupFrees.Load()-before < dropped && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if got := cleanupFrees.Load() - before; got != dropped {
		t.Fatalf("cleanups freed %d masters, want the %d dropped without Close", got, dropped)
	}
	// More collections free nothing more: the closed masters' cleanups
	// were cancelled and the kept ones are still reachable.
	for i := 0; i < 5; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if got := cleanupFrees.Load() - before; got != dropped {
		t.Fatalf("cleanups freed %d masters after more collections, want %d", got, dropped)
	}
	for _, m := range kept {
		if _, err := m.KeyCount(); err != nil {
			t.Fatal(err)
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
