package mooncakemeta

// Master configuration: the Config struct, its defaults (docs/CONTRACT.md §9), the
// functional options of New, and its translation into a C config handle.

/*
#include "mooncake_meta.h"
*/
import "C"

import (
	"math"
	"time"
)

// Instant is a point on a master's timeline: milliseconds, anchored to the
// Unix epoch when the master is created and then advanced by a monotonic
// clock, so a step of the wall clock moves none of them (docs/CONTRACT.md
// §1). WallTime is the one reading of the wall clock itself. Deadlines
// saturate at MaxInstant.
type Instant uint64

// MaxInstant is the largest instant (2^63 - 1 ms); a deadline saturated to
// it never becomes due, because a manual clock can never reach it.
const MaxInstant Instant = math.MaxInt64

// MaxExpectedObjects is the largest Config.ExpectedObjects (2^32).
const MaxExpectedObjects = 1 << 32

// MaxJournalCapacityBytes is the largest Config.JournalCapacityBytes (2^40).
const MaxJournalCapacityBytes = 1 << 40

// InstantOf converts a time.Time to an Instant, truncating to the
// millisecond; times before the epoch become 0.
func InstantOf(t time.Time) Instant {
	ms := t.UnixMilli()
	if ms < 0 {
		return 0
	}
	return Instant(ms)
}

// Time converts the instant to a time.Time in UTC.
func (i Instant) Time() time.Time {
	return time.UnixMilli(int64(min(i, MaxInstant))).UTC()
}

// Add returns the instant d later, saturating at MaxInstant; d must be a
// non-negative whole number of milliseconds (anything else panics, as it
// can only come from a constant mistake in the caller).
func (i Instant) Add(d time.Duration) Instant {
	ms, err := millis("duration", d)
	if err != nil {
		panic(err)
	}
	i = min(i, MaxInstant)
	if ms > uint64(MaxInstant-i) {
		return MaxInstant
	}
	return i + Instant(ms)
}

// millis converts a duration to whole milliseconds. A negative duration or
// one that is not a whole number of milliseconds is ErrInvalidParams: the
// library counts in milliseconds, and rounding a 500µs TTL down to 0 would
// silently change its meaning.
func millis(what string, d time.Duration) (uint64, error) {
	if d < 0 {
		return 0, invalidParams("%s %v is negative", what, d)
	}
	if d%time.Millisecond != 0 {
		return 0, invalidParams("%s %v is not a whole number of milliseconds", what, d)
	}
	return uint64(d / time.Millisecond), nil
}

