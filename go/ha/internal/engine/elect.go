package engine

// Leader election: a concurrency.Session (the node's lease, Config.SessionTTL)
// and a concurrency.Election under <prefix>/leader. The leader is the
// candidate whose key has the lowest create revision; that key and
// revision fence every batch the leader writes.

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// campaign returns once this node is the leader, with the session and
// election that make it so (the fence is recorded in n), or ctx's error.
// A session that expires while campaigning (etcd unreachable for a TTL) is
// replaced by a new one: a standby's master is untouched by it.
func (n *Node) campaign(ctx context.Context) (*concurrency.Session, *concurrency.Election, error) {
	for attempt := 0; ; attempt++ {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		sess, err := n.newSession(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			n.cfg.Logger.Warn("ha session grant failed; retrying", "name", n.cfg.Name, "err", err)
			if !backoff(ctx, attempt) {
				return nil, nil, ctx.Err()
			}
			continue
		}
		elec := concurrency.NewElection(sess, ElectionPrefix(n.cfg.Prefix))
		err = n.campaignOnce(ctx, sess, elec)
		if err == nil {
			var held bool
			held, err = n.holds(ctx, elec.Key(), elec.Rev())
			if err == nil && held {
				n.update(func() {
					n.role = RolePromoting
					n.leaderKey, n.leaderRev = elec.Key(), elec.Rev()
				})
				n.cfg.Logger.Info("ha elected", "name", n.cfg.Name, "key", elec.Key(), "rev", elec.Rev())
				return sess, elec, nil
			}
			if err == nil {
				err = fmt.Errorf("the election key %s vanished (the session expired)", elec.Key())
			}
		}
		n.resign(sess, elec)
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		n.cfg.Logger.Warn("ha campaign interrupted; campaigning again", "name", n.cfg.Name, "err", err)
		if !backoff(ctx, attempt) {
			return nil, nil, ctx.Err()
		}
	}
}

// newSession grants the node's lease (bounded by ctx and one TTL, so
// Close is never stuck behind an unreachable etcd) and keeps it alive.
func (n *Node) newSession(ctx context.Context) (*concurrency.Session, error) {
	ttl := int(n.cfg.SessionTTL / time.Second)
	gctx, cancel := context.WithTimeout(ctx, n.cfg.SessionTTL)
	defer cancel()
	lease, err := n.cli.Grant(gctx, int64(ttl))
	if err != nil {
		return nil, err
	}
	sess, err := concurrency.NewSession(n.cli, concurrency.WithTTL(ttl), concurrency.WithLease(lease.ID))
	if err != nil {
		rctx, rcancel := context.WithTimeout(context.Background(), n.cfg.SessionTTL)
		n.cli.Revoke(rctx, lease.ID)
		rcancel()
		return nil, err
	}
	return sess, nil
}

// campaignOnce campaigns until elected (nil), the session ends or ctx
// ends. Campaign's own clean-up on cancellation waits for etcd without a
// bound; when ctx ends it gets one TTL, then it is left to finish on its
// own (the lease expires or is revoked by resign meanwhile).
func (n *Node) campaignOnce(ctx context.Context, sess *concurrency.Session, elec *concurrency.Election) error {
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	errc := make(chan error, 1)
	go func() { errc <- elec.Campaign(cctx, n.cfg.Name) }()
	select {
	case err := <-errc:
		return err
	case <-sess.Done():
		ccancel()
		return n.awaitCampaign(errc, errors.New("the session ended while campaigning"))
	case <-ctx.Done():
		ccancel()
		return n.awaitCampaign(errc, ctx.Err())
	}
}

func (n *Node) awaitCampaign(errc <-chan error, why error) error {
	t := time.NewTimer(n.cfg.SessionTTL)
	defer t.Stop()
	select {
	case err := <-errc:
		if err == nil {
			// Elected at the last moment: still give it up.
			return why
		}
		return err
	case <-t.C:
		return why
	}
}

// holds reports whether key still exists with create revision rev: a
// Campaign whose session expired while it waited returns without error
// but without the key, so the election is checked before it is trusted.
func (n *Node) holds(ctx context.Context, key string, rev int64) (bool, error) {
	resp, err := n.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", rev)).Commit()
	if err != nil {
		return false, err
	}
	return resp.Succeeded, nil
}

// Leader returns the name (Config.Name) of a cluster's leader and whether
// there is one: the election key with the lowest create revision.
func Leader(ctx context.Context, cli *clientv3.Client, prefix string) (string, bool, error) {
	resp, err := cli.Get(ctx, ElectionPrefix(prefix)+"/", clientv3.WithFirstCreate()...)
	if err != nil {
		return "", false, err
	}
	if len(resp.Kvs) == 0 {
		return "", false, nil
	}
	return string(resp.Kvs[0].Value), true, nil
}
