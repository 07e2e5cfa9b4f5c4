package server_test

// The protocol surface's own checks: bodies that are not UTF-8, field
// names that are not exactly the API's, lists longer than the server's
// bound, answers that outgrow their requests, heavy calls past their
// bound, connections past their bound, and a client that hangs up.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
	"github.com/kvcache-ai/libmooncake_meta/go/ha"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/internal/etcdtest"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server/api"
)

const js = "application/json"

// exists asks s whether key exists (key is sent as Go's JSON of it).
func exists(t *testing.T, s *server.Server, key string) bool {
	t.Helper()
	var ex api.ExistResponse
	call(t, s, api.PathExist, api.KeyRequest{Key: key}, &ex)
	return ex.Exists
}

// A body that is not UTF-8, or whose string escapes stand for a lone
// UTF-16 surrogate, is refused with 400 INVALID_UTF8 (the library's code)
// and changes nothing: encoding/json alone stored "k\xff" as "k\uFFFD",
// and "k\xfe" found it.
func TestABodyThatIsNotUTF8IsRefusedAndChangesNothing(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	a := startServer(t, cli, "a", nil)
	waitRole(t, a, ha.RoleLeader)
	call(t, a, api.PathMount, api.MountRequest{ClientID: 7, Name: "seg0", Base: 1 << 40, Size: 64 << 20}, nil)
	utf8Refused := func(path, body, says string) {
		t.Helper()
		e := refused(t, a, path, js, body, http.StatusBadRequest, "INVALID_UTF8")
		if e.Code != int32(mm.CodeInvalidUTF8) || !strings.Contains(e.Message, says) {
			t.Fatalf("%s %q: %+v, want code %d and a message saying %q", path, body, e, mm.CodeInvalidUTF8, says)
		}
	}
	utf8Refused(api.PathPutStart, "{\"client_id\":7,\"key\":\"k\xff\",\"size\":4096}", "not UTF-8: byte 0xff at offset 23")
	utf8Refused(api.PathExist, "{\"key\":\"k\xfe\"}", "not UTF-8")
	utf8Refused(api.PathRetainGroups, "{\"groups\":[\"g\xc3\"],\"ttl_ms\":60000}", "not UTF-8")
	// A byte that is not UTF-8 outside any string too (no JSON error first).
	utf8Refused(api.PathExist, "{\"key\":\"k\"}\xff", "not UTF-8")
	for _, esc := range []string{`\udc00`, `\ud800`, `\ud800x`, `\ud800\u0041`, `\uDBFF\uDBFF`, `\ude00\ud83d`} {
		utf8Refused(api.PathPutStart, `{"client_id":7,"key":"k`+esc+`","size":4096}`, "lone UTF-16 surrogate")
		utf8Refused(api.PathExist, `{"key":"k`+esc+`"}`, "lone UTF-16 surrogate")
	}
	// In a field name, and in a value the request type does not hold.
	utf8Refused(api.PathExist, `{"k\udc00":"k"}`, "lone UTF-16 surrogate")
	utf8Refused(api.PathPutStart, `{"key":"k","size":1,"config":{"preferred_segments":["s\udc00"]}}`, "lone UTF-16 surrogate")
	// Nothing was stored under the replacement character.
	if exists(t, a, "k\uFFFD") || exists(t, a, "k") {
		t.Fatal("a refused Start stored its key")
	}
	// A surrogate pair is one character, and escapes of other characters
	// are what they say.
	var st api.StartResponse
	call(t, a, api.PathPutStart, json.RawMessage(`{"client_id":7,"key":"k\ud83d\ude00","size":4096}`), &st)
	call(t, a, api.PathPutEnd, api.EndRequest{ClientID: 7, Key: "k😀", Token: st.Token}, nil)
	if !exists(t, a, "k😀") {
		t.Fatalf("the surrogate pair's key was not stored as k😀 (%+v)", st)
	}
	call(t, a, api.PathPutStart, json.RawMessage(`{"client_id":7,"key":"\u006b\uFFFD","size":4096}`), &st)
	call(t, a, api.PathPutEnd, api.EndRequest{ClientID: 7, Key: "k\uFFFD", Token: st.Token}, nil)
	if !exists(t, a, "k\uFFFD") {
		t.Fatal(`an escaped U+FFFD ("\uFFFD" is valid) was not stored`)
	}
}