// Config is a master's configuration. Start from DefaultConfig (its zero
// value is not a usable configuration) and change fields, or pass Options
// to New. Durations must be whole milliseconds.
type Config struct {
	// KVLeaseTTL is the read lease that Get and Exist grant.
	KVLeaseTTL time.Duration
	// DefaultSoftPinTTL is the soft-pin lifetime of a write that asks for
	// SoftPinEnable without a TTL (and of the legacy WithSoftPin); it must
	// not exceed MaxSoftPinTTL.
	DefaultSoftPinTTL time.Duration
	// MaxSoftPinTTL is the largest soft-pin TTL a write may request.
	MaxSoftPinTTL time.Duration
	// AllowEvictSoftPinned lets eviction's second pass take protected
	// objects (actively soft-pinned, or members of a retained group) when
	// the lower bound is not reached otherwise.
	AllowEvictSoftPinned bool
	// EvictionRatio is the fraction of the eviction base evicted per run,
	// in [0, 1].
	EvictionRatio float64
	// EvictionHighWatermarkRatio is the memory usage above which eviction
	// runs, in (0, 1].
	EvictionHighWatermarkRatio float64
	// PutStartDiscardTimeout is how long a write stays young (blocking a
	// PutStart on its key).
	PutStartDiscardTimeout time.Duration
	// PutStartReleaseTimeout is how long discarded buffers are held and
	// after which stale writes are swept; it must exceed
	// PutStartDiscardTimeout.
	PutStartReleaseTimeout time.Duration
	// SoftPinCleanupInterval is the period of the background soft-pin
	// cleanup; 0 turns it off (drive it with RunCleanup).
	SoftPinCleanupInterval time.Duration
	// EvictionCheckInterval is the period of the background eviction
	// check; 0 turns it off (drive it with EvictIfNeeded or RunEviction).
	EvictionCheckInterval time.Duration
	// SweepInterval is the period of the background stale-write sweep and
	// discarded-buffer release; 0 turns it off.
	SweepInterval time.Duration
	// MaxGroupRetentionTTL is the largest TTL RetainGroups accepts (> 0).
	MaxGroupRetentionTTL time.Duration
	// MaxRetainedGroups is how many groups may be actively retained at
	// once (>= 1).
	MaxRetainedGroups uint64
	// ShardCount is the number of metadata shards, in [1, 2^20].
	ShardCount uint64
	// ExpectedObjects is how many objects (all tenants) the master expects
	// to hold; 0 (the default) means no presizing. New pre-sizes every
	// shard's object table for ceil(ExpectedObjects / ShardCount) objects,
	// so filling it up to that many never rehashes a table; more objects
	// than expected are fine. At most MaxExpectedObjects, and at most
	// 3 * 2^30 per shard (what one shard's index holds).
	ExpectedObjects uint64
	// CommitPresized, with ExpectedObjects > 0, makes New allocate every
	// shard's presized table (the records' arena and the hash index), and
	// the segment allocators' bookkeeping for that many buffers, at once,
	// in mappings advised for transparent huge pages, and make all
	// of it resident then: the master holds that memory from its creation
	// and a first write into a presized table never waits on a page fault
	// (docs/CONTRACT.md §9). Off (the default), presized tables become
	// resident as they are written. Huge pages are a request: a kernel that
	// declines them backs the mapping with base pages, still resident at
	// creation; a system that cannot give the mapping, or refuses to
	// populate it, leaves the master presized as without the setting,
	// silently. A restore stages its state the same way.
	CommitPresized bool
	// JournalCapacityBytes is how many bytes the change journal may hold;
	// 0 (the default) means no journal. With one, the master records every
	// change to its state for a standby to apply (Master.JournalRead); when
	// the consumer falls behind and the journal is full, the oldest
	// unreleased records are dropped and reading them is
	// ErrJournalOverrun. At most MaxJournalCapacityBytes.
	JournalCapacityBytes uint64
	// Standby makes the master a standby: it rejects client calls with
	// ErrUnavailableInCurrentStatus, runs no maintenance and changes only
	// through ApplyJournal and Restore, until Promote.
	Standby bool
	// FixedSeed makes the master hash keys and choose segments for its
	// placements from Seed, so both repeat from run to run and a
	// randomized test that failed replays exactly. False (the default):
	// every master draws a random seed. Leave it false in service: a
	// client that knows the seed can aim its keys at one shard.
	FixedSeed bool
	// Seed is the seed FixedSeed fixes (any value).
	Seed uint64
	// ManualClock makes the master read a manual clock starting at
	// ClockStart that moves only through SetTime and AdvanceTime, instead
	// of the system clock. It drives the timeline and the wall together
	// (ClockSkew 0) unless SetWallTime sets the wall apart (or a standby
	// takes its primary's skew, docs/CONTRACT.md §12.1). It changes
	// nothing else: the background tasks run at their intervals, against
	// the manual clock.
	ManualClock bool
	// ClockStart is the manual clock's first instant (ignored without
	// ManualClock); it must be below MaxInstant.
	ClockStart Instant
}

// DefaultConfig returns the library's documented defaults (docs/CONTRACT.md §9):
// system clock and background maintenance on.
func DefaultConfig() Config {
	return Config{
		KVLeaseTTL:                 10 * time.Second,
		DefaultSoftPinTTL:          30 * time.Minute,
		MaxSoftPinTTL:              24 * time.Hour,
		AllowEvictSoftPinned:       true,
		EvictionRatio:              0.05,
		EvictionHighWatermarkRatio: 0.90,
		PutStartDiscardTimeout:     30 * time.Second,
		PutStartReleaseTimeout:     10 * time.Minute,
		SoftPinCleanupInterval:     time.Second,
		EvictionCheckInterval:      10 * time.Millisecond,
		SweepInterval:              time.Second,
		MaxGroupRetentionTTL:       24 * time.Hour,
		MaxRetainedGroups:          65536,
		ShardCount:                 1024,
	}
}

// DeterministicConfig returns DefaultConfig with a manual clock starting at
// start, every background task off and a fixed seed (1): nothing happens
// unless the caller calls it, and the same calls place alike in every run,
// which is what tests and simulations want.
func DeterministicConfig(start Instant) Config {
	c := DefaultConfig()
	WithDeterministic(start)(&c)
	return c
}

// Option changes one field of the Config that New starts from
// (DefaultConfig).
type Option func(*Config)

