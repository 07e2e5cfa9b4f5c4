#!/usr/bin/env bash
# The built library exports exactly the functions its header declares
# (CONVENTIONS.md, "The C boundary"):
#   - default build: dynamic symbols of target/release/libmooncake_meta.so ==
#     functions of include/mooncake_meta.h, and the static library defines the
#     same mooncake_meta_* set and no foreign C symbol beyond the Rust runtime's;
#   - test-hooks build (target-hooks/): the same plus the hooks declared in
#     c_tests/test_hooks.h, which the default build must not export.
#
# usage: scripts/check-symbols.sh              run the check (libraries must be built)
#        scripts/check-symbols.sh --self-test  show that it fails on mutated headers
# env:   HEADER, HOOKS_HEADER, LIB_DIR, HOOKS_LIB_DIR override the defaults.
set -euo pipefail

cd "$(dirname "$0")/.."
HEADER=${HEADER:-include/mooncake_meta.h}
HOOKS_HEADER=${HOOKS_HEADER:-c_tests/test_hooks.h}
LIB_DIR=${LIB_DIR:-target/release}
HOOKS_LIB_DIR=${HOOKS_LIB_DIR:-target-hooks/release}
CC=${CC:-cc}

need() {
    command -v "$1" >/dev/null 2>&1 || {
        echo "check-symbols: '$1' is missing; install it with: apt-get install -y $2" >&2
        exit 2
    }
}
need nm binutils
need readelf binutils
need "$CC" gcc

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Function names declared in C headers: the C preprocessor drops comments,
# macros and C++-only blocks; every remaining `name(` is a declaration.
declared() {
    local h
    for h in "$@"; do
        [ -f "$h" ] || { echo "check-symbols: no header $h" >&2; exit 2; }
        sed '/^[[:space:]]*#[[:space:]]*include/d' "$h"
    done | "$CC" -E -P -x c - | tr '\n' ' ' |
        grep -oE '[A-Za-z_][A-Za-z0-9_]*[[:space:]]*\(' | tr -d ' (' | sort -u
}

# Defined dynamic symbols of a shared library.
exported_dynamic() {
    nm -D --defined-only "$1" | awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }' | sort -u
}

# Defined global/weak symbols of a static library, as "TYPE BIND NAME".
# readelf, not nm: nm's LTO plugin chokes on the bitcode Rust embeds.
static_globals() {
    readelf -Ws --wide "$1" 2>/dev/null |
        awk '($5 == "GLOBAL" || $5 == "WEAK") && $7 != "UND" && NF >= 8 { print $4, $5, $8 }' | sort -u
}

failed=0
fail() { echo "check-symbols: FAIL: $*" >&2; failed=1; }

# compare LABEL EXPECTED_FILE ACTUAL_FILE
compare() {
    local missing extra
    missing=$(comm -23 "$2" "$3")
    extra=$(comm -13 "$2" "$3")
    [ -z "$missing" ] || fail "$1: declared in the header but not exported:" $missing
    [ -z "$extra" ] || fail "$1: exported but not declared in the header:" $extra
}

check_shared() { # LIB EXPECTED
    [ -f "$1" ] || { fail "$1 does not exist (build it first: make build)"; return; }
    exported_dynamic "$1" >"$tmp/dyn"
    compare "$1" "$2" "$tmp/dyn"
}

check_static() { # LIB EXPECTED
    [ -f "$1" ] || { fail "$1 does not exist (build it first: make build)"; return; }
    static_globals "$1" >"$tmp/static"
    awk '{ print $3 }' "$tmp/static" | grep -E '^mooncake_meta_' | sort -u >"$tmp/static_api" || true
    compare "$1" "$2" "$tmp/static_api"
    # Anything else global must belong to the Rust runtime: mangled Rust
    # symbols, compiler intrinsics (__*), LLVM-internal anon.*, the unwinder
    # personality, or weak compiler-builtins (mem*/libm) definitions.
    local foreign
    foreign=$(awk '$3 !~ /^mooncake_meta_/ && $3 !~ /^(_ZN|_R|__|anon\.|DW\.ref\.rust_eh_personality$|rust_eh_personality$)/ && $2 != "WEAK" { print $3 }' "$tmp/static")
    [ -z "$foreign" ] || fail "$1: foreign global symbols (not ours, not the Rust runtime's):" $foreign
}

