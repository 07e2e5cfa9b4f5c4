package ha_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
	"github.com/kvcache-ai/libmooncake_meta/go/ha"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A leader master with writes, shipped through a real etcd to standby
// masters that apply them and are promoted (docs/CONTRACT.md §12). Every
// wait is bounded and ends on an observable event: a role, an applied or
// durable sequence, an etcd key.

const (
	t0          mm.Instant  = 1_000_000
	c1          mm.ClientID = 1
	bound                   = 60 * time.Second
	prefix                  = "/mooncake/test"
	otherTenant             = "tenant-b"
)

func boundedCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	t.Cleanup(cancel)
	return ctx
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// newStandby is a deterministic standby master with a journal.
func newStandby(t *testing.T) *mm.Master {
	t.Helper()
	m, err := mm.New(mm.WithDeterministic(t0), mm.WithStandby(true), mm.WithJournalCapacityBytes(16<<20))
	must(t, "New standby", err)
	t.Cleanup(func() { m.Close() })
	return m
}

func startNode(t *testing.T, cli *clientv3.Client, name string, m *mm.Master, edit func(*ha.Config)) *ha.Node {
	t.Helper()
	// The default TTL (10 s): no test waits for a lease to expire (they
	// revoke it or Close), and a short one could expire on a loaded
	// machine whose keep-alives run late, deposing a leader mid-test.
	cfg := ha.Config{Client: cli, Prefix: prefix, Name: name, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}
	if edit != nil {
		edit(&cfg)
	}
	n, err := ha.Start(boundedCtx(t), cfg, m)
	must(t, "Start "+name, err)
	// Registered after the master's cleanup, so it runs first.
	t.Cleanup(func() { n.Close() })
	return n
}

func waitRole(t *testing.T, n *ha.Node, r ha.Role) {
	t.Helper()
	if err := n.WaitRole(boundedCtx(t), r); err != nil {
		t.Fatalf("WaitRole(%s): %v (role %s)", r, err, n.Role())
	}
}

// workload mounts two segments and writes soft-pinned, plain and hard-pinned
// objects at advancing instants (so a restarted deadline would differ),
// some of them in two retained groups, soft-pinned objects of a second
// tenant, and one write left in flight; it returns that write's token.
func workload(t *testing.T, m *mm.Master, objects int) mm.WriteToken {
	t.Helper()
	for i, name := range []string{"mem0", "mem1"} {
		_, err := m.MountSegment(c1, name, uint64(i+1)<<40, 64<<20, mm.PoolMemory)
		must(t, "MountSegment "+name, err)
	}
	for i := range objects {
		cfg := mm.ReplicateConfig{}
		switch i % 3 {
		case 0:
			cfg = mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(time.Duration(i+1) * time.Minute)}
		case 1:
			cfg = mm.ReplicateConfig{WithHardPin: true, ReplicaNum: 2}
		}
		if i%5 == 0 {
			cfg.Group = fmt.Sprintf("group-%d", i%2)
		}
		key := fmt.Sprintf("obj/%04d", i)
		_, tok, err := m.PutStart(c1, key, 4096, cfg)
		must(t, "PutStart "+key, err)
		must(t, "PutEnd "+key, m.PutEnd(c1, key, mm.SelectAll, tok))
		_, err = m.AdvanceTime(time.Second)
		must(t, "AdvanceTime", err)
	}
	rs, err := m.RetainGroups([]string{"group-0", "group-1"}, 2*time.Hour)
	must(t, "RetainGroups", err)
	for _, r := range rs {
		must(t, "RetainGroups result", r.Err)
	}
	other := m.Tenant(otherTenant)
	for i := range 5 {
		key := fmt.Sprintf("other/%d", i)
		_, tok, err := other.PutStart(c1, key, 1024, mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(time.Duration(i+1) * time.Hour)})
		must(t, "PutStart "+key, err)
		must(t, "PutEnd "+key, other.PutEnd(c1, key, mm.SelectAll, tok))
	}
	_, tok, err := m.PutStart(c1, "in-flight", 8192, mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(time.Hour)})
	must(t, "PutStart in-flight", err)
	return tok
}

// objectView is what a promoted standby must have of each object: its
// replicas (segments by name: segment ids are the master's own) and its
// committed soft-pin deadline.
type objectView struct {
	Replicas    []replicaView
	Deadline    mm.Instant
	HasDeadline bool
}

type replicaView struct {
	ID      uint64
	Kind    mm.ReplicaKind
	Status  mm.ReplicaStatus
	Segment string
	Address uint64
	Size    uint64
}

