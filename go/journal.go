package mooncakemeta

// The change journal and standby masters (docs/CONTRACT.md §12): a
// primary's consumer reads the journal and releases what it has stored; a
// standby applies those bytes and is promoted when the primary is gone.

/*
#include "mooncake_meta.h"
*/
import "C"

import "unsafe"

// JournalStats are the change journal's counters (all zero, CapacityBytes
// included, on a master without a journal).
type JournalStats struct {
	// CapacityBytes is the most the journal holds (Config.JournalCapacityBytes).
	CapacityBytes uint64
	// BytesHeld is what it holds now: the records' encoded bytes plus a
	// fixed overhead each, never above CapacityBytes.
	BytesHeld uint64
	// RecordsHeld is the number of records held now.
	RecordsHeld uint64
	// FirstSeq is the sequence of the oldest record held (LastSeq+1 when
	// none is).
	FirstSeq uint64
	// LastSeq is the sequence of the newest record appended (0 before any).
	LastSeq uint64
	// ReleasedUpto is the highest sequence the consumer released (0: none).
	ReleasedUpto uint64
	// DroppedUpto is the highest sequence dropped unreleased (the journal
	// full, a record larger than its capacity, or a journaling standby's
	// numbering moved; 0: none); reading from it or below is
	// ErrJournalOverrun.
	DroppedUpto uint64
	// DroppedRecords is the number of records dropped unreleased so far.
	DroppedRecords uint64
	// RecordsAppended is the number of records appended since the master
	// was created, dropped ones included.
	RecordsAppended uint64
}

// ApplyReport is what ApplyJournal did.
type ApplyReport struct {
	// RecordsApplied is the number of records this call applied.
	RecordsApplied uint64
	// RecordsSkipped is the number of records at or below the applied
	// sequence, skipped as repeats.
	RecordsSkipped uint64
	// LastSeq is the standby's applied sequence after the call.
	LastSeq uint64
}

// PromoteReport is what Promote did.
type PromoteReport struct {
	// ObjectsLeased is the number of readable objects given the recovery
	// lease.
	ObjectsLeased uint64
	// WritesInFlight is the number of writes in flight that go on on the
	// promoted master.
	WritesInFlight uint64
	// AppliedSeq is the last sequence applied before the promotion; the
	// promoted master's journal goes on after it.
	AppliedSeq uint64
}

// JournalRead reads the journal from sequence from into buf: one batch of
// as many consecutive records as fit, ready for ApplyJournal. It returns
// the batch's length and the sequence to read from next; n == 0 with next
// == from when nothing was recorded after from yet. When not even the
// first record fits it is ErrBufferTooSmall and need is the length that
// holds every record held from from (JournalReadAll grows a buffer for
// you). Reading a sequence that was dropped (the journal was full, or a
// journaling standby's numbering moved) or released is ErrJournalOverrun: resync from a snapshot. A master without
// a journal is ErrUnavailableInCurrentStatus.
func (m *Master) JournalRead(from uint64, buf []byte) (n int, next uint64, need int, err error) {
	p, err := m.acquire()
	if err != nil {
		return 0, 0, 0, err
	}
	defer m.release()
	var outLen C.size_t
	var outNext C.uint64_t
	var cerr *C.mooncake_meta_error
	// buf holds no Go pointers, so it may be passed directly.
	st := C.mooncake_meta_journal_read(p, C.uint64_t(from), (*C.uint8_t)(unsafe.SliceData(buf)), C.size_t(len(buf)), &outLen, &outNext, &cerr)
	if st == C.MOONCAKE_META_BUFFER_TOO_SMALL {
		return 0, 0, int(outLen), takeError(st, &cerr)
	}
	if err := takeError(st, &cerr); err != nil {
		return 0, 0, 0, err
	}
	return int(outLen), uint64(outNext), 0, nil
}

