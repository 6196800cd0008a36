package editguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/atomicfile"
)

const applyPatchText = `*** Begin Patch
*** Update File: src/a.go
@@ func A() {
-	return 1
+	return 2
*** Update File: crlf.txt
@@
 one
-two
+TWO
*** Add File: docs/new.md
+# New
*** Delete File: old.txt
*** Update File: b.txt
*** Move to: moved/b.txt
@@
-beta
+BETA
*** End Patch
`

func applyWorkspace(t *testing.T) (*editguard.Workspace, string, *editguard.Session) {
	t.Helper()
	w, dir := newWorkspace(t)
	writeFile(t, dir, "src/a.go", "package a\n\nfunc A() {\n\treturn 1\n}\n")
	writeFile(t, dir, "crlf.txt", "one\r\ntwo\r\n")
	writeFile(t, dir, "old.txt", "old\n")
	writeFile(t, dir, "b.txt", "beta\n")
	s := w.NewSession("agent")
	for _, p := range []string{"src/a.go", "crlf.txt", "old.txt", "b.txt"} {
		if _, err := s.Read(context.Background(), p, nil); err != nil {
			t.Fatal(err)
		}
	}
	return w, dir, s
}

// tree returns every file under dir but editguard's state, with content.
// A temporary file a commit left after its swap (the displaced content,
// already in history, swept by the next commit) is not part of the tree.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == editguard.StateDir {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() && !atomicfile.IsTemp(d.Name()) {
			b, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			out[rel] = string(b)
		}
		return nil
	})
	return out
}

func TestApplyPatch(t *testing.T) {
	ctx := context.Background()
	w, dir, s := applyWorkspace(t)
	before := tree(t, dir)
	dry, err := s.ApplyPatch(ctx, applyPatchText, &editguard.PatchOptions{DryRun: true})
	if err != nil || !dry.DryRun || len(dry.Files) != 5 {
		t.Fatalf("dry run = %+v, %v", dry, err)
	}
	if got := tree(t, dir); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("dry run changed the tree")
	}
	res, err := s.ApplyPatch(ctx, applyPatchText, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"src/a.go":    "package a\n\nfunc A() {\n\treturn 2\n}\n",
		"crlf.txt":    "one\r\nTWO\r\n", // the file keeps its line endings
		"docs/new.md": "# New\n",
		"moved/b.txt": "BETA\n",
	}
	if got := tree(t, dir); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("tree after the patch = %q, want %q", got, want)
	}
	for _, f := range res.Files {
		if f.BackupVersion == "" {
			t.Errorf("%s: no history version", f.Path)
		}
	}
	// Everything can be undone from history, and the reads followed.
	if got, _ := editguard.VersionContent(w, "old.txt", res.Files[3].BackupVersion); string(got) != "old\n" {
		t.Errorf("history of old.txt = %q", got)
	}
	if _, err := s.Edit(ctx, "moved/b.txt", []editguard.Edit{{OldString: "BETA", NewString: "b"}}, nil); err != nil {
		t.Errorf("edit of the moved file without a read: %v", err)
	}
	if _, err := editguard.VerifyDir(dir); err != nil {
		t.Fatalf("VerifyDir: %v", err)
	}
	if j := journals(t, dir); len(j) != 0 {
		t.Errorf("journals left: %v", j)
	}
}

