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
#   lib/cmake/mooncake_meta/install-manifest.txt      what install put there
#
# install copies what cargo built in RELEASE and never runs cargo itself
# (`make lib` builds; `sudo make install` then needs no cargo for root).
# With nothing built it fails, naming `make lib`; with a source newer than
# the built libraries it warns that they may be stale.
#
# The manifest (format 2) has one entry a line, each path relative to the
# prefix: "dir D" for a directory install created, "file F" for a file or
# symlink it installed. A reinstall keeps the entries of the one before, so
# the files of an earlier version (its libmooncake_meta.so.<version> and
# .debug file) stay recorded. uninstall removes exactly the recorded files,
# then the recorded directories once they are empty; a directory that
# existed before, like /usr/local/lib, stays. Entries are checked against
# the names install can write, whatever the file says. An older manifest
# (format 1: one created directory a line, no files) or none at all still
# uninstalls: the files are then the ones this version installs, plus (for
# format 1) the file the SONAME link points to and its debug file.
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

# Every file and symlink this install writes, relative to the prefix.
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

# known_dir D / known_file F: a name install can create (any version's or
# ABI's library names, nothing outside the package's own names).
known_dir() {
    local d
    for d in "${dirs[@]}"; do [ "$1" = "$d" ] && return 0; done
    return 1
}
known_file() {
    local rest
    case "$1" in
    include/mooncake_meta.h | include/mooncake_meta.hpp | lib/libmooncake_meta.a | lib/libmooncake_meta.so | \
        lib/pkgconfig/mooncake_meta.pc | "$cmakedir/mooncake_meta-config.cmake" | \
        "$cmakedir/mooncake_meta-config-version.cmake" | "$manifest")
        return 0
        ;;
    lib/.debug/libmooncake_meta.so.*.debug)
        rest=${1#lib/.debug/libmooncake_meta.so.}
        rest=${rest%.debug}
        ;;
    lib/libmooncake_meta.so.*) rest=${1#lib/libmooncake_meta.so.} ;;
    *) return 1 ;;
    esac
    case "$rest" in "" | *[!0-9A-Za-z.+_-]*) return 1 ;; esac
}
# has LIST-NAME ITEM: whether the array holds ITEM.
has() {
    local -n list=$1
    local x
    for x in ${list[@]+"${list[@]}"}; do [ "$x" = "$2" ] && return 0; done
    return 1
}

# The manifest already there, if any: the directories it says install
# created into old_dirs, the files it recorded into old_files (none in
# format 1).
old_dirs=()
old_files=()
format1=0
if [ -f "$root/$manifest" ]; then
    while IFS= read -r line || [ -n "$line" ]; do
        case "$line" in
        "dir "*) known_dir "${line#dir }" && old_dirs+=("${line#dir }") ;;
        "file "*) known_file "${line#file }" && old_files+=("${line#file }") ;;
        *) known_dir "$line" && old_dirs+=("$line") ;; # format 1
        esac
    done <"$root/$manifest"
    [ "${#old_files[@]}" -gt 0 ] || format1=1
fi
# The library a format-1 install left, perhaps of another version: the
# target of the SONAME link, and its debug file.
linked_files() {
    local target
    [ "$format1" = 1 ] || return 0
    target=$(readlink "$root/lib/$soname" 2>/dev/null) || return 0
    known_file "lib/$target" || return 0
    case "$target" in libmooncake_meta.so.*.*) ;; *) return 0 ;; esac
    echo "lib/$target"
    echo "lib/.debug/$target.debug"
}

