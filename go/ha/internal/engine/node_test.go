package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvcache-ai/libmooncake_meta/go/ha/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// Every wait in these tests is bounded by this and ends on an observable
// event (a role, an applied or durable sequence, an etcd key).
const bound = 60 * time.Second

func boundedCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	t.Cleanup(cancel)
	return ctx
}

func startNode(t *testing.T, cli *clientv3.Client, prefix, name string, j Journal, edit func(*Config)) *Node {
	t.Helper()
	// The default TTL (10 s): no test waits for a lease to expire (they
	// revoke it or Close), and a short one could expire on a loaded
	// machine whose keep-alives run late, deposing a leader mid-test.
	cfg := Config{Client: cli, Prefix: prefix, Name: name, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}
	if edit != nil {
		edit(&cfg)
	}
	n, err := Start(boundedCtx(t), cfg, j)
	if err != nil {
		t.Fatalf("Start %s: %v", name, err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

func waitRole(t *testing.T, n *Node, r Role) {
	t.Helper()
	if err := n.WaitRole(boundedCtx(t), r); err != nil {
		t.Fatalf("%s: WaitRole(%s): %v (role %s)", n.cfg.Name, r, err, n.Role())
	}
}

// storedRecords decodes every batch of the cluster's journal in etcd, in
// key order, checking that the batches are consecutive.
func storedRecords(t *testing.T, cli *clientv3.Client, prefix string) []string {
	t.Helper()
	r, err := cli.Get(boundedCtx(t), JournalPrefix(prefix), clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		t.Fatalf("Get journal: %v", err)
	}
	var recs []string
	for _, kv := range r.Kvs {
		var b fakeBatch
		if err := json.Unmarshal(kv.Value, &b); err != nil {
			t.Fatalf("batch %s: %v", kv.Key, err)
		}
		if want := JournalKey(prefix, b.First); string(kv.Key) != want {
			t.Fatalf("batch starting at %d stored under %s, want %s", b.First, kv.Key, want)
		}
		if b.First != uint64(len(recs))+1 {
			t.Fatalf("batch %s starts at %d after %d records", kv.Key, b.First, len(recs))
		}
		recs = append(recs, b.Recs...)
	}
	return recs
}

// leaderLease is the lease of the cluster's leader key.
func leaderLease(t *testing.T, cli *clientv3.Client, prefix string) clientv3.LeaseID {
	t.Helper()
	r, err := cli.Get(boundedCtx(t), ElectionPrefix(prefix)+"/", clientv3.WithFirstCreate()...)
	if err != nil || len(r.Kvs) == 0 {
		t.Fatalf("leader key: %v, %d keys", err, len(r.Kvs))
	}
	return clientv3.LeaseID(r.Kvs[0].Lease)
}

func TestConfigRejectsEveryBadField(t *testing.T) {
	cli := &clientv3.Client{}
	good := Config{Client: cli, Prefix: "/c", Name: "a"}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no client", func(c *Config) { c.Client = nil }, "Config.Client"},
		{"empty prefix", func(c *Config) { c.Prefix = "" }, "Config.Prefix"},
		{"prefix with a trailing slash", func(c *Config) { c.Prefix = "/c/" }, "Config.Prefix"},
		{"empty name", func(c *Config) { c.Name = "" }, "Config.Name"},
		{"sub-second TTL", func(c *Config) { c.SessionTTL = 500 * time.Millisecond }, "Config.SessionTTL"},
		{"fractional TTL", func(c *Config) { c.SessionTTL = 1500 * time.Millisecond }, "Config.SessionTTL"},
		{"negative TTL", func(c *Config) { c.SessionTTL = -time.Second }, "Config.SessionTTL"},
		{"tiny batch", func(c *Config) { c.MaxBatchBytes = MinMaxBatchBytes - 1 }, "Config.MaxBatchBytes"},
		{"huge batch", func(c *Config) { c.MaxBatchBytes = MaxMaxBatchBytes + 1 }, "Config.MaxBatchBytes"},
		{"negative flush interval", func(c *Config) { c.FlushInterval = -time.Millisecond }, "Config.FlushInterval"},
		{"negative snapshot interval", func(c *Config) { c.SnapshotInterval = -time.Second }, "Config.SnapshotInterval"},
		{"negative snapshot bytes", func(c *Config) { c.SnapshotEveryBytes = -1 }, "Config.SnapshotEveryBytes"},
		{"negative snapshot keep", func(c *Config) { c.SnapshotKeep = -1 }, "Config.SnapshotKeep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.edit(&c)
			_, err := c.withDefaults()
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("withDefaults = %v, want ErrInvalidConfig naming %s", err, tc.want)
			}
			if verr := c.Validate(); verr == nil || verr.Error() != err.Error() {
				t.Fatalf("Validate = %v, want %v", verr, err)
			}
		})
	}
	c, err := good.withDefaults()
	if err != nil || good.Validate() != nil {
		t.Fatalf("good config: %v, %v", err, good.Validate())
	}
	if c.SessionTTL != DefaultSessionTTL || c.MaxBatchBytes != DefaultMaxBatchBytes || c.FlushInterval != DefaultFlushInterval || c.Logger == nil ||
		c.SnapshotInterval != DefaultSnapshotInterval || c.SnapshotEveryBytes != DefaultSnapshotEveryBytes || c.SnapshotKeep != DefaultSnapshotKeep {
		t.Fatalf("defaults not applied: %+v", c)
	}
}