// journals lists what .editguard/tx holds but its lock file.
func journals(t *testing.T, dir string) []string {
	t.Helper()
	ents, _ := os.ReadDir(filepath.Join(dir, ".editguard", "tx"))
	var out []string
	for _, e := range ents {
		if e.Name() != "journal.lock" {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestApplyPatchAllOrNothing: any refusal leaves every file as it was.
func TestApplyPatchAllOrNothing(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string, s *editguard.Session)
		patch string
		code  editguard.Code
	}{
		{"a file changed after the read", func(t *testing.T, dir string, s *editguard.Session) {
			writeFile(t, dir, "old.txt", "changed by a person\n")
		}, applyPatchText, editguard.CodeStaleFile},
		{"a file never read", func(t *testing.T, dir string, s *editguard.Session) {
			s.BeginTurn()
		}, applyPatchText, editguard.CodeNotRead},
		{"add onto an existing file", nil, strings.Replace(applyPatchText, "*** Add File: docs/new.md", "*** Add File: old2.txt", 1) + "", editguard.CodeStaleFile},
		{"a hunk that matches nowhere", nil, strings.Replace(applyPatchText, "-beta\n+BETA", "-gamma\n+GAMMA", 1), editguard.CodeNoMatch},
		{"a protected path", nil, strings.Replace(applyPatchText, "docs/new.md", ".git/hooks/pre-commit", 1), editguard.CodeProtectedPath},
		{"a path out of the root", nil, strings.Replace(applyPatchText, "docs/new.md", "../escape.md", 1), editguard.CodeInvalidArgument},
		{"move onto an existing file", nil, strings.Replace(applyPatchText, "moved/b.txt", "old2.txt", 1), editguard.CodeStaleFile},
		{"a file named twice", nil, strings.Replace(applyPatchText, "moved/b.txt", "src/a.go", 1), editguard.CodeInvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, dir, s := applyWorkspace(t)
			writeFile(t, dir, "old2.txt", "exists\n")
			if c.setup != nil {
				c.setup(t, dir, s)
			}
			before := tree(t, dir)
			_, err := s.ApplyPatch(ctx, c.patch, nil)
			if errorCode(err) != c.code {
				t.Fatalf("ApplyPatch = %v, want %s", err, c.code)
			}
			if got := tree(t, dir); fmt.Sprint(got) != fmt.Sprint(before) {
				t.Fatalf("a refused patch changed the tree:\n%q\nwas\n%q", got, before)
			}
		})
	}
}

// TestApplyPatchFailureMidway makes the third file's commit fail: the two
// files already changed are put back, and the journal is removed.
func TestApplyPatchFailureMidway(t *testing.T) {
	ctx := context.Background()
	w, dir, s := applyWorkspace(t)
	before := tree(t, dir)
	renames := 0
	editguard.SetFaults(w, func(c *atomicfile.Call) error {
		if c.Op == "renameat2" || c.Op == "renameat" {
			renames++
			if renames == 3 {
				return syscall.EIO
			}
		}
		return nil
	}, nil, nil)
	_, err := s.ApplyPatch(ctx, applyPatchText, nil)
	editguard.SetFaults(w, nil, nil, nil)
	if err == nil {
		t.Fatal("ApplyPatch succeeded through a failing rename")
	}
	if got := tree(t, dir); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("after a failure midway the tree is\n%q\nwant\n%q", got, before)
	}
	if j := journals(t, dir); len(j) != 0 {
		t.Errorf("journals left: %v", j)
	}
	// The session can apply it now.
	if _, err := s.ApplyPatch(ctx, applyPatchText, nil); err != nil {
		t.Fatalf("ApplyPatch after the failure: %v", err)
	}
}

// bigVersionFile is file f at version v: a first line naming the version,
// then about n bytes that are the same in every version.
func bigVersionFile(f string, v, n int) string {
	body := fmt.Sprintf("%s body line, the same in every version\n", f)
	return fmt.Sprintf("%s version %08d\n", f, v) + strings.Repeat(body, n/len(body))
}

// applyWorker applies patches that move three files from version v to v+1
// together, until it is killed.
func applyWorker(dir string) error {
	w, err := editguard.Open(dir, nil)
	if err != nil {
		return err
	}
	s := w.NewSession("applier")
	names := []string{"one.txt", "two.txt", "three.txt"}
	if err := os.WriteFile(os.Getenv(workerOutEnv)+".ready", nil, 0o644); err != nil {
		return err
	}
	for {
		v, err := fileVersion(filepath.Join(dir, names[0]))
		if err != nil {
			return err
		}
		for _, n := range names {
			if _, err := s.Read(ctx, n, &editguard.ReadOptions{Limit: 1}); err != nil {
				return err
			}
		}
		if _, err := s.ApplyPatch(ctx, versionPatch(names, v), nil); err != nil {
			return err
		}
	}
}

// versionPatch moves each file from version v to v+1.
func versionPatch(names []string, v int) string {
	var b strings.Builder
	b.WriteString("*** Begin Patch\n")
	for _, n := range names {
		fmt.Fprintf(&b, "*** Update File: %s\n@@\n-%s version %08d\n+%s version %08d\n", n, n, v, n, v+1)
	}
	b.WriteString("*** End Patch\n")
	return b.String()
}