// WithManualClock makes the master read a manual clock starting at start
// (Config.ManualClock and Config.ClockStart) instead of the system clock.
// It changes nothing else, as mooncake_meta_config_set_manual_clock in C
// and ClockSource::Manual in Rust: the background cleanup, eviction and
// sweep keep running at their intervals, against the manual clock. For a
// master where nothing happens unless the caller calls it, use
// WithDeterministic.
func WithManualClock(start Instant) Option {
	return func(c *Config) {
		c.ManualClock = true
		c.ClockStart = start
	}
}

// WithDeterministic makes the master read a manual clock starting at start,
// turns every background task off (SoftPinCleanupInterval,
// EvictionCheckInterval and SweepInterval 0) and fixes the seed to 1, as
// DeterministicConfig and Rust's MasterConfig::deterministic: nothing
// happens unless the caller calls it (AdvanceTime, RunCleanup,
// RunEviction), and the same calls place alike in every run, which is what
// tests and simulations want.
func WithDeterministic(start Instant) Option {
	return func(c *Config) {
		WithManualClock(start)(c)
		c.SoftPinCleanupInterval = 0
		c.EvictionCheckInterval = 0
		c.SweepInterval = 0
		WithSeed(1)(c)
	}
}

// WithSeed fixes the master's seed (Config.FixedSeed and Config.Seed).
func WithSeed(seed uint64) Option {
	return func(c *Config) {
		c.FixedSeed = true
		c.Seed = seed
	}
}

// WithKVLeaseTTL sets Config.KVLeaseTTL.
func WithKVLeaseTTL(d time.Duration) Option { return func(c *Config) { c.KVLeaseTTL = d } }

// WithDefaultSoftPinTTL sets Config.DefaultSoftPinTTL.
func WithDefaultSoftPinTTL(d time.Duration) Option {
	return func(c *Config) { c.DefaultSoftPinTTL = d }
}

// WithMaxSoftPinTTL sets Config.MaxSoftPinTTL.
func WithMaxSoftPinTTL(d time.Duration) Option { return func(c *Config) { c.MaxSoftPinTTL = d } }

// WithAllowEvictSoftPinned sets Config.AllowEvictSoftPinned.
func WithAllowEvictSoftPinned(allow bool) Option {
	return func(c *Config) { c.AllowEvictSoftPinned = allow }
}

// WithEvictionRatio sets Config.EvictionRatio.
func WithEvictionRatio(r float64) Option { return func(c *Config) { c.EvictionRatio = r } }

// WithEvictionHighWatermarkRatio sets Config.EvictionHighWatermarkRatio.
func WithEvictionHighWatermarkRatio(r float64) Option {
	return func(c *Config) { c.EvictionHighWatermarkRatio = r }
}

// WithPutStartDiscardTimeout sets Config.PutStartDiscardTimeout.
func WithPutStartDiscardTimeout(d time.Duration) Option {
	return func(c *Config) { c.PutStartDiscardTimeout = d }
}

// WithPutStartReleaseTimeout sets Config.PutStartReleaseTimeout.
func WithPutStartReleaseTimeout(d time.Duration) Option {
	return func(c *Config) { c.PutStartReleaseTimeout = d }
}

// WithSoftPinCleanupInterval sets Config.SoftPinCleanupInterval (0 = off).
func WithSoftPinCleanupInterval(d time.Duration) Option {
	return func(c *Config) { c.SoftPinCleanupInterval = d }
}

// WithEvictionCheckInterval sets Config.EvictionCheckInterval (0 = off).
func WithEvictionCheckInterval(d time.Duration) Option {
	return func(c *Config) { c.EvictionCheckInterval = d }
}

// WithSweepInterval sets Config.SweepInterval (0 = off).
func WithSweepInterval(d time.Duration) Option { return func(c *Config) { c.SweepInterval = d } }

// WithMaxGroupRetentionTTL sets Config.MaxGroupRetentionTTL.
func WithMaxGroupRetentionTTL(d time.Duration) Option {
	return func(c *Config) { c.MaxGroupRetentionTTL = d }
}

// WithMaxRetainedGroups sets Config.MaxRetainedGroups.
func WithMaxRetainedGroups(n uint64) Option { return func(c *Config) { c.MaxRetainedGroups = n } }

// WithShardCount sets Config.ShardCount.
func WithShardCount(n uint64) Option { return func(c *Config) { c.ShardCount = n } }

// WithExpectedObjects sets Config.ExpectedObjects.
func WithExpectedObjects(n uint64) Option { return func(c *Config) { c.ExpectedObjects = n } }

// WithCommitPresized sets Config.CommitPresized.
func WithCommitPresized(commit bool) Option {
	return func(c *Config) { c.CommitPresized = commit }
}

