# libmooncake_meta: the single entry point.
#
#   make lib           the release libraries (static + shared), with cargo
#   make build         make lib and the header check
#   make install       copy what make lib built (it runs no cargo, so
#                      `make lib && sudo make install` works): headers (.h,
#                      .hpp), stripped
#                      static and shared library (debug info in lib/.debug),
#                      pkg-config file and CMake package into
#                      $(DESTDIR)$(PREFIX) (PREFIX=/usr/local by default)
#   make uninstall     remove exactly what make install put there (every file
#                      its manifest records, earlier versions' included)
#   make demo          install into target/demo-prefix, build the C demo
#                      against it through pkg-config, and run it
#   make server        the HA reference server, target/mooncake-meta-server
#                      (go/ha/cmd/mooncake-meta-server, the release static
#                      library linked in)
#   make ha-demo       etcd and two servers in a temporary directory: soft-pinned
#                      objects survive killing the leader with their deadlines
#   make test-ha-soak  HA_SOAK_FAILOVERS (20) failovers under a write load, and
#                      the durable-write figures (not in make test)
#   make test          every suite: Rust, the Rust ffi tests under valgrind
#                      memcheck, header, symbol, allocator and unsafe-code checks (with
#                      their mutation self-tests), C in static/dynamic/
#                      ASan+UBSan/valgrind modes, C++, the installed layout,
#                      out-of-tree consumers of an installed prefix, Go (vet,
#                      test, -race, cgocheck2), the Go HA module against a
#                      real etcd, the Rust sys crate, the
#                      README check, the docs checks, rustdoc and a short
#                      benchmark run (bench-quick)
#   make bench         benchmarks (make bench-quick: a short run; make bench-scale:
#                      10^7 objects and the 10^8 footprint, not in CI)
#   make lint          cargo fmt --check, clippy -D warnings, gofmt, go vet
#   make docs          rustdoc of the core and C crates (warnings are errors) and
#                      the C API reference target/doc/c-api/mooncake_meta.md
#   make docs-check    every reference in the docs resolves inside the repository
#   make bless-header  copy the generated header over include/mooncake_meta.h
#   make clean
#
# A missing tool fails the target and names the package to install; `make
# tools` names every tool make test needs that is missing or too old.

# Every cargo command here builds in this repository's target/, whatever
# CARGO_TARGET_DIR or a cargo config's build.target-dir says: install.sh
# copies from target/release, and c_tests/, go/ (cgo links
# ../target/release), rust-sys/ and the scripts read the libraries there
# too, so a build elsewhere would leave them a stale or missing library.
# The hooks builds still go to target-hooks: --target-dir overrides this.
ifneq ($(origin CARGO_TARGET_DIR),undefined)
ifneq ($(CARGO_TARGET_DIR),$(CURDIR)/target)
$(info note: CARGO_TARGET_DIR=$(CARGO_TARGET_DIR) is not used here: this Makefile builds in $(CURDIR)/target)
endif
endif
export CARGO_TARGET_DIR := $(CURDIR)/target

CARGO   ?= cargo
CC      ?= cc
CXX     ?= c++
RELEASE := target/release
HOOKS   := target-hooks
TIMED   := scripts/timed.sh
SOAK_SECS ?= 60

PREFIX  ?= /usr/local
DESTDIR ?=
# The package version (Cargo.toml) names the installed shared library; the
# ABI major (the header's MOONCAKE_META_ABI_VERSION, which build.rs also
# writes into the SONAME) names its symlink.
VERSION := $(shell sed -n 's/^version *= *"\(.*\)"/\1/p' Cargo.toml | head -n 1)
ABI     := $(shell sed -n 's/^\#define MOONCAKE_META_ABI_VERSION \([0-9][0-9]*\)$$/\1/p' include/mooncake_meta.h)
SONAME  := libmooncake_meta.so.$(ABI)
DEMO_PREFIX := $(CURDIR)/target/demo-prefix