func fileVersion(p string) (int, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 64)
	n, _ := f.Read(buf)
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	i := strings.LastIndex(line, " ")
	return strconv.Atoi(line[i+1:])
}

// TestKill9DuringApply kills processes applying patches to three files at
// random moments: 60 kills on 1 MiB files by default, 200 on 4 MiB files
// with EDITGUARD_FULL=1 (see docs/RELIABILITY.md). After every kill, opening the workspace (which rolls
// back an unfinished transaction) must find the three files at one and the
// same version, each whole; and no journal or temporary file may remain
// after the next successful patch.
func TestKill9DuringApply(t *testing.T) {
	size, kills, budget := 1<<20, 60, 60*time.Second
	switch {
	case os.Getenv("EDITGUARD_FULL") != "":
		size, kills, budget = 4<<20, 200, 10*time.Minute
	case testing.Short():
		size, kills, budget = 256<<10, 30, 20*time.Second
	}
	_, dir := newWorkspace(t)
	names := []string{"one.txt", "two.txt", "three.txt"}
	for _, n := range names {
		writeFile(t, dir, n, bigVersionFile(n, 0, size))
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	start := func() *exec.Cmd {
		out := filepath.Join(t.TempDir(), "out")
		cmd := startWorker(t, "apply", dir, "", out)
		waitFor(t, func() bool { _, err := os.Stat(out + ".ready"); return err == nil })
		return cmd
	}
	// Calibrate: how long one patch of the three files takes here, so
	// that the kills spread over whole transactions.
	cmd := start()
	t0 := time.Now()
	waitFor(t, func() bool { v, _ := fileVersion(filepath.Join(dir, names[0])); return v >= 3 })
	perPatch := time.Since(t0) / 3
	syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	if w, err := editguard.Open(dir, nil); err == nil {
		w.Close()
	}
	t.Logf("one patch of three %d KiB files takes about %v", size>>10, perPatch)
	deadline := time.Now().Add(budget)
	seen := map[int]bool{}
	done := 0
	for ; done < kills && time.Now().Before(deadline); done++ {
		cmd := start()
		time.Sleep(time.Duration(rng.Int64N(int64(3 * perPatch))))
		if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("worker ended before the kill: %v\n%s", err, cmd.Stdout)
		}
		w, err := editguard.Open(dir, nil)
		if err != nil {
			t.Fatalf("after kill %d: Open: %v", done, err)
		}
		w.Close()
		v0 := -1
		for _, n := range names {
			data, err := os.ReadFile(filepath.Join(dir, n))
			if err != nil {
				t.Fatalf("after kill %d: %v", done, err)
			}
			v, err := fileVersion(filepath.Join(dir, n))
			if err != nil || string(data) != bigVersionFile(n, v, size) {
				t.Fatalf("after kill %d: %s is not one whole version (%v)", done, n, err)
			}
			if v0 >= 0 && v != v0 {
				t.Fatalf("after kill %d: mixed state: %s at version %d, %s at %d", done, names[0], v0, n, v)
			}
			v0 = v
		}
		seen[v0] = true
	}
	if len(seen) < 3 {
		t.Errorf("only versions %v were seen after %d kills: the kills did not land on running patches", seen, done)
	}
	t.Logf("%d kills; %d distinct versions seen, never a mixed state", done, len(seen))

	w, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	s := w.NewSession("after")
	for _, n := range names {
		if _, err := s.Read(ctx, n, &editguard.ReadOptions{Limit: 1}); err != nil {
			t.Fatal(err)
		}
	}
	v, _ := fileVersion(filepath.Join(dir, names[0]))
	if _, err := s.ApplyPatch(ctx, versionPatch(names, v), nil); err != nil {
		t.Fatal(err)
	}
	if j := journals(t, dir); len(j) != 0 {
		t.Errorf("journals left: %v", j)
	}
	assertNoTemp(t, dir)
	if _, err := editguard.VerifyDir(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("VerifyDir: %v", err)
	}
}

