package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExec: exec passes the command's exit status through, records what
// it changed, and exits 5 when a successful command overwrote a change
// someone else made since the session's read, naming the restore; with
// the command isolated where exec can isolate it, and not.
func TestExec(t *testing.T) {
	for _, mode := range []string{"auto", "off"} {
		t.Run(mode, func(t *testing.T) {
			t.Setenv(isolateEnv, mode)
			testExec(t)
		})
	}
}

func testExec(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir) // the command runs in the current directory
	f := filepath.Join(dir, "f.txt")
	os.WriteFile(f, []byte("v1\n"), 0o644)
	var out bytes.Buffer
	if code := cli(t, dir, &out, "exec", "--", "sh", "-c", "echo v2 > f.txt; exit 7"); code != 7 {
		t.Fatalf("exec of a command exiting 7: exit %d\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "changed f.txt") {
		t.Errorf("exec's summary does not name f.txt:\n%s", out.String())
	}
	out.Reset()
	if code := cli(t, dir, &out, "read", "f.txt"); code != 0 {
		t.Fatal(out.String())
	}
	os.WriteFile(f, []byte("a person's v3\n"), 0o644)
	out.Reset()
	code := cli(t, dir, &out, "exec", "--", "sh", "-c", "echo v4 > f.txt")
	if code != exitOverwrote || !strings.Contains(out.String(), "editguard restore f.txt v") {
		t.Fatalf("exec over a person's change: exit %d, want %d with the restore named\n%s", code, exitOverwrote, out.String())
	}
	out.Reset()
	if code := cli(t, dir, &out, "log", "--json"); code != 0 || strings.Count(out.String(), `"tool":"exec"`) != 2 {
		t.Fatalf("log: exit %d, want two exec records\n%s", code, out.String())
	}
	out.Reset()
	if code := cli(t, dir, &out, "exec", "--json", "--", "true"); code != 0 {
		t.Fatalf("exec --json -- true: exit %d\n%s", code, out.String())
	}
	var res struct {
		Status string `json:"status"`
		Result struct {
			Changes []any `json:"changes"`
		} `json:"result"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.Status != "ok" || res.Result.Changes == nil || len(res.Result.Changes) != 0 {
		t.Fatalf("exec --json of a command changing nothing: %v %s", err, out.String())
	}
	out.Reset()
	if code := cli(t, dir, &out, "exec", "sh"); code != exitUsage {
		t.Fatalf("exec without --: exit %d\n%s", code, out.String())
	}
}
