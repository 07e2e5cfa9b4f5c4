package engine

// Leader election: a concurrency.Session (the node's lease, Config.SessionTTL)
// and a concurrency.Election under <prefix>/leader. The leader is the
// candidate whose key has the lowest create revision; that key and
// revision fence every batch the leader writes.

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// campaign returns once this node is the leader, with the session and
// election that make it so (the fence is recorded in n), or ctx's error.
// A session that expires while campaigning (etcd unreachable for a TTL) is
// replaced by a new one: a standby's master is untouched by it.
func (n *Node) campaign(ctx context.Context) (*concurrency.Session, *concurrency.Election, error) {
	ttl := int(n.cfg.SessionTTL.Seconds())
	for attempt := 0; ; attempt++ {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		sess, err := concurrency.NewSession(n.cli, concurrency.WithTTL(ttl))
		if err != nil {
			n.cfg.Logger.Warn("ha session grant failed; retrying", "name", n.cfg.Name, "err", err)
			if !backoff(ctx, attempt) {
				return nil, nil, ctx.Err()
			}
			continue
		}
		elec := concurrency.NewElection(sess, ElectionPrefix(n.cfg.Prefix))
		cctx, ccancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-sess.Done():
				ccancel()
			case <-cctx.Done():
			}
		}()
		err = elec.Campaign(cctx, n.cfg.Name)
		ccancel()
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
