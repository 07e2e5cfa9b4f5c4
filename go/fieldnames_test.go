package mooncakemeta_test

import (
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
)

// cSpelling matches the C ABI's names for configuration fields and
// arguments, which a Go error message must not use: a Go caller sets
// SoftPinTTL, not soft_pin_ttl_ms.
var cSpelling = regexp.MustCompile(`_ms\b|soft_pin|kv_|\bcfg\b|eviction_|put_start_|shard_count|manual clock start|MOONCAKE_META|mooncake_meta_`)

// Every INVALID_PARAMS a bad ReplicateConfig or Config produces names the
// Go field (and, for a bound, the Go field of the bound), and no C field.
func TestErrorsNameGoFields(t *testing.T) {
	m := newMaster(t, mm.WithMaxSoftPinTTL(time.Hour))
	ttl := func(d time.Duration) *time.Duration { return &d }
	start := func(cfg mm.ReplicateConfig) func() error {
		return func() error { _, _, err := m.PutStart(c1, "k", 4096, cfg); return err }
	}
	upsert := func(cfg mm.ReplicateConfig) func() error {
		return func() error { _, _, err := m.UpsertStart(c1, "k", 4096, cfg); return err }
	}
	batch := func(cfg mm.ReplicateConfig) func() error {
		return func() error {
			_, err := m.BatchPutStart(c1, []string{"a", "b"}, []uint64{4096, 4096}, cfg)
			return err
		}
	}
	newWith := func(o mm.Option) func() error {
		return func() error {
			m, err := mm.New(o)
			if err == nil {
				m.Close()
			}
			return err
		}
	}
	validate := func(o mm.Option) func() error {
		return func() error { c := mm.DefaultConfig(); o(&c); return c.Validate() }
	}
	for _, tc := range []struct {
		name string
		call func() error
		want []string
		code error // nil: ErrInvalidParams
	}{
		{"PutStart TTL above the master's maximum",
			start(mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: ttl(2 * time.Hour)}),
			[]string{"ReplicateConfig.SoftPinTTL", "2h0m0s", "MaxSoftPinTTL", "1h0m0s"}, nil},
		{"UpsertStart TTL above the master's maximum",
			upsert(mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: ttl(2 * time.Hour)}),
			[]string{"ReplicateConfig.SoftPinTTL", "MaxSoftPinTTL"}, nil},
		{"BatchPutStart TTL above the master's maximum",
			batch(mm.ReplicateConfig{SoftPinAction: mm.Enable, SoftPinTTL: ttl(2 * time.Hour)}),
			[]string{"ReplicateConfig.SoftPinTTL", "MaxSoftPinTTL"}, nil},
		{"PutStart TTL with Preserve",
			start(mm.ReplicateConfig{SoftPinTTL: ttl(time.Minute)}),
			[]string{"ReplicateConfig.SoftPinTTL", "Preserve", "Enable"}, nil},
		{"PutStart TTL with Disable",
			start(mm.ReplicateConfig{SoftPinAction: mm.Disable, SoftPinTTL: ttl(time.Minute)}),
			[]string{"ReplicateConfig.SoftPinTTL", "Disable", "Enable"}, nil},
		{"BatchPutStart TTL with Disable",
			batch(mm.ReplicateConfig{SoftPinAction: mm.Disable, SoftPinTTL: ttl(time.Minute)}),
			[]string{"ReplicateConfig.SoftPinTTL", "Disable"}, nil},
		{"PutStart unknown action",
			start(mm.ReplicateConfig{SoftPinAction: mm.SoftPinAction(7)}),
			[]string{"ReplicateConfig.SoftPinAction", "SoftPinAction(7)", "Preserve, Enable or Disable"}, nil},
		{"ReplicateConfig.Validate unknown action",
			func() error { return mm.ReplicateConfig{SoftPinAction: mm.SoftPinAction(3)}.Validate() },
			[]string{"ReplicateConfig.SoftPinAction", "SoftPinAction(3)"}, nil},
		{"ReplicateConfig.Validate TTL with Preserve",
			func() error { return mm.ReplicateConfig{SoftPinTTL: ttl(time.Second)}.Validate() },
			[]string{"ReplicateConfig.SoftPinTTL", "Preserve"}, nil},
		{"New default TTL above the maximum", newWith(mm.WithDefaultSoftPinTTL(25 * time.Hour)),
			[]string{"Config.DefaultSoftPinTTL", "25h0m0s", "Config.MaxSoftPinTTL", "24h0m0s"}, nil},
		{"Validate default TTL above the maximum", validate(mm.WithMaxSoftPinTTL(time.Minute)),
			[]string{"Config.DefaultSoftPinTTL", "30m0s", "Config.MaxSoftPinTTL", "1m0s"}, nil},
		{"New eviction ratio", newWith(mm.WithEvictionRatio(1.5)),
			[]string{"Config.EvictionRatio", "1.5", "[0, 1]"}, nil},
		{"Validate eviction ratio NaN", validate(mm.WithEvictionRatio(nan())),
			[]string{"Config.EvictionRatio", "NaN"}, nil},
		{"New watermark", newWith(mm.WithEvictionHighWatermarkRatio(0)),
			[]string{"Config.EvictionHighWatermarkRatio", "(0, 1]"}, nil},
		{"New release not above discard", newWith(mm.WithPutStartReleaseTimeout(30 * time.Second)),
			[]string{"Config.PutStartReleaseTimeout", "30s", "Config.PutStartDiscardTimeout"}, nil},
		{"New no shards", newWith(mm.WithShardCount(0)),
			[]string{"Config.ShardCount", "0", "[1, 1048576]"}, nil},
		{"Validate too many shards", validate(mm.WithShardCount(1<<20 + 1)),
			[]string{"Config.ShardCount", "1048577"}, nil},
		{"New too many expected objects", newWith(mm.WithExpectedObjects(mm.MaxExpectedObjects + 1)),
			[]string{"Config.ExpectedObjects", "4294967297", "4294967296"}, nil},
		{"Validate too many expected objects", validate(mm.WithExpectedObjects(^uint64(0))),
			[]string{"Config.ExpectedObjects", "18446744073709551615"}, nil},
		{"New clock at MaxInstant", newWith(mm.WithManualClock(mm.MaxInstant)),
			[]string{"Config.ClockStart", "MaxInstant"}, nil},
		{"PutStart group not UTF-8", start(mm.ReplicateConfig{Group: "g\xff"}),
			[]string{"ReplicateConfig.Group", "offset 1"}, mm.ErrInvalidUTF8},
		{"BatchPutStart group not UTF-8", batch(mm.ReplicateConfig{Group: "\xffg"}),
			[]string{"ReplicateConfig.Group", "offset 0"}, mm.ErrInvalidUTF8},
		{"PutStart preferred segment not UTF-8", start(mm.ReplicateConfig{PreferredSegments: []string{"mem0", "ab\xc3"}}),
			[]string{"ReplicateConfig.PreferredSegments[1]", "offset 2"}, mm.ErrInvalidUTF8},
		{"legacy preferred segment not UTF-8", start(mm.ReplicateConfig{WithSoftPin: true, PreferredSegments: []string{"\xff"}}),
			[]string{"ReplicateConfig.PreferredSegments[0]"}, mm.ErrInvalidUTF8},
		{"Validate preferred segment not UTF-8",
			func() error { return mm.ReplicateConfig{PreferredSegments: []string{"\xff"}}.Validate() },
			[]string{"ReplicateConfig.PreferredSegments[0]"}, mm.ErrInvalidUTF8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			code := tc.code
			if code == nil {
				code = mm.ErrInvalidParams
			}
			wantErr(t, "call", err, code)
			var e *mm.Error
			if !errors.As(err, &e) {
				t.Fatalf("%v is not an *Error", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(e.Message, w) {
					t.Errorf("message %q does not contain %q", e.Message, w)
				}
			}
			if c := cSpelling.FindString(e.Message); c != "" {
				t.Errorf("message %q uses the C spelling %q", e.Message, c)
			}
		})
	}
	// Nothing was written by the rejected calls.
	if _, err := m.GetReplicaList("k"); !errors.Is(err, mm.ErrNotFound) {
		t.Fatalf("GetReplicaList after the rejected writes: %v, want ErrNotFound", err)
	}
}

