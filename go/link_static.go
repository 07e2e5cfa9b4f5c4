//go:build !mooncake_shared && !mooncake_pkgconfig && !mooncake_external

package mooncakemeta

// Default: link the static library built in the clone this package lives
// in, ../target/release/libmooncake_meta.a, by `cargo build --release` (or
// `make lib`) at the clone's root, so the Go binary carries no run-time
// dependency on libmooncake_meta. This holds from another module too, as
// long as its go.mod replaces the module path with this directory. For an
// installed library (make install), build with -tags mooncake_pkgconfig
// instead. Without the archive the build stops with an error that says
// both (the -I below only lets the preprocessor look for the archive).

/*
#cgo CFLAGS: -I${SRCDIR}/../include -I${SRCDIR}/../target/release
#cgo LDFLAGS: ${SRCDIR}/../target/release/libmooncake_meta.a -lm -ldl -lpthread
#if defined(__has_include)
#if !__has_include("libmooncake_meta.a")
#error "mooncakemeta: the default build links <clone>/target/release/libmooncake_meta.a, which is missing: run `cargo build --release` at the root of the clone that go.mod's replace directive names, or link an installed library with `go build -tags mooncake_pkgconfig` and PKG_CONFIG_PATH=<prefix>/lib/pkgconfig (see go/README.md)"
#endif
#endif
*/
import "C"
