// Package etcdtest runs real etcd servers for tests: one member, or a
// cluster of several, on free loopback ports in the test's temporary
// directory, stopped (SIGTERM, then SIGKILL) when the test ends.
//
// Without an etcd binary (PATH, or MOONCAKE_META_ETCD naming it) the test
// is skipped, unless MOONCAKE_META_REQUIRE_ETCD is set (CI sets it): then
// it fails, so a machine that lost etcd cannot pass by skipping.
package etcdtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

const (
	// RequireEnv, when set, turns a missing etcd into a failure.
	RequireEnv = "MOONCAKE_META_REQUIRE_ETCD"
	// BinaryEnv names the etcd binary (default: etcd on PATH).
	BinaryEnv = "MOONCAKE_META_ETCD"
)

// Bounds of the harness's waits.
const (
	healthTimeout = 60 * time.Second
	stopTimeout   = 10 * time.Second
	startAttempts = 3
)

// Member is one etcd process.
type Member struct {
	Name      string
	Dir       string
	ClientURL string
	PeerURL   string
	logPath   string
	cmd       *exec.Cmd
	exited    chan struct{}
}

// Cluster is a running set of etcd members.
type Cluster struct {
	t       testing.TB
	Members []*Member
}

// Binary returns the etcd binary's path, or skips (or fails) the test
// when there is none.
func Binary(t testing.TB) string {
	t.Helper()
	name := os.Getenv(BinaryEnv)
	if name == "" {
		name = "etcd"
	}
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv(RequireEnv) != "" {
		t.Fatalf("etcd binary %q not found (%v) and %s is set: install it with apt-get install -y etcd-server", name, err, RequireEnv)
	}
	t.Skipf("etcd binary %q not found (%v): install it with apt-get install -y etcd-server; set %s=1 to fail instead of skipping", name, err, RequireEnv)
	return ""
}

// Start runs a one-member etcd and waits until it serves.
func Start(t testing.TB) *Cluster { return StartCluster(t, 1) }

// StartCluster runs an n-member etcd cluster and waits until every member
// serves linearizable reads.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("etcdtest: a cluster needs at least one member, not %d", n)
	}
	bin := Binary(t)
	var lastErr error
	for attempt := range startAttempts {
		c, err := tryStart(t, bin, n, attempt)
		if err == nil {
			t.Cleanup(c.stopAll)
			return c
		}
		lastErr = err
		t.Logf("etcdtest: start attempt %d failed: %v", attempt+1, err)
	}
	t.Fatalf("etcdtest: etcd did not start after %d attempts: %v", startAttempts, lastErr)
	return nil
}

// freePorts reserves k loopback ports at once (held together, so they are
// distinct) and releases them for etcd to bind. Another process may take
// one meanwhile; tryStart's caller then tries again with new ports.
func freePorts(k int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, k)
	for range k {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func tryStart(t testing.TB, bin string, n, attempt int) (*Cluster, error) {
	ports, err := freePorts(2 * n)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(t.TempDir(), fmt.Sprintf("etcd-%d", attempt))
	c := &Cluster{t: t}
	var initial []string
	for i := range n {
		m := &Member{
			Name:      fmt.Sprintf("m%d", i),
			ClientURL: fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]),
			PeerURL:   fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]),
		}
		m.Dir = filepath.Join(root, m.Name)
		m.logPath = m.Dir + ".log"
		c.Members = append(c.Members, m)
		initial = append(initial, m.Name+"="+m.PeerURL)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, err
	}
	for _, m := range c.Members {
		// Every member of one cluster shares the token; clusters differ.
		token := fmt.Sprintf("etcdtest-%d", ports[1])
		if err := m.start(bin, strings.Join(initial, ","), token); err != nil {
			c.stopAll()
			return nil, err
		}
	}
	if err := c.waitHealthy(); err != nil {
		c.dumpLogs()
		c.stopAll()
		return nil, err
	}
	return c, nil
}

