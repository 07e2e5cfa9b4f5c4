# libmooncake_meta: the single entry point.
#
#   make build         release libraries (static + shared) and the header check
#   make demo          build the libraries and run the C demo
#   make test          every suite: Rust, header and symbol checks (with their
#                      mutation self-tests), C in static/dynamic/ASan+UBSan/
#                      valgrind modes, C++, the Rust sys crate
#   make bench         benchmarks (make bench-quick: a short run)
#   make lint          cargo fmt --check, clippy -D warnings
#   make bless-header  copy the generated header over include/mooncake_meta.h
#   make clean
#
# A missing tool fails the target and names the package to install.

CARGO   ?= cargo
CC      ?= cc
CXX     ?= c++
RELEASE := target/release
HOOKS   := target-hooks
TIMED   := scripts/timed.sh

.PHONY: all build lib hooks-lib libraries demo test test-rust test-checks test-c test-sys bench bench-quick lint \
        bless-header tools clean
all: build

# need TOOL HOW: fail, saying how to install it, when TOOL is missing.
need = @command -v $(1) >/dev/null 2>&1 || { echo "error: '$(1)' is required; $(2)" >&2; exit 1; }
RUST_HINT := install a Rust toolchain >= 1.80 with rustup
apt = install it with: apt-get install -y $(1)

tools:
	$(call need,$(CARGO),$(RUST_HINT))
	$(call need,$(CC),$(call apt,gcc))
	$(call need,$(CXX),$(call apt,g++))
	$(call need,nm,$(call apt,binutils))
	$(call need,readelf,$(call apt,binutils))
	$(call need,valgrind,$(call apt,valgrind))
	@echo 'int main(void){return 0;}' | $(CC) -fsanitize=address,undefined -x c - -o /dev/null 2>/dev/null || { \
		echo "error: $(CC) cannot build with -fsanitize=address,undefined; install: apt-get install -y libasan8 libubsan1" >&2; exit 1; }

lib:
	$(call need,$(CARGO),$(RUST_HINT))
	$(CARGO) build --release

# The same library with the test-only hooks, in its own target directory so
# the default build never contains them.
hooks-lib:
	$(CARGO) build --release --features test-hooks --target-dir $(HOOKS)

build: lib
	scripts/check-header.sh

demo: lib
	$(call need,$(CC),$(call apt,gcc))
	@mkdir -p target/c
	$(CC) -std=c11 -Wall -Wextra -Wpedantic -Werror -Iinclude examples/basics.c \
		$(RELEASE)/libmooncake_meta.a -lpthread -ldl -lm -o target/c/basics
	./target/c/basics

# Each suite is a target; `test` runs them in order, timing each, and stops
# at the first failure.
SUITES := test-rust libraries test-checks test-c test-sys

test: tools
	@n=0; for suite in $(SUITES); do \
		$(TIMED) "$$suite" $(MAKE) --no-print-directory $$suite || exit 1; n=$$((n + 1)); \
	done; echo "suites: $$n passed, 0 failed"

libraries: lib hooks-lib

# Release, so property tests run fast; includes tests/header.rs.
test-rust:
	$(CARGO) test --release
	$(CARGO) test --release --features test-hooks --target-dir $(HOOKS) --test core_maintenance_panic

test-checks:
	scripts/check-header.sh --self-test
	scripts/check-symbols.sh
	scripts/check-symbols.sh --self-test

test-c:
	$(MAKE) -C c_tests all

# The Rust sys crate (rust-sys/, debug builds): linked to the release shared
# library, then with the core compiled in (feature bundled, which adds the
# declaration/layout consistency test), then that test's mutation self-check.
test-sys: lib
	$(CARGO) test -p mooncake-meta-sys
	$(CARGO) test -p mooncake-meta-sys --features bundled
	rust-sys/scripts/mutation-check.sh

bench:
	$(CARGO) bench --bench ffi_boundary

bench-quick:
	$(CARGO) bench --bench ffi_boundary -- --quick

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --all-targets -- -D warnings
	$(CARGO) clippy --all-targets --features test-hooks -- -D warnings

bless-header:
	MOONCAKE_META_BLESS=1 $(CARGO) test --release --test header committed_header_matches_generated
	@git --no-pager diff --stat -- include/mooncake_meta.h 2>/dev/null || true

clean:
	$(CARGO) clean
	rm -rf $(HOOKS)
	$(MAKE) -C c_tests clean