func TestStartRefusesAPrimaryOrAMasterWithoutJournal(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	primary := &fakeJournal{capacity: 1 << 20}
	noJournal := &fakeJournal{standby: true}
	for name, j := range map[string]*fakeJournal{"primary": primary, "no journal": noJournal} {
		_, err := Start(boundedCtx(t), Config{Client: cli, Prefix: "/c", Name: "a"}, j)
		if !errors.Is(err, ErrNotStandby) {
			t.Fatalf("%s: Start = %v, want ErrNotStandby", name, err)
		}
	}
}

func TestFirstNodeLeadsAndAcknowledgesOnlyStoredRecords(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	j := newFakeStandby()
	a := startNode(t, cli, "/c", "a", j, nil)
	waitRole(t, a, RoleLeader)
	if standby, _, _, _ := j.State(); standby {
		t.Fatal("the leader's master is still a standby")
	}
	for i := range 3 {
		j.append(fmt.Sprintf("r%d", i+1))
	}
	if err := a.WaitDurable(boundedCtx(t), 3); err != nil {
		t.Fatalf("WaitDurable(3): %v", err)
	}
	if got := storedRecords(t, cli, "/c"); !slices.Equal(got, []string{"r1", "r2", "r3"}) {
		t.Fatalf("stored %v", got)
	}
	if _, _, _, err := j.ReadBatch(3, make([]byte, 1024)); err == nil || !strings.Contains(err.Error(), "overrun") {
		t.Fatalf("record 3 not released after WaitDurable(3): read = %v", err)
	}
	if err := a.WaitDurable(boundedCtx(t), 0); err != nil {
		t.Fatalf("WaitDurable(0): %v", err)
	}
	j.append("r4")
	if err := a.Sync(boundedCtx(t)); err != nil || a.DurableSeq() < 4 {
		t.Fatalf("Sync: %v, durable %d", err, a.DurableSeq())
	}
	name, ok, err := Leader(boundedCtx(t), cli, "/c")
	if err != nil || !ok || name != "a" {
		t.Fatalf("Leader = %q, %v, %v", name, ok, err)
	}
}

func TestWaitDurableOnAFollowerIsNotLeader(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	a := startNode(t, cli, "/c", "a", newFakeStandby(), nil)
	waitRole(t, a, RoleLeader)
	b := startNode(t, cli, "/c", "b", newFakeStandby(), nil)
	if r := b.Role(); r != RoleFollower {
		t.Fatalf("second node's role %s", r)
	}
	if err := b.WaitDurable(boundedCtx(t), 1); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("WaitDurable on a follower = %v", err)
	}
	if err := b.Sync(boundedCtx(t)); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("Sync on a follower = %v", err)
	}
}

