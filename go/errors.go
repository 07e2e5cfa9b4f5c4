package mooncakemeta

// Status codes of the C ABI as Go values, the *Error type every failed call
// returns, and one sentinel per code for errors.Is.

/*
#include <stdlib.h>
#include "mooncake_meta.h"
*/
import "C"

import (
	"errors"
	"fmt"
)

// Code is a status code of the C ABI (mooncake_meta_status): 0 for success
// or one of the stable negative codes, the upstream Mooncake values where
// upstream has one.
type Code int32

// The status codes of the C ABI, with the values of include/mooncake_meta.h.
const (
	CodeOK                         Code = 0
	CodeInternalError              Code = -1
	CodeSegmentNotFound            Code = -101
	CodeSegmentAlreadyExists       Code = -102
	CodeNoAvailableHandle          Code = -200
	CodeInvalidParams              Code = -600
	CodeIllegalClient              Code = -601
	CodeInvalidWrite               Code = -700
	CodeReplicaIsNotReady          Code = -703
	CodeObjectNotFound             Code = -704
	CodeObjectAlreadyExists        Code = -705
	CodeObjectHasLease             Code = -706
	CodeObjectHasReplicationTask   Code = -708
	CodeObjectNoReplicationTask    Code = -709
	CodeReplicaNotFound            Code = -710
	CodeReplicaIsGone              Code = -712
	CodeObjectReplicaBusy          Code = -714
	CodeUnavailableInCurrentStatus Code = -1010
	CodeSerializeFail              Code = -1501
	CodeDeserializeFail            Code = -1502
	CodeNullArgument               Code = -9001
	CodeInvalidUTF8                Code = -9002
	CodeBufferTooSmall             Code = -9003
	CodeStructSizeUnsupported      Code = -9004
	CodeUnknownFlags               Code = -9005
	CodePanic                      Code = -9006
	CodeStaleWriteToken            Code = -9007
	CodeClockUnsupported           Code = -9008
	CodeGroupRetentionFull         Code = -9009
	CodeJournalOverrun             Code = -9010
)

// String returns the code's name as the linked library spells it without
// the MOONCAKE_META_ prefix ("OBJECT_NOT_FOUND"), or "UNKNOWN_STATUS(n)"
// for a code the library does not define.
func (c Code) String() string {
	name := C.GoString(C.mooncake_meta_status_name(C.mooncake_meta_status(c)))
	if name == "UNKNOWN_STATUS" {
		return fmt.Sprintf("UNKNOWN_STATUS(%d)", int32(c))
	}
	return name
}

// Error is a failed call: the library's status code and its message. A bad
// Config or ReplicateConfig field is reported by this package before any C
// call, naming the Go field ("ReplicateConfig.SoftPinTTL 2h0m0s exceeds the
// master's Config.MaxSoftPinTTL 1h0m0s"); other messages come from the
// library and name the C function and argument. Compare an Error with the
// sentinels using errors.Is: any *Error matches the sentinel of its code.
type Error struct {
	// Code is the status the call returned.
	Code Code
	// Message explains the failure; empty on the sentinels themselves.
	Message string
}

// Error formats the error as "mooncakemeta: CODE: message".
func (e *Error) Error() string {
	if e.Message == "" {
		return "mooncakemeta: " + e.Code.String()
	}
	return "mooncakemeta: " + e.Code.String() + ": " + e.Message
}

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, ErrNotFound) holds for every OBJECT_NOT_FOUND failure
// whatever its message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t != nil && t.Code == e.Code
}

