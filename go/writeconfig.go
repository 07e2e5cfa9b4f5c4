package mooncakemeta

// Write configuration: ReplicateConfig, with the legacy boolean soft pin
// (the frozen upstream struct) and the explicit SoftPinAction with an
// optional TTL (the size-versioned extended struct), and their translation
// into C structs whose strings live in C memory.

/*
#include <stdlib.h>
#include "mooncake_meta.h"
*/
import "C"

import (
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"
)

// SoftPinAction is what a write does to its object's soft pin when the
// write first makes the object readable (docs/CONTRACT.md §4).
type SoftPinAction uint32

// The soft-pin actions, with the C ABI's values.
const (
	// Preserve keeps an unexpired committed deadline (the default).
	Preserve SoftPinAction = 0
	// Enable starts a new soft-pin lifetime: ReplicateConfig.SoftPinTTL,
	// or the master's default TTL when it is nil. A TTL of 0 commits
	// ordinary cache (it clears a committed deadline).
	Enable SoftPinAction = 1
	// Disable removes the committed deadline.
	Disable SoftPinAction = 2
)

// String returns "PRESERVE", "ENABLE" or "DISABLE".
func (a SoftPinAction) String() string {
	switch a {
	case Preserve:
		return "PRESERVE"
	case Enable:
		return "ENABLE"
	case Disable:
		return "DISABLE"
	}
	return "SoftPinAction(" + strconv.FormatUint(uint64(a), 10) + ")"
}

// TTL returns a pointer to d, for ReplicateConfig.SoftPinTTL.
func TTL(d time.Duration) *time.Duration { return &d }

// ReplicateConfig is the configuration of a PutStart or UpsertStart. The
// zero value is the default: one memory replica, Preserve, no hard pin.
//
// It reaches the library by one of two paths:
//
//   - the legacy path, upstream Mooncake's frozen replicate config, when
//     Legacy or WithSoftPin is set: only ReplicaNum, WithSoftPin,
//     WithHardPin and PreferredSegments apply, and WithSoftPin means Enable
//     with the master's default TTL (false means Preserve). Setting a field
//     of the explicit path as well is ErrInvalidParams;
//   - otherwise the explicit path, the extended config: SoftPinAction with
//     an optional SoftPinTTL, NofSSDReplicaNum and Group as well.
type ReplicateConfig struct {
	// ReplicaNum is the number of memory replicas, at most
	// MaxReplicasPerPool. 0 means 1, except on the explicit path when
	// NofSSDReplicaNum is set (then 0 memory replicas are requested).
	ReplicaNum int
	// NofSSDReplicaNum is the number of second-pool replicas, at most
	// MaxReplicasPerPool (explicit path only).
	NofSSDReplicaNum int
	// WithHardPin hard-pins the object: never evicted, survives restore.
	WithHardPin bool
	// PreferredSegments are segment names to try first, in order.
	PreferredSegments []string
	// Group is the group the object joins at creation (explicit path
	// only); "" for none. An Upsert of an existing object that names no
	// group keeps the object's group; naming another is ErrInvalidParams.
	Group string

	// Legacy sends the configuration through the legacy struct even when
	// WithSoftPin is false.
	Legacy bool
	// WithSoftPin is upstream's boolean: Enable with the master's default
	// TTL. It selects the legacy path.
	WithSoftPin bool

	// SoftPinAction is the explicit soft-pin action (explicit path).
	SoftPinAction SoftPinAction
	// SoftPinTTL is the soft-pin TTL of Enable; nil means the master's
	// default. It must be a non-negative whole number of milliseconds
	// (anything else is ErrInvalidParams, never rounded) and may not exceed
	// the master's maximum; it is ErrInvalidParams with Preserve or
	// Disable.
	SoftPinTTL *time.Duration
}