// Two shippers: the first is elected, its session is revoked, the second
// is elected; the first's next fenced append fails and stores nothing.
func TestFencedAppendFailsOnceAnotherShipperLeads(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	ctx := boundedCtx(t)
	s1, err := concurrency.NewSession(cli, concurrency.WithTTL(5))
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	e1 := concurrency.NewElection(s1, ElectionPrefix("/c"))
	if err := e1.Campaign(ctx, "one"); err != nil {
		t.Fatalf("Campaign one: %v", err)
	}
	if err := appendFenced(ctx, cli, e1.Key(), e1.Rev(), JournalKey("/c", 1), []byte("b1"), time.Second); err != nil {
		t.Fatalf("first leader's append: %v", err)
	}
	s2, err := concurrency.NewSession(cli, concurrency.WithTTL(5))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	e2 := concurrency.NewElection(s2, ElectionPrefix("/c"))
	if _, err := cli.Revoke(ctx, s1.Lease()); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	if err := e2.Campaign(ctx, "two"); err != nil {
		t.Fatalf("Campaign two: %v", err)
	}
	err = appendFenced(ctx, cli, e1.Key(), e1.Rev(), JournalKey("/c", 2), []byte("stale"), time.Second)
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("deposed leader's append = %v, want ErrFenced", err)
	}
	if err := appendFenced(ctx, cli, e2.Key(), e2.Rev(), JournalKey("/c", 2), []byte("b2"), time.Second); err != nil {
		t.Fatalf("new leader's append: %v", err)
	}
	// A retry of a committed append (its answer lost) is recognised; other
	// bytes under the same key are a conflict.
	if err := appendFenced(ctx, cli, e2.Key(), e2.Rev(), JournalKey("/c", 2), []byte("b2"), time.Second); err != nil {
		t.Fatalf("repeated append: %v", err)
	}
	if err := appendFenced(ctx, cli, e2.Key(), e2.Rev(), JournalKey("/c", 2), []byte("other"), time.Second); !errors.Is(err, ErrConflict) {
		t.Fatalf("conflicting append = %v, want ErrConflict", err)
	}
	r, err := cli.Get(ctx, JournalKey("/c", 2))
	if err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "b2" {
		t.Fatalf("batch 2 = %v, %v", r, err)
	}
}

// A leader whose lease is revoked while a standby waits: the standby
// leads, the deposed leader acknowledges nothing more (WaitDurable fails,
// nothing of it reaches etcd) and stops.
func TestDeposedLeaderStopsAcknowledging(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	ja, jb := newFakeStandby(), newFakeStandby()
	a := startNode(t, cli, "/c", "a", ja, nil)
	waitRole(t, a, RoleLeader)
	b := startNode(t, cli, "/c", "b", jb, nil)
	ja.append("acked")
	if err := a.WaitDurable(boundedCtx(t), 1); err != nil {
		t.Fatalf("WaitDurable: %v", err)
	}
	if _, err := cli.Revoke(boundedCtx(t), leaderLease(t, cli, "/c")); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	waitRole(t, b, RoleLeader)
	late := ja.append("late")
	if err := a.WaitDurable(boundedCtx(t), late); !errors.Is(err, ErrFenced) {
		t.Fatalf("deposed leader's WaitDurable = %v, want ErrFenced", err)
	}
	waitRole(t, a, RoleStopped)
	if !errors.Is(a.Err(), ErrFenced) {
		t.Fatalf("deposed leader's Err = %v", a.Err())
	}
	if got := jb.records(); !slices.Equal(got, []string{"acked"}) {
		t.Fatalf("new leader has %v", got)
	}
	jb.append("after")
	if err := b.Sync(boundedCtx(t)); err != nil {
		t.Fatalf("new leader's Sync: %v", err)
	}
	if got := storedRecords(t, cli, "/c"); !slices.Equal(got, []string{"acked", "after"}) {
		t.Fatalf("stored %v", got)
	}
}

