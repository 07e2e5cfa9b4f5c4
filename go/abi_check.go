package mooncakemeta

// Compile-time checks that the constants this package spells out in Go
// (so that godoc shows their values) equal the header's: an index other
// than 0 into a one-element array does not compile.

/*
#include "mooncake_meta.h"
*/
import "C"

var (
	_ = [1]struct{}{}[CodeOK-C.MOONCAKE_META_OK]
	_ = [1]struct{}{}[MaxReplicasPerPool-C.MOONCAKE_META_MAX_REPLICAS_PER_POOL]
	_ = [1]struct{}{}[MaxExpectedObjects-C.MOONCAKE_META_MAX_EXPECTED_OBJECTS]
	_ = [1]struct{}{}[MaxJournalCapacityBytes-C.MOONCAKE_META_MAX_JOURNAL_CAPACITY_BYTES]
	_ = [1]struct{}{}[CodeInternalError-C.MOONCAKE_META_INTERNAL_ERROR]
	_ = [1]struct{}{}[CodeSegmentNotFound-C.MOONCAKE_META_SEGMENT_NOT_FOUND]
	_ = [1]struct{}{}[CodeSegmentAlreadyExists-C.MOONCAKE_META_SEGMENT_ALREADY_EXISTS]
	_ = [1]struct{}{}[CodeNoAvailableHandle-C.MOONCAKE_META_NO_AVAILABLE_HANDLE]
	_ = [1]struct{}{}[CodeInvalidParams-C.MOONCAKE_META_INVALID_PARAMS]
	_ = [1]struct{}{}[CodeIllegalClient-C.MOONCAKE_META_ILLEGAL_CLIENT]
	_ = [1]struct{}{}[CodeInvalidWrite-C.MOONCAKE_META_INVALID_WRITE]
	_ = [1]struct{}{}[CodeReplicaIsNotReady-C.MOONCAKE_META_REPLICA_IS_NOT_READY]
	_ = [1]struct{}{}[CodeObjectNotFound-C.MOONCAKE_META_OBJECT_NOT_FOUND]
	_ = [1]struct{}{}[CodeObjectAlreadyExists-C.MOONCAKE_META_OBJECT_ALREADY_EXISTS]
	_ = [1]struct{}{}[CodeObjectHasLease-C.MOONCAKE_META_OBJECT_HAS_LEASE]
	_ = [1]struct{}{}[CodeObjectHasReplicationTask-C.MOONCAKE_META_OBJECT_HAS_REPLICATION_TASK]
	_ = [1]struct{}{}[CodeObjectNoReplicationTask-C.MOONCAKE_META_OBJECT_NO_REPLICATION_TASK]
	_ = [1]struct{}{}[CodeReplicaNotFound-C.MOONCAKE_META_REPLICA_NOT_FOUND]
	_ = [1]struct{}{}[CodeReplicaIsGone-C.MOONCAKE_META_REPLICA_IS_GONE]
	_ = [1]struct{}{}[CodeObjectReplicaBusy-C.MOONCAKE_META_OBJECT_REPLICA_BUSY]
	_ = [1]struct{}{}[CodeUnavailableInCurrentStatus-C.MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS]
	_ = [1]struct{}{}[CodeSerializeFail-C.MOONCAKE_META_SERIALIZE_FAIL]
	_ = [1]struct{}{}[CodeDeserializeFail-C.MOONCAKE_META_DESERIALIZE_FAIL]
	_ = [1]struct{}{}[CodeNullArgument-C.MOONCAKE_META_NULL_ARGUMENT]
	_ = [1]struct{}{}[CodeInvalidUTF8-C.MOONCAKE_META_INVALID_UTF8]
	_ = [1]struct{}{}[CodeBufferTooSmall-C.MOONCAKE_META_BUFFER_TOO_SMALL]
	_ = [1]struct{}{}[CodeStructSizeUnsupported-C.MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED]
	_ = [1]struct{}{}[CodeUnknownFlags-C.MOONCAKE_META_UNKNOWN_FLAGS]
	_ = [1]struct{}{}[CodePanic-C.MOONCAKE_META_PANIC]
	_ = [1]struct{}{}[CodeStaleWriteToken-C.MOONCAKE_META_STALE_WRITE_TOKEN]
	_ = [1]struct{}{}[CodeClockUnsupported-C.MOONCAKE_META_CLOCK_UNSUPPORTED]
	_ = [1]struct{}{}[CodeGroupRetentionFull-C.MOONCAKE_META_GROUP_RETENTION_FULL]
	_ = [1]struct{}{}[CodeJournalOverrun-C.MOONCAKE_META_JOURNAL_OVERRUN]
	_ = [1]struct{}{}[NoSegment-C.MOONCAKE_META_NO_SEGMENT]
	_ = [1]struct{}{}[PoolMemory-C.MOONCAKE_META_POOL_MEMORY]
	_ = [1]struct{}{}[PoolNofSSD-C.MOONCAKE_META_POOL_NOF_SSD]
	_ = [1]struct{}{}[ReplicaMemory-C.MOONCAKE_META_REPLICA_MEMORY]
	_ = [1]struct{}{}[ReplicaNofSSD-C.MOONCAKE_META_REPLICA_NOF_SSD]
	_ = [1]struct{}{}[ReplicaLocalDisk-C.MOONCAKE_META_REPLICA_LOCAL_DISK]
	_ = [1]struct{}{}[ReplicaProcessing-C.MOONCAKE_META_REPLICA_PROCESSING]
	_ = [1]struct{}{}[ReplicaComplete-C.MOONCAKE_META_REPLICA_COMPLETE]
	_ = [1]struct{}{}[SelectMemory-C.MOONCAKE_META_SELECT_MEMORY]
	_ = [1]struct{}{}[SelectNofSSD-C.MOONCAKE_META_SELECT_NOF_SSD]
	_ = [1]struct{}{}[SelectAll-C.MOONCAKE_META_SELECT_ALL]
	_ = [1]struct{}{}[Preserve-C.MOONCAKE_META_SOFT_PIN_PRESERVE]
	_ = [1]struct{}{}[Enable-C.MOONCAKE_META_SOFT_PIN_ENABLE]
	_ = [1]struct{}{}[Disable-C.MOONCAKE_META_SOFT_PIN_DISABLE]
)