if [ "$mode" = uninstall ]; then
    remove=()
    if [ "${#old_files[@]}" -gt 0 ]; then
        remove=("${old_files[@]}")
    else
        remove=("${files[@]}")
        while IFS= read -r f; do has remove "$f" || remove+=("$f"); done < <(linked_files)
    fi
    for f in "${remove[@]}"; do
        if [ -e "$root/$f" ] || [ -L "$root/$f" ]; then
            rm -f "$root/$f"
            echo "removed $root/$f"
        fi
    done
    # Children before parents; rmdir leaves a directory that holds anything else.
    for ((i = ${#dirs[@]} - 1; i >= 0; i--)); do
        has old_dirs "${dirs[i]}" || continue
        d="$root/${dirs[i]}"
        d=${d%/.}
        if [ -d "$d" ] && rmdir "$d" 2>/dev/null; then
            echo "removed $d/"
        fi
    done
    exit 0
fi

for tool in "$OBJCOPY" sed install find; do
    command -v "$tool" >/dev/null 2>&1 || die "'$tool' is required; install it with: apt-get install -y binutils coreutils findutils sed"
done
for f in "$RELEASE/libmooncake_meta.so" "$RELEASE/libmooncake_meta.a"; do
    [ -f "$f" ] || die "$f is missing: build it first with \`make lib\` (as yourself, not root; install never runs cargo)"
done
# A source edited after the build: the libraries may not match the header
# install copies. (Only a warning: a checkout or a touch also changes times.)
for f in "$RELEASE/libmooncake_meta.so" "$RELEASE/libmooncake_meta.a"; do
    newer=$(find build.rs Cargo.toml Cargo.lock cbindgen.toml include/mooncake_meta.h core/Cargo.toml core/src \
        src -path src/bin -prune -o -type f -newer "$f" -print 2>/dev/null | head -n 1) || true
    if [ -n "$newer" ]; then
        echo "install: warning: $newer changed after $f was built, so the library may be stale: run \`make lib\` before installing" >&2
        break
    fi
done

# The entries of an install already there stay recorded: an earlier
# version's library files, and the directories it created.
created=(${old_dirs[@]+"${old_dirs[@]}"})
recorded=()
if [ "${#old_files[@]}" -gt 0 ]; then
    recorded=("${old_files[@]}")
else
    while IFS= read -r f; do recorded+=("$f"); done < <(linked_files)
fi

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
for d in "${dirs[@]}"; do
    if [ ! -d "$root/$d" ]; then
        install -d "$root/$d"
        created+=("$d")
    fi
done

# The manifest, installed before any other file so that an interrupted
# install can still be uninstalled: the created directories, then the
# files recorded before that still exist, then this install's files.
{
    echo "# libmooncake_meta install manifest, format 2: what make install put under"
    echo "# this prefix (paths relative to it); make uninstall removes exactly these."
    for d in "${dirs[@]}"; do
        if has created "$d"; then echo "dir $d"; fi
    done
    for f in ${recorded[@]+"${recorded[@]}"}; do
        if ! has files "$f" && { [ -e "$root/$f" ] || [ -L "$root/$f" ]; }; then echo "file $f"; fi
    done
    for f in "${files[@]}"; do echo "file $f"; done
} >"$stage/install-manifest.txt"
install -m 0644 "$stage/install-manifest.txt" "$root/$manifest"

install -m 0644 include/mooncake_meta.h "$root/include/mooncake_meta.h"
install -m 0644 include/mooncake_meta.hpp "$root/include/mooncake_meta.hpp"
install -m 0644 "$stage/libmooncake_meta.a" "$root/lib/libmooncake_meta.a"
install -m 0755 "$stage/$real" "$root/lib/$real"
ln -sfn "$real" "$root/lib/$soname"
ln -sfn "$soname" "$root/lib/libmooncake_meta.so"
install -m 0644 "$stage/$real.debug" "$root/lib/.debug/$real.debug"
install -m 0644 "$stage/mooncake_meta.pc" "$root/lib/pkgconfig/mooncake_meta.pc"
for f in mooncake_meta-config.cmake mooncake_meta-config-version.cmake; do
    install -m 0644 "$stage/$f" "$root/$cmakedir/$f"
done
for f in "${files[@]}"; do echo "installed $root/$f"; done
