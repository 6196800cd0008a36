//go:build unix

package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/testutil"
)

// These tests run publish and pull between clones of a bare repository on
// the local file system; cmd/editguard's tests do the same across real
// transports and processes.

// remoteFile returns p's content at bare's main, and whether it exists.
func remoteFile(t *testing.T, bare, p string) (string, bool) {
	t.Helper()
	out, err := exec.Command("git", "--git-dir", bare, "show", "main:"+p).Output()
	if err != nil {
		return "", false
	}
	return string(out), true
}

func remoteHead(t *testing.T, bare string) string {
	return testutil.GitIn(t, bare, "rev-parse", "main")
}

func TestPublishDisjointChangesCombine(t *testing.T) {
	bare := testutil.SyncRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "gone.txt": "x\n"})
	ctx := context.Background()
	wa, _ := testutil.Clone(t, bare, "a")
	wb, _ := testutil.Clone(t, bare, "b")
	sa, sb := wa.NewSession("alice"), wb.NewSession("bob")
	testutil.Change(t, sa, "a.txt", "a from alice\n")
	testutil.Change(t, sa, "new/n.txt", "new\n")
	testutil.Change(t, sb, "b.txt", "b from bob\n")
	if _, err := sb.Read(ctx, "gone.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Delete(ctx, "gone.txt", nil); err != nil {
		t.Fatal(err)
	}
	ra, err := sa.Publish(ctx, nil)
	if err != nil {
		t.Fatalf("alice's Publish = %v", err)
	}
	if len(ra.Files) != 2 || ra.NewHead == ra.OldHead {
		t.Fatalf("alice's Publish = %+v, want 2 files and a new head", ra)
	}
	// bob's head is now behind: his commit is built on alice's.
	rb, err := sb.Publish(ctx, nil)
	if err != nil {
		t.Fatalf("bob's Publish = %v", err)
	}
	if rb.OldHead != ra.NewHead {
		t.Fatalf("bob's commit is built on %s, want alice's %s", rb.OldHead, ra.NewHead)
	}
	for p, want := range map[string]string{"a.txt": "a from alice\n", "new/n.txt": "new\n", "b.txt": "b from bob\n"} {
		if got, _ := remoteFile(t, bare, p); got != want {
			t.Errorf("remote %s = %q, want %q", p, got, want)
		}
	}
	if _, ok := remoteFile(t, bare, "gone.txt"); ok {
		t.Errorf("remote still has gone.txt, which bob deleted")
	}
	if got := remoteHead(t, bare); got != rb.NewHead {
		t.Fatalf("remote head = %s, want %s", got, rb.NewHead)
	}
	// The commit names the session and the tools.
	msg := testutil.GitIn(t, bare, "log", "-1", "--format=%an%n%B", "main")
	for _, want := range []string{"editguard (bob)", "D gone.txt (bob: delete_file)", "M b.txt (bob: write_file)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("commit message lacks %q:\n%s", want, msg)
		}
	}
	// Published is published: nothing left.
	if r, err := sa.Publish(ctx, nil); err != nil || len(r.Files) != 0 {
		t.Fatalf("second Publish = %+v, %v; want nothing to publish", r, err)
	}
	// The ledger records the publish.
	var rec *editguard.LedgerRecord
	wb.Log(editguard.LogFilter{Tool: "publish"}, func(r *editguard.LedgerRecord) error { rec = r; return nil })
	if rec == nil || rec.Outcome != "ok" || !strings.Contains(string(rec.Result), rb.NewHead) || !strings.Contains(string(rec.Result), `"b.txt"`) {
		t.Fatalf("bob's publish record = %+v", rec)
	}
}

