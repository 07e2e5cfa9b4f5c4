package mooncakemeta

// Group retention: a fixed-lifetime retention deadline per (tenant, group),
// a second eviction-priority source beside the objects' own soft pins
// (docs/CONTRACT.md, "Group retention").

/*
#include <stdlib.h>
#include "mooncake_meta.h"
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"
)

// RetainResult is one group's outcome in RetainGroups.
type RetainResult struct {
	// Deadline is the group's retention deadline after the call (0 on
	// failure).
	Deadline Instant
	// Err is the group's failure, nil on success: ErrInvalidParams for an
	// empty id or a bad shared argument (the TTL, the tenant),
	// ErrInvalidUTF8 for an id or a tenant that is not UTF-8,
	// ErrGroupRetentionFull for a new group while Config.MaxRetainedGroups
	// groups are retained.
	Err error
}

func groupErrors(ids []string, statuses []C.int32_t) []error {
	errs := make([]error, len(ids))
	for i, st := range statuses {
		if st != C.MOONCAKE_META_OK {
			errs[i] = &Error{Code: Code(st), Message: fmt.Sprintf("group %d (%q)", i, ids[i])}
		}
	}
	return errs
}

// RetainGroups retains each group of the keyspace's tenant for ttl: a
// group's deadline becomes max(its active deadline, now + ttl), so a repeat
// extends and never shortens. The deadline is the group's own: it is never
// copied into a member's soft pin and no read, write or member operation
// moves it; a group needs no member, before or after.
//
// The results are always one per id. ttl must be a whole number of
// milliseconds in (0, Config.MaxGroupRetentionTTL] and the tenant valid;
// otherwise every result's Err is ErrInvalidParams (ErrInvalidUTF8 for a
// tenant that is not UTF-8; Deadline 0), the
// returned error is that same error and nothing changed (a bad shared
// argument fails every entry, as a batch's does). A call refused as a
// whole for another reason (a closed master, a standby) is reported the
// same way: every result carries the error. When the error is nil each
// group's outcome is in its result (ErrInvalidParams for an empty id,
// ErrInvalidUTF8 for one that is not UTF-8). The ttl is checked here
// before the library is called, so a bad ttl is ErrInvalidParams on a
// standby too, where the library refuses the call first.
func (k Keyspace) RetainGroups(ids []string, ttl time.Duration) ([]RetainResult, error) {
	refuse := func(err error) ([]RetainResult, error) {
		return refuseEach(len(ids), err, func(r *RetainResult) *error { return &r.Err })
	}
	if ttl <= 0 {
		return refuse(invalidParams("RetainGroups ttl %v must be > 0", ttl))
	}
	ms, err := millis("RetainGroups ttl", ttl)
	if err != nil {
		return refuse(err)
	}
	n := len(ids)
	cg := newCKeys(ids)
	defer cg.free()
	p, err := k.m.acquire()
	if err != nil {
		return refuse(err)
	}
	defer k.m.release()
	statuses := make([]C.int32_t, max(n, 1))
	deadlines := make([]C.uint64_t, max(n, 1))
	tp, tl := cstr(k.tenant)
	var cerr *C.mooncake_meta_error
	st := C.mooncake_meta_retain_groups(p, tp, tl, cg.ptrs, unsafe.SliceData(cg.lens), C.size_t(n),
		C.uint64_t(ms), unsafe.SliceData(statuses), unsafe.SliceData(deadlines), &cerr)
	if err := takeError(st, &cerr); err != nil {
		return refuse(err)
	}
	errs := groupErrors(ids, statuses[:n])
	results := make([]RetainResult, n)
	for i := range results {
		results[i] = RetainResult{Deadline: Instant(deadlines[i]), Err: errs[i]}
	}
	return results, nil
}

// ReleaseGroups ends the retention of each group of the keyspace's tenant
// now; releasing a group with no stored deadline is OK and changes nothing
// (one whose deadline has passed but is still stored is normalised, as
// cleanup would).
//
// The errors are always one per id. The returned error is nil when the
// call was accepted, each group's outcome (ErrInvalidParams for an empty
// id) in its entry. A bad tenant fails every entry with ErrInvalidParams
// (ErrInvalidUTF8 when it is not UTF-8) and returns that error, nothing changed; so does any refusal of the whole
// call (a closed master, a standby), with its error. An id that is not
// UTF-8 fails alone (ErrInvalidUTF8).
func (k Keyspace) ReleaseGroups(ids []string) ([]error, error) {
	n := len(ids)
	cg := newCKeys(ids)
	defer cg.free()
	p, err := k.m.acquire()
	if err != nil {
		return refuseErrs(n, err)
	}
	defer k.m.release()
	statuses := make([]C.int32_t, max(n, 1))
	tp, tl := cstr(k.tenant)
	var cerr *C.mooncake_meta_error
	st := C.mooncake_meta_release_groups(p, tp, tl, cg.ptrs, unsafe.SliceData(cg.lens), C.size_t(n),
		unsafe.SliceData(statuses), &cerr)
	if err := takeError(st, &cerr); err != nil {
		return refuseErrs(n, err)
	}
	return groupErrors(ids, statuses[:n]), nil
}

// GroupRetentionDeadline returns the group's active retention deadline and
// true, or (0, false) when it is not retained or its deadline has passed.
// An empty id is ErrInvalidParams. It changes nothing.
func (k Keyspace) GroupRetentionDeadline(id string) (Instant, bool, error) {
	p, err := k.m.acquire()
	if err != nil {
		return 0, false, err
	}
	defer k.m.release()
	tp, tl := cstr(k.tenant)
	gp, gl := cstr(id)
	var has C.int
	var deadline C.uint64_t
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_group_retention_deadline(p, tp, tl, gp, gl, &has, &deadline, &cerr), &cerr); err != nil {
		return 0, false, err
	}
	return Instant(deadline), has != 0, nil
}
