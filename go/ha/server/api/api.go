// Package api is the wire format of mooncake-meta-server: the request and
// response bodies of its JSON API, the error body, the paths, and the etcd
// key under which a node publishes its address. It has no cgo and no etcd
// dependency, so a client uses it without the C library.
//
// Every API call is a POST with a JSON body (Content-Type
// application/json) whose fields are all explicit: field names match
// exactly (case-sensitive), and an unknown or repeated field is refused
// (BAD_REQUEST). The body must be UTF-8, and no string escape may stand
// for a lone UTF-16 surrogate ("\udc00"): either is refused with
// INVALID_UTF8 before anything is done. A list (groups,
// preferred_segments) holds at most the server's --max-call-entries
// entries (INVALID_PARAMS beyond). Keys, tenants and group ids are UTF-8
// strings; "" (or an omitted tenant) is the default tenant. Durations are whole milliseconds
// (ttl_ms), instants are milliseconds on the master's timeline (the Unix
// epoch at its start). Write tokens and ids are unsigned 64-bit integers.
package api

// The paths. The API paths take POST only; /healthz, /role and /metrics
// take GET (and HEAD).
const (
	PathHealthz = "/healthz"
	PathRole    = "/role"
	PathMetrics = "/metrics"

	PathMount         = "/v1/segment/mount"
	PathUnmount       = "/v1/segment/unmount"
	PathPutStart      = "/v1/put/start"
	PathPutEnd        = "/v1/put/end"
	PathPutRevoke     = "/v1/put/revoke"
	PathUpsertStart   = "/v1/upsert/start"
	PathUpsertEnd     = "/v1/upsert/end"
	PathUpsertRevoke  = "/v1/upsert/revoke"
	PathGet           = "/v1/get"
	PathExist         = "/v1/exist"
	PathRemove        = "/v1/remove"
	PathSoftPin       = "/v1/softpin/deadline"
	PathRetainGroups  = "/v1/groups/retain"
	PathReleaseGroups = "/v1/groups/release"
	PathSnapshot      = "/v1/snapshot"
)

// NodesPrefix is the etcd prefix under which the nodes of a cluster
// publish themselves: <prefix>/nodes/<name> holds a NodeInfo (JSON),
// attached to a lease of the node's session TTL, so it vanishes with the
// node.
func NodesPrefix(prefix string) string { return prefix + "/nodes/" }

// NodeKey is the etcd key of node name's NodeInfo.
func NodeKey(prefix, name string) string { return NodesPrefix(prefix) + name }

// NodeInfo is what a node publishes in etcd.
type NodeInfo struct {
	// Name is the node's name (its election value).
	Name string `json:"name"`
	// URL is the base URL clients reach the node at
	// ("http://127.0.0.1:7480", "https://meta-1.example:7480").
	URL string `json:"url"`
}

// Role is the body of GET /role.
type Role struct {
	// Name is this node's name.
	Name string `json:"name"`
	// Role is "follower", "promoting", "leader" or "stopped" (between a
	// step-down and the node's restart as a follower).
	Role string `json:"role"`
	// Leader is the leader's name, "" when none is known.
	Leader string `json:"leader"`
	// LeaderURL is the leader's published URL, "" when unknown.
	LeaderURL string `json:"leader_url"`
	// AppliedSeq is the last journal sequence the master applied from etcd.
	AppliedSeq uint64 `json:"applied_seq"`
	// DurableSeq is the sequence up to which the leader's journal is in etcd.
	DurableSeq uint64 `json:"durable_seq"`
}

// Error is the body of every failed request.
type Error struct {
	// Code is the library's status code (docs/CONTRACT.md), or 0 for an
	// error of the server itself.
	Code int32 `json:"code"`
	// Name is the library's status name ("OBJECT_NOT_FOUND") or one of the
	// server's names below.
	Name string `json:"name"`
	// Message explains the failure.
	Message string `json:"message"`
	// Leader and LeaderURL name the leader on a 503 NOT_LEADER when it is
	// known, so a client can send the request there.
	Leader    string `json:"leader,omitempty"`
	LeaderURL string `json:"leader_url,omitempty"`
}

