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
		if bad[1] == above && err != nil && !strings.Contains(err.Error(), "RLIMIT_NOFILE") {
			t.Errorf("parseFlags(%q) = %v, want it to name RLIMIT_NOFILE", bad, err)
		}
		var stderr bytes.Buffer
		args := append([]string{"--node-name", "n1", "--listen", "127.0.0.1:0", "--etcd-endpoints", "127.0.0.1:1", "--data-dir", t.TempDir()}, bad...)
		if code := run(args, &stderr); code != 2 || !strings.HasPrefix(stderr.String(), "mooncake-meta-server: "+bad[0]+" ") {
			t.Errorf("run(%q) = %d, stderr %q; want 2 naming %s", bad, code, stderr.String(), bad[0])
		}
	}
}
