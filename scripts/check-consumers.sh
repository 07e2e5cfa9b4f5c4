#!/usr/bin/env bash
# The out-of-tree consumer check (make test-consumers): programs outside
# the repository that use an installed libmooncake_meta, each following
# only the README's instructions.
#
# `make install` into a temporary prefix; then for every directory
# tests/consumers/<name>/ (whatever is there: each is one way of using the
# library), copy it to its own temporary directory outside the repository
# and run its build-and-run.sh there with a clean environment: only
#   PREFIX               the install prefix
#   MOONCAKE_META_REPO   this clone (for what the README points into it,
#                        e.g. the Go replace directive)
# plus what finds the toolchains (PATH, HOME, TMPDIR and, when set, the
# Rust and Go tool locations: CARGO_HOME RUSTUP_HOME GOPATH GOCACHE
# GOMODCACHE). Each consumer's output is printed; any failure fails the
# check, after all consumers have run.
#
# First, the consumers must run what the README says: every sh and cmake
# block of README.md's "Installing and linking" section (but the
# make install/uninstall one, which this script runs itself) appears
# verbatim in a file of tests/consumers/.
#
# usage: scripts/check-consumers.sh [NAME...]   (default: every consumer)
set -euo pipefail

cd "$(dirname "$0")/.."
repo=$(pwd -P)
MAKE=${MAKE:-make}

command -v pkg-config >/dev/null 2>&1 || {
    echo "check-consumers: 'pkg-config' is missing; install it with: apt-get install -y pkg-config" >&2
    exit 2
}

command -v python3 >/dev/null 2>&1 || {
    echo "check-consumers: 'python3' is missing; install it with: apt-get install -y python3" >&2
    exit 2
}
python3 - <<'PY'
import pathlib, re, sys
readme = pathlib.Path("README.md").read_text()
m = re.search(r"^## Installing and linking\n(.*?)(?=^## )", readme, re.S | re.M)
if not m:
    sys.exit("check-consumers: README.md has no '## Installing and linking' section")
blocks = [b for b in re.findall(r"```(?:sh|cmake)\n(.*?)```", m.group(1), re.S)
          if not b.startswith("make install")]
if not blocks:
    sys.exit("check-consumers: no sh or cmake block in README.md's 'Installing and linking'")
files = {p: p.read_text() for p in pathlib.Path("tests/consumers").rglob("*") if p.is_file()}
bad = 0
for b in blocks:
    where = [str(p) for p, text in files.items() if b in text]
    first = b.splitlines()[0]
    if where:
        print(f"check-consumers: README block '{first[:50]}' is run by {where[0]}")
    else:
        bad += 1
        print(f"check-consumers: FAIL: README block '{first[:60]}' is in no file of tests/consumers/")
sys.exit(1 if bad else 0)
PY

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tmp=$(cd "$tmp" && pwd -P)
case "$tmp/" in
"$repo"/*)
    echo "check-consumers: the temporary directory $tmp is inside the repository; set TMPDIR elsewhere" >&2
    exit 2
    ;;
esac
prefix="$tmp/prefix"

"$MAKE" --no-print-directory -s install PREFIX="$prefix" >"$tmp/install.log" 2>&1 || {
    cat "$tmp/install.log" >&2
    echo "check-consumers: make install PREFIX=$prefix failed" >&2
    exit 1
}

if [ "$#" -gt 0 ]; then
    names=("$@")
else
    names=()
    for d in tests/consumers/*/; do
        [ -d "$d" ] && names+=("$(basename "$d")")
    done
fi
[ "${#names[@]}" -gt 0 ] || { echo "check-consumers: no consumer in tests/consumers/" >&2; exit 1; }

# A build cache of its own for every run: go's cache does not key a cgo
# package on what pkg-config printed, so a build against this run's prefix
# could reuse one linked against an earlier run's (deleted) prefix.
envs=(PATH="$PATH" HOME="${HOME:-$tmp}" TMPDIR="$tmp" PREFIX="$prefix" MOONCAKE_META_REPO="$repo"
    GOCACHE="$tmp/go-build")
for v in CARGO_HOME RUSTUP_HOME GOPATH GOMODCACHE; do
    if [ -n "${!v:-}" ]; then envs+=("$v=${!v}"); fi
done

passed=()
failed=()
for name in "${names[@]}"; do
    src="tests/consumers/$name"
    if [ ! -f "$src/build-and-run.sh" ]; then
        echo "check-consumers: $src has no build-and-run.sh" >&2
        failed+=("$name")
        continue
    fi
    work="$tmp/consumers/$name"
    mkdir -p "$work"
    cp -R "$src/." "$work/"
    echo "::: consumer $name (in $work)"
    if (cd "$work" && env -i "${envs[@]}" ./build-and-run.sh) 2>&1 | sed "s|^|  $name: |"; then
        passed+=("$name")
    else
        failed+=("$name")
        echo "::: consumer $name FAILED" >&2
    fi
done

echo "check-consumers: ${#passed[@]} passed (${passed[*]:-none}), ${#failed[@]} failed (${failed[*]:-none})"
[ "${#failed[@]}" -eq 0 ]
