package server

// The HTTP side: routing, request decoding, the leader check, the
// durability wait, and the answers.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
	"github.com/kvcache-ai/libmooncake_meta/go/ha"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server/api"
)

// lookupTimeout bounds the etcd reads that name the leader.
const lookupTimeout = 2 * time.Second

// apiCall runs one API call on the leader's master: it decodes the body
// into a fresh request (no list longer than maxEntries), calls the master
// and returns the answer.
type apiCall func(g *generation, body []byte, maxEntries int) (any, error)

// route is an API path's call and the type its body is decoded into.
type route struct {
	run apiCall
	req reflect.Type
}

// routes are the API paths' calls.
var routes = map[string]route{
	api.PathMount:         call(mount),
	api.PathUnmount:       call(unmount),
	api.PathPutStart:      call(func(g *generation, r *api.StartRequest) (any, error) { return start(g, r, false) }),
	api.PathUpsertStart:   call(func(g *generation, r *api.StartRequest) (any, error) { return start(g, r, true) }),
	api.PathPutEnd:        call(endCall(mm.Keyspace.PutEnd)),
	api.PathPutRevoke:     call(endCall(mm.Keyspace.PutRevoke)),
	api.PathUpsertEnd:     call(endCall(mm.Keyspace.UpsertEnd)),
	api.PathUpsertRevoke:  call(endCall(mm.Keyspace.UpsertRevoke)),
	api.PathGet:           call(get),
	api.PathExist:         call(exist),
	api.PathRemove:        call(remove),
	api.PathSoftPin:       call(softPin),
	api.PathRetainGroups:  call(retain),
	api.PathReleaseGroups: call(release),
	api.PathSnapshot:      call(snapshot),
}

// call adapts a typed handler: the body is decoded strictly into Req
// (decode.go).
func call[Req any](f func(g *generation, r *Req) (any, error)) route {
	return route{req: reflect.TypeFor[Req](), run: func(g *generation, body []byte, maxEntries int) (any, error) {
		var req Req
		if err := decode(body, &req, maxEntries); err != nil {
			return nil, err
		}
		return f(g, &req)
	}}
}

// slots returns the semaphore that bounds the calls of path served at
// once, nil when they are not bounded (but by MaxConnections).
func (s *Server) slots(path string) (chan struct{}, string) {
	switch path {
	case api.PathRetainGroups, api.PathReleaseGroups:
		return s.heavy, "--max-heavy-requests"
	case api.PathSnapshot:
		return s.snapshots, "--max-snapshot-requests"
	}
	return nil, ""
}

// answerChunk is the most of an answer one write sends under one
// deadline.
const answerChunk = 64 << 10

// answerWriter bounds how long sending an answer may stall: before each
// write of at most answerChunk bytes, and at the end of the handler (for
// what net/http sends then), it sets the connection's write deadline to
// Config.AnswerTimeout from then. A client that stops reading its answer
// loses its connection instead of holding a goroutine and the answer; a
// slow one that keeps reading gets all of it. The first deadline is set
// once the answer is ready, after the wait for durability, so it never
// cuts a call short; net/http clears the deadline once the answer is sent,
// before it reads the connection's next request.
type answerWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (a *answerWriter) arm() {
	a.rc.SetWriteDeadline(time.Now().Add(a.timeout))
}

func (a *answerWriter) WriteHeader(code int) {
	a.arm()
	a.ResponseWriter.WriteHeader(code)
}