.PHONY: all build lib hooks-lib libraries install uninstall demo test test-rust test-rust-valgrind test-checks test-c test-install test-consumers test-go test-ha test-ha-soak ha-demo server test-sys readme-check \
        docs docs-check bench bench-quick bench-scale lint bless-header tools clean
all: build

# need TOOL HOW: fail, saying how to install it, when TOOL is missing.
need = @command -v $(1) >/dev/null 2>&1 || { echo "error: '$(1)' is required; $(2)" >&2; exit 1; }
# The library builds with Rust 1.85 (rust-version in Cargo.toml); the test
# suites need 1.88 (Cargo.lock's proptest 1.12.0 declares rust-version 1.88).
# Go: go/ needs 1.24, go/ha 1.26 (their go.mod files; GOTOOLCHAIN=local
# never downloads another Go).
RUST_TEST_MIN := 1.88
GO_TEST_MIN   := 1.26
RUST_HINT := install a Rust toolchain with rustup (>= 1.85 builds the library, the test suites need >= $(RUST_TEST_MIN))
GO_HINT   := install Go from https://go.dev/dl/ (>= 1.24 for go/, >= $(GO_TEST_MIN) for go/ha) and put its bin directory on PATH
apt = install it with: apt-get install -y $(1)

# Every tool make test needs, and the Rust and Go versions: each problem is
# named (with what provides the tool) before the target fails.
tools:
	@missing=; \
	check() { command -v "$$1" >/dev/null 2>&1 || { echo "error: '$$1' is required; $$2" >&2; missing="$$missing $$1"; }; }; \
	at_least() { [ "$$(printf '%s\n%s\n' "$$2" "$$1" | sort -V | head -n 1)" = "$$2" ]; }; \
	check '$(CARGO)' '$(RUST_HINT)'; \
	check rustc '$(RUST_HINT)'; \
	check '$(CC)' '$(call apt,gcc)'; \
	check '$(CXX)' '$(call apt,g++)'; \
	check nm '$(call apt,binutils)'; \
	check readelf '$(call apt,binutils)'; \
	check objcopy '$(call apt,binutils)'; \
	check objdump '$(call apt,binutils)'; \
	check valgrind '$(call apt,valgrind)'; \
	check pkg-config '$(call apt,pkg-config)'; \
	check cmake '$(call apt,cmake)'; \
	check python3 '$(call apt,python3)'; \
	check etcd '$(call apt,etcd-server)'; \
	check go '$(GO_HINT)'; \
	if command -v rustc >/dev/null 2>&1; then \
		v=$$(rustc --version | sed -n 's/^rustc \([0-9][0-9.]*\).*/\1/p'); \
		at_least "$$v" $(RUST_TEST_MIN) || { \
			echo "error: rustc $$v is too old for the test suites (>= $(RUST_TEST_MIN); the library alone builds with 1.85); run: rustup update stable" >&2; \
			missing="$$missing rust>=$(RUST_TEST_MIN)"; }; \
	fi; \
	if command -v go >/dev/null 2>&1; then \
		v=$$(GOTOOLCHAIN=local go env GOVERSION | sed 's/^go//'); \
		at_least "$$v" $(GO_TEST_MIN) || { \
			echo "error: go $$v is too old for go/ha (>= $(GO_TEST_MIN)); $(GO_HINT)" >&2; \
			missing="$$missing go>=$(GO_TEST_MIN)"; }; \
	fi; \
	if command -v '$(CC)' >/dev/null 2>&1 && \
		! echo 'int main(void){return 0;}' | $(CC) -fsanitize=address,undefined -x c - -o /dev/null 2>/dev/null; then \
		echo "error: $(CC) cannot build with -fsanitize=address,undefined; install: apt-get install -y libasan8 libubsan1" >&2; \
		missing="$$missing sanitizer-runtimes"; \
	fi; \
	if [ -n "$$missing" ]; then echo "error: make test cannot run; missing or too old:$$missing" >&2; exit 1; fi

# The shared library's SONAME is libmooncake_meta.so.$(ABI): a program linked
# against the build directory (the C tests) needs that name next to it.
lib:
	$(call need,$(CARGO),$(RUST_HINT))
	$(CARGO) build --release
	ln -sf libmooncake_meta.so $(RELEASE)/$(SONAME)

