// Package mooncakemeta embeds libmooncake_meta, the metadata master of the
// Mooncake KV-cache store, in a Go program through its C ABI.
//
// A Master holds segments, objects and their replicas, read leases, hard
// and soft pins, and runs eviction, soft-pin expiration cleanup and
// snapshots. The headline feature is the fixed-lifecycle soft pin: a write
// may ask (ReplicateConfig) to keep its object protected from eviction for
// a TTL counted from the moment the object first becomes readable; reads
// never renew it.
//
//	m, err := mooncakemeta.New(mooncakemeta.WithDeterministic(1_000_000))
//	if err != nil { ... }
//	defer m.Close()
//
// # Errors
//
// Every call the library refuses returns an *Error carrying the library's
// status Code and message. Compare with the sentinels (ErrNotFound,
// ErrHasLease, ...) using errors.Is. Calls after Close return ErrClosed
// (a plain error, not an *Error: the library was not called), once their
// arguments pass the checks a method makes in Go; a batch call then
// answers ErrClosed for every key. NewWithConfig's errors about a library
// built for another header or ABI are plain errors too.
//
// # Time
//
// The library counts time in milliseconds on each master's timeline
// (Instant): anchored to the Unix epoch when the master is created, then
// advanced by a monotonic clock, so a step of the wall clock (NTP, an
// operator) neither shortens nor extends any lease, soft pin, group
// retention or write timeout. The wall clock is read only for Metrics.ClockSkew (timeline
// minus wall) and for snapshots, whose instants a primary's restore shifts
// by the change in skew (RestoreReport.ClockShift). A standby shifts
// nothing: it takes the skew of the image of its primary's state it
// installs (a snapshot, a reset record) and of every timeline record of
// its primary's journal, so it runs on its primary's timeline
// (docs/CONTRACT.md §12.1).
//
// Durations passed in (TTLs, intervals, clock advances) must be
// non-negative whole numbers of milliseconds; anything else is
// ErrInvalidParams rather than being rounded. A manual clock
// (WithManualClock) moves only through SetTime and AdvanceTime, and its
// wall with it unless SetWallTime sets the wall apart (how tests step the
// wall) or a standby takes its primary's skew; as in C and Rust it changes nothing else, so the background
// cleanup, eviction and sweep still run at their intervals, against that
// clock. A
// deterministic master (WithDeterministic, DeterministicConfig: a manual
// clock and every background task off) does nothing unless called, so
// tests drive cleanup and eviction with RunCleanup, RunEviction and
// friends.
//
// # Memory
//
// C never keeps a Go pointer. Strings and byte slices without pointers are
// passed directly for the duration of a call; arrays of strings and
// configurations that point to strings are built in C memory and freed
// before the call returns; everything the library returns is copied into
// Go memory and its C buffer freed in the same call. Close frees the master
// after waiting for the calls in flight; a cleanup frees a master that was
// never closed, only as a safety net.
//
// # Linking
//
// By default the package links the static library of this repository,
// ../target/release/libmooncake_meta.a: build it first with
// `cargo build --release` (or `make lib` at the repository root). Build
// tags choose another library:
//
//   - mooncake_shared: the shared library ../target/release/libmooncake_meta.so,
//     found at run time through an rpath under its SONAME
//     libmooncake_meta.so.1 (link that name to the .so once).
//   - mooncake_pkgconfig: an installed library described by mooncake_meta.pc
//     (`#cgo pkg-config: mooncake_meta`); set PKG_CONFIG_PATH if the .pc file
//     is not in a default directory.
//   - mooncake_external: no flags of the package's own; name the installed
//     header and library with CGO_CFLAGS and CGO_LDFLAGS, e.g.
//     CGO_CFLAGS=-I/opt/mooncake/include
//     CGO_LDFLAGS="-L/opt/mooncake/lib -lmooncake_meta".
//
// The library's ABI version is checked against the header's when a master
// is created. Go's build cache does not watch the library or the header
// outside this directory: after rebuilding them, test with -count=1 (and
// clean the cache if the header changed); `make test-go` does this.
package mooncakemeta