// Field names match exactly (encoding/json alone matched them regardless
// of case and let a repeated field override the first), at every level.
func TestFieldNamesMatchExactlyAndOnceAtEveryLevel(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	a := startServer(t, cli, "a", nil)
	waitRole(t, a, ha.RoleLeader)
	call(t, a, api.PathMount, api.MountRequest{ClientID: 7, Name: "seg0", Base: 1 << 40, Size: 64 << 20}, nil)
	for _, c := range []struct{ path, body, names string }{
		{api.PathRetainGroups, `{"groups":["g1"],"TTL_MS":60000,"Tenant":"x"}`, `"TTL_MS"`},
		{api.PathRetainGroups, `{"groups":["g1"],"ttl_ms":60000,"Tenant":"x"}`, `"Tenant"`},
		{api.PathExist, `{"key":"k","Key":"j"}`, `"Key"`},
		{api.PathExist, `{"KEY":"k"}`, `"KEY"`},
		{api.PathExist, `{"key":"k","key":"j"}`, `"key" appears more than once`},
		{api.PathExist, `{"key":"k","k\u0065y":"j"}`, `"key" appears more than once`},
		{api.PathPutStart, `{"key":"a","size":1,"config":{"Soft_Pin_Action":"ENABLE"}}`, `"config.Soft_Pin_Action"`},
		{api.PathPutStart, `{"key":"a","size":1,"config":{"ttl_ms":5,"ttl_ms":6}}`, `"config.ttl_ms" appears more than once`},
		{api.PathPutStart, `{"key":"a","size":1,"config":{},"config":{}}`, `"config" appears more than once`},
		{api.PathPutStart, `{"key":"a","size":1,"config":{"nope":1}}`, `"config.nope"`},
		{api.PathSnapshot, `{"Snapshot":""}`, `"Snapshot"`},
	} {
		e := refused(t, a, c.path, js, c.body, http.StatusBadRequest, api.ErrNameBadRequest)
		if !strings.Contains(e.Message, c.names) {
			t.Errorf("%s %s: %q does not name %s", c.path, c.body, e.Message, c.names)
		}
	}
	// Nothing was retained under the case-folded fields.
	if _, m := do(t, nil, http.MethodGet, a.URL()+api.PathMetrics, "", nil); !strings.Contains(string(m), "\nmaster_retained_group_count 0\n") {
		t.Fatalf("a refused retain retained a group:\n%s", m)
	}
	// Exact names, escaped or not, are fields.
	var st api.StartResponse
	call(t, a, api.PathPutStart, json.RawMessage(`{"client_id":7,"\u006bey":"k","size":1,"config":{"soft_pin_action":"ENABLE","ttl_ms":60000}}`), &st)
	call(t, a, api.PathPutEnd, api.EndRequest{ClientID: 7, Key: "k", Token: st.Token}, nil)
	if !exists(t, a, "k") {
		t.Fatal("an escaped field name was not the field")
	}
}

// retainBody is a retain of groups, HTML characters unescaped ("<" is one
// byte, as a client in another language would send it).
func retainBody(t *testing.T, groups []string) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	must(t, "Encode", enc.Encode(api.RetainRequest{Groups: groups, TTLMs: 3_600_000}))
	return bytes.TrimSpace(b.Bytes())
}

