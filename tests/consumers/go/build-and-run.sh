#!/bin/sh
# Go from its own module, exactly as go/README.md ("Using the package from
# your own module") and README.md's "Installing and linking" tell a user:
# require + replace to a clone's go/ directory, then
#   1. -tags mooncake_pkgconfig against the installed prefix, with an rpath
#      (and, without one, LD_LIBRARY_PATH);
#   2. the default static link, which uses the clone's own
#      target/release/libmooncake_meta.a (no run-time dependency);
#   3. the default link from a clone that was never built: the error says
#      what to build or set.
#
# env: PREFIX (the make install prefix), MOONCAKE_META_REPO (the clone).
set -eu
: "${PREFIX:?set PREFIX to the prefix of make install}"
: "${MOONCAKE_META_REPO:?set MOONCAKE_META_REPO to the libmooncake_meta clone}"
export GOTOOLCHAIN=local CGO_ENABLED=1
module=github.com/kvcache-ai/libmooncake_meta/go

go mod edit -require=$module@v0.0.0 -replace=$module="$MOONCAKE_META_REPO/go"

echo "== -tags mooncake_pkgconfig, rpath to the prefix"
PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig" CGO_LDFLAGS="-Wl,-rpath,$PREFIX/lib" \
    go build -tags mooncake_pkgconfig -o app .
./app

echo "== -tags mooncake_pkgconfig, no rpath: LD_LIBRARY_PATH"
PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig" go build -tags mooncake_pkgconfig -o app-norpath .
LD_LIBRARY_PATH="$PREFIX/lib" ./app-norpath

echo "== default: the clone's static library"
go build -o app-static .
./app-static
if readelf -d app-static 2>/dev/null | grep -F libmooncake_meta; then
    echo "the default build depends on the shared library" >&2
    exit 1
fi

echo "== default, from a clone without target/release: the error"
mkdir unbuilt
cp -R "$MOONCAKE_META_REPO/go" "$MOONCAKE_META_REPO/include" unbuilt/
go mod edit -replace=$module="$PWD/unbuilt/go"
if go build -o app-unbuilt . 2>unbuilt.err; then
    echo "the default build succeeded without target/release/libmooncake_meta.a" >&2
    exit 1
fi
grep -F 'mooncakemeta:' unbuilt.err
grep -q -F 'cargo build --release' unbuilt.err && grep -q -F 'mooncake_pkgconfig' unbuilt.err || {
    cat unbuilt.err >&2
    echo "the error does not say what to build or set" >&2
    exit 1
}
go mod edit -replace=$module="$MOONCAKE_META_REPO/go"