func TestPublishRefusesFileChangedUpstream(t *testing.T) {
	bare := testutil.SyncRepo(t, map[string]string{"a.txt": "one\ntwo\n", "c.txt": "c\n"})
	ctx := context.Background()
	wa, _ := testutil.Clone(t, bare, "a")
	wb, _ := testutil.Clone(t, bare, "b")
	sa, sb := wa.NewSession("alice"), wb.NewSession("bob")
	testutil.Change(t, sa, "a.txt", "one\nTWO (alice)\n")
	testutil.Change(t, sb, "a.txt", "ONE (bob)\ntwo\n")
	testutil.Change(t, sb, "c.txt", "c from bob\n")
	if _, err := sa.Publish(ctx, nil); err != nil {
		t.Fatal(err)
	}
	head := remoteHead(t, bare)
	_, err := sb.Publish(ctx, nil)
	var e *editguard.Error
	if !errors.Is(err, editguard.ErrStaleFile) || !errors.As(err, &e) {
		t.Fatalf("bob's Publish = %v, want STALE_FILE", err)
	}
	files, _ := e.Details["files"].([]map[string]any)
	if len(files) != 1 || files[0]["path"] != "a.txt" || files[0]["reason"] != "modified" {
		t.Fatalf("STALE_FILE files = %v, want a.txt modified", files)
	}
	if d, _ := files[0]["changes"].(string); !strings.Contains(d, "+TWO (alice)") {
		t.Fatalf("STALE_FILE changes = %q, want the upstream change", d)
	}
	// Nothing of bob's landed, not even the file nobody else touched.
	if got := remoteHead(t, bare); got != head {
		t.Fatalf("remote head moved to %s", got)
	}
	if got, _ := remoteFile(t, bare, "c.txt"); got != "c\n" {
		t.Fatalf("remote c.txt = %q, want it unchanged", got)
	}
	var rec *editguard.LedgerRecord
	wb.Log(editguard.LogFilter{Tool: "publish"}, func(r *editguard.LedgerRecord) error { rec = r; return nil })
	if rec == nil || rec.Outcome != "error" || rec.ErrorCode != "STALE_FILE" {
		t.Fatalf("bob's publish record = %+v, want a STALE_FILE error", rec)
	}
}

func TestPublishRefusesChangeOutsideEditguard(t *testing.T) {
	bare := testutil.SyncRepo(t, map[string]string{"a.txt": "a\n"})
	w, dir := testutil.Clone(t, bare, "a")
	s := w.NewSession("alice")
	testutil.Change(t, s, "a.txt", "guarded\n")
	testutil.WriteRaw(t, filepath.Join(dir, "a.txt"), "not guarded\n")
	head := remoteHead(t, bare)
	_, err := s.Publish(context.Background(), nil)
	var e *editguard.Error
	if !errors.As(err, &e) || e.Code != editguard.CodeStaleFile || e.Details["side"] != "local" {
		t.Fatalf("Publish = %v, want STALE_FILE on the local side", err)
	}
	if got := remoteHead(t, bare); got != head {
		t.Fatalf("remote head moved")
	}
}

