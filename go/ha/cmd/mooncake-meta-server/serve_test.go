package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvcache-ai/libmooncake_meta/go/ha"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/internal/etcdtest"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server/api"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// bound is every wait's bound: generous, since the machine may be loaded;
// a wait ends as soon as its event is seen.
const bound = 60 * time.Second

func boundedCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	t.Cleanup(cancel)
	return ctx
}

// startEtcd runs one etcd member with extra flags (etcdtest takes none)
// on free loopback ports, stopped when the test ends, and returns its
// client URL once it serves.
func startEtcd(t *testing.T, extra ...string) string {
	t.Helper()
	bin := etcdtest.Binary(t)
	var lastErr error
	for attempt := range 3 {
		ep, err := tryEtcd(t, bin, attempt, extra)
		if err == nil {
			return ep
		}
		lastErr = err
		t.Logf("etcd start attempt %d: %v", attempt+1, err)
	}
	t.Fatalf("etcd did not start: %v", lastErr)
	return ""
}

// tryEtcd starts etcd once; another process may take a port chosen free
// before etcd binds it: the caller then tries again.
func tryEtcd(t *testing.T, bin string, attempt int, extra []string) (string, error) {
	var urls [2]string
	var ls []net.Listener
	for i := range urls {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		ls = append(ls, l)
		urls[i] = "http://" + l.Addr().String()
	}
	for _, l := range ls {
		l.Close()
	}
	client, peer := urls[0], urls[1]
	dir := filepath.Join(t.TempDir(), fmt.Sprintf("etcd-%d", attempt))
	logPath := dir + ".log"
	logf, err := os.Create(logPath)
	if err != nil {
		return "", err
	}
	cmd := exec.Command(bin, append([]string{"--name", "m0", "--data-dir", dir,
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "m0=" + peer, "--logger", "zap", "--log-outputs", "stderr"}, extra...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return "", err
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		logf.Close()
		close(exited)
	}()
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{client}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		stop()
		return "", err
	}
	defer cli.Close()
	deadline := time.Now().Add(bound)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := cli.Get(ctx, "health")
		cancel()
		if err == nil {
			t.Cleanup(stop)
			return client, nil
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(logPath)
			return "", fmt.Errorf("etcd exited: %s", log[max(0, len(log)-2000):])
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return "", fmt.Errorf("etcd not serving after %v: %w", bound, err)
		}
	}
}

