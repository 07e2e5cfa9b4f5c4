package server_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
	"github.com/kvcache-ai/libmooncake_meta/go/ha"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/client"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/internal/etcdtest"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server/api"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Servers on real etcd, started in-process on 127.0.0.1:0. Every wait is
// bounded and ends on an observable event (a role, a sequence, an answer).

const (
	prefix = "/mooncake/servertest"
	bound  = 60 * time.Second
)

func boundedCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	t.Cleanup(cancel)
	return ctx
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func startServer(t *testing.T, cli *clientv3.Client, name string, edit func(*server.Config)) *server.Server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, "Listen", err)
	return startServerOn(t, cli, name, l, edit)
}

// startServerOn starts a server on l.
func startServerOn(t *testing.T, cli *clientv3.Client, name string, l net.Listener, edit func(*server.Config)) *server.Server {
	t.Helper()
	mc := mm.DefaultConfig()
	mc.JournalCapacityBytes = 16 << 20
	cfg := server.Config{
		Etcd: cli, Prefix: prefix, Name: name, Master: mc,
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil)),
	}
	if edit != nil {
		edit(&cfg)
	}
	s, err := server.Start(boundedCtx(t), cfg, l)
	if err != nil {
		l.Close()
		t.Fatalf("Start %s: %v", name, err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

func waitRole(t *testing.T, s *server.Server, r ha.Role) {
	t.Helper()
	if err := s.WaitRole(boundedCtx(t), r); err != nil {
		t.Fatalf("%s: WaitRole(%s): %v (role %s)", s.Name(), r, err, s.Role())
	}
}

// do sends one request and returns the status and body.
func do(t *testing.T, hc *http.Client, method, url, contentType string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(boundedCtx(t), method, url, bytes.NewReader(body))
	must(t, "NewRequest", err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	res, err := hc.Do(req)
	must(t, method+" "+url, err)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	must(t, "reading the answer", err)
	return res.StatusCode, data
}

// call posts req as JSON to s and decodes a 200 answer into resp.
func call(t *testing.T, s *server.Server, path string, req, resp any) {
	t.Helper()
	b, err := json.Marshal(req)
	must(t, "Marshal", err)
	st, data := do(t, nil, http.MethodPost, s.URL()+path, "application/json", b)
	if st != http.StatusOK {
		t.Fatalf("%s on %s: HTTP %d %s", path, s.Name(), st, data)
	}
	if resp != nil {
		must(t, "decoding "+path, json.Unmarshal(data, resp))
	}
}

// refused posts body to s and checks the status and error name.
func refused(t *testing.T, s *server.Server, path, contentType, body string, status int, name string) api.Error {
	t.Helper()
	st, data := do(t, nil, http.MethodPost, s.URL()+path, contentType, []byte(body))
	var e api.Error
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatalf("%s %q: the error body is not JSON: %q", path, body, data)
	}
	if st != status || e.Name != name || e.Message == "" {
		t.Fatalf("%s %q: HTTP %d %+v, want %d %s with a message", path, body, st, e, status, name)
	}
	return e
}

func role(t *testing.T, s *server.Server) api.Role {
	t.Helper()
	st, data := do(t, nil, http.MethodGet, s.URL()+api.PathRole, "", nil)
	var r api.Role
	if st != http.StatusOK || json.Unmarshal(data, &r) != nil {
		t.Fatalf("GET /role: %d %q", st, data)
	}
	return r
}

func u64(v uint64) *uint64 { return &v }

// writePinned mounts a segment and writes key soft-pinned for ttl through
// the API, returning the Start's replicas.
func writePinned(t *testing.T, s *server.Server, key string, ttl time.Duration) []api.Replica {
	t.Helper()
	call(t, s, api.PathMount, api.MountRequest{ClientID: 7, Name: "seg0", Base: 1 << 40, Size: 64 << 20}, nil)
	var st api.StartResponse
	call(t, s, api.PathPutStart, api.StartRequest{ClientID: 7, Key: key, Size: 4096,
		Config: api.ReplicateConfig{SoftPinAction: api.SoftPinEnable, TTLMs: u64(uint64(ttl / time.Millisecond))}}, &st)
	if len(st.Replicas) != 1 || st.Replicas[0].Segment != "seg0" || st.Replicas[0].Status != api.StatusProcessing || st.Token == 0 {
		t.Fatalf("PutStart answer %+v", st)
	}
	call(t, s, api.PathPutEnd, api.EndRequest{ClientID: 7, Key: key, Token: st.Token}, nil)
	return st.Replicas
}

// replay applies every journal batch in etcd to a fresh standby master:
// what a standby promoted now would hold.
func replay(t *testing.T, cli *clientv3.Client) *mm.Master {
	t.Helper()
	m, err := mm.New(mm.WithStandby(true), mm.WithJournalCapacityBytes(16<<20))
	must(t, "New standby", err)
	t.Cleanup(func() { m.Close() })
	resp, err := cli.Get(boundedCtx(t), prefix+"/journal/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	must(t, "reading the journal", err)
	if len(resp.Kvs) == 0 {
		t.Fatal("no journal batch in etcd")
	}
	for _, kv := range resp.Kvs {
		_, err := m.ApplyJournal(kv.Value)
		must(t, "ApplyJournal "+string(kv.Key), err)
	}
	_, err = m.Promote()
	must(t, "Promote", err)
	return m
}

func TestSingleNodeServesAPutGetSoftPinRoundTripDurably(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	// No background flush: only the acknowledgement's wait ships records.
	a := startServer(t, cli, "a", func(c *server.Config) { c.FlushInterval = time.Hour })
	waitRole(t, a, ha.RoleLeader)
	if r := role(t, a); r.Role != "leader" || r.Leader != "a" || r.LeaderURL != a.URL() {
		t.Fatalf("role %+v", r)
	}
	start := mm.InstantOf(time.Now())
	written := writePinned(t, a, "prompt/1", time.Hour)
	end := mm.InstantOf(time.Now())
	// Acknowledged means in etcd: a standby built from etcd alone has it.
	m := replay(t, cli)
	d, ok, err := m.SoftPinDeadline("prompt/1")
	if err != nil || !ok {
		t.Fatalf("replayed deadline %d %v %v", d, ok, err)
	}

	var got api.GetResponse
	call(t, a, api.PathGet, api.KeyRequest{Key: "prompt/1"}, &got)
	if len(got.Replicas) != 1 || got.Replicas[0].Status != api.StatusComplete || got.Replicas[0].ID != written[0].ID ||
		got.Replicas[0].Address != written[0].Address || got.Replicas[0].Size != 4096 || got.Replicas[0].Kind != api.KindMemory {
		t.Fatalf("get %+v after writing %+v", got, written)
	}
	var ex api.ExistResponse
	call(t, a, api.PathExist, api.KeyRequest{Key: "prompt/1"}, &ex)
	if !ex.Exists {
		t.Fatal("exist: false")
	}
	var pin api.SoftPinResponse
	call(t, a, api.PathSoftPin, api.KeyRequest{Key: "prompt/1"}, &pin)
	if !pin.Pinned || pin.DeadlineMs < uint64(start.Add(time.Hour)) || pin.DeadlineMs > uint64(end.Add(time.Hour))+1 {
		t.Fatalf("soft pin %+v, want a deadline an hour after the write (%d..%d)", pin, start.Add(time.Hour), end.Add(time.Hour))
	}
	if uint64(d) != pin.DeadlineMs {
		t.Fatalf("replayed deadline %d %v %v, acknowledged %d", d, ok, err, pin.DeadlineMs)
	}
	if r := role(t, a); r.DurableSeq == 0 {
		t.Fatalf("durable_seq 0 after acknowledged writes: %+v", r)
	}

	// Group retention, remove and the snapshot in both encodings.
	var gr api.GroupsResponse
	call(t, a, api.PathRetainGroups, api.RetainRequest{Groups: []string{"g1", ""}, TTLMs: 60_000}, &gr)
	if len(gr.Results) != 2 || gr.Results[0].Error != nil || gr.Results[0].DeadlineMs == 0 ||
		gr.Results[1].Error == nil || gr.Results[1].Error.Name != "INVALID_PARAMS" {
		t.Fatalf("retain %+v", gr)
	}
	call(t, a, api.PathReleaseGroups, api.ReleaseRequest{Groups: []string{"g1"}}, &gr)
	if len(gr.Results) != 1 || gr.Results[0].Error != nil {
		t.Fatalf("release %+v", gr)
	}
	var snap api.SnapshotResponse
	call(t, a, api.PathSnapshot, api.Empty{}, &snap)
	req, err := http.NewRequestWithContext(boundedCtx(t), http.MethodPost, a.URL()+api.PathSnapshot, strings.NewReader("{}"))
	must(t, "NewRequest", err)
	req.Header.Set("Accept", "application/octet-stream")
	res, err := http.DefaultClient.Do(req)
	must(t, "snapshot", err)
	raw, err := io.ReadAll(res.Body)
	res.Body.Close()
	must(t, "reading the snapshot", err)
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/octet-stream" || len(raw) == 0 || len(snap.Snapshot) == 0 {
		t.Fatalf("snapshot: %d %q, %d bytes raw, %d base64", res.StatusCode, res.Header.Get("Content-Type"), len(raw), len(snap.Snapshot))
	}
	restored, err := mm.New()
	must(t, "New", err)
	defer restored.Close()
	_, err = restored.Restore(raw)
	must(t, "Restore the raw snapshot", err)
	if ok, err := restored.Exist("prompt/1"); err != nil || !ok {
		t.Fatalf("restored snapshot lacks prompt/1: %v %v", ok, err)
	}
	call(t, a, api.PathRemove, api.RemoveRequest{Key: "prompt/1", Force: true}, nil)
	call(t, a, api.PathExist, api.KeyRequest{Key: "prompt/1"}, &ex)
	if ex.Exists {
		t.Fatal("exist after remove: true")
	}

	// The node's figures next to the master's.
	st, metrics := do(t, nil, http.MethodGet, a.URL()+api.PathMetrics, "", nil)
	for _, want := range []string{`mooncake_meta_ha_role{role="leader"} 1`, "mooncake_meta_ha_durable_seq ", "mooncake_meta_ha_applied_seq ",
		"mooncake_meta_ha_snapshot_seq ", "mooncake_meta_ha_snapshot_bytes ", "mooncake_meta_ha_snapshots_total ", "mooncake_meta_ha_journal_gc_seq ",
		"mooncake_meta_ha_snapshot_load_failures_total ", "mooncake_meta_ha_journal_shipped_bytes_total "} {
		if st != http.StatusOK || !strings.Contains(string(metrics), want) {
			t.Fatalf("metrics (%d) lack %q:\n%s", st, want, metrics)
		}
	}
	if st, body := do(t, nil, http.MethodGet, a.URL()+api.PathHealthz, "", nil); st != http.StatusOK || string(body) != "ok\n" {
		t.Fatalf("healthz %d %q", st, body)
	}
}

func TestBadRequestsAreRejected(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	a := startServer(t, cli, "a", func(c *server.Config) { c.MaxRequestBytes = 1024 })
	waitRole(t, a, ha.RoleLeader)
	const js = "application/json"
	big := `{"key":"` + strings.Repeat("k", 2048) + `"}`
	refused(t, a, api.PathGet, js, big, http.StatusRequestEntityTooLarge, api.ErrNameTooLarge)
	// Without a Content-Length the limit holds too (chunked body).
	req, err := http.NewRequestWithContext(boundedCtx(t), http.MethodPost, a.URL()+api.PathGet, io.MultiReader(strings.NewReader(big)))
	must(t, "NewRequest", err)
	req.ContentLength = -1
	res, err := http.DefaultClient.Do(req)
	must(t, "chunked post", err)
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked oversized body: HTTP %d", res.StatusCode)
	}
	refused(t, a, api.PathGet, js, `{"key":`, http.StatusBadRequest, api.ErrNameBadRequest)
	refused(t, a, api.PathGet, js, `{"key":"a"} {}`, http.StatusBadRequest, api.ErrNameBadRequest)
	refused(t, a, api.PathGet, js, `{"key":"a","keyz":1}`, http.StatusBadRequest, api.ErrNameBadRequest)
	refused(t, a, api.PathPutStart, js, `{"key":"a","size":-1}`, http.StatusBadRequest, api.ErrNameBadRequest)
	refused(t, a, api.PathPutStart, js, `{"key":"a","size":1,"config":{"soft_pin_action":"FOREVER"}}`, http.StatusBadRequest, api.ErrNameBadRequest)
	refused(t, a, api.PathPutEnd, js, `{"key":"a","selector":"SOME"}`, http.StatusBadRequest, api.ErrNameBadRequest)
	refused(t, a, api.PathMount, js, `{"name":"s","size":1,"pool":"DISK"}`, http.StatusBadRequest, api.ErrNameBadRequest)
	// The library's own checks: its code, name and message.
	e := refused(t, a, api.PathPutStart, js, `{"key":"a","size":1,"config":{"soft_pin_action":"PRESERVE","ttl_ms":5}}`, http.StatusBadRequest, "INVALID_PARAMS")
	if e.Code != int32(mm.CodeInvalidParams) || !strings.Contains(e.Message, "SoftPinTTL") {
		t.Fatalf("library error body %+v", e)
	}
	e = refused(t, a, api.PathGet, js, `{"key":"missing"}`, http.StatusNotFound, "OBJECT_NOT_FOUND")
	if e.Code != int32(mm.CodeObjectNotFound) {
		t.Fatalf("not-found body %+v", e)
	}
	refused(t, a, api.PathGet, "text/plain", `{"key":"a"}`, http.StatusUnsupportedMediaType, api.ErrNameUnsupportedMedia)
	refused(t, a, "/v1/nothing", js, `{}`, http.StatusNotFound, api.ErrNameNoRoute)
	refused(t, a, api.PathHealthz, js, `{}`, http.StatusMethodNotAllowed, api.ErrNameMethod)
	st, data := do(t, nil, http.MethodGet, a.URL()+api.PathGet, "", nil)
	if st != http.StatusMethodNotAllowed || !strings.Contains(string(data), api.ErrNameMethod) {
		t.Fatalf("GET %s: %d %q", api.PathGet, st, data)
	}
}

func TestFollowerAnswers503NamingTheLeaderAndTheClientFindsIt(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	a := startServer(t, cli, "a", nil)
	waitRole(t, a, ha.RoleLeader)
	b := startServer(t, cli, "b", nil)
	waitRole(t, b, ha.RoleFollower)
	e := refused(t, b, api.PathExist, "application/json", `{"key":"x"}`, http.StatusServiceUnavailable, api.ErrNameNotLeader)
	if e.Leader != "a" || e.LeaderURL != a.URL() {
		t.Fatalf("follower's 503 names %q at %q, want a at %s", e.Leader, e.LeaderURL, a.URL())
	}
	if r := role(t, b); r.Role != "follower" || r.Leader != "a" || r.LeaderURL != a.URL() {
		t.Fatalf("follower's role %+v", r)
	}

	c, err := client.New(cli, prefix, nil)
	must(t, "client.New", err)
	name, url, err := c.Leader(boundedCtx(t))
	if err != nil || name != "a" || url != a.URL() {
		t.Fatalf("client.Leader = %q %q %v, want a at %s", name, url, err, a.URL())
	}
	// Sent to the follower first, the call is redirected to the leader.
	c.Prefer(b.URL())
	var ex api.ExistResponse
	must(t, "Call through the follower", c.Call(boundedCtx(t), api.PathExist, api.KeyRequest{Key: "x"}, &ex))
	// A refusal is the server's error, not retried.
	err = c.Call(boundedCtx(t), api.PathGet, api.KeyRequest{Key: "x"}, nil)
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != http.StatusNotFound || ce.Body.Name != "OBJECT_NOT_FOUND" {
		t.Fatalf("get of a missing key = %v", err)
	}
}

func TestFailoverServesTheAcknowledgedObjectWithTheSameDeadline(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	a := startServer(t, cli, "a", nil)
	waitRole(t, a, ha.RoleLeader)
	b := startServer(t, cli, "b", nil)
	c, err := client.New(cli, prefix, nil)
	must(t, "client.New", err)

	written := writePinned(t, a, "prompt/1", time.Hour)
	var before api.SoftPinResponse
	must(t, "softpin", c.Call(boundedCtx(t), api.PathSoftPin, api.KeyRequest{Key: "prompt/1"}, &before))
	var beforeGet api.GetResponse
	must(t, "get", c.Call(boundedCtx(t), api.PathGet, api.KeyRequest{Key: "prompt/1"}, &beforeGet))
	// A write left in flight across the failover.
	var inFlight api.StartResponse
	must(t, "PutStart", c.Call(boundedCtx(t), api.PathPutStart, api.StartRequest{ClientID: 7, Key: "prompt/2", Size: 512,
		Config: api.ReplicateConfig{SoftPinAction: api.SoftPinEnable}}, &inFlight))

	must(t, "Close the leader", a.Close(boundedCtx(t)))
	waitRole(t, b, ha.RoleLeader)
	// The client's cached leader is gone: it finds b through etcd.
	var after api.SoftPinResponse
	must(t, "softpin on the new leader", c.Call(boundedCtx(t), api.PathSoftPin, api.KeyRequest{Key: "prompt/1"}, &after))
	if after != before || !after.Pinned {
		t.Fatalf("deadline after failover %+v, before %+v", after, before)
	}
	var afterGet api.GetResponse
	must(t, "get on the new leader", c.Call(boundedCtx(t), api.PathGet, api.KeyRequest{Key: "prompt/1"}, &afterGet))
	if !reflect.DeepEqual(afterGet, beforeGet) || afterGet.Replicas[0].ID != written[0].ID {
		t.Fatalf("replicas after failover %+v, before %+v", afterGet, beforeGet)
	}
	must(t, "PutEnd of the write in flight on the new leader", c.Call(boundedCtx(t), api.PathPutEnd,
		api.EndRequest{ClientID: 7, Key: "prompt/2", Token: inFlight.Token}, nil))
	var ex api.ExistResponse
	must(t, "exist", c.Call(boundedCtx(t), api.PathExist, api.KeyRequest{Key: "prompt/2"}, &ex))
	if !ex.Exists {
		t.Fatal("the write in flight did not end on the new leader")
	}
}

// A leader whose session is revoked steps down; the server starts a fresh
// standby that catches up from etcd and, alone in the cluster, leads again
// with the acknowledged object.
func TestASteppedDownNodeIsReplacedByAFreshStandby(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	a := startServer(t, cli, "a", nil)
	waitRole(t, a, ha.RoleLeader)
	writePinned(t, a, "prompt/1", time.Hour)
	var before api.SoftPinResponse
	call(t, a, api.PathSoftPin, api.KeyRequest{Key: "prompt/1"}, &before)
	r, err := cli.Get(boundedCtx(t), prefix+"/leader/", clientv3.WithFirstCreate()...)
	if err != nil || len(r.Kvs) != 1 {
		t.Fatalf("leader key: %v %v", r, err)
	}
	_, err = cli.Revoke(boundedCtx(t), clientv3.LeaseID(r.Kvs[0].Lease))
	must(t, "Revoke the leader's lease", err)
	must(t, "WaitRestarts", a.WaitRestarts(boundedCtx(t), 1))
	waitRole(t, a, ha.RoleLeader)
	if _, m := do(t, nil, http.MethodGet, a.URL()+api.PathMetrics, "", nil); !strings.Contains(string(m), "mooncake_meta_ha_node_restarts_total 1") {
		t.Fatalf("metrics lack the restart:\n%s", m)
	}
	var after api.SoftPinResponse
	call(t, a, api.PathSoftPin, api.KeyRequest{Key: "prompt/1"}, &after)
	if after != before {
		t.Fatalf("deadline after the restart %+v, before %+v", after, before)
	}
}

// tlsFiles is a CA, a server certificate for 127.0.0.1 and a client
// certificate, all signed by the CA.
type tlsFiles struct {
	pool   *x509.CertPool
	server tls.Certificate
	client tls.Certificate
}

func newTLS(t *testing.T) tlsFiles {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, "CA key", err)
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	must(t, "CA cert", err)
	ca, err := x509.ParseCertificate(caDER)
	must(t, "parse CA", err)
	leaf := func(serial int64, usage x509.ExtKeyUsage, ips []net.IP) tls.Certificate {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		must(t, "key", err)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "leaf"},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		must(t, "leaf cert", err)
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return tlsFiles{pool: pool,
		server: leaf(2, x509.ExtKeyUsageServerAuth, []net.IP{net.IPv4(127, 0, 0, 1)}),
		client: leaf(3, x509.ExtKeyUsageClientAuth, nil)}
}