# The same library with the test-only hooks, in its own target directory so
# the default build never contains them.
hooks-lib:
	$(CARGO) build --release --features test-hooks --target-dir $(HOOKS)
	ln -sf libmooncake_meta.so $(HOOKS)/release/$(SONAME)

build: lib
	scripts/check-header.sh

# The layout of a packaged library (scripts/install.sh lists it): the
# headers (include/mooncake_meta.h, .hpp), lib/libmooncake_meta.a (debug info stripped),
# lib/libmooncake_meta.so.$(VERSION) (stripped, with a debuglink to
# lib/.debug/libmooncake_meta.so.$(VERSION).debug) with its SONAME symlink
# (.so.$(ABI)) and development symlink (.so), lib/pkgconfig/mooncake_meta.pc
# and the CMake package lib/cmake/mooncake_meta/. DESTDIR stages the files
# for packaging. The manifest lib/cmake/mooncake_meta/install-manifest.txt
# records every file and symlink install wrote and every directory it
# created; `make uninstall` (same PREFIX and DESTDIR) removes exactly those
# files (an earlier version's included), then those directories once they
# are empty.
#
# install builds nothing: it copies what `make lib` built in $(RELEASE), so
# `sudo make install` neither needs cargo on root's PATH nor writes
# root-owned files into target/. With nothing built it fails and says to
# run `make lib`. `make lib install` builds first (install waits for lib
# when all, lib or build is named on the same command line, -j included).
INSTALL_ENV = PREFIX="$(PREFIX)" DESTDIR="$(DESTDIR)" VERSION="$(VERSION)" ABI="$(ABI)" RELEASE="$(RELEASE)"
install: $(filter all lib build,$(MAKECMDGOALS))
	$(call need,objcopy,$(call apt,binutils))
	$(INSTALL_ENV) scripts/install.sh install

uninstall:
	$(INSTALL_ENV) scripts/install.sh uninstall

# The demo is built the way a user would: against the installed header and
# shared library, with flags from pkg-config only.
demo: lib
	$(call need,$(CC),$(call apt,gcc))
	$(call need,pkg-config,$(call apt,pkg-config))
	$(MAKE) --no-print-directory install PREFIX=$(DEMO_PREFIX)
	@mkdir -p target/c
	PKG_CONFIG_PATH=$(DEMO_PREFIX)/lib/pkgconfig; export PKG_CONFIG_PATH; \
	$(CC) -std=c11 -Wall -Wextra -Wpedantic -Werror examples/demo.c \
		$$(pkg-config --cflags --libs mooncake_meta) \
		-Wl,-rpath,$$(pkg-config --variable=libdir mooncake_meta) -o target/c/demo
	./target/c/demo

# Each suite is a target; `test` runs them in order, timing each, and stops
# at the first failure.
SUITES := test-rust test-rust-valgrind libraries test-checks test-c test-install test-consumers test-go test-ha test-sys readme-check docs-check docs bench-quick

test: tools
	@n=0; for suite in $(SUITES); do \
		$(TIMED) "$$suite" $(MAKE) --no-print-directory $$suite || exit 1; n=$$((n + 1)); \
	done; echo "suites: $$n passed, 0 failed"

libraries: lib hooks-lib

# Release, so property tests run fast; includes tests/header.rs.
# The soak test runs once, in the hooks target dir, with parking_lot's
# deadlock detection on, for SOAK_SECS seconds (60 here, in CI and for
# users alike; a bare `cargo test` runs it for 10 s). The deterministic
# restore-race, deadline-index race, journal append-order, mount-during-
# unmount and eviction race tests (core/tests/restore_race.rs,
# core/tests/deadline_index.rs, core/tests/journal_recording.rs,
# core/tests/core_segments.rs, at_exact_points, and
# core/tests/eviction_windows.rs, with_hooks) need the hooks too and run
# there after it.
test-rust:
	$(CARGO) test --release -- --skip soak_mixed_operations
	SOAK_SECS=$(SOAK_SECS) $(CARGO) test -p mooncake-meta-core --release --features "test-hooks deadlock-detection" --target-dir $(HOOKS) \
		--test core_maintenance_panic --test soak -- --nocapture
	$(CARGO) test -p mooncake-meta-core --release --features "test-hooks deadlock-detection" --target-dir $(HOOKS) \
		--test restore_race --test deadline_index --test journal_recording --test core_segments at_exact_points
	$(CARGO) test -p mooncake-meta-core --release --features "test-hooks deadlock-detection" --target-dir $(HOOKS) \
		--test eviction_windows with_hooks

