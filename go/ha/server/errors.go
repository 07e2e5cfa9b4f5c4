package server

// The one table from errors to HTTP statuses and error bodies: the
// library's status codes, the HA node's errors and the server's own.

import (
	"context"
	"errors"
	"net/http"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
	"github.com/kvcache-ai/libmooncake_meta/go/ha"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server/api"
)

// libraryStatus is the HTTP status of each library code; a code missing
// here (a future one) is 500.
var libraryStatus = map[mm.Code]int{
	mm.CodeObjectNotFound:             http.StatusNotFound,
	mm.CodeSegmentNotFound:            http.StatusNotFound,
	mm.CodeReplicaNotFound:            http.StatusNotFound,
	mm.CodeInvalidParams:              http.StatusBadRequest,
	mm.CodeInvalidUTF8:                http.StatusBadRequest,
	mm.CodeUnknownFlags:               http.StatusBadRequest,
	mm.CodeUnavailableInCurrentStatus: http.StatusServiceUnavailable,
	mm.CodeNoAvailableHandle:          http.StatusInsufficientStorage,
	mm.CodeSegmentAlreadyExists:       http.StatusConflict,
	mm.CodeIllegalClient:              http.StatusConflict,
	mm.CodeInvalidWrite:               http.StatusConflict,
	mm.CodeReplicaIsNotReady:          http.StatusConflict,
	mm.CodeObjectAlreadyExists:        http.StatusConflict,
	mm.CodeObjectHasLease:             http.StatusConflict,
	mm.CodeObjectHasReplicationTask:   http.StatusConflict,
	mm.CodeObjectNoReplicationTask:    http.StatusConflict,
	mm.CodeReplicaIsGone:              http.StatusConflict,
	mm.CodeObjectReplicaBusy:          http.StatusConflict,
	mm.CodeStaleWriteToken:            http.StatusConflict,
	mm.CodeGroupRetentionFull:         http.StatusConflict,
	mm.CodeInternalError:              http.StatusInternalServerError,
	mm.CodeSerializeFail:              http.StatusInternalServerError,
	mm.CodeDeserializeFail:            http.StatusInternalServerError,
	mm.CodeNullArgument:               http.StatusInternalServerError,
	mm.CodeBufferTooSmall:             http.StatusInternalServerError,
	mm.CodeStructSizeUnsupported:      http.StatusInternalServerError,
	mm.CodePanic:                      http.StatusInternalServerError,
	mm.CodeClockUnsupported:           http.StatusInternalServerError,
	mm.CodeJournalOverrun:             http.StatusInternalServerError,
}

// requestError is a request refused by the server itself, with its
// status, name and message; code is the library's code when the name is
// the library's (INVALID_UTF8, INVALID_PARAMS), else 0.
type requestError struct {
	status int
	code   int32
	name   string
	msg    string
}

func (e *requestError) Error() string { return e.name + ": " + e.msg }

func badRequest(msg string) error {
	return &requestError{status: http.StatusBadRequest, name: api.ErrNameBadRequest, msg: msg}
}

// errorBody maps err to its HTTP status and body. Errors that mean "this
// node does not lead now" (a follower, a node that stepped down, a master
// being replaced) are 503 NOT_LEADER; the caller adds the leader's name.
// A request whose context ended (its client closed its side of the
// connection) is not answered at all (Server.fail aborts the connection);
// context.Canceled is none of these and, from anything else, a 500.
func errorBody(err error) (int, api.Error) {
	var re *requestError
	if errors.As(err, &re) {
		return re.status, api.Error{Code: re.code, Name: re.name, Message: re.msg}
	}
	var me *mm.Error
	if errors.As(err, &me) {
		st, ok := libraryStatus[me.Code]
		if !ok {
			st = http.StatusInternalServerError
		}
		return st, api.Error{Code: int32(me.Code), Name: me.Code.String(), Message: err.Error()}
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, api.Error{Name: api.ErrNameNotDurable,
			Message: "the change is not acknowledged: its durability in etcd was not confirmed in time: " + err.Error()}
	case errors.Is(err, mm.ErrClosed), errors.Is(err, ha.ErrNotLeader), errors.Is(err, ha.ErrFenced),
		errors.Is(err, ha.ErrClosed), errors.Is(err, ha.ErrJournal), errors.Is(err, ha.ErrRecordTooLarge),
		errors.Is(err, ha.ErrConflict):
		return http.StatusServiceUnavailable, api.Error{Name: api.ErrNameNotLeader,
			Message: "this node does not lead (nothing was acknowledged): " + err.Error()}
	}
	return http.StatusInternalServerError, api.Error{Name: "INTERNAL", Message: err.Error()}
}
