// Package failover tests mooncake-meta-server processes against real etcd
// servers: SIGKILL of the leader, SIGSTOP past its session TTL (fencing),
// the loss of an etcd member, and (make test-ha-soak) many failovers in a
// row. The servers are the real binary, each its own process with its own
// port and directory; every wait polls an observable event (GET /role, an
// acknowledgement, an etcd key) with a deadline, never a fixed sleep.
package failover

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kvcache-ai/libmooncake_meta/go/ha/server/api"
)

// ServerBinEnv names a prebuilt mooncake-meta-server (make test-ha sets it
// to target/mooncake-meta-server); without it the tests build the binary
// once per `go test` run into a temporary directory.
const ServerBinEnv = "MOONCAKE_META_SERVER_BIN"

// Bounds of the harness's waits: generous, since the machine may be loaded;
// a wait ends as soon as its event is seen.
const (
	sessionTTL   = 2 * time.Second
	startBound   = 60 * time.Second
	eventBound   = 60 * time.Second
	pollInterval = 20 * time.Millisecond
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
	// binSnapshotDir: the binary takes --snapshot-dir (a snapshot store
	// every node of a cluster must share).
	binSnapshotDir bool
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// serverBinary returns the server binary: $MOONCAKE_META_SERVER_BIN, or one
// built (once) from ../cmd/mooncake-meta-server with this process's Go
// environment (CGO_CFLAGS and the rest, as make test-ha sets them).
func serverBinary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		binPath, binErr = findOrBuildBinary()
		if binErr == nil {
			// -h prints the flags (and exits 0).
			help, _ := exec.Command(binPath, "-h").CombinedOutput()
			binSnapshotDir = strings.Contains(string(help), "-snapshot-dir")
		}
	})
	if binErr != nil {
		t.Fatalf("the server binary: %v", binErr)
	}
	return binPath
}

func findOrBuildBinary() (string, error) {
	if p := os.Getenv(ServerBinEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%q: %w (run make server)", ServerBinEnv, p, err)
		}
		return p, nil
	}
	dir, err := os.MkdirTemp("", "mooncake-meta-failover-bin-")
	if err != nil {
		return "", err
	}
	binDir = dir
	out := filepath.Join(dir, "mooncake-meta-server")
	cmd := exec.Command("go", "build", "-o", out, "../cmd/mooncake-meta-server")
	cmd.Env = os.Environ()
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ../cmd/mooncake-meta-server: %w\n%s", err, msg)
	}
	return out, nil
}

// waitUntil polls cond every pollInterval until it returns true, or fails
// the test after bound naming what it waited for and cond's last error.
func waitUntil(t testing.TB, bound time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(bound)
	var last error
	for {
		ok, err := cond()
		if ok {
			return
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s; last error: %v", bound, what, last)
		}
		time.Sleep(pollInterval)
	}
}

// serverOpts are the flags a test gives a server besides the defaults below.
type serverOpts struct {
	etcd   []string
	prefix string
	name   string
	// snapshots is the cluster's shared snapshot store, given to a binary
	// that takes --snapshot-dir ("": the server's default).
	snapshots string
}

// server is one mooncake-meta-server process.
type server struct {
	t       testing.TB
	opts    serverOpts
	dir     string
	url     string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
	stopped bool // SIGSTOP sent and no SIGCONT yet
	mu      sync.Mutex
}

// startServer starts a server process and waits until it answers
// /healthz. Its port is chosen free just before (another process may take
// it first: the start is then tried again on another port).
func startServer(t testing.TB, opts serverOpts) *server {
	t.Helper()
	bin := serverBinary(t)
	dir, err := os.MkdirTemp(t.TempDir(), opts.name+"-")
	if err != nil {
		t.Fatalf("server dir: %v", err)
	}
	var lastErr error
	for attempt := range 3 {
		s := &server{t: t, opts: opts, dir: dir, logPath: filepath.Join(dir, fmt.Sprintf("server-%d.log", attempt))}
		if lastErr = s.start(bin); lastErr == nil {
			t.Cleanup(s.cleanup)
			return s
		}
		t.Logf("starting server %s (attempt %d): %v", opts.name, attempt+1, lastErr)
	}
	t.Fatalf("server %s did not start: %v", opts.name, lastErr)
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *server) start(bin string) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	listen := fmt.Sprintf("127.0.0.1:%d", port)
	s.url = "http://" + listen
	logf, err := os.Create(s.logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin,
		"--listen", listen,
		"--etcd-endpoints", strings.Join(s.opts.etcd, ","),
		"--cluster-prefix", s.opts.prefix,
		"--node-name", s.opts.name,
		"--session-ttl", sessionTTL.String(),
		"--journal-capacity-bytes", fmt.Sprint(64<<20),
		"--write-timeout", "10s",
		"--log-level", "info",
	)
	if binSnapshotDir && s.opts.snapshots != "" {
		cmd.Args = append(cmd.Args, "--snapshot-dir", s.opts.snapshots)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	// Anything the server writes to relative paths lands in its own
	// directory.
	cmd.Dir = s.dir
	// Its own process group (a signal to the test's group spares it), and
	// killed with the test process should that die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("starting %s: %w", bin, err)
	}
	s.cmd = cmd
	s.exited = make(chan struct{})
	go func() {
		cmd.Wait()
		logf.Close()
		close(s.exited)
	}()
	deadline := time.Now().Add(startBound)
	hc := &http.Client{Timeout: 2 * time.Second}
	for {
		res, err := hc.Get(s.url + api.PathHealthz)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.exited:
			return fmt.Errorf("exited while starting (%s):\n%s", cmd.ProcessState, s.logTail(20))
		default:
		}
		if time.Now().After(deadline) {
			s.kill()
			return fmt.Errorf("no /healthz within %v:\n%s", startBound, s.logTail(20))
		}
		time.Sleep(pollInterval)
	}
}