# The Rust tests of the C ABI (the lib's ffi:: unit tests, tests/ffi_legacy.rs,
# tests/fuzz_c_abi.rs with MOONCAKE_META_CABI_CASES=$(VALGRIND_CABI_CASES))
# under valgrind memcheck: any error or definite leak fails; no suppressions.
# Then the self-test: a deliberately leaked C error object must fail it.
VALGRIND_CABI_CASES ?= 10000
test-rust-valgrind:
	$(call need,valgrind,$(call apt,valgrind))
	MOONCAKE_META_CABI_CASES=$(VALGRIND_CABI_CASES) CARGO=$(CARGO) scripts/rust-valgrind.sh
	CARGO=$(CARGO) scripts/rust-valgrind.sh --self-test

# The cargo-fuzz targets (a workspace of their own, fuzz/) compile: the
# long runs are `cargo fuzz`'s, but an API change must not break them
# unnoticed.
test-checks:
	$(CARGO) check --manifest-path fuzz/Cargo.toml --all-targets --release
	scripts/check-header.sh --self-test
	scripts/check-symbols.sh
	scripts/check-symbols.sh --self-test
	scripts/check-allocator.sh
	scripts/check-allocator.sh --self-test
	scripts/check-unsafe.sh
	scripts/check-unsafe.sh --self-test
	python3 scripts/ab.py --self-test

test-c:
	$(MAKE) -C c_tests all

# make install into a scratch prefix, then check the layout, the SONAME,
# the stripping and debuglink, the pkg-config and CMake files, that a
# program builds against it through pkg-config (shared and static), and
# that make uninstall leaves nothing behind.
test-install: lib
	scripts/check-install.sh

# The out-of-tree consumers (tests/consumers/<name>/): make install into a
# scratch prefix, copy each consumer outside the repository and run its
# build-and-run.sh, which follows only the README's instructions.
test-consumers: lib
	scripts/check-consumers.sh

# The Go package against the release static library. GOTOOLCHAIN=local: never
# download another Go. -count=1: go caches test results (and cgo objects)
# without looking at the library or at ../include, so always relink and
# rerun; the header's hash in CGO_CFLAGS recompiles the cgo code when the
# header changes. The last run turns on the strict cgo pointer checks
# (GOEXPERIMENT=cgocheck2, still supported by Go 1.26).
GO_HEADER_HASH = $(shell sha256sum include/mooncake_meta.h | cut -c1-16)
GO_ENV = GOTOOLCHAIN=local CGO_ENABLED=1 CGO_CFLAGS="-O2 -g -DMOONCAKE_META_HEADER_HASH=0x$(GO_HEADER_HASH)"
# Then a few tests through each other way of linking: the shared library
# (its SONAME needs the .so.<ABI> link, as in c_tests), an installed copy
# found with pkg-config, and one named by CGO_CFLAGS/CGO_LDFLAGS.
GO_PREFIX   := $(CURDIR)/target/go-prefix
GO_LINK_RUN := -count=1 -run 'TestLibraryVersion|TestSnapshotRoundTrip'
test-go: lib
	$(call need,go,$(GO_HINT))
	$(call need,$(CC),$(call apt,gcc))
	$(call need,pkg-config,$(call apt,pkg-config))
	cd go && $(GO_ENV) go vet ./... \
		&& $(GO_ENV) go test -count=1 ./... \
		&& $(GO_ENV) go test -count=1 -race ./... \
		&& $(GO_ENV) GOEXPERIMENT=cgocheck2 go test -count=1 ./...
	ln -sf libmooncake_meta.so $(RELEASE)/$(SONAME)
	cd go && $(GO_ENV) go test $(GO_LINK_RUN) -tags mooncake_shared ./...
	rm -rf $(GO_PREFIX) && $(MAKE) --no-print-directory install PREFIX=$(GO_PREFIX) >/dev/null
	cd go && $(GO_ENV) PKG_CONFIG_PATH=$(GO_PREFIX)/lib/pkgconfig LD_LIBRARY_PATH=$(GO_PREFIX)/lib \
		go test $(GO_LINK_RUN) -tags mooncake_pkgconfig ./...
	cd go && GOTOOLCHAIN=local CGO_CFLAGS="-O2 -g -I$(GO_PREFIX)/include -DMOONCAKE_META_HEADER_HASH=0x$(GO_HEADER_HASH)" \
		CGO_LDFLAGS="$(GO_PREFIX)/lib/libmooncake_meta.a" go test $(GO_LINK_RUN) -tags mooncake_external ./...
