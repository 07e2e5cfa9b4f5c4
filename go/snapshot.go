package mooncakemeta

// Snapshots: serialise a master to bytes or to a file, and restore one
// (or the newest valid of several candidates) into a master.

/*
#include <stdlib.h>
#include "mooncake_meta.h"
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
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
	// before the survival rule ran (0 on a standby, which installs a
	// snapshot verbatim): its ClockSkew now minus the skew the
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
// temporary file, synced and renamed over path, then the directory
// synced): a crash leaves the old file or the new one. An I/O failure is
// ErrSerializeFail; one before the rename leaves path as it was, but a
// failure to sync the directory after it leaves path holding the new
// snapshot, which a crash may still undo (the message says so). A symbolic
// link at path is followed (its target is replaced); a directory, device,
// pipe or socket there is refused with ErrSerializeFail before anything is
// written. A replaced file's owner, group and read/write/execute bits
// carry over (an owner or group the process may not set stays its own,
// and then the group bits are cleared; never set-user-ID, set-group-ID or
// sticky); a new file is created 0600 (less the umask): a snapshot holds
// every tenant's keys.
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
// atomically. A primary applies the survival rule at its clock's now,
// after moving the snapshot's instants onto its timeline (ClockShift). A
// standby installs the snapshot verbatim, with no survival rule and no
// shift (ClockShift 0), takes the snapshot's skew (on the system clock its
// Now moves to its primary's timeline; a manual clock's wall is set apart)
// and resumes its journal after the snapshot's journal sequence; a standby that keeps a journal of its own refuses a
// snapshot that carries none (docs/CONTRACT.md §12.3). A snapshot that
// does not validate, or is refused, is ErrDeserializeFail with the
// reason, and the master is unchanged.
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
// cannot be read counts as a failed candidate. Only a regular file whose
// header says it is a snapshot of exactly its length is read whole:
// anything else fails after its header. Files are read one at a time,
// newest first (by the creation instant their first bytes state), each
// only once the newer ones failed, so a restore holds one in memory.
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

// SnapshotJournalSeq reads the last change-journal sequence a snapshot
// (the bytes of Snapshot or SaveSnapshot) includes, from its header
// alone: 0 for a snapshot that records none (formats 1 to 3, and format
// 5 — a snapshot with writes in flight, tasks or discarded buffers —
// of a master without journal; docs/CONTRACT.md §6). A standby restored from it resumes at that
// sequence + 1 (§12.3). It checks the frame (magic, version, flags, the
// payload length, the CRC-32 of the payload) but not the rest: Restore
// validates the whole image. A frame that does not check is
// ErrDeserializeFail with the reason.
func SnapshotJournalSeq(data []byte) (uint64, error) {
	const header = 28
	bad := func(format string, args ...any) (uint64, error) {
		return 0, &Error{Code: CodeDeserializeFail, Message: "snapshot header: " + fmt.Sprintf(format, args...)}
	}
	if len(data) < header {
		return bad("truncated: %d of %d bytes", len(data), header)
	}
	if string(data[:8]) != "\x89MCMETA\n" {
		return bad("bad magic % x: not a mooncake_meta snapshot", data[:8])
	}
	le := binary.LittleEndian
	version, flags := le.Uint32(data[8:]), le.Uint32(data[12:])
	if version < 1 || version > 5 {
		return bad("unsupported format version %d (this reads 1 to 5)", version)
	}
	if flags != 0 {
		return bad("unknown flags %#x (must be 0)", flags)
	}
	payload := data[header:]
	if n := le.Uint64(data[16:]); n != uint64(len(payload)) {
		return bad("the header declares a %d-byte payload, %d present", n, len(payload))
	}
	if stored, sum := le.Uint32(data[24:]), crc32.ChecksumIEEE(payload); stored != sum {
		return bad("payload checksum mismatch: the header says %08x, the payload hashes to %08x", stored, sum)
	}
	if version < 4 {
		return 0, nil
	}
	// created_at and three counters, then the wall clock as opt<u64>,
	// then journal_seq (formats 4 and 5 alike).
	at := 32
	if len(payload) < at+1 {
		return bad("truncated payload: %d bytes", len(payload))
	}
	switch payload[at] {
	case 0:
		at++
	case 1:
		at += 9
	default:
		return bad("bad wall_at_capture tag %d", payload[at])
	}
	if len(payload) < at+8 {
		return bad("truncated payload: %d bytes", len(payload))
	}
	seq := le.Uint64(payload[at:])
	if seq == 0 && version == 4 {
		return bad("format 4 with journal_seq 0")
	}
	return seq, nil
}
