#!/bin/sh
# C through pkg-config, exactly as README.md's "Installing and linking"
# tells a user: flags from pkg-config, and the shared library found at run
# time through an rpath to pkg-config's libdir, or through LD_LIBRARY_PATH;
# without either, the documented loader error. Then the static archive.
#
# env: PREFIX, the `make install PREFIX=...` prefix.
set -eu
: "${PREFIX:?set PREFIX to the prefix of make install}"
CC=${CC:-cc}

export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"

echo "== shared, rpath from pkg-config's libdir"
# shellcheck disable=SC2046
$CC -std=c11 -Wall -Wextra -Werror app.c $(pkg-config --cflags --libs mooncake_meta) \
    -Wl,-rpath,"$(pkg-config --variable=libdir mooncake_meta)" -o app
./app

echo "== shared, no rpath: LD_LIBRARY_PATH"
# shellcheck disable=SC2046
$CC -std=c11 -Wall -Wextra -Werror app.c $(pkg-config --cflags --libs mooncake_meta) -o app-norpath
LD_LIBRARY_PATH="$PREFIX/lib" ./app-norpath

echo "== shared, no rpath, no LD_LIBRARY_PATH: the loader error the README names"
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
    grep -q -F 'libmooncake_meta.so.1: cannot open shared object file' loader.err || {
        echo "app-norpath failed, but not with the error README.md describes" >&2
        exit 1
    }
fi

echo "== static"
# shellcheck disable=SC2046
$CC -std=c11 -Wall -Wextra -Werror app.c $(pkg-config --cflags mooncake_meta) \
    "$(pkg-config --variable=libdir mooncake_meta)/libmooncake_meta.a" \
    $(pkg-config --libs-only-l --static mooncake_meta | sed 's/-lmooncake_meta//') -o app-static
./app-static
