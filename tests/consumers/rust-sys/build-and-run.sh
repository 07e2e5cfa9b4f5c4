#!/usr/bin/env bash
# Builds and runs the Rust consumer of the sys crate against an installed
# libmooncake_meta, the way rust-sys/README.md tells users: the crate as a
# path dependency, MOONCAKE_META_LIB_DIR=$PREFIX/lib, and a build script
# putting DEP_MOONCAKE_META_RPATH on the binary's rpath. The project is
# copied out of the repository first, so nothing of the repository's
# workspace, target directory or library build is used.
#
# usage: PREFIX=/installed/prefix MOONCAKE_META_REPO=/path/to/repository build-and-run.sh
set -euo pipefail
: "${PREFIX:?set PREFIX to an installed prefix (make install PREFIX=...)}"
: "${MOONCAKE_META_REPO:?set MOONCAKE_META_REPO to the repository (the sys crate is \$MOONCAKE_META_REPO/rust-sys)}"
CARGO=${CARGO:-cargo}
here=$(cd "$(dirname "$0")" && pwd)
MOONCAKE_META_REPO=$(cd "$MOONCAKE_META_REPO" && pwd)
PREFIX=$(cd "$PREFIX" && pwd)
for f in "$PREFIX/lib/libmooncake_meta.so" "$MOONCAKE_META_REPO/rust-sys/Cargo.toml"; do
    [ -e "$f" ] || { echo "rust-sys consumer: $f is missing" >&2; exit 1; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -R "$here/Cargo.toml" "$here/build.rs" "$here/src" "$tmp/"
sed -i "s|^mooncake-meta-sys = { path = \"[^\"]*\" }|mooncake-meta-sys = { path = \"$MOONCAKE_META_REPO/rust-sys\" }|" "$tmp/Cargo.toml"
grep -q "path = \"$MOONCAKE_META_REPO/rust-sys\"" "$tmp/Cargo.toml" || { echo "rust-sys consumer: could not point Cargo.toml at $MOONCAKE_META_REPO/rust-sys" >&2; exit 1; }

cd "$tmp"
# The only setting the README asks for. No LD_LIBRARY_PATH: the rpath must
# find the library.
unset LD_LIBRARY_PATH
MOONCAKE_META_LIB_DIR="$PREFIX/lib" CARGO_TARGET_DIR="$tmp/target" "$CARGO" build --quiet --release
bin=$tmp/target/release/mooncake-meta-sys-consumer
# The binary loads the installed library, not a copy in a build directory.
if command -v ldd >/dev/null; then
    ldd "$bin" | grep -F "$PREFIX/lib/libmooncake_meta.so" || { echo "rust-sys consumer: the binary does not load $PREFIX/lib's library" >&2; ldd "$bin" >&2; exit 1; }
fi
"$bin"
