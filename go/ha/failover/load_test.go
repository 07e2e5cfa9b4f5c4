package failover

// The write load and its record: writers put and upsert objects with soft
// pins (ENABLE with a TTL, PRESERVE and DISABLE upserts), leave some
// writes Started without their End, put grouped objects and retain their
// groups, and record every acknowledgement: the server that gave it, the
// replicas, the committed deadline. check then reads every acknowledged
// write back from a server (ending those left in flight there).

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvcache-ai/libmooncake_meta/go/ha"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server/api"
	clientv3 "go.etcd.io/etcd/client/v3"
)

const (
	objectSize = 1024
	pinTTLMs   = uint64(10 * 60 * 1000) // far beyond any test: no pin expires
	segBase    = uint64(1) << 40
	segSize    = uint64(4) << 30
)

type objState int

const (
	// stUncertain: a Start (or upsert Start) got no acknowledgement; the
	// write may or may not exist: nothing is checked.
	stUncertain objState = iota
	// stInFlight: the Start was acknowledged, its End was not.
	stInFlight
	// stEnded: the End was acknowledged.
	stEnded
)

type object struct {
	key      string
	client   uint64
	state    objState
	token    uint64
	endPath  string
	replicas []api.Replica
	pin      api.SoftPinResponse
	pinKnown bool
	ackedBy  string // the server that acknowledged the last Start or End
}

// ack is one acknowledged write call.
type ack struct {
	server string
	path   string
	key    string
	sent   time.Time // the request left the client
	at     time.Time // its 200 arrived
	// When load.etcd is set: the election's leader and etcd's revision read
	// right after the answer arrived.
	leader string
	rev    int64
}

// load is a set of writers over the servers of one cluster.
type load struct {
	t       testing.TB
	hc      *http.Client
	etcd    *clientv3.Client // nil: acks are not annotated with the etcd leader
	prefix  string
	servers func() []*server // the servers a writer may find the leader among
	pinned  *server          // when set, every call goes to it, leading or not
	base    int              // writer w's keys are w<base+w>/...

	mu      sync.Mutex
	target  *server
	objects map[string]*object
	order   []string
	groups  map[string]uint64 // acknowledged retention deadlines
	acks    []ack

	ended    atomic.Int64 // acknowledged Ends
	inflight sync.Map     // *server -> *atomic.Int64: calls awaiting an answer
	stop     chan struct{}
	wg       sync.WaitGroup
}

func newLoad(t testing.TB, prefix string, servers func() []*server) *load {
	return &load{
		t: t, prefix: prefix, servers: servers,
		// A call to a stopped (SIGSTOP) server gives up after this; its
		// outcome is then unknown, like a lost connection's.
		hc:      &http.Client{Timeout: 3 * time.Second},
		objects: map[string]*object{},
		groups:  map[string]uint64{},
		stop:    make(chan struct{}),
	}
}

func (l *load) stopped() bool {
	select {
	case <-l.stop:
		return true
	default:
		return false
	}
}

// leader returns the server that reports the leader role, polling every
// running server's /role until one does (bounded by eventBound).
func (l *load) leader() (*server, error) {
	if l.pinned != nil {
		return l.pinned, nil
	}
	l.mu.Lock()
	s := l.target
	l.mu.Unlock()
	if s != nil {
		return s, nil
	}
	deadline := time.Now().Add(eventBound)
	for {
		for _, c := range l.servers() {
			if !c.running() {
				continue
			}
			if r, err := c.role(); err == nil && r.Role == "leader" {
				l.mu.Lock()
				l.target = c
				l.mu.Unlock()
				return c, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no server reported the leader role within %v", eventBound)
		}
		time.Sleep(pollInterval)
	}
}

// leading forgets the cached leader and finds the server that leads now.
func (l *load) leading() (*server, error) {
	l.mu.Lock()
	l.target = nil
	l.mu.Unlock()
	return l.leader()
}

func (l *load) forget(s *server) {
	l.mu.Lock()
	if l.target == s {
		l.target = nil
	}
	l.mu.Unlock()
}

func (l *load) counter(s *server) *atomic.Int64 {
	c, _ := l.inflight.LoadOrStore(s, new(atomic.Int64))
	return c.(*atomic.Int64)
}

// callsInFlight is how many calls to s await an answer now.
func (l *load) callsInFlight(s *server) int64 { return l.counter(s).Load() }

// call sends one call to the leader. A lost connection, NOT_LEADER or
// NOT_DURABLE makes the next call look for the leader again. write says
// whether an acknowledgement is recorded.
func (l *load) call(path, key string, req, resp any, write bool) (*server, error) {
	s, err := l.leader()
	if err != nil {
		return nil, err
	}
	c := l.counter(s)
	c.Add(1)
	sent := time.Now()
	err = post(l.hc, s.url, path, req, resp)
	at := time.Now()
	c.Add(-1)
	if err != nil {
		if ce, ok := answered(err); !ok || ce.status == http.StatusServiceUnavailable {
			l.forget(s)
		}
		return s, err
	}
	if write {
		a := ack{server: s.opts.name, path: path, key: key, sent: sent, at: at}
		if l.etcd != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if name, ok, err := ha.Leader(ctx, l.etcd, l.prefix); err == nil && ok {
				a.leader = name
			}
			if r, err := l.etcd.Get(ctx, "failover-revision-probe"); err == nil {
				a.rev = r.Header.Revision
			}
			cancel()
		}
		l.mu.Lock()
		l.acks = append(l.acks, a)
		l.mu.Unlock()
	}
	return s, nil
}