// JournalReadAll reads every record held from sequence from, as one batch
// (empty when nothing was recorded after from yet), and the sequence to
// read from next. Errors as JournalRead.
func (m *Master) JournalReadAll(from uint64) ([]byte, uint64, error) {
	var buf []byte
	for {
		n, next, need, err := m.JournalRead(from, buf)
		if need > len(buf) {
			// Records appended between two reads may need more room again.
			buf = make([]byte, need+need/8+256)
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		return buf[:n:n], next, nil
	}
}

// JournalRelease tells the journal the consumer has stored every record
// up to upto (inclusive): they are freed. Releasing what is already
// released or dropped is a no-op. It returns the number of records freed.
// A sequence not appended yet is ErrInvalidParams.
func (m *Master) JournalRelease(upto uint64) (uint64, error) {
	p, err := m.acquire()
	if err != nil {
		return 0, err
	}
	defer m.release()
	var freed C.uint64_t
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_journal_release(p, C.uint64_t(upto), &freed, &cerr), &cerr); err != nil {
		return 0, err
	}
	return uint64(freed), nil
}

// JournalStats returns the journal's counters.
func (m *Master) JournalStats() (JournalStats, error) {
	p, err := m.acquire()
	if err != nil {
		return JournalStats{}, err
	}
	defer m.release()
	var out C.mooncake_meta_journal_stats
	out.struct_size = C.uint32_t(unsafe.Sizeof(out))
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_journal_counters(p, &out, &cerr), &cerr); err != nil {
		return JournalStats{}, err
	}
	return JournalStats{
		CapacityBytes:   uint64(out.capacity_bytes),
		BytesHeld:       uint64(out.bytes_held),
		RecordsHeld:     uint64(out.records_held),
		FirstSeq:        uint64(out.first_seq),
		LastSeq:         uint64(out.last_seq),
		ReleasedUpto:    uint64(out.released_upto),
		DroppedUpto:     uint64(out.dropped_upto),
		DroppedRecords:  uint64(out.dropped_records),
		RecordsAppended: uint64(out.records_appended),
	}, nil
}

// ApplyJournal applies journal bytes (one batch from JournalRead, or
// several concatenated) to a standby, in sequence order. Every batch is
// decoded first: a corrupt one is ErrDeserializeFail and nothing is
// applied; records at or below the applied sequence are skipped; a gap
// after it is an error and nothing is applied. A record that does not fit
// the standby's state stops the call with an error naming it; the records
// before it stay applied (AppliedSeq says where). On a primary it is
// ErrUnavailableInCurrentStatus.
func (m *Master) ApplyJournal(records []byte) (ApplyReport, error) {
	p, err := m.acquire()
	if err != nil {
		return ApplyReport{}, err
	}
	defer m.release()
	var out C.mooncake_meta_apply_report
	out.struct_size = C.uint32_t(unsafe.Sizeof(out))
	var cerr *C.mooncake_meta_error
	// records holds no Go pointers, so it may be passed directly.
	st := C.mooncake_meta_journal_apply(p, (*C.uint8_t)(unsafe.SliceData(records)), C.size_t(len(records)), &out, &cerr)
	if err := takeError(st, &cerr); err != nil {
		return ApplyReport{}, err
	}
	return ApplyReport{
		RecordsApplied: uint64(out.records_applied),
		RecordsSkipped: uint64(out.records_skipped),
		LastSeq:        uint64(out.last_seq),
	}, nil
}

// Promote turns a standby into a primary: every readable object gets the
// recovery lease (now + KVLeaseTTL, if later than its own), maintenance
// starts, and the writes that were in flight go on (their End and Revoke
// calls succeed here). On a primary it is ErrUnavailableInCurrentStatus.
func (m *Master) Promote() (PromoteReport, error) {
	p, err := m.acquire()
	if err != nil {
		return PromoteReport{}, err
	}
	defer m.release()
	var out C.mooncake_meta_promote_report
	out.struct_size = C.uint32_t(unsafe.Sizeof(out))
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_promote(p, &out, &cerr), &cerr); err != nil {
		return PromoteReport{}, err
	}
	return PromoteReport{
		ObjectsLeased:  uint64(out.objects_leased),
		WritesInFlight: uint64(out.writes_in_flight),
		AppliedSeq:     uint64(out.applied_seq),
	}, nil
}

// StandbyState reports whether the master is a standby and the last
// journal sequence it applied (a standby) or applied before its promotion.
func (m *Master) StandbyState() (standby bool, appliedSeq uint64, err error) {
	p, err := m.acquire()
	if err != nil {
		return false, 0, err
	}
	defer m.release()
	var s C.int
	var seq C.uint64_t
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_standby_state(p, &s, &seq, &cerr), &cerr); err != nil {
		return false, 0, err
	}
	return s != 0, uint64(seq), nil
}