// view is a master's objects in both tenants (tenant-qualified keys) and
// its groups' retention deadlines ("group:" keys, the deadline only).
func view(t *testing.T, m *mm.Master) map[string]objectView {
	t.Helper()
	out := make(map[string]objectView)
	for _, k := range []mm.Keyspace{m.Keyspace, m.Tenant(otherTenant)} {
		keys, next, err := k.ListKeys("", "", 0)
		must(t, "ListKeys", err)
		if next != "" {
			t.Fatalf("ListKeys without a limit returned a cursor %q", next)
		}
		for _, key := range keys {
			var v objectView
			v.Deadline, v.HasDeadline, err = k.SoftPinDeadline(key)
			must(t, "SoftPinDeadline "+key, err)
			rs, err := k.GetReplicaList(key)
			if errors.Is(err, mm.ErrReplicaNotReady) {
				rs = nil // the write in flight: nothing readable yet
			} else {
				must(t, "GetReplicaList "+key, err)
			}
			for _, r := range rs {
				rv := replicaView{ID: r.ID, Kind: r.Kind, Status: r.Status, Address: r.Address, Size: r.Size}
				if r.Segment != mm.NoSegment {
					rv.Segment, err = m.SegmentName(r.Segment)
					must(t, "SegmentName", err)
				}
				v.Replicas = append(v.Replicas, rv)
			}
			out[k.Name()+"/"+key] = v
		}
	}
	for _, g := range []string{"group-0", "group-1"} {
		var v objectView
		var err error
		v.Deadline, v.HasDeadline, err = m.GroupRetentionDeadline(g)
		must(t, "GroupRetentionDeadline "+g, err)
		out["group:"+g] = v
	}
	return out
}

// checkWorkload checks that view holds what workload(objects) wrote: the
// objects (every third soft-pinned, some in groups), the write in flight,
// the other tenant's objects and the retained groups.
func checkWorkload(t *testing.T, v map[string]objectView, objects int) {
	t.Helper()
	pinned := 0
	for k, o := range v {
		if o.HasDeadline && !strings.HasPrefix(k, "group:") {
			pinned++
		}
	}
	// objects + the write in flight + 5 in the other tenant + 2 groups;
	// every third object and the other tenant's are soft-pinned.
	if len(v) != objects+1+5+2 || pinned != (objects+2)/3+5 {
		t.Fatalf("leader holds %d entries (%d soft-pinned), want %d (%d)", len(v), pinned, objects+8, (objects+2)/3+5)
	}
	for _, g := range []string{"group:group-0", "group:group-1"} {
		if !v[g].HasDeadline {
			t.Fatalf("%s is not retained on the leader", g)
		}
	}
	if f := v[mm.DefaultTenant+"/in-flight"]; len(f.Replicas) != 0 || f.HasDeadline {
		t.Fatalf("the write in flight is readable or pinned: %+v", f)
	}
}

func sameObjects(t *testing.T, got, want map[string]objectView) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("promoted standby has %d objects, the leader had %d", len(got), len(want))
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || !reflect.DeepEqual(g, w) {
			t.Fatalf("object %q on the promoted standby = %+v, on the leader %+v", k, g, w)
		}
	}
}

func lastSeq(t *testing.T, m *mm.Master) uint64 {
	t.Helper()
	st, err := m.JournalStats()
	must(t, "JournalStats", err)
	return st.LastSeq
}

// endInFlight ends the write that was in flight on the promoted standby
// and checks its pin committed from that End, then that it is durable.
func endInFlight(t *testing.T, n *ha.Node, m *mm.Master, tok mm.WriteToken) {
	t.Helper()
	now, err := m.Now()
	must(t, "Now", err)
	must(t, "PutEnd in-flight on the promoted standby", m.PutEnd(c1, "in-flight", mm.SelectAll, tok))
	d, ok, err := m.SoftPinDeadline("in-flight")
	must(t, "SoftPinDeadline in-flight", err)
	if !ok || d != now.Add(time.Hour) {
		t.Fatalf("in-flight deadline after End = %d (%v), want %d", d, ok, now.Add(time.Hour))
	}
	must(t, "Sync on the new leader", n.Sync(boundedCtx(t)))
}

func TestLeaderShipsToAStandbyPromotedWhenTheLeaderCloses(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	ma, mb := newStandby(t), newStandby(t)
	a := startNode(t, cli, "a", ma, nil)
	waitRole(t, a, ha.RoleLeader)
	b := startNode(t, cli, "b", mb, nil)
	tok := workload(t, ma, 60)
	must(t, "Sync", a.Sync(boundedCtx(t)))
	if a.DurableSeq() < lastSeq(t, ma) {
		t.Fatalf("durable %d after Sync, last %d", a.DurableSeq(), lastSeq(t, ma))
	}
	must(t, "WaitApplied", b.WaitApplied(boundedCtx(t), a.DurableSeq()))
	if st, err := mb.JournalStats(); err != nil || st.RecordsHeld != 0 || st.DroppedRecords != 0 {
		t.Fatalf("the follower's journal holds what it applied: %+v, %v", st, err)
	}
	want := view(t, ma)
	checkWorkload(t, want, 60)
	must(t, "Close the leader", a.Close())
	waitRole(t, b, ha.RoleLeader)
	sameObjects(t, view(t, mb), want)
	endInFlight(t, b, mb, tok)
}