// read sends a read until it is answered 200 (it has no effect, so it is
// retried across a failover), for at most eventBound; a load pinned to one
// server tries once (that server may never lead again).
func (l *load) read(path string, req, resp any) error {
	deadline := time.Now().Add(eventBound)
	for {
		_, err := l.call(path, "", req, resp, false)
		if err == nil || l.pinned != nil {
			return err
		}
		if ce, ok := answered(err); ok && ce.status != http.StatusServiceUnavailable {
			return err
		}
		if time.Now().After(deadline) {
			return err
		}
	}
}

// mount mounts the segment every write allocates from.
func (l *load) mount() {
	l.t.Helper()
	if _, err := l.call(api.PathMount, "", api.MountRequest{ClientID: 1, Name: "seg0", Base: segBase, Size: segSize}, nil, true); err != nil {
		l.t.Fatalf("mount: %v", err)
	}
}

// unexpected reports a refusal a failover does not explain.
func (l *load) unexpected(what string, err error) {
	if ce, ok := answered(err); ok && ce.status != http.StatusServiceUnavailable {
		l.t.Errorf("%s: %v", what, err)
	}
}

// write runs a Start (and, if end, the End and the deadline read) of key.
func (l *load) write(w int, key, startPath, endPath string, cfg api.ReplicateConfig, end bool) {
	client := uint64(100 + w)
	var sr api.StartResponse
	srv, err := l.call(startPath, key, api.StartRequest{ClientID: client, Key: key, Size: objectSize, Config: cfg}, &sr, true)
	l.mu.Lock()
	o := l.objects[key]
	if o == nil {
		o = &object{key: key, client: client}
		l.objects[key] = o
		l.order = append(l.order, key)
	}
	if err != nil {
		o.state = stUncertain
		l.mu.Unlock()
		l.unexpected(startPath+" "+key, err)
		return
	}
	o.state, o.token, o.endPath, o.replicas, o.pinKnown, o.ackedBy = stInFlight, sr.Token, endPath, sr.Replicas, false, srv.opts.name
	l.mu.Unlock()
	if !end {
		return
	}
	srv, err = l.call(endPath, key, api.EndRequest{ClientID: client, Key: key, Token: sr.Token}, nil, true)
	if err != nil {
		// Left in flight: check ends it on the server that leads then.
		l.unexpected(endPath+" "+key, err)
		return
	}
	l.ended.Add(1)
	l.mu.Lock()
	o.state, o.ackedBy = stEnded, srv.opts.name
	l.mu.Unlock()
	var pin api.SoftPinResponse
	if err := l.read(api.PathSoftPin, api.KeyRequest{Key: key}, &pin); err != nil {
		l.unexpected("softpin "+key, err)
		return
	}
	l.mu.Lock()
	o.pin, o.pinKnown = pin, true
	l.mu.Unlock()
}

// ended reports whether key's last write was acknowledged ended.
func (l *load) isEnded(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	o := l.objects[key]
	return o != nil && o.state == stEnded
}

// retain retains group for pinTTLMs and records its deadline.
func (l *load) retain(group string) {
	var gr api.GroupsResponse
	if _, err := l.call(api.PathRetainGroups, group, api.RetainRequest{Groups: []string{group}, TTLMs: pinTTLMs}, &gr, true); err != nil {
		l.unexpected("retain "+group, err)
		return
	}
	if len(gr.Results) != 1 || gr.Results[0].Error != nil {
		l.t.Errorf("retain %s: %+v", group, gr.Results)
		return
	}
	l.mu.Lock()
	l.groups[group] = gr.Results[0].DeadlineMs
	l.mu.Unlock()
}