// Sentinels, one per status code, for errors.Is. They are *Error values
// without a message; never modify them.
var (
	// ErrInternal: an internal invariant failed (a bug in the library).
	ErrInternal = &Error{Code: CodeInternalError}
	// ErrSegmentNotFound: the named segment is not mounted.
	ErrSegmentNotFound = &Error{Code: CodeSegmentNotFound}
	// ErrSegmentAlreadyExists: a segment with that name is already mounted.
	ErrSegmentAlreadyExists = &Error{Code: CodeSegmentAlreadyExists}
	// ErrNoAvailableHandle: no segment had room for the requested replicas.
	ErrNoAvailableHandle = &Error{Code: CodeNoAvailableHandle}
	// ErrInvalidParams: an argument or configuration value breaks a
	// documented rule (also returned by this package's own checks, such as
	// a soft-pin TTL that is not a whole number of milliseconds).
	ErrInvalidParams = &Error{Code: CodeInvalidParams}
	// ErrIllegalClient: the caller is not the object's current writer.
	ErrIllegalClient = &Error{Code: CodeIllegalClient}
	// ErrInvalidWrite: a Revoke that matches no write in flight, or a
	// selected replica not PROCESSING; an End with no write in flight whose
	// selected kinds hold a copy, move or promotion target not COMPLETE.
	ErrInvalidWrite = &Error{Code: CodeInvalidWrite}
	// ErrReplicaNotReady: the object has no readable replica yet, or (from
	// a Remove, forced or not) a replica of it is not COMPLETE: a write in
	// flight, or a copy, move or promotion target.
	ErrReplicaNotReady = &Error{Code: CodeReplicaIsNotReady}
	// ErrNotFound: no object with that key.
	ErrNotFound = &Error{Code: CodeObjectNotFound}
	// ErrAlreadyExists: the object exists, or a young write holds the key.
	ErrAlreadyExists = &Error{Code: CodeObjectAlreadyExists}
	// ErrHasLease: a live read lease blocks the operation.
	ErrHasLease = &Error{Code: CodeObjectHasLease}
	// ErrHasReplicationTask: a copy/move/promotion task is running on the
	// key.
	ErrHasReplicationTask = &Error{Code: CodeObjectHasReplicationTask}
	// ErrNoReplicationTask: no copy/move/promotion task is running on the
	// key.
	ErrNoReplicationTask = &Error{Code: CodeObjectNoReplicationTask}
	// ErrReplicaNotFound: the named replica does not exist.
	ErrReplicaNotFound = &Error{Code: CodeReplicaNotFound}
	// ErrReplicaGone: the source or target replica vanished during a task.
	ErrReplicaGone = &Error{Code: CodeReplicaIsGone}
	// ErrReplicaBusy is reserved (upstream's code) and never returned: a
	// replica is busy only through a copy, move or promotion, which every
	// operation reports as ErrHasReplicationTask, or, while the task's
	// target is not COMPLETE, Remove as ErrReplicaNotReady and an End with
	// no write in flight as ErrInvalidWrite.
	ErrReplicaBusy = &Error{Code: CodeObjectReplicaBusy}
	// ErrUnavailableInCurrentStatus: the operation is not available in the
	// object's or the master's current state (on a standby; a master out
	// of ids, docs/CONTRACT.md §6; a memory replica already there for a
	// promotion; a write in flight for AddLocalDiskReplica).
	ErrUnavailableInCurrentStatus = &Error{Code: CodeUnavailableInCurrentStatus}
	// ErrSerializeFail: a snapshot could not be written.
	ErrSerializeFail = &Error{Code: CodeSerializeFail}
	// ErrDeserializeFail: a snapshot could not be read (corrupt, truncated
	// or of an unknown version).
	ErrDeserializeFail = &Error{Code: CodeDeserializeFail}
	// ErrNullArgument: a required pointer was NULL (a bug in this package
	// if it ever surfaces).
	ErrNullArgument = &Error{Code: CodeNullArgument}
	// ErrInvalidUTF8: a string argument was not valid UTF-8.
	ErrInvalidUTF8 = &Error{Code: CodeInvalidUTF8}
	// ErrBufferTooSmall: a caller buffer was too small (handled inside this
	// package, which retries with the size the library asks for).
	ErrBufferTooSmall = &Error{Code: CodeBufferTooSmall}
	// ErrStructSizeUnsupported: a size-versioned struct's size is not one
	// the linked library accepts (header and library out of step).
	ErrStructSizeUnsupported = &Error{Code: CodeStructSizeUnsupported}
	// ErrUnknownFlags: a flags field has bits the library does not know.
	ErrUnknownFlags = &Error{Code: CodeUnknownFlags}
	// ErrPanic: the library panicked; the master is poisoned and only
	// Close still works on it.
	ErrPanic = &Error{Code: CodePanic}
	// ErrStaleWriteToken: End/Revoke with a write token that is not the
	// current write's.
	ErrStaleWriteToken = &Error{Code: CodeStaleWriteToken}
	// ErrClockUnsupported: a manual-clock call on a system-clock master, or
	// setting the clock backwards.
	ErrClockUnsupported = &Error{Code: CodeClockUnsupported}
	// ErrGroupRetentionFull: a group that is not retained cannot be, since
	// Config.MaxRetainedGroups groups are (retained groups may still
	// extend).
	ErrGroupRetentionFull = &Error{Code: CodeGroupRetentionFull}
	// ErrJournalOverrun: a change-journal read asked for records that were
	// dropped before the consumer released them (the journal full, a record
	// larger than its capacity, or a journaling standby's numbering moved)
	// or were released; the consumer must resync from a snapshot.
	ErrJournalOverrun = &Error{Code: CodeJournalOverrun}
)

// ErrClosed is returned by every call on a Master after Close whose
// arguments pass the checks the method makes in Go before the library.
var ErrClosed = errors.New("mooncakemeta: master is closed")

// invalidParams is this package's own INVALID_PARAMS, raised before any C
// call.
func invalidParams(format string, args ...any) error {
	return &Error{Code: CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// takeError turns a C status and the error object the call may have left
// in *cerr into a Go error (nil for MOONCAKE_META_OK), copying the message,
// freeing the C object and resetting *cerr to nil so the variable can be
// reused for the next call.
func takeError(status C.mooncake_meta_status, cerr **C.mooncake_meta_error) error {
	ce := *cerr
	*cerr = nil
	if ce != nil {
		defer C.mooncake_meta_error_free(ce)
	}
	if status == C.MOONCAKE_META_OK {
		return nil
	}
	e := &Error{Code: Code(status)}
	if ce != nil {
		e.Message = C.GoString(C.mooncake_meta_error_message(ce))
	}
	return e
}
