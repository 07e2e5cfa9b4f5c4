package server

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Every type an API path decodes its body into, and every type it holds,
// is one the strict decoding models (fieldsOf, checkRequestType): a
// request type that gains an embedded struct, a map, or a field that
// decodes itself fails here rather than being decoded by other rules than
// the ones the body was checked with. Every *Request type of package api
// is some path's.
func TestEveryRequestTypeIsModelled(t *testing.T) {
	decoded := make(map[string]bool)
	for path, r := range routes {
		if r.req == nil || r.run == nil {
			t.Fatalf("%s: the route has no request type or call", path)
		}
		if err := checkRequestType(r.req); err != nil {
			t.Errorf("%s: %v", path, err)
		}
		if err := decode([]byte("{}"), reflect.New(r.req).Interface(), 1); err != nil {
			t.Errorf("%s: decoding {}: %v", path, err)
		}
		decoded[r.req.Name()] = true
	}
	entries, err := os.ReadDir("api")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("api", e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				name := spec.(*ast.TypeSpec).Name.Name
				if strings.HasSuffix(name, "Request") {
					n++
					if !decoded[name] {
						t.Errorf("api.%s is no path's request type: add its route (or check it here)", name)
					}
				}
			}
		}
	}
	if n < 7 {
		t.Fatalf("found %d *Request types in package api, want them all", n)
	}
}

type inner struct {
	A int `json:"a"`
}

type shadowing struct {
	inner
	B int `json:"b"`
}

type deeper struct {
	*inner
	A int `json:"a"`
}

type selfDecoding struct{ v int }

func (s *selfDecoding) UnmarshalJSON([]byte) error { s.v = 1; return nil }

type holdsAMap struct {
	Labels map[string]string `json:"labels"`
}

type holdsAnInterface struct {
	Extra any `json:"extra"`
}

type holdsAnUnmarshaler struct {
	Config selfDecoding `json:"config"`
}

type holdsATime struct {
	At []time.Time `json:"at"`
}

// twoOfOneName is a *struct{A int `json:"x"`; B int `json:"x"`} (go vet
// refuses its declaration).
var twoOfOneName = reflect.New(reflect.StructOf([]reflect.StructField{
	{Name: "A", Type: reflect.TypeFor[int](), Tag: `json:"x"`},
	{Name: "B", Type: reflect.TypeFor[int](), Tag: `json:"x"`},
})).Interface()

type oddName struct {
	A int `json:"a-b"`
}

type nested struct {
	List []*shadowing `json:"list"`
}

// What fieldsOf does not model is refused, naming the cause, for every
// call (500), never decoded: with an embedded struct fieldsOf reused a
// field's index when a name came twice and let the last declaration win
// (encoding/json's rule is the shallower one, then the tagged one), which
// gave false refusals or an index out of range.
func TestWhatTheStrictDecodingDoesNotModelIsRefused(t *testing.T) {
	for _, c := range []struct {
		v    any
		body string
		want string
	}{
		{&shadowing{}, `{"a":1,"b":2}`, "embeds"},
		{&deeper{}, `{"a":1}`, "embeds"},
		{&nested{}, `{"list":[{"a":1,"b":2}]}`, "embeds"},
		{&holdsAMap{}, `{"labels":{"k":"v","k":"w"}}`, "map"},
		{&holdsAnInterface{}, `{"extra":{"k":1}}`, "interface"},
		{&holdsAnUnmarshaler{}, `{"config":{}}`, "Unmarshaler"},
		{&selfDecoding{}, `{}`, "Unmarshaler"},
		{&holdsATime{}, `{"at":[]}`, "Unmarshaler"},
		{twoOfOneName, `{"x":1}`, `two fields are named "x"`},
		{&oddName{}, `{"a-b":1}`, `"a-b"`},
	} {
		err := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v", p)
				}
			}()
			return decode([]byte(c.body), c.v, 16)
		}()
		what := fmt.Sprintf("decode(%s into %T)", c.body, c.v)
		if err == nil || strings.HasPrefix(err.Error(), "panic: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s = %v, want a refusal naming %q", what, err, c.want)
			continue
		}
		if st, body := errorBody(err); st != http.StatusInternalServerError || body.Name != "INTERNAL" {
			t.Errorf("%s: answered %d %s, want 500 INTERNAL", what, st, body.Name)
		}
		var re *requestError
		if errors.As(err, &re) {
			t.Errorf("%s: refused as the client's error %v", what, err)
		}
	}
}