// writer w's i-th step: put with a soft pin (ENABLE with a TTL), put
// without one, a Start left without its End, a grouped put and its
// group's retention, a PRESERVE or a DISABLE upsert of an earlier key.
func (l *load) step(w, i int) {
	w += l.base
	key := func(j int) string { return fmt.Sprintf("w%d/%06d", w, j) }
	ttl := pinTTLMs
	enable := api.ReplicateConfig{SoftPinAction: api.SoftPinEnable, TTLMs: &ttl}
	switch i % 10 {
	case 0:
		l.write(w, key(i), api.PathPutStart, api.PathPutEnd, enable, false)
	case 6:
		g := enable
		g.Group = fmt.Sprintf("g/w%d/%06d", w, i)
		l.write(w, key(i), api.PathPutStart, api.PathPutEnd, g, true)
		l.retain(g.Group)
	case 7:
		if k := key(i - 2); l.isEnded(k) {
			l.write(w, k, api.PathUpsertStart, api.PathUpsertEnd, api.ReplicateConfig{SoftPinAction: api.SoftPinPreserve}, true)
		}
	case 8:
		if k := key(i - 4); l.isEnded(k) {
			l.write(w, k, api.PathUpsertStart, api.PathUpsertEnd, api.ReplicateConfig{SoftPinAction: api.SoftPinDisable}, true)
		}
	case 9:
		l.write(w, key(i), api.PathPutStart, api.PathPutEnd, api.ReplicateConfig{}, true)
	default:
		l.write(w, key(i), api.PathPutStart, api.PathPutEnd, enable, true)
	}
}

// run starts n writers; halt stops them.
func (l *load) run(n int) {
	for w := range n {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; !l.stopped(); i++ {
				l.step(w, i)
			}
		}()
	}
}

func (l *load) halt() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

// waitEnded waits until at least n Ends were acknowledged in all.
func (l *load) waitEnded(n int64) {
	l.t.Helper()
	waitUntil(l.t, eventBound, fmt.Sprintf("%d acknowledged Ends", n), func() (bool, error) {
		return l.ended.Load() >= n, fmt.Errorf("%d so far", l.ended.Load())
	})
}

// firstAckBy is the first acknowledgement server name gave at or after
// from (ok false: none).
func (l *load) firstAckBy(name string, from time.Time) (ack, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, a := range l.acks {
		if a.server == name && !a.at.Before(from) {
			return a, true
		}
	}
	return ack{}, false
}

// waitAckBy waits for an acknowledgement by server name at or after from.
func (l *load) waitAckBy(name string, from time.Time) ack {
	l.t.Helper()
	var a ack
	waitUntil(l.t, eventBound, "an acknowledgement by "+name, func() (bool, error) {
		var ok bool
		a, ok = l.firstAckBy(name, from)
		return ok, nil
	})
	return a
}

// report is what check found.
type report struct {
	ended, inFlight, uncertain, groups int
	lost                               []string // acknowledged writes missing or different
}

// sameReplicas compares replicas but for their status (a Start answers
// PROCESSING, a get after the End COMPLETE).
func sameReplicas(got, want []api.Replica) bool {
	strip := func(rs []api.Replica) []api.Replica {
		out := slices.Clone(rs)
		for i := range out {
			out[i].Status = ""
		}
		return out
	}
	return reflect.DeepEqual(strip(got), strip(want))
}

