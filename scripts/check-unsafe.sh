#!/usr/bin/env bash
# The core crate (core/src) keeps its unsafe code in one audited module,
# core/src/memory.rs (prefetch hints, the cycle counter, the journal chunks'
# fill buffer, the presized tables' huge-page region and fixed vectors, the
# faulting in of a vector's spare room), and nowhere else:
#
#   - the crate root denies unsafe code (`#![deny(unsafe_code)]`);
#   - exactly one `allow(unsafe_code)` exists, in core/src/lib.rs, on
#     `mod memory;`;
#   - the word `unsafe` as code (a block, fn, impl or trait) appears in no
#     other file of core/src;
#   - every `unsafe {` block in memory.rs has a `// SAFETY:` comment in the
#     six lines before it.
#
# The compiler enforces the first rule; this check makes a second allowance
# or an unexplained block fail CI instead of relying on review.
#
# usage: scripts/check-unsafe.sh              check core/src
#        scripts/check-unsafe.sh --self-test  show that the check fails on
#                                             copies of core/src with each
#                                             rule broken, and passes on it
# env:   SRC overrides the source tree checked.
set -euo pipefail

cd "$(dirname "$0")/.."

# check DIR: 0 when DIR (a copy of core/src) keeps the rules above.
check() {
    local dir=$1 ok=0 allows others
    if ! grep -q '^#!\[deny(unsafe_code)\]' "$dir/lib.rs"; then
        echo "check-unsafe: FAIL: $dir/lib.rs does not deny unsafe code" >&2
        ok=1
    fi
    allows=$(grep -rn --include='*.rs' 'allow(unsafe_code)' "$dir" || true)
    if [ "$(printf '%s' "$allows" | grep -c .)" -ne 1 ] ||
        ! grep -A1 'allow(unsafe_code)' "$dir/lib.rs" 2>/dev/null | grep -q '^mod memory;'; then
        echo "check-unsafe: FAIL: expected exactly one allow(unsafe_code), on 'mod memory;' in lib.rs; found:" >&2
        printf '%s\n' "${allows:-none}" >&2
        ok=1
    fi
    # `unsafe` followed by a block, fn, impl or trait, outside comments.
    others=$(grep -rnE --include='*.rs' '^[^/]*\bunsafe[[:space:]]*(\{|fn\b|impl\b|trait\b|extern\b)' "$dir" |
        grep -v "^$dir/memory.rs:" || true)
    if [ -n "$others" ]; then
        echo "check-unsafe: FAIL: unsafe code outside memory.rs:" >&2
        printf '%s\n' "$others" >&2
        ok=1
    fi
    if [ -f "$dir/memory.rs" ]; then
        local unexplained
        unexplained=$(awk '
            /\/\/ SAFETY:/ { last = NR }
            /^[^\/]*unsafe[[:space:]]*\{/ { if (!last || NR - last > 6) print FILENAME ":" NR ": " $0 }
        ' "$dir/memory.rs")
        if [ -n "$unexplained" ]; then
            echo "check-unsafe: FAIL: unsafe blocks without a SAFETY comment:" >&2
            printf '%s\n' "$unexplained" >&2
            ok=1
        fi
    fi
    return $ok
}

if [ "${1:-}" = "--self-test" ]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    fails=0
    expect_fail() {
        local what=$1
        if check "$tmp/src" 2>/dev/null; then
            echo "check-unsafe self-test: FAIL: the check passed with $what" >&2
            fails=1
        else
            echo "check-unsafe self-test: ok: fails with $what"
        fi
    }
    fresh() { rm -rf "$tmp/src" && cp -r core/src "$tmp/src"; }
    fresh
    check "$tmp/src" || { echo "check-unsafe self-test: FAIL: the unchanged tree does not pass" >&2; exit 1; }
    echo "check-unsafe self-test: ok: the unchanged tree passes"
    sed -i 's/^#!\[deny(unsafe_code)\]/#![allow(unsafe_code)]/' "$tmp/src/lib.rs"
    expect_fail "the crate root allowing unsafe code"
    fresh
    printf '\n#[allow(unsafe_code)]\nfn f() {}\n' >> "$tmp/src/arena.rs"
    expect_fail "a second allow(unsafe_code)"
    fresh
    printf '\nfn f(p: *const u8) -> u8 { unsafe { *p } }\n' >> "$tmp/src/arena.rs"
    expect_fail "an unsafe block outside memory.rs"
    fresh
    printf '\npub(crate) fn g(p: *const u8) -> u8 {\n    unsafe { *p }\n}\n' >> "$tmp/src/memory.rs"
    expect_fail "an unsafe block without a SAFETY comment"
    exit $fails
fi

SRC=${SRC:-core/src}
if check "$SRC"; then
    echo "check-unsafe: ok: unsafe code in $SRC only in memory.rs, every block explained"
else
    exit 1
fi
