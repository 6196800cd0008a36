package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/editguard/editguard/toolset"
)

// TestCommandTable checks that commandTable lists every command the
// package defines, once, in the order help shows them (by name), each with
// a summary and a run function.
func TestCommandTable(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var literals int             // command composite literals anywhere
	defined := map[string]bool{} // package-level variables holding one
	listed := map[string]bool{}  // variables named in commandTable
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.CompositeLit); ok {
				if id, ok := lit.Type.(*ast.Ident); ok && id.Name == "command" {
					literals++
				}
			}
			return true
		})
		for _, decl := range f.Decls {
			d, ok := decl.(*ast.GenDecl)
			if !ok || d.Tok != token.VAR {
				continue
			}
			for _, spec := range d.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, v := range vs.Values {
					if u, ok := v.(*ast.UnaryExpr); ok && u.Op == token.AND {
						if lit, ok := u.X.(*ast.CompositeLit); ok {
							if id, ok := lit.Type.(*ast.Ident); ok && id.Name == "command" {
								defined[vs.Names[i].Name] = true
							}
						}
					}
					if lit, ok := v.(*ast.CompositeLit); ok && vs.Names[i].Name == "commandTable" {
						for _, e := range lit.Elts {
							if entry, ok := e.(*ast.CompositeLit); ok && len(entry.Elts) > 0 {
								if id, ok := entry.Elts[0].(*ast.Ident); ok {
									listed[id.Name] = true
								}
							}
						}
					}
				}
			}
		}
	}
	for v := range defined {
		if !listed[v] {
			t.Errorf("command %s is defined but not in commandTable (commands.go), so it cannot be run", v)
		}
	}
	if literals != len(defined) {
		t.Errorf("the package has %d command literals and %d package-level variables holding one: define each command as a variable listed in commandTable", literals, len(defined))
	}
	if len(commandTable) != len(defined) {
		t.Errorf("commandTable has %d entries, the package defines %d commands: list each in commands.go", len(commandTable), len(defined))
	}
	var names []string
	for _, c := range commandTable {
		names = append(names, c.cmd.name)
		if c.cmd.summary == "" || c.run == nil {
			t.Errorf("command %q has no summary or no run function", c.cmd.name)
		}
		if commands[c.cmd.name] != c.cmd {
			t.Errorf("commands[%q] is not the command of commandTable", c.cmd.name)
		}
	}
	if !slices.IsSorted(names) {
		t.Errorf("commandTable is not in the order help shows, by name: %v", names)
	}
	if len(commands) != len(commandTable) || len(commandList) != len(commandTable) {
		t.Errorf("commands has %d entries and commandList %d, commandTable %d", len(commands), len(commandList), len(commandTable))
	}
}

// TestServeHelpReadOnlyTools checks that serve's help names the tools that
// --approve read-only offers, which it lists in its own order.
func TestServeHelpReadOnlyTools(t *testing.T) {
	const before, after = "offers only the tools that never change a file (", ")."
	help := strings.Join(strings.Fields(serveCmd.help), " ")
	_, rest, ok := strings.Cut(help, before)
	list, _, ok2 := strings.Cut(rest, after)
	if !ok || !ok2 {
		t.Fatalf("serve's help has no list of the read-only tools after %q", before)
	}
	got := strings.Split(list, ", ")
	want := toolset.Names(true)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("serve's help lists the read-only tools %v, want %v", got, want)
	}
}