func (a *answerWriter) Write(b []byte) (int, error) {
	sent := 0
	for {
		a.arm()
		n, err := a.ResponseWriter.Write(b[sent : sent+min(len(b)-sent, answerChunk)])
		sent += n
		if err != nil || sent == len(b) {
			return sent, err
		}
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (a *answerWriter) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// ServeHTTP routes a request.
func (s *Server) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w := &answerWriter{ResponseWriter: rw, rc: http.NewResponseController(rw), timeout: s.cfg.AnswerTimeout}
	defer w.arm()
	switch r.URL.Path {
	case api.PathHealthz:
		if s.getOnly(w, r) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			io.WriteString(w, "ok\n")
		}
		return
	case api.PathRole:
		if s.getOnly(w, r) {
			// The leader's lookup is bounded by lookupTimeout, and not
			// cut short by a client that closed its sending side.
			s.sent(r, writeJSON(w, http.StatusOK, s.role(context.WithoutCancel(r.Context()))))
		}
		return
	case api.PathMetrics:
		if s.getOnly(w, r) {
			s.metrics(w, r)
		}
		return
	}
	f, ok := routes[r.URL.Path]
	if !ok {
		s.fail(w, r, &requestError{status: http.StatusNotFound, name: api.ErrNameNoRoute, msg: "no such path: " + r.URL.Path})
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		s.fail(w, r, &requestError{status: http.StatusMethodNotAllowed, name: api.ErrNameMethod,
			msg: fmt.Sprintf("%s takes POST, not %s", r.URL.Path, r.Method)})
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			s.fail(w, r, &requestError{status: http.StatusUnsupportedMediaType, name: api.ErrNameUnsupportedMedia,
				msg: fmt.Sprintf("Content-Type %q: the body must be application/json", ct)})
			return
		}
	}
	// readBody takes rw: http.MaxBytesReader tells it to close the
	// connection after a body that is too large.
	body, err := s.readBody(rw, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	g := s.current()
	if role := g.n.Role(); role != ha.RoleLeader {
		s.fail(w, r, fmt.Errorf("%w (role %s)", ha.ErrNotLeader, role))
		return
	}
	// A heavy call holds a slot until its answer is sent: past the bound
	// it is refused at once, before anything is decoded or done.
	if sem, flag := s.slots(r.URL.Path); sem != nil {
		select {
		case sem <- struct{}{}:
			defer func() { <-sem }()
		default:
			s.throttled.Add(1)
			w.Header().Set("Retry-After", "1")
			s.fail(w, r, &requestError{status: http.StatusTooManyRequests, name: api.ErrNameTooManyRequests,
				msg: fmt.Sprintf("%d %s calls are being served, as many as the server serves at once (%s): nothing was done; send it again later",
					cap(sem), r.URL.Path, flag)})
			return
		}
	}
	out, err := f.run(g, body, s.cfg.MaxCallEntries)
	var refusal *mm.Error
	if err != nil && !errors.As(err, &refusal) {
		s.fail(w, r, err)
		return
	}
	// The answer covers every journal record the master holds: it is
	// given only once they are in etcd. Reads wait too, and so do the
	// library's refusals, which can rest on another call's change that
	// is not durable yet (OBJECT_NOT_FOUND after a remove still on its
	// way to etcd, OBJECT_ALREADY_EXISTS after an unacknowledged Start):
	// nothing a client saw is lost by a failover.
	//
	// The wait does not end with the request's context: net/http cancels
	// it at the first EOF it reads, which a client that closed only its
	// sending side (shutdown(SHUT_WR)) once its call was sent causes too,
	// and that client still reads its answer. Ending the wait there left
	// it an empty 200 for a change not known to be durable; it gets the
	// true answer instead, once the wait ends (WriteTimeout bounds it).
	// A client that is really gone reads nothing of it, which is harmless.
	gone := context.AfterFunc(r.Context(), func() {
		s.log.Debug(msgClientClosed, "path", r.URL.Path, "remote", r.RemoteAddr)
	})
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), s.cfg.WriteTimeout)
	serr := g.n.Sync(ctx)
	cancel()
	gone()
	if serr != nil {
		if g.n.Role() == ha.RoleStopped && !errors.Is(serr, context.DeadlineExceeded) {
			// Whatever made the node step down (an etcd error no retry
			// fixes, too), this node no longer leads and acknowledged
			// nothing: NOT_LEADER, with the cause.
			serr = fmt.Errorf("%w: it stepped down before the change was durable: %w", ha.ErrNotLeader, serr)
		}
		// A refusal whose grounds may not survive a failover is not
		// given either: the answer is the Sync's.
		s.fail(w, r, serr)
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if snap, ok := out.(*api.SnapshotResponse); ok {
		s.sent(r, writeSnapshot(w, snap.Snapshot, acceptsOctets(r)))
		return
	}
	s.sent(r, writeJSON(w, http.StatusOK, out))
}

// msgClientClosed is the debug line of a client whose side of the
// connection ended while its call waited for durability.
const msgClientClosed = "the client closed its connection, or its sending side, while its call waits for durability; it is answered once the wait ends"

