package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/testutil"
)

// TestClonedStateRefusedByEveryEntry clones a repository whose .editguard/
// ships a transaction journal that would put the attacker's .git/config
// (core.fsmonitor) in place and delete README.md, with the history version
// holding that config, made by editguard on the attacker's machine (another
// user key). read, pull, verify and a hook event in the clone must each
// refuse with UNSAFE_STATE and leave every file, .git included,
// byte-identical; "state --set-aside" then moves the shipped state aside
// without acting on it.
func TestClonedStateRefusedByEveryEntry(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "pwned")
	evil := "[core]\n\tfsmonitor = touch " + marker + "\n"
	innocent := "[core]\n\trepositoryformatversion = 0\n"
	t.Setenv("EDITGUARD_STATE_HOME", t.TempDir())
	src := t.TempDir()
	w, err := editguard.Open(src, &editguard.Options{Deny: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	s := w.NewSession("attacker")
	res, err := s.Write(context.Background(), ".git/config", evil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(context.Background(), ".git/config", innocent, nil); err != nil {
		t.Fatal(err)
	}
	vs, err := w.History(".git/config")
	if err != nil || len(vs) == 0 {
		t.Fatal(vs, err)
	}
	if _, err := s.Write(context.Background(), "README.md", "hello\n", nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	j, _ := json.Marshal(map[string]any{"tx": "x1", "files": []map[string]any{
		{"path": ".git/config", "before_exists": true, "before_sha256": res.SHA256, "version": vs[0].ID, "after_exists": true, "after_sha256": sum(innocent)},
		{"path": "README.md", "before_exists": false, "after_exists": true, "after_sha256": sum("hello\n")},
	}})
	os.MkdirAll(filepath.Join(src, ".editguard", "tx"), 0o755)
	if err := os.WriteFile(filepath.Join(src, ".editguard", "tx", "x1.json"), j, 0o644); err != nil {
		t.Fatal(err)
	}

	t.Setenv("EDITGUARD_STATE_HOME", t.TempDir()) // the victim
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	before := treeBytes(t, dir)
	same := func(after string) {
		t.Helper()
		if got := treeBytes(t, dir); got != before {
			t.Fatalf("after %s the clone changed", after)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("after %s the shipped command ran", after)
		}
	}
	for _, args := range [][]string{{"read", "README.md"}, {"pull"}, {"verify"}} {
		var out bytes.Buffer
		if code := cli(t, dir, &out, args...); code == 0 || !strings.Contains(out.String(), "UNSAFE_STATE") {
			t.Errorf("%v in the clone: exit %d, %s; want UNSAFE_STATE", args, code, out.String())
		}
		same(args[0])
	}
	readme := filepath.Join(dir, "README.md")
	if reason, _ := hookRun(t, dir, ev("PreToolUse", "Edit", readme, nil)); !strings.Contains(reason, "UNSAFE_STATE") {
		t.Errorf("hook PreToolUse in the clone: reason %q, want UNSAFE_STATE", reason)
	}
	same("a hook event")

	var out bytes.Buffer
	if code := cli(t, dir, &out, "state", "--set-aside"); code != 0 || !strings.Contains(out.String(), "untrusted-") {
		t.Fatalf("state --set-aside: exit %d, %s", code, out.String())
	}
	out.Reset()
	if code := cli(t, dir, &out, "read", "README.md"); code != 0 {
		t.Fatalf("read after the set-aside: exit %d, %s", code, out.String())
	}
	for _, p := range []string{".git/config", "README.md"} {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil || (p == ".git/config" && string(b) != innocent) {
			t.Errorf("%s after the set-aside: %q, %v", p, b, err)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the shipped command ran")
	}
}

// treeBytes returns every file under dir with its bytes, as one string.
func treeBytes(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		b.WriteString(p + "\x00" + string(data) + "\x00")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestKeyPlaceRefused: EDITGUARD_STATE_HOME relative, or naming a
// directory inside the workspace, is refused by every command with an
// error naming the variable, and no key is made among the workspace's
// files (where find would list it and git add -A stage it).
func TestKeyPlaceRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, home := range []string{"keys", filepath.Join(dir, "keys"), filepath.Join(dir, "sub", "keys")} {
		t.Setenv("EDITGUARD_STATE_HOME", home)
		for _, args := range [][]string{{"read", "a.txt"}, {"find", "*"}, {"verify"}} {
			var out bytes.Buffer
			code := cli(t, dir, &out, args...)
			if code == 0 || !strings.Contains(out.String(), "EDITGUARD_STATE_HOME="+home) || !strings.Contains(out.String(), "set EDITGUARD_STATE_HOME to an absolute directory outside every workspace") {
				t.Errorf("%v with EDITGUARD_STATE_HOME=%s: exit %d, %q; want it refused, naming the variable", args, home, code, out.String())
			}
		}
	}
	for _, p := range []string{"keys", "sub"} {
		if _, err := os.Stat(filepath.Join(dir, p)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s was made in the workspace: %v", p, err)
		}
	}
}

// TestStateNamesTemporaryFiles: find leaves out the temporary file a
// killed change left, and state names it and what it is for.
func TestStateNamesTemporaryFiles(t *testing.T) {
	t.Setenv("EDITGUARD_STATE_HOME", t.TempDir())
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := testutil.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	tmp := testutil.TempName(ws, "a.txt")
	ws.Close()
	if err := os.WriteFile(filepath.Join(dir, tmp), []byte("half\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"notes.egtmp", ".b.txt.0123456789abcdef.egtmp"} { // the user's
		if err := os.WriteFile(filepath.Join(dir, name), []byte("mine\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if code := cli(t, dir, &out, "find", "*.egtmp"); code != 0 || strings.Contains(out.String(), tmp) ||
		!strings.Contains(out.String(), "notes.egtmp") || !strings.Contains(out.String(), ".b.txt.0123456789abcdef.egtmp") {
		t.Errorf("find: exit %d, %q; want the user's .egtmp files and not %s", code, out.String(), tmp)
	}
	out.Reset()
	if code := cli(t, dir, &out, "state"); code != 0 || !strings.Contains(out.String(), tmp+" is editguard's temporary file for a.txt") {
		t.Errorf("state: exit %d, %q; want it to name %s", code, out.String(), tmp)
	}
	out.Reset()
	if code := cli(t, dir, &out, "state", "--json"); code != 0 || !strings.Contains(out.String(), "\"temporary_files\": [\n    \""+tmp+"\"\n  ]") {
		t.Errorf("state --json: exit %d, %q; want temporary_files", code, out.String())
	}
}
