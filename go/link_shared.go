//go:build mooncake_shared && !mooncake_pkgconfig && !mooncake_external

package mooncakemeta

// Build tag mooncake_shared: link the shared library built in this
// repository, found at run time through an rpath to target/release.

/*
#cgo CFLAGS: -I${SRCDIR}/../include
#cgo LDFLAGS: -L${SRCDIR}/../target/release -Wl,-rpath,${SRCDIR}/../target/release -lmooncake_meta -lm -ldl -lpthread
*/
import "C"