# The Go HA module (go/ha, its own go.mod, so package mooncakemeta gains no
# etcd dependency) against real etcd servers that its tests start on
# loopback ports (go/ha/internal/etcdtest). MOONCAKE_META_REQUIRE_ETCD=1
# turns a missing etcd binary into a failure instead of skipped tests. The
# etcd engine (internal/engine, no cgo) and the reference server's package
# (server: mooncake-meta-server's HTTP side, in-process servers on
# 127.0.0.1:0) also run under -race.
# Package failover runs target/mooncake-meta-server processes (SIGKILL,
# SIGSTOP/SIGCONT, the loss of an etcd member).
HA_SERVER_BIN := $(CURDIR)/target/mooncake-meta-server
HA_ENV = $(GO_ENV) MOONCAKE_META_REQUIRE_ETCD=1 MOONCAKE_META_SERVER_BIN=$(HA_SERVER_BIN)
test-ha: lib server
	$(call need,go,$(GO_HINT))
	$(call need,etcd,$(call apt,etcd-server))
	cd go/ha && $(HA_ENV) go vet ./... \
		&& $(HA_ENV) go test -count=1 ./... \
		&& $(HA_ENV) go test -count=1 -race ./internal/engine/ ./server/
# The soak (not in make test): HA_SOAK_FAILOVERS failovers in a row,
# alternating roles, under a continuous write load with soft pins; it
# prints the acknowledged writes lost (and fails unless 0), the failover
# times and the durable write rates, then the durable-write figures
# (bench/README.md, "High availability").
HA_SOAK_FAILOVERS ?= 20
test-ha-soak: lib server
	$(call need,go,$(GO_HINT))
	$(call need,etcd,$(call apt,etcd-server))
	cd go/ha && $(HA_ENV) MOONCAKE_META_HA_SOAK=$(HA_SOAK_FAILOVERS) go test -count=1 -timeout 60m -v \
		-run '^(TestSoak|TestDurableWriteFigures)$$' ./failover/
# etcd and two servers in a temporary directory, removed at the end.
ha-demo: server
	$(call need,etcd,$(call apt,etcd-server))
	$(call need,curl,$(call apt,curl))
	$(call need,python3,$(call apt,python3))
	scripts/ha-demo.sh $(HA_SERVER_BIN)
# The reference server (go/ha/cmd/mooncake-meta-server) as one binary with
# the release static library linked in (no shared library needed to run).
server: lib
	$(call need,go,$(GO_HINT))
	cd go/ha && $(GO_ENV) go build -o ../../target/mooncake-meta-server ./cmd/mooncake-meta-server
# The Rust sys crate (rust-sys/, debug builds): linked to the release shared
# library, then with the core compiled in (feature bundled, which adds the
# declaration/layout consistency test), then that test's mutation self-check.
test-sys: lib hooks-lib
	$(CARGO) test -p mooncake-meta-sys
	$(CARGO) test -p mooncake-meta-sys --features bundled
	MOONCAKE_META_LIB_DIR=../$(HOOKS)/release $(CARGO) test -p mooncake-meta-sys --features test-hooks --test panic
	rust-sys/scripts/mutation-check.sh

