package mooncakemeta_test

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
)

// Close: idempotent, waits for calls in flight, later calls fail with
// ErrClosed; the cleanup is only a safety net.

// Close while 64 goroutines call GetReplicaList: every call either
// succeeds or returns ErrClosed, never anything else and never a crash
// (a use after free would show under -race and the cgo checks); every
// goroutine ends on ErrClosed.
func TestCloseDuring64GoroutinesGets(t *testing.T) {
	m := newMaster(t)
	put(t, m.Keyspace, "k", 4096, mm.ReplicateConfig{WithSoftPin: true})
	const goroutines = 64
	var calls atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	failures := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ks := m.Tenant("")
			for {
				rs, err := ks.GetReplicaList("k")
				if errors.Is(err, mm.ErrClosed) {
					return
				}
				if err != nil || len(rs) != 1 {
					failures <- err
					return
				}
				calls.Add(1)
				runtime.Gosched()
			}
		}()
	}
	close(start)
	// Close once every goroutine has had the chance to run, from two
	// goroutines at once: both return nil. The bound only turns getters
	// that all failed (or hung) into a failure instead of a hang.
	giveUp := time.Now().Add(2 * time.Minute)
	for calls.Load() < 4*goroutines {
		if time.Now().After(giveUp) {
			t.Fatalf("only %d successful gets in 2 minutes (%d goroutines failed)", calls.Load(), len(failures))
		}
		runtime.Gosched()
	}
	var closers sync.WaitGroup
	closeErrs := make([]error, 2)
	for i := range closeErrs {
		closers.Add(1)
		go func() {
			defer closers.Done()
			closeErrs[i] = m.Close()
		}()
	}
	closers.Wait()
	wg.Wait()
	close(failures)
	for err := range failures {
		t.Fatalf("a Get during Close failed with %v", err)
	}
	for _, err := range closeErrs {
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	for name, err := range map[string]error{
		"Exist":    func() error { _, err := m.Exist("k"); return err }(),
		"PutStart": func() error { _, _, err := m.PutStart(c1, "x", 1, mm.ReplicateConfig{}); return err }(),
		"Snapshot": func() error { _, err := m.Snapshot(); return err }(),
		"Metrics":  func() error { _, err := m.Metrics(); return err }(),
		"BatchExist": func() error {
			_, err := m.BatchExist([]string{"k"})
			return err
		}(),
	} {
		wantErr(t, name+" after Close", err, mm.ErrClosed)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("third Close: %v", err)
	}
}