// running reports whether the process is alive.
func (s *server) running() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

func (s *server) signal(sig syscall.Signal) {
	s.t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		s.t.Fatalf("%s to server %s: %v", sig, s.opts.name, err)
	}
	s.mu.Lock()
	switch sig {
	case syscall.SIGSTOP:
		s.stopped = true
	case syscall.SIGCONT:
		s.stopped = false
	}
	s.mu.Unlock()
}

// kill sends SIGKILL and returns once the process is gone.
func (s *server) kill() {
	if err := s.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		s.t.Logf("SIGKILL to server %s: %v", s.opts.name, err)
	}
	<-s.exited
}

func (s *server) cleanup() {
	if s.t.Failed() {
		s.t.Logf("last lines of server %s's log %s:\n%s", s.opts.name, s.logPath, s.logTail(30))
	}
	if s.running() {
		s.mu.Lock()
		stopped := s.stopped
		s.mu.Unlock()
		if stopped {
			s.cmd.Process.Signal(syscall.SIGCONT)
		}
		s.kill()
	}
}

func (s *server) logTail(n int) string {
	f, err := os.Open(s.logPath)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// logLine returns the first line of the server's log that contains every
// one of parts ("" when none does).
func (s *server) logLine(parts ...string) string {
	f, err := os.Open(s.logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
next:
	for sc.Scan() {
		for _, p := range parts {
			if !strings.Contains(sc.Text(), p) {
				continue next
			}
		}
		return sc.Text()
	}
	return ""
}

// role reads GET /role.
func (s *server) role() (api.Role, error) {
	var r api.Role
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+api.PathRole, nil)
	if err != nil {
		return r, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return r, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return r, fmt.Errorf("GET /role: HTTP %d", res.StatusCode)
	}
	return r, json.NewDecoder(res.Body).Decode(&r)
}

// waitRole waits until the server reports role want.
func (s *server) waitRole(want string) {
	s.t.Helper()
	waitUntil(s.t, eventBound, fmt.Sprintf("server %s to be %s", s.opts.name, want), func() (bool, error) {
		r, err := s.role()
		if err != nil {
			return false, err
		}
		return r.Role == want, fmt.Errorf("role %s", r.Role)
	})
}

// waitCaughtUp waits until the server is a follower that applied every
// record the leader had made durable when the wait began.
func (s *server) waitCaughtUp(leader *server) {
	s.t.Helper()
	lr, err := leader.role()
	if err != nil || lr.Role != "leader" {
		s.t.Fatalf("server %s is not the leader to catch up with: %+v, %v", leader.opts.name, lr, err)
	}
	waitUntil(s.t, eventBound, fmt.Sprintf("server %s to follow up to sequence %d", s.opts.name, lr.DurableSeq), func() (bool, error) {
		r, err := s.role()
		if err != nil {
			return false, err
		}
		return r.Role == "follower" && r.AppliedSeq >= lr.DurableSeq, fmt.Errorf("role %s, applied %d", r.Role, r.AppliedSeq)
	})
}

// metric reads one unlabelled value from GET /metrics.
func (s *server) metric(name string) (string, error) {
	res, err := http.Get(s.url + api.PathMetrics)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("no metric %s", name)
}

// callError is a refused call (an HTTP answer other than 200).
type callError struct {
	status int
	body   api.Error
}

func (e *callError) Error() string {
	return fmt.Sprintf("HTTP %d %s: %s", e.status, e.body.Name, e.body.Message)
}

// post sends one API call to base and decodes a 200 answer into resp. An
// error is a *callError (the server answered) or a transport error (no
// answer: the call may or may not have taken effect).
func post(hc *http.Client, base, path string, req, resp any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	r, err := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	r.Header.Set("Content-Type", "application/json")
	res, err := hc.Do(r)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		e := &callError{status: res.StatusCode}
		if json.Unmarshal(data, &e.body) != nil {
			e.body.Message = string(data)
		}
		return e
	}
	if resp == nil {
		return nil
	}
	return json.Unmarshal(data, resp)
}

// answered reports whether err is a refusal the server sent (not a lost
// connection).
func answered(err error) (*callError, bool) {
	var ce *callError
	ok := errors.As(err, &ce)
	return ce, ok
}
