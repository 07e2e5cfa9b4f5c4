// An out-of-tree Go program using package mooncakemeta from its own
// module (go.mod: require + replace to a clone's go/ directory), linked
// to an installed libmooncake_meta with -tags mooncake_pkgconfig: create a
// master on a manual clock, mount a segment, put an object with a 60 s
// soft pin, read it back and check the deadline started at the End.
package main

import (
	"fmt"
	"os"
	"time"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
)

func run() error {
	m, err := mm.New(mm.WithManualClock(1000))
	if err != nil {
		return fmt.Errorf("New: %w", err)
	}
	defer m.Close()

	const client mm.ClientID = 7
	seg, err := m.MountSegment(client, "seg0", 0x10000000, 64<<20, mm.PoolMemory)
	if err != nil {
		return fmt.Errorf("MountSegment: %w", err)
	}
	replicas, token, err := m.PutStart(client, "prompt/42", 4096, mm.ReplicateConfig{
		SoftPinAction: mm.Enable,
		SoftPinTTL:    mm.TTL(time.Minute),
	})
	if err != nil {
		return fmt.Errorf("PutStart: %w", err)
	}
	if len(replicas) != 1 || replicas[0].Segment != seg {
		return fmt.Errorf("PutStart gave %+v, want one replica on segment %d", replicas, seg)
	}
	// 5 s pass between Start and End: the deadline counts from the End.
	if now, err := m.AdvanceTime(5 * time.Second); err != nil || now != 6000 {
		return fmt.Errorf("AdvanceTime = %d, %v; want 6000", now, err)
	}
	if err := m.PutEnd(client, "prompt/42", mm.SelectAll, token); err != nil {
		return fmt.Errorf("PutEnd: %w", err)
	}
	got, err := m.GetReplicaList("prompt/42")
	if err != nil {
		return fmt.Errorf("GetReplicaList: %w", err)
	}
	if len(got) != 1 || got[0].Status != mm.ReplicaComplete || got[0].Address != replicas[0].Address || got[0].Size != 4096 {
		return fmt.Errorf("GetReplicaList gave %+v, want the one complete 4096-byte replica at %#x", got, replicas[0].Address)
	}
	deadline, ok, err := m.SoftPinDeadline("prompt/42")
	if err != nil || !ok || deadline != 6000+60000 {
		return fmt.Errorf("SoftPinDeadline = %d, %v, %v; want 66000", deadline, ok, err)
	}
	fmt.Printf("libmooncake_meta %s (ABI %d) from Go: put prompt/42 (4096 B at %#x on segment %d), "+
		"read back 1 complete replica, soft pin deadline %d\n",
		mm.Version(), mm.ABIVersion(), got[0].Address, seg, deadline)
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "app:", err)
		os.Exit(1)
	}
}
