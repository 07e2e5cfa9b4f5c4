package mooncakemeta_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
)

// The master's timeline (docs/CONTRACT.md §1, §6, §10): instants are on a
// timeline anchored to the epoch at creation and then monotonic; the wall
// clock is read only for Metrics.ClockSkew and for snapshots. A manual
// clock drives both together unless SetWallTime sets the wall apart, which
// is how these tests step the wall.

// wall0 is a manual clock's start for these tests: a recent wall time, far
// from both ends of the range, so the wall can be stepped a day either way.
const wall0 mm.Instant = 1_760_000_000_000

const day = 24 * time.Hour

// clockMaster is a deterministic master at wall0 with the fixture's
// segments.
func clockMaster(t *testing.T, opts ...mm.Option) *mm.Master {
	t.Helper()
	return newMaster(t, append([]mm.Option{mm.WithDeterministic(wall0)}, opts...)...)
}

// systemMaster reads the system clock, background work off.
func systemMaster(t *testing.T) *mm.Master {
	t.Helper()
	m, err := mm.New(mm.WithSoftPinCleanupInterval(0), mm.WithEvictionCheckInterval(0),
		mm.WithSweepInterval(0), mm.WithShardCount(4))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func wallTime(t testing.TB, m *mm.Master) mm.Instant {
	t.Helper()
	w, err := m.WallTime()
	must(t, "WallTime", err)
	return w
}

func setWall(t testing.TB, m *mm.Master, w mm.Instant) {
	t.Helper()
	must(t, fmt.Sprintf("SetWallTime(%d)", uint64(w)), m.SetWallTime(w))
}

func skew(t testing.TB, m *mm.Master) time.Duration {
	t.Helper()
	s, err := m.Metrics()
	must(t, "Metrics", err)
	return s.ClockSkew
}

// offset returns i moved by d (whole milliseconds, either sign).
func offset(i mm.Instant, d time.Duration) mm.Instant {
	return mm.Instant(int64(i) + d.Milliseconds())
}

func cleanupExpired(t testing.TB, m *mm.Master, at mm.Instant) uint64 {
	t.Helper()
	var s mm.CleanupStats
	var err error
	if at == 0 {
		s, err = m.RunCleanup()
	} else {
		s, err = m.RunCleanupAt(at)
	}
	must(t, "cleanup", err)
	return s.Expired
}

func TestManualClockMovesTimelineAndWallTogether(t *testing.T) {
	m := clockMaster(t)
	if w := wallTime(t, m); w != wall0 {
		t.Fatalf("WallTime = %d, want %d", w, wall0)
	}
	if s := skew(t, m); s != 0 {
		t.Fatalf("ClockSkew = %v, want 0", s)
	}
	advance(t, m, 5*time.Second)
	if w := wallTime(t, m); w != wall0+5000 {
		t.Fatalf("WallTime after 5s = %d, want %d", w, wall0+5000)
	}
	if s := skew(t, m); s != 0 {
		t.Fatalf("ClockSkew after 5s = %v, want 0", s)
	}
}

// SetWallTime moves the wall and the skew, never Now nor a stored
// deadline; the wall keeps its distance as the clock moves.
func TestSetWallTimeMovesTheSkewAndNoInstant(t *testing.T) {
	m := clockMaster(t)
	put(t, m.Keyspace, "pinned", 4096, mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(time.Minute)})
	pin := deadline(t, m.Keyspace, "pinned")
	if pin != at(wall0+60_000) {
		t.Fatalf("deadline %s, want %s", pin, at(wall0+60_000))
	}

	setWall(t, m, wall0.Add(time.Hour))
	if n := now(t, m); n != wall0 {
		t.Fatalf("Now = %d after a wall step, want %d", n, wall0)
	}
	if w := wallTime(t, m); w != wall0.Add(time.Hour) {
		t.Fatalf("WallTime = %d, want %d", w, wall0.Add(time.Hour))
	}
	if s := skew(t, m); s != -time.Hour {
		t.Fatalf("ClockSkew = %v, want -1h", s)
	}
	text, err := m.MetricsPrometheus()
	must(t, "MetricsPrometheus", err)
	if !strings.Contains(text, "\nmaster_clock_skew_ms -3600000\n") {
		t.Fatalf("Prometheus text has no skew of -3600000 ms:\n%s", text)
	}
	if d := deadline(t, m.Keyspace, "pinned"); d != pin {
		t.Fatalf("deadline %s after a wall step, want %s", d, pin)
	}

	advance(t, m, time.Second)
	if w := wallTime(t, m); w != wall0.Add(time.Hour+time.Second) {
		t.Fatalf("WallTime after 1s = %d, want %d", w, wall0.Add(time.Hour+time.Second))
	}
	if s := skew(t, m); s != -time.Hour {
		t.Fatalf("ClockSkew after 1s = %v, want -1h", s)
	}

	// Back a day from the timeline: the skew changes sign.
	setWall(t, m, offset(wall0+1000, -day))
	if s := skew(t, m); s != day {
		t.Fatalf("ClockSkew = %v, want 24h", s)
	}
	if d := deadline(t, m.Keyspace, "pinned"); d != pin {
		t.Fatalf("deadline %s after a second wall step, want %s", d, pin)
	}

	// The ends of the range: the epoch, and just below MaxInstant, whose
	// skew is beyond a Duration and saturates.
	setWall(t, m, 0)
	if s := skew(t, m); s != time.Duration(wall0+1000)*time.Millisecond {
		t.Fatalf("ClockSkew with the wall at the epoch = %v", s)
	}
	setWall(t, m, mm.MaxInstant-1)
	if w := wallTime(t, m); w != mm.MaxInstant-1 {
		t.Fatalf("WallTime = %d, want MaxInstant-1", w)
	}
	if s := skew(t, m); s != math.MinInt64 {
		t.Fatalf("ClockSkew = %d, want the smallest Duration", int64(s))
	}
	if n := now(t, m); n != wall0+1000 {
		t.Fatalf("Now = %d, want %d", n, wall0+1000)
	}
	invariants(t, m)
}

