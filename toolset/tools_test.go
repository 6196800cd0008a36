package toolset

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestToolTable checks that the table defs offers every tool the package
// defines, each once: every toolDef literal in the package's source is a
// package-level variable listed in defs exactly once, and every method of
// Toolset with a handler's signature is the run of exactly one entry. It
// checks each entry's name, title and description, and that Names follows
// the table; TestReadOnlyAndBeginTurn checks the schemas.
func TestToolTable(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var (
		literals  int                 // toolDef composite literals anywhere
		defined   = map[string]bool{} // package-level variables holding one
		listed    = map[string]int{}  // variables named in defs, with counts
		handlers  = map[string]bool{} // Toolset methods with a handler's signature
		tableSeen bool
	)
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.CompositeLit); ok && isIdent(lit.Type, "toolDef") {
				literals++
			}
			return true
		})
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if isHandler(d) {
					handlers[d.Name.Name] = true
				}
			case *ast.GenDecl:
				if d.Tok != token.VAR {
					continue
				}
				for _, spec := range d.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, v := range vs.Values {
						if u, ok := v.(*ast.UnaryExpr); ok && u.Op == token.AND {
							v = u.X
						}
						lit, ok := v.(*ast.CompositeLit)
						if !ok {
							continue
						}
						switch {
						case isIdent(lit.Type, "toolDef"):
							defined[vs.Names[i].Name] = true
						case vs.Names[i].Name == "defs":
							tableSeen = true
							for _, e := range lit.Elts {
								id, ok := e.(*ast.Ident)
								if !ok {
									t.Errorf("%s: an entry of defs is %T, want the name of a tool's variable", fset.Position(e.Pos()), e)
									continue
								}
								listed[id.Name]++
							}
						}
					}
				}
			}
		}
	}
	if !tableSeen {
		t.Fatal("found no table var defs = []*toolDef{...} in the package's source")
	}
	if len(handlers) == 0 {
		t.Fatal("found no tool handler methods in the package's source")
	}
	for v := range defined {
		if listed[v] == 0 {
			t.Errorf("tool %s is defined but not in the table defs (tools.go), so it is never offered", v)
		}
	}
	for v, n := range listed {
		switch {
		case !defined[v]:
			t.Errorf("defs lists %s, which is not a package-level variable holding a toolDef literal", v)
		case n > 1:
			t.Errorf("defs lists %s %d times", v, n)
		}
	}
	if literals != len(defined) {
		t.Errorf("the package has %d toolDef literals and %d package-level variables holding one: define each tool as a variable listed in defs", literals, len(defined))
	}
	if len(defs) != len(defined) {
		t.Errorf("defs has %d entries, the package defines %d tools", len(defs), len(defined))
	}

	name := regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)
	names := map[string]bool{}
	runs := map[string]string{} // handler method -> tool
	for i, d := range defs {
		if d == nil {
			t.Errorf("defs[%d] is nil", i)
			continue
		}
		if !name.MatchString(d.name) {
			t.Errorf("defs[%d]: name %q is not lower_snake_case", i, d.name)
		}
		if names[d.name] {
			t.Errorf("two tools are named %s", d.name)
		}
		names[d.name] = true
		if strings.TrimSpace(d.title) == "" {
			t.Errorf("%s has no title", d.name)
		}
		if len(d.description) < 80 {
			t.Errorf("%s: description %q is too thin for a model", d.name, d.description)
		}
		if d.input == "" {
			t.Errorf("%s has no input schema", d.name)
		}
		if d.run == nil {
			t.Errorf("%s has no handler", d.name)
			continue
		}
		fn := runtime.FuncForPC(reflect.ValueOf(d.run).Pointer()).Name()
		method, ok := strings.CutPrefix(fn, reflect.TypeFor[Toolset]().PkgPath()+".(*Toolset).")
		if !ok || !handlers[method] {
			t.Errorf("%s runs %s, want a method of Toolset with a handler's signature", d.name, fn)
			continue
		}
		if other, dup := runs[method]; dup {
			t.Errorf("%s and %s both run %s", other, d.name, method)
		}
		runs[method] = d.name
	}
	for h := range handlers {
		if _, ok := runs[h]; !ok {
			t.Errorf("Toolset.%s has a handler's signature but no tool in defs runs it", h)
		}
	}

	for _, readOnly := range []bool{false, true} {
		var want []string
		for _, d := range defs {
			if !readOnly || d.annotations.ReadOnly {
				want = append(want, d.name)
			}
		}
		if got := Names(readOnly); !slices.Equal(got, want) {
			t.Errorf("Names(%v) = %v, want %v", readOnly, got, want)
		}
	}
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// isHandler reports whether d is a method
// (t *Toolset) m(context.Context, json.RawMessage) (*Output, error).
func isHandler(d *ast.FuncDecl) bool {
	if d.Recv == nil || len(d.Recv.List) != 1 {
		return false
	}
	recv, ok := d.Recv.List[0].Type.(*ast.StarExpr)
	if !ok || !isIdent(recv.X, "Toolset") {
		return false
	}
	return slices.Equal(fieldTypes(d.Type.Params), []string{"context.Context", "json.RawMessage"}) &&
		slices.Equal(fieldTypes(d.Type.Results), []string{"*Output", "error"})
}

// fieldTypes returns the types of a parameter or result list, one per
// value, as written.
func fieldTypes(fl *ast.FieldList) []string {
	if fl == nil {
		return nil
	}
	var types []string
	for _, f := range fl.List {
		s := typeString(f.Type)
		for range max(1, len(f.Names)) {
			types = append(types, s)
		}
	}
	return types
}

func typeString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.StarExpr:
		return "*" + typeString(e.X)
	case *ast.SelectorExpr:
		return typeString(e.X) + "." + e.Sel.Name
	}
	return ""
}
