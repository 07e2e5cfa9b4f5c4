package mooncakemeta

// Metrics of one master: the scalar struct and the Prometheus text.

/*
#include "mooncake_meta.h"
*/
import "C"

import (
	"math"
	"time"
	"unsafe"
)

// Metrics holds every scalar metric of one master. Each value is read
// atomically, but the set is not one atomic cut. Counters start at 0 when
// the master is created and only grow: they are not part of a snapshot,
// and a restore keeps them.
type Metrics struct {
	// KeyCount is the number of objects stored (master_key_count).
	KeyCount uint64
	// SoftPinKeyCount is the number of objects with a committed soft-pin
	// deadline, expired-but-not-yet-normalised ones included
	// (master_soft_pin_key_count).
	SoftPinKeyCount uint64
	// MemoryCapacityBytes is the capacity of the memory segments.
	MemoryCapacityBytes uint64
	// MemoryAllocatedBytes is the bytes allocated in memory segments,
	// discarded buffers included.
	MemoryAllocatedBytes uint64
	// NofSSDCapacityBytes is the capacity of the second-pool segments.
	NofSSDCapacityBytes uint64
	// NofSSDAllocatedBytes is the bytes allocated in second-pool segments.
	NofSSDAllocatedBytes uint64
	// DiscardedStagingBytes is the bytes of discarded buffers waiting for
	// their release instant.
	DiscardedStagingBytes uint64
	// PutStartFailures counts starts rejected with NO_AVAILABLE_HANDLE.
	PutStartFailures uint64
	// EvictionAttempts counts eviction runs.
	EvictionAttempts uint64
	// EvictionSuccesses counts eviction runs that freed something.
	EvictionSuccesses uint64
	// EvictedKeys counts evicted objects.
	EvictedKeys uint64
	// EvictedBytes counts evicted bytes.
	EvictedBytes uint64
	// CleanupCycles counts soft-pin cleanup cycles.
	CleanupCycles uint64
	// CleanupPopped counts index entries popped by cleanup.
	CleanupPopped uint64
	// CleanupStaleDropped counts popped entries dropped as stale.
	CleanupStaleDropped uint64
	// CleanupExpired counts soft pins expired by cleanup.
	CleanupExpired uint64
	// CleanupLastDuration is the duration of the last cleanup cycle.
	CleanupLastDuration time.Duration
	// CleanupLongestHold is the longest deadline-index lock hold (registrations are sampled: one hold in 32, and every one that starts a heap chunk).
	CleanupLongestHold time.Duration
	// IndexHeapSize is the number of deadline heap entries, stale ones
	// included.
	IndexHeapSize uint64
	// IndexLiveRegistrations is the number of live deadline
	// registrations.
	IndexLiveRegistrations uint64
	// MaintenanceTaskPanics counts maintenance tasks that panicked (caught).
	MaintenanceTaskPanics uint64
	// SweptWrites counts stale writes swept.
	SweptWrites uint64
	// SegmentCount is the number of mounted segments.
	SegmentCount uint64
	// ClockSkew is the master's timeline minus the wall clock
	// (master_clock_skew_ms): how far the wall has stepped or drifted from
	// the master's instants since it was created. It moves with the wall,
	// never a lifetime (docs/CONTRACT.md §1); always 0 on a manual clock
	// unless SetWallTime set the wall apart. A standby takes its primary's
	// skew with each snapshot, reset or timeline record it installs (§12.1).
	// Saturates at the range of a time.Duration (about 292 years either
	// way).
	ClockSkew time.Duration
	// RetainedGroupCount is the number of groups with a committed
	// retention deadline (master_retained_group_count; converges to the
	// actively retained ones within one cleanup interval).
	RetainedGroupCount uint64
	// JournalRecordsAppended is the number of change-journal records
	// appended (master_journal_records_appended_total); every journal figure is
	// 0 without a journal (docs/CONTRACT.md §12).
	JournalRecordsAppended uint64
	// JournalBytesHeld is what the journal holds now, bytes
	// (master_journal_bytes_held).
	JournalBytesHeld uint64
	// JournalRecordsDropped is the number of records dropped unreleased:
	// the journal full, a record larger than its capacity, or a journaling
	// standby's numbering moved (master_journal_records_dropped_total).
	JournalRecordsDropped uint64
	// JournalLastSeq is the sequence of the last record appended
	// (master_journal_last_seq).
	JournalLastSeq uint64
	// JournalReleasedSeq is the highest sequence the consumer released
	// (master_journal_released_seq).
	JournalReleasedSeq uint64
	// Standby says the master is a standby (master_standby).
	Standby bool
	// JournalAppliedSeq is the last journal sequence applied, or installed
	// by a restore (master_journal_applied_seq; 0 = none).
	JournalAppliedSeq uint64
}

