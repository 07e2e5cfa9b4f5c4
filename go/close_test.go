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

// A batch call on a closed master answers one result per key, each
// ErrClosed, as every whole-batch refusal does (the keys are indexable).
func TestBatchCallsAfterCloseAnswerEveryKey(t *testing.T) {
	m := newMaster(t)
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	keys := []string{"a", "b", "c"}
	check := func(name string, n int, errs []error, err error) {
		t.Helper()
		wantErr(t, name, err, mm.ErrClosed)
		if n != len(keys) {
			t.Fatalf("%s after Close: %d results for %d keys", name, n, len(keys))
		}
		for i, e := range errs {
			wantErr(t, name+" key "+keys[i], e, mm.ErrClosed)
		}
	}
	starts := func(name string, r []mm.BatchStartResult, err error) {
		t.Helper()
		errs := make([]error, len(r))
		for i := range r {
			errs[i] = r[i].Err
		}
		check(name, len(r), errs, err)
	}
	sizes := []uint64{1, 1, 1}
	r, err := m.BatchPutStart(c1, keys, sizes, mm.ReplicateConfig{})
	starts("BatchPutStart", r, err)
	r, err = m.BatchUpsertStart(c1, keys, sizes, mm.ReplicateConfig{})
	starts("BatchUpsertStart", r, err)
	errs, err := m.BatchPutEnd(c1, keys, mm.SelectAll, nil)
	check("BatchPutEnd", len(errs), errs, err)
	errs, err = m.BatchPutRevoke(c1, keys, mm.SelectAll, nil)
	check("BatchPutRevoke", len(errs), errs, err)
	errs, err = m.BatchRemove(keys, false)
	check("BatchRemove", len(errs), errs, err)
	ex, err := m.BatchExist(keys)
	errs = make([]error, len(ex))
	for i := range ex {
		errs[i] = ex[i].Err
	}
	check("BatchExist", len(ex), errs, err)
	gr, err := m.BatchGetReplicaList(keys)
	errs = make([]error, len(gr))
	for i := range gr {
		errs[i] = gr[i].Err
	}
	check("BatchGetReplicaList", len(gr), errs, err)
}
