package mooncakemeta

// Replica descriptors and the small enumerations of the C ABI: replica
// kinds and statuses, segment pools, End/Revoke selectors, client ids and
// write tokens.

/*
#include "mooncake_meta.h"
*/
import "C"

import (
	"fmt"
	"math"
)

// ClientID identifies a client (a segment owner or a writer).
type ClientID uint64

// SegmentID identifies a mounted segment within a master.
type SegmentID uint32

// NoSegment is the SegmentID of a LOCAL_DISK replica, which lives on no
// segment.
const NoSegment SegmentID = math.MaxUint32

// WriteToken names one write (one PutStart or UpsertStart). Passing it to
// End/Revoke makes a call meant for an older write of the same key fail
// with ErrStaleWriteToken instead of acting on the current one.
type WriteToken uint64

// NoToken names no write: End/Revoke then act on whatever write is in
// flight, as upstream Mooncake does.
const NoToken WriteToken = 0

// Pool is the pool a segment belongs to.
type Pool uint32

// The segment pools.
const (
	// PoolMemory holds MEMORY replicas; it is what eviction frees.
	PoolMemory Pool = 0
	// PoolNofSSD is the second pool (upstream NOF_SSD).
	PoolNofSSD Pool = 1
)

// String returns "MEMORY" or "NOF_SSD".
func (p Pool) String() string {
	switch p {
	case PoolMemory:
		return "MEMORY"
	case PoolNofSSD:
		return "NOF_SSD"
	}
	return fmt.Sprintf("Pool(%d)", uint32(p))
}

// ReplicaKind is where a replica's data lives.
type ReplicaKind uint32

// The replica kinds.
const (
	// ReplicaMemory is a buffer in a memory segment.
	ReplicaMemory ReplicaKind = 0
	// ReplicaNofSSD is a buffer in a second-pool segment.
	ReplicaNofSSD ReplicaKind = 1
	// ReplicaLocalDisk is a copy on a client's local disk.
	ReplicaLocalDisk ReplicaKind = 2
)

// String returns "MEMORY", "NOF_SSD" or "LOCAL_DISK".
func (k ReplicaKind) String() string {
	switch k {
	case ReplicaMemory:
		return "MEMORY"
	case ReplicaNofSSD:
		return "NOF_SSD"
	case ReplicaLocalDisk:
		return "LOCAL_DISK"
	}
	return fmt.Sprintf("ReplicaKind(%d)", uint32(k))
}

// ReplicaStatus is a replica's lifecycle state.
type ReplicaStatus uint32

// The replica statuses.
const (
	// ReplicaProcessing: being written; not readable.
	ReplicaProcessing ReplicaStatus = 0
	// ReplicaComplete: written; readable while its segment is mounted.
	ReplicaComplete ReplicaStatus = 1
)

// String returns "PROCESSING" or "COMPLETE".
func (s ReplicaStatus) String() string {
	switch s {
	case ReplicaProcessing:
		return "PROCESSING"
	case ReplicaComplete:
		return "COMPLETE"
	}
	return fmt.Sprintf("ReplicaStatus(%d)", uint32(s))
}

// Selector chooses the replicas an End or Revoke acts on.
type Selector uint32

// The End/Revoke selectors.
const (
	// SelectMemory selects MEMORY replicas.
	SelectMemory Selector = 0
	// SelectNofSSD selects NOF_SSD replicas.
	SelectNofSSD Selector = 1
	// SelectAll selects MEMORY and NOF_SSD replicas.
	SelectAll Selector = 2
)

// Replica describes one replica of an object.
type Replica struct {
	// ID is unique within the master.
	ID uint64
	// Kind says where the data lives.
	Kind ReplicaKind
	// Status is PROCESSING or COMPLETE.
	Status ReplicaStatus
	// Segment holds a buffer replica; NoSegment for LOCAL_DISK.
	Segment SegmentID
	// Address is a buffer replica's address in its segment; 0 for
	// LOCAL_DISK.
	Address uint64
	// Size is the object's size in bytes.
	Size uint64
	// Client holds a LOCAL_DISK replica; 0 for buffer replicas.
	Client ClientID
}

func replicaFrom(r *C.mooncake_meta_replica) Replica {
	return Replica{
		ID:      uint64(r.id),
		Kind:    ReplicaKind(r.kind),
		Status:  ReplicaStatus(r.status),
		Segment: SegmentID(r.segment_id),
		Address: uint64(r.address),
		Size:    uint64(r.size),
		Client:  ClientID(r.client),
	}
}

func replicasFrom(rs []C.mooncake_meta_replica) []Replica {
	out := make([]Replica, len(rs))
	for i := range rs {
		out[i] = replicaFrom(&rs[i])
	}
	return out
}