// Metrics returns every scalar metric of the master.
func (m *Master) Metrics() (Metrics, error) {
	p, err := m.acquire()
	if err != nil {
		return Metrics{}, err
	}
	defer m.release()
	var s C.mooncake_meta_metrics_snapshot
	s.struct_size = C.uint32_t(unsafe.Sizeof(s))
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_metrics(p, &s, &cerr), &cerr); err != nil {
		return Metrics{}, err
	}
	return Metrics{
		KeyCount:               uint64(s.key_count),
		SoftPinKeyCount:        uint64(s.soft_pin_key_count),
		MemoryCapacityBytes:    uint64(s.memory_capacity_bytes),
		MemoryAllocatedBytes:   uint64(s.memory_allocated_bytes),
		NofSSDCapacityBytes:    uint64(s.nof_ssd_capacity_bytes),
		NofSSDAllocatedBytes:   uint64(s.nof_ssd_allocated_bytes),
		DiscardedStagingBytes:  uint64(s.discarded_staging_bytes),
		PutStartFailures:       uint64(s.put_start_failures),
		EvictionAttempts:       uint64(s.eviction_attempts),
		EvictionSuccesses:      uint64(s.eviction_successes),
		EvictedKeys:            uint64(s.evicted_keys),
		EvictedBytes:           uint64(s.evicted_bytes),
		CleanupCycles:          uint64(s.cleanup_cycles),
		CleanupPopped:          uint64(s.cleanup_popped),
		CleanupStaleDropped:    uint64(s.cleanup_stale_dropped),
		CleanupExpired:         uint64(s.cleanup_expired),
		CleanupLastDuration:    nanos(s.cleanup_last_duration_ns),
		CleanupLongestHold:     nanos(s.cleanup_longest_hold_ns),
		IndexHeapSize:          uint64(s.index_heap_size),
		IndexLiveRegistrations: uint64(s.index_live_registrations),
		MaintenanceTaskPanics:  uint64(s.maintenance_task_panics),
		SweptWrites:            uint64(s.swept_writes),
		SegmentCount:           uint64(s.segment_count),
		ClockSkew:              millisSigned(s.clock_skew_ms),
		RetainedGroupCount:     uint64(s.retained_group_count),
		JournalRecordsAppended: uint64(s.journal_records_appended),
		JournalBytesHeld:       uint64(s.journal_bytes_held),
		JournalRecordsDropped:  uint64(s.journal_records_dropped),
		JournalLastSeq:         uint64(s.journal_last_seq),
		JournalReleasedSeq:     uint64(s.journal_released_seq),
		Standby:                s.standby != 0,
		JournalAppliedSeq:      uint64(s.journal_applied_seq),
	}, nil
}

// MetricsPrometheus returns the metrics as Prometheus text exposition
// (format 0.0.4) with upstream-style names, per-segment capacity and usage
// included.
func (m *Master) MetricsPrometheus() (string, error) {
	p, err := m.acquire()
	if err != nil {
		return "", err
	}
	defer m.release()
	var b *C.mooncake_meta_bytes
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_metrics_prometheus(p, &b, &cerr), &cerr); err != nil {
		return "", err
	}
	return string(takeBytes(b)), nil
}

// millisSigned converts a signed millisecond count to a Duration,
// saturating at the range of a Duration.
func millisSigned(ms C.int64_t) time.Duration {
	const limit = math.MaxInt64 / int64(time.Millisecond)
	switch v := int64(ms); {
	case v > limit:
		return math.MaxInt64
	case v < -limit:
		return math.MinInt64
	default:
		return time.Duration(v) * time.Millisecond
	}
}

// takeBytes copies a library-owned buffer into Go memory and frees it.
func takeBytes(b *C.mooncake_meta_bytes) []byte {
	defer C.mooncake_meta_bytes_free(b)
	n := int(C.mooncake_meta_bytes_len(b))
	out := make([]byte, n)
	if n > 0 {
		copy(out, unsafe.Slice((*byte)(unsafe.Pointer(C.mooncake_meta_bytes_data(b))), n))
	}
	return out
}