// A standby follows in many batches, is promoted when the leader closes
// (with the records the leader had not been asked to ship), and a standby
// started late catches up with all of it.
func TestStandbyFollowsIsPromotedAndALateStandbyCatchesUp(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	small := func(c *Config) { c.MaxBatchBytes = MinMaxBatchBytes }
	ja, jb := newFakeStandby(), newFakeStandby()
	a := startNode(t, cli, "/c", "a", ja, small)
	waitRole(t, a, RoleLeader)
	b := startNode(t, cli, "/c", "b", jb, small)
	var last uint64
	for i := range 200 {
		last = ja.append(fmt.Sprintf("record-%03d-%s", i, strings.Repeat("x", 60)))
	}
	if err := a.WaitDurable(boundedCtx(t), last); err != nil {
		t.Fatalf("WaitDurable: %v", err)
	}
	r, err := cli.Get(boundedCtx(t), JournalPrefix("/c"), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || r.Count < 3 {
		t.Fatalf("journal keys: %v, %v; want several batches", r, err)
	}
	if err := b.WaitApplied(boundedCtx(t), last); err != nil {
		t.Fatalf("WaitApplied: %v", err)
	}
	unshipped := ja.append("written just before Close")
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if a.DurableSeq() < unshipped {
		t.Fatalf("Close left durable at %d < %d", a.DurableSeq(), unshipped)
	}
	waitRole(t, b, RoleLeader)
	if got, want := jb.records(), ja.records(); !slices.Equal(got, want) {
		t.Fatalf("promoted standby has %d records, leader had %d", len(got), len(want))
	}
	next := jb.append("on the new leader")
	if err := b.WaitDurable(boundedCtx(t), next); err != nil {
		t.Fatalf("WaitDurable on the new leader: %v", err)
	}
	// One batch per range read: the late standby pages through them all.
	jc := newFakeStandby()
	c := startNode(t, cli, "/c", "c", jc, func(c *Config) { small(c); c.pageBytes = MinMaxBatchBytes })
	if err := c.WaitApplied(boundedCtx(t), next); err != nil {
		t.Fatalf("late standby WaitApplied: %v", err)
	}
	if got, want := jc.records(), jb.records(); !slices.Equal(got, want) {
		t.Fatalf("late standby has %d records, leader %d", len(got), len(want))
	}
	if r := c.Role(); r != RoleFollower {
		t.Fatalf("late standby's role %s", r)
	}
}

func TestRecordLargerThanABatchStepsDown(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	j := newFakeStandby()
	a := startNode(t, cli, "/c", "a", j, func(c *Config) { c.MaxBatchBytes = MinMaxBatchBytes })
	waitRole(t, a, RoleLeader)
	seq := j.append(strings.Repeat("y", MinMaxBatchBytes))
	if err := a.WaitDurable(boundedCtx(t), seq); !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("WaitDurable = %v, want ErrRecordTooLarge", err)
	}
	select {
	case <-a.Done(): // stopped and resigned
	case <-boundedCtx(t).Done():
		t.Fatal("the node did not finish stepping down")
	}
	name, ok, err := Leader(boundedCtx(t), cli, "/c")
	if err != nil || ok {
		t.Fatalf("a leader remains after stepping down: %q, %v, %v", name, ok, err)
	}
}

func TestFollowerStopsOnAGap(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	if _, err := cli.Put(boundedCtx(t), JournalKey("/c", 5), string(encode(5, []string{"e"}))); err != nil {
		t.Fatal(err)
	}
	a := startNode(t, cli, "/c", "a", newFakeStandby(), nil)
	waitRole(t, a, RoleStopped)
	if err := a.Err(); !errors.Is(err, ErrJournal) || !strings.Contains(err.Error(), "gap") {
		t.Fatalf("Err = %v, want ErrJournal naming the gap", err)
	}
}