// sent logs an answer that could not be sent (the client went away, or
// read none of it for Config.AnswerTimeout). An answer small enough for
// the connection's buffer fails, if at all, after the handler, unseen.
func (s *Server) sent(r *http.Request, err error) {
	if err != nil {
		s.log.Warn("the answer was not delivered", "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
	}
}

// getOnly answers 405 to anything but GET and HEAD.
func (s *Server) getOnly(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	s.fail(w, r, &requestError{status: http.StatusMethodNotAllowed, name: api.ErrNameMethod,
		msg: fmt.Sprintf("%s takes GET, not %s", r.URL.Path, r.Method)})
	return false
}

// readBody reads at most MaxRequestBytes: more is 413.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	max := s.cfg.MaxRequestBytes
	tooLarge := &requestError{status: http.StatusRequestEntityTooLarge, name: api.ErrNameTooLarge,
		msg: fmt.Sprintf("the request body exceeds %d bytes (--max-request-bytes)", max)}
	if r.ContentLength > max {
		return nil, tooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge
		}
		return nil, badRequest("reading the request body: " + err.Error())
	}
	return body, nil
}

func acceptsOctets(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "application/octet-stream" {
			return true
		}
	}
	return false
}

// fail answers err through the error table; a NOT_LEADER answer names the
// leader when etcd knows it. An error that is the request's context
// ending (its client closed its side of the connection: nothing the
// handlers wait for uses that context now, so this is a safeguard) gets
// no answer, logged at debug level: the connection is aborted
// (http.ErrAbortHandler: net/http closes it without a word, and the
// handler's deferred releases run), since a handler that returned
// without writing would have net/http send an empty 200 OK, a success
// for a call whose outcome is unknown.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		s.log.Debug("the client went away before its answer; none sent", "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
		panic(http.ErrAbortHandler)
	}
	status, body := errorBody(err)
	if body.Name == api.ErrNameNotLeader {
		// Not cut short by a client that closed its sending side: it
		// still reads the answer (lookupTimeout bounds the lookup).
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), lookupTimeout)
		name, url, lerr := s.leaders.get(ctx)
		cancel()
		if lerr == nil && name != s.cfg.Name {
			body.Leader, body.LeaderURL = name, url
		}
	}
	if status >= 500 {
		s.log.Warn("request failed", "path", r.URL.Path, "status", status, "name", body.Name, "err", err)
	} else {
		s.log.Debug("request refused", "path", r.URL.Path, "status", status, "name", body.Name, "err", err)
	}
	s.sent(r, writeJSON(w, status, body))
}

// writeJSON answers v as JSON, one line; its error is the write's. HTML
// characters are not escaped (a "<" in a key stays one byte, not six), so
// an answer that repeats a request's strings stays about their size.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		enc.Encode(api.Error{Name: "INTERNAL", Message: "encoding the answer: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, err := w.Write(buf.Bytes())
	return err
}

// writeSnapshot answers a snapshot: its bytes, or the JSON of
// api.SnapshotResponse, base64 encoded as it is sent rather than in a
// second copy of the snapshot.
func writeSnapshot(w http.ResponseWriter, snap []byte, octets bool) error {
	if octets {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(snap)))
		w.WriteHeader(http.StatusOK)
		_, err := w.Write(snap)
		return err
	}
	const head, tail = `{"snapshot":"`, "\"}\n"
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(head)+base64.StdEncoding.EncodedLen(len(snap))+len(tail)))
	w.WriteHeader(http.StatusOK)
	// Through a buffer of answerChunk: the encoder writes 1 KiB at a time.
	bw := bufio.NewWriterSize(w, answerChunk)
	bw.WriteString(head)
	enc := base64.NewEncoder(base64.StdEncoding, bw)
	enc.Write(snap)
	enc.Close()
	bw.WriteString(tail)
	return bw.Flush() // the first error of any write
}

// leader is the cluster's leader: its name and published URL ("" when it
// published none).
func (s *Server) leader(ctx context.Context) (string, string, error) {
	name, ok, err := ha.Leader(ctx, s.cfg.Etcd, s.cfg.Prefix)
	if err != nil || !ok {
		return "", "", err
	}
	resp, err := s.cfg.Etcd.Get(ctx, api.NodeKey(s.cfg.Prefix, name))
	if err != nil || len(resp.Kvs) == 0 {
		return name, "", err
	}
	var info api.NodeInfo
	if err := json.Unmarshal(resp.Kvs[0].Value, &info); err != nil {
		return name, "", fmt.Errorf("node entry of %s: %w", name, err)
	}
	return name, info.URL, nil
}

