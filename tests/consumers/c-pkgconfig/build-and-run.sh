#!/bin/sh
# C through pkg-config, exactly as README.md's "Installing and linking"
# tells a user (scripts/check-consumers.sh checks that the README's block
# below appears here verbatim): flags from pkg-config, the shared library
# found at run time through an rpath to pkg-config's libdir, or through
# LD_LIBRARY_PATH; without either, the loader error the README quotes. And
# the static archive.
#
# env: PREFIX, the `make install PREFIX=...` prefix.
set -eu
: "${PREFIX:?set PREFIX to the prefix of make install}"

echo "== shared, rpath from pkg-config's libdir; static"
# README block begins
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
cc app.c $(pkg-config --cflags --libs mooncake_meta) \
    -Wl,-rpath,"$(pkg-config --variable=libdir mooncake_meta)" -o app
./app
# static: the archive and the system libraries it needs, no run-time dependency
cc app.c $(pkg-config --cflags mooncake_meta) \
    "$(pkg-config --variable=libdir mooncake_meta)/libmooncake_meta.a" \
    $(pkg-config --libs-only-l --static mooncake_meta | sed 's/-lmooncake_meta//') -o app-static
# README block ends
./app-static
if readelf -d app-static 2>/dev/null | grep -F libmooncake_meta; then
    echo "app-static depends on the shared library" >&2
    exit 1
fi

echo "== the program compiles cleanly"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Wpedantic -Werror -c app.c $(pkg-config --cflags mooncake_meta) -o app.o

echo "== shared, no rpath: LD_LIBRARY_PATH"
# shellcheck disable=SC2046
cc app.c $(pkg-config --cflags --libs mooncake_meta) -o app-norpath
LD_LIBRARY_PATH="$PREFIX/lib" ./app-norpath

echo "== shared, no rpath, no LD_LIBRARY_PATH: the loader error the README quotes"
if ./app-norpath 2>loader.err; then
    # Only possible when the loader finds a libmooncake_meta.so.1 by itself
    # (one installed in a system directory and registered with ldconfig).
    ldconfig -p 2>/dev/null | grep -F 'libmooncake_meta.so.1 ' || {
        echo "app-norpath ran without an rpath, LD_LIBRARY_PATH or an ldconfig entry" >&2
        exit 1
    }
    echo "(found by the loader through ldconfig)"
else
    cat loader.err
    grep -q -F 'error while loading shared libraries: libmooncake_meta.so.1: cannot open shared object file' loader.err || {
        echo "app-norpath failed, but not with the error README.md quotes" >&2
        exit 1
    }
fi
