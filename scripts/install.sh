#!/usr/bin/env bash
# `make install` and `make uninstall`: put libmooncake_meta under
# $DESTDIR$PREFIX the way a packaged library is laid out, or take exactly
# that back out.
#
#   include/mooncake_meta.h                           the header
#   include/mooncake_meta.hpp                         the C++17 header over it
#   lib/libmooncake_meta.a                            static library, debug info stripped
#   lib/libmooncake_meta.so.<version>                 shared library, stripped, with a
#                                                     .gnu_debuglink to its debug file
#   lib/libmooncake_meta.so.<ABI>                     -> .so.<version> (the SONAME)
#   lib/libmooncake_meta.so                           -> .so.<ABI> (for -lmooncake_meta)
#   lib/.debug/libmooncake_meta.so.<version>.debug    the shared library's debug info
#                                                     (gdb finds it through the debuglink)
#   lib/pkgconfig/mooncake_meta.pc                    pkg-config
#   lib/cmake/mooncake_meta/mooncake_meta-config.cmake          find_package(mooncake_meta)
#   lib/cmake/mooncake_meta/mooncake_meta-config-version.cmake  its version check
#   lib/cmake/mooncake_meta/install-manifest.txt      the directories install created
#
# The manifest lets uninstall remove the directories install created (when
# they are empty again) and no others: a directory that existed before, like
# /usr/local/lib, stays.
#
# usage: scripts/install.sh install|uninstall
#   env: PREFIX (absolute), DESTDIR (optional staging root), VERSION, ABI,
#        RELEASE (the cargo release directory; install only)
set -euo pipefail

cd "$(dirname "$0")/.."

die() {
    echo "install: $*" >&2
    exit 1
}

mode=${1:-}
PREFIX=${PREFIX:-}
DESTDIR=${DESTDIR:-}
VERSION=${VERSION:-}
ABI=${ABI:-}
RELEASE=${RELEASE:-target/release}
OBJCOPY=${OBJCOPY:-objcopy}