func (s *Server) role(ctx context.Context) api.Role {
	g := s.current()
	out := api.Role{Name: s.cfg.Name, Role: g.n.Role().String(), AppliedSeq: g.n.AppliedSeq(), DurableSeq: g.n.DurableSeq()}
	if out.Role == ha.RoleLeader.String() {
		out.Leader, out.LeaderURL = s.cfg.Name, s.url
		return out
	}
	lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	name, url, err := s.leader(lctx)
	if err != nil {
		s.log.Warn("looking up the leader failed", "err", err)
	}
	out.Leader, out.LeaderURL = name, url
	return out
}

// The calls.

func tenant(g *generation, name string) mm.Keyspace { return g.m.Tenant(name) }

func mount(g *generation, r *api.MountRequest) (any, error) {
	var pool mm.Pool
	switch r.Pool {
	case "", api.KindMemory:
		pool = mm.PoolMemory
	case api.KindNofSSD:
		pool = mm.PoolNofSSD
	default:
		return nil, badRequest(fmt.Sprintf("pool %q: want %q or %q", r.Pool, api.KindMemory, api.KindNofSSD))
	}
	id, err := g.m.MountSegment(mm.ClientID(r.ClientID), r.Name, r.Base, r.Size, pool)
	if err != nil {
		return nil, err
	}
	return api.MountResponse{SegmentID: uint32(id)}, nil
}

func unmount(g *generation, r *api.UnmountRequest) (any, error) {
	rep, err := g.m.UnmountSegment(mm.ClientID(r.ClientID), r.Name)
	if err != nil {
		return nil, err
	}
	return api.UnmountResponse{ReplicasDropped: rep.ReplicasDropped, ObjectsErased: rep.ObjectsErased}, nil
}

// millisDuration converts a millisecond count, refusing one a Duration
// cannot hold.
func millisDuration(what string, ms uint64) (time.Duration, error) {
	if ms > uint64(math.MaxInt64/int64(time.Millisecond)) {
		return 0, badRequest(fmt.Sprintf("%s %d is too large", what, ms))
	}
	return time.Duration(ms) * time.Millisecond, nil
}

func replicateConfig(c *api.ReplicateConfig) (mm.ReplicateConfig, error) {
	out := mm.ReplicateConfig{
		ReplicaNum:        c.ReplicaNum,
		NofSSDReplicaNum:  c.NofSSDReplicaNum,
		WithHardPin:       c.HardPin,
		PreferredSegments: c.PreferredSegments,
		Group:             c.Group,
	}
	switch c.SoftPinAction {
	case "", api.SoftPinPreserve:
		out.SoftPinAction = mm.Preserve
	case api.SoftPinEnable:
		out.SoftPinAction = mm.Enable
	case api.SoftPinDisable:
		out.SoftPinAction = mm.Disable
	default:
		return out, badRequest(fmt.Sprintf("config.soft_pin_action %q: want %q, %q or %q",
			c.SoftPinAction, api.SoftPinPreserve, api.SoftPinEnable, api.SoftPinDisable))
	}
	if c.TTLMs != nil {
		d, err := millisDuration("config.ttl_ms", *c.TTLMs)
		if err != nil {
			return out, err
		}
		out.SoftPinTTL = &d
	}
	return out, nil
}

func start(g *generation, r *api.StartRequest, upsert bool) (any, error) {
	cfg, err := replicateConfig(&r.Config)
	if err != nil {
		return nil, err
	}
	k := tenant(g, r.Tenant)
	f := k.PutStart
	if upsert {
		f = k.UpsertStart
	}
	rs, tok, err := f(mm.ClientID(r.ClientID), r.Key, r.Size, cfg)
	if err != nil {
		return nil, err
	}
	reps, err := replicas(g, rs)
	if err != nil {
		return nil, err
	}
	return api.StartResponse{Replicas: reps, Token: uint64(tok)}, nil
}

func selector(s string) (mm.Selector, error) {
	switch s {
	case "", api.SelectAll:
		return mm.SelectAll, nil
	case api.SelectMemory:
		return mm.SelectMemory, nil
	case api.SelectNofSSD:
		return mm.SelectNofSSD, nil
	}
	return 0, badRequest(fmt.Sprintf("selector %q: want %q, %q or %q", s, api.SelectMemory, api.SelectNofSSD, api.SelectAll))
}