// isLegacy reports whether c takes the legacy path, and checks that it
// sets nothing the legacy struct cannot carry.
func (c *ReplicateConfig) isLegacy() (bool, error) {
	if !c.Legacy && !c.WithSoftPin {
		return false, nil
	}
	switch {
	case c.SoftPinAction != Preserve:
		return true, invalidParams("ReplicateConfig: SoftPinAction %v with the legacy WithSoftPin/Legacy path", c.SoftPinAction)
	case c.SoftPinTTL != nil:
		return true, invalidParams("ReplicateConfig: SoftPinTTL with the legacy WithSoftPin/Legacy path")
	case c.NofSSDReplicaNum != 0:
		return true, invalidParams("ReplicateConfig: NofSSDReplicaNum with the legacy WithSoftPin/Legacy path")
	case c.Group != "":
		return true, invalidParams("ReplicateConfig: Group with the legacy WithSoftPin/Legacy path")
	}
	return true, nil
}

// checkSoftPin reports the soft-pin request rules the library checks too,
// in Go terms (the library's messages name the C fields): an action it
// does not define, and a TTL with an action other than Enable.
func (c *ReplicateConfig) checkSoftPin() error {
	switch c.SoftPinAction {
	case Preserve, Enable, Disable:
	default:
		return invalidParams("ReplicateConfig.SoftPinAction is %v; want Preserve, Enable or Disable", c.SoftPinAction)
	}
	if c.SoftPinTTL != nil && c.SoftPinAction != Enable {
		return invalidParams("ReplicateConfig.SoftPinTTL is set but SoftPinAction is %s: only Enable takes a TTL",
			c.SoftPinAction.goName())
	}
	return nil
}

// goName is the action's Go identifier ("Preserve"), for messages.
func (a SoftPinAction) goName() string {
	switch a {
	case Preserve:
		return "Preserve"
	case Enable:
		return "Enable"
	case Disable:
		return "Disable"
	}
	return a.String()
}

// checkMaxTTL reports a SoftPinTTL above the master's maximum (the
// library's Start checks it too, naming the C fields).
func (c *ReplicateConfig) checkMaxTTL(max time.Duration) error {
	if c.SoftPinTTL != nil && *c.SoftPinTTL > max {
		return invalidParams("ReplicateConfig.SoftPinTTL %v exceeds the master's Config.MaxSoftPinTTL %v", *c.SoftPinTTL, max)
	}
	return nil
}

