#!/bin/sh
# C through CMake's find_package, exactly as README.md's "Installing and
# linking" tells a user: the shared target (CMake puts the library's
# directory in the build tree's rpath) and the static one.
#
# env: PREFIX, the `make install PREFIX=...` prefix.
set -eu
: "${PREFIX:?set PREFIX to the prefix of make install}"
command -v cmake >/dev/null 2>&1 || {
    echo "cmake is missing; install it with: apt-get install -y cmake" >&2
    exit 2
}

cmake -S . -B build -DCMAKE_PREFIX_PATH="$PREFIX"
cmake --build build

echo "== mooncake_meta::mooncake_meta (shared)"
./build/app
echo "== mooncake_meta::static"
./build/app-static
