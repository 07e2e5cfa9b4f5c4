//go:build mooncake_pkgconfig && !mooncake_external

package mooncakemeta

// Build tag mooncake_pkgconfig: link an installed library described by
// mooncake_meta.pc (set PKG_CONFIG_PATH if it is not in a default
// directory). Without pkg-config, build with the tag and set CGO_CFLAGS and
// CGO_LDFLAGS by hand instead; see the package documentation.

/*
#cgo pkg-config: mooncake_meta
*/
import "C"
