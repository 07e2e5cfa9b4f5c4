package mooncakemeta

// Snapshots: serialise a master to bytes or to a file, and restore one
// (or the newest valid of several candidates) into a master.

/*
#include <stdlib.h>
#include "mooncake_meta.h"
*/
import "C"

import (
	"runtime"
	"time"
	"unsafe"
)

// RestoreReport is what a restore did.
type RestoreReport struct {
	// Candidate is the index, in the caller's list, of the candidate that
	// was restored (0 for Restore).
	Candidate int
	// CreatedAt is the restored snapshot's creation instant, on the
	// timeline of the master that took it.
	CreatedAt Instant
	// ObjectsRestored is the number of objects restored.
	ObjectsRestored uint64
	// ObjectsDropped is the number of objects dropped by the survival rule
	// (nothing COMPLETE, or neither a live lease, an active soft pin nor a
	// hard pin).
	ObjectsDropped uint64
	// ReplicasDropped is the number of PROCESSING replicas dropped.
	ReplicasDropped uint64
	// SoftPinsRestored is the number of surviving active soft pins.
	SoftPinsRestored uint64
	// SoftPinsNormalised is the number of expired deadlines normalised to
	// none.
	SoftPinsNormalised uint64
	// CandidatesRejected is the number of candidates rejected before the
	// winner (newer ones that failed to validate or could not be read).
	CandidatesRejected uint64
	// ClockShift is how far every stored instant (leases, soft-pin
	// deadlines, write starts) was moved onto this master's timeline
	// before the survival rule ran: its ClockSkew now minus the skew the
	// snapshot recorded at capture, so a lifetime ends at the same wall
	// time (docs/CONTRACT.md §1, §6). 0 for equal skews, always the case
	// between manual clocks whose walls were never set apart, and for
	// snapshots of format 1, which record no wall. Saturates at the range
	// of a time.Duration.
	ClockShift time.Duration
}

func restoreReportFrom(r *C.mooncake_meta_restore_report) RestoreReport {
	return RestoreReport{
		Candidate:          int(r.candidate),
		CreatedAt:          Instant(r.created_at),
		ObjectsRestored:    uint64(r.objects_restored),
		ObjectsDropped:     uint64(r.objects_dropped),
		ReplicasDropped:    uint64(r.replicas_dropped),
		SoftPinsRestored:   uint64(r.soft_pins_restored),
		SoftPinsNormalised: uint64(r.soft_pins_normalised),
		CandidatesRejected: uint64(r.candidates_rejected),
		ClockShift:         millisSigned(r.clock_shift_ms),
	}
}

// Snapshot serialises the master: a consistent cut, deterministic for a
// given state, soft-pin deadlines kept (docs/CONTRACT.md §6).
func (m *Master) Snapshot() ([]byte, error) {
	p, err := m.acquire()
	if err != nil {
		return nil, err
	}
	defer m.release()
	var b *C.mooncake_meta_bytes
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_snapshot(p, &b, &cerr), &cerr); err != nil {
		return nil, err
	}
	return takeBytes(b), nil
}

// SaveSnapshot serialises the master to the file at path atomically (a
// temporary file, synced and renamed over path): a crash leaves the old
// file or the new one. An I/O failure is ErrSerializeFail and leaves path
// as it was.
func (m *Master) SaveSnapshot(path string) error {
	cpath, err := newCString("path", path)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(cpath))
	p, err := m.acquire()
	if err != nil {
		return err
	}
	defer m.release()
	var cerr *C.mooncake_meta_error
	return takeError(C.mooncake_meta_snapshot_save(p, cpath, &cerr), &cerr)
}

// Restore replaces the master's whole state with the snapshot in data,
// atomically, applying the survival rule at the master clock's now. A
// snapshot that does not validate is ErrDeserializeFail with the reason,
// and the master is unchanged.
func (m *Master) Restore(data []byte) (RestoreReport, error) {
	p, err := m.acquire()
	if err != nil {
		return RestoreReport{}, err
	}
	defer m.release()
	var out C.mooncake_meta_restore_report
	out.struct_size = C.uint32_t(unsafe.Sizeof(out))
	var cerr *C.mooncake_meta_error
	// data holds no Go pointers, so it may be passed directly.
	st := C.mooncake_meta_restore(p, (*C.uint8_t)(unsafe.SliceData(data)), C.size_t(len(data)), &out, &cerr)
	if err := takeError(st, &cerr); err != nil {
		return RestoreReport{}, err
	}
	return restoreReportFrom(&out), nil
}

// RestoreCandidates restores the newest (by stored creation instant; ties
// in list order) of candidates that validates; the report's Candidate says
// which. If none validates (or none is given) it is ErrDeserializeFail
// giving each candidate's reason, and the master is unchanged.
func (m *Master) RestoreCandidates(candidates ...[]byte) (RestoreReport, error) {
	n := len(candidates)
	// The array of pointers lives in C memory; the byte slices it points
	// to are Go memory, pinned for the call as cgo requires of Go pointers
	// stored in C memory.
	var datas **C.uint8_t
	if n > 0 {
		datas = (**C.uint8_t)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof((*C.uint8_t)(nil)))))
		defer C.free(unsafe.Pointer(datas))
	}
	var pinner runtime.Pinner
	defer pinner.Unpin()
	ptrs := unsafe.Slice(datas, n)
	lens := make([]C.size_t, n)
	for i, c := range candidates {
		if len(c) > 0 {
			d := unsafe.SliceData(c)
			pinner.Pin(d)
			ptrs[i] = (*C.uint8_t)(unsafe.Pointer(d))
		}
		lens[i] = C.size_t(len(c))
	}
	p, err := m.acquire()
	if err != nil {
		return RestoreReport{}, err
	}
	defer m.release()
	var out C.mooncake_meta_restore_report
	out.struct_size = C.uint32_t(unsafe.Sizeof(out))
	var cerr *C.mooncake_meta_error
	st := C.mooncake_meta_restore_candidates(p, datas, unsafe.SliceData(lens), C.size_t(n), &out, &cerr)
	if err := takeError(st, &cerr); err != nil {
		return RestoreReport{}, err
	}
	return restoreReportFrom(&out), nil
}

// RestoreFiles is RestoreCandidates over snapshot files; a file that
// cannot be read counts as a failed candidate.
func (m *Master) RestoreFiles(paths ...string) (RestoreReport, error) {
	cpaths, err := newCStrings("paths", paths)
	if err != nil {
		return RestoreReport{}, err
	}
	defer cpaths.free()
	p, err := m.acquire()
	if err != nil {
		return RestoreReport{}, err
	}
	defer m.release()
	var out C.mooncake_meta_restore_report
	out.struct_size = C.uint32_t(unsafe.Sizeof(out))
	var cerr *C.mooncake_meta_error
	st := C.mooncake_meta_restore_files(p, cpaths.ptr, C.size_t(len(paths)), &out, &cerr)
	if err := takeError(st, &cerr); err != nil {
		return RestoreReport{}, err
	}
	return restoreReportFrom(&out), nil
}