// The server's own error names (Error.Code 0).
const (
	// ErrNameBadRequest: malformed JSON, an unknown field (names match
	// exactly: "Key" is not "key"), a field given twice, a missing or bad
	// value (400).
	ErrNameBadRequest = "BAD_REQUEST"
	// ErrNameTooLarge: the body exceeds the server's --max-request-bytes (413).
	ErrNameTooLarge = "REQUEST_TOO_LARGE"
	// ErrNameMethod: the path does not take this method (405).
	ErrNameMethod = "METHOD_NOT_ALLOWED"
	// ErrNameNoRoute: no such path (404).
	ErrNameNoRoute = "NO_SUCH_PATH"
	// ErrNameUnsupportedMedia: a body that is not application/json (415).
	ErrNameUnsupportedMedia = "UNSUPPORTED_MEDIA_TYPE"
	// ErrNameNotLeader: this node does not lead (or stopped leading before
	// the change was durable: it was not acknowledged) (503).
	ErrNameNotLeader = "NOT_LEADER"
	// ErrNameNotDurable: the change was made but its durability in etcd
	// was not confirmed within the server's --write-timeout; it is not
	// acknowledged and may or may not survive a failover (503).
	ErrNameNotDurable = "NOT_DURABLE"
	// ErrNameTooManyRequests: the server already serves as many heavy
	// calls (/v1/groups/retain and /v1/groups/release:
	// --max-heavy-requests; /v1/snapshot: --max-snapshot-requests) as it
	// allows at once; nothing was done, send it again later (the answer's
	// Retry-After header says when) (429).
	ErrNameTooManyRequests = "TOO_MANY_REQUESTS"
	// ErrNameUnavailable: the server cannot answer a GET /metrics now (its
	// master is closed: the server is stopping) (503).
	ErrNameUnavailable = "UNAVAILABLE"
)

// The values of Replica.Kind, Replica.Status, MountRequest.Pool and
// EndRequest.Selector, and of ReplicateConfig.SoftPinAction.
const (
	KindMemory    = "MEMORY"
	KindNofSSD    = "NOF_SSD"
	KindLocalDisk = "LOCAL_DISK"

	StatusProcessing = "PROCESSING"
	StatusComplete   = "COMPLETE"

	SelectMemory = "MEMORY"
	SelectNofSSD = "NOF_SSD"
	SelectAll    = "ALL"

	SoftPinPreserve = "PRESERVE"
	SoftPinEnable   = "ENABLE"
	SoftPinDisable  = "DISABLE"
)

// MountRequest mounts a segment (POST /v1/segment/mount).
type MountRequest struct {
	ClientID uint64 `json:"client_id"`
	Name     string `json:"name"`
	Base     uint64 `json:"base"`
	Size     uint64 `json:"size"`
	// Pool is "MEMORY" (default when empty) or "NOF_SSD".
	Pool string `json:"pool"`
}

// MountResponse is the mounted segment's id.
type MountResponse struct {
	SegmentID uint32 `json:"segment_id"`
}

// UnmountRequest unmounts a client's segment (POST /v1/segment/unmount).
type UnmountRequest struct {
	ClientID uint64 `json:"client_id"`
	Name     string `json:"name"`
}

// UnmountResponse counts what the unmount dropped.
type UnmountResponse struct {
	ReplicasDropped uint64 `json:"replicas_dropped"`
	ObjectsErased   uint64 `json:"objects_erased"`
}

// ReplicateConfig is the write configuration of a Start (the library's
// explicit path).
type ReplicateConfig struct {
	// ReplicaNum is the number of memory replicas (0: 1, unless
	// NofSSDReplicaNum is set).
	ReplicaNum int `json:"replica_num"`
	// NofSSDReplicaNum is the number of second-pool replicas.
	NofSSDReplicaNum int `json:"nof_ssd_replica_num"`
	// HardPin hard-pins the object.
	HardPin bool `json:"hard_pin"`
	// PreferredSegments are segment names to try first.
	PreferredSegments []string `json:"preferred_segments"`
	// Group is the group the object joins at creation ("" none).
	Group string `json:"group"`
	// SoftPinAction is "PRESERVE" (default when empty), "ENABLE" or
	// "DISABLE".
	SoftPinAction string `json:"soft_pin_action"`
	// TTLMs is ENABLE's soft-pin TTL in milliseconds; omitted (null): the
	// master's default. Only with ENABLE.
	TTLMs *uint64 `json:"ttl_ms"`
}