func TestTLSRequiresAClientCertificateSignedByTheCA(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	f := newTLS(t)
	a := startServer(t, cli, "a", func(c *server.Config) {
		c.TLS = &tls.Config{Certificates: []tls.Certificate{f.server}, ClientCAs: f.pool,
			ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
	})
	waitRole(t, a, ha.RoleLeader)
	if !strings.HasPrefix(a.URL(), "https://127.0.0.1:") {
		t.Fatalf("published URL %q is not https", a.URL())
	}
	anon := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.pool}}}
	req, err := http.NewRequestWithContext(boundedCtx(t), http.MethodGet, a.URL()+api.PathHealthz, nil)
	must(t, "NewRequest", err)
	if res, err := anon.Do(req); err == nil {
		res.Body.Close()
		t.Fatalf("a client without a certificate was served: HTTP %d", res.StatusCode)
	}
	if res, err := http.Get(strings.Replace(a.URL(), "https://", "http://", 1) + api.PathHealthz); err == nil {
		res.Body.Close()
		if res.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP was served on the TLS listener")
		}
	}
	withCert := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.pool, Certificates: []tls.Certificate{f.client}}}}
	if st, body := do(t, withCert, http.MethodGet, a.URL()+api.PathHealthz, "", nil); st != http.StatusOK {
		t.Fatalf("healthz with a client certificate: %d %q", st, body)
	}
	c, err := client.New(cli, prefix, withCert)
	must(t, "client.New", err)
	var ex api.ExistResponse
	must(t, "Call over TLS", c.Call(boundedCtx(t), api.PathExist, api.KeyRequest{Key: "x"}, &ex))
}
