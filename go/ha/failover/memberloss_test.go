package failover

import (
	"context"
	"testing"
	"time"

	"github.com/kvcache-ai/libmooncake_meta/go/ha/internal/etcdtest"
)

// etcdLeader is the index of the member etcd elected (by its members'
// status), or -1 when none answers with a leader.
func etcdLeader(t *testing.T, c *etcdtest.Cluster) int {
	t.Helper()
	cli := c.Client(t)
	for i, m := range c.Members {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := cli.Status(ctx, m.ClientURL)
		cancel()
		if err == nil && st.Leader != 0 && st.Leader == st.Header.MemberId {
			return i
		}
	}
	return -1
}

// etcd member loss: the servers use all three members' endpoints; one
// member is killed (SIGKILL) while writes go on: they are still
// acknowledged, and after the leader server is killed too, the standby
// (which followed through the member loss) serves every acknowledged write.
func TestLosingAnEtcdMemberLosesNoAcknowledgedWrite(t *testing.T) {
	for _, victim := range []string{"follower member", "leader member"} {
		t.Run(victim, func(t *testing.T) {
			c := etcdtest.StartCluster(t, 3)
			var leader int
			waitUntil(t, eventBound, "an etcd leader", func() (bool, error) {
				leader = etcdLeader(t, c)
				return leader >= 0, nil
			})
			kill := leader
			if victim == "follower member" {
				kill = (leader + 1) % len(c.Members)
			}
			a, b, l := pair(t, c.Endpoints(), "/failover/member")
			l.run(3)
			defer l.halt()
			l.waitEnded(100)
			b.waitCaughtUp(a)
			if err := c.Members[kill].Kill(); err != nil {
				t.Fatalf("killing etcd member %s: %v", c.Members[kill].Name, err)
			}
			lostAt := time.Now()
			t.Logf("killed etcd member %s (the etcd leader was %s)", c.Members[kill].Name, c.Members[leader].Name)
			// Writes go on: acknowledged by whichever server leads.
			endedAtLoss := l.ended.Load()
			l.waitEnded(endedAtLoss + 150)
			t.Logf("150 more Ends acknowledged %v after the member loss", time.Since(lostAt))
			l.halt()
			lead, _ := l.mustHaveEverythingOnLeader()
			// The other server followed through the loss: it serves the
			// same writes once the leader is gone.
			other := b
			if lead == b {
				other = a
			}
			other.waitCaughtUp(lead)
			lead.kill()
			other.waitRole("leader")
			l.mustHaveEverything(other)
		})
	}
}
