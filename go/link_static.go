//go:build !mooncake_shared && !mooncake_pkgconfig && !mooncake_external

package mooncakemeta

// Default: link the static library built in this repository by
// `cargo build --release` (or `make lib`), so the Go binary carries no
// run-time dependency on libmooncake_meta.

/*
#cgo CFLAGS: -I${SRCDIR}/../include
#cgo LDFLAGS: ${SRCDIR}/../target/release/libmooncake_meta.a -lm -ldl -lpthread
*/
import "C"