// Fencing with real masters: the leader's lease is revoked, the standby
// leads with every acknowledged write, and the deposed leader's next
// write is never acknowledged nor seen by the new leader.
func TestStandbyTakesOverWhenTheLeaderLosesItsSession(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	ma, mb := newStandby(t), newStandby(t)
	a := startNode(t, cli, "a", ma, nil)
	waitRole(t, a, ha.RoleLeader)
	b := startNode(t, cli, "b", mb, nil)
	tok := workload(t, ma, 30)
	must(t, "Sync", a.Sync(boundedCtx(t)))
	want := view(t, ma)
	checkWorkload(t, want, 30)

	r, err := cli.Get(boundedCtx(t), prefix+"/leader/", clientv3.WithFirstCreate()...)
	if err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "a" {
		t.Fatalf("leader key: %v, %v", r, err)
	}
	_, err = cli.Revoke(boundedCtx(t), clientv3.LeaseID(r.Kvs[0].Lease))
	must(t, "Revoke the leader's lease", err)
	waitRole(t, b, ha.RoleLeader)

	_, late, err := ma.PutStart(c1, "late", 4096, mm.ReplicateConfig{})
	must(t, "PutStart on the deposed leader's master", err)
	must(t, "PutEnd late", ma.PutEnd(c1, "late", mm.SelectAll, late))
	if err := a.Sync(boundedCtx(t)); !errors.Is(err, ha.ErrFenced) {
		t.Fatalf("deposed leader's Sync = %v, want ErrFenced", err)
	}
	waitRole(t, a, ha.RoleStopped)
	sameObjects(t, view(t, mb), want)
	if ok, err := mb.Exist("late"); err != nil || ok {
		t.Fatalf("the deposed leader's unacknowledged write is on the new leader: %v, %v", ok, err)
	}
	endInFlight(t, b, mb, tok)
}

// A standby started after the writes, with batches small enough that the
// journal spans many keys, reads everything and is promoted with it.
func TestLateStandbyCatchesUpAndIsPromoted(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	small := func(c *ha.Config) { c.MaxBatchBytes = ha.MinMaxBatchBytes }
	ma := newStandby(t)
	a := startNode(t, cli, "a", ma, small)
	waitRole(t, a, ha.RoleLeader)
	tok := workload(t, ma, 120)
	must(t, "Sync", a.Sync(boundedCtx(t)))
	r, err := cli.Get(boundedCtx(t), prefix+"/journal/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || r.Count < 3 {
		t.Fatalf("journal keys: %v, %v; want several batches", r, err)
	}
	mb := newStandby(t)
	b := startNode(t, cli, "b", mb, small)
	must(t, "late standby WaitApplied", b.WaitApplied(boundedCtx(t), a.DurableSeq()))
	if b.Role() != ha.RoleFollower {
		t.Fatalf("late standby's role %s", b.Role())
	}
	want := view(t, ma)
	checkWorkload(t, want, 120)
	must(t, "Close the leader", a.Close())
	waitRole(t, b, ha.RoleLeader)
	sameObjects(t, view(t, mb), want)
	endInFlight(t, b, mb, tok)
}

func TestStartRefusesAMasterThatIsNotAStandbyWithAJournal(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	primary, err := mm.New(mm.WithDeterministic(t0), mm.WithJournalCapacityBytes(1<<20))
	must(t, "New", err)
	defer primary.Close()
	noJournal, err := mm.New(mm.WithDeterministic(t0), mm.WithStandby(true))
	must(t, "New", err)
	defer noJournal.Close()
	for name, m := range map[string]*mm.Master{"primary": primary, "standby without journal": noJournal} {
		if _, err := ha.Start(boundedCtx(t), ha.Config{Client: cli, Prefix: prefix, Name: "x"}, m); !errors.Is(err, ha.ErrNotStandby) {
			t.Fatalf("%s: Start = %v, want ErrNotStandby", name, err)
		}
	}
	if _, err := ha.Start(boundedCtx(t), ha.Config{Client: cli, Prefix: prefix, Name: "x"}, nil); err == nil {
		t.Fatal("Start with a nil master succeeded")
	}
}