func TestUndoPatch(t *testing.T) {
	ctx := context.Background()
	w, dir, s := applyWorkspace(t)
	before := tree(t, dir)
	res, err := s.ApplyPatch(ctx, applyPatchText, nil)
	if err != nil {
		t.Fatal(err)
	}
	after := tree(t, dir)
	// Another session, which read nothing, undoes it: the ledger vouches
	// for what the patch wrote.
	other := w.NewSession("other")
	if _, err := other.UndoPatch(ctx, "nope", nil); errorCode(err) != editguard.CodeInvalidArgument {
		t.Fatalf("undo of an unknown transaction: %v", err)
	}
	dry, err := other.UndoPatch(ctx, res.TxID, &editguard.UndoOptions{DryRun: true})
	if err != nil || len(dry.Files) != 6 {
		t.Fatalf("dry run = %+v, %v", dry, err)
	}
	if fmt.Sprint(tree(t, dir)) != fmt.Sprint(after) {
		t.Fatal("a dry run changed the tree")
	}
	undo, err := other.UndoPatch(ctx, res.TxID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := tree(t, dir); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("after the undo:\n%q\nwant\n%q", got, before)
	}
	// The undo is a transaction too, and can be undone.
	if _, err := other.UndoPatch(ctx, undo.TxID, nil); err != nil {
		t.Fatalf("undo of the undo: %v", err)
	}
	if got := tree(t, dir); fmt.Sprint(got) != fmt.Sprint(after) {
		t.Fatalf("after undoing the undo:\n%q\nwant\n%q", got, after)
	}
	// A file changed after the patch: the undo refuses, and changes nothing.
	writeFile(t, dir, "docs/new.md", "# New, edited by a person\n")
	changed := tree(t, dir)
	if _, err := other.UndoPatch(ctx, res.TxID, nil); errorCode(err) != editguard.CodeStaleFile {
		t.Fatalf("undo over a later change: %v, want STALE_FILE", err)
	}
	if got := tree(t, dir); fmt.Sprint(got) != fmt.Sprint(changed) {
		t.Fatal("a refused undo changed the tree")
	}
	if _, err := editguard.VerifyDir(dir); err != nil {
		t.Fatalf("VerifyDir: %v", err)
	}
}

// TestApplyPatchFaultAtEveryStep fails each file-system call of a patch's
// commit in turn (and each step of its history saves): every time the
// tree is either all as before (with an error) or all as after (without),
// and no journal is left.
func TestApplyPatchFaultAtEveryStep(t *testing.T) {
	ctx := context.Background()
	// Count the calls of a clean run.
	calls, histSteps := 0, 0
	{
		w, _, s := applyWorkspace(t)
		editguard.SetFaults(w, func(*atomicfile.Call) error { calls++; return nil },
			func(op, name string) error { histSteps++; return nil }, nil)
		if _, err := s.ApplyPatch(ctx, applyPatchText, nil); err != nil {
			t.Fatal(err)
		}
	}
	if calls < 10 || histSteps < 5 {
		t.Fatalf("a clean run made %d calls and %d history steps: the hooks do not see the commit", calls, histSteps)
	}
	failed, succeeded := 0, 0
	check := func(t *testing.T, dir string, before, after map[string]string, err error) {
		t.Helper()
		got := fmt.Sprint(tree(t, dir))
		switch {
		case err != nil && got == fmt.Sprint(before):
			failed++
		case err == nil && got == fmt.Sprint(after):
			succeeded++
		default:
			t.Fatalf("error %v, and the tree is neither before nor after:\n%s", err, got)
		}
		if j := journals(t, dir); len(j) != 0 {
			t.Fatalf("journals left: %v", j)
		}
	}
	for k := 1; k <= calls; k++ {
		t.Run(fmt.Sprintf("call %d", k), func(t *testing.T) {
			w, dir, s := applyWorkspace(t)
			before := tree(t, dir)
			n := 0
			editguard.SetFaults(w, func(c *atomicfile.Call) error {
				if n++; n == k {
					return syscall.EIO
				}
				return nil
			}, nil, nil)
			_, err := s.ApplyPatch(ctx, applyPatchText, nil)
			editguard.SetFaults(w, nil, nil, nil)
			check(t, dir, before, applyAfter, err)
		})
	}
	for k := 1; k <= histSteps; k++ {
		t.Run(fmt.Sprintf("history step %d", k), func(t *testing.T) {
			w, dir, s := applyWorkspace(t)
			before := tree(t, dir)
			n := 0
			editguard.SetFaults(w, nil, func(op, name string) error {
				if n++; n == k {
					return syscall.EIO
				}
				return nil
			}, nil)
			_, err := s.ApplyPatch(ctx, applyPatchText, nil)
			editguard.SetFaults(w, nil, nil, nil)
			check(t, dir, before, applyAfter, err)
		})
	}
	t.Logf("%d commit calls and %d history steps each failed in turn: %d times all before, %d times all after (a fault after the swap is a warning)", calls, histSteps, failed, succeeded)
}