// StartRequest is a put or upsert Start (POST /v1/put/start,
// /v1/upsert/start).
type StartRequest struct {
	Tenant   string          `json:"tenant"`
	ClientID uint64          `json:"client_id"`
	Key      string          `json:"key"`
	Size     uint64          `json:"size"`
	Config   ReplicateConfig `json:"config"`
}

// StartResponse is the write's replicas and its token.
type StartResponse struct {
	Replicas []Replica `json:"replicas"`
	Token    uint64    `json:"token"`
}

// EndRequest is an End or Revoke (POST /v1/put/end, /v1/put/revoke,
// /v1/upsert/end, /v1/upsert/revoke).
type EndRequest struct {
	Tenant   string `json:"tenant"`
	ClientID uint64 `json:"client_id"`
	Key      string `json:"key"`
	// Selector is "MEMORY", "NOF_SSD" or "ALL" (default when empty).
	Selector string `json:"selector"`
	// Token is the Start's token (0: whatever write is in flight).
	Token uint64 `json:"token"`
}

// KeyRequest names one object (POST /v1/get, /v1/exist,
// /v1/softpin/deadline).
type KeyRequest struct {
	Tenant string `json:"tenant"`
	Key    string `json:"key"`
}

// RemoveRequest removes an object (POST /v1/remove).
type RemoveRequest struct {
	Tenant string `json:"tenant"`
	Key    string `json:"key"`
	// Force removes it despite leases and pins.
	Force bool `json:"force"`
}

// Replica describes one replica.
type Replica struct {
	ID     uint64 `json:"id"`
	Kind   string `json:"kind"`
	Status string `json:"status"`
	// Segment is the segment's name ("" for LOCAL_DISK).
	Segment string `json:"segment"`
	// SegmentID is the master's id of it (4294967295 for LOCAL_DISK).
	SegmentID uint32 `json:"segment_id"`
	Address   uint64 `json:"address"`
	Size      uint64 `json:"size"`
	// ClientID holds a LOCAL_DISK replica (0 for buffer replicas).
	ClientID uint64 `json:"client_id"`
}

// GetResponse is an object's replica list (POST /v1/get).
type GetResponse struct {
	Replicas []Replica `json:"replicas"`
}

// ExistResponse says whether the object exists (POST /v1/exist).
type ExistResponse struct {
	Exists bool `json:"exists"`
}

// SoftPinResponse is an object's committed soft-pin deadline (POST
// /v1/softpin/deadline).
type SoftPinResponse struct {
	// Pinned says whether the object has a committed deadline.
	Pinned bool `json:"pinned"`
	// DeadlineMs is that deadline (0 when not pinned).
	DeadlineMs uint64 `json:"deadline_ms"`
}

// RetainRequest retains groups (POST /v1/groups/retain).
type RetainRequest struct {
	Tenant string   `json:"tenant"`
	Groups []string `json:"groups"`
	TTLMs  uint64   `json:"ttl_ms"`
}

// ReleaseRequest releases groups (POST /v1/groups/release).
type ReleaseRequest struct {
	Tenant string   `json:"tenant"`
	Groups []string `json:"groups"`
}

// GroupResult is one group's outcome: its deadline after a retain, or its
// error. A group's error carries the library's code and name and a short
// message of its own (not the call's: an answer stays proportional to
// its request).
type GroupResult struct {
	Group      string `json:"group"`
	DeadlineMs uint64 `json:"deadline_ms,omitempty"`
	Error      *Error `json:"error,omitempty"`
}

// GroupsResponse is the outcome of a retain or release, one result per
// group in request order.
type GroupsResponse struct {
	Results []GroupResult `json:"results"`
}

// SnapshotResponse is the master's snapshot (POST /v1/snapshot with an
// Accept other than application/octet-stream; with it, the body is the
// snapshot's bytes).
type SnapshotResponse struct {
	// Snapshot is the snapshot, standard base64.
	Snapshot []byte `json:"snapshot"`
}

// Empty is the body of a successful call that returns nothing.
type Empty struct{}
