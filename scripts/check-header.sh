#!/usr/bin/env bash
# The committed header is what cbindgen generates and keeps the boundary's
# conventions (tests/header.rs).
#
# usage: scripts/check-header.sh              run the header tests
#        scripts/check-header.sh --self-test  show that they fail on mutated copies
set -euo pipefail

cd "$(dirname "$0")/.."
HEADER=include/mooncake_meta.h
CARGO=${CARGO:-cargo}
header_test() { "$CARGO" test --release --quiet --test header "$@"; }

if [ "${1:-}" = "" ]; then
    header_test
    exit
elif [ "$1" != "--self-test" ]; then
    echo "usage: $0 [--self-test]" >&2
    exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect_failure NAME MUTANT TEST MESSAGE: TEST must fail on MUTANT, saying MESSAGE.
rc=0
expect_failure() {
    local name=$1 mutant=$2 test=$3 message=$4 out
    if cmp -s "$HEADER" "$mutant"; then
        echo "check-header self-test: FAIL: mutation '$name' did not change the header" >&2
        rc=1
        return
    fi
    if out=$(MOONCAKE_META_COMMITTED_HEADER="$mutant" header_test -- "$test" --exact 2>&1); then
        echo "check-header self-test: FAIL: '$name' was not detected by $test" >&2
        rc=1
    elif ! grep -qF -- "$message" <<<"$out"; then
        echo "check-header self-test: FAIL: $test failed on '$name' for another reason:" >&2
        echo "$out" >&2
        rc=1
    else
        echo "check-header self-test: ok: $name -> $test: $(grep -F -- "$message" <<<"$out" | head -1)"
    fi
}

end='^#endif  /\* MOONCAKE_META_H \*/'

sed 's/^#define MOONCAKE_META_OBJECT_NOT_FOUND -704$/#define MOONCAKE_META_OBJECT_NOT_FOUND -799/' \
    "$HEADER" >"$tmp/constant.h"
expect_failure "changed constant" "$tmp/constant.h" committed_header_matches_generated \
    "differs from the header cbindgen generates"
expect_failure "changed constant" "$tmp/constant.h" status_defines_match_the_library \
    "MOONCAKE_META_OBJECT_NOT_FOUND = -799"

# Drop the doc comment right above mooncake_meta_version's declaration.
awk '
    /^\/\*\*/ { held = ""; holding = 1 }
    holding { held = held $0 "\n"; if ($0 ~ /\*\/$/) holding = 0; next }
    /^const char \*mooncake_meta_version\(void\);/ { held = "" }
    { printf "%s", held; held = ""; print }
' "$HEADER" >"$tmp/undocumented.h"
expect_failure "undocumented function" "$tmp/undocumented.h" \
    every_function_is_documented_with_ownership_and_thread_safety \
    "mooncake_meta_version has no doc comment right above it"

grep -v '^ \* Thread safety:' "$HEADER" >"$tmp/no_thread_safety.h"
expect_failure "doc without thread safety" "$tmp/no_thread_safety.h" \
    every_function_is_documented_with_ownership_and_thread_safety "lacks \"Thread safety:\""

sed 's/^uint32_t mooncake_meta_abi_version(void);$/mooncake_meta_status mooncake_meta_abi_version(void);/' \
    "$HEADER" >"$tmp/no_err.h"
expect_failure "status without err" "$tmp/no_err.h" fallible_functions_return_a_status_and_take_err_last \
    "mooncake_meta_abi_version returns a status but its last parameter is not"

sed "s|$end|/** Ownership: none. Thread safety: any. */\nvoid helper_without_prefix(void);\n&|" \
    "$HEADER" >"$tmp/unprefixed.h"
expect_failure "unprefixed name" "$tmp/unprefixed.h" every_declared_name_has_the_prefix \
    "helper_without_prefix"

# And the real header passes, so the failures above are the mutations'.
if ! header_test >/dev/null 2>&1; then
    echo "check-header self-test: FAIL: the committed header fails its own tests" >&2
    rc=1
fi
[ "$rc" -eq 0 ] && echo "check-header self-test: ok: every mutation was caught"
exit "$rc"
