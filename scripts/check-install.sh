#!/usr/bin/env bash
# `make install PREFIX=<scratch>` lays out what a C user links against:
#   include/mooncake_meta.h                  the committed header, byte for byte
#   lib/libmooncake_meta.a                   the static library, no debug sections
#   lib/libmooncake_meta.so.<version>        the shared library, SONAME libmooncake_meta.so.<ABI major>,
#                                            stripped, with a .gnu_debuglink to
#   lib/.debug/libmooncake_meta.so.<version>.debug   its debug info (same build id)
#   lib/libmooncake_meta.so.<ABI major>      -> .so.<version>
#   lib/libmooncake_meta.so                  -> .so.<ABI major>
#   lib/pkgconfig/mooncake_meta.pc           version and flags, no template placeholder left
#   lib/cmake/mooncake_meta/                 the CMake package (config and version file),
#                                            which still resolves after the prefix is moved
# The version checks follow the versioning policy (README.md, "ABI and
# versioning"): pkg-config --atleast-version and find_package accept a
# request for the exact version, an older minor of the same major and the
# major alone, and refuse a newer patch, minor or major and another major
# (find_package is also probed against an install at a made-up 1.4.2, where
# an older major is a request that is not newer).
# A program built with pkg-config alone runs, linked to the shared library
# by its SONAME, or statically; DESTDIR stages the same tree; and
# `make uninstall` removes all of it, and nothing that was there before,
# also after a version change (the manifest records every file) and with
# an older manifest that records only directories. `make install` with
# nothing built fails, names `make lib` and installs nothing.
#
# usage: scripts/check-install.sh   (after `make lib`: make install never
#        builds; make test-install builds first)
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
need objcopy binutils
need cmake cmake
need "$CC" gcc

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"

failed=0
fail() { echo "check-install: FAIL: $*" >&2; failed=1; }

version=$(sed -n 's/^version *= *"\(.*\)"/\1/p' Cargo.toml | head -n 1)
abi=$(sed -n 's/^#define MOONCAKE_META_ABI_VERSION \([0-9][0-9]*\)$/\1/p' include/mooncake_meta.h)
[ -n "$version" ] && [ -n "$abi" ] || { echo "check-install: cannot read the version or ABI" >&2; exit 2; }
[[ "$version" =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)$ ]] ||
    { echo "check-install: the version '$version' (Cargo.toml) is not MAJOR.MINOR.PATCH" >&2; exit 2; }
major=${BASH_REMATCH[1]} minor=${BASH_REMATCH[2]} patch=${BASH_REMATCH[3]}
for f in target/release/libmooncake_meta.so target/release/libmooncake_meta.a; do
    [ -f "$f" ] || { echo "check-install: $f is missing: run make lib first (or make test-install)" >&2; exit 2; }
done

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

