package editguard_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// These tests keep the module's packages joined only through what each
// hands the other explicitly: no package fills in another's variables when
// it starts, and only the root package's consumers import it. A link of
// either kind that is not allowed fails here, naming the file and line.

// modulePath is the root package's import path.
const modulePath = "github.com/editguard/editguard"

// rootImporters are the packages, by directory, whose non-test files may
// import the root package: its consumers. Test files of every package may.
// A package the root package imports (internal/*, among them
// internal/remote) must not: it gets what it needs of the root as an
// interface the root implements and passes in.
var rootImporters = []string{
	"cmd/editguard",       // the CLI
	"cmd/editguard-bench", // benchmarks
	"internal/mcpserver",  // the MCP server
	"internal/replay",     // editguard replay, through a StateReader passed in
	"internal/soak",       // the soak driver and its checks
	"internal/testutil",   // test support
	"internal/ui",         // editguard ui, through the Workspace and Session passed in
	"toolset",             // the agent-facing tools
}

// goFile is a parsed .go file of the module.
type goFile struct {
	rel  string // slash-separated, relative to the module root
	fset *token.FileSet
	f    *ast.File
}

// moduleFiles parses every .go file of the module, tests only if tests,
// else the others, skipping testdata and hidden directories.
func moduleFiles(t *testing.T, root string, tests bool, mode parser.Mode) []goFile {
	t.Helper()
	var out []goFile
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if p != root {
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") != tests {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, nil, mode)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out = append(out, goFile{rel: filepath.ToSlash(rel), fset: fset, f: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("no .go files found under the module root")
	}
	return out
}

// importNames returns the names by which f refers to the packages it
// imports, mapped to their paths: the name given, or the package name the
// path suggests (its last element, less a major version: "math/rand/v2"
// and "gopkg.in/yaml.v3" are rand and yaml, and less a "go-" prefix).
func importNames(f *ast.File) map[string]string {
	names := map[string]string{}
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		if imp.Name != nil {
			if n := imp.Name.Name; n != "_" && n != "." {
				names[n] = p
			}
			continue
		}
		elem := path.Base(p)
		if len(elem) >= 2 && elem[0] == 'v' && strings.Trim(elem[1:], "0123456789") == "" {
			elem = path.Base(path.Dir(p)) // "math/rand/v2"
		}
		if i := strings.Index(elem, ".v"); i > 0 {
			elem = elem[:i] // "yaml.v3"
		}
		elem = strings.TrimPrefix(elem, "go-")
		names[elem] = p
	}
	return names
}

// foreignTarget returns the import path of the package whose variable the
// assignment target x is (pkg.V, pkg.V.Field, pkg.V[i], *pkg.V), or "".
func foreignTarget(x ast.Expr, imports map[string]string) string {
	for {
		switch e := x.(type) {
		case *ast.SelectorExpr:
			if id, ok := e.X.(*ast.Ident); ok {
				if p, ok := imports[id.Name]; ok && id.Obj == nil {
					return p
				}
			}
			x = e.X
		case *ast.IndexExpr:
			x = e.X
		case *ast.StarExpr:
			x = e.X
		case *ast.ParenExpr:
			x = e.X
		default:
			return ""
		}
	}
}

// foreignAssignments returns, as "file:line: pkg", every assignment in n
// to a variable of a package the file imports.
func foreignAssignments(gf goFile, n ast.Node, imports map[string]string) []string {
	var out []string
	check := func(x ast.Expr) {
		if p := foreignTarget(x, imports); p != "" {
			out = append(out, gf.fset.Position(x.Pos()).String()+": assigns to a variable of "+p)
		}
	}
	ast.Inspect(n, func(n ast.Node) bool {
		switch s := n.(type) {
		case *ast.AssignStmt:
			for _, x := range s.Lhs {
				check(x)
			}
		case *ast.IncDecStmt:
			check(s.X)
		}
		return true
	})
	return out
}