// WithJournalCapacityBytes sets Config.JournalCapacityBytes.
func WithJournalCapacityBytes(n uint64) Option {
	return func(c *Config) { c.JournalCapacityBytes = n }
}

// WithStandby sets Config.Standby.
func WithStandby(standby bool) Option { return func(c *Config) { c.Standby = standby } }

// Validate checks the configuration as master creation will (the library's
// mooncake_meta_config_validate), without creating a master; a bad field is
// ErrInvalidParams naming it.
func (c Config) Validate() error {
	return c.withHandle(func(h *C.mooncake_meta_config) error {
		var cerr *C.mooncake_meta_error
		return takeError(C.mooncake_meta_config_validate(h, &cerr), &cerr)
	})
}

// check reports the library's configuration rules in Go terms, naming the
// Config fields (the library, which checks them again at creation, names
// its C fields). Durations that are negative or not whole milliseconds
// are reported by withHandle.
func (c Config) check() error {
	if c.DefaultSoftPinTTL > c.MaxSoftPinTTL {
		return invalidParams("Config.DefaultSoftPinTTL %v exceeds Config.MaxSoftPinTTL %v", c.DefaultSoftPinTTL, c.MaxSoftPinTTL)
	}
	if !(c.EvictionRatio >= 0 && c.EvictionRatio <= 1) {
		return invalidParams("Config.EvictionRatio %v must be in [0, 1]", c.EvictionRatio)
	}
	if !(c.EvictionHighWatermarkRatio > 0 && c.EvictionHighWatermarkRatio <= 1) {
		return invalidParams("Config.EvictionHighWatermarkRatio %v must be in (0, 1]", c.EvictionHighWatermarkRatio)
	}
	if c.PutStartReleaseTimeout <= c.PutStartDiscardTimeout {
		return invalidParams("Config.PutStartReleaseTimeout %v must exceed Config.PutStartDiscardTimeout %v",
			c.PutStartReleaseTimeout, c.PutStartDiscardTimeout)
	}
	if c.MaxGroupRetentionTTL <= 0 {
		return invalidParams("Config.MaxGroupRetentionTTL %v must be > 0", c.MaxGroupRetentionTTL)
	}
	if c.MaxRetainedGroups < 1 {
		return invalidParams("Config.MaxRetainedGroups %d must be >= 1", c.MaxRetainedGroups)
	}
	if c.ShardCount < 1 || c.ShardCount > 1<<20 {
		return invalidParams("Config.ShardCount %d must be in [1, 1048576]", c.ShardCount)
	}
	if c.ExpectedObjects > MaxExpectedObjects {
		return invalidParams("Config.ExpectedObjects %d exceeds the maximum %d", c.ExpectedObjects, uint64(MaxExpectedObjects))
	}
	if c.JournalCapacityBytes > MaxJournalCapacityBytes {
		return invalidParams("Config.JournalCapacityBytes %d exceeds the maximum %d", c.JournalCapacityBytes, uint64(MaxJournalCapacityBytes))
	}
	if c.ManualClock && c.ClockStart >= MaxInstant {
		return invalidParams("Config.ClockStart %d must be below MaxInstant (%d)", uint64(c.ClockStart), uint64(MaxInstant))
	}
	return nil
}

