package failover

import (
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/kvcache-ai/libmooncake_meta/go/ha/internal/etcdtest"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server/api"
)

// pair starts servers a (the leader) and b (a caught-up standby) on etcd
// endpoints eps, mounts the segment and returns the load over them.
func pair(t *testing.T, eps []string, prefix string) (a, b *server, l *load) {
	t.Helper()
	snaps := t.TempDir()
	a = startServer(t, serverOpts{etcd: eps, prefix: prefix, name: "a", snapshots: snaps})
	a.waitRole("leader")
	b = startServer(t, serverOpts{etcd: eps, prefix: prefix, name: "b", snapshots: snaps})
	b.waitRole("follower")
	l = newLoad(t, prefix, func() []*server { return []*server{a, b} })
	l.mount()
	return a, b, l
}

// Failover: the leader is killed (SIGKILL) while writes are in flight; the
// standby serves, with every acknowledged write (same replicas, same
// soft-pin and retention deadlines: not restarted), and the writes left in
// flight end on it. How long it took is logged, not asserted (a speed
// figure on this shared machine, not an outcome): waitAckBy bounds the wait.
func TestKilledLeaderIsReplacedWithEveryAcknowledgedWrite(t *testing.T) {
	c := etcdtest.Start(t)
	a, b, l := pair(t, c.Endpoints(), "/failover/kill")
	l.run(4)
	defer l.halt()
	l.waitEnded(200)
	b.waitCaughtUp(a)
	// Mid-stream: kill while calls to a await their answer.
	waitUntil(t, eventBound, "calls in flight to a", func() (bool, error) { return l.callsInFlight(a) > 0, nil })
	a.kill()
	killed := time.Now()
	first := l.waitAckBy("b", killed)
	took := first.at.Sub(killed)
	t.Logf("failover: %v from the SIGKILL to b's first acknowledged write (%s; session TTL %v)", took, first.path, sessionTTL)
	endedAtKill := l.ended.Load()
	l.waitEnded(endedAtKill + 100)
	l.halt()
	rep := l.mustHaveEverything(b)
	if rep.inFlight == 0 {
		t.Fatal("no write was left in flight across the failover")
	}
}

// fmtAck describes an acknowledgement for a failure message.
func fmtAck(a ack) string {
	return fmt.Sprintf("%s %s by %s (sent %s, answered %s, etcd leader then %q at revision %d)",
		a.path, a.key, a.server, a.sent.Format("15:04:05.000"), a.at.Format("15:04:05.000"), a.leader, a.rev)
}

// Fencing: the leader is stopped (SIGSTOP) past its session TTL, the
// standby takes over, and the old leader, continued (SIGCONT), fails its
// next append and steps down: it acknowledges nothing sent after the new
// leader's first acknowledgement, every write it did acknowledge is on
// the new leader, and it answers NOT_LEADER.
func TestStoppedLeaderIsFencedAndNeverAcknowledgesAfterTheTakeover(t *testing.T) {
	c := etcdtest.Start(t)
	const prefix = "/failover/fence"
	a, b, l := pair(t, c.Endpoints(), prefix)
	l.etcd = c.Client(t)
	l.run(3)
	defer l.halt()
	// One more writer sends to a alone, without giving up on a stopped
	// server: its calls stuck in a across the stop are answered after
	// SIGCONT, and none of those answers may be an acknowledgement of a
	// write b lacks.
	stuck := newLoad(t, prefix, func() []*server { return []*server{a} })
	stuck.etcd, stuck.pinned, stuck.base = l.etcd, a, 50
	stuck.hc = &http.Client{Timeout: eventBound}
	stuck.run(1)
	defer stuck.halt()
	l.waitEnded(150)
	stuck.waitEnded(20)
	b.waitCaughtUp(a)
	waitUntil(t, eventBound, "calls in flight to a", func() (bool, error) { return l.callsInFlight(a) > 0, nil })
	a.signal(syscall.SIGSTOP)
	stoppedAt := time.Now()
	b.waitRole("leader")
	firstB := l.waitAckBy("b", stoppedAt)
	l.waitEnded(l.ended.Load() + 50)
	a.signal(syscall.SIGCONT)
	contAt := time.Now()

	// The deposed leader refuses a write sent to it directly (NOT_LEADER,
	// or NOT_DURABLE if it tried to store it first) and steps down: its
	// server restarts a standby that follows b.
	// The calls stuck in a across the stop are answered now; every later
	// one too is a refusal (NOT_LEADER, or NOT_DURABLE if a tried to store
	// it first).
	refusedAt := time.Now()
	waitUntil(t, eventBound, "a to refuse a call sent after SIGCONT", func() (bool, error) {
		_, err := stuck.call(api.PathPutStart, "fence/probe", api.StartRequest{ClientID: 9, Key: "fence/probe", Size: objectSize}, nil, true)
		if err == nil {
			t.Errorf("the deposed leader acknowledged a put sent after SIGCONT")
			return true, nil
		}
		ce, ok := answered(err)
		if ok && ce.body.Name != api.ErrNameNotLeader && ce.body.Name != api.ErrNameNotDurable {
			t.Errorf("the deposed leader answered %v, want NOT_LEADER or NOT_DURABLE", err)
		}
		return ok, err
	})
	t.Logf("a refused a call %v after SIGCONT", time.Since(refusedAt))
	waitUntil(t, eventBound, "a to step down and follow b", func() (bool, error) {
		r, err := a.role()
		if err != nil {
			return false, err
		}
		return r.Role == "follower" && r.Leader == "b", fmt.Errorf("role %+v", r)
	})
	// It stepped down because it was fenced (its session ended, its
	// election key was deleted, or its append was refused).
	if line := a.logLine(`"ha node stopped"`, "ha: leadership lost"); line == "" {
		t.Errorf("a's log has no step-down with ha.ErrFenced")
	} else {
		t.Logf("a stepped down: %s", line)
	}
	if v, err := a.metric("mooncake_meta_ha_node_restarts_total"); err != nil || v != "1" {
		t.Errorf("a's restarts after stepping down: %q, %v; want 1", v, err)
	}
	l.waitEnded(l.ended.Load() + 50)
	l.halt()
	stuck.halt()

	l.mu.Lock()
	acks := append([]ack(nil), l.acks...)
	l.mu.Unlock()
	stuck.mu.Lock()
	acks = append(acks, stuck.acks...)
	stuck.mu.Unlock()
	var byA, lateA int
	for _, x := range acks {
		if x.server != "a" {
			continue
		}
		byA++
		if !x.sent.Before(firstB.at) {
			t.Errorf("two leaders acknowledged: a acknowledged a call sent after b's first acknowledgement (%s): %s", fmtAck(firstB), fmtAck(x))
		}
		if x.at.After(contAt) || x.leader == "b" {
			lateA++ // stored before the takeover, answered after it: b has it (checked below)
			t.Logf("late acknowledgement by a: %s", fmtAck(x))
		}
	}
	t.Logf("a acknowledged %d writes (%d answered after the takeover); b's first: %s", byA, lateA, fmtAck(firstB))
	if byA == 0 {
		t.Fatal("a acknowledged nothing: the check proves nothing")
	}
	// Every acknowledgement a gave (late ones included) is on b.
	l.mustHaveEverything(b)
	stuck.mustHaveEverything(b)
}