// packageSetters returns the functions of one package (files) that assign
// to one of the package's own package-level variables, by name: a setter
// another package could call as it starts, to fill that variable in.
func packageSetters(files []goFile) map[string]bool {
	vars := map[string]bool{}          // the package-level variables, by name
	specs := map[*ast.ValueSpec]bool{} // their declarations
	for _, gf := range files {
		for _, d := range gf.f.Decls {
			if d, ok := d.(*ast.GenDecl); ok && d.Tok == token.VAR {
				for _, s := range d.Specs {
					vs := s.(*ast.ValueSpec)
					specs[vs] = true
					for _, n := range vs.Names {
						vars[n.Name] = true
					}
				}
			}
		}
	}
	// global reports whether x names a package-level variable: declared
	// at the top of its file, or unresolved in it (then in another file
	// of the package, since a local is always resolved).
	global := func(x ast.Expr) bool {
		for {
			switch e := x.(type) {
			case *ast.Ident:
				if !vars[e.Name] {
					return false
				}
				if e.Obj == nil {
					return true
				}
				vs, ok := e.Obj.Decl.(*ast.ValueSpec)
				return ok && specs[vs]
			case *ast.SelectorExpr:
				x = e.X
			case *ast.IndexExpr:
				x = e.X
			case *ast.StarExpr:
				x = e.X
			case *ast.ParenExpr:
				x = e.X
			default:
				return false
			}
		}
	}
	out := map[string]bool{}
	for _, gf := range files {
		for _, d := range gf.f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || fd.Body == nil || !fd.Name.IsExported() {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				switch s := n.(type) {
				case *ast.AssignStmt:
					if s.Tok == token.DEFINE {
						return true
					}
					for _, x := range s.Lhs {
						if global(x) {
							out[fd.Name.Name] = true
						}
					}
				case *ast.IncDecStmt:
					if global(s.X) {
						out[fd.Name.Name] = true
					}
				}
				return true
			})
		}
	}
	return out
}

// initBackDoors returns the places in the files of one package where the
// package, as it starts, assigns to a variable of a package it imports, or
// calls a function of one that assigns to a variable of its own (setters,
// by import path, from packageSetters): in an init function or the
// initialiser of a package-level variable, or in a function of the package
// that one of those calls (by name, directly or through other such
// functions).
func initBackDoors(files []goFile, setters map[string]map[string]bool) []string {
	type body struct {
		gf goFile
		n  ast.Node
	}
	funcs := map[string]body{} // the package's functions, by name
	var todo []body            // what runs at init
	for _, gf := range files {
		for _, d := range gf.f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil || d.Body == nil {
					continue
				}
				if d.Name.Name == "init" {
					todo = append(todo, body{gf, d.Body})
				} else {
					funcs[d.Name.Name] = body{gf, d.Body}
				}
			case *ast.GenDecl:
				if d.Tok != token.VAR {
					continue
				}
				for _, s := range d.Specs {
					for _, v := range s.(*ast.ValueSpec).Values {
						todo = append(todo, body{gf, v})
					}
				}
			}
		}
	}
	var out []string
	reached := map[string]bool{}
	for len(todo) > 0 {
		b := todo[0]
		todo = todo[1:]
		imports := importNames(b.gf.f)
		out = append(out, foreignAssignments(b.gf, b.n, imports)...)
		ast.Inspect(b.n, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if sel, ok := c.Fun.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && id.Obj == nil && setters[imports[id.Name]][sel.Sel.Name] {
						out = append(out, b.gf.fset.Position(c.Pos()).String()+": calls "+sel.Sel.Name+", which assigns to a variable of "+imports[id.Name])
					}
				}
				if id, ok := c.Fun.(*ast.Ident); ok && !reached[id.Name] {
					if f, ok := funcs[id.Name]; ok {
						reached[id.Name] = true
						todo = append(todo, f)
					}
				}
			}
			return true
		})
	}
	return out
}

