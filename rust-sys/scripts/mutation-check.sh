#!/usr/bin/env bash
# Shows that the bundled consistency test (tests/abi_bundled.rs) catches a
# sys crate that drifts from the core: on a copy of the crate, each mutation
# of src/bindings.rs below must make
#     cargo test --features bundled --test abi_bundled
# fail, with a compiler error naming the mutated item, while the unmutated
# copy passes. (tests/bindings_sync.rs would also fail on every mutant; it is
# left out so each failure is the consistency test's own.)
#
# usage: rust-sys/scripts/mutation-check.sh
set -euo pipefail

crate=$(cd "$(dirname "$0")/.." && pwd)
repo=$(cd "$crate/.." && pwd)
CARGO=${CARGO:-cargo}
# The repository's target directory: the core crate is already built there.
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$repo/target}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
copy=$tmp/rust-sys
mkdir -p "$copy"
cp -R "$crate/Cargo.toml" "$crate/build.rs" "$crate/src" "$crate/tests" "$copy/"
cp "$repo/Cargo.lock" "$copy/"
# Its own workspace, the core by absolute path.
sed -i "s|^mooncake_meta = { path = \"..\"|mooncake_meta = { path = \"$repo\"|" "$copy/Cargo.toml"
grep -q "path = \"$repo\"" "$copy/Cargo.toml" || { echo "mutation-check: could not repoint the core dependency" >&2; exit 1; }
sed -i "s|^mooncake-meta-core = { path = \"../core\"|mooncake-meta-core = { path = \"$repo/core\"|" "$copy/Cargo.toml"
grep -q "path = \"$repo/core\"" "$copy/Cargo.toml" || { echo "mutation-check: could not repoint the core dev-dependency" >&2; exit 1; }
printf '\n[workspace]\n' >>"$copy/Cargo.toml"
pristine=$tmp/bindings.rs
cp "$copy/src/bindings.rs" "$pristine"

abi_test() {
    (cd "$copy" && "$CARGO" test --offline --quiet --features bundled --test abi_bundled) >"$tmp/out" 2>&1
}

if ! abi_test; then
    cat "$tmp/out" >&2
    echo "mutation-check: FAIL: the unmutated copy does not pass" >&2
    exit 1
fi
echo "mutation-check: unmutated copy passes"

rc=0
# mutant NAME EXPECT SED-SCRIPT: apply SED-SCRIPT to a fresh bindings.rs;
# the test must fail to compile in tests/abi_bundled.rs (not in the crate's
# own sources) with output mentioning EXPECT.
mutant() {
    local name=$1 expect=$2 script=$3
    cp "$pristine" "$copy/src/bindings.rs"
    sed -i "$script" "$copy/src/bindings.rs"
    if cmp -s "$pristine" "$copy/src/bindings.rs"; then
        echo "mutation-check: FAIL: mutation '$name' changed nothing" >&2
        rc=1
        return
    fi
    if abi_test; then
        echo "mutation-check: FAIL: mutation '$name' was not detected" >&2
        rc=1
    elif ! grep -q -- "$expect" "$tmp/out" || ! grep -q -- "--> tests/abi_bundled.rs" "$tmp/out" \
        || grep -q -- "--> src/" "$tmp/out"; then
        cat "$tmp/out" >&2
        echo "mutation-check: FAIL: mutation '$name' did not fail in tests/abi_bundled.rs on '$expect'" >&2
        rc=1
    else
        echo "mutation-check: ok: $name -> $(grep -m1 -E '^error' "$tmp/out")"
    fi
}

# Only items the safe layer does not use, so the crate itself compiles and
# the failure is the consistency test's.
ws='/^pub struct mooncake_meta_write_config {/,/^}/'
mutant "field type (write_config.reserved0 u32 -> i32)" "s.reserved0" \
    "$ws s/pub reserved0: u32,/pub reserved0: i32,/"
mutant "field order (write_config memory_replicas <-> nof_ssd_replicas)" "memory_replicas" \
    "$ws { /pub memory_replicas: u32,/{h;d}; /pub nof_ssd_replicas: u32,/G }"
mutant "constant value (SOFT_PIN_DISABLE 2 -> 3)" "MOONCAKE_META_SOFT_PIN_DISABLE" \
    "s/MOONCAKE_META_SOFT_PIN_DISABLE: u32 = 2;/MOONCAKE_META_SOFT_PIN_DISABLE: u32 = 3;/"
mutant "constant type (NO_SEGMENT u32 -> u64)" "MOONCAKE_META_NO_SEGMENT" \
    "s/MOONCAKE_META_NO_SEGMENT: u32 = u32::MAX;/MOONCAKE_META_NO_SEGMENT: u64 = u32::MAX as u64;/"
mutant "parameter type (snapshot_into cap usize -> u32)" "mooncake_meta_snapshot_into" \
    "/pub fn mooncake_meta_snapshot_into(/,/;\$/ s/cap: usize,/cap: u32,/"
mutant "pointer constness (metrics_prometheus_into m *const -> *mut)" "mooncake_meta_metrics_prometheus_into" \
    "/pub fn mooncake_meta_metrics_prometheus_into(/,/;\$/ s/m: \*const mooncake_meta_master/m: *mut mooncake_meta_master/"
mutant "return type (snapshot_into status -> i64)" "mooncake_meta_snapshot_into" \
    "/pub fn mooncake_meta_snapshot_into(/,/;\$/ s/) -> mooncake_meta_status;/) -> i64;/"
mutant "missing declaration (metrics_prometheus_into)" "mooncake_meta_metrics_prometheus_into" \
    "/pub fn mooncake_meta_metrics_prometheus_into(/,/;\$/d"

if [ $rc -eq 0 ]; then
    echo "mutation-check: every mutation was caught"
fi
exit $rc