func endCall(f func(mm.Keyspace, mm.ClientID, string, mm.Selector, mm.WriteToken) error) func(*generation, *api.EndRequest) (any, error) {
	return func(g *generation, r *api.EndRequest) (any, error) {
		sel, err := selector(r.Selector)
		if err != nil {
			return nil, err
		}
		if err := f(tenant(g, r.Tenant), mm.ClientID(r.ClientID), r.Key, sel, mm.WriteToken(r.Token)); err != nil {
			return nil, err
		}
		return api.Empty{}, nil
	}
}

func replicas(g *generation, rs []mm.Replica) ([]api.Replica, error) {
	out := make([]api.Replica, 0, len(rs))
	for _, r := range rs {
		a := api.Replica{ID: r.ID, Kind: r.Kind.String(), Status: r.Status.String(), SegmentID: uint32(r.Segment),
			Address: r.Address, Size: r.Size, ClientID: uint64(r.Client)}
		if r.Segment != mm.NoSegment {
			name, err := g.m.SegmentName(r.Segment)
			if err != nil {
				return nil, err
			}
			a.Segment = name
		}
		out = append(out, a)
	}
	return out, nil
}

func get(g *generation, r *api.KeyRequest) (any, error) {
	rs, err := tenant(g, r.Tenant).GetReplicaList(r.Key)
	if err != nil {
		return nil, err
	}
	reps, err := replicas(g, rs)
	if err != nil {
		return nil, err
	}
	return api.GetResponse{Replicas: reps}, nil
}

func exist(g *generation, r *api.KeyRequest) (any, error) {
	ok, err := tenant(g, r.Tenant).Exist(r.Key)
	if err != nil {
		return nil, err
	}
	return api.ExistResponse{Exists: ok}, nil
}

func remove(g *generation, r *api.RemoveRequest) (any, error) {
	if err := tenant(g, r.Tenant).Remove(r.Key, r.Force); err != nil {
		return nil, err
	}
	return api.Empty{}, nil
}

func softPin(g *generation, r *api.KeyRequest) (any, error) {
	d, ok, err := tenant(g, r.Tenant).SoftPinDeadline(r.Key)
	if err != nil {
		return nil, err
	}
	return api.SoftPinResponse{Pinned: ok, DeadlineMs: uint64(d)}, nil
}

// groupError is one group's failure: the library's code and name, and a
// short message of the server's. The library's message for an entry
// repeats the group's index and id (quoted, escaped), which made a retain
// of 350 000 empty ids (1 MiB) answer 42 MB: the id is in the result
// already, so an entry's answer stays about the size of its request.
func groupError(err error) *api.Error {
	if err == nil {
		return nil
	}
	var me *mm.Error
	if !errors.As(err, &me) {
		_, body := errorBody(err)
		return &body
	}
	msg := me.Code.String()
	switch me.Code {
	case mm.CodeInvalidParams:
		msg = "empty, or holds NUL"
	case mm.CodeInvalidUTF8:
		msg = "not UTF-8"
	case mm.CodeGroupRetentionFull:
		msg = "--max-retained-groups reached"
	}
	return &api.Error{Code: int32(me.Code), Name: me.Code.String(), Message: msg}
}

func retain(g *generation, r *api.RetainRequest) (any, error) {
	ttl, err := millisDuration("ttl_ms", r.TTLMs)
	if err != nil {
		return nil, err
	}
	rs, err := tenant(g, r.Tenant).RetainGroups(r.Groups, ttl)
	if err != nil {
		return nil, err
	}
	out := api.GroupsResponse{Results: make([]api.GroupResult, len(rs))}
	for i, res := range rs {
		out.Results[i] = api.GroupResult{Group: r.Groups[i], DeadlineMs: uint64(res.Deadline), Error: groupError(res.Err)}
	}
	return out, nil
}

func release(g *generation, r *api.ReleaseRequest) (any, error) {
	errs, err := tenant(g, r.Tenant).ReleaseGroups(r.Groups)
	if err != nil {
		return nil, err
	}
	out := api.GroupsResponse{Results: make([]api.GroupResult, len(errs))}
	for i, e := range errs {
		out.Results[i] = api.GroupResult{Group: r.Groups[i], Error: groupError(e)}
	}
	return out, nil
}

func snapshot(g *generation, _ *api.Empty) (any, error) {
	b, err := g.m.Snapshot()
	if err != nil {
		return nil, err
	}
	return &api.SnapshotResponse{Snapshot: b}, nil
}
