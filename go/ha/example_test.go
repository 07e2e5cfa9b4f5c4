package ha_test

import (
	"context"
	"log"
	"time"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
	"github.com/kvcache-ai/libmooncake_meta/go/ha"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A server process: a standby master, a node that follows until it is
// elected, and writes acknowledged only once they are durable in etcd.
// (Compiled, not run: it needs an etcd at the address below.)
func Example() {
	ctx := context.Background()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}, DialTimeout: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()
	// The journal holds what is not in etcd yet: size it for the writes
	// of a few session TTLs, in case etcd stalls.
	m, err := mm.New(mm.WithStandby(true), mm.WithJournalCapacityBytes(256<<20))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	// Snapshots in a directory every node of the cluster reaches: the
	// leader collects the journal in etcd after each one, and a node
	// starting later begins from the latest.
	store, err := ha.NewDirStore("/srv/mooncake-meta/snapshots")
	if err != nil {
		log.Fatal(err)
	}
	node, err := ha.Start(ctx, ha.Config{Client: cli, Prefix: "/mooncake/cluster-a", Name: "127.0.0.1:50051", Snapshots: store}, m)
	if err != nil {
		log.Fatal(err)
	}
	defer node.Close()
	if err := node.WaitRole(ctx, ha.RoleLeader); err != nil {
		log.Fatal(err) // stepped down or closed before it was elected
	}
	_, tok, err := m.PutStart(1, "prompt/42", 4096, mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: mm.TTL(10 * time.Minute)})
	if err != nil {
		log.Fatal(err)
	}
	// Answer the client only once its change is durable; an error means
	// this node no longer leads and must not answer.
	if err := node.Sync(ctx); err != nil {
		log.Fatal(err)
	}
	if err := m.PutEnd(1, "prompt/42", mm.SelectAll, tok); err != nil {
		log.Fatal(err)
	}
	if err := node.Sync(ctx); err != nil {
		log.Fatal(err)
	}
}