// A leader whose election key alone is deleted (its lease still alive)
// steps down at once, without waiting for a write to be refused.
func TestIdleLeaderStepsDownWhenItsKeyIsDeleted(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	a := startNode(t, cli, "/c", "a", newFakeStandby(), nil)
	waitRole(t, a, RoleLeader)
	b := startNode(t, cli, "/c", "b", newFakeStandby(), nil)
	key, _ := a.fence()
	if _, err := cli.Delete(boundedCtx(t), key); err != nil {
		t.Fatalf("Delete %s: %v", key, err)
	}
	waitRole(t, a, RoleStopped)
	if !errors.Is(a.Err(), ErrFenced) {
		t.Fatalf("Err = %v, want ErrFenced", a.Err())
	}
	waitRole(t, b, RoleLeader)
}

// Closing a follower withdraws its candidacy: only the leader's key stays.
func TestClosingAFollowerWithdrawsItsCandidacy(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	a := startNode(t, cli, "/c", "a", newFakeStandby(), nil)
	waitRole(t, a, RoleLeader)
	b := startNode(t, cli, "/c", "b", newFakeStandby(), nil)
	// b's key appears once it campaigns: watch for it rather than guess.
	ctx := boundedCtx(t)
	w := cli.Watch(ctx, ElectionPrefix("/c")+"/", clientv3.WithPrefix(), clientv3.WithRev(1))
	for n := 0; n < 2; {
		wr, ok := <-w
		if !ok {
			t.Fatalf("watch ended: %v", ctx.Err())
		}
		for _, ev := range wr.Events {
			if ev.Type == clientv3.EventTypePut {
				n++
			}
		}
	}
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if b.Role() != RoleStopped || b.Err() != nil {
		t.Fatalf("closed follower: role %s, err %v", b.Role(), b.Err())
	}
	r, err := cli.Get(ctx, ElectionPrefix("/c")+"/", clientv3.WithPrefix())
	if err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "a" {
		t.Fatalf("election keys after closing the follower: %v, %v", r, err)
	}
	if err := b.WaitDurable(ctx, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("WaitDurable on a closed node = %v, want ErrClosed", err)
	}
	if r := a.Role(); r != RoleLeader {
		t.Fatalf("leader's role %s", r)
	}
}

// A 3-member etcd loses a member: the leader keeps shipping and the
// standby keeps applying through the two that remain.
func TestShippingSurvivesTheLossOfOneEtcdMember(t *testing.T) {
	c := etcdtest.StartCluster(t, 3)
	cli := c.Client(t)
	ja, jb := newFakeStandby(), newFakeStandby()
	a := startNode(t, cli, "/c", "a", ja, nil)
	waitRole(t, a, RoleLeader)
	b := startNode(t, cli, "/c", "b", jb, nil)
	before := ja.append("before")
	if err := a.WaitDurable(boundedCtx(t), before); err != nil {
		t.Fatalf("WaitDurable before: %v", err)
	}
	if err := c.Members[0].Stop(); err != nil {
		t.Fatalf("stopping member 0: %v", err)
	}
	after := ja.append("after")
	if err := a.WaitDurable(boundedCtx(t), after); err != nil {
		t.Fatalf("WaitDurable after losing a member: %v", err)
	}
	if err := b.WaitApplied(boundedCtx(t), after); err != nil {
		t.Fatalf("WaitApplied after losing a member: %v", err)
	}
	if got := jb.records(); !slices.Equal(got, []string{"before", "after"}) {
		t.Fatalf("standby has %v", got)
	}
	if r := a.Role(); r != RoleLeader {
		t.Fatalf("leader's role %s after losing an etcd member", r)
	}
}