case "$mode" in install | uninstall) ;; *) die "usage: $0 install|uninstall" ;; esac
case "$PREFIX" in
/*) ;;
*) die "PREFIX must be an absolute path, got '$PREFIX'" ;;
esac
# The prefix is written into mooncake_meta.pc, whose paths pkg-config
# splits at whitespace, through sed; refuse what neither can carry.
case "$PREFIX" in
*[[:space:]\|\&\\]*) die "PREFIX must not contain whitespace, '|', '&' or '\\', got '$PREFIX'" ;;
esac
while [ "${#PREFIX}" -gt 1 ] && [ "${PREFIX%/}" != "$PREFIX" ]; do PREFIX=${PREFIX%/}; done
[ "$PREFIX" != / ] || die "PREFIX=/ is not supported (use /usr)"
[ -n "$VERSION" ] && [ -n "$ABI" ] || die "cannot read the version (Cargo.toml) or the ABI major (include/mooncake_meta.h)"

root="$DESTDIR$PREFIX"
real="libmooncake_meta.so.$VERSION"
soname="libmooncake_meta.so.$ABI"
cmakedir="lib/cmake/mooncake_meta"
manifest="$cmakedir/install-manifest.txt"

# Every file and symlink install writes, relative to the prefix.
files=(
    include/mooncake_meta.h
    include/mooncake_meta.hpp
    lib/libmooncake_meta.a
    "lib/$real"
    "lib/$soname"
    lib/libmooncake_meta.so
    "lib/.debug/$real.debug"
    lib/pkgconfig/mooncake_meta.pc
    "$cmakedir/mooncake_meta-config.cmake"
    "$cmakedir/mooncake_meta-config-version.cmake"
    "$manifest"
)
# Every directory install may create, parents before children.
dirs=(. include lib lib/.debug lib/pkgconfig lib/cmake "$cmakedir")

if [ "$mode" = uninstall ]; then
    created=()
    if [ -f "$root/$manifest" ]; then
        while IFS= read -r d; do
            # Only the directories this script can create, whatever the file says.
            for known in "${dirs[@]}"; do
                [ "$d" = "$known" ] && created+=("$d")
            done
        done <"$root/$manifest"
    fi
    for f in "${files[@]}"; do
        if [ -e "$root/$f" ] || [ -L "$root/$f" ]; then
            rm -f "$root/$f"
            echo "removed $root/$f"
        fi
    done
    # Children before parents; rmdir leaves a directory that holds anything else.
    for ((i = ${#dirs[@]} - 1; i >= 0; i--)); do
        for c in "${created[@]}"; do
            [ "$c" = "${dirs[i]}" ] || continue
            d="$root/${dirs[i]}"
            d=${d%/.}
            if [ -d "$d" ] && rmdir "$d" 2>/dev/null; then
                echo "removed $d/"
            fi
        done
    done
    exit 0
fi

for tool in "$OBJCOPY" sed install; do
    command -v "$tool" >/dev/null 2>&1 || die "'$tool' is required; install it with: apt-get install -y binutils coreutils sed"
done
for f in "$RELEASE/libmooncake_meta.so" "$RELEASE/libmooncake_meta.a"; do
    [ -f "$f" ] || die "$f is missing: run cargo build --release (make lib) first"
done

created=()
if [ -f "$root/$manifest" ]; then
    # A reinstall over an earlier one keeps what that one created.
    while IFS= read -r d; do
        for known in "${dirs[@]}"; do
            [ "$d" = "$known" ] && created+=("$d")
        done
    done <"$root/$manifest"
fi
for d in "${dirs[@]}"; do
    if [ ! -d "$root/$d" ]; then
        install -d "$root/$d"
        created+=("$d")
    fi
done

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

# The shared library: its debug info goes into the .debug file, the
# installed copy keeps only what the dynamic linker needs plus a debuglink
# (the debug file's name and CRC) so gdb and perf find the symbols in
# lib/.debug/ next to it.
"$OBJCOPY" --only-keep-debug "$RELEASE/libmooncake_meta.so" "$stage/$real.debug"
so=$(realpath "$RELEASE/libmooncake_meta.so")
(cd "$stage" && "$OBJCOPY" --strip-unneeded --remove-section=.comment \
    --add-gnu-debuglink="$real.debug" "$so" "$real")
# The static library: debug sections removed, symbols kept (the linker
# needs them). Its debug info is not installed: a static link that wants
# it builds the library from source.
"$OBJCOPY" --strip-debug "$RELEASE/libmooncake_meta.a" "$stage/libmooncake_meta.a"

sed -e "s|@PREFIX@|$PREFIX|g" -e "s|@VERSION@|$VERSION|g" mooncake_meta.pc.in >"$stage/mooncake_meta.pc"
for f in mooncake_meta-config.cmake mooncake_meta-config-version.cmake; do
    sed -e "s|@VERSION@|$VERSION|g" -e "s|@ABI@|$ABI|g" "cmake/$f.in" >"$stage/$f"
done
# The manifest: one created directory per line (none: an empty file).
: >"$stage/install-manifest.txt"
for d in "${dirs[@]}"; do
    for c in "${created[@]}"; do
        if [ "$c" = "$d" ]; then
            echo "$d" >>"$stage/install-manifest.txt"
            break
        fi
    done
done

install -m 0644 include/mooncake_meta.h "$root/include/mooncake_meta.h"
install -m 0644 include/mooncake_meta.hpp "$root/include/mooncake_meta.hpp"
install -m 0644 "$stage/libmooncake_meta.a" "$root/lib/libmooncake_meta.a"
install -m 0755 "$stage/$real" "$root/lib/$real"
ln -sfn "$real" "$root/lib/$soname"
ln -sfn "$soname" "$root/lib/libmooncake_meta.so"
install -m 0644 "$stage/$real.debug" "$root/lib/.debug/$real.debug"
install -m 0644 "$stage/mooncake_meta.pc" "$root/lib/pkgconfig/mooncake_meta.pc"
for f in mooncake_meta-config.cmake mooncake_meta-config-version.cmake install-manifest.txt; do
    install -m 0644 "$stage/$f" "$root/$cmakedir/$f"
done
for f in "${files[@]}"; do echo "installed $root/$f"; done
