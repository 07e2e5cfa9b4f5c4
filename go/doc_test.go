package mooncakemeta_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// Every exported identifier of the package carries a doc comment (the
// Go counterpart of the header's documentation test).
func TestEveryExportedIdentifierIsDocumented(t *testing.T) {
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	entries, err := os.ReadDir(".")
	must(t, "ReadDir", err)
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		must(t, "ParseFile "+name, err)
		files[name] = f
	}
	pkg, err := doc.NewFromFiles(fset, values(files), "github.com/kvcache-ai/libmooncake_meta/go")
	must(t, "doc.NewFromFiles", err)
	var missing []string
	check := func(name, text string) {
		if strings.TrimSpace(text) == "" {
			missing = append(missing, name)
		}
	}
	if !strings.HasPrefix(pkg.Doc, "Package mooncakemeta ") {
		missing = append(missing, "package")
	}
	checkValues := func(vs []*doc.Value) {
		for _, v := range vs {
			// A documented group documents its members; otherwise each
			// exported name needs its own comment.
			if strings.TrimSpace(v.Doc) != "" {
				continue
			}
			for _, spec := range v.Decl.Specs {
				vs := spec.(*ast.ValueSpec)
				for _, n := range vs.Names {
					if n.IsExported() && vs.Doc.Text() == "" && vs.Comment.Text() == "" {
						missing = append(missing, n.Name)
					}
				}
			}
		}
	}
	checkValues(pkg.Consts)
	checkValues(pkg.Vars)
	for _, f := range pkg.Funcs {
		check(f.Name, f.Doc)
	}
	for _, ty := range pkg.Types {
		check(ty.Name, ty.Doc)
		checkValues(ty.Consts)
		checkValues(ty.Vars)
		for _, f := range ty.Funcs {
			check(f.Name, f.Doc)
		}
		for _, m := range ty.Methods {
			check(ty.Name+"."+m.Name, m.Doc)
		}
		// Exported struct fields.
		for _, spec := range ty.Decl.Specs {
			st, ok := spec.(*ast.TypeSpec).Type.(*ast.StructType)
			if !ok {
				continue
			}
			for _, field := range st.Fields.List {
				for _, n := range field.Names {
					if n.IsExported() && field.Doc.Text() == "" && field.Comment.Text() == "" {
						missing = append(missing, ty.Name+"."+n.Name)
					}
				}
			}
		}
	}
	if len(missing) > 0 {
		t.Fatalf("undocumented exported identifiers: %s", strings.Join(missing, ", "))
	}
}

func values(m map[string]*ast.File) []*ast.File {
	out := make([]*ast.File, 0, len(m))
	for _, f := range m {
		out = append(out, f)
	}
	return out
}
