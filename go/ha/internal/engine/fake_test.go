package engine

// fakeJournal: an in-memory master journal with the contract the engine
// relies on (consecutive sequences, batches that fit the buffer, skip of
// repeats, gap errors, promote continuing after the applied sequence), so
// the etcd side is tested without the C library.

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

type fakeBatch struct {
	First uint64   `json:"first"`
	Recs  []string `json:"recs"`
}

type fakeJournal struct {
	mu       sync.Mutex
	standby  bool
	capacity uint64
	recs     []string // recs[i] has sequence i+1: applied (standby) or appended (primary)
	released uint64
	dropped  uint64 // records up to it were dropped unreleased (the journal was full)
	restores int    // snapshots restored
}

func newFakeStandby() *fakeJournal { return &fakeJournal{standby: true, capacity: 1 << 20} }

// append records rec on a primary and returns its sequence.
func (f *fakeJournal) append(rec string) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.standby {
		panic("fakeJournal: append on a standby")
	}
	f.recs = append(f.recs, rec)
	return uint64(len(f.recs))
}

// appendDropped appends rec and drops it at once, as a full journal drops
// its oldest unreleased records: reading it is an overrun.
func (f *fakeJournal) appendDropped(rec string) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recs = append(f.recs, rec)
	f.dropped = uint64(len(f.recs))
	return f.dropped
}

func (f *fakeJournal) records() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.recs...)
}

func encode(first uint64, recs []string) []byte {
	b, err := json.Marshal(fakeBatch{First: first, Recs: recs})
	if err != nil {
		panic(err)
	}
	return b
}

func (f *fakeJournal) ReadBatch(from uint64, buf []byte) (int, uint64, int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.standby {
		return 0, 0, 0, errors.New("fake: read on a standby")
	}
	last := uint64(len(f.recs))
	switch {
	case from == 0 || from > last+1:
		return 0, 0, 0, fmt.Errorf("fake: read from %d, last %d", from, last)
	case from <= max(f.released, f.dropped):
		return 0, 0, 0, fmt.Errorf("fake: %w: released %d, dropped %d", ErrOverrun, f.released, f.dropped)
	case from == last+1:
		return 0, from, 0, nil
	}
	held := f.recs[from-1:]
	var enc []byte
	k := 0
	for k < len(held) {
		e := encode(from, held[:k+1])
		if len(e) > len(buf) {
			break
		}
		enc, k = e, k+1
	}
	if k == 0 {
		return 0, 0, len(encode(from, held)), errors.New("fake: buffer too small")
	}
	copy(buf, enc)
	return len(enc), from + uint64(k), 0, nil
}

func (f *fakeJournal) Release(upto uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if upto > uint64(len(f.recs)) {
		return fmt.Errorf("fake: release %d beyond %d", upto, len(f.recs))
	}
	f.released = max(f.released, upto)
	return nil
}

func (f *fakeJournal) LastSeq() (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return uint64(len(f.recs)), nil
}

func (f *fakeJournal) Apply(batch []byte) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.standby {
		return 0, errors.New("fake: apply on a primary")
	}
	var b fakeBatch
	if err := json.Unmarshal(batch, &b); err != nil {
		return 0, fmt.Errorf("fake: corrupt batch: %w", err)
	}
	applied := uint64(len(f.recs))
	if b.First > applied+1 {
		return applied, fmt.Errorf("fake: gap: batch starts at %d, applied %d", b.First, applied)
	}
	for i, r := range b.Recs {
		if b.First+uint64(i) > applied {
			f.recs = append(f.recs, r)
		}
	}
	return uint64(len(f.recs)), nil
}

func (f *fakeJournal) Promote() (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.standby {
		return 0, errors.New("fake: promote on a primary")
	}
	f.standby = false
	f.released = uint64(len(f.recs))
	return uint64(len(f.recs)), nil
}

func (f *fakeJournal) State() (bool, uint64, uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.standby, uint64(len(f.recs)), f.capacity, nil
}

type fakeSnapshot struct {
	Seq  uint64   `json:"seq"`
	Recs []string `json:"recs"`
}

func (f *fakeJournal) Snapshot() ([]byte, uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	seq := uint64(len(f.recs))
	b, err := json.Marshal(fakeSnapshot{Seq: seq, Recs: f.recs})
	return b, seq, err
}

func (f *fakeJournal) Restore(data []byte) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.standby {
		return 0, errors.New("fake: restore on a primary")
	}
	var s fakeSnapshot
	if err := json.Unmarshal(data, &s); err != nil || uint64(len(s.Recs)) != s.Seq {
		return 0, fmt.Errorf("fake: corrupt snapshot: %v", err)
	}
	f.recs = s.Recs
	f.restores++
	return s.Seq, nil
}

func (f *fakeJournal) BatchLast(batch []byte) (uint64, error) {
	var b fakeBatch
	if err := json.Unmarshal(batch, &b); err != nil || len(b.Recs) == 0 {
		return 0, fmt.Errorf("fake: corrupt batch: %v", err)
	}
	return b.First + uint64(len(b.Recs)) - 1, nil
}

func (f *fakeJournal) restored() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.restores
}