// Bad input: ErrInvalidParams, and the master is unchanged; after Close,
// ErrClosed.
func TestSetWallTimeRejectsBadInputAndChangesNothing(t *testing.T) {
	m := clockMaster(t)
	setWall(t, m, wall0.Add(time.Hour))
	for _, w := range []mm.Instant{mm.MaxInstant, mm.MaxInstant + 1, math.MaxUint64} {
		err := m.SetWallTime(w)
		wantErr(t, fmt.Sprintf("SetWallTime(%d)", uint64(w)), err, mm.ErrInvalidParams)
		if !strings.Contains(err.Error(), fmt.Sprint(uint64(w))) {
			t.Fatalf("SetWallTime(%d): the message does not name the value: %v", uint64(w), err)
		}
	}
	if w := wallTime(t, m); w != wall0.Add(time.Hour) {
		t.Fatalf("WallTime = %d after refused steps, want %d", w, wall0.Add(time.Hour))
	}
	if s := skew(t, m); s != -time.Hour {
		t.Fatalf("ClockSkew = %v after refused steps, want -1h", s)
	}
	if n := now(t, m); n != wall0 {
		t.Fatalf("Now = %d after refused steps, want %d", n, wall0)
	}

	must(t, "Close", m.Close())
	_, err := m.WallTime()
	wantErr(t, "WallTime after Close", err, mm.ErrClosed)
	wantErr(t, "SetWallTime after Close", m.SetWallTime(wall0), mm.ErrClosed)
}

// A system-clock master: its wall is the operating system's and cannot be
// set (ErrClockUnsupported); its skew is what drifted since it was created
// (milliseconds here, far below an hour).
func TestSystemClockWallIsTheOSWallAndCannotBeSet(t *testing.T) {
	m := systemMaster(t)
	before := mm.InstantOf(time.Now())
	w := wallTime(t, m)
	after := mm.InstantOf(time.Now())
	if w < before || w > after {
		t.Fatalf("WallTime %d outside [%d, %d]", w, before, after)
	}
	if s := skew(t, m); s <= -time.Hour || s >= time.Hour {
		t.Fatalf("ClockSkew = %v on a fresh system-clock master", s)
	}
	for _, wall := range []mm.Instant{w.Add(day), math.MaxUint64} {
		wantErr(t, fmt.Sprintf("SetWallTime(%d)", uint64(wall)), m.SetWallTime(wall), mm.ErrClockUnsupported)
	}
	if s := skew(t, m); s <= -time.Hour || s >= time.Hour {
		t.Fatalf("ClockSkew = %v after refused SetWallTime", s)
	}
}