func nan() float64 {
	var zero float64
	return zero / zero
}

// A manual clock changes only the clock, in Go as in C
// (mooncake_meta_config_set_manual_clock) and Rust (ClockSource::Manual):
// the background tasks keep their intervals. Turning them off as well is
// what WithDeterministic, DeterministicConfig and Rust's
// MasterConfig::deterministic do.
func TestManualClockOnlyChangesTheClock(t *testing.T) {
	got := mm.DefaultConfig()
	mm.WithManualClock(t0)(&got)
	want := mm.DefaultConfig()
	want.ManualClock = true
	want.ClockStart = t0
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("WithManualClock gave\n%+v\nwant DefaultConfig with only the clock changed\n%+v", got, want)
	}
	if got.SoftPinCleanupInterval == 0 || got.EvictionCheckInterval == 0 || got.SweepInterval == 0 {
		t.Fatalf("WithManualClock turned a background task off: %+v", got)
	}

	det := mm.DefaultConfig()
	mm.WithDeterministic(t0)(&det)
	if !reflect.DeepEqual(det, mm.DeterministicConfig(t0)) {
		t.Fatalf("WithDeterministic gave %+v, want DeterministicConfig %+v", det, mm.DeterministicConfig(t0))
	}
	if !det.ManualClock || det.ClockStart != t0 ||
		det.SoftPinCleanupInterval != 0 || det.EvictionCheckInterval != 0 || det.SweepInterval != 0 {
		t.Fatalf("DeterministicConfig is not a manual clock with every background task off: %+v", det)
	}

	// Both are accepted by the library and read the manual clock.
	for _, o := range []mm.Option{mm.WithManualClock(t0), mm.WithDeterministic(t0)} {
		m, err := mm.New(o)
		must(t, "New", err)
		now, err := m.AdvanceTime(time.Second)
		must(t, "AdvanceTime", err)
		if now != t0+1000 {
			t.Fatalf("AdvanceTime = %d, want %d", now, t0+1000)
		}
		must(t, "Close", m.Close())
	}
}