// The etcd client's send limit fits the largest journal batch: with
// --max-batch-bytes 8 MiB and an etcd whose --max-request-bytes is 10 MiB,
// a call that records about 3 MB (one batch, above the client's default
// 2 MiB limit) is acknowledged and the leader keeps leading.
func TestAJournalBatchAboveTwoMiBIsShipped(t *testing.T) {
	for _, c := range []struct {
		args []string
		min  int
	}{
		{nil, ha.DefaultMaxBatchBytes + 64<<10},
		{[]string{"--max-batch-bytes", strconv.Itoa(8 << 20)}, 8<<20 + 64<<10},
		{[]string{"--max-batch-bytes", strconv.Itoa(ha.MaxMaxBatchBytes)}, ha.MaxMaxBatchBytes + 64<<10},
	} {
		o, err := parseFlags(append([]string{"--node-name", "n1"}, c.args...), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := o.etcdConfig(nil)
		if err != nil || cfg.MaxCallSendMsgSize < c.min || (cfg.MaxCallRecvMsgSize != 0 && cfg.MaxCallRecvMsgSize < cfg.MaxCallSendMsgSize) {
			t.Fatalf("%q: etcd client send limit %d, receive limit %d (%v), want a send limit >= %d", c.args, cfg.MaxCallSendMsgSize, cfg.MaxCallRecvMsgSize, err, c.min)
		}
	}

	ep := startEtcd(t, "--max-request-bytes", strconv.Itoa(10<<20))
	o, err := parseFlags([]string{"--node-name", "a", "--etcd-endpoints", ep, "--max-batch-bytes", strconv.Itoa(8 << 20),
		"--max-request-bytes", strconv.Itoa(8 << 20)}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ecfg, err := o.etcdConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := clientv3.New(ecfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	mcfg, err := o.masterConfig()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.Start(boundedCtx(t), server.Config{Etcd: cli, Prefix: o.prefix, Name: o.name,
		MaxBatchBytes: o.maxBatchBytes, MaxRequestBytes: o.maxRequestBytes, Master: mcfg,
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}, l)
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	if err := srv.WaitRole(boundedCtx(t), ha.RoleLeader); err != nil {
		t.Fatal(err)
	}
	groups := make([]string, 3000)
	for i := range groups {
		groups[i] = fmt.Sprintf("%04d-%s", i, strings.Repeat("g", 995))
	}
	body, err := json.Marshal(api.RetainRequest{Groups: groups, TTLMs: 60_000})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(boundedCtx(t), http.MethodPost, srv.URL()+api.PathRetainGroups, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("retain of about 3 MB: HTTP %d %.300s (%v), want 200", res.StatusCode, answer, err)
	}
	if n := srv.Restarts(); n != 0 || srv.Role() != ha.RoleLeader {
		t.Fatalf("after the retain: %d restarts, role %s; want the node leading still", n, srv.Role())
	}
	// The batch is in etcd.
	resp, err := cli.Get(boundedCtx(t), ha.JournalPrefix(o.prefix), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	largest := 0
	for _, kv := range resp.Kvs {
		largest = max(largest, len(kv.Value))
	}
	if largest <= 2<<20 {
		t.Fatalf("the largest journal batch in etcd is %d bytes, want one above 2 MiB", largest)
	}
}

// A node whose --snapshot-dir does not hold the snapshot the cluster
// published (a directory of its own, as the default <data-dir>/snapshots
// is on each host) refuses to start, naming the flag, instead of staying
// a standby that never campaigns; one that holds it starts.
func TestANodeThatCannotReadThePublishedSnapshotRefusesToStart(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	const prefix = "/mooncake/cmdtest"
	shared, own := t.TempDir(), t.TempDir()
	store, err := ha.NewDirStore(shared)
	if err != nil {
		t.Fatal(err)
	}
	// Before any snapshot, any directory does.
	if err := checkSnapshotDir(boundedCtx(t), cli, prefix, store); err != nil {
		t.Fatalf("no snapshot published: %v", err)
	}
	o, err := parseFlags([]string{"--node-name", "a"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	mcfg, err := o.masterConfig()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// A snapshot after every byte shipped: the first write publishes one.
	a, err := server.Start(boundedCtx(t), server.Config{Etcd: cli, Prefix: prefix, Name: "a", Master: mcfg,
		Snapshots: store, SnapshotEveryBytes: 1, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}, l)
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	if err := a.WaitRole(boundedCtx(t), ha.RoleLeader); err != nil {
		t.Fatal(err)
	}
	res, err := http.Post(a.URL()+api.PathMount, "application/json",
		strings.NewReader(`{"client_id":1,"name":"seg0","base":1099511627776,"size":67108864}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("mount: HTTP %d", res.StatusCode)
	}
	var rec ha.SnapshotRecord
	for ctx := boundedCtx(t); rec.Location == ""; {
		resp, err := cli.Get(ctx, ha.SnapshotKey(prefix))
		if err != nil {
			t.Fatalf("waiting for the snapshot record: %v", err)
		}
		if len(resp.Kvs) == 1 {
			if err := json.Unmarshal(resp.Kvs[0].Value, &rec); err != nil {
				t.Fatal(err)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no snapshot published in %v", bound)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := checkSnapshotDir(boundedCtx(t), cli, prefix, store); err != nil {
		t.Fatalf("the directory that holds %s: %v", rec.Location, err)
	}

	var stderr bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- run([]string{"--listen", "127.0.0.1:0", "--etcd-endpoints", strings.Join(cli.Endpoints(), ","),
			"--cluster-prefix", prefix, "--node-name", "b", "--data-dir", t.TempDir(), "--snapshot-dir", own}, &stderr)
	}()
	select {
	case c := <-code:
		if c != 1 || !strings.Contains(stderr.String(), "--snapshot-dir") || !strings.Contains(stderr.String(), rec.Location) {
			t.Fatalf("run with a --snapshot-dir that lacks %s = %d, logged:\n%s", rec.Location, c, stderr.String())
		}
	case <-boundedCtx(t).Done():
		t.Fatalf("a node whose --snapshot-dir lacks the published snapshot %s did not refuse to start in %v", rec.Location, bound)
	}
	t.Logf("refused: %s", stderr.String())
	if !errors.Is(checkSnapshotDir(boundedCtx(t), cli, prefix, mustStore(t, own)), os.ErrNotExist) {
		t.Fatal("the refusal does not carry the missing file's error")
	}
}

func mustStore(t *testing.T, dir string) *ha.DirStore {
	t.Helper()
	s, err := ha.NewDirStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