// A list longer than MaxCallEntries is refused, 400 INVALID_PARAMS naming
// the bound, before anything is done; a group's error is its code, name
// and a short message, so an answer stays about its request's size (a
// retain of 350 000 empty ids, 1 MiB, answered 42 MB: each entry repeated
// the library's message with the id, escaped again).
func TestListsAreBoundedAndAGroupAnswerStaysTheSizeOfItsRequest(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	const entries = 100
	a := startServer(t, cli, "a", func(c *server.Config) {
		c.MaxCallEntries = entries
		c.Master.MaxRetainedGroups = 1
	})
	waitRole(t, a, ha.RoleLeader)
	tooMany := make([]string, entries+1)
	for i := range tooMany {
		tooMany[i] = fmt.Sprintf("g%d", i)
	}
	segs, err := json.Marshal(tooMany)
	must(t, "Marshal", err)
	rel, err := json.Marshal(api.ReleaseRequest{Groups: tooMany})
	must(t, "Marshal", err)
	for _, c := range []struct{ path, body, names string }{
		{api.PathRetainGroups, string(retainBody(t, tooMany)), `"groups"`},
		{api.PathReleaseGroups, string(rel), `"groups"`},
		{api.PathPutStart, `{"key":"a","size":1,"config":{"preferred_segments":` + string(segs) + `}}`, `"config.preferred_segments"`},
	} {
		e := refused(t, a, c.path, js, c.body, http.StatusBadRequest, "INVALID_PARAMS")
		if e.Code != int32(mm.CodeInvalidParams) || !strings.Contains(e.Message, c.names) ||
			!strings.Contains(e.Message, fmt.Sprint(entries)) || !strings.Contains(e.Message, "--max-call-entries") {
			t.Errorf("%s with %d entries: %+v, want INVALID_PARAMS naming %s, the bound %d and the flag", c.path, entries+1, e, c.names, entries)
		}
	}
	var gr api.GroupsResponse
	call(t, a, api.PathRetainGroups, api.RetainRequest{Groups: []string{"kept"}, TTLMs: 60_000}, &gr)
	if len(gr.Results) != 1 || gr.Results[0].Error != nil {
		t.Fatalf("nothing may be retained by a refused call, and then one group is: %+v", gr)
	}

	// At the bound: ids of 1000 "<" each, refused (the registry is full):
	// each entry's answer was the id twice, as \u003c (six bytes a
	// character), with the library's message: 12x the request.
	long := make([]string, entries)
	for i := range long {
		long[i] = fmt.Sprintf("%03d%s", i, strings.Repeat("<", 1000))
	}
	// And empty ids: a few bytes each in the request.
	empty := make([]string, entries)
	for _, c := range []struct {
		what   string
		groups []string
		name   string
	}{{"long ids", long, "GROUP_RETENTION_FULL"}, {"empty ids", empty, "INVALID_PARAMS"}} {
		body := retainBody(t, c.groups)
		st, data := do(t, nil, http.MethodPost, a.URL()+api.PathRetainGroups, js, body)
		if st != http.StatusOK {
			t.Fatalf("retain of %s: HTTP %d %.300s", c.what, st, data)
		}
		must(t, "decoding", json.Unmarshal(data, &gr))
		if len(gr.Results) != entries {
			t.Fatalf("retain of %s: %d results", c.what, len(gr.Results))
		}
		for i, r := range gr.Results {
			if r.Group != c.groups[i] || r.Error == nil || r.Error.Name != c.name || r.Error.Message == "" || len(r.Error.Message) > 100 {
				t.Fatalf("retain of %s: result %d %+v, want %s with a short message", c.what, i, r, c.name)
			}
		}
		// Each entry's answer is its id, at most twice its request's
		// bytes, and about 100 bytes of outcome.
		limit := 2*len(body) + 128*entries
		t.Logf("retain of %d %s: request %d bytes, answer %d (bound %d)", entries, c.what, len(body), len(data), limit)
		if len(data) > limit {
			t.Fatalf("retain of %d %s: a %d-byte request answered %d bytes (more than %d)", entries, c.what, len(body), len(data), limit)
		}
	}
}

// postJSON posts body as JSON to url, bounded, and returns the answer and its
// body.
func postJSON(t *testing.T, url, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(boundedCtx(t), http.MethodPost, url, strings.NewReader(body))
	must(t, "NewRequest", err)
	req.Header.Set("Content-Type", js)
	res, err := http.DefaultClient.Do(req)
	must(t, "POST "+url, err)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	must(t, "reading the answer", err)
	return res, data
}

// heavyInFlight sends a call on a raw connection that reads nothing but
// the start of its answer, which outgrows the connection's buffers: the
// handler then holds its slot until the connection closes.
func heavyInFlight(t *testing.T, a *server.Server, request string) net.Conn {
	t.Helper()
	conn := dial(t, a, 4096)
	_, err := io.WriteString(conn, request)
	must(t, "writing the request", err)
	must(t, "SetReadDeadline", conn.SetReadDeadline(time.Now().Add(bound)))
	head := make([]byte, len("HTTP/1.1 200"))
	_, err = io.ReadFull(conn, head)
	must(t, "reading the answer's status", err)
	if string(head) != "HTTP/1.1 200" {
		t.Fatalf("the heavy call in flight: answered %q", head)
	}
	return conn
}

