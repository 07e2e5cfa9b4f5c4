package main

import (
	"io"
	"path/filepath"
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