// check reads every acknowledged write back from s (the writers must have
// stopped): an ended write has its replicas (all COMPLETE) and its
// deadline; a write in flight is ended on s, then has its replicas; a
// retained group keeps its deadline (a retain for 1 ms answers the later
// of the two).
func (l *load) check(s *server) report {
	l.mu.Lock()
	objs := make([]object, 0, len(l.order))
	for _, k := range l.order {
		objs = append(objs, *l.objects[k])
	}
	groups := make(map[string]uint64, len(l.groups))
	for g, d := range l.groups {
		groups[g] = d
	}
	l.mu.Unlock()

	var mu sync.Mutex
	var rep report
	lost := func(format string, args ...any) {
		mu.Lock()
		rep.lost = append(rep.lost, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	work := make(chan object)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range work {
				if o.state == stInFlight {
					if err := post(hc, s.url, o.endPath, api.EndRequest{ClientID: o.client, Key: o.key, Token: o.token}, nil); err != nil {
						lost("%s (in flight, Started on %s): %s on %s: %v", o.key, o.ackedBy, o.endPath, s.opts.name, err)
						continue
					}
				}
				var gr api.GetResponse
				if err := post(hc, s.url, api.PathGet, api.KeyRequest{Key: o.key}, &gr); err != nil {
					lost("%s (acknowledged by %s): get on %s: %v", o.key, o.ackedBy, s.opts.name, err)
					continue
				}
				if !sameReplicas(gr.Replicas, o.replicas) {
					lost("%s (acknowledged by %s): replicas on %s %+v, acknowledged %+v", o.key, o.ackedBy, s.opts.name, gr.Replicas, o.replicas)
					continue
				}
				for _, r := range gr.Replicas {
					if r.Status != api.StatusComplete {
						lost("%s: replica %d is %s after its End", o.key, r.ID, r.Status)
					}
				}
				if o.state == stEnded && o.pinKnown {
					var pin api.SoftPinResponse
					if err := post(hc, s.url, api.PathSoftPin, api.KeyRequest{Key: o.key}, &pin); err != nil {
						lost("%s: softpin on %s: %v", o.key, s.opts.name, err)
					} else if pin != o.pin {
						lost("%s (acknowledged by %s): deadline on %s %+v, acknowledged %+v", o.key, o.ackedBy, s.opts.name, pin, o.pin)
					}
				}
			}
		}()
	}
	for _, o := range objs {
		switch o.state {
		case stUncertain:
			rep.uncertain++
			continue
		case stInFlight:
			rep.inFlight++
		case stEnded:
			rep.ended++
		}
		work <- o
	}
	close(work)
	wg.Wait()
	for g, want := range groups {
		rep.groups++
		var gr api.GroupsResponse
		if err := post(hc, s.url, api.PathRetainGroups, api.RetainRequest{Groups: []string{g}, TTLMs: 1}, &gr); err != nil {
			lost("group %s: retain on %s: %v", g, s.opts.name, err)
		} else if len(gr.Results) != 1 || gr.Results[0].Error != nil || gr.Results[0].DeadlineMs != want {
			lost("group %s: retention on %s %+v, acknowledged deadline %d", g, s.opts.name, gr.Results, want)
		}
	}
	return rep
}

// mustHaveEverything fails the test when check finds a lost write.
func (l *load) mustHaveEverything(s *server) report {
	l.t.Helper()
	return l.nothingLost(s, l.check(s))
}

// nothingLost fails the test unless rep, a check of s, found every
// acknowledged write.
func (l *load) nothingLost(s *server, rep report) report {
	l.t.Helper()
	l.t.Logf("on %s: %d ended writes, %d in flight (ended there), %d unacknowledged Starts, %d retained groups checked; %d lost",
		s.opts.name, rep.ended, rep.inFlight, rep.uncertain, rep.groups, len(rep.lost))
	if len(rep.lost) > 0 {
		n := min(len(rep.lost), 20)
		l.t.Fatalf("%d acknowledged writes lost or changed on %s; the first %d:\n%s", len(rep.lost), s.opts.name, n, joinLines(rep.lost[:n]))
	}
	if rep.ended == 0 {
		l.t.Fatal("no write was acknowledged: the check proves nothing")
	}
	return rep
}

// mustHaveEverythingOnLeader is mustHaveEverything on the node leading
// now, and returns it. When that node stops leading during the check
// (every failure is its NOT_LEADER answer: after an etcd member loss the
// lease it renewed may run out once the load has stopped), the check runs
// again on the node leading next, a few times at most: nothing it
// acknowledged is lost by that, as every acknowledgement waited for etcd.
func (l *load) mustHaveEverythingOnLeader() (*server, report) {
	l.t.Helper()
	for attempt := 0; ; attempt++ {
		s, err := l.leading()
		if err != nil {
			l.t.Fatal(err)
		}
		rep := l.check(s)
		if len(rep.lost) > 0 && attempt < 3 && allNotLeader(rep.lost) {
			l.t.Logf("%s stopped leading during the check (%d NOT_LEADER answers): checking the node leading now", s.opts.name, len(rep.lost))
			continue
		}
		return s, l.nothingLost(s, rep)
	}
}

// allNotLeader says whether every failure of a check is a NOT_LEADER
// answer.
func allNotLeader(lost []string) bool {
	for _, x := range lost {
		if !strings.Contains(x, "NOT_LEADER") {
			return false
		}
	}
	return true
}

func joinLines(s []string) string {
	out := ""
	for _, x := range s {
		out += "  " + x + "\n"
	}
	return out
}
