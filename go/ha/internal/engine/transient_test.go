package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The errors an etcd member returns while its cluster elects a new leader
// reach the client as rpctypes.EtcdError values (clientv3 converts the
// gRPC status into them, and they carry no gRPC status of their own): a
// batch write that meets one is retried, not a reason to step down.
func TestEtcdLeaderChangeErrorsAreTransient(t *testing.T) {
	for _, err := range []error{
		rpctypes.ErrNoLeader,
		rpctypes.ErrLeaderChanged,
		rpctypes.ErrStopped,
		rpctypes.ErrTimeout,
		rpctypes.ErrTimeoutDueToLeaderFail,
		rpctypes.ErrTimeoutDueToConnectionLost,
		rpctypes.ErrTimeoutWaitAppliedIndex,
		rpctypes.ErrUnhealthy,
		rpctypes.ErrTooManyRequests,
		// What clientv3 returns for each (rpctypes.Error of the gRPC
		// status), and the same wrapped.
		rpctypes.Error(rpctypes.ErrGRPCTimeoutDueToLeaderFail),
		fmt.Errorf("storing a batch: %w", rpctypes.ErrTimeoutDueToLeaderFail),
		status.Error(codes.Unavailable, "connection refused"),
		context.DeadlineExceeded,
	} {
		if !transient(err) {
			t.Errorf("transient(%v) = false, want true", err)
		}
	}
	for _, err := range []error{
		rpctypes.ErrRequestTooLarge,
		rpctypes.ErrGRPCRequestTooLarge,
		rpctypes.ErrNoSpace,
		rpctypes.ErrPermissionDenied,
		errors.New("some other failure"),
	} {
		if transient(err) {
			t.Errorf("transient(%v) = true, want false", err)
		}
	}
}