func TestPublishRecognisesWhatIsAlreadyUpstream(t *testing.T) {
	bare := testutil.SyncRepo(t, map[string]string{"a.txt": "a\n"})
	ctx := context.Background()
	w, dir := testutil.Clone(t, bare, "a")
	s := w.NewSession("alice")
	testutil.Change(t, s, "a.txt", "A\n")
	r1, err := s.Publish(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// As if the process had died after its push, before saving its marks.
	if err := os.Remove(filepath.Join(dir, ".editguard", "sync.json")); err != nil {
		t.Fatal(err)
	}
	r2, err := s.Publish(ctx, nil)
	if err != nil {
		t.Fatalf("Publish again = %v", err)
	}
	if r2.NewHead != r1.NewHead || len(r2.Files) != 1 || r2.Files[0].Op != "unchanged" {
		t.Fatalf("Publish again = %+v, want a.txt unchanged and no new commit", r2)
	}
}

func TestPublishSessionAndSubdirectory(t *testing.T) {
	bare := testutil.SyncRepo(t, map[string]string{"sub/a.txt": "a\n", "sub/b.txt": "b\n", "top.txt": "t\n"})
	ctx := context.Background()
	_, dir := testutil.Clone(t, bare, "a")
	w, err := editguard.Open(filepath.Join(dir, "sub"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	alice, bob := w.NewSession("alice"), w.NewSession("bob")
	testutil.Change(t, alice, "a.txt", "A\n")
	testutil.Change(t, bob, "b.txt", "B\n")
	r, err := bob.Publish(ctx, &editguard.PublishOptions{Session: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Files) != 1 || r.Files[0].Path != "a.txt" {
		t.Fatalf("Publish(session alice) = %+v, want only a.txt", r.Files)
	}
	if got, _ := remoteFile(t, bare, "sub/a.txt"); got != "A\n" {
		t.Fatalf("remote sub/a.txt = %q", got)
	}
	if got, _ := remoteFile(t, bare, "sub/b.txt"); got != "b\n" {
		t.Fatalf("remote sub/b.txt = %q, want bob's change not yet published", got)
	}
	if r, err := bob.Publish(ctx, nil); err != nil || len(r.Files) != 1 || r.Files[0].Path != "b.txt" {
		t.Fatalf("Publish = %+v, %v; want b.txt", r, err)
	}
}

func TestPullUpdatesUntouchedAndKeepsLocalChanges(t *testing.T) {
	bare := testutil.SyncRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n", "d.txt": "d\n"})
	ctx := context.Background()
	wa, _ := testutil.Clone(t, bare, "a")
	wb, dirB := testutil.Clone(t, bare, "b")
	sa, sb := wa.NewSession("alice"), wb.NewSession("bob")
	// bob has read a.txt; he changes b.txt with editguard and c.txt without.
	if _, err := sb.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	testutil.Change(t, sb, "b.txt", "b from bob\n")
	testutil.WriteRaw(t, filepath.Join(dirB, "c.txt"), "c by hand\n")
	testutil.Change(t, sa, "a.txt", "a from alice\n")
	testutil.Change(t, sa, "b.txt", "b from alice\n")
	testutil.Change(t, sa, "c.txt", "c from alice\n")
	testutil.Change(t, sa, "e.txt", "new from alice\n")
	if _, err := sa.Read(ctx, "d.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := sa.Delete(ctx, "d.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := sa.Publish(ctx, nil); err != nil {
		t.Fatal(err)
	}
	r, err := sb.Pull(ctx, nil)
	if err != nil {
		t.Fatalf("Pull = %v", err)
	}
	updated := map[string]string{}
	for _, f := range r.Updated {
		updated[f.Path] = f.Op
	}
	if len(updated) != 3 || updated["a.txt"] != "modified" || updated["e.txt"] != "added" || updated["d.txt"] != "deleted" {
		t.Fatalf("Pull updated %v, want a.txt, d.txt and e.txt", updated)
	}
	var conflicts []string
	for _, c := range r.Conflicts {
		conflicts = append(conflicts, c.Path+":"+c.Reason)
	}
	if strings.Join(conflicts, " ") != "b.txt:changed_both c.txt:changed_both" {
		t.Fatalf("Pull conflicts = %v, want b.txt and c.txt", conflicts)
	}
	for p, want := range map[string]string{"a.txt": "a from alice\n", "b.txt": "b from bob\n", "c.txt": "c by hand\n", "e.txt": "new from alice\n"} {
		if got, _ := os.ReadFile(filepath.Join(dirB, p)); string(got) != want {
			t.Errorf("%s = %q, want %q", p, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dirB, "d.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("d.txt still exists after the pull: %v", err)
	}
	// bob read a.txt before the pull: his read no longer stands.
	if _, err := sb.Write(ctx, "a.txt", "stale\n", nil); !errors.Is(err, editguard.ErrStaleFile) {
		t.Fatalf("Write over the pulled a.txt = %v, want STALE_FILE", err)
	}
	// The conflicts stay conflicts at the next pull.
	r, err = sb.Pull(ctx, nil)
	if err != nil || len(r.Updated) != 0 || len(r.Conflicts) != 2 {
		t.Fatalf("second Pull = %+v, %v; want the 2 conflicts again", r, err)
	}
	// bob's b.txt cannot be published over alice's.
	if _, err := sb.Publish(ctx, nil); !errors.Is(err, editguard.ErrStaleFile) {
		t.Fatalf("bob's Publish = %v, want STALE_FILE", err)
	}
	// Discarding takes upstream's versions; bob's are in history.
	r, err = sb.Pull(ctx, &editguard.PullOptions{DiscardLocal: true})
	if err != nil || len(r.Conflicts) != 0 || len(r.Updated) != 2 || !r.Updated[0].Discarded {
		t.Fatalf("Pull --discard-local = %+v, %v", r, err)
	}
	if got, _ := os.ReadFile(filepath.Join(dirB, "b.txt")); string(got) != "b from alice\n" {
		t.Fatalf("b.txt = %q after discarding", got)
	}
	// To keep his version after all, bob restores it: a change based on
	// alice's, which publishes.
	if _, err := sb.Read(ctx, "b.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Restore(ctx, "b.txt", r.Updated[0].BackupVersion, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dirB, "b.txt")); string(got) != "b from bob\n" {
		t.Fatalf("b.txt = %q after restoring", got)
	}
	if _, err := sb.Publish(ctx, nil); err != nil {
		t.Fatalf("Publish of the restored b.txt = %v", err)
	}
	if got, _ := remoteFile(t, bare, "b.txt"); got != "b from bob\n" {
		t.Fatalf("remote b.txt = %q", got)
	}
	// And alice, whose b.txt is what she published, takes bob's.
	r, err = sa.Pull(ctx, nil)
	if err != nil || len(r.Conflicts) != 0 || len(r.Updated) != 1 || r.Updated[0].Path != "b.txt" {
		t.Fatalf("alice's Pull = %+v, %v", r, err)
	}
	var pulls int
	wb.Log(editguard.LogFilter{Tool: "pull"}, func(r *editguard.LedgerRecord) error {
		if r.Path != "" {
			pulls++
		}
		return nil
	})
	if pulls != 5 {
		t.Fatalf("bob's ledger has %d pull records of files, want 5", pulls)
	}
}

func TestSyncWithoutGit(t *testing.T) {
	bare := testutil.SyncRepo(t, map[string]string{"a.txt": "a\n"})
	w, _ := testutil.Clone(t, bare, "a")
	s := w.NewSession("alice")
	testutil.Change(t, s, "a.txt", "A\n")
	t.Setenv("PATH", t.TempDir())
	_, err := s.Publish(context.Background(), nil)
	var e *editguard.Error
	if !errors.As(err, &e) || e.Code != editguard.CodeGit || !strings.Contains(e.Message, "git was not found") {
		t.Fatalf("Publish without git = %v, want GIT: git was not found", err)
	}
	if _, err := s.Pull(context.Background(), nil); !errors.Is(err, editguard.ErrGit) {
		t.Fatalf("Pull without git = %v, want GIT", err)
	}
	data, _ := json.Marshal(e)
	if !strings.Contains(string(data), `"code":"GIT"`) {
		t.Fatalf("error JSON = %s", data)
	}
}

func TestPullWhenItsBaseIsGone(t *testing.T) {
	bare := testutil.SyncRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	ctx := context.Background()
	wa, _ := testutil.Clone(t, bare, "a")
	wb, dirB := testutil.Clone(t, bare, "b")
	sa, sb := wa.NewSession("alice"), wb.NewSession("bob")
	if _, err := sb.Pull(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// As if the branch had been rewritten and the base collected.
	state := filepath.Join(dirB, ".editguard", "sync.json")
	data, _ := os.ReadFile(state)
	var st map[string][]map[string]any
	json.Unmarshal(data, &st)
	st["branches"][0]["base"] = strings.Repeat("1", 40)
	data, _ = json.Marshal(st)
	os.WriteFile(state, data, 0o644)
	testutil.Change(t, sb, "b.txt", "b from bob\n")
	testutil.Change(t, sa, "a.txt", "a from alice\n")
	testutil.Change(t, sa, "b.txt", "b from alice\n")
	if _, err := sa.Publish(ctx, nil); err != nil {
		t.Fatal(err)
	}
	r, err := sb.Pull(ctx, nil)
	if err != nil {
		t.Fatalf("Pull = %v", err)
	}
	if len(r.Warnings) != 1 || len(r.Updated) != 1 || r.Updated[0].Path != "a.txt" || len(r.Conflicts) != 1 || r.Conflicts[0].Path != "b.txt" {
		t.Fatalf("Pull = %+v, want a.txt updated, b.txt a conflict, and a warning", r)
	}
}

func TestPublishRefusesPathNowThroughSymlink(t *testing.T) {
	bare := testutil.SyncRepo(t, map[string]string{"d/a.txt": "a\n", "e/a.txt": "e\n"})
	w, dir := testutil.Clone(t, bare, "a")
	s := w.NewSession("alice")
	testutil.Change(t, s, "d/a.txt", "A\n")
	// d is replaced by a symlink to e: d/a.txt now names another file.
	if err := os.Rename(filepath.Join(dir, "d"), filepath.Join(dir, "d.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("e", filepath.Join(dir, "d")); err != nil {
		t.Fatal(err)
	}
	head := remoteHead(t, bare)
	_, err := s.Publish(context.Background(), nil)
	var e *editguard.Error
	if !errors.As(err, &e) || e.Code != editguard.CodeStaleFile || e.Details["side"] != "local" || e.Details["path"] != "d/a.txt" {
		t.Fatalf("Publish = %v, want STALE_FILE on the local side for d/a.txt", err)
	}
	if got := remoteHead(t, bare); got != head {
		t.Fatalf("remote head moved")
	}
}

func TestSyncModesLinksAndLineEndings(t *testing.T) {
	bare := testutil.SyncRepo(t, map[string]string{".gitattributes": "*.bat eol=crlf\n", "run.bat": "echo a\n", "keep.txt": "k\n", "x.txt": "x\n"})
	ctx := context.Background()
	wa, dirA := testutil.Clone(t, bare, "a")
	wb, dirB := testutil.Clone(t, bare, "b")
	sa, sb := wa.NewSession("alice"), wb.NewSession("bob")
	// The checkout wrote CRLF; the change is made and published in that form.
	if got, _ := os.ReadFile(filepath.Join(dirA, "run.bat")); string(got) != "echo a\r\n" {
		t.Fatalf("checkout of run.bat = %q", got)
	}
	testutil.Change(t, sa, "run.bat", "echo b\n") // keeps the file's CRLF
	testutil.WriteRaw(t, filepath.Join(dirA, "tool.sh"), "")
	if _, err := sa.Read(ctx, "tool.sh", nil); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(dirA, "tool.sh"), 0o755)
	if _, err := sa.Write(ctx, "tool.sh", "#!/bin/sh\n", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := sa.Read(ctx, "x.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := sa.Delete(ctx, "x.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := sa.Publish(ctx, nil); err != nil {
		t.Fatalf("Publish = %v", err)
	}
	if got, _ := remoteFile(t, bare, "run.bat"); got != "echo b\n" {
		t.Fatalf("remote run.bat = %q, want the blob in LF form", got)
	}
	if mode := testutil.GitIn(t, bare, "ls-tree", "main", "tool.sh"); !strings.HasPrefix(mode, "100755") {
		t.Fatalf("remote tool.sh: %s, want mode 100755", mode)
	}
	// A symlink upstream, and bob changed x.txt, which alice deleted.
	seed := filepath.Join(t.TempDir(), "seed")
	testutil.GitIn(t, filepath.Dir(seed), "clone", "-q", bare, seed)
	os.Symlink("keep.txt", filepath.Join(seed, "link"))
	testutil.GitIn(t, seed, "add", "link")
	testutil.GitIn(t, seed, "commit", "-q", "-m", "link")
	testutil.GitIn(t, seed, "push", "-q", "origin", "main")
	testutil.Change(t, sb, "x.txt", "x from bob\n")
	r, err := sb.Pull(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range r.Updated {
		got[f.Path] = f.Op
	}
	for _, c := range r.Conflicts {
		got[c.Path] = c.Reason
	}
	want := map[string]string{"run.bat": "modified", "tool.sh": "added", "x.txt": "changed_both", "link": "unsupported"}
	if len(got) != len(want) {
		t.Fatalf("Pull = %v, want %v", got, want)
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("Pull: %s %q, want %q", p, got[p], w)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(dirB, "run.bat")); string(data) != "echo b\r\n" {
		t.Errorf("bob's run.bat = %q, want the CRLF form", data)
	}
	if fi, err := os.Stat(filepath.Join(dirB, "tool.sh")); err != nil || fi.Mode()&0o100 == 0 {
		t.Errorf("bob's tool.sh: %v, %v; want it executable", fi, err)
	}
	if data, _ := os.ReadFile(filepath.Join(dirB, "x.txt")); string(data) != "x from bob\n" {
		t.Errorf("bob's x.txt = %q, want his change kept", data)
	}
	if _, err := os.Lstat(filepath.Join(dirB, "link")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pull created the upstream symlink: %v", err)
	}
	// The symlink is reported once; x.txt stays a conflict.
	r, _ = sb.Pull(ctx, nil)
	if len(r.Conflicts) != 1 || r.Conflicts[0].Path != "x.txt" {
		t.Fatalf("second Pull conflicts = %+v, want x.txt only", r.Conflicts)
	}
}

func TestPublishRefusesFileDeletedUpstream(t *testing.T) {
	bare := testutil.SyncRepo(t, map[string]string{"a.txt": "a\n"})
	ctx := context.Background()
	wa, _ := testutil.Clone(t, bare, "a")
	wb, _ := testutil.Clone(t, bare, "b")
	sa, sb := wa.NewSession("alice"), wb.NewSession("bob")
	if _, err := sa.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := sa.Delete(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := sa.Publish(ctx, nil); err != nil {
		t.Fatal(err)
	}
	testutil.Change(t, sb, "a.txt", "a from bob\n")
	_, err := sb.Publish(ctx, nil)
	var e *editguard.Error
	if !errors.As(err, &e) || e.Code != editguard.CodeStaleFile {
		t.Fatalf("Publish over a deleted file = %v, want STALE_FILE", err)
	}
	if files, _ := e.Details["files"].([]map[string]any); len(files) != 1 || files[0]["reason"] != "deleted" {
		t.Fatalf("STALE_FILE files = %v, want a.txt deleted", e.Details["files"])
	}
	if _, ok := remoteFile(t, bare, "a.txt"); ok {
		t.Fatalf("a.txt came back on the branch")
	}
}
