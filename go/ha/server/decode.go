package server

// Strict request decoding. encoding/json alone is lenient where the API
// promises to be exact: it replaces bytes that are not UTF-8, and string
// escapes that stand for a lone UTF-16 surrogate, with U+FFFD (so a key
// "k\xff" would be stored as "k\uFFFD", and "k\xfe" would find it), it
// matches field names case-insensitively ({"Key":...} sets key) and it
// lets a repeated field override the first. So a body is checked first,
// without decoding anything into the request: it must be UTF-8 (else
// INVALID_UTF8), a valid JSON value whose strings escape no lone surrogate
// (else INVALID_UTF8), whose field names, at every level, are exactly the
// request type's and appear once (else BAD_REQUEST naming the field), and
// whose lists hold at most Config.MaxCallEntries entries (else
// INVALID_PARAMS naming the limit). Only then is it decoded, with unknown
// fields disallowed. A request type the checks do not model (an embedded
// field, a map, a type that decodes itself: checkRequestType) fails every
// call with 500 instead of being decoded by rules the body was not
// checked with.

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
)

// decode parses one JSON value into v: every field known and named
// exactly, once, no list longer than maxEntries, and nothing after it.
func decode(body []byte, v any, maxEntries int) error {
	if err := checkRequestType(reflect.TypeOf(v)); err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	if !utf8.Valid(body) {
		off := 0
		for off < len(body) {
			r, n := utf8.DecodeRune(body[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return invalidUTF8(fmt.Sprintf("the request body is not UTF-8: byte 0x%02x at offset %d", body[off], off))
	}
	if !json.Valid(body) {
		// Malformed: encoding/json says how.
		if err := lenientDecode(body, v); err != nil {
			return err
		}
		return badRequest("malformed request body")
	}
	sc := scanner{b: body, maxEntries: maxEntries}
	if err := sc.value(reflect.TypeOf(v), ""); err != nil {
		return err
	}
	return lenientDecode(body, v)
}

// lenientDecode is encoding/json's decoding: unknown fields are refused,
// and so is anything after the value.
func lenientDecode(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("malformed request body: " + err.Error())
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("malformed request body: data after the JSON value")
	}
	return nil
}

func invalidUTF8(msg string) error {
	return &requestError{status: http.StatusBadRequest, code: int32(mm.CodeInvalidUTF8), name: mm.CodeInvalidUTF8.String(), msg: msg}
}

func invalidParams(msg string) error {
	return &requestError{status: http.StatusBadRequest, code: int32(mm.CodeInvalidParams), name: mm.CodeInvalidParams.String(), msg: msg}
}

// field is a JSON field of a request type.
type field struct {
	typ reflect.Type
	idx int // its index among the type's fields (duplicate detection)
}

// fieldCache maps a struct type to its JSON fields by exact name.
var fieldCache sync.Map // reflect.Type -> map[string]field

// fieldsOf returns t's JSON fields by exact name, as encoding/json names
// them: the tag's name, else the Go name; "-" and unexported fields are
// not fields. What it does not model, as encoding/json's rules for it
// (which field a name goes to) are not the plain ones, is refused: an
// embedded (anonymous) field, whose fields encoding/json promotes by
// depth and tags, two fields of one name (encoding/json drops both), and
// a tag name encoding/json would not take (it falls back to the Go
// name). checkRequestType refuses the rest.
func fieldsOf(t reflect.Type) (map[string]field, error) {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.(map[string]field), nil
	}
	fs := make(map[string]field)
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil, fmt.Errorf("%v embeds %v: embedded fields are not modelled by the strict decoding", t, f.Type)
		}
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		} else if !plainName(name) {
			return nil, fmt.Errorf("%v.%s: the JSON name %q is not letters, digits and '_' (not modelled by the strict decoding)", t, f.Name, name)
		}
		if _, dup := fs[name]; dup {
			return nil, fmt.Errorf("%v: two fields are named %q in JSON (encoding/json ignores both)", t, name)
		}
		fs[name] = field{typ: f.Type, idx: len(fs)}
	}
	fieldCache.Store(t, fs)
	return fs, nil
}

