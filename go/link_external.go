//go:build mooncake_external

package mooncakemeta

// Build tag mooncake_external: no linker flags of our own; the caller names
// the installed header and library through the environment, e.g.
//
//	CGO_CFLAGS="-I/opt/mooncake/include" \
//	CGO_LDFLAGS="-L/opt/mooncake/lib -lmooncake_meta -lm -ldl -lpthread" \
//	go build -tags mooncake_external
//
// (add -Wl,-rpath,/opt/mooncake/lib for a shared library outside the
// loader's search path, or name libmooncake_meta.a instead of -l for a
// static one).

/*
#cgo LDFLAGS: -lm -ldl -lpthread
*/
import "C"
