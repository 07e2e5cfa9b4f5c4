package mooncakemeta

// Deterministic maintenance: soft-pin cleanup, eviction, the stale-write
// sweep and the release of discarded buffers, for masters whose background
// intervals are 0 (or to force a run).

/*
#include "mooncake_meta.h"
*/
import "C"

import (
	"math"
	"time"
	"unsafe"
)

// CleanupStats is what one soft-pin cleanup cycle did.
type CleanupStats struct {
	// Popped is the number of index entries popped (valid and stale).
	Popped uint64
	// StaleDropped is the number of popped entries dropped because a newer
	// registration had replaced them.
	StaleDropped uint64
	// Expired is the number of soft pins cleared.
	Expired uint64
	// Batches is the number of index-lock holds that popped entries.
	Batches uint64
	// ShardsTouched is the number of shard locks taken.
	ShardsTouched uint64
	// LongestIndexHold is the longest deadline-index lock hold this master
	// has seen so far.
	LongestIndexHold time.Duration
	// Duration is the cycle's wall time on a monotonic clock.
	Duration time.Duration
}

// EvictionReport is what one eviction run did.
type EvictionReport struct {
	// Base is the eviction base: non-hard-pinned objects with an evictable
	// memory replica (objects, not bytes).
	Base uint64
	// Candidates is the number of base objects whose lease was not live.
	Candidates uint64
	// Evicted is the number of objects whose memory replicas were freed.
	Evicted uint64
	// EvictedBytes is the number of bytes those evictions freed.
	EvictedBytes uint64
	// EvictedPinned is how many of Evicted the second pass took while they
	// were protected (their own soft pin or their group's retention active).
	EvictedPinned uint64
	// DiscardedReleased is the number of discarded buffers this run
	// released.
	DiscardedReleased uint64
	// Normalised is the number of expired soft-pin deadlines cleared while
	// examining candidates.
	Normalised uint64
}

func cleanupStatsFrom(s *C.mooncake_meta_cleanup_stats) CleanupStats {
	return CleanupStats{
		Popped:           uint64(s.popped),
		StaleDropped:     uint64(s.stale_dropped),
		Expired:          uint64(s.expired),
		Batches:          uint64(s.batches),
		ShardsTouched:    uint64(s.shards_touched),
		LongestIndexHold: nanos(s.longest_index_hold_ns),
		Duration:         nanos(s.duration_ns),
	}
}

// nanos converts a nanosecond count to a Duration, saturating.
func nanos(ns C.uint64_t) time.Duration {
	if uint64(ns) > math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(ns)
}

func evictionReportFrom(r *C.mooncake_meta_eviction_report) EvictionReport {
	return EvictionReport{
		Base:              uint64(r.base),
		Candidates:        uint64(r.candidates),
		Evicted:           uint64(r.evicted),
		EvictedBytes:      uint64(r.evicted_bytes),
		EvictedPinned:     uint64(r.evicted_pinned),
		DiscardedReleased: uint64(r.discarded_released),
		Normalised:        uint64(r.normalised),
	}
}

// RunCleanup runs one soft-pin expiration cleanup cycle at the master
// clock's now: every committed deadline that is due is cleared.
func (m *Master) RunCleanup() (CleanupStats, error) {
	p, err := m.acquire()
	if err != nil {
		return CleanupStats{}, err
	}
	defer m.release()
	var out C.mooncake_meta_cleanup_stats
	out.struct_size = C.uint32_t(unsafe.Sizeof(out))
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_run_cleanup(p, &out, &cerr), &cerr); err != nil {
		return CleanupStats{}, err
	}
	return cleanupStatsFrom(&out), nil
}

// RunCleanupAt runs a cleanup cycle treating at as now (deadlines <= at
// are due); the clock does not move. at above MaxInstant is
// ErrInvalidParams.
func (m *Master) RunCleanupAt(at Instant) (CleanupStats, error) {
	p, err := m.acquire()
	if err != nil {
		return CleanupStats{}, err
	}
	defer m.release()
	var out C.mooncake_meta_cleanup_stats
	out.struct_size = C.uint32_t(unsafe.Sizeof(out))
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_run_cleanup_at(p, C.uint64_t(at), &out, &cerr), &cerr); err != nil {
		return CleanupStats{}, err
	}
	return cleanupStatsFrom(&out), nil
}

// RunEviction runs one eviction (docs/CONTRACT.md §5) at the master clock's now
// with explicit target and lowerbound fractions of the eviction base, each
// in [0, 1] (anything else is ErrInvalidParams and nothing runs).
func (m *Master) RunEviction(target, lowerbound float64) (EvictionReport, error) {
	p, err := m.acquire()
	if err != nil {
		return EvictionReport{}, err
	}
	defer m.release()
	var out C.mooncake_meta_eviction_report
	out.struct_size = C.uint32_t(unsafe.Sizeof(out))
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_run_eviction(p, C.double(target), C.double(lowerbound), &out, &cerr), &cerr); err != nil {
		return EvictionReport{}, err
	}
	return evictionReportFrom(&out), nil
}

// EvictIfNeeded applies the eviction trigger: it evicts if memory usage is
// above the high watermark, or, with force, if the eviction ratio is
// positive (what an allocation failure does). ran reports whether a run
// happened; the report is zero when it did not. On a standby it never runs
// (ran is false, no error): a standby runs no maintenance.
func (m *Master) EvictIfNeeded(force bool) (report EvictionReport, ran bool, err error) {
	p, err := m.acquire()
	if err != nil {
		return EvictionReport{}, false, err
	}
	defer m.release()
	var out C.mooncake_meta_eviction_report
	out.struct_size = C.uint32_t(unsafe.Sizeof(out))
	var cran C.int
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_evict_if_needed(p, cBool(force), &cran, &out, &cerr), &cerr); err != nil {
		return EvictionReport{}, false, err
	}
	if cran == 0 {
		return EvictionReport{}, false, nil
	}
	return evictionReportFrom(&out), true, nil
}

// RunMaintenanceTick runs every maintenance task once at the master
// clock's now: the eviction trigger, soft-pin cleanup, the stale-write
// sweep and the release of due discarded buffers.
func (m *Master) RunMaintenanceTick() error {
	p, err := m.acquire()
	if err != nil {
		return err
	}
	defer m.release()
	var cerr *C.mooncake_meta_error
	return takeError(C.mooncake_meta_run_maintenance_tick(p, &cerr), &cerr)
}

// SweepStaleWritesAt sweeps the writes that are stale at at (put start +
// release timeout < at) and returns how many; the clock does not move.
func (m *Master) SweepStaleWritesAt(at Instant) (uint64, error) {
	p, err := m.acquire()
	if err != nil {
		return 0, err
	}
	defer m.release()
	var n C.uint64_t
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_sweep_stale_writes_at(p, C.uint64_t(at), &n, &cerr), &cerr); err != nil {
		return 0, err
	}
	return uint64(n), nil
}

// ReleaseDiscardedAt frees the discarded buffers whose release instant is
// <= at and returns how many; the clock does not move.
func (m *Master) ReleaseDiscardedAt(at Instant) (uint64, error) {
	p, err := m.acquire()
	if err != nil {
		return 0, err
	}
	defer m.release()
	var n C.uint64_t
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_release_discarded_at(p, C.uint64_t(at), &n, &cerr), &cerr); err != nil {
		return 0, err
	}
	return uint64(n), nil
}
