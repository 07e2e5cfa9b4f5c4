package main

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/kvcache-ai/libmooncake_meta/go/ha/server"
)

// --max-connections defaults to min(4096, the descriptors the process may
// open less a reserve), --max-call-entries, --max-heavy-requests and
// --max-snapshot-requests to the server's defaults; each is passed on.
func TestLimitFlagDefaults(t *testing.T) {
	o, err := parseFlags([]string{"--node-name", "n1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	limit := server.MaxConnectionsLimit()
	if o.maxConnections != min(4096, limit) || o.maxConnections != server.DefaultMaxConnections() || o.maxConnections < 1 {
		t.Errorf("--max-connections default %d, want min(4096, %d)", o.maxConnections, limit)
	}
	if o.maxEntries != server.DefaultMaxCallEntries || o.maxHeavy != server.DefaultMaxHeavyRequests || o.maxSnapshotCalls != server.DefaultMaxSnapshotRequests {
		t.Errorf("defaults: --max-call-entries %d, --max-heavy-requests %d, --max-snapshot-requests %d", o.maxEntries, o.maxHeavy, o.maxSnapshotCalls)
	}
	o, err = parseFlags([]string{"--node-name", "n1", "--max-connections", "10", "--max-call-entries", "7",
		"--max-heavy-requests", "3", "--max-snapshot-requests", "1"}, io.Discard)
	if err != nil || o.maxConnections != 10 || o.maxEntries != 7 || o.maxHeavy != 3 || o.maxSnapshotCalls != 1 {
		t.Errorf("limit flags: %+v, %v", o, err)
	}
}

// Each is refused out of range, naming the flag, before any etcd call
// (run exits 2; the etcd endpoint here is never listened on).
func TestLimitFlagsOutOfRangeAreRefusedBeforeEtcd(t *testing.T) {
	above := strconv.Itoa(server.MaxConnectionsLimit() + 1)
	for _, bad := range [][]string{
		{"--max-connections", "0"},
		{"--max-connections", "-1"},
		{"--max-connections", above},
		{"--max-call-entries", "0"},
		{"--max-heavy-requests", "0"},
		{"--max-snapshot-requests", "-2"},
	} {
		_, err := parseFlags(append([]string{"--node-name", "n1"}, bad...), io.Discard)
		if err == nil || !strings.Contains(err.Error(), bad[0]+" "+bad[1]) {
			t.Errorf("parseFlags(%q) = %v, want a refusal naming %s %s", bad, err, bad[0], bad[1])
		}
		if bad[1] == above && err != nil && !strings.Contains(err.Error(), connectionLimitRule) {
			t.Errorf("parseFlags(%q) = %v, want it to state the limit's rule (%s)", bad, err, connectionLimitRule)
		}
		var stderr bytes.Buffer
		args := append([]string{"--node-name", "n1", "--listen", "127.0.0.1:0", "--etcd-endpoints", "127.0.0.1:1", "--data-dir", t.TempDir()}, bad...)
		if code := run(args, &stderr); code != 2 || !strings.HasPrefix(stderr.String(), "mooncake-meta-server: "+bad[0]+" ") {
			t.Errorf("run(%q) = %d, stderr %q; want 2 naming %s", bad, code, stderr.String(), bad[0])
		}
	}
}

// --max-connections' help and its range error state the limit's real
// rule: Go raises the soft RLIMIT_NOFILE to (one less than) the hard limit
// at start, and a limit of 512 or less keeps half, not 256, in reserve.
// They said "the RLIMIT_NOFILE soft limit less 256".
func TestMaxConnectionsTextsStateTheLimitsRule(t *testing.T) {
	for _, part := range []string{"RLIMIT_NOFILE soft limit", "Go raises it at start to the hard limit less one", "256, or half the limit when it is 512 or less"} {
		if !strings.Contains(connectionLimitRule, part) {
			t.Errorf("the rule %q does not say %q", connectionLimitRule, part)
		}
	}
	var help bytes.Buffer
	parseFlags([]string{"-h"}, &help)
	flat := strings.Join(strings.Fields(help.String()), " ")
	if !strings.Contains(flat, "-max-connections") || !strings.Contains(flat, strings.Join(strings.Fields(connectionLimitRule), " ")) ||
		strings.Contains(flat, "soft limit less 256") {
		t.Errorf("--max-connections' help does not state the rule:\n%s", help.String())
	}
	_, err := parseFlags([]string{"--node-name", "n1", "--max-connections", strconv.Itoa(server.MaxConnectionsLimit() + 1)}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), connectionLimitRule) || strings.Contains(err.Error(), "soft limit less 256") {
		t.Errorf("the range error %v does not state the rule", err)
	}
}
