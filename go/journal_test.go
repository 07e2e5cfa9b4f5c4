package mooncakemeta_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
)

// docs/CONTRACT.md §12: the journal through Go, from a primary's consumer
// to a standby that is promoted.

func newStandby(t testing.TB, opts ...mm.Option) *mm.Master {
	t.Helper()
	s, err := mm.New(append([]mm.Option{mm.WithDeterministic(t0), mm.WithStandby(true)}, opts...)...)
	if err != nil {
		t.Fatalf("New standby: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func readAll(t testing.TB, m *mm.Master, from uint64) ([]byte, uint64) {
	t.Helper()
	b, next, err := m.JournalReadAll(from)
	if err != nil {
		t.Fatalf("JournalReadAll(%d): %v", from, err)
	}
	return b, next
}

func TestJournalShipsWritesToAStandbyThatIsPromoted(t *testing.T) {
	p := newMaster(t, mm.WithJournalCapacityBytes(1<<20))
	pin := mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(5 * time.Second)}
	put(t, p.Keyspace, "done", 4096, pin)
	_, inFlight, err := p.PutStart(c1, "in-flight", 4096, pin)
	must(t, "PutStart in-flight", err)

	batch, next := readAll(t, p, 1)
	if len(batch) == 0 || next < 2 {
		t.Fatalf("journal after writes: %d bytes, next %d", len(batch), next)
	}
	s := newStandby(t)
	r, err := s.ApplyJournal(batch)
	must(t, "ApplyJournal", err)
	if r.RecordsApplied != next-1 || r.LastSeq != next-1 || r.RecordsSkipped != 0 {
		t.Fatalf("ApplyJournal = %+v, want %d applied up to %d", r, next-1, next-1)
	}
	standby, applied, err := s.StandbyState()
	must(t, "StandbyState", err)
	if !standby || applied != next-1 {
		t.Fatalf("StandbyState = %v, %d; want true, %d", standby, applied, next-1)
	}
	// A repeat changes nothing.
	r, err = s.ApplyJournal(batch)
	must(t, "ApplyJournal repeat", err)
	if r.RecordsApplied != 0 || r.RecordsSkipped != next-1 {
		t.Fatalf("repeat ApplyJournal = %+v, want everything skipped", r)
	}
	// A standby serves no client.
	_, err = s.Exist("done")
	wantErr(t, "Exist on a standby", err, mm.ErrUnavailableInCurrentStatus)
	_, _, err = s.PutStart(c1, "new", 64, mm.ReplicateConfig{})
	wantErr(t, "PutStart on a standby", err, mm.ErrUnavailableInCurrentStatus)

	pr, err := s.Promote()
	must(t, "Promote", err)
	if pr.AppliedSeq != next-1 || pr.WritesInFlight != 1 {
		t.Fatalf("Promote = %+v, want applied %d and 1 write in flight", pr, next-1)
	}
	if _, err := s.Promote(); !errors.Is(err, mm.ErrUnavailableInCurrentStatus) {
		t.Fatalf("second Promote: %v, want ErrUnavailableInCurrentStatus", err)
	}
	// The committed deadline is the primary's, not restarted.
	if got, want := deadline(t, s.Keyspace, "done"), deadline(t, p.Keyspace, "done"); got != want {
		t.Fatalf("deadline on the promoted standby = %s, primary = %s", got, want)
	}
	// The write in flight ends on the promoted standby and commits its pin
	// from that End.
	end := advance(t, s, 2*time.Second)
	must(t, "PutEnd on the promoted standby", s.PutEnd(c1, "in-flight", mm.SelectAll, inFlight))
	if got, want := deadline(t, s.Keyspace, "in-flight"), at(end.Add(5*time.Second)); got != want {
		t.Fatalf("in-flight deadline after End = %s, want %s", got, want)
	}
	invariants(t, s)
}

func TestJournalOverrunReleaseAndStats(t *testing.T) {
	m := newMaster(t, mm.WithJournalCapacityBytes(4096))
	for i := 0; i < 200; i++ {
		put(t, m.Keyspace, fmt.Sprintf("k%03d", i), 64, mm.ReplicateConfig{})
	}
	st, err := m.JournalStats()
	must(t, "JournalStats", err)
	if st.CapacityBytes != 4096 || st.BytesHeld > st.CapacityBytes || st.DroppedRecords == 0 {
		t.Fatalf("stats after overflowing the journal: %+v", st)
	}
	_, _, err = m.JournalReadAll(1)
	wantErr(t, "reading a dropped sequence", err, mm.ErrJournalOverrun)
	// The oldest held record is still readable; release frees it all.
	if _, _, err := m.JournalReadAll(st.FirstSeq); err != nil {
		t.Fatalf("JournalReadAll(first held %d): %v", st.FirstSeq, err)
	}
	freed, err := m.JournalRelease(st.LastSeq)
	must(t, "JournalRelease", err)
	if freed != st.RecordsHeld {
		t.Fatalf("JournalRelease freed %d, want %d", freed, st.RecordsHeld)
	}
	_, err = m.JournalRelease(st.LastSeq + 1)
	wantErr(t, "releasing past the last record", err, mm.ErrInvalidParams)
	st, err = m.JournalStats()
	must(t, "JournalStats", err)
	if st.RecordsHeld != 0 || st.BytesHeld != 0 || st.ReleasedUpto != st.LastSeq {
		t.Fatalf("stats after releasing everything: %+v", st)
	}
}

func TestJournalReadIntoACallerBuffer(t *testing.T) {
	m := newMaster(t, mm.WithJournalCapacityBytes(1<<20))
	put(t, m.Keyspace, "k", 64, mm.ReplicateConfig{})
	_, _, need, err := m.JournalRead(1, make([]byte, 8))
	wantErr(t, "JournalRead into 8 bytes", err, mm.ErrBufferTooSmall)
	if need <= 8 {
		t.Fatalf("need = %d, want more than 8", need)
	}
	buf := make([]byte, need)
	n, next, _, err := m.JournalRead(1, buf)
	must(t, "JournalRead", err)
	all, allNext := readAll(t, m, 1)
	if n != need || next != allNext || string(buf[:n]) != string(all) {
		t.Fatalf("JournalRead = %d bytes, next %d; JournalReadAll = %d bytes, next %d", n, next, len(all), allNext)
	}
	// Nothing after the last record yet.
	n, again, _, err := m.JournalRead(next, buf)
	must(t, "JournalRead at the end", err)
	if n != 0 || again != next {
		t.Fatalf("JournalRead at the end = %d bytes, next %d; want 0, %d", n, again, next)
	}
}

func TestJournalGapAndCorruptionApplyNothing(t *testing.T) {
	p := newMaster(t, mm.WithJournalCapacityBytes(1<<20))
	_, first := readAll(t, p, 1) // the mounts
	put(t, p.Keyspace, "k", 64, mm.ReplicateConfig{})
	later, _ := readAll(t, p, first)
	s := newStandby(t)
	_, err := s.ApplyJournal(later)
	if err == nil {
		t.Fatal("applying records after a gap succeeded")
	}
	corrupt := append([]byte(nil), later...)
	corrupt[len(corrupt)-1] ^= 0xff
	_, err = s.ApplyJournal(corrupt)
	wantErr(t, "applying a corrupt batch", err, mm.ErrDeserializeFail)
	if _, applied, _ := s.StandbyState(); applied != 0 {
		t.Fatalf("applied sequence after rejected applies = %d, want 0", applied)
	}
	_, err = p.ApplyJournal(later)
	wantErr(t, "ApplyJournal on a primary", err, mm.ErrUnavailableInCurrentStatus)
}

func TestJournalOffAndConfigBounds(t *testing.T) {
	m := newMaster(t)
	_, _, err := m.JournalReadAll(1)
	wantErr(t, "JournalReadAll without a journal", err, mm.ErrUnavailableInCurrentStatus)
	st, err := m.JournalStats()
	must(t, "JournalStats", err)
	if st != (mm.JournalStats{}) {
		t.Fatalf("stats without a journal = %+v, want zero", st)
	}
	_, err = mm.New(mm.WithDeterministic(t0), mm.WithJournalCapacityBytes(mm.MaxJournalCapacityBytes+1))
	wantErr(t, "New with a journal above the maximum", err, mm.ErrInvalidParams)
	if d := mm.DefaultConfig(); d.JournalCapacityBytes != 0 || d.Standby {
		t.Fatalf("DefaultConfig journal %d standby %v, want 0 false", d.JournalCapacityBytes, d.Standby)
	}
}
