#!/bin/sh
# C through CMake's find_package, exactly as README.md's "Installing and
# linking" tells a user (scripts/check-consumers.sh checks that the
# README's block below appears here verbatim): the shared target (CMake
# puts the library's directory in the build tree's rpath), then the
# static one.
#
# The program is the pkg-config consumer's app.c (one C program, built the
# two ways a C user links the library).
#
# env: PREFIX, the `make install PREFIX=...` prefix; MOONCAKE_META_REPO, the
#      clone (for the shared app.c).
set -eu
: "${PREFIX:?set PREFIX to the prefix of make install}"
: "${MOONCAKE_META_REPO:?set MOONCAKE_META_REPO to the libmooncake_meta clone}"
cp "$MOONCAKE_META_REPO/tests/consumers/c-pkgconfig/app.c" app.c
command -v cmake >/dev/null 2>&1 || {
    echo "cmake is missing; install it with: apt-get install -y cmake" >&2
    exit 2
}

echo "== mooncake_meta::mooncake_meta (shared)"
# README block begins
cmake -S . -B build -DCMAKE_PREFIX_PATH="$PREFIX"
cmake --build build
./build/app
# README block ends
echo "== mooncake_meta::static"
./build/app-static
if readelf -d build/app-static 2>/dev/null | grep -F libmooncake_meta; then
    echo "app-static depends on the shared library" >&2
    exit 1
fi