// checkUTF8 is the library's INVALID_UTF8 for a string field, naming the
// Go field instead of the C one.
func checkUTF8(what, s string) error {
	if utf8.ValidString(s) {
		return nil
	}
	off := 0
	for off < len(s) {
		r, n := utf8.DecodeRuneInString(s[off:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		off += n
	}
	return &Error{Code: CodeInvalidUTF8, Message: fmt.Sprintf("%s is not valid UTF-8 (bad byte at offset %d)", what, off)}
}

// counts returns the memory and second-pool replica counts requested.
func (c *ReplicateConfig) counts() (memory, nof int, err error) {
	if c.ReplicaNum < 0 || c.NofSSDReplicaNum < 0 {
		return 0, 0, invalidParams("ReplicateConfig: negative replica count (%d, %d)", c.ReplicaNum, c.NofSSDReplicaNum)
	}
	memory, nof = c.ReplicaNum, c.NofSSDReplicaNum
	if memory == 0 && nof == 0 {
		memory = 1
	}
	// Checked before the replica buffer is sized from the counts.
	if memory > MaxReplicasPerPool || nof > MaxReplicasPerPool {
		return 0, 0, invalidParams("ReplicateConfig: replica count above MaxReplicasPerPool (%d): (%d, %d)", MaxReplicasPerPool, memory, nof)
	}
	return memory, nof, nil
}

// MaxReplicasPerPool is the most memory replicas, and separately the most
// second-pool replicas, one write may request (the header's
// MOONCAKE_META_MAX_REPLICAS_PER_POOL); more is ErrInvalidParams.
const MaxReplicasPerPool = 1024

// cWriteConfig is an extended or legacy C config whose strings live in C
// memory; free releases them. The struct itself is Go memory holding only
// C pointers, which cgo allows to pass.
type cWriteConfig struct {
	legacy   bool
	ext      C.mooncake_meta_write_config
	old      C.mooncake_meta_replicate_config
	segments cStrings
	group    *C.char
	// replicas is the number of replica descriptors the Start may return.
	replicas int
}

func (w *cWriteConfig) free() {
	w.segments.free()
	if w.group != nil {
		C.free(unsafe.Pointer(w.group))
	}
}

// build translates c; allowLegacy false (the batch calls, which take only
// the extended struct) translates the legacy fields into their explicit
// equivalent instead (WithSoftPin = Enable with the default TTL, as the
// library's own legacy reader does).
func (c *ReplicateConfig) build(allowLegacy bool) (*cWriteConfig, error) {
	legacy, err := c.isLegacy()
	if err != nil {
		return nil, err
	}
	if err := c.checkSoftPin(); err != nil {
		return nil, err
	}
	memory, nof, err := c.counts()
	if err != nil {
		return nil, err
	}
	action := c.SoftPinAction
	if legacy && c.WithSoftPin {
		action = Enable
	}
	var ttlMs uint64
	hasTTL := c.SoftPinTTL != nil
	if hasTTL {
		if ttlMs, err = millis("ReplicateConfig.SoftPinTTL", *c.SoftPinTTL); err != nil {
			return nil, err
		}
	}
	for i, seg := range c.PreferredSegments {
		if err := checkUTF8(fmt.Sprintf("ReplicateConfig.PreferredSegments[%d]", i), seg); err != nil {
			return nil, err
		}
	}
	if err := checkUTF8("ReplicateConfig.Group", c.Group); err != nil {
		return nil, err
	}
	segs, err := newCStrings("ReplicateConfig.PreferredSegments", c.PreferredSegments)
	if err != nil {
		return nil, err
	}
	w := &cWriteConfig{legacy: legacy && allowLegacy, segments: segs, replicas: memory + nof}
	if w.legacy {
		w.old.replica_num = C.size_t(memory)
		w.old.with_soft_pin = cBool(c.WithSoftPin)
		w.old.with_hard_pin = cBool(c.WithHardPin)
		w.old.preferred_segments = segs.ptr
		w.old.preferred_segments_count = C.size_t(len(c.PreferredSegments))
		return w, nil
	}
	if c.Group != "" {
		if w.group, err = newCString("ReplicateConfig.Group", c.Group); err != nil {
			w.free()
			return nil, err
		}
	}
	e := &w.ext
	// The documented protocol: _init fills the defaults for this struct
	// size, then we set the fields.
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_write_config_init(e, C.size_t(unsafe.Sizeof(*e)), &cerr), &cerr); err != nil {
		w.free()
		return nil, err
	}
	e.soft_pin_action = C.uint32_t(action)
	if hasTTL {
		e.flags |= C.MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL
		e.soft_pin_ttl_ms = C.uint64_t(ttlMs)
	}
	if c.WithHardPin {
		e.flags |= C.MOONCAKE_META_WRITE_HARD_PIN
	}
	e.memory_replicas = C.uint32_t(memory)
	e.nof_ssd_replicas = C.uint32_t(nof)
	e.preferred_segments = segs.ptr
	e.preferred_segments_count = C.size_t(len(c.PreferredSegments))
	e.group = w.group
	return w, nil
}

// Validate checks c as a Start will, except for what depends on a master
// (the TTL against its maximum, segment names against its segments).
func (c ReplicateConfig) Validate() error {
	w, err := c.build(true)
	if err != nil {
		return err
	}
	defer w.free()
	var cerr *C.mooncake_meta_error
	if w.legacy {
		return takeError(C.mooncake_meta_replicate_config_validate(&w.old, &cerr), &cerr)
	}
	return takeError(C.mooncake_meta_write_config_validate(&w.ext, &cerr), &cerr)
}
