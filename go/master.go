package mooncakemeta

// The Master handle: creation, Close (which waits for calls in flight), the
// call guard every method goes through, tenants, and the manual clock.

/*
#include "mooncake_meta.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Master is one metadata master: segments, objects, replicas, leases, pins,
// eviction and snapshots, living in the Rust library. Every method may be
// called from any number of goroutines at once.
//
// The key-taking operations are the methods of the embedded Keyspace,
// which addresses the default tenant; Tenant returns the Keyspace of
// another tenant.
//
// Call Close when done. Close waits for the calls in flight and makes
// every later call return ErrClosed (arguments a method checks in Go
// before it reaches the library, such as a negative duration, are still
// refused with their own error first); a Master that becomes unreachable
// without Close is freed by a cleanup as a safety net.
type Master struct {
	// Keyspace is the default tenant's view; its methods are promoted.
	Keyspace

	// mu guards ptr: calls hold it shared for their whole C call, Close
	// holds it exclusively to free the master, so Close waits for the
	// calls in flight and no call can use a freed pointer.
	mu      sync.RWMutex
	ptr     *C.mooncake_meta_master
	cleanup runtime.Cleanup
	// maxSoftPinTTL is Config.MaxSoftPinTTL, so that a Start's TTL above
	// it is reported in Go terms before the C call.
	maxSoftPinTTL time.Duration
}

// Keyspace addresses the objects of one tenant of a Master. Obtain one with
// Master.Tenant (or use the Master itself for the default tenant). It is a
// small value; copy it freely. Its methods fail with ErrClosed once the
// Master is closed (after the checks they make in Go, as Master's).
type Keyspace struct {
	m      *Master
	tenant string
}

// DefaultTenant is the tenant of keys given without one.
const DefaultTenant = "default"

// New creates a master from DefaultConfig changed by opts.
func New(opts ...Option) (*Master, error) {
	c := DefaultConfig()
	for _, o := range opts {
		o(&c)
	}
	return NewWithConfig(c)
}

// NewWithConfig creates a master from c (start from DefaultConfig or
// DeterministicConfig). A configuration the library rejects is
// ErrInvalidParams naming the field; a system that will not start the
// maintenance thread the configuration asks for is ErrInternal; a linked
// library whose ABI differs from the header this package was built with,
// or that is older than it (fills fewer fields of its output structs), is
// an error too.
func NewWithConfig(c Config) (*Master, error) {
	if got := C.mooncake_meta_abi_version(); got != C.MOONCAKE_META_ABI_VERSION {
		return nil, fmt.Errorf("mooncakemeta: linked libmooncake_meta has ABI version %d, this package needs %d",
			uint32(got), uint32(C.MOONCAKE_META_ABI_VERSION))
	}
	var ptr *C.mooncake_meta_master
	err := c.withHandle(func(h *C.mooncake_meta_config) error {
		var cerr *C.mooncake_meta_error
		return takeError(C.mooncake_meta_master_new(h, &ptr, &cerr), &cerr)
	})
	if err != nil {
		return nil, err
	}
	if err := checkOutputSizes(ptr); err != nil {
		C.mooncake_meta_master_free(ptr)
		return nil, err
	}
	m := &Master{ptr: ptr, maxSoftPinTTL: c.MaxSoftPinTTL}
	m.Keyspace = Keyspace{m: m}
	// Only a safety net against leaks: Close is the way to free a master.
	// The cleanup gets the C pointer, not m, so m can become unreachable.
	m.cleanup = runtime.AddCleanup(m, freeMaster, ptr)
	return m, nil
}

// checkOutputSizes makes sure the linked library fills every field of the
// size-versioned structs this package reads. A library older than the
// header, with the same ABI version, fills only the fields it has and
// leaves the newer ones as they were: zero, so that a standby would read
// as a primary and a journal's figures as 0. The metrics struct is the
// one whose fields were appended last (the restore report's clock shift
// came with its clock skew), so a library that fills it fills them all.
func checkOutputSizes(p *C.mooncake_meta_master) error {
	var s C.mooncake_meta_metrics_snapshot
	s.struct_size = C.uint32_t(unsafe.Sizeof(s))
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_metrics(p, &s, &cerr), &cerr); err != nil {
		return err
	}
	if uintptr(s.struct_size) < unsafe.Sizeof(s) {
		return fmt.Errorf("mooncakemeta: linked libmooncake_meta (version %s) fills %d of the %d bytes "+
			"of mooncake_meta_metrics_snapshot: it is older than the header this package was built with",
			Version(), uint32(s.struct_size), unsafe.Sizeof(s))
	}
	return nil
}

// freeMaster is a dropped master's cleanup. cleanupFrees counts its runs,
// so a test can see the safety net work (and a closed master's cleanup
// never run).
func freeMaster(p *C.mooncake_meta_master) {
	C.mooncake_meta_master_free(p)
	cleanupFrees.Add(1)
}

var cleanupFrees atomic.Int64

// Close frees the master. It waits until the calls in flight have
// returned; every later call on the master that passes its Go-side
// argument checks returns ErrClosed. Calling
// Close again does nothing and returns nil.
func (m *Master) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ptr == nil {
		return nil
	}
	m.cleanup.Stop()
	C.mooncake_meta_master_free(m.ptr)
	m.ptr = nil
	return nil
}

// acquire takes the call guard: the master pointer, valid until release,
// or ErrClosed.
func (m *Master) acquire() (*C.mooncake_meta_master, error) {
	m.mu.RLock()
	if m.ptr == nil {
		m.mu.RUnlock()
		return nil, ErrClosed
	}
	return m.ptr, nil
}

// release drops the call guard taken by acquire.
func (m *Master) release() {
	m.mu.RUnlock()
	// The master must stay reachable (its cleanup not run) until the C
	// call that used its pointer has returned.
	runtime.KeepAlive(m)
}

// Tenant returns the keyspace of the named tenant; "" is the default
// tenant.
func (m *Master) Tenant(name string) Keyspace {
	return Keyspace{m: m, tenant: name}
}

// Name returns the keyspace's tenant (DefaultTenant for the default one).
func (k Keyspace) Name() string {
	if k.tenant == "" {
		return DefaultTenant
	}
	return k.tenant
}

// Master returns the master the keyspace belongs to.
func (k Keyspace) Master() *Master { return k.m }

// cstr passes a Go string to C as (pointer, length) without copying: the
// bytes hold no Go pointers, so cgo allows it, and the C side only reads
// them during the call. "" is (NULL, 0).
func cstr(s string) (*C.char, C.size_t) {
	if len(s) == 0 {
		return nil, 0
	}
	return (*C.char)(unsafe.Pointer(unsafe.StringData(s))), C.size_t(len(s))
}

// Now returns the master's current instant on its timeline: anchored to
// the Unix epoch when the master was created, then advanced by a monotonic
// clock, so it never goes backwards (but on a standby that takes its
// primary's timeline with a snapshot or reset record it installs) and a
// step of the wall clock moves no deadline (docs/CONTRACT.md §1, §12.3).
// Every Instant the package takes or returns is on this timeline.
func (m *Master) Now() (Instant, error) {
	p, err := m.acquire()
	if err != nil {
		return 0, err
	}
	defer m.release()
	var now C.uint64_t
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_master_now(p, &now, &cerr), &cerr); err != nil {
		return 0, err
	}
	return Instant(now), nil
}

// SetTime moves a manual clock to t. Moving it backwards, or calling this
// on a system-clock master, is ErrClockUnsupported; reaching MaxInstant is
// ErrInvalidParams.
func (m *Master) SetTime(t Instant) error {
	p, err := m.acquire()
	if err != nil {
		return err
	}
	defer m.release()
	var cerr *C.mooncake_meta_error
	return takeError(C.mooncake_meta_master_set_time(p, C.uint64_t(t), &cerr), &cerr)
}

// AdvanceTime moves a manual clock forward by d (a non-negative whole
// number of milliseconds) and returns the new instant. Errors as SetTime.
func (m *Master) AdvanceTime(d time.Duration) (Instant, error) {
	ms, err := millis("AdvanceTime duration", d)
	if err != nil {
		return 0, err
	}
	p, err := m.acquire()
	if err != nil {
		return 0, err
	}
	defer m.release()
	var now C.uint64_t
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_master_advance_time(p, C.uint64_t(ms), &now, &cerr), &cerr); err != nil {
		return 0, err
	}
	return Instant(now), nil
}

// WallTime returns the wall clock now, in milliseconds since the Unix
// epoch. No lifetime depends on it: it is what Metrics.ClockSkew is
// measured against and what a snapshot records beside its capture instant
// (docs/CONTRACT.md §1, §6). On a manual clock it equals Now unless
// SetWallTime set it apart; on the system clock it is the operating
// system's real-time clock.
func (m *Master) WallTime() (Instant, error) {
	p, err := m.acquire()
	if err != nil {
		return 0, err
	}
	defer m.release()
	var wall C.uint64_t
	var cerr *C.mooncake_meta_error
	if err := takeError(C.mooncake_meta_master_wall_time(p, &wall, &cerr), &cerr); err != nil {
		return 0, err
	}
	return Instant(wall), nil
}

// SetWallTime sets a manual clock's wall to wall, apart from its timeline,
// as a step of the wall clock would: Now, and so every lease, soft pin and
// write timeout, is unchanged; Metrics.ClockSkew becomes Now minus wall,
// and snapshots record the new wall. The wall then keeps that distance as
// the clock moves. On a system-clock master it is ErrClockUnsupported (its
// wall is the operating system's); wall at or above MaxInstant is
// ErrInvalidParams. Nothing changes on failure.
func (m *Master) SetWallTime(wall Instant) error {
	p, err := m.acquire()
	if err != nil {
		return err
	}
	defer m.release()
	var cerr *C.mooncake_meta_error
	return takeError(C.mooncake_meta_master_set_wall_time(p, C.uint64_t(wall), &cerr), &cerr)
}

// Version returns the linked library's version, "MAJOR.MINOR.PATCH".
func Version() string { return C.GoString(C.mooncake_meta_version()) }

// ABIVersion returns the linked library's ABI major version; NewWithConfig
// refuses a library whose ABI differs from the header's.
func ABIVersion() uint32 { return uint32(C.mooncake_meta_abi_version()) }
