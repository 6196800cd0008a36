package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestRequireAll changes a file with all three expected values, and is
// refused when one of them is off.
func TestRequireAll(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cli := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"--root", dir, "--session", "reader"}, args...), nil, &out, &errb)
		return code, out.String() + errb.String()
	}
	code, out := cli("read", "a.txt", "--json")
	if code != 0 {
		t.Fatalf("read: %d %s", code, out)
	}
	var r struct {
		SHA256  string `json:"sha256"`
		Size    int64  `json:"size_bytes"`
		MtimeMS int64  `json:"mtime_ms"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	// Another session, which has read nothing, states the file instead.
	edit := func(mtime int64) (int, string) {
		return cli("--session", "writer", "edit", "a.txt", "--old", "one", "--new", "1", "--require-all",
			"--expect-sha256", r.SHA256, "--expect-size", fmt.Sprint(r.Size), "--expect-mtime-ms", fmt.Sprint(mtime))
	}
	if code, out := edit(r.MtimeMS + 1000); code != exitConflict {
		t.Fatalf("edit with a wrong mtime: exit %d, want %d: %s", code, exitConflict, out)
	}
	if code, out := edit(r.MtimeMS); code != 0 {
		t.Fatalf("edit with all three values: exit %d: %s", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "1\n" {
		t.Errorf("a.txt = %q, want %q", b, "1\n")
	}
}
