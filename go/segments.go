package mooncakemeta

// Segments: mounting and unmounting the memory a client contributes, and
// naming a segment by id.

/*
#include "mooncake_meta.h"
*/
import "C"

import "unsafe"

// UnmountReport counts what an unmount dropped.
type UnmountReport struct {
	// ReplicasDropped is the number of replicas that lived on the
	// unmounted segment(s).
	ReplicasDropped uint64
	// ObjectsErased is the number of objects erased because no replica was
	// left.
	ObjectsErased uint64
}

// MountSegment mounts a segment of size bytes at base, owned by client, in
// pool, and returns its id. Mounting an identical segment again returns
// the same id; the same name with another base, size, pool or owner is
// ErrSegmentAlreadyExists; a range over bytes of a segment client has
// mounted in the same pool is ErrInvalidParams.
func (m *Master) MountSegment(client ClientID, name string, base, size uint64, pool Pool) (SegmentID, error) {
	p, err := m.acquire()
	if err != nil {
		return 0, err
	}
	defer m.release()
	np, nl := cstr(name)
	var id C.uint32_t
	var cerr *C.mooncake_meta_error
	st := C.mooncake_meta_mount_segment(p, C.uint64_t(client), np, nl, C.uint64_t(base), C.uint64_t(size), C.uint32_t(pool), &id, &cerr)
	if err := takeError(st, &cerr); err != nil {
		return 0, err
	}
	return SegmentID(id), nil
}

// UnmountSegment unmounts client's segment name: every replica on it is
// dropped and objects left without a replica are erased. An unknown name
// is ErrSegmentNotFound; another owner's segment is ErrIllegalClient.
func (m *Master) UnmountSegment(client ClientID, name string) (UnmountReport, error) {
	p, err := m.acquire()
	if err != nil {
		return UnmountReport{}, err
	}
	defer m.release()
	np, nl := cstr(name)
	var out C.mooncake_meta_unmount_report
	out.struct_size = C.uint32_t(unsafe.Sizeof(out))
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_unmount_segment(p, C.uint64_t(client), np, nl, &out, &cerr), &cerr); err != nil {
		return UnmountReport{}, err
	}
	return UnmountReport{ReplicasDropped: uint64(out.replicas_dropped), ObjectsErased: uint64(out.objects_erased)}, nil
}

// UnmountClient unmounts every segment client owns (none is fine) and
// returns the summed counts.
func (m *Master) UnmountClient(client ClientID) (UnmountReport, error) {
	p, err := m.acquire()
	if err != nil {
		return UnmountReport{}, err
	}
	defer m.release()
	var out C.mooncake_meta_unmount_report
	out.struct_size = C.uint32_t(unsafe.Sizeof(out))
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_unmount_client(p, C.uint64_t(client), &out, &cerr), &cerr); err != nil {
		return UnmountReport{}, err
	}
	return UnmountReport{ReplicasDropped: uint64(out.replicas_dropped), ObjectsErased: uint64(out.objects_erased)}, nil
}

// SegmentName returns the name of the mounted segment id; an unknown id is
// ErrSegmentNotFound.
func (m *Master) SegmentName(id SegmentID) (string, error) {
	p, err := m.acquire()
	if err != nil {
		return "", err
	}
	defer m.release()
	buf := make([]byte, 64)
	for {
		var n C.size_t
		var cerr *C.mooncake_meta_error
		st := C.mooncake_meta_segment_name(p, C.uint32_t(id), (*C.char)(unsafe.Pointer(unsafe.SliceData(buf))), C.size_t(len(buf)), &n, &cerr)
		if st == C.MOONCAKE_META_BUFFER_TOO_SMALL {
			takeError(st, &cerr)
			buf = make([]byte, int(n)+1)
			continue
		}
		if err := takeError(st, &cerr); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
}
