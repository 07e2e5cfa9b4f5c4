package mooncakemeta_test

import (
	"errors"
	"fmt"
	"time"

	mooncakemeta "github.com/kvcache-ai/libmooncake_meta/go"
)

// A write that asks for a soft pin commits it when the object first
// becomes readable: the TTL counts from PutEnd, not PutStart.
func Example_putWithSoftPin() {
	m, err := mooncakemeta.New(mooncakemeta.WithDeterministic(1_000_000))
	if err != nil {
		panic(err)
	}
	defer m.Close()
	const client = 1
	if _, err := m.MountSegment(client, "seg0", 1<<40, 64<<20, mooncakemeta.PoolMemory); err != nil {
		panic(err)
	}

	replicas, token, err := m.PutStart(client, "prompt/42", 4096, mooncakemeta.ReplicateConfig{
		SoftPinAction: mooncakemeta.Enable,
		SoftPinTTL:    mooncakemeta.TTL(10 * time.Minute),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("staged:", len(replicas), replicas[0].Kind, replicas[0].Status)

	m.AdvanceTime(2 * time.Second) // the data transfer takes a while
	if err := m.PutEnd(client, "prompt/42", mooncakemeta.SelectAll, token); err != nil {
		panic(err)
	}
	deadline, pinned, _ := m.SoftPinDeadline("prompt/42")
	fmt.Println("pinned:", pinned, "until", deadline) // 1_002_000 + 600_000

	// The legacy boolean pins for the master's default TTL (30 minutes).
	_, token, _ = m.PutStart(client, "prompt/43", 4096, mooncakemeta.ReplicateConfig{WithSoftPin: true})
	m.PutEnd(client, "prompt/43", mooncakemeta.SelectAll, token)
	deadline, _, _ = m.SoftPinDeadline("prompt/43")
	fmt.Println("legacy pin until", deadline)
	// Output:
	// staged: 1 MEMORY PROCESSING
	// pinned: true until 1602000
	// legacy pin until 2802000
}

// On a manual clock nothing happens by itself: the pin expires when the
// clock passes its deadline and is cleared when cleanup runs. Reads never
// extend it.
func Example_expiryOnManualClock() {
	m, err := mooncakemeta.New(mooncakemeta.WithDeterministic(1_000_000))
	if err != nil {
		panic(err)
	}
	defer m.Close()
	m.MountSegment(1, "seg0", 1<<40, 64<<20, mooncakemeta.PoolMemory)
	_, token, _ := m.PutStart(1, "k", 4096, mooncakemeta.ReplicateConfig{
		SoftPinAction: mooncakemeta.Enable,
		SoftPinTTL:    mooncakemeta.TTL(time.Minute),
	})
	m.PutEnd(1, "k", mooncakemeta.SelectAll, token)

	m.AdvanceTime(50 * time.Second)
	m.GetReplicaList("k") // grants a read lease, leaves the pin alone
	stats, _ := m.RunCleanup()
	fmt.Println("at +50s expired:", stats.Expired)

	m.AdvanceTime(10 * time.Second)
	stats, _ = m.RunCleanup()
	metrics, _ := m.Metrics()
	fmt.Println("at +60s expired:", stats.Expired, "pinned keys:", metrics.SoftPinKeyCount, "keys:", metrics.KeyCount)

	_, _, err = m.PutStart(1, "x", 4096, mooncakemeta.ReplicateConfig{
		SoftPinAction: mooncakemeta.Enable,
		SoftPinTTL:    mooncakemeta.TTL(1500 * time.Microsecond),
	})
	fmt.Println(errors.Is(err, mooncakemeta.ErrInvalidParams), err)
	// Output:
	// at +50s expired: 0
	// at +60s expired: 1 pinned keys: 0 keys: 1
	// true mooncakemeta: INVALID_PARAMS: ReplicateConfig.SoftPinTTL 1.5ms is not a whole number of milliseconds
}

// A snapshot keeps soft-pin deadlines; restoring it into another master
// brings back every object that is leased, pinned or hard-pinned.
func Example_snapshotRestore() {
	src, _ := mooncakemeta.New(mooncakemeta.WithDeterministic(1_000_000))
	defer src.Close()
	src.MountSegment(1, "seg0", 1<<40, 64<<20, mooncakemeta.PoolMemory)
	for _, key := range []string{"a", "b"} {
		_, token, _ := src.PutStart(1, key, 4096, mooncakemeta.ReplicateConfig{WithSoftPin: true})
		src.PutEnd(1, key, mooncakemeta.SelectAll, token)
	}
	snap, err := src.Snapshot()
	if err != nil {
		panic(err)
	}

	dst, _ := mooncakemeta.New(mooncakemeta.WithDeterministic(1_000_000))
	defer dst.Close()
	report, err := dst.Restore(snap)
	if err != nil {
		panic(err)
	}
	fmt.Println("restored:", report.ObjectsRestored, "pins:", report.SoftPinsRestored)
	deadline, _, _ := dst.SoftPinDeadline("a")
	fmt.Println("a pinned until", deadline)

	snap[len(snap)/2] ^= 0xff
	_, err = dst.Restore(snap)
	fmt.Println("corrupt:", errors.Is(err, mooncakemeta.ErrDeserializeFail))
	// Output:
	// restored: 2 pins: 2
	// a pinned until 2800000
	// corrupt: true
}

// A step of the wall clock moves no lifetime: the pin still ends a minute
// after it was committed, on the master's timeline. The step shows only as
// the skew, and a snapshot restored on a master whose wall agrees with its
// timeline has its instants shifted by the difference.
func Example_wallClockStep() {
	m, err := mooncakemeta.New(mooncakemeta.WithDeterministic(1_760_000_000_000))
	if err != nil {
		panic(err)
	}
	defer m.Close()
	m.MountSegment(1, "seg0", 1<<40, 64<<20, mooncakemeta.PoolMemory)
	_, token, _ := m.PutStart(1, "k", 4096, mooncakemeta.ReplicateConfig{
		SoftPinAction: mooncakemeta.Enable,
		SoftPinTTL:    mooncakemeta.TTL(time.Minute),
	})
	m.PutEnd(1, "k", mooncakemeta.SelectAll, token)

	now, _ := m.Now()
	m.SetWallTime(now.Add(time.Hour)) // the wall jumps an hour ahead
	deadline, _, _ := m.SoftPinDeadline("k")
	metrics, _ := m.Metrics()
	fmt.Println("pin ends", time.Duration(deadline-now)*time.Millisecond, "from now; skew", metrics.ClockSkew)

	snap, _ := m.Snapshot()
	r, _ := mooncakemeta.New(mooncakemeta.WithDeterministic(now))
	defer r.Close()
	r.MountSegment(1, "seg0", 1<<40, 64<<20, mooncakemeta.PoolMemory)
	report, _ := r.Restore(snap)
	deadline, _, _ = r.SoftPinDeadline("k")
	fmt.Println("restored with shift", report.ClockShift, "pin ends", time.Duration(deadline-now)*time.Millisecond, "from now")
	// Output:
	// pin ends 1m0s from now; skew -1h0m0s
	// restored with shift 1h0m0s pin ends 1h1m0s from now
}
