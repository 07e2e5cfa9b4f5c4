package main

import (
	"bytes"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvcache-ai/libmooncake_meta/go/ha"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server"
)

func TestFlagDefaults(t *testing.T) {
	o, err := parseFlags([]string{"--node-name", "n1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.listen != "127.0.0.1:7480" || o.journalBytes != DefaultJournalCapacityBytes || o.maxRequestBytes != server.DefaultMaxRequestBytes ||
		o.sessionTTL != 10*time.Second || o.etcdEndpoints != "127.0.0.1:2379" {
		t.Fatalf("defaults %+v", o)
	}
	if o.readTimeout != server.DefaultReadTimeout || o.answerTimeout != server.DefaultAnswerTimeout || o.idleTimeout != server.DefaultIdleTimeout {
		t.Fatalf("timeout defaults %+v", o)
	}
	if o, err := parseFlags([]string{"--node-name", "n1", "--read-timeout", "1s", "--answer-timeout", "2s", "--idle-timeout", "3s"}, io.Discard); err != nil ||
		o.readTimeout != time.Second || o.answerTimeout != 2*time.Second || o.idleTimeout != 3*time.Second {
		t.Fatalf("timeout flags: %+v, %v", o, err)
	}
	if o.snapshotDir != filepath.Join("mooncake-meta-data", "snapshots") || o.snapshotInterval != ha.DefaultSnapshotInterval ||
		o.snapshotEveryBytes != ha.DefaultSnapshotEveryBytes || o.snapshotKeep != ha.DefaultSnapshotKeep {
		t.Fatalf("snapshot defaults %+v", o)
	}
	if o, err := parseFlags([]string{"--node-name", "n1", "--data-dir", "/d", "--snapshot-dir", "/s"}, io.Discard); err != nil || o.snapshotDir != "/s" {
		t.Fatalf("--snapshot-dir: %+v, %v", o, err)
	}
	if o, err := parseFlags([]string{"--node-name", "n1", "--data-dir", "/d"}, io.Discard); err != nil || o.snapshotDir != "/d/snapshots" {
		t.Fatalf("--data-dir: %+v, %v", o, err)
	}
	c, err := o.masterConfig()
	if err != nil || !c.Standby || c.JournalCapacityBytes != DefaultJournalCapacityBytes || c.CommitPresized {
		t.Fatalf("master config %+v, %v", c, err)
	}
	if o, err := parseFlags([]string{"--node-name", "n1", "--expected-objects", "10000", "--commit-presized"}, io.Discard); err != nil {
		t.Fatalf("--commit-presized: %v", err)
	} else if c, err := o.masterConfig(); err != nil || !c.CommitPresized || c.ExpectedObjects != 10000 {
		t.Fatalf("--commit-presized: master config %+v, %v", c, err)
	}
	if o, err = parseFlags([]string{"--listen", "127.0.0.1:9000"}, io.Discard); err != nil || !strings.HasSuffix(o.name, ":9000") {
		t.Fatalf("default node name %q, %v", o.name, err)
	}
}

func TestBadFlagsAreRefused(t *testing.T) {
	for _, args := range [][]string{
		{"--listen", "nowhere"},
		{"--tls-cert", "c.pem"},
		{"--tls-client-ca", "ca.pem"},
		{"--etcd-key", "k.pem"},
		{"--max-request-bytes", "0"},
		{"--journal-capacity-bytes", "0"},
		{"--write-timeout", "0s"},
		{"--read-timeout", "0s"},
		{"--answer-timeout", "-1s"},
		{"--idle-timeout", "0s"},
		{"--session-ttl", "soon"},
		{"--snapshot-interval", "0s"},
		{"--snapshot-every-bytes", "-1"},
		{"--snapshot-keep", "0"},
		{"--data-dir", ""},
		{"extra"},
	} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
	o, err := parseFlags([]string{"--shard-count", "0"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.masterConfig(); err == nil {
		t.Error("--shard-count 0 accepted")
	}
	if code := run([]string{"--log-level", "loud"}, io.Discard); code != 2 {
		t.Errorf("run with a bad --log-level = %d, want 2", code)
	}
}

// --session-ttl and --max-batch-bytes are checked by parseFlags, before
// any etcd call: an explicit 0 is refused (not replaced by the library's
// default), as is a negative, fractional or out-of-range value, with a
// message naming the flag and the accepted range.
func TestSessionTTLAndMaxBatchBytesOutOfRangeAreRefusedNamingTheFlag(t *testing.T) {
	ttlRange := "whole number of seconds >= 1s"
	batchRange := "[" + strconv.Itoa(ha.MinMaxBatchBytes) + ", " + strconv.Itoa(ha.MaxMaxBatchBytes) + "]"
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--session-ttl", "0s"}, []string{"--session-ttl 0s", ttlRange}},
		{[]string{"--session-ttl", "0"}, []string{"--session-ttl 0s", ttlRange}},
		{[]string{"--session-ttl", "-1s"}, []string{"--session-ttl -1s", ttlRange}},
		{[]string{"--session-ttl", "500ms"}, []string{"--session-ttl 500ms", ttlRange}},
		{[]string{"--session-ttl", "1500ms"}, []string{"--session-ttl 1.5s", ttlRange}},
		{[]string{"--max-batch-bytes", "0"}, []string{"--max-batch-bytes 0", batchRange}},
		{[]string{"--max-batch-bytes", "-5"}, []string{"--max-batch-bytes -5", batchRange}},
		{[]string{"--max-batch-bytes", strconv.Itoa(ha.MinMaxBatchBytes - 1)}, []string{"--max-batch-bytes " + strconv.Itoa(ha.MinMaxBatchBytes-1), batchRange}},
		{[]string{"--max-batch-bytes", strconv.Itoa(ha.MaxMaxBatchBytes + 1)}, []string{"--max-batch-bytes " + strconv.Itoa(ha.MaxMaxBatchBytes+1), batchRange}},
	} {
		_, err := parseFlags(append([]string{"--node-name", "n1"}, c.args...), io.Discard)
		if err == nil {
			t.Errorf("parseFlags(%q) accepted", c.args)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("parseFlags(%q) = %q, want it to say %q", c.args, err, w)
			}
		}
	}
	// The bounds themselves are accepted, and kept as given.
	for _, c := range []struct {
		args  []string
		ttl   time.Duration
		batch int
	}{
		{[]string{"--session-ttl", "1s", "--max-batch-bytes", strconv.Itoa(ha.MinMaxBatchBytes)}, time.Second, ha.MinMaxBatchBytes},
		{[]string{"--session-ttl", "3s", "--max-batch-bytes", strconv.Itoa(ha.MaxMaxBatchBytes)}, 3 * time.Second, ha.MaxMaxBatchBytes},
		{nil, ha.DefaultSessionTTL, ha.DefaultMaxBatchBytes},
	} {
		o, err := parseFlags(append([]string{"--node-name", "n1"}, c.args...), io.Discard)
		if err != nil || o.sessionTTL != c.ttl || o.maxBatchBytes != c.batch {
			t.Errorf("parseFlags(%q) = %+v, %v; want session TTL %v, max batch bytes %d", c.args, o, err, c.ttl, c.batch)
		}
	}
	// run refuses them as a usage error (exit 2), before it dials etcd:
	// the endpoint here is never listened on.
	for _, bad := range [][]string{{"--session-ttl", "0s"}, {"--session-ttl", "-1s"}, {"--max-batch-bytes", "0"}} {
		var stderr bytes.Buffer
		args := append([]string{"--node-name", "n1", "--listen", "127.0.0.1:0", "--etcd-endpoints", "127.0.0.1:1", "--data-dir", t.TempDir()}, bad...)
		code := run(args, &stderr)
		if code != 2 || !strings.HasPrefix(stderr.String(), "mooncake-meta-server: "+bad[0]+" ") || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("run(%q) = %d, stderr %q; want 2 and one line naming %s", bad, code, stderr.String(), bad[0])
		}
	}
}
