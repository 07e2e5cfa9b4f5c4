// Package client calls a mooncake-meta-server cluster: it finds the
// leader's URL through etcd (the leader's name from the election, its URL
// from the entry it publishes under api.NodeKey) and sends the JSON API
// calls there. A call answered 503 NOT_LEADER (the node lost or never had
// the leadership) or one whose request failed before any answer came (the
// node could not be reached, or went away) is sent once more, to the
// leader the answer named or etcd names now. A call the node answered but
// whose answer could not be read or decoded is not: it may have taken
// effect (an *AnswerError).
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/kvcache-ai/libmooncake_meta/go/ha"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server/api"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrNoLeader: the cluster has no leader now (an election is under way,
// or no node runs).
var ErrNoLeader = errors.New("client: the cluster has no leader")

// Error is a call the server refused: its HTTP status and error body.
type Error struct {
	// Status is the HTTP status.
	Status int
	// Body is the server's error body (for an answer that had none, Name
	// is the status text and Message the body).
	Body api.Error
}

func (e *Error) Error() string {
	return fmt.Sprintf("client: HTTP %d %s: %s", e.Status, e.Body.Name, e.Body.Message)
}

// AnswerError is a call the node answered (its status line arrived) with
// an answer that could not be read or decoded. The call may have taken
// effect, so it is not sent again.
type AnswerError struct {
	// URL is the call's URL.
	URL string
	// Status is the answer's HTTP status.
	Status int
	// Err is why the answer is unusable.
	Err error
}

func (e *AnswerError) Error() string {
	return fmt.Sprintf("client: %s answered HTTP %d, but the answer is unusable (the call may have taken effect): %v", e.URL, e.Status, e.Err)
}

func (e *AnswerError) Unwrap() error { return e.Err }

// Client sends calls to a cluster's leader. Its methods may be called
// from any number of goroutines.
type Client struct {
	etcd   *clientv3.Client
	prefix string
	http   *http.Client

	mu     sync.Mutex
	leader string // cached leader URL
}

// New returns a client of the cluster under prefix. httpClient carries the
// calls (its Transport holds the TLS client certificate, if any); nil is
// http.DefaultClient. The caller owns etcd.
func New(etcd *clientv3.Client, prefix string, httpClient *http.Client) (*Client, error) {
	if etcd == nil {
		return nil, errors.New("client: the etcd client is nil")
	}
	if prefix == "" || strings.HasSuffix(prefix, "/") {
		return nil, fmt.Errorf("client: prefix %q must not be empty nor end with \"/\"", prefix)
	}
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	return &Client{etcd: etcd, prefix: prefix, http: httpClient}, nil
}

// Leader looks up the cluster's leader in etcd: its name and published URL.
func (c *Client) Leader(ctx context.Context) (name, url string, err error) {
	name, ok, err := ha.Leader(ctx, c.etcd, c.prefix)
	if err != nil {
		return "", "", fmt.Errorf("client: reading the election: %w", err)
	}
	if !ok {
		return "", "", ErrNoLeader
	}
	url, err = c.NodeURL(ctx, name)
	return name, url, err
}

// NodeURL is the URL node name published.
func (c *Client) NodeURL(ctx context.Context, name string) (string, error) {
	key := api.NodeKey(c.prefix, name)
	resp, err := c.etcd.Get(ctx, key)
	if err != nil {
		return "", fmt.Errorf("client: reading %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return "", fmt.Errorf("client: node %q published no URL (%s is absent)", name, key)
	}
	var info api.NodeInfo
	if err := json.Unmarshal(resp.Kvs[0].Value, &info); err != nil || info.URL == "" {
		return "", fmt.Errorf("client: %s holds no node entry: %q", key, resp.Kvs[0].Value)
	}
	return info.URL, nil
}

// Prefer makes url (a node's base URL, from configuration or an earlier
// answer) the first node the next call tries; if it does not lead, the
// call goes on to the leader as usual.
func (c *Client) Prefer(url string) { c.setCached(url) }

func (c *Client) cached() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leader
}

func (c *Client) setCached(url string) {
	c.mu.Lock()
	c.leader = url
	c.mu.Unlock()
}

// Call posts req (JSON) to path on the leader and decodes the answer into
// resp (nil: discarded). A refusal is an *Error.
//
// A NOT_LEADER answer means nothing was acknowledged, but a change the
// deposed leader had already shipped may still be in etcd, and a node
// that went away before answering may have made the change first: the
// retried call can then find its first attempt's effect (a Start answered
// OBJECT_ALREADY_EXISTS). NOT_DURABLE is never retried, nor is an answer
// that could not be read or decoded (an *AnswerError).
func (c *Client) Call(ctx context.Context, path string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("client: encoding the request: %w", err)
	}
	url := c.cached()
	if url == "" {
		if _, url, err = c.Leader(ctx); err != nil {
			return err
		}
	}
	err = c.post(ctx, url, path, body, resp)
	var next string
	var ae *Error
	var unusable *AnswerError
	switch {
	case err == nil:
		c.setCached(url)
		return nil
	case errors.As(err, &unusable):
		return err
	case errors.As(err, &ae):
		if ae.Status != http.StatusServiceUnavailable || ae.Body.Name != api.ErrNameNotLeader {
			c.setCached(url)
			return err
		}
		next = ae.Body.LeaderURL
		if next == "" && ae.Body.Leader != "" {
			next, _ = c.NodeURL(ctx, ae.Body.Leader)
		}
	case ctx.Err() != nil:
		return err
	}
	// Not the leader, or no answer: once more, to the leader named.
	c.setCached("")
	if next == "" {
		var lerr error
		if _, next, lerr = c.Leader(ctx); lerr != nil {
			return errors.Join(err, lerr)
		}
	}
	if err := c.post(ctx, next, path, body, resp); err != nil {
		return err
	}
	c.setCached(next)
	return nil
}

func (c *Client) post(ctx context.Context, base, path string, body []byte, resp any) error {
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	r.Header.Set("Content-Type", "application/json")
	res, err := c.http.Do(r)
	if err != nil {
		// No answer: the only error Call sends again.
		return fmt.Errorf("client: %s: %w", base+path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return &AnswerError{URL: base + path, Status: res.StatusCode, Err: fmt.Errorf("reading it: %w", err)}
	}
	if res.StatusCode != http.StatusOK {
		e := &Error{Status: res.StatusCode}
		if jerr := json.Unmarshal(data, &e.Body); jerr != nil || e.Body.Name == "" {
			e.Body.Name, e.Body.Message = http.StatusText(res.StatusCode), strings.TrimSpace(string(data))
		}
		return e
	}
	if resp == nil {
		return nil
	}
	if err := json.Unmarshal(data, resp); err != nil {
		return &AnswerError{URL: base + path, Status: res.StatusCode, Err: fmt.Errorf("decoding it: %w", err)}
	}
	return nil
}
