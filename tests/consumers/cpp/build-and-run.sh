#!/usr/bin/env bash
# Builds main.cpp against an installed libmooncake_meta exactly as the
# README's C++ quick start tells a user, then runs it.
#
# usage: PREFIX=/path/to/prefix tests/consumers/cpp/build-and-run.sh
#   PREFIX   a `make install PREFIX=...` tree (include/mooncake_meta.h and
#            .hpp, lib/, lib/pkgconfig/mooncake_meta.pc)
#   CXX      the C++ compiler (default c++)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${PREFIX:?set PREFIX to an installed prefix (make install PREFIX=...)}"
CXX=${CXX:-c++}
for tool in "$CXX" pkg-config; do
    command -v "$tool" >/dev/null || { echo "cpp consumer: '$tool' is missing (apt-get install -y g++ pkg-config)" >&2; exit 2; }
done
abs=$(cd "$PREFIX" 2>/dev/null && pwd) || { echo "cpp consumer: PREFIX=$PREFIX is not a directory" >&2; exit 1; }
PREFIX=$abs
[ -f "$PREFIX/include/mooncake_meta.hpp" ] || { echo "cpp consumer: no $PREFIX/include/mooncake_meta.hpp" >&2; exit 1; }
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"

# Outside the repository, so nothing but the prefix can be found.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/main.cpp" "$work/main.cpp"
cd "$work"
set -x
# The README's command, word for word (but for the compiler's name).
"$CXX" -std=c++17 main.cpp $(pkg-config --cflags --libs mooncake_meta) -Wl,-rpath,$(pkg-config --variable=libdir mooncake_meta) -o main
{ set +x; } 2>/dev/null
libdir=$(pkg-config --variable=libdir mooncake_meta)
# ldd's whole output first: `ldd | grep -q` under pipefail fails whenever
# grep quits before ldd has written everything (ldd dies of SIGPIPE).
loaded=$(ldd ./main)
grep -qF "=> $libdir/libmooncake_meta.so" <<<"$loaded" || {
    echo "cpp consumer: main does not load libmooncake_meta from $libdir:" >&2
    echo "$loaded" >&2
    exit 1
}
./main
