package engine

// A node: its roles, the state its users observe, and its life cycle
// (follow and campaign, then promote and lead, then stop).

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// Journal is what a node needs of its master (package ha adapts a
// mooncakemeta.Master). Its methods may be called from several goroutines
// at once, as a mooncakemeta.Master allows.
type Journal interface {
	// ReadBatch reads one batch of consecutive records from sequence from
	// into buf and returns its length and the sequence to read next
	// (n == 0 when nothing was recorded after from yet). When not even the
	// first record fits, it returns need > len(buf) (and an error).
	ReadBatch(from uint64, buf []byte) (n int, next uint64, need int, err error)
	// Release frees the records up to upto: they are stored in etcd.
	Release(upto uint64) error
	// LastSeq is the sequence of the newest record appended (0: none).
	LastSeq() (uint64, error)
	// Apply applies a batch to the standby and returns its applied
	// sequence afterwards; records at or below it are skipped, a gap after
	// it is an error.
	Apply(batch []byte) (appliedSeq uint64, err error)
	// Promote makes the standby a primary whose journal goes on after
	// appliedSeq.
	Promote() (appliedSeq uint64, err error)
	// State reports whether the master is a standby, its applied sequence
	// and its journal's capacity (0: no journal).
	State() (standby bool, appliedSeq uint64, journalCapacity uint64, err error)
	// Snapshot serialises the master and returns the bytes and the last
	// journal sequence they include.
	Snapshot() (data []byte, seq uint64, err error)
	// Restore installs a snapshot on the standby and returns its applied
	// sequence afterwards (the snapshot's journal sequence); the journal
	// goes on after it.
	Restore(data []byte) (appliedSeq uint64, err error)
	// BatchLast is the last sequence of a batch ReadBatch produced (its
	// first plus its record count, less one).
	BatchLast(batch []byte) (uint64, error)
}

// ErrOverrun is what a Journal's ReadBatch wraps when the records asked
// for were dropped (the journal was full): only a snapshot covers them.
var ErrOverrun = errors.New("journal overrun")

// Role is what a node is doing.
type Role int

const (
	// RoleFollower: the master is a standby applying the journal from
	// etcd; the node campaigns for leadership.
	RoleFollower Role = iota
	// RolePromoting: the node was elected; it reads the batches that were
	// committed before and promotes its master.
	RolePromoting
	// RoleLeader: the master is the primary; its journal is shipped to
	// etcd and WaitDurable acknowledges what is stored.
	RoleLeader
	// RoleStopped: the node was closed or stepped down (Err says why); it
	// does nothing more. A master that led and stepped down has changes
	// no one acknowledged and cannot follow again: start a new standby.
	RoleStopped
)

func (r Role) String() string {
	switch r {
	case RoleFollower:
		return "follower"
	case RolePromoting:
		return "promoting"
	case RoleLeader:
		return "leader"
	case RoleStopped:
		return "stopped"
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

// Node is one member of a cluster: a standby that follows and campaigns,
// then the leader that ships its master's journal, until Close or until it
// loses leadership.
type Node struct {
	cfg Config
	j   Journal
	cli *clientv3.Client

	mu      sync.Mutex
	role    Role
	err     error         // why the node stopped (nil: closed)
	changed chan struct{} // closed and replaced on every change below
	applied uint64        // the master's applied sequence (follower) or the promotion's
	durable uint64        // every record up to it is in etcd (leader)
	shipped uint64        // journal bytes this node stored in etcd (leader)
	// The election key and its create revision while promoting or
	// leading: every batch write compares them (the fence).
	leaderKey string
	leaderRev int64
	// What proves the leader leads (lease.go): its lease runs until
	// leaseUntil (zero once it stopped), and a fenced write sent at
	// provenAt succeeded.
	leaseUntil time.Time
	provenAt   time.Time
	recSeq     uint64        // the newest snapshot record seen in etcd
	recLoc     string        // its location ("" before any)
	snap       SnapshotStats // what Snapshots reports

	snapMu sync.Mutex // serialises the leader's snapshots

	kick      chan struct{} // a WaitDurable wants records shipped now
	closing   chan struct{} // closed by Close
	closedAt  time.Time     // when Close was first called (set before closing is closed)
	closeOnce sync.Once
	done      chan struct{} // closed when the node has stopped
}

// Start checks cfg and the master, then starts the node as a follower: it
// catches up from etcd and campaigns in the background, until Close. ctx
// bounds only the checks (the master's state and one etcd read).
func Start(ctx context.Context, cfg Config, j Journal) (*Node, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	standby, applied, capacity, err := j.State()
	if err != nil {
		return nil, fmt.Errorf("%w: reading the master's state: %w", ErrJournal, err)
	}
	if !standby || capacity == 0 {
		return nil, fmt.Errorf("%w (standby %v, journal capacity %d bytes): create it with Standby and JournalCapacityBytes > 0",
			ErrNotStandby, standby, capacity)
	}
	if _, err := cfg.Client.Get(ctx, JournalPrefix(cfg.Prefix), clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil {
		return nil, fmt.Errorf("ha: etcd is not reachable: %w", err)
	}
	n := &Node{
		cfg:     cfg,
		j:       j,
		cli:     cfg.Client,
		role:    RoleFollower,
		changed: make(chan struct{}),
		applied: applied,
		kick:    make(chan struct{}, 1),
		closing: make(chan struct{}),
		done:    make(chan struct{}),
	}
	go n.run()
	return n, nil
}

// Role is the node's role now.
func (n *Node) Role() Role {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.role
}

// Err is why the node stopped: nil while it runs and after a clean Close,
// else the error (ErrFenced, ErrRecordTooLarge, ErrJournal, ...).
func (n *Node) Err() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.err
}

// AppliedSeq is the last sequence the master applied from etcd (as a
// follower, and up to its promotion).
func (n *Node) AppliedSeq() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.applied
}

// DurableSeq is the highest sequence up to which every record is in etcd
// (the leader's; the promotion's applied sequence before it ships).
func (n *Node) DurableSeq() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.durable
}