func (m *Member) start(bin, initialCluster, token string) error {
	logf, err := os.Create(m.logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin,
		"--name", m.Name,
		"--data-dir", m.Dir,
		"--listen-client-urls", m.ClientURL,
		"--advertise-client-urls", m.ClientURL,
		"--listen-peer-urls", m.PeerURL,
		"--initial-advertise-peer-urls", m.PeerURL,
		"--initial-cluster", initialCluster,
		"--initial-cluster-state", "new",
		"--initial-cluster-token", token,
		"--logger", "zap",
		"--log-outputs", "stderr",
	)
	cmd.Stdout = logf
	cmd.Stderr = logf
	// Its own process group, so a signal to the test's group spares it
	// and it can be stopped on its own.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("starting %s: %w", bin, err)
	}
	m.cmd = cmd
	m.exited = make(chan struct{})
	go func() {
		cmd.Wait()
		logf.Close()
		close(m.exited)
	}()
	return nil
}

// waitHealthy polls every member with a linearizable read until each
// answers, a member exits, or healthTimeout passes.
func (c *Cluster) waitHealthy() error {
	deadline := time.Now().Add(healthTimeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for _, m := range c.Members {
		cli, err := newClient([]string{m.ClientURL})
		if err != nil {
			return err
		}
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, err = cli.Get(ctx, "etcdtest-health")
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				cli.Close()
				return fmt.Errorf("member %s not healthy after %v: %w", m.Name, healthTimeout, err)
			}
			select {
			case <-m.exited:
				cli.Close()
				return fmt.Errorf("member %s exited while starting: %s", m.Name, m.cmd.ProcessState)
			case <-tick.C:
			}
		}
		cli.Close()
	}
	return nil
}

func newClient(endpoints []string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
}

// Endpoints are the client URLs of the members still running.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, m := range c.Members {
		if m.Running() {
			eps = append(eps, m.ClientURL)
		}
	}
	return eps
}

// Client returns a client of every running member, closed when the test
// ends.
func (c *Cluster) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	cli, err := newClient(c.Endpoints())
	if err != nil {
		t.Fatalf("etcdtest: client: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// Running reports whether the member's process is alive.
func (m *Member) Running() bool {
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.exited:
		return false
	default:
		return true
	}
}

// Stop stops the member: SIGTERM, then SIGKILL if it has not exited within
// stopTimeout. It returns once the process is gone.
func (m *Member) Stop() error {
	if m.cmd == nil {
		return nil
	}
	select {
	case <-m.exited:
		return nil
	default:
	}
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	t := time.NewTimer(stopTimeout)
	defer t.Stop()
	select {
	case <-m.exited:
		return nil
	case <-t.C:
	}
	if err := m.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-m.exited
	return nil
}

// Pause stops the member's process (SIGSTOP): it keeps its connections
// but answers nothing until Continue. Continue runs when the test ends
// too, so a paused member can be stopped.
func (m *Member) Pause(t testing.TB) error {
	if m.cmd == nil {
		return errors.New("etcdtest: the member is not running")
	}
	if err := m.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	t.Cleanup(func() { m.Continue() })
	return nil
}

// Continue resumes a paused member (SIGCONT).
func (m *Member) Continue() error {
	if m.cmd == nil {
		return errors.New("etcdtest: the member is not running")
	}
	if err := m.cmd.Process.Signal(syscall.SIGCONT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// Kill kills the member with SIGKILL (a crash: no graceful leadership
// transfer) and returns once the process is gone.
func (m *Member) Kill() error {
	if m.cmd == nil {
		return nil
	}
	if err := m.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-m.exited
	return nil
}

func (c *Cluster) stopAll() {
	if c.t.Failed() {
		c.dumpLogs()
	}
	for _, m := range c.Members {
		if err := m.Stop(); err != nil {
			c.t.Logf("etcdtest: stopping %s: %v", m.Name, err)
		}
	}
}

// dumpLogs logs the last lines of every member's log.
func (c *Cluster) dumpLogs() {
	for _, m := range c.Members {
		f, err := os.Open(m.logPath)
		if err != nil {
			continue
		}
		var lines []string
		s := bufio.NewScanner(f)
		s.Buffer(make([]byte, 64<<10), 1<<20)
		for s.Scan() {
			lines = append(lines, s.Text())
			if len(lines) > 20 {
				lines = lines[1:]
			}
		}
		f.Close()
		c.t.Logf("etcdtest: last lines of %s:\n%s", m.logPath, strings.Join(lines, "\n"))
	}
}