# Every fenced C, C++, Go and Rust block of README.md that is a whole program
# (it has a main) is built and run as shown; every other one appears verbatim
# in a file the tests build. Then the quick-start examples are built and run.
readme-check: lib
	scripts/readme-check.sh
	scripts/readme-check.sh --self-test

# Every section reference (§N, "docs/CONTRACT.md section N") is a heading of
# docs/CONTRACT.md, nothing names a document outside the repository, and every
# relative Markdown link names an existing file; then the self-test.
docs-check:
	scripts/check-docs.sh
	scripts/check-docs.sh --self-test

# rustdoc of the core crate and the C-ABI crate with warnings as errors
# (broken intra-doc links included; --release reuses the dependencies the
# release build already compiled, so this takes seconds after `make lib`),
# then the C API reference: a Markdown page generated from the header's doc
# comments by scripts/c-api-doc.py (Python's standard library only, so there
# is nothing to provision), which fails on an undocumented item or a
# reference to a name the header does not declare.
docs:
	$(call need,$(CARGO),$(RUST_HINT))
	$(call need,python3,$(call apt,python3))
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --release --no-deps -p mooncake-meta-core -p mooncake_meta
	python3 scripts/c-api-doc.py include/mooncake_meta.h target/doc/c-api/mooncake_meta.md

# The benchmark harness (src/bin/mooncake-meta-bench, bench/README.md): every
# scenario of the benchmark issue, one JSON line per figure plus a table;
# then the C-boundary micro-benchmark.
bench: target/c/read_c
	$(CARGO) run --release --bin mooncake-meta-bench
	$(CARGO) bench --bench ffi_boundary

# The short run CI does as part of `make test`. It fails (exit 1) when a
# repetition, a correctness check (CHECK_FAILED) or read_c fails; a missed
# target does not fail it (bench/README.md, "Output").
bench-quick: target/c/read_c
	$(CARGO) run --release --bin mooncake-meta-bench -- --quick

# The scale run (not in CI; < 30 min on 2 cores and 24 GiB): scenario
# `scale` at 10^5, 10^6 and 10^7 objects and the footprint at 10^8, which is
# built only when a projection fits in MemAvailable (else: "not measured").
bench-scale:
	$(CARGO) run --release --bin mooncake-meta-bench -- --scale

# The C ABI read benchmark: a C program linked to the shared library (no LTO
# inlining across the boundary); the harness's `read-c` scenario runs it.
target/c/read_c: bench/read_c.c include/mooncake_meta.h lib
	$(call need,$(CC),$(call apt,gcc))
	@mkdir -p target/c
	$(CC) -std=c11 -O2 -Wall -Wextra -Wpedantic -Werror -Iinclude bench/read_c.c \
		-L$(RELEASE) -Wl,-rpath,$(CURDIR)/$(RELEASE) -lmooncake_meta -lpthread -o $@

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --all-targets -- -D warnings
	$(CARGO) clippy --all-targets --features test-hooks -- -D warnings
	$(CARGO) clippy -p mooncake-meta-sys --all-targets -- -D warnings
	$(CARGO) clippy -p mooncake-meta-sys --all-targets --all-features -- -D warnings
	$(call need,go,$(GO_HINT))
	@test -z "$$(gofmt -l go)" || { echo "gofmt: these files need formatting:" >&2; gofmt -l go >&2; exit 1; }
	cd go && GOTOOLCHAIN=local go vet ./...
	cd go/ha && GOTOOLCHAIN=local go vet ./...

bless-header:
	MOONCAKE_META_BLESS=1 $(CARGO) test --release --test header committed_header_matches_generated
	@git --no-pager diff --stat -- include/mooncake_meta.h 2>/dev/null || true

clean:
	$(CARGO) clean
	rm -rf $(HOOKS)
	$(MAKE) -C c_tests clean
