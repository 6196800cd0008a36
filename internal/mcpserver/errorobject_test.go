package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/mcpserver"
)

// TestErrorObjectEverywhere makes the same NOT_READ and STALE_FILE refusals
// through the library, the MCP server and the CLI, and compares the error
// object each gives, field for field: the JSON of the library's
// *editguard.Error, the MCP result's _meta["editguard/error"], and the
// "error" member of what the CLI prints with --json. Each face has its own
// session on one workspace, so each is refused over the same file state.
func TestErrorObjectEverywhere(t *testing.T) {
	t.Parallel()
	bin := editguardBin(t)
	ws := newWorkspace(t, nil, map[string]string{
		"a.txt": "one\ntwo\nthree\n",
		"b.txt": "not read\n",
	})
	root := ws.Dir()
	stamp := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	setFile := func(name, content string) {
		t.Helper()
		p := filepath.Join(root, name)
		if content != "" {
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chtimes(p, stamp, stamp); err != nil {
			t.Fatal(err)
		}
	}
	setFile("a.txt", "")
	setFile("b.txt", "")

	ctx := context.Background()
	lib := ws.NewSession("library")
	cs := connect(t, newServer(t, ws, mcpserver.ApproveAuto), nil)
	cli := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--root", root}, args...)...)
		cmd.Dir = root
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("editguard %v: %v", args, err)
		}
		t.Logf("editguard %s: %v\nstderr: %s", strings.Join(args, " "), err, stderr.Bytes())
		return stdout.Bytes()
	}

	// Each face refuses an edit; the three objects are compared.
	type faces struct{ library, mcp, cli map[string]any }
	refuse := func(path, old, new string) faces {
		t.Helper()
		var f faces
		_, err := lib.Edit(ctx, path, []editguard.Edit{{OldString: old, NewString: new}}, nil)
		var e *editguard.Error
		if !errors.As(err, &e) {
			t.Fatalf("library Edit(%s) = %v, want an *editguard.Error", path, err)
		}
		f.library = decodeObject(t, "library", e)

		res := callTool(t, cs, "edit_file", map[string]any{"path": path, "old_string": old, "new_string": new})
		if !res.IsError {
			t.Fatalf("edit_file %s succeeded: %s", path, text(res))
		}
		f.mcp = decodeObject(t, "_meta", res.Meta[mcpserver.MetaError])

		var out struct {
			Error json.RawMessage `json:"error"`
		}
		stdout := cli("edit", path, "--old", old, "--new", new, "--json")
		if err := json.Unmarshal(stdout, &out); err != nil || out.Error == nil {
			t.Fatalf("editguard edit --json printed %q (%v), want {\"error\": {...}}", stdout, err)
		}
		f.cli = decodeObject(t, "CLI", out.Error)
		return f
	}

	// next is the next step each error must give (in every face: the
	// comparison below covers it).
	next := map[string]string{}
	check := func(name string, f faces, want editguard.Code, details ...string) {
		t.Helper()
		if f.library["code"] != string(want) {
			t.Fatalf("%s: library error %v, want %s", name, f.library, want)
		}
		if n := next[name]; n != "" {
			if got, _ := json.Marshal(f.library["next_step"]); string(got) != n {
				t.Errorf("%s: next_step %s, want %s", name, got, n)
			}
		}
		for _, field := range []string{"message", "recovery_hint"} {
			if s, _ := f.library[field].(string); s == "" {
				t.Errorf("%s: the library's error has no %s: %v", name, field, f.library)
			}
		}
		ld, _ := f.library["details"].(map[string]any)
		for _, k := range details {
			if _, ok := ld[k]; !ok {
				t.Errorf("%s: the library's error has no details.%s: %v", name, k, ld)
			}
		}
		for _, other := range []struct {
			face string
			obj  map[string]any
		}{{"MCP _meta", f.mcp}, {"CLI --json", f.cli}} {
			for _, diff := range fieldDiffs("", f.library, other.obj) {
				t.Errorf("%s: %s differs from the library's error: %s", name, other.face, diff)
			}
		}
	}

	next["NOT_READ"] = `{"arguments":{"path":"b.txt"},"tool":"read_file"}`
	next["STALE_FILE"] = `{"arguments":{"path":"a.txt"},"tool":"read_file"}`
	next["NO_MATCH"] = `{"arguments":{"path":"a.txt"},"tool":"read_file"}`
	next["NOT_FOUND"] = `{"arguments":{"pattern":"gone.txt"},"tool":"find_files"}`

	// NOT_READ: nobody has read b.txt.
	check("NOT_READ", refuse("b.txt", "not", "now"), editguard.CodeNotRead, "path", "actual")
	// NOT_FOUND: no such file.
	check("NOT_FOUND", refuse("sub/gone.txt", "a", "b"), editguard.CodeNotFound, "path")

	// STALE_FILE: each face reads a.txt, someone changes the line the edit
	// replaces, and each face's edit is refused over the same change.
	if _, err := lib.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	callTool(t, cs, "read_file", map[string]any{"path": "a.txt"})
	cli("read", "a.txt")
	setFile("a.txt", "one\nTWO\nthree\n")
	check("STALE_FILE", refuse("a.txt", "two", "2"), editguard.CodeStaleFile,
		"path", "reason", "expected", "actual", "baseline_sha256", "current_sha256")

	// NO_MATCH: each face reads a.txt as it is now, and edits a string
	// it does not hold.
	if _, err := lib.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	callTool(t, cs, "read_file", map[string]any{"path": "a.txt"})
	cli("read", "a.txt")
	check("NO_MATCH", refuse("a.txt", "zzz", "2"), editguard.CodeNoMatch, "path")
}

// decodeObject returns v's JSON as an object.
func decodeObject(t *testing.T, face string, v any) map[string]any {
	t.Helper()
	b, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			t.Fatalf("%s: %v", face, err)
		}
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		t.Fatalf("%s: the error is %s, want a JSON object (%v)", face, b, err)
	}
	return m
}

// fieldDiffs lists the fields in which got differs from want, objects
// compared member by member, prefix naming where they are.
func fieldDiffs(prefix string, want, got map[string]any) []string {
	var diffs []string
	keys := slices.Sorted(maps.Keys(want))
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		w, inWant := want[k]
		g, inGot := got[k]
		wm, wObj := w.(map[string]any)
		gm, gObj := g.(map[string]any)
		switch {
		case !inGot:
			diffs = append(diffs, prefix+k+" is missing (want "+compact(w)+")")
		case !inWant:
			diffs = append(diffs, prefix+k+" is extra ("+compact(g)+")")
		case wObj && gObj:
			diffs = append(diffs, fieldDiffs(prefix+k+".", wm, gm)...)
		case !reflect.DeepEqual(w, g):
			diffs = append(diffs, prefix+k+" = "+compact(g)+", want "+compact(w))
		}
	}
	return diffs
}

func compact(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}