// TestNoPackageFillsAnotherAtInit fails if a package of the module, as it
// starts (see initBackDoors), assigns to a variable of another package: a
// link between two packages that the compiler does not check and a reader
// does not see at the call. A package that needs something of another gets
// it passed in (an interface, an option, an argument) instead.
func TestNoPackageFillsAnotherAtInit(t *testing.T) {
	byDir := map[string][]goFile{}
	for _, gf := range moduleFiles(t, ".", false, 0) {
		byDir[path.Dir(gf.rel)] = append(byDir[path.Dir(gf.rel)], gf)
	}
	setters := map[string]map[string]bool{}
	for dir, files := range byDir {
		setters[path.Join(modulePath, dir)] = packageSetters(files)
	}
	for _, files := range byDir {
		for _, f := range initBackDoors(files, setters) {
			t.Errorf("%s at init: pass what the other package needs explicitly instead", f)
		}
	}
}

// TestOnlyConsumersImportTheRoot fails if a package not listed in
// rootImporters imports the root package in a file that is not a test.
func TestOnlyConsumersImportTheRoot(t *testing.T) {
	seen := map[string]bool{}
	for _, gf := range moduleFiles(t, ".", false, parser.ImportsOnly) {
		dir := path.Dir(gf.rel)
		for _, imp := range gf.f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p != modulePath {
				continue
			}
			seen[dir] = true
			if !slices.Contains(rootImporters, dir) {
				t.Errorf("%s imports the root package, and %s is not among its consumers (rootImporters): pass it what it needs of the root as an interface instead, or add it there if it is a consumer", gf.rel, dir)
			}
		}
	}
	for _, dir := range rootImporters {
		if !seen[dir] {
			t.Errorf("rootImporters lists %s, which no longer imports the root package: remove it", dir)
		}
	}
}

// The check of TestNoPackageFillsAnotherAtInit must see what it looks for:
// an init function that fills in another package's variable, one in a
// variable's initialiser, one in a function an init function calls, one
// that calls another package's setter, and none in what only looks like
// it (a local variable, a function of the other package that sets only
// its locals) or runs later.
func TestBackDoorCheckFindsOne(t *testing.T) {
	src := `package p

import (
	"example.com/hostlink"
	eh "example.com/enginehook"
	"math/rand/v2"
)

var local = 1

func init() {
	hostlink.Host = func(s any) any { return s }
	local = 2
	var hostlink struct{ Host int }
	hostlink.Host = 3 // a local variable, not the package
}

var _ = func() bool { eh.Faults.On = true; rand.N++; return true }()

func later() { hostlink.Host = nil }

func helper() { eh.Faults = nil; helper() }

func init() { helper() }

func init() { hostlink.SetHost(nil); hostlink.Pure(nil) }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	other := `package hostlink

var Host func(any) any

var hosts []string

func SetHost(h func(any) any) { Host = h; hosts = append(hosts, "set") }

func Pure(h func(any) any) { var Host = h; Host = nil; _ = Host; hosts := 1; hosts++ }

func (t T) Method() { Host = nil }

type T struct{}
`
	of, err := parser.ParseFile(token.NewFileSet(), "hostlink.go", other, 0)
	if err != nil {
		t.Fatal(err)
	}
	setters := map[string]map[string]bool{"example.com/hostlink": packageSetters([]goFile{{rel: "hostlink.go", f: of}})}
	if want := map[string]bool{"SetHost": true}; !maps.Equal(setters["example.com/hostlink"], want) {
		t.Errorf("packageSetters = %v, want %v", setters["example.com/hostlink"], want)
	}
	got := initBackDoors([]goFile{{rel: "p.go", fset: fset, f: f}}, setters)
	slices.Sort(got) // the order the calls are followed in
	want := []string{
		"p.go:12:2: assigns to a variable of example.com/hostlink",
		"p.go:18:23: assigns to a variable of example.com/enginehook",
		"p.go:18:44: assigns to a variable of math/rand/v2",
		"p.go:22:17: assigns to a variable of example.com/enginehook",
		"p.go:26:15: calls SetHost, which assigns to a variable of example.com/hostlink",
	}
	if !slices.Equal(got, want) {
		t.Errorf("initBackDoors =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
