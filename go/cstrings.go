package mooncakemeta

// NUL-terminated string arrays built in C memory, for the C arguments that
// are arrays of string pointers (cgo forbids passing Go memory that holds
// Go pointers).

/*
#include <stdlib.h>
*/
import "C"

import (
	"strings"
	"unsafe"
)

// cStrings is a C array of C strings, all in C memory.
type cStrings struct {
	ptr  **C.char
	strs []*C.char
}

// newCStrings copies ss into C memory; call free when the C call is done.
// An empty list is a NULL array. what names the argument in the error a
// string with a NUL byte gets (C would silently cut it there).
func newCStrings(what string, ss []string) (cStrings, error) {
	for i, s := range ss {
		if strings.IndexByte(s, 0) >= 0 {
			return cStrings{}, invalidParams("%s[%d] contains a NUL byte", what, i)
		}
	}
	if len(ss) == 0 {
		return cStrings{}, nil
	}
	arr := (**C.char)(C.calloc(C.size_t(len(ss)), C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	strs := unsafe.Slice(arr, len(ss))
	for i, s := range ss {
		strs[i] = C.CString(s)
	}
	return cStrings{ptr: arr, strs: strs}, nil
}

// newCString copies s into C memory (free it with C.free); a NUL byte in s
// is ErrInvalidParams naming what.
func newCString(what, s string) (*C.char, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, invalidParams("%s contains a NUL byte", what)
	}
	return C.CString(s), nil
}

// free releases the strings and the array.
func (c cStrings) free() {
	if c.ptr == nil {
		return
	}
	for _, s := range c.strs {
		C.free(unsafe.Pointer(s))
	}
	C.free(unsafe.Pointer(c.ptr))
}

// goStringN copies the n bytes at p into a Go string. C.GoStringN takes a
// C int, which a key longer than 2^31 − 1 bytes (the library allows up to
// 2^32 − 1) would turn negative.
func goStringN(p *C.char, n C.size_t) string {
	if n == 0 {
		return ""
	}
	return strings.Clone(unsafe.String((*byte)(unsafe.Pointer(p)), int(n)))
}
