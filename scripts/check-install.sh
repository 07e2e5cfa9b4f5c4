#!/usr/bin/env bash
# `make install PREFIX=<scratch>` lays out what a C user links against:
#   include/mooncake_meta.h                  the committed header, byte for byte
#   lib/libmooncake_meta.a                   the static library
#   lib/libmooncake_meta.so.<version>        the shared library, SONAME libmooncake_meta.so.<ABI major>
#   lib/libmooncake_meta.so.<ABI major>      -> .so.<version>
#   lib/libmooncake_meta.so                  -> .so.<ABI major>
#   lib/pkgconfig/mooncake_meta.pc           version and flags
# and a program built with pkg-config alone runs, linked to the shared
# library by its SONAME, or statically.
#
# usage: scripts/check-install.sh   (builds the release library if needed)
set -euo pipefail

cd "$(dirname "$0")/.."
CC=${CC:-cc}
MAKE=${MAKE:-make}

need() {
    command -v "$1" >/dev/null 2>&1 || {
        echo "check-install: '$1' is missing; install it with: apt-get install -y $2" >&2
        exit 2
    }
}
need pkg-config pkg-config
need readelf binutils
need "$CC" gcc

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"

failed=0
fail() { echo "check-install: FAIL: $*" >&2; failed=1; }

version=$(sed -n 's/^version *= *"\(.*\)"/\1/p' Cargo.toml | head -n 1)
abi=$(sed -n 's/^#define MOONCAKE_META_ABI_VERSION \([0-9][0-9]*\)$/\1/p' include/mooncake_meta.h)
[ -n "$version" ] && [ -n "$abi" ] || { echo "check-install: cannot read the version or ABI" >&2; exit 2; }

"$MAKE" --no-print-directory -s install PREFIX="$prefix" >"$tmp/install.log" 2>&1 || {
    cat "$tmp/install.log" >&2
    fail "make install PREFIX=$prefix failed"
    exit 1
}

lib="$prefix/lib"
cmp -s include/mooncake_meta.h "$prefix/include/mooncake_meta.h" || fail "installed header differs from include/mooncake_meta.h"
[ -f "$lib/libmooncake_meta.a" ] || fail "no $lib/libmooncake_meta.a"
real="$lib/libmooncake_meta.so.$version"
[ -f "$real" ] && [ ! -L "$real" ] || fail "no regular file $real"
[ "$(readlink "$lib/libmooncake_meta.so.$abi" 2>/dev/null)" = "libmooncake_meta.so.$version" ] ||
    fail "libmooncake_meta.so.$abi does not point to libmooncake_meta.so.$version"
[ "$(readlink "$lib/libmooncake_meta.so" 2>/dev/null)" = "libmooncake_meta.so.$abi" ] ||
    fail "libmooncake_meta.so does not point to libmooncake_meta.so.$abi"
soname=$(readelf -d "$real" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = "libmooncake_meta.so.$abi" ] ||
    fail "SONAME is '$soname', expected libmooncake_meta.so.$abi (the ABI major)"

export PKG_CONFIG_PATH="$lib/pkgconfig"
[ "$(pkg-config --modversion mooncake_meta)" = "$version" ] || fail "pkg-config --modversion is not $version"
[ "$(pkg-config --variable=libdir mooncake_meta)" = "$lib" ] || fail "pkg-config libdir is not $lib"

cat >"$tmp/app.c" <<'EOF'
#include <stdio.h>
#include <mooncake_meta.h>
int main(void) {
    mooncake_meta_master *m = NULL;
    if (mooncake_meta_abi_version() != MOONCAKE_META_ABI_VERSION) return 1;
    if (mooncake_meta_master_new(NULL, &m, NULL) != MOONCAKE_META_OK) return 2;
    mooncake_meta_master_free(m);
    printf("%s\n", mooncake_meta_version());
    return 0;
}
EOF
# Shared: flags from pkg-config only, plus an rpath to the scratch prefix.
# shellcheck disable=SC2046
if "$CC" -std=c11 -Wall -Werror "$tmp/app.c" $(pkg-config --cflags --libs mooncake_meta) \
    -Wl,-rpath,"$lib" -o "$tmp/app-shared" 2>"$tmp/cc.log"; then
    needed=$(readelf -d "$tmp/app-shared" | sed -n 's/.*Shared library: \[\(libmooncake_meta[^]]*\)\]/\1/p')
    [ "$needed" = "libmooncake_meta.so.$abi" ] || fail "the program needs '$needed', not the SONAME"
    [ "$("$tmp/app-shared")" = "$version" ] || fail "the shared-linked program did not run"
else
    cat "$tmp/cc.log" >&2
    fail "building against the installed shared library with pkg-config failed"
fi
# Static: the archive, plus the system libraries of Libs.private.
# shellcheck disable=SC2046
if "$CC" -std=c11 -Wall -Werror "$tmp/app.c" $(pkg-config --cflags mooncake_meta) \
    "$lib/libmooncake_meta.a" $(pkg-config --libs-only-l --static mooncake_meta | sed 's/-lmooncake_meta//') \
    -o "$tmp/app-static" 2>"$tmp/cc.log"; then
    readelf -d "$tmp/app-static" | grep 'libmooncake_meta' >/dev/null && fail "the static program links the shared library"
    [ "$("$tmp/app-static")" = "$version" ] || fail "the statically linked program did not run"
else
    cat "$tmp/cc.log" >&2
    fail "building against the installed static library failed"
fi

[ "$failed" -eq 0 ] || exit 1
echo "check-install: ok: header, libmooncake_meta.a, libmooncake_meta.so.$version (SONAME" \
    "libmooncake_meta.so.$abi) with its symlinks, mooncake_meta.pc; a pkg-config build runs shared and static"