run_check() {
    declared "$HEADER" >"$tmp/api"
    declared "$HOOKS_HEADER" >"$tmp/hooks"
    [ -s "$tmp/api" ] || fail "$HEADER declares no function"
    [ -s "$tmp/hooks" ] || fail "$HOOKS_HEADER declares no function"
    local bad
    bad=$(grep -v '^mooncake_meta_' "$tmp/api" "$tmp/hooks" || true)
    [ -z "$bad" ] || fail "functions without the mooncake_meta_ prefix:" $bad

    check_shared "$LIB_DIR/libmooncake_meta.so" "$tmp/api"
    check_static "$LIB_DIR/libmooncake_meta.a" "$tmp/api"
    local hook
    for hook in $(cat "$tmp/hooks"); do
        if grep -qx "$hook" "$tmp/dyn" 2>/dev/null; then
            fail "test hook $hook is exported by the default build ($LIB_DIR)"
        fi
    done

    sort -u "$tmp/api" "$tmp/hooks" >"$tmp/api_hooks"
    check_shared "$HOOKS_LIB_DIR/libmooncake_meta.so" "$tmp/api_hooks"
    check_static "$HOOKS_LIB_DIR/libmooncake_meta.a" "$tmp/api_hooks"

    if [ "$failed" -ne 0 ]; then
        return 1
    fi
    echo "check-symbols: ok: $(wc -l <"$tmp/api") functions exported as declared;" \
        "$(wc -l <"$tmp/hooks") test hooks only in $HOOKS_LIB_DIR"
}

# expect_failure NAME EXPECTED_MESSAGE [VAR=VALUE...]: the check must fail, saying so.
expect_failure() {
    local name=$1 message=$2 out
    shift 2
    if out=$(env "$@" "$0" 2>&1); then
        echo "check-symbols self-test: FAIL: '$name' was not detected" >&2
        return 1
    fi
    if ! grep -qF -- "$message" <<<"$out"; then
        echo "check-symbols self-test: FAIL: '$name' failed for another reason:" >&2
        echo "$out" >&2
        return 1
    fi
    echo "check-symbols self-test: ok: $name -> $(grep -F -- "$message" <<<"$out" | head -1)"
}

self_test() {
    local m="$tmp/mutants"
    mkdir -p "$m"
    # A declaration the library does not export.
    sed 's|^#endif  /\* MOONCAKE_META_H \*/|mooncake_meta_status mooncake_meta_not_there(struct mooncake_meta_error **err);\n&|' \
        "$HEADER" >"$m/extra.h"
    # An exported function the header forgets.
    grep -v '^const char \*mooncake_meta_version(void);' "$HEADER" >"$m/missing.h"
    # A hook that the hooks build does not have.
    printf 'int mooncake_meta_test_not_there(void);\n' | cat "$HOOKS_HEADER" - >"$m/hooks_extra.h"
    for f in extra missing; do
        cmp -s "$HEADER" "$m/$f.h" && { echo "self-test: mutation $f did not change the header" >&2; exit 1; }
    done

    local rc=0
    expect_failure "undeclared export" "exported but not declared in the header: mooncake_meta_version" \
        HEADER="$m/missing.h" || rc=1
    expect_failure "declared but not exported" "declared in the header but not exported: mooncake_meta_not_there" \
        HEADER="$m/extra.h" || rc=1
    expect_failure "missing test hook" "declared in the header but not exported: mooncake_meta_test_not_there" \
        HOOKS_HEADER="$m/hooks_extra.h" || rc=1
    # A default build that exports the hooks (the hooks build in its place).
    expect_failure "hooks in the default build" "test hook mooncake_meta_test_panic is exported by the default build" \
        LIB_DIR="$HOOKS_LIB_DIR" || rc=1
    # And the unmutated inputs pass, so the failures above are the mutations'.
    "$0" >/dev/null || { echo "check-symbols self-test: FAIL: the real check fails" >&2; rc=1; }
    [ "$rc" -eq 0 ] && echo "check-symbols self-test: ok: every mutation was caught"
    return "$rc"
}

case "${1:-}" in
    "") run_check ;;
    --self-test) self_test ;;
    *) echo "usage: $0 [--self-test]" >&2; exit 2 ;;
esac