// clockFill writes, at wall0, a 10 h soft pin, a hard-pinned object and an
// object kept only by a read lease (10 s), then sets the wall to wall.
func clockFill(t *testing.T, m *mm.Master, wall mm.Instant) {
	t.Helper()
	put(t, m.Keyspace, "pinned", 4096, mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(10 * time.Hour)})
	put(t, m.Keyspace, "hard", 4096, mm.ReplicateConfig{WithHardPin: true})
	put(t, m.Keyspace, "leased", 4096, mm.ReplicateConfig{})
	_, err := m.GetReplicaList("leased")
	must(t, "GetReplicaList", err)
	setWall(t, m, wall)
}

func restore(t *testing.T, m *mm.Master, snap []byte) mm.RestoreReport {
	t.Helper()
	rep, err := m.Restore(snap)
	must(t, "Restore", err)
	return rep
}

// docs/CONTRACT.md §6: captured with the wall an hour ahead (skew -1 h),
// restored at skew 0: every stored instant moves +1 h and ClockShift says
// so; CreatedAt stays on the capturing master's timeline. Two skews apart
// from 0 shift by their difference; equal skews restore verbatim.
func TestRestoreShiftsInstantsByTheChangeInSkew(t *testing.T) {
	src := clockMaster(t)
	clockFill(t, src, wall0.Add(time.Hour))
	snap, err := src.Snapshot()
	must(t, "Snapshot", err)

	plain := clockMaster(t)
	rep := restore(t, plain, snap)
	if rep.ClockShift != time.Hour || rep.CreatedAt != wall0 || rep.ObjectsRestored != 3 || rep.ObjectsDropped != 0 {
		t.Fatalf("report: %+v", rep)
	}
	if d := deadline(t, plain.Keyspace, "pinned"); d != at(wall0.Add(11*time.Hour)) {
		t.Fatalf("restored deadline %s, want %s", d, at(wall0.Add(11*time.Hour)))
	}
	if n := cleanupExpired(t, plain, wall0.Add(11*time.Hour-time.Millisecond)); n != 0 {
		t.Fatalf("cleanup before the shifted deadline expired %d", n)
	}
	if n := cleanupExpired(t, plain, wall0.Add(11*time.Hour)); n != 1 {
		t.Fatalf("cleanup at the shifted deadline expired %d, want 1", n)
	}
	invariants(t, plain)

	behind := clockMaster(t)
	setWall(t, behind, offset(wall0, -time.Hour))
	if rep := restore(t, behind, snap); rep.ClockShift != 2*time.Hour {
		t.Fatalf("ClockShift = %v, want 2h", rep.ClockShift)
	}
	if d := deadline(t, behind.Keyspace, "pinned"); d != at(wall0.Add(12*time.Hour)) {
		t.Fatalf("restored deadline %s, want %s", d, at(wall0.Add(12*time.Hour)))
	}

	same := clockMaster(t)
	setWall(t, same, wall0.Add(time.Hour))
	if rep := restore(t, same, snap); rep.ClockShift != 0 {
		t.Fatalf("ClockShift = %v at equal skews, want 0", rep.ClockShift)
	}
	if d := deadline(t, same.Keyspace, "pinned"); d != at(wall0.Add(10*time.Hour)) {
		t.Fatalf("restored deadline %s, want %s", d, at(wall0.Add(10*time.Hour)))
	}
	again, err := same.Snapshot()
	must(t, "Snapshot after restore", err)
	if string(again) != string(snap) {
		t.Fatal("equal skews: snapshot(restore(s)) != s")
	}
}