// Records dropped from the leader's journal before they were shipped (it
// was full: etcd fell behind) cannot be made durable: the leader steps
// down rather than acknowledge around the hole.
func TestJournalOverrunOnTheLeaderStepsDown(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	j := newFakeStandby()
	a := startNode(t, cli, "/c", "a", j, nil)
	waitRole(t, a, RoleLeader)
	kept := j.append("kept")
	if err := a.WaitDurable(boundedCtx(t), kept); err != nil {
		t.Fatalf("WaitDurable: %v", err)
	}
	lost := j.appendDropped("lost")
	if err := a.WaitDurable(boundedCtx(t), lost); !errors.Is(err, ErrJournal) || !strings.Contains(err.Error(), "overrun") {
		t.Fatalf("WaitDurable past an overrun = %v, want ErrJournal (overrun)", err)
	}
	waitRole(t, a, RoleStopped)
	if got := storedRecords(t, cli, "/c"); !slices.Equal(got, []string{"kept"}) {
		t.Fatalf("stored %v", got)
	}
}

// A leader cut off from etcd that has not noticed it yet (its keep-alives
// and watches go unanswered but nothing has failed: a partition, a paused
// process) is deposed when its lease expires in etcd. Once another node
// leads, a Sync with nothing to ship — what a server awaits before
// answering a read — fails with ErrFenced instead of vouching for state
// the new leader may have changed since, and the node steps down.
func TestALeaderCutOffFromEtcdAcknowledgesNoReadOnceAnotherLeads(t *testing.T) {
	c := etcdtest.Start(t)
	cliA := c.Client(t)
	cut := newCutOff(cliA)
	ja, jb := newFakeStandby(), newFakeStandby()
	// A short TTL: the test waits for a's lease to expire in etcd.
	a := startNode(t, cliA, "/c", "a", ja, func(c *Config) { c.SessionTTL = 2 * time.Second })
	waitRole(t, a, RoleLeader)
	b := startNode(t, c.Client(t), "/c", "b", jb, nil)
	acked := appendDurable(t, a, ja, "acked")
	if err := b.WaitApplied(boundedCtx(t), acked); err != nil {
		t.Fatalf("WaitApplied: %v", err)
	}
	cut.cutNow()
	waitRole(t, b, RoleLeader)
	// a's lease expired in etcd before b was elected; a appended nothing
	// since, so only the lease can tell it that it no longer leads.
	if err := a.Sync(boundedCtx(t)); !errors.Is(err, ErrFenced) {
		t.Fatalf("Sync on the deposed leader = %v (role %s), want ErrFenced", err, a.Role())
	}
	waitRole(t, a, RoleStopped)
	if !errors.Is(a.Err(), ErrFenced) {
		t.Fatalf("deposed leader's Err = %v, want ErrFenced", a.Err())
	}
}

// WaitDurable acknowledges stored records only while the leader's lease
// runs, or when a fenced write sent after the call began succeeded; a
// stopped node's earlier writes prove nothing about the time of the call.
func TestWaitDurableNeedsTheLeaseOrAWriteSentSinceTheCall(t *testing.T) {
	ctx := boundedCtx(t)
	n := &Node{role: RoleLeader, durable: 5, changed: make(chan struct{}), kick: make(chan struct{}, 1)}
	n.leaseUntil = time.Now().Add(time.Hour)
	n.proven(time.Now())
	if err := n.WaitDurable(ctx, 5); err != nil {
		t.Fatalf("WaitDurable under the lease: %v", err)
	}
	n.leaseUntil = time.Now().Add(-time.Millisecond)
	if err := n.WaitDurable(ctx, 5); !errors.Is(err, ErrFenced) {
		t.Fatalf("WaitDurable once the lease ran out = %v, want ErrFenced", err)
	}
	done := make(chan error, 1)
	go func() { done <- n.WaitDurable(ctx, 6) }()
	<-n.kick // the call began and asks for record 6 to be shipped
	n.proven(time.Now())
	n.update(func() { n.durable = 6 })
	if err := <-done; err != nil {
		t.Fatalf("WaitDurable of a record shipped after the call began: %v", err)
	}
	n.stop(nil)
	if err := n.WaitDurable(ctx, 6); !errors.Is(err, ErrClosed) {
		t.Fatalf("WaitDurable on a closed node = %v, want ErrClosed", err)
	}
}