// plainName says whether a tag's name is letters, digits and '_' only
// (encoding/json takes a few more).
func plainName(name string) bool {
	for _, c := range name {
		if !(c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// checkedTypes caches checkRequestType's verdicts.
var checkedTypes sync.Map // reflect.Type -> error (nil: accepted)

// checkRequestType refuses a request type, or a type it holds at any
// level, that the strict decoding does not model: a map or interface
// (an object whose names no type declares), a type that decodes itself
// (json.Unmarshaler, encoding.TextUnmarshaler), and what fieldsOf
// refuses. decode checks its target's type first, so such a type fails
// every call (500) rather than being decoded by other rules than the
// scanner checked; TestEveryRequestTypeIsModelled walks the routes'.
func checkRequestType(t reflect.Type) error {
	if err, ok := checkedTypes.Load(t); ok {
		e, _ := err.(error)
		return e
	}
	err := checkType(t, make(map[reflect.Type]bool))
	if err != nil {
		err = fmt.Errorf("server: request type %v: %w", t, err)
		checkedTypes.Store(t, err)
	} else {
		checkedTypes.Store(t, nil)
	}
	return err
}

func checkType(t reflect.Type, seen map[reflect.Type]bool) error {
	if seen[t] {
		return nil
	}
	seen[t] = true
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface {
		for _, u := range []reflect.Type{jsonUnmarshaler, textUnmarshaler} {
			if t.Implements(u) || reflect.PointerTo(t).Implements(u) {
				return fmt.Errorf("%v implements %v: not modelled by the strict decoding", t, u)
			}
		}
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return checkType(t.Elem(), seen)
	case reflect.Map, reflect.Interface:
		return fmt.Errorf("%v is a %v: not modelled by the strict decoding", t, t.Kind())
	case reflect.Struct:
		fs, err := fieldsOf(t)
		if err != nil {
			return err
		}
		for name, f := range fs {
			if err := checkType(f.typ, seen); err != nil {
				return fmt.Errorf("field %q: %w", name, err)
			}
		}
	case reflect.Chan, reflect.Func, reflect.UnsafePointer, reflect.Complex64, reflect.Complex128:
		return fmt.Errorf("%v is a %v: JSON does not decode into it", t, t.Kind())
	}
	return nil
}

// scanner walks a body that is valid JSON and valid UTF-8 (decode checked
// both), following the request type where it can.
type scanner struct {
	b          []byte
	i          int
	maxEntries int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value checks the value at s.i, expected of type t (nil: unknown, its
// strings are checked only), at path (a field's dotted name, "" at the
// top).
func (s *scanner) value(t reflect.Type, path string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && t.Kind() == reflect.Interface {
		t = nil
	}
	s.ws()
	if s.i >= len(s.b) {
		return badRequest("malformed request body: unexpected end")
	}
	switch s.b[s.i] {
	case '{':
		return s.object(t, path)
	case '[':
		return s.array(t, path)
	case '"':
		_, err := s.str(false)
		return err
	}
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return nil
		}
		s.i++
	}
	return nil
}

func (s *scanner) object(t reflect.Type, path string) error {
	var fs map[string]field
	var seen []bool
	if t != nil && t.Kind() == reflect.Struct {
		var err error
		if fs, err = fieldsOf(t); err != nil {
			return err // checkRequestType refused it already
		}
		seen = make([]bool, len(fs))
	}
	s.i++ // '{'
	for {
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == '}' {
			s.i++
			return nil
		}
		key, err := s.str(true)
		if err != nil {
			return err
		}
		s.ws()
		s.i++ // ':'
		var ft reflect.Type
		if fs != nil {
			f, ok := fs[key]
			if !ok {
				return badRequest(unknownField(fs, path+key))
			}
			if seen[f.idx] {
				return badRequest(fmt.Sprintf("field %q appears more than once", path+key))
			}
			seen[f.idx] = true
			ft = f.typ
		}
		if err := s.value(ft, path+key+"."); err != nil {
			return err
		}
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == ',' {
			s.i++
		}
	}
}

// unknownField names an unknown field, and the known one it matches but
// for case.
func unknownField(fs map[string]field, name string) string {
	prefix, last := "", name
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		prefix, last = name[:i+1], name[i+1:]
	}
	for known := range fs {
		if strings.EqualFold(known, last) {
			return fmt.Sprintf("unknown field %q (field names are case-sensitive: %q)", name, prefix+known)
		}
	}
	return fmt.Sprintf("unknown field %q", name)
}

func (s *scanner) array(t reflect.Type, path string) error {
	var et reflect.Type
	limited := false
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		et = t.Elem()
		limited = t.Kind() == reflect.Slice
	}
	s.i++ // '['
	for n := 0; ; n++ {
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			return nil
		}
		if limited && n == s.maxEntries {
			return invalidParams(fmt.Sprintf("%q lists more than %d entries: at most %d per call (--max-call-entries)",
				strings.TrimSuffix(path, "."), s.maxEntries, s.maxEntries))
		}
		if err := s.value(et, path); err != nil {
			return err
		}
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == ',' {
			s.i++
		}
	}
}

// str passes the string at s.i, refusing an escape of a lone surrogate,
// and returns its value when want is set.
func (s *scanner) str(want bool) (string, error) {
	start := s.i
	escaped := false
	s.i++ // '"'
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '"':
			s.i++
			if !want {
				return "", nil
			}
			raw := s.b[start:s.i]
			if !escaped {
				return string(raw[1 : len(raw)-1]), nil
			}
			var v string
			if err := json.Unmarshal(raw, &v); err != nil {
				return "", badRequest("malformed request body: " + err.Error())
			}
			return v, nil
		case '\\':
			escaped = true
			if s.i+1 < len(s.b) && s.b[s.i+1] == 'u' {
				r, ok := hex4(s.b, s.i+2)
				switch {
				case !ok:
					return "", badRequest("malformed request body: a bad \\u escape")
				case r >= 0xD800 && r < 0xDC00:
					if lo, ok := hex4(s.b, s.i+8); ok && s.b[s.i+6] == '\\' && s.b[s.i+7] == 'u' && lo >= 0xDC00 && lo < 0xE000 {
						s.i += 12
						continue
					}
					return "", invalidUTF8(fmt.Sprintf("the string escape \\u%04x at offset %d is a lone UTF-16 surrogate: not UTF-8", r, s.i))
				case r >= 0xDC00 && r < 0xE000:
					return "", invalidUTF8(fmt.Sprintf("the string escape \\u%04x at offset %d is a lone UTF-16 surrogate: not UTF-8", r, s.i))
				}
				s.i += 6
				continue
			}
			s.i += 2
		default:
			s.i++
		}
	}
	return "", badRequest("malformed request body: unterminated string")
}

// hex4 reads the 4 hex digits at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		r <<= 4
		switch {
		case '0' <= c && c <= '9':
			r |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			r |= rune(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}
