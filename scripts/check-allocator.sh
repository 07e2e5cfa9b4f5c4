#!/usr/bin/env bash
# The library sets no global allocator: a Rust library loaded into a C, C++
# or Go process must allocate with the system allocator (malloc), like its
# host, and must not impose its own on other Rust code linked beside it.
#
# How it is checked (something that fails if the property breaks): in a Rust
# binary, every allocation goes through the `__rust_alloc` shim. Without a
# `#[global_allocator]` the shim forwards to the standard library's default
# (`__rdl_alloc`, the System allocator); with one, it calls the custom
# allocator instead and `__rdl_alloc` is not referenced. So we disassemble
# `__rust_alloc` in the shared library (symbols are kept: release has
# debug = 1) and require a call or jump to `__rdl_alloc`. We also require
# that no `#[global_allocator]` attribute appears in src/.
#
# usage: scripts/check-allocator.sh              check target/release/libmooncake_meta.so
#        scripts/check-allocator.sh --self-test  build two tiny cdylibs with rustc, one
#                                                with a #[global_allocator], and show
#                                                that the check passes and fails on them
# env:   LIB overrides the library checked; SRC the source tree grepped.
set -euo pipefail

cd "$(dirname "$0")/.."
LIB=${LIB:-target/release/libmooncake_meta.so}
SRC=${SRC:-src}

need() {
    command -v "$1" >/dev/null 2>&1 || {
        echo "check-allocator: '$1' is missing; install it with: apt-get install -y $2" >&2
        exit 2
    }
}
need nm binutils
need objdump binutils

# check LIB SRC: 0 when LIB's allocation shim forwards to the default allocator
# and SRC has no #[global_allocator].
check() {
    local lib=$1 src=$2 shim
    [ -f "$lib" ] || { echo "check-allocator: FAIL: $lib does not exist (build it first: make build)" >&2; return 1; }
    if [ -n "$src" ] && grep -rn --include='*.rs' '#\[global_allocator\]' "$src" >&2; then
        echo "check-allocator: FAIL: $src declares a #[global_allocator] (above)" >&2
        return 1
    fi
    # Legacy mangling `__rust_alloc`, v0 mangling `..._7___rustc12___rust_alloc`.
    shim=$(nm "$lib" | awk '!found && $2 ~ /^[tT]$/ && $3 ~ /__rust_alloc$/ { print $3; found = 1 }')
    if [ -z "$shim" ]; then
        echo "check-allocator: FAIL: $lib has no __rust_alloc symbol (stripped, or not a Rust library?)" >&2
        return 1
    fi
    if ! objdump -d --no-show-raw-insn --disassemble="$shim" "$lib" |
        grep -E '(call|jmp)[[:alnum:]]*[[:space:]].*__rdl_alloc>' >/dev/null; then
        echo "check-allocator: FAIL: $lib: __rust_alloc does not forward to the default allocator" \
            "(__rdl_alloc): a #[global_allocator] is set" >&2
        return 1
    fi
    echo "check-allocator: ok: $lib allocates through the system allocator (no #[global_allocator])"
}

self_test() {
    need rustc "a Rust toolchain (rustup)"
    local tmp rc=0
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' RETURN
    mkdir -p "$tmp/with/src" "$tmp/without/src"
    cat >"$tmp/without/src/lib.rs" <<'EOF'
#[no_mangle]
pub extern "C" fn f() -> usize {
    std::hint::black_box(vec![1u8; 10]).len()
}
EOF
    cat - "$tmp/without/src/lib.rs" >"$tmp/with/src/lib.rs" <<'EOF'
use std::alloc::{GlobalAlloc, Layout, System};
struct Counting;
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 { unsafe { System.alloc(l) } }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) { unsafe { System.dealloc(p, l) } }
}
#[global_allocator]
static GLOBAL: Counting = Counting;
EOF
    local v
    for v in with without; do
        rustc --edition 2021 -O -C debuginfo=1 -C panic=unwind --crate-type cdylib \
            --crate-name "alloc_$v" -o "$tmp/$v/lib.so" "$tmp/$v/src/lib.rs" 2>"$tmp/$v.log" || {
            echo "check-allocator self-test: FAIL: rustc could not build the $v sample:" >&2
            cat "$tmp/$v.log" >&2
            return 1
        }
    done
    if check "$tmp/without/lib.so" "$tmp/without/src" >/dev/null 2>&1; then
        echo "check-allocator self-test: ok: a library without a global allocator passes"
    else
        echo "check-allocator self-test: FAIL: a library without a global allocator fails:" >&2
        check "$tmp/without/lib.so" "$tmp/without/src" || true
        rc=1
    fi
    # The binary check alone (no source grep) must catch it...
    if check "$tmp/with/lib.so" "" >"$tmp/out" 2>&1; then
        echo "check-allocator self-test: FAIL: a #[global_allocator] in the binary was not detected" >&2
        rc=1
    elif grep -q "does not forward to the default allocator" "$tmp/out"; then
        echo "check-allocator self-test: ok: binary check -> $(grep -o 'does not forward.*' "$tmp/out")"
    else
        echo "check-allocator self-test: FAIL: failed for another reason:" >&2
        cat "$tmp/out" >&2
        rc=1
    fi
    # ...and so must the source check.
    if check "$tmp/without/lib.so" "$tmp/with/src" >"$tmp/out" 2>&1; then
        echo "check-allocator self-test: FAIL: a #[global_allocator] in the source was not detected" >&2
        rc=1
    elif grep -q "declares a #\[global_allocator\]" "$tmp/out"; then
        echo "check-allocator self-test: ok: source check -> $(grep -o 'declares a.*' "$tmp/out")"
    else
        echo "check-allocator self-test: FAIL: failed for another reason:" >&2
        cat "$tmp/out" >&2
        rc=1
    fi
    return "$rc"
}

case "${1:-}" in
    "") check "$LIB" "$SRC" ;;
    --self-test) self_test ;;
    *) echo "usage: $0 [--self-test]" >&2; exit 2 ;;
esac
