package editguard_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/atomicfile"
)

func sumHex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// snapshot returns every file under dir (symlinks as their targets), to
// compare a tree byte for byte.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			out[rel] = "-> " + l
			return err
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			out[rel] = string(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, to)
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(to, b, 0o644)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestClonedStateIsNeverActedUpon builds, on an "attacker's machine" (its
// own user key), a repository whose .editguard/ holds everything recovery
// used to act on: transaction journals, valid under the attacker's key,
// that would put the attacker's .git/config (core.fsmonitor), .git/commondir
// and a git hook in place, delete an ordinary file and create one outside
// the root; history versions holding those contents; and a parked file.
// The victim (another user key) clones it. Opening the workspace, verifying
// its ledger and opening it with the state set aside must leave .git, every
// file of the clone and the outside byte-identical, and run nothing.
func TestClonedStateIsNeverActedUpon(t *testing.T) {
	attacker, victimHome := t.TempDir(), t.TempDir()
	t.Setenv("EDITGUARD_STATE_HOME", attacker)
	src := t.TempDir()
	evil := map[string]string{
		".git/config":              "[core]\n\tfsmonitor = touch /tmp/pwned-by-editguard-test\n",
		".git/commondir":           "../shipped-gitdir\n",
		".git/hooks/post-checkout": "#!/bin/sh\ntouch /tmp/pwned-by-editguard-test\n",
	}
	// The attacker lets editguard write the evil contents (no deny rule
	// on their machine), so that history holds them, then puts the
	// innocent ones back.
	w, err := editguard.Open(src, &editguard.Options{Deny: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	s := w.NewSession("attacker")
	innocent := map[string]string{
		".git/config":              "[core]\n\trepositoryformatversion = 0\n",
		".git/commondir":           "",
		".git/hooks/post-checkout": "",
	}
	var files []map[string]any
	for p, bad := range evil {
		res, err := s.Write(ctx, p, bad, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Write(ctx, p, innocent[p], nil); err != nil {
			t.Fatal(err)
		}
		// Rolling "back" would put bad where innocent is.
		files = append(files, map[string]any{"path": p, "before_exists": true, "before_sha256": res.SHA256,
			"version": lastVersion(t, w, p), "after_exists": true, "after_sha256": sumHex([]byte(innocent[p]))})
	}
	if _, err := s.Write(ctx, "README.md", "victim's readme\n", nil); err != nil {
		t.Fatal(err)
	}
	// Rolling "back" a creation deletes the file.
	files = append(files, map[string]any{"path": "README.md", "before_exists": false, "after_exists": true, "after_sha256": sumHex([]byte("victim's readme\n"))})
	journal := func(id string, files []map[string]any) {
		data, _ := json.Marshal(map[string]any{"tx": id, "op": "apply_patch", "session": "x", "files": files})
		if err := os.MkdirAll(filepath.Join(src, ".editguard", "tx"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, ".editguard", "tx", id+".json"), editguard.SealJournal(w, data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	journal("gitconfig", files)
	journal("outside", []map[string]any{{"path": "../outside.txt", "before_exists": true, "before_sha256": sumHex([]byte("x")), "version": "v", "after_exists": false}})
	parked := atomicfile.ParkName(sumHex([]byte("nothing")), "config")
	os.MkdirAll(filepath.Join(src, ".editguard", "displaced"), 0o755)
	if err := os.WriteFile(filepath.Join(src, ".editguard", "displaced", parked), []byte("parked"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.Close()

	// The victim's clone: the repository's files with .editguard/, and a
	// .git of its own.
	t.Setenv("EDITGUARD_STATE_HOME", victimHome)
	victim := t.TempDir()
	copyTree(t, src, victim)
	outside := filepath.Join(filepath.Dir(victim), "outside.txt")
	os.Remove(outside)
	before := snapshot(t, victim)

	_, err = editguard.Open(victim, nil)
	if !errors.Is(err, editguard.ErrUnsafeState) || !errors.Is(err, editguard.ErrForeignState) {
		t.Fatalf("Open of a clone shipping .editguard/: error = %v, want UNSAFE_STATE (foreign state)", err)
	}
	if _, err := editguard.VerifyDir(victim); !errors.Is(err, editguard.ErrForeignState) {
		t.Errorf("VerifyDir of the shipped ledger: error = %v, want UNSAFE_STATE (foreign state)", err)
	}
	if got := snapshot(t, victim); !equalMaps(got, before) {
		t.Fatalf("the clone changed after a refused Open:\n%s", diffMaps(before, got))
	}

	w2, err := editguard.Open(victim, &editguard.Options{SetAsideUntrusted: true})
	if err != nil {
		t.Fatalf("Open with SetAsideUntrusted: %v", err)
	}
	if warn := noteMessages(w2.Recovery().Warnings); len(warn) == 0 || !strings.Contains(warn[0], "untrusted-") {
		t.Errorf("StateWarnings() = %q, want the set-aside reported", warn)
	}
	if p := noteMessages(w2.Recovery().Problems); len(p) != 0 || len(w2.Recovery().RolledBack) != 0 {
		t.Errorf("recovery looked at set-aside state: problems %q, rolled back %q", p, w2.Recovery().RolledBack)
	}
	w2.Close()
	w3, err := editguard.Open(victim, nil)
	if err != nil {
		t.Fatalf("Open after the set-aside: %v", err)
	}
	w3.Close()
	after := snapshot(t, victim)
	for p, want := range before {
		if strings.HasPrefix(p, ".editguard/") {
			continue
		}
		if after[p] != want {
			t.Errorf("%s = %q, want %q (unchanged)", p, after[p], want)
		}
	}
	// Every byte of the shipped state is kept, under untrusted-<time>/.
	for p, want := range before {
		rest, ok := strings.CutPrefix(p, ".editguard/")
		if !ok {
			continue
		}
		found := false
		for q, got := range after {
			if strings.HasPrefix(q, ".editguard/untrusted-") && strings.HasSuffix(q, "/"+rest) && got == want {
				found = true
			}
		}
		if !found {
			t.Errorf("shipped %s is not kept under .editguard/untrusted-*/", p)
		}
	}
	if _, err := os.Stat(outside); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a file outside the root was created: %v", err)
	}
	if _, err := os.Stat("/tmp/pwned-by-editguard-test"); err == nil {
		t.Errorf("the shipped command ran")
	}
}

func lastVersion(t *testing.T, w *editguard.Workspace, p string) string {
	t.Helper()
	vs, err := w.History(p)
	if err != nil || len(vs) == 0 {
		t.Fatalf("History(%s) = %v, %v", p, vs, err)
	}
	return vs[0].ID
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func diffMaps(a, b map[string]string) string {
	var out bytes.Buffer
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			out.WriteString("changed or gone: " + k + "\n")
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out.WriteString("new: " + k + "\n")
		}
	}
	return out.String()
}

// TestJournalsRecoveryWillNotActOn writes, into a workspace's own state,
// journals that recovery must keep and report rather than act on: a
// truncated and a garbled one, one without a valid MAC, and ones with a
// valid MAC that name a protected path, a path through a symlink, a path
// out of the root, or a file that holds neither the transaction's before
// nor its after content. Every file stays byte-identical and every journal
// stays.
func TestJournalsRecoveryWillNotActOn(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, ".git/config", "[core]\n")
	writeFile(t, dir, "a.txt", "a\n")
	writeFile(t, dir, "real/b.txt", "b\n")
	if err := os.Symlink("real", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	s := w.NewSession("s")
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, "a.txt", "a2\n", nil); err != nil {
		t.Fatal(err)
	}
	v := lastVersion(t, w, "a.txt")
	// A real transaction's journal, damaged after it was written: the
	// patch stays as it is, the journal is kept.
	gone := func(p string) map[string]any {
		return map[string]any{"path": p, "before_exists": false, "after_exists": true, "after_sha256": sumHex(readBytes(t, dir, p))}
	}
	good := func(files ...map[string]any) []byte {
		data, _ := json.Marshal(map[string]any{"tx": "t", "op": "apply_patch", "session": "s", "files": files})
		return editguard.SealJournal(w, data)
	}
	sealed := good(map[string]any{"path": "a.txt", "before_exists": true, "before_sha256": sumHex([]byte("a\n")), "version": v, "after_exists": true, "after_sha256": sumHex([]byte("a2\n"))})
	journals := map[string][]byte{
		"truncated":  sealed[:len(sealed)/2],
		"garbled":    bytes.ReplaceAll(sealed, []byte(`"a.txt"`), []byte(`"a.tx\u0000`)),
		"unsigned":   bytes.ReplaceAll(sealed, []byte(`"mac":"`), []byte(`"mac":"00`)),
		"gitconfig":  good(gone(".git/config")),
		"symlink":    good(map[string]any{"path": "link/b.txt", "before_exists": false, "after_exists": true, "after_sha256": sumHex([]byte("b\n"))}),
		"outside":    good(map[string]any{"path": "../x.txt", "before_exists": false, "after_exists": true, "after_sha256": sumHex([]byte("x"))}),
		"neither":    good(map[string]any{"path": "a.txt", "before_exists": true, "before_sha256": sumHex([]byte("zz")), "version": v, "after_exists": true, "after_sha256": sumHex([]byte("yy"))}, gone("real/b.txt")),
		"wrongidtag": good(gone("real/b.txt")), // its "tx" is not its name
	}
	w.Close()
	os.MkdirAll(filepath.Join(dir, ".editguard", "tx"), 0o755)
	for name, data := range journals {
		if err := os.WriteFile(filepath.Join(dir, ".editguard", "tx", name+".json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := snapshot(t, dir)
	for round := range 2 {
		w, err := editguard.Open(dir, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		problems := strings.Join(noteMessages(w.Recovery().Problems), "\n")
		if len(w.Recovery().RolledBack) != 0 {
			t.Errorf("round %d: rolled back %v", round, w.Recovery().RolledBack)
		}
		w.Close()
		for name := range journals {
			if !strings.Contains(problems, "tx/"+name+".json") || !strings.Contains(problems, "UNSAFE_STATE") {
				t.Errorf("round %d: journal %s is not reported as UNSAFE_STATE:\n%s", round, name, problems)
			}
		}
		after := snapshot(t, dir)
		for p, want := range before {
			if strings.HasPrefix(p, ".editguard/") && !strings.HasPrefix(p, ".editguard/tx/") {
				continue
			}
			if after[p] != want {
				t.Errorf("round %d: %s = %q, want it unchanged", round, p, after[p])
			}
		}
	}
}

func readBytes(t *testing.T, dir, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, p))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTrackedStateIsReported: a state directory that git's index lists is
// reported at every Open, and named in the refusal of a foreign one.
func TestTrackedStateIsReported(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	w, dir := newWorkspace(t)
	s := w.NewSession("s")
	if _, err := s.Write(ctx, "a.txt", "a\n", nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "core.fsmonitor=", "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	git("add", "a.txt")
	w, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if warn := noteMessages(w.Recovery().Warnings); len(warn) != 0 {
		t.Errorf("StateWarnings() = %q before .editguard is tracked", warn)
	}
	w.Close()
	git("add", "-f", ".editguard/ledger.jsonl")
	w, err = editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if warn := strings.Join(noteMessages(w.Recovery().Warnings), "\n"); !strings.Contains(warn, "git tracks files under .editguard/") {
		t.Errorf("StateWarnings() = %q, want the tracked state reported", warn)
	}
	w.Close()
}

// noteMessages returns what each recovery note tells a person.
func noteMessages(notes []editguard.RecoveryNote) []string {
	var m []string
	for _, n := range notes {
		m = append(m, n.Message)
	}
	return m
}