// docs/CONTRACT.md §6: the survival rule runs after the shift. Captured
// with the wall an hour behind (skew +1 h), restored at skew 0: every
// instant moves back an hour, so the 10 s lease is over and its object
// dropped; the pin (now 9 h) and the hard pin keep theirs.
func TestRestoreAppliesTheSurvivalRuleAfterTheShift(t *testing.T) {
	src := clockMaster(t)
	clockFill(t, src, offset(wall0, -time.Hour))
	snap, err := src.Snapshot()
	must(t, "Snapshot", err)
	dst := clockMaster(t)
	rep := restore(t, dst, snap)
	if rep.ClockShift != -time.Hour || rep.ObjectsRestored != 2 || rep.ObjectsDropped != 1 || rep.SoftPinsRestored != 1 {
		t.Fatalf("report: %+v", rep)
	}
	if ok, err := dst.Exist("leased"); err != nil || ok {
		t.Fatalf("Exist(leased) = %v, %v; want dropped", ok, err)
	}
	if ok, err := dst.Exist("hard"); err != nil || !ok {
		t.Fatalf("Exist(hard) = %v, %v; want kept", ok, err)
	}
	if d := deadline(t, dst.Keyspace, "pinned"); d != at(wall0.Add(9*time.Hour)) {
		t.Fatalf("restored deadline %s, want %s", d, at(wall0.Add(9*time.Hour)))
	}
	if g := gauge(t, dst); g != 1 {
		t.Fatalf("gauge = %d, want 1", g)
	}
	invariants(t, dst)
}

// docs/CONTRACT.md §1, §4.8: a wall step, either way, changes no deadline
// and no cleanup decision: a pin is due exactly at its deadline on the
// timeline and a read lease still blocks a plain Remove, whatever the wall
// says.
func TestWallStepChangesNoDeadlineAndNoCleanupDecision(t *testing.T) {
	for _, step := range []time.Duration{time.Hour, -time.Hour, day, -day} {
		t.Run(step.String(), func(t *testing.T) {
			m := clockMaster(t)
			put(t, m.Keyspace, "pinned", 4096, mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(time.Minute)})
			put(t, m.Keyspace, "leased", 4096, mm.ReplicateConfig{})
			_, err := m.GetReplicaList("leased")
			must(t, "GetReplicaList", err)
			pin := at(wall0 + 60_000)

			setWall(t, m, offset(wall0, step))
			if s := skew(t, m); s != -step {
				t.Fatalf("ClockSkew = %v, want %v", s, -step)
			}
			if n := now(t, m); n != wall0 {
				t.Fatalf("Now = %d, want %d", n, wall0)
			}
			if d := deadline(t, m.Keyspace, "pinned"); d != pin {
				t.Fatalf("deadline %s, want %s", d, pin)
			}
			if n := cleanupExpired(t, m, 0); n != 0 {
				t.Fatalf("cleanup now expired %d", n)
			}
			if n := cleanupExpired(t, m, wall0+59_999); n != 0 {
				t.Fatalf("cleanup before the deadline expired %d", n)
			}
			wantErr(t, "Remove(leased)", m.Remove("leased", false), mm.ErrHasLease)

			// The other way, once the clock has moved.
			advance(t, m, 30*time.Second)
			setWall(t, m, offset(wall0+30_000, -step))
			if s := skew(t, m); s != step {
				t.Fatalf("ClockSkew = %v, want %v", s, step)
			}
			if n := cleanupExpired(t, m, 0); n != 0 {
				t.Fatalf("cleanup now expired %d after the second step", n)
			}

			// Due on the timeline, exactly at the deadline.
			advance(t, m, 29_999*time.Millisecond)
			if n := cleanupExpired(t, m, 0); n != 0 {
				t.Fatalf("cleanup 1 ms before the deadline expired %d", n)
			}
			advance(t, m, time.Millisecond)
			if n := cleanupExpired(t, m, 0); n != 1 {
				t.Fatalf("cleanup at the deadline expired %d, want 1", n)
			}
			if d := deadline(t, m.Keyspace, "pinned"); d != "none" {
				t.Fatalf("deadline %s after it expired", d)
			}
			// The 10 s lease ended 50 s ago: a plain Remove succeeds.
			must(t, "Remove(leased)", m.Remove("leased", false))
			invariants(t, m)
		})
	}
}
