#!/usr/bin/env bash
# Every function declared in include/mooncake_meta.h must be used by
# include/mooncake_meta.hpp (called, or passed to a helper that calls it),
# outside comments, so the C++ header cannot silently fall behind the C one.
#
# usage: ./check_hpp_coverage.sh [C_HEADER HPP]   check (default: the repository's)
#        ./check_hpp_coverage.sh --self-test       it must fail on an .hpp missing a call
set -euo pipefail
cd "$(dirname "$0")"
command -v python3 >/dev/null || { echo "check_hpp_coverage: python3 is required (apt-get install -y python3)" >&2; exit 1; }

check() {
    python3 - "$1" "$2" <<'PY'
import re, sys
c_header, hpp = sys.argv[1], sys.argv[2]
decls = re.findall(r"^[A-Za-z_][^;()]*?\b(mooncake_meta_[a-z0-9_]+)\(", open(c_header).read(), re.M)
if len(decls) < 50:
    sys.exit(f"check_hpp_coverage: found only {len(decls)} functions in {c_header}: is it the C header?")
code = open(hpp).read()
code = re.sub(r"/\*.*?\*/", " ", code, flags=re.S)
code = re.sub(r"//[^\n]*", " ", code)
# Kept for 0.1.0 callers and superseded: the C++ header calls what
# replaced it (the comment in include/mooncake_meta.h says what).
superseded = {"mooncake_meta_remove_by_regex": "mooncake_meta_remove_by_regex_in_tenant"}
for old, new in superseded.items():
    if old not in decls or new not in decls:
        sys.exit(f"check_hpp_coverage: {old} or its replacement {new} is not in {c_header}")
missing = [f for f in sorted(set(decls) - set(superseded)) if not re.search(r"\b" + f + r"\b", code)]
for f in missing:
    print(f"check_hpp_coverage: FAIL: {hpp} never uses {f}", file=sys.stderr)
print(f"check_hpp_coverage: {len(set(decls)) - len(superseded) - len(missing)} of {len(set(decls)) - len(superseded)} C functions are used by {hpp} ({len(superseded)} superseded left out)")
sys.exit(1 if missing else 0)
PY
}

if [ "${1:-}" = "--self-test" ]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    # Take out the one call of mooncake_meta_key_count (a mention left in a
    # comment must not count) and the check must name it.
    sed -e 's/mooncake_meta_key_count(/\/\* mooncake_meta_key_count \*\/ key_count_gone(/' \
        ../include/mooncake_meta.hpp >"$tmp/mutant.hpp"
    if cmp -s ../include/mooncake_meta.hpp "$tmp/mutant.hpp"; then
        echo "check_hpp_coverage self-test: FAIL: the mutation did not change the header" >&2
        exit 1
    fi
    if check ../include/mooncake_meta.h "$tmp/mutant.hpp" >"$tmp/out" 2>&1; then
        echo "check_hpp_coverage self-test: FAIL: a header missing mooncake_meta_key_count passed" >&2
        exit 1
    fi
    grep -q "never uses mooncake_meta_key_count$" "$tmp/out" || {
        echo "check_hpp_coverage self-test: FAIL: the check failed for another reason:" >&2
        cat "$tmp/out" >&2
        exit 1
    }
    echo "check_hpp_coverage self-test: ok: a header missing a call fails"
    exit 0
fi

check "${1:-../include/mooncake_meta.h}" "${2:-../include/mooncake_meta.hpp}"