// Heavy calls past their bound (MaxSnapshotRequests, MaxHeavyRequests)
// are answered 429 TOO_MANY_REQUESTS at once, with Retry-After, having
// done nothing; once a slot is free they are served again.
func TestHeavyCallsPastTheirBoundAreAnswered429(t *testing.T) {
	a := startSmallBuffered(t, func(c *server.Config) {
		c.MaxSnapshotRequests = 1
		c.MaxHeavyRequests = 1
	})
	groups := make([]string, 1000)
	for i := range groups {
		groups[i] = fmt.Sprintf("held-%04d-%s", i, strings.Repeat("h", 500))
	}
	retain := retainBody(t, groups)
	retainRequest := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		api.PathRetainGroups, len(retain), retain)
	for _, c := range []struct {
		what, path, request, body string
	}{
		{"snapshot", api.PathSnapshot, snapshotRequest, "{}"},
		{"retain", api.PathRetainGroups, retainRequest, `{"groups":["other"],"ttl_ms":60000}`},
	} {
		held := heavyInFlight(t, a, c.request)
		res, data := postJSON(t, a.URL()+c.path, c.body)
		var e api.Error
		if json.Unmarshal(data, &e) != nil || res.StatusCode != http.StatusTooManyRequests || e.Name != api.ErrNameTooManyRequests ||
			res.Header.Get("Retry-After") != "1" || !strings.Contains(e.Message, "--max-") {
			t.Fatalf("a second %s while one is served: HTTP %d %q (Retry-After %q), want 429 %s naming the flag",
				c.what, res.StatusCode, data, res.Header.Get("Retry-After"), api.ErrNameTooManyRequests)
		}
		held.Close()
		// Served again once the first's connection is gone (its handler
		// then fails its write and frees the slot).
		ctx := boundedCtx(t)
		for {
			res, _ := postJSON(t, a.URL()+c.path, c.body)
			if res.StatusCode == http.StatusOK {
				break
			}
			if res.StatusCode != http.StatusTooManyRequests || ctx.Err() != nil {
				t.Fatalf("a %s after the first's connection closed: HTTP %d", c.what, res.StatusCode)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	var gr api.GroupsResponse
	call(t, a, api.PathReleaseGroups, api.ReleaseRequest{Groups: []string{"other"}}, &gr)
	// The JSON snapshot (base64 encoded as it is sent) is the snapshot.
	var snap api.SnapshotResponse
	call(t, a, api.PathSnapshot, api.Empty{}, &snap)
	restored, err := mm.New()
	must(t, "New", err)
	defer restored.Close()
	_, err = restored.Restore(snap.Snapshot)
	must(t, "Restore the JSON snapshot", err)
	_, metrics := do(t, nil, http.MethodGet, a.URL()+api.PathMetrics, "", nil)
	if !strings.Contains(string(metrics), "\nmooncake_meta_ha_requests_throttled_total ") ||
		strings.Contains(string(metrics), "\nmooncake_meta_ha_requests_throttled_total 0\n") {
		t.Fatalf("the metrics do not count the 429 answers:\n%s", metrics)
	}
}

// Connections past MaxConnections are not accepted until one closes: idle
// ones (a byte sent each) up to the bound leave the process its file
// descriptors, and the next connection is served once one of them goes.
func TestConnectionsPastMaxConnectionsWaitUntilOneCloses(t *testing.T) {
	cli := etcdtest.Start(t).Client(t)
	const limit = 4
	a := startServer(t, cli, "a", func(c *server.Config) { c.MaxConnections = limit })
	waitRole(t, a, ha.RoleLeader)
	idle := make([]net.Conn, limit)
	for i := range idle {
		idle[i] = dial(t, a, 0)
		_, err := io.WriteString(idle[i], "G")
		must(t, "writing a byte", err)
	}
	next := dial(t, a, 0)
	_, err := io.WriteString(next, "GET "+api.PathHealthz+" HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	must(t, "writing a request past the bound", err)
	must(t, "SetReadDeadline", next.SetReadDeadline(time.Now().Add(500*time.Millisecond)))
	if b, err := io.ReadAll(next); err == nil || len(b) != 0 {
		t.Fatalf("a connection past MaxConnections %d was served: %q (%v)", limit, b, err)
	}
	idle[0].Close()
	if got := untilClosed(t, "the connection past the bound", next); !strings.HasPrefix(got, "HTTP/1.1 200 ") || !strings.HasSuffix(got, "ok\n") {
		t.Fatalf("healthz once an idle connection closed: %q", got)
	}
	for _, conn := range idle[1:] {
		conn.Close()
	}
	// And the server goes on serving.
	if st, body := do(t, nil, http.MethodGet, a.URL()+api.PathHealthz, "", nil); st != http.StatusOK {
		t.Fatalf("healthz: %d %q", st, body)
	}
}

// A client that hangs up while its call waits for durability (etcd is
// paused) is logged at debug level, not answered 503 NOT_LEADER and
// logged as a failure of a healthy leader; the wait goes on (a client
// that closed only its sending side still reads: halfclose_test.go).
func TestAClientThatHangsUpIsNotAnsweredNotLeader(t *testing.T) {
	etcd, _, a, h, conn := pausedStart(t, "gone", clientClosed, "request failed")
	// The call is made and waits for etcd: no answer yet.
	must(t, "SetReadDeadline", conn.SetReadDeadline(time.Now().Add(200*time.Millisecond)))
	if b, err := bufio.NewReader(conn).Peek(1); err == nil {
		t.Fatalf("answered while etcd is paused: %q", b)
	}
	conn.Close()
	select {
	case r := <-h.first:
		if r.Level != slog.LevelDebug || r.Message != clientClosed {
			t.Fatalf("a client that hung up was logged at %s: %q", r.Level, r.Message)
		}
	case <-boundedCtx(t).Done():
		t.Fatalf("nothing was logged of the client that hung up in %v", bound)
	}
	must(t, "continuing etcd", etcd.Members[0].Continue())
	// The leader still leads and serves.
	if r := role(t, a); r.Role != "leader" {
		t.Fatalf("role after the client hung up: %+v", r)
	}
	exists(t, a, "other")
}