// withHandle builds a C configuration handle holding c, runs f on it and
// frees it.
func (c Config) withHandle(f func(*C.mooncake_meta_config) error) error {
	if err := c.check(); err != nil {
		return err
	}
	var h *C.mooncake_meta_config
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_config_new(&h, &cerr), &cerr); err != nil {
		return err
	}
	defer C.mooncake_meta_config_free(h)

	type msSetter struct {
		what string
		d    time.Duration
		set  func(*C.mooncake_meta_config, C.uint64_t, **C.mooncake_meta_error) C.mooncake_meta_status
	}
	for _, s := range []msSetter{
		{"KVLeaseTTL", c.KVLeaseTTL, func(h *C.mooncake_meta_config, v C.uint64_t, e **C.mooncake_meta_error) C.mooncake_meta_status {
			return C.mooncake_meta_config_set_default_kv_lease_ttl_ms(h, v, e)
		}},
		{"DefaultSoftPinTTL", c.DefaultSoftPinTTL, func(h *C.mooncake_meta_config, v C.uint64_t, e **C.mooncake_meta_error) C.mooncake_meta_status {
			return C.mooncake_meta_config_set_default_kv_soft_pin_ttl_ms(h, v, e)
		}},
		{"MaxSoftPinTTL", c.MaxSoftPinTTL, func(h *C.mooncake_meta_config, v C.uint64_t, e **C.mooncake_meta_error) C.mooncake_meta_status {
			return C.mooncake_meta_config_set_max_kv_soft_pin_ttl_ms(h, v, e)
		}},
		{"PutStartDiscardTimeout", c.PutStartDiscardTimeout, func(h *C.mooncake_meta_config, v C.uint64_t, e **C.mooncake_meta_error) C.mooncake_meta_status {
			return C.mooncake_meta_config_set_put_start_discard_timeout_ms(h, v, e)
		}},
		{"PutStartReleaseTimeout", c.PutStartReleaseTimeout, func(h *C.mooncake_meta_config, v C.uint64_t, e **C.mooncake_meta_error) C.mooncake_meta_status {
			return C.mooncake_meta_config_set_put_start_release_timeout_ms(h, v, e)
		}},
		{"SoftPinCleanupInterval", c.SoftPinCleanupInterval, func(h *C.mooncake_meta_config, v C.uint64_t, e **C.mooncake_meta_error) C.mooncake_meta_status {
			return C.mooncake_meta_config_set_soft_pin_cleanup_interval_ms(h, v, e)
		}},
		{"EvictionCheckInterval", c.EvictionCheckInterval, func(h *C.mooncake_meta_config, v C.uint64_t, e **C.mooncake_meta_error) C.mooncake_meta_status {
			return C.mooncake_meta_config_set_eviction_check_interval_ms(h, v, e)
		}},
		{"SweepInterval", c.SweepInterval, func(h *C.mooncake_meta_config, v C.uint64_t, e **C.mooncake_meta_error) C.mooncake_meta_status {
			return C.mooncake_meta_config_set_sweep_interval_ms(h, v, e)
		}},
		{"MaxGroupRetentionTTL", c.MaxGroupRetentionTTL, func(h *C.mooncake_meta_config, v C.uint64_t, e **C.mooncake_meta_error) C.mooncake_meta_status {
			return C.mooncake_meta_config_set_max_group_retention_ttl_ms(h, v, e)
		}},
	} {
		ms, err := millis("Config."+s.what, s.d)
		if err != nil {
			return err
		}
		if err := takeError(s.set(h, C.uint64_t(ms), &cerr), &cerr); err != nil {
			return err
		}
	}
	if err := takeError(C.mooncake_meta_config_set_allow_evict_soft_pinned_objects(h, cBool(c.AllowEvictSoftPinned), &cerr), &cerr); err != nil {
		return err
	}
	if err := takeError(C.mooncake_meta_config_set_eviction_ratio(h, C.double(c.EvictionRatio), &cerr), &cerr); err != nil {
		return err
	}
	if err := takeError(C.mooncake_meta_config_set_eviction_high_watermark_ratio(h, C.double(c.EvictionHighWatermarkRatio), &cerr), &cerr); err != nil {
		return err
	}
	if err := takeError(C.mooncake_meta_config_set_shard_count(h, C.uint64_t(c.ShardCount), &cerr), &cerr); err != nil {
		return err
	}
	if err := takeError(C.mooncake_meta_config_set_max_retained_groups(h, C.uint64_t(c.MaxRetainedGroups), &cerr), &cerr); err != nil {
		return err
	}
	if err := takeError(C.mooncake_meta_config_set_expected_objects(h, C.uint64_t(c.ExpectedObjects), &cerr), &cerr); err != nil {
		return err
	}
	if err := takeError(C.mooncake_meta_config_set_commit_presized(h, cBool(c.CommitPresized), &cerr), &cerr); err != nil {
		return err
	}
	if err := takeError(C.mooncake_meta_config_set_journal_capacity_bytes(h, C.uint64_t(c.JournalCapacityBytes), &cerr), &cerr); err != nil {
		return err
	}
	if err := takeError(C.mooncake_meta_config_set_standby(h, cBool(c.Standby), &cerr), &cerr); err != nil {
		return err
	}
	if c.FixedSeed {
		if err := takeError(C.mooncake_meta_config_set_seed(h, C.uint64_t(c.Seed), &cerr), &cerr); err != nil {
			return err
		}
	}
	if c.ManualClock {
		if err := takeError(C.mooncake_meta_config_set_manual_clock(h, C.uint64_t(c.ClockStart), &cerr), &cerr); err != nil {
			return err
		}
	} else if err := takeError(C.mooncake_meta_config_set_system_clock(h, &cerr), &cerr); err != nil {
		return err
	}
	return f(h)
}

// cBool is the C ABI's 0/1 int.
func cBool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