// applyAfter is the tree applyPatchText leaves.
var applyAfter = map[string]string{
	"src/a.go":    "package a\n\nfunc A() {\n\treturn 2\n}\n",
	"crlf.txt":    "one\r\nTWO\r\n",
	"docs/new.md": "# New\n",
	"moved/b.txt": "BETA\n",
}

// TestRecoverJournal writes, for a patch that committed, the journal its
// process would have left had it died just before the commit: the next
// Open must put every file back. A journal that cannot be rolled back
// leaves the workspace usable and is reported.
func TestRecoverJournal(t *testing.T) {
	ctx := context.Background()
	w, dir, s := applyWorkspace(t)
	before := tree(t, dir)
	res, err := s.ApplyPatch(ctx, applyPatchText, nil)
	if err != nil {
		t.Fatal(err)
	}
	var files []map[string]any
	w.Log(editguard.LogFilter{}, func(r *editguard.LedgerRecord) error {
		if r.Strategy == "transaction "+res.TxID {
			files = append(files, map[string]any{
				"path": r.Path, "before_exists": r.Observed != nil && r.Observed.Exists, "before_sha256": r.SHA256Before,
				"version": r.HistoryVersion, "after_exists": r.SHA256After != "", "after_sha256": r.SHA256After,
			})
		}
		return nil
	})
	if len(files) != 6 {
		t.Fatalf("ledger records of the transaction: %d, want 6", len(files))
	}
	w.Close()
	writeJournal := func(id string, files []map[string]any) {
		data, _ := json.Marshal(map[string]any{"tx": id, "op": "apply_patch", "session": "s", "files": files})
		data = editguard.SealJournal(w, data)
		if err := os.WriteFile(filepath.Join(dir, ".editguard", "tx", id+".json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeJournal("crashed", files)
	w2, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := w2.RolledBack(); len(got) != 1 || got[0] != "crashed" {
		t.Errorf("RolledBack() = %v", got)
	}
	if got := tree(t, dir); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("after recovery:\n%q\nwant\n%q", got, before)
	}
	w2.Close()
	// A journal naming a path out of the root cannot be rolled back: Open
	// still works, reports it, and keeps the journal for a person.
	writeJournal("odd", []map[string]any{{"path": "../outside.txt", "before_exists": false, "after_exists": true, "after_sha256": sha256hex([]byte("x"))}})
	w3, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatalf("Open with a journal it cannot roll back: %v", err)
	}
	defer w3.Close()
	if p := w3.TransactionProblems(); len(p) != 1 || !strings.Contains(p[0], "odd") {
		t.Errorf("TransactionProblems() = %v", p)
	}
	if j := journals(t, dir); len(j) != 1 || j[0] != "odd.json" {
		t.Errorf("journals = %v, want odd.json kept", j)
	}
}

// TestApplyPatchAddOntoDirectory: adding a file where a directory is, named
// with or without a trailing slash, is NOT_A_FILE, and nothing changes.
func TestApplyPatchAddOntoDirectory(t *testing.T) {
	_, dir, s := applyWorkspace(t)
	before := tree(t, dir)
	for _, name := range []string{"src/", "src"} {
		_, err := s.ApplyPatch(context.Background(), "*** Begin Patch\n*** Add File: "+name+"\n+x\n*** End Patch\n", nil)
		var e *editguard.Error
		if !errors.As(err, &e) || e.Code != editguard.CodeNotAFile {
			t.Errorf("Add File: %s onto a directory: error = %v, want NOT_A_FILE", name, err)
		}
	}
	if got := tree(t, dir); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Errorf("the tree changed:\n%q\nwant\n%q", got, before)
	}
}