// ShippedBytes is how many journal bytes this node stored in etcd while
// leading.
func (n *Node) ShippedBytes() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.shipped
}

// Done is closed when the node has stopped (Close, or it stepped down) and
// given up its election key and lease.
func (n *Node) Done() <-chan struct{} { return n.done }

// stopErr is what a stopped node answers: why it stopped, or ErrClosed.
// Call with n.mu held.
func (n *Node) stopErr() error {
	if n.err != nil {
		return n.err
	}
	return ErrClosed
}

// await returns when cond (called with n.mu held) holds (nil), ctx ends
// (its error) or the node stops before cond holds (stopErr).
func (n *Node) await(ctx context.Context, cond func() bool) error {
	for {
		n.mu.Lock()
		ok, role, err, ch := cond(), n.role, n.stopErr(), n.changed
		n.mu.Unlock()
		if ok {
			return nil
		}
		if role == RoleStopped {
			return err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// WaitRole returns when the node has role want (nil), ctx ends, or the
// node stops first (why it stopped; nil if want is RoleStopped).
func (n *Node) WaitRole(ctx context.Context, want Role) error {
	return n.await(ctx, func() bool { return n.role == want })
}

// WaitApplied returns when the master has applied every record up to seq
// from etcd (nil), ctx ends, or the node stops first.
func (n *Node) WaitApplied(ctx context.Context, seq uint64) error {
	return n.await(ctx, func() bool { return n.applied >= seq })
}

// WaitDurable returns nil once every journal record up to seq is committed
// to etcd, or covered by a snapshot whose record is (durable: a standby
// promoted later has it), and the node is known to have led at some
// moment since the call began: its lease (lease.go) had not run out, or a
// fenced write sent after the call began succeeded. It is the leader's
// acknowledgement: answer a client only then; what the client was told
// before the call (a read of the master) was then true of the cluster at
// that moment, as no other node can have acknowledged anything before it.
// It ships at once what is pending (records written meanwhile ride along:
// group commit). It fails with ErrNotLeader on a node that does not lead,
// with ErrFenced when the leader's lease ran out (it is stepping down),
// and with the node's error (ErrFenced, ...) once it stepped down, unless
// a write it sent after the call began stored seq: a deposed leader
// acknowledges nothing more.
func (n *Node) WaitDurable(ctx context.Context, seq uint64) error {
	called := time.Now()
	for {
		n.mu.Lock()
		role, durable, err, ch := n.role, n.durable, n.stopErr(), n.changed
		led := n.ledSince(called)
		n.mu.Unlock()
		switch {
		case seq <= durable && (role == RoleLeader || role == RoleStopped) && led:
			return nil
		case role == RoleStopped:
			return err
		case role != RoleLeader:
			return fmt.Errorf("%w (role %s)", ErrNotLeader, role)
		case seq <= durable:
			// Stored, but another node may lead by now: the lease ran out
			// and nothing was written since the call began.
			return fmt.Errorf("%w: the lease ran out before it was renewed (another node may lead)", ErrFenced)
		}
		select {
		case n.kick <- struct{}{}:
		default:
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Sync is WaitDurable for every record the master appended before the
// call: call it after serving a call (a read too) and before answering.
func (n *Node) Sync(ctx context.Context) error {
	n.mu.Lock()
	role, err := n.role, n.stopErr()
	n.mu.Unlock()
	switch role {
	case RoleLeader:
	case RoleStopped:
		return err
	default:
		return fmt.Errorf("%w (role %s)", ErrNotLeader, role)
	}
	last, jerr := n.j.LastSeq()
	if jerr != nil {
		return fmt.Errorf("%w: %w", ErrJournal, jerr)
	}
	return n.WaitDurable(ctx, last)
}

// Close stops the node and waits for it. A leader first ships what its
// journal holds and then resigns, so a standby takes over at once; a
// follower withdraws its candidacy. A leader gives up shipping a
// SessionTTL after Close was called (etcd renewing its lease but not
// storing its writes): the records left were never acknowledged, it logs
// how many and resigns, and the error it stops with wraps ErrClosed and
// counts them. What follows asks etcd nothing but the resignation: the
// node reports RoleStopped at once, a snapshot in progress ends when the
// master's serialisation or the store's call under way returns, and
// resigning takes at most two more TTLs when etcd does not answer (one
// for the resignation, one for revoking the lease). Close is idempotent;
// it returns the error the node stopped with, if any.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		n.closedAt = time.Now()
		close(n.closing)
	})
	<-n.done
	return n.Err()
}

// update changes state under n.mu and wakes every waiter.
func (n *Node) update(f func()) {
	n.mu.Lock()
	f()
	close(n.changed)
	n.changed = make(chan struct{})
	n.mu.Unlock()
}

func (n *Node) setApplied(seq uint64) { n.update(func() { n.applied = seq }) }

func (n *Node) fence() (string, int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.leaderKey, n.leaderRev
}

// run is the node's life: follow and campaign, promote, lead, stop.
func (n *Node) run() {
	defer close(n.done)
	n.stop(n.live())
}

// stop marks the node stopped with err (nil or ErrClosed itself: closed
// cleanly; ErrClosed wrapped with details: a Close that gave up shipping);
// only the first call counts. A leader is marked as lead returns, before
// it waits for its snapshot in progress and before it resigns, so no
// instant passes in which it still reports RoleLeader after deciding to
// step down.
func (n *Node) stop(err error) {
	if err == ErrClosed {
		err = nil
	}
	n.mu.Lock()
	stopped := n.role == RoleStopped
	n.mu.Unlock()
	if stopped {
		return
	}
	if err != nil {
		n.cfg.Logger.Error("ha node stopped", "name", n.cfg.Name, "err", err)
	}
	n.update(func() {
		n.role = RoleStopped
		n.err = err
		n.leaseUntil = time.Time{} // it resigns: the lease is revoked
	})
}

// live runs until Close (nil) or a failure (the error).
func (n *Node) live() error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-n.closing:
			cancel()
		case <-ctx.Done():
		}
	}()

	followCtx, stopFollow := context.WithCancel(ctx)
	followErr := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		err := n.follow(followCtx, ready)
		if err != nil {
			cancel() // stop campaigning: this master cannot be trusted to lead
		}
		followErr <- err
	}()
	// Campaign only once the master caught up (a snapshot it needs but
	// cannot load keeps it a standby that never leads).
	var sess *concurrency.Session
	var elec *concurrency.Election
	var cerr error
	select {
	case <-ready:
		sess, elec, cerr = n.campaign(ctx)
	case <-ctx.Done():
		cerr = ctx.Err()
	}
	stopFollow()
	if ferr := <-followErr; ferr != nil {
		if sess != nil {
			n.resign(sess, elec)
		}
		return ferr
	}
	if cerr != nil {
		if n.isClosing() {
			return nil
		}
		return cerr
	}
	err := n.promoteAndLead(ctx, sess)
	n.stop(err)
	n.resign(sess, elec)
	return err
}

func (n *Node) isClosing() bool {
	select {
	case <-n.closing:
		return true
	default:
		return false
	}
}

// resign gives up leadership (or candidacy) and revokes the session's
// lease, so the next candidate is elected without waiting for the TTL.
func (n *Node) resign(sess *concurrency.Session, elec *concurrency.Election) {
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.SessionTTL)
	defer cancel()
	if err := elec.Resign(ctx); err != nil {
		n.cfg.Logger.Warn("ha resign failed (the lease expires instead)", "name", n.cfg.Name, "err", err)
	}
	// A lease already gone (revoked, expired) is what revoking wants.
	if err := sess.Close(); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		n.cfg.Logger.Warn("ha lease revoke failed (it expires instead)", "name", n.cfg.Name, "err", err)
	}
}

// backoffDelay is the wait before retrying an etcd call: attempt 0 waits
// 50 ms, doubling up to 1 s.
func backoffDelay(attempt int) time.Duration {
	return min(50*time.Millisecond<<min(attempt, 5), time.Second)
}

// backoff waits backoffDelay(attempt). It returns false when ctx ends
// first.
func backoff(ctx context.Context, attempt int) bool {
	t := time.NewTimer(backoffDelay(attempt))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