# Stripped, with the debug info split out and linked back.
# (grep reads all of readelf's output: -q would stop early and, with
# pipefail, turn readelf's SIGPIPE into "no such section".)
has_section() { readelf -W -S "$1" 2>/dev/null | grep -F " $2 " >/dev/null; }
build_id() { readelf -n "$1" 2>/dev/null | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p' | head -n 1; }
has_section target/release/libmooncake_meta.so .debug_info ||
    fail "the built target/release/libmooncake_meta.so has no .debug_info, so the strip checks prove nothing"
has_section target/release/libmooncake_meta.a .debug_info ||
    fail "the built target/release/libmooncake_meta.a has no .debug_info, so the strip checks prove nothing"
has_section "$real" .debug_info && fail "the installed $real still has .debug_info (not stripped)"
has_section "$real" .symtab && fail "the installed $real still has a .symtab (not stripped)"
has_section "$lib/libmooncake_meta.a" .debug_info && fail "the installed libmooncake_meta.a still has .debug_info"
debug="$lib/.debug/libmooncake_meta.so.$version.debug"
link=$(readelf -W -p .gnu_debuglink "$real" 2>/dev/null | sed -n 's/^ *\[ *0\] *//p')
[ "$link" = "libmooncake_meta.so.$version.debug" ] ||
    fail "the installed $real has debuglink '$link', expected libmooncake_meta.so.$version.debug"
if [ -f "$debug" ]; then
    has_section "$debug" .debug_info || fail "$debug has no .debug_info"
    id=$(build_id "$real")
    [ -n "$id" ] && [ "$id" = "$(build_id "$debug")" ] ||
        fail "$debug does not carry the build id of $real ('$id')"
else
    fail "no debug file $debug"
fi
so_size=$(stat -c %s "$real")
a_size=$(stat -c %s "$lib/libmooncake_meta.a")

pc="$lib/pkgconfig/mooncake_meta.pc"
if grep -n '@[A-Z_]*@' "$pc" >&2; then fail "$pc still has a template placeholder"; fi
[ "$(grep -c -F "$prefix" "$pc")" = 1 ] && grep -q -x -F "prefix=$prefix" "$pc" ||
    fail "$pc names the prefix outside its prefix= line (a placeholder in a comment?)"

export PKG_CONFIG_PATH="$lib/pkgconfig"
[ "$(pkg-config --modversion mooncake_meta)" = "$version" ] || fail "pkg-config --modversion is not $version"
# pkg-config --atleast-version, as a build asks for the oldest release whose
# ABI it uses: met by this version, refused by a newer request.
pc_ok=("$version" "$major.$minor" "$major")
[ "$minor" -gt 0 ] && pc_ok+=("$major.$((minor - 1))" "$major.$((minor - 1)).99")
for want in "${pc_ok[@]}"; do
    pkg-config --atleast-version="$want" mooncake_meta || fail "pkg-config --atleast-version=$want refused version $version"
done
for want in "$major.$minor.$((patch + 1))" "$major.$((minor + 1))" "$major.999" "$((major + 1)).0"; do
    pkg-config --atleast-version="$want" mooncake_meta && fail "pkg-config --atleast-version=$want accepted version $version"
done
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

# The CMake package is relocatable: move the whole prefix, and
# find_package still finds both imported targets, at the new place.
cmakedir="$lib/cmake/mooncake_meta"
for f in mooncake_meta-config.cmake mooncake_meta-config-version.cmake; do
    [ -f "$cmakedir/$f" ] || fail "no $cmakedir/$f"
done
if grep -n -F "$prefix" "$cmakedir"/*.cmake >&2; then fail "the CMake package hard-codes the prefix $prefix"; fi
moved="$tmp/moved/prefix"
mkdir -p "$tmp/moved" "$tmp/probe"
cp -a "$prefix" "$moved"
probe() { # probe VERSION-REQUEST [PREFIX]: configure a project that reports the imported targets
    cat >"$tmp/probe/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.16)
project(probe C)
find_package(mooncake_meta $1 REQUIRED)
foreach(t mooncake_meta::mooncake_meta mooncake_meta::static)
  get_target_property(loc \${t} IMPORTED_LOCATION)
  get_target_property(inc \${t} INTERFACE_INCLUDE_DIRECTORIES)
  message(STATUS "probe: \${t} \${loc} \${inc}")
endforeach()
message(STATUS "probe: version \${mooncake_meta_VERSION} abi \${mooncake_meta_ABI_VERSION}")
EOF
    rm -rf "$tmp/probe/build"
    cmake -S "$tmp/probe" -B "$tmp/probe/build" -DCMAKE_PREFIX_PATH="${2:-$moved}" >"$tmp/cmake.log" 2>&1
}
# versions_meet PREFIX VERSION ACCEPTED... -- REFUSED...: find_package with
# each request against the package installed at PREFIX (at VERSION).
versions_meet() {
    local at=$1 have=$2 want refuse=0
    shift 2
    for want in "$@"; do
        if [ "$want" = -- ]; then
            refuse=1
        elif [ "$refuse" = 0 ]; then
            if ! probe "$want" "$at"; then
                cat "$tmp/cmake.log" >&2
                fail "find_package(mooncake_meta $want) refused version $have (the same major, not newer)"
            elif ! grep -q -F -- "-- probe: version $have abi $abi" "$tmp/cmake.log"; then
                cat "$tmp/cmake.log" >&2
                fail "find_package(mooncake_meta $want) did not find version $have"
            fi
        elif probe "$want" "$at"; then
            fail "find_package(mooncake_meta $want) accepted version $have"
        elif ! grep -q -F "mooncake_meta-config.cmake, version: $have" "$tmp/cmake.log"; then
            cat "$tmp/cmake.log" >&2
            fail "find_package(mooncake_meta $want) failed, but not on the version file"
        fi
    done
}
if probe "$version"; then
    for want in "mooncake_meta::mooncake_meta $moved/lib/libmooncake_meta.so.$version $moved/include" \
        "mooncake_meta::static $moved/lib/libmooncake_meta.a $moved/include" \
        "version $version abi $abi"; do
        grep -q -F -- "-- probe: $want" "$tmp/cmake.log" || {
            cat "$tmp/cmake.log" >&2
            fail "find_package(mooncake_meta) in the moved prefix did not give '$want'"
        }
    done
else
    cat "$tmp/cmake.log" >&2
    fail "find_package(mooncake_meta $version) in the moved prefix failed"
fi
# The version file: a request for X.Y is met by any version >= X.Y of the
# same major (major 0 too: the ABI promise covers 0.x); a newer request
# (patch, minor or major) or another major is refused.
ok=("$major.$minor" "$major")
if [ "$minor" -gt 0 ]; then
    ok+=("$major.$((minor - 1))" "$major.$((minor - 1)).99")
else
    echo "check-install: note: $version has no older minor to request (the 1.4.2 install below has)" >&2
fi
no=("$major.$minor.$((patch + 1))" "$major.$((minor + 1))" "$major.999" "$((major + 1)).0" 999.0)
[ "$major" -gt 0 ] && no+=("$((major - 1)).0" "$((major - 1)).999")
versions_meet "$moved" "$version" "${ok[@]}" -- "${no[@]}"
# The same at a version whose major is not 0, where another major can be
# an older request (0.9 is not newer than 1.4.2, yet refused).
other="$tmp/other"
"$MAKE" --no-print-directory -s install PREFIX="$other" VERSION=1.4.2 >"$tmp/install.log" 2>&1 || {
    cat "$tmp/install.log" >&2
    fail "make install PREFIX=$other VERSION=1.4.2 failed"
}
versions_meet "$other" 1.4.2 1.4.2 1.4 1.3 1.0.7 1 -- 1.4.3 1.5 2.0 0.9 0.1 0
# Version ranges (CMake 3.19 on): the lower end by the rule above, and the
# version within the upper end (included with `...`, excluded with `...<`).
if cmake --version | awk 'NR == 1 { split($3, v, "."); exit !(v[1] > 3 || (v[1] == 3 && v[2] >= 19)) }'; then
    versions_meet "$other" 1.4.2 1.3...1.4.2 1.0...\<1.5 1.4...1.9 -- \
        1.0...\<1.4.2 1.0...1.4.1 1.5...1.9 0.1...\<2.0
else
    echo "check-install: note: cmake older than 3.19 takes no version ranges; not probed" >&2
fi
rm -rf "$other"

# Uninstall removes everything install created: the prefix did not exist
# before, so nothing of it is left.
"$MAKE" --no-print-directory -s uninstall PREFIX="$prefix" >"$tmp/uninstall.log" 2>&1 || {
    cat "$tmp/uninstall.log" >&2
    fail "make uninstall PREFIX=$prefix failed"
}
if [ -e "$prefix" ]; then
    find "$prefix" >&2
    fail "make uninstall left the above behind"
fi

# ... and only that: a prefix that already holds other packages' files and
# directories keeps them. DESTDIR stages the same tree under another root.
stage="$tmp/stage"
opt="$stage/opt/mm"
mkdir -p "$opt/include" "$opt/lib/pkgconfig" "$opt/lib/.debug" "$opt/share"
echo other >"$opt/include/other.h"
echo other >"$opt/lib/pkgconfig/other.pc"
echo other >"$opt/lib/.debug/other.debug"
before=$(cd "$opt" && find . | sort)
"$MAKE" --no-print-directory -s install PREFIX=/opt/mm DESTDIR="$stage" >"$tmp/install.log" 2>&1 || {
    cat "$tmp/install.log" >&2
    fail "make install PREFIX=/opt/mm DESTDIR=$stage failed"
}
grep -q -x 'prefix=/opt/mm' "$opt/lib/pkgconfig/mooncake_meta.pc" ||
    fail "with DESTDIR the .pc file does not say prefix=/opt/mm"
[ -f "$opt/lib/libmooncake_meta.so.$version" ] && [ -f "$opt/lib/cmake/mooncake_meta/mooncake_meta-config.cmake" ] ||
    fail "DESTDIR=$stage PREFIX=/opt/mm did not stage the libraries and the CMake package under $opt"
"$MAKE" --no-print-directory -s uninstall PREFIX=/opt/mm DESTDIR="$stage" >"$tmp/uninstall.log" 2>&1 || {
    cat "$tmp/uninstall.log" >&2
    fail "make uninstall PREFIX=/opt/mm DESTDIR=$stage failed"
}
after=$(cd "$opt" && find . | sort)
[ "$before" = "$after" ] || {
    diff <(echo "$before") <(echo "$after") >&2 || true
    fail "make uninstall did not leave the prefix as it was before install"
}

# With nothing built, install stops before it writes anything and says
# what builds the libraries.
mkdir -p "$tmp/empty"
if "$MAKE" --no-print-directory -s install PREFIX="$tmp/nobuild" RELEASE="$tmp/empty" >"$tmp/install.log" 2>&1; then
    fail "make install with no built library (RELEASE=$tmp/empty) succeeded"
else
    grep -q -F 'make lib' "$tmp/install.log" || {
        cat "$tmp/install.log" >&2
        fail "make install with no built library does not say to run make lib"
    }
fi
[ ! -e "$tmp/nobuild" ] || fail "make install with no built library created $tmp/nobuild"

# A version change: the manifest records the earlier version's files, so
# uninstall at the new version removes them too, whether or not the new
# version was installed over them.
old=0.0.1
manifest="$prefix/lib/cmake/mooncake_meta/install-manifest.txt"
run_make() { # run_make ARGS...: make, its output shown only on failure
    "$MAKE" --no-print-directory -s "$@" >"$tmp/make.log" 2>&1 || {
        cat "$tmp/make.log" >&2
        fail "make $* failed"
    }
}
left_behind() { # left_behind WHAT: the prefix must be gone
    if [ -e "$prefix" ]; then
        find "$prefix" >&2
        fail "make uninstall left the above behind ($1)"
        rm -rf "$prefix"
    fi
}
run_make install PREFIX="$prefix" VERSION="$old"
[ -f "$lib/libmooncake_meta.so.$old" ] && [ -f "$lib/.debug/libmooncake_meta.so.$old.debug" ] ||
    fail "make install VERSION=$old did not install libmooncake_meta.so.$old and its debug file"
grep -q -x -F "file lib/libmooncake_meta.so.$old" "$manifest" ||
    fail "the manifest does not record lib/libmooncake_meta.so.$old"
run_make uninstall PREFIX="$prefix"
left_behind "installed at $old, uninstalled at $version"
run_make install PREFIX="$prefix" VERSION="$old"
run_make install PREFIX="$prefix"
[ "$(readlink "$lib/libmooncake_meta.so.$abi" 2>/dev/null)" = "libmooncake_meta.so.$version" ] ||
    fail "after reinstalling at $version, libmooncake_meta.so.$abi does not point to libmooncake_meta.so.$version"
run_make uninstall PREFIX="$prefix"
left_behind "installed at $old, then at $version"

# An older manifest (format 1: the created directories only) still
# uninstalls everything, the library its SONAME link names included.
run_make install PREFIX="$prefix" VERSION="$old"
sed -n 's/^dir //p' "$manifest" >"$tmp/manifest.v1"
cp "$tmp/manifest.v1" "$manifest"
run_make uninstall PREFIX="$prefix"
left_behind "a format-1 manifest, installed at $old"

[ "$failed" -eq 0 ] || exit 1
echo "check-install: ok: header, libmooncake_meta.a ($a_size bytes), libmooncake_meta.so.$version" \
    "($so_size bytes, SONAME libmooncake_meta.so.$abi, stripped, debug info in lib/.debug with its build id)" \
    "with its symlinks, mooncake_meta.pc, the CMake package (relocatable, version-checked);" \
    "a pkg-config build runs shared and static; DESTDIR stages; uninstall removes exactly what install added" \
    "(after a version change and with a format-1 manifest too); install without a build names make lib"