// TestApplyPatchSymlinkIsAName: a patch that deletes or moves a symlink is
// NOT_A_FILE; the file the link points to and the link stay as they were.
func TestApplyPatchSymlinkIsAName(t *testing.T) {
	_, dir, s := applyWorkspace(t)
	if err := os.Symlink("b.txt", filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	before := tree(t, dir)
	for _, p := range []string{
		"*** Begin Patch\n*** Delete File: link.txt\n*** End Patch\n",
		"*** Begin Patch\n*** Update File: link.txt\n*** Move to: moved.txt\n@@\n-beta\n+beta\n*** End Patch\n",
		"*** Begin Patch\n*** Update File: old.txt\n*** Move to: link.txt\n@@\n-old\n+old\n*** End Patch\n",
	} {
		_, err := s.ApplyPatch(context.Background(), p, nil)
		var e *editguard.Error
		if !errors.As(err, &e) || e.Code != editguard.CodeNotAFile {
			t.Errorf("patch %q: error = %v, want NOT_A_FILE", p, err)
		}
	}
	if got := tree(t, dir); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Errorf("the tree changed:\n%q\nwant\n%q", got, before)
	}
	if l, err := os.Readlink(filepath.Join(dir, "link.txt")); err != nil || l != "b.txt" {
		t.Errorf("link.txt = %q, %v", l, err)
	}
}

// TestApplyPatchLedgerFailureKeepsJournal: when the ledger refuses a
// committed patch's records, the journal stays, so that the next Open
// finishes the transaction: forward when some record was written (every
// file then has its record), back when none was. No file is left changed
// without a record.
func TestApplyPatchLedgerFailureKeepsJournal(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		failAt int // the ledger write that fails first; every later one fails too
		want   map[string]string
	}{
		{"second record refused", 2, applyAfter},
		{"every record refused", 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, dir, s := applyWorkspace(t)
			before := tree(t, dir)
			writes := 0
			editguard.SetFaults(w, nil, nil, func(op, name string) error {
				if op == "write" {
					if writes++; writes >= tc.failAt {
						return syscall.EIO
					}
				}
				return nil
			})
			res, err := s.ApplyPatch(ctx, applyPatchText, nil)
			editguard.SetFaults(w, nil, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(res.Warnings, "\n"), "journal is kept") {
				t.Fatalf("warnings %q, want the kept journal said", res.Warnings)
			}
			if j := journals(t, dir); len(j) != 1 {
				t.Fatalf("journals %v, want the transaction's", j)
			}
			w.Close()
			w2, err := editguard.Open(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer w2.Close()
			want := tc.want
			if want == nil {
				want = before
			}
			if got := tree(t, dir); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("after the next Open:\n%v\nwant\n%v", got, want)
			}
			if j := journals(t, dir); len(j) != 0 {
				t.Fatalf("journals left after Open: %v", j)
			}
			if tc.want != nil {
				ok := map[string]bool{}
				if err := w2.Log(editguard.LogFilter{}, func(r *editguard.LedgerRecord) error {
					ok[r.Path] = ok[r.Path] || r.Outcome == "ok"
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				for p := range applyAfter {
					if !ok[p] {
						t.Errorf("%s has no ok record after the roll forward", p)
					}
				}
			}
		})
	}
}

// TestApplyPatchRefusalNamesTheFile: the ledger record of a refused patch
// names the file that was refused, not the patch's first file.
func TestApplyPatchRefusalNamesTheFile(t *testing.T) {
	w, dir, s := applyWorkspace(t)
	writeFile(t, dir, "old.txt", "changed by a person\n")
	if _, err := s.ApplyPatch(context.Background(), applyPatchText, nil); errorCode(err) != editguard.CodeStaleFile {
		t.Fatalf("ApplyPatch = %v, want STALE_FILE", err)
	}
	var last *editguard.LedgerRecord
	if err := w.Log(editguard.LogFilter{Tool: "apply_patch"}, func(r *editguard.LedgerRecord) error { last = r; return nil }); err != nil {
		t.Fatal(err)
	}
	if last == nil || last.Path != "old.txt" || last.Outcome == "ok" {
		t.Fatalf("the refusal's record %+v, want it to name old.txt", last)
	}
}
