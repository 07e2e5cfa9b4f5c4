package etcdtest

import (
	"context"
	"testing"
	"time"
)

// The harness serves reads and writes, and a 3-member cluster keeps
// serving after one member stops.
func TestSingleMemberServes(t *testing.T) {
	c := Start(t)
	cli := c.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatalf("Put: %v", err)
	}
	r, err := cli.Get(ctx, "k")
	if err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "v" {
		t.Fatalf("Get = %v, %v", r, err)
	}
	if err := c.Members[0].Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if c.Members[0].Running() {
		t.Fatal("member still running after Stop")
	}
}

func TestClusterSurvivesOneMemberStopping(t *testing.T) {
	c := StartCluster(t, 3)
	cli := c.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "k", "1"); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if err := c.Members[0].Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if got := len(c.Endpoints()); got != 2 {
		t.Fatalf("%d endpoints after stopping one of 3", got)
	}
	rest := c.Client(t)
	if _, err := rest.Put(ctx, "k", "2"); err != nil {
		t.Fatalf("Put with two members: %v", err)
	}
	r, err := rest.Get(ctx, "k")
	if err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "2" {
		t.Fatalf("Get = %v, %v", r, err)
	}
}
