package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestApplyThenUndo applies a patch and undoes it by the transaction id the
// result names, from another session that read nothing.
func TestApplyThenUndo(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cli := func(stdin string, args ...string) (string, int) {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"--root", dir}, args...), strings.NewReader(stdin), &out, &errb)
		return out.String() + errb.String(), code
	}
	if out, code := cli("", "read", "a.txt"); code != 0 {
		t.Fatalf("read: %d %s", code, out)
	}
	out, code := cli("*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+ALPHA\n*** Add File: b.txt\n+beta\n*** End Patch\n", "apply", "--json")
	if code != 0 {
		t.Fatalf("apply: %d %s", code, out)
	}
	var res struct {
		Tx string `json:"tx"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Tx == "" {
		t.Fatalf("apply --json = %s (%v)", out, err)
	}
	out, code = cli("", "--session", "other", "undo", res.Tx)
	if code != 0 || !strings.Contains(out, "undone as transaction") {
		t.Fatalf("undo: %d %s", code, out)
	}
	// The patch updated a.txt, which is put back, and added b.txt, which
	// is removed.
	if !strings.Contains(out, "put back a.txt (history ") || !strings.Contains(out, "removed b.txt (history ") {
		t.Errorf("undo does not say a.txt was put back and b.txt removed:\n%s", out)
	}
	undo := strings.TrimSpace(out[strings.LastIndex(out, "undone as transaction ")+len("undone as transaction "):])

	// A second undo of the same patch says it was undone already, and by
	// which transaction, and changes nothing.
	out, code = cli("", "undo", res.Tx)
	if code != exitConflict || !strings.Contains(out, "patch transaction "+res.Tx+" was already undone, by transaction "+undo) ||
		!strings.Contains(out, "hint: to bring the patch's changes back, undo the undo: editguard undo "+undo) {
		t.Errorf("a second undo: exit %d\n%s", code, out)
	}
	out, code = cli("", "undo", res.Tx, "--json")
	var again struct {
		Status string `json:"status"`
		Error  struct {
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(out[:strings.LastIndex(out, "}")+1]), &again) != nil || again.Status != "STALE_FILE" || again.Error.Details["undone_by"] != undo {
		t.Errorf("a second undo --json: exit %d\n%s", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "alpha\n" {
		t.Errorf("a.txt after undo = %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "b.txt")); !os.IsNotExist(err) {
		t.Errorf("b.txt after undo: %v", err)
	}
	if out, code := cli("", "undo", "nosuchtx"); code != 1 || !strings.Contains(out, "INVALID_ARGUMENT") {
		t.Errorf("undo of an unknown tx: %d %s", code, out)
	}
}
