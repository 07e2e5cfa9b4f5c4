#!/usr/bin/env bash
# make test-rust-valgrind: the Rust tests of the C ABI under valgrind memcheck:
# the unit tests of the C-ABI crate (src/, all of them C ABI),
# tests/ffi_legacy.rs, and tests/fuzz_c_abi.rs with a reduced case count
# (MOONCAKE_META_CABI_CASES, default 10000 here). Any memcheck error or
# definite leak fails the run. No suppressions are used.
#
# The test binaries are found from cargo's own build report
# (`--message-format=json`), never by globbing target/release/deps, where
# binaries of older builds linger under other hashes.
#
# usage: scripts/rust-valgrind.sh              run the tests under memcheck
#        scripts/rust-valgrind.sh --self-test  show that a real leak fails it: the
#                                              ignored fixture test of fuzz_c_abi drops
#                                              a C error object without freeing it
# env:   CARGO (default cargo), MOONCAKE_META_CABI_CASES
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO=${CARGO:-cargo}
CASES=${MOONCAKE_META_CABI_CASES:-10000}
LOGS=target/valgrind
command -v valgrind >/dev/null 2>&1 || {
    echo "rust-valgrind: 'valgrind' is required; install it with: apt-get install -y valgrind" >&2
    exit 2
}
command -v python3 >/dev/null 2>&1 || {
    echo "rust-valgrind: 'python3' is required; install it with: apt-get install -y python3" >&2
    exit 2
}
mkdir -p "$LOGS"

# Build (or reuse) the three test binaries and print "NAME PATH" for each.
binaries() {
    "$CARGO" test -p mooncake_meta --release --no-run --message-format=json \
        --lib --test ffi_legacy --test fuzz_c_abi 2>"$LOGS/build.log" |
        python3 -c '
import json, sys
found = {}
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") != "compiler-artifact" or not m.get("profile", {}).get("test"):
        continue
    if not m.get("executable"):
        continue
    t = m["target"]
    name = "lib" if "lib" in t["kind"] or "rlib" in t["kind"] else t["name"]
    found[name] = m["executable"]
want = ["lib", "ffi_legacy", "fuzz_c_abi"]
missing = [w for w in want if w not in found]
if missing:
    sys.exit("rust-valgrind: cargo reported no test executable for " + ", ".join(missing))
for w in want:
    print(w, found[w])
' || { cat "$LOGS/build.log" >&2; exit 1; }
}

VALGRIND=(valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite
          --show-leak-kinds=definite --num-callers=30)

# memcheck NAME BINARY ARGS...: runs one test binary under memcheck; its log
# goes to $LOGS/NAME.log and the libtest output to $LOGS/NAME.out. Sets
# RC, PASSED, ERRORS and DEFINITE.
memcheck() {
    local name=$1 bin=$2
    shift 2
    set +e
    RUST_BACKTRACE=0 "${VALGRIND[@]}" --log-file="$LOGS/$name.log" "$bin" "$@" >"$LOGS/$name.out" 2>&1
    RC=$?
    set -e
    PASSED=$(sed -n 's/^test result: [A-Za-z]*\. \([0-9]*\) passed.*/\1/p' "$LOGS/$name.out" | tail -n 1)
    ERRORS=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$LOGS/$name.log" | tail -n 1)
    DEFINITE=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$LOGS/$name.log" | tail -n 1)
    PASSED=${PASSED:-0}
    ERRORS=${ERRORS:-?}
    DEFINITE=${DEFINITE:-0}
}

if [ "${1:-}" = "--self-test" ]; then
    while read -r name bin; do
        [ "$name" = fuzz_c_abi ] || continue
        memcheck selftest "$bin" --ignored --exact valgrind_self_test_leaks_one_error_object --test-threads=1
        if [ "$RC" -ne 0 ] && [ "$PASSED" = 1 ] && [ "$DEFINITE" != 0 ]; then
            echo "rust-valgrind --self-test: OK: a leaked error object fails the run (exit $RC, definitely lost $DEFINITE bytes)"
            exit 0
        fi
        echo "rust-valgrind --self-test: FAIL: the deliberate leak was not reported (exit $RC, $PASSED passed, definitely lost $DEFINITE bytes; see $LOGS/selftest.log)" >&2
        exit 1
    done < <(binaries)
    echo "rust-valgrind --self-test: FAIL: no fuzz_c_abi binary" >&2
    exit 1
fi

total=0
failed=0
last=
while read -r name bin; do
    last=$name
    started=$(date +%s)
    case $name in
        fuzz_c_abi) MOONCAKE_META_CABI_CASES=$CASES memcheck "$name" "$bin" --test-threads=1 --nocapture ;;
        *) memcheck "$name" "$bin" --test-threads=1 ;;
    esac
    total=$((total + PASSED))
    status=ok
    if [ "$RC" -ne 0 ]; then
        status="FAILED (exit $RC)"
        failed=$((failed + 1))
    fi
    printf 'rust-valgrind: %-11s %4s tests under memcheck, %s errors, %s bytes definitely lost, %s s: %s\n' \
        "$name" "$PASSED" "$ERRORS" "$DEFINITE" "$(($(date +%s) - started))" "$status"
    if [ "$RC" -ne 0 ]; then
        tail -n 30 "$LOGS/$name.out" >&2
        grep -A 30 -m 3 'definitely lost in\|Invalid \|uninitialised\|ERROR SUMMARY' "$LOGS/$name.log" >&2 || true
    fi
done < <(binaries)
if [ "$last" != fuzz_c_abi ]; then
    echo "rust-valgrind: FAIL: the test binaries were not all run" >&2
    exit 1
fi
echo "rust-valgrind: $total tests under memcheck (fuzz_c_abi: $CASES cases), $failed binaries failed; logs in $LOGS/"
[ "$failed" -eq 0 ]
