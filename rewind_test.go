package editguard_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/editguard/editguard"
)

// sessionA makes changes of every kind as session "a", through the
// library and through Guard and Record as an agent's own tool would, and
// returns the files' contents before.
func sessionA(t *testing.T, w *editguard.Workspace, dir string) map[string]string {
	t.Helper()
	before := map[string]string{
		"edited.txt":  "one\ntwo\n",
		"written.txt": "old\n",
		"deleted.txt": "bye\n",
		"moved.txt":   "moving\n",
		"hook.txt":    "hooked\n",
	}
	for name, content := range before {
		writeFile(t, dir, name, content)
	}
	a := w.NewSession("a")
	for name := range before {
		if _, err := a.Read(ctx, name, nil); err != nil {
			t.Fatal(err)
		}
	}
	must := func(_ *editguard.Result, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(a.Edit(ctx, "edited.txt", []editguard.Edit{{OldString: "two", NewString: "2"}}, nil))
	must(a.Edit(ctx, "edited.txt", []editguard.Edit{{OldString: "one", NewString: "1"}}, nil))
	must(a.Write(ctx, "written.txt", "new\n", nil))
	must(a.Write(ctx, "sub/created.txt", "fresh\n", nil))
	must(a.Delete(ctx, "deleted.txt", nil))
	must(a.Move(ctx, "moved.txt", "moved-to.txt", nil))
	// An agent's own Edit tool, guarded by a hook.
	if _, err := a.Guard(ctx, "hook.txt", "Edit", nil); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "hook.txt", "hooked and edited\n")
	must(a.Record(ctx, "hook.txt", "Edit"))
	return before
}

func pathsOf[F any](fs []F, path func(F) string) []string {
	var out []string
	for _, f := range fs {
		out = append(out, path(f))
	}
	return out
}

func rewoundPaths(r *editguard.RewindResult) []string {
	return pathsOf(r.Rewound, func(f editguard.RewindFile) string { return f.Path })
}

func refusedPaths(r *editguard.RewindResult) []string {
	return pathsOf(r.Refused, func(f editguard.RewindRefusal) string { return f.Path })
}

func onDisk(dir, name string) bool {
	_, err := os.Lstat(filepath.Join(dir, name))
	return err == nil
}

func TestRewindSession(t *testing.T) {
	w, dir := newWorkspace(t)
	before := sessionA(t, w, dir)
	res, err := w.NewSession("r").Rewind(ctx, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"deleted.txt", "edited.txt", "hook.txt", "moved-to.txt", "moved.txt", "sub/created.txt", "written.txt"}
	if got := rewoundPaths(res); !slices.Equal(got, want) {
		t.Fatalf("Rewind() rewound %q, want %q (refused %+v)", got, want, res.Refused)
	}
	if len(res.Refused) != 0 || len(res.Unchanged) != 0 {
		t.Errorf("Rewind() refused %+v, unchanged %+v", res.Refused, res.Unchanged)
	}
	for name, content := range before {
		if got := readFile(t, dir, name); got != content {
			t.Errorf("%s after Rewind = %q, want %q", name, got, content)
		}
	}
	for _, name := range []string{"sub/created.txt", "moved-to.txt"} {
		if onDisk(dir, name) {
			t.Errorf("%s exists after Rewind; the session created it", name)
		}
	}
	for _, f := range res.Rewound {
		if f.BackupVersion == "" || len(f.Changes) == 0 {
			t.Errorf("Rewind() file %+v lacks its backup version or changes", f)
		}
		if f.Path == "edited.txt" && len(f.Changes) != 2 {
			t.Errorf("edited.txt changes = %v, want the session's 2 edits", f.Changes)
		}
		if f.Deleted != (f.ToSHA256 == "") {
			t.Errorf("file %s: deleted %v, to_sha256 %q", f.Path, f.Deleted, f.ToSHA256)
		}
	}
	// The rewind is recorded under the rewinding session's name.
	n := 0
	w.Log(editguard.LogFilter{Session: "r", Tool: "rewind"}, func(r *editguard.LedgerRecord) error {
		if r.Outcome == "ok" {
			n++
		}
		return nil
	})
	if n != len(want) {
		t.Errorf("ledger has %d ok rewind records of session r, want %d", n, len(want))
	}
	// Rewinding again finds everything already back.
	again, err := w.NewSession("r").Rewind(ctx, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Rewound) != 0 || len(again.Unchanged) != len(want) {
		t.Errorf("second Rewind() = rewound %q, unchanged %d, want all %d unchanged", rewoundPaths(again), len(again.Unchanged), len(want))
	}
}

func TestRewindConflicts(t *testing.T) {
	w, dir := newWorkspace(t)
	for _, name := range []string{"mine.txt", "theirs.txt", "between.txt", "back.txt", "person.txt"} {
		writeFile(t, dir, name, name+" original\n")
	}
	a, b := w.NewSession("a"), w.NewSession("b")
	edit := func(s *editguard.Session, name, old, new string) {
		t.Helper()
		if _, err := s.Read(ctx, name, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Edit(ctx, name, []editguard.Edit{{OldString: old, NewString: new}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	edit(a, "mine.txt", "original", "by a")
	edit(a, "theirs.txt", "original", "by a")
	edit(b, "theirs.txt", "by a", "by a, then b")
	edit(a, "between.txt", "original", "by a")
	edit(b, "between.txt", "by a", "by a, b")
	edit(a, "between.txt", "by a, b", "by a, b, a again")
	edit(a, "back.txt", "original", "by a")
	edit(b, "back.txt", "by a", "original")
	edit(a, "person.txt", "original", "by a")
	writeFile(t, dir, "person.txt", "by a, and a person\n")
	kept := map[string]string{}
	for _, name := range []string{"theirs.txt", "between.txt", "person.txt"} {
		kept[name] = readFile(t, dir, name)
	}

	res, err := w.NewSession("r").Rewind(ctx, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rewoundPaths(res), []string{"mine.txt"}; !slices.Equal(got, want) {
		t.Errorf("Rewind() rewound %q, want %q", got, want)
	}
	if got, want := refusedPaths(res), []string{"between.txt", "person.txt", "theirs.txt"}; !slices.Equal(got, want) {
		t.Errorf("Rewind() refused %q, want %q", got, want)
	}
	if got := pathsOf(res.Unchanged, func(f editguard.RewindFile) string { return f.Path }); !slices.Equal(got, []string{"back.txt"}) {
		t.Errorf("Rewind() unchanged %q, want [back.txt]", got)
	}
	for _, f := range res.Refused {
		if !errors.Is(f.Error, editguard.ErrStaleFile) {
			t.Errorf("%s refused with %v, want STALE_FILE", f.Path, f.Error)
		}
		if got := readFile(t, dir, f.Path); got != kept[f.Path] {
			t.Errorf("refused %s = %q, want it kept as %q", f.Path, got, kept[f.Path])
		}
	}
	if got := readFile(t, dir, "mine.txt"); got != "mine.txt original\n" {
		t.Errorf("mine.txt = %q, want it rewound", got)
	}
	// The refusals are in the ledger.
	refusals := 0
	w.Log(editguard.LogFilter{Session: "r", Tool: "rewind"}, func(r *editguard.LedgerRecord) error {
		if r.ErrorCode == string(editguard.CodeStaleFile) {
			refusals++
		}
		return nil
	})
	if refusals != 3 {
		t.Errorf("ledger has %d STALE_FILE rewind records, want 3", refusals)
	}
}

func TestRewindTo(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "f.txt", "v0\n")
	a := w.NewSession("a")
	if _, err := a.Read(ctx, "f.txt", nil); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"v1\n", "v2\n", "v3\n"} {
		for _, name := range []string{"f.txt", "g.txt"} {
			if _, err := a.Write(ctx, name, v, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The records of f.txt's three writes.
	var recs []*editguard.LedgerRecord
	w.Log(editguard.LogFilter{Path: "f.txt", Session: "a"}, func(r *editguard.LedgerRecord) error {
		if r.Outcome == "ok" {
			recs = append(recs, r)
		}
		return nil
	})
	if len(recs) != 3 {
		t.Fatalf("f.txt has %d ledger records, want 3", len(recs))
	}
	r := w.NewSession("r")
	res, err := r.Rewind(ctx, "a", &editguard.RewindOptions{ToSeq: recs[2].Seq})
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, "f.txt"); got != "v2\n" {
		t.Errorf("f.txt after Rewind(ToSeq %d) = %q, want v2", recs[2].Seq, got)
	}
	if got := readFile(t, dir, "g.txt"); got != "v2\n" {
		t.Errorf("g.txt after Rewind(ToSeq %d) = %q, want v2", recs[2].Seq, got)
	}
	if len(res.Rewound) != 2 {
		t.Errorf("Rewind(ToSeq) rewound %q, want f.txt and g.txt", rewoundPaths(res))
	}
	// By time: back to before the second write, from where the first
	// rewind left the files.
	t2 := recs[1].Time
	if _, err := r.Rewind(ctx, "a", &editguard.RewindOptions{ToTime: t2}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"f.txt", "g.txt"} {
		if got := readFile(t, dir, name); got != "v1\n" {
			t.Errorf("%s after Rewind(ToTime) = %q, want v1", name, got)
		}
	}
	// Nothing at or after a record past the end: nothing to do.
	res, err = r.Rewind(ctx, "a", &editguard.RewindOptions{ToSeq: 1 << 40})
	if err != nil || len(res.Rewound)+len(res.Refused)+len(res.Unchanged) != 0 {
		t.Errorf("Rewind(ToSeq past the end) = %+v, %v; want nothing", res, err)
	}
	// A session that changed nothing is a bad argument.
	if _, err := r.Rewind(ctx, "nobody", nil); !errors.Is(err, editguard.ErrInvalidArgument) {
		t.Errorf("Rewind(unknown session) error = %v, want INVALID_ARGUMENT", err)
	}
}

func TestRewindDryRun(t *testing.T) {
	w, dir := newWorkspace(t)
	before := sessionA(t, w, dir)
	snapshot := func() map[string]string {
		m := map[string]string{}
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if d.IsDir() && d.Name() == ".editguard" {
				return filepath.SkipDir
			}
			if !d.IsDir() {
				b, _ := os.ReadFile(p)
				m[p] = string(b)
			}
			return nil
		})
		return m
	}
	was := snapshot()
	res, err := w.NewSession("r").Rewind(ctx, "a", &editguard.RewindOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.DryRun || len(res.Rewound) != 7 {
		t.Fatalf("Rewind(DryRun) = dry %v, rewound %q", res.DryRun, rewoundPaths(res))
	}
	for _, f := range res.Rewound {
		if f.Diff == "" || f.BackupVersion != "" {
			t.Errorf("dry run file %s: diff %q, backup %q; want a diff and no backup", f.Path, f.Diff, f.BackupVersion)
		}
	}
	if now := snapshot(); !mapsEqual(now, was) {
		t.Errorf("dry run changed the files: %v, was %v", now, was)
	}
	if _, err := w.NewSession("r").Rewind(ctx, "a", nil); err != nil {
		t.Fatal(err)
	}
	for name, content := range before {
		if got := readFile(t, dir, name); got != content {
			t.Errorf("%s = %q after the rewind that followed the dry run, want %q", name, got, content)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
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

// TestRewindUndoable undoes a rewind two ways: by restoring the version it
// displaced, and by rewinding the rewinding session.
func TestRewindUndoable(t *testing.T) {
	w, dir := newWorkspace(t)
	sessionA(t, w, dir)
	after := map[string]string{}
	for _, name := range []string{"edited.txt", "sub/created.txt", "moved-to.txt"} {
		after[name] = readFile(t, dir, name)
	}
	res, err := w.NewSession("r").Rewind(ctx, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	u := w.NewSession("u")
	for _, f := range res.Rewound {
		if f.Path != "sub/created.txt" {
			continue
		}
		// Restoring over a deleted file needs no read.
		if _, err := u.Restore(ctx, f.Path, f.BackupVersion, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := readFile(t, dir, "sub/created.txt"); got != after["sub/created.txt"] {
		t.Errorf("restored sub/created.txt = %q, want %q", got, after["sub/created.txt"])
	}
	// Rewinding the rewind puts back the rest of a's work.
	back, err := w.NewSession("u").Rewind(ctx, "r", nil)
	if err != nil {
		t.Fatal(err)
	}
	// sub/created.txt is back already: restored above.
	if len(back.Refused) != 0 || len(back.Unchanged) != 1 || back.Unchanged[0].Path != "sub/created.txt" {
		t.Errorf("Rewind(r) refused %q, unchanged %+v; want sub/created.txt unchanged, nothing refused", refusedPaths(back), back.Unchanged)
	}
	for name, content := range after {
		if got := readFile(t, dir, name); got != content {
			t.Errorf("%s after undoing the rewind = %q, want %q", name, got, content)
		}
	}
}

func TestRewindAfterReopen(t *testing.T) {
	dir := t.TempDir()
	w, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := sessionA(t, w, w.Dir())
	root := w.Dir()
	w.Close()
	w, err = editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	s, err := w.OpenSession("r")
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Rewind(ctx, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rewound) != 7 || len(res.Refused) != 0 {
		t.Errorf("Rewind() after reopen rewound %q, refused %+v", rewoundPaths(res), res.Refused)
	}
	for name, content := range before {
		if got := readFile(t, root, name); got != content {
			t.Errorf("%s = %q, want %q", name, got, content)
		}
	}
}

func TestRewindAsksOnce(t *testing.T) {
	for _, answer := range []bool{false, true} {
		w, dir := newWorkspace(t)
		sessionA(t, w, dir)
		r := w.NewSession("r")
		asked := 0
		r.SetApprover(editguard.ApproverFunc(func(_ context.Context, p *editguard.Preview) (bool, error) {
			asked++
			if p.Tool != "rewind" || p.Diff == "" {
				t.Errorf("Approve(%+v), want a rewind with its diff", p)
			}
			return answer, nil
		}))
		res, err := r.Rewind(ctx, "a", nil)
		if asked != 1 {
			t.Errorf("approver asked %d times, want once", asked)
		}
		if !answer {
			if !errors.Is(err, editguard.ErrRejected) {
				t.Errorf("declined Rewind() error = %v, want REJECTED", err)
			}
			if got := readFile(t, dir, "edited.txt"); got != "1\n2\n" {
				t.Errorf("edited.txt after a declined rewind = %q", got)
			}
			continue
		}
		if err != nil || len(res.Rewound) != 7 || res.DryRun {
			t.Errorf("approved Rewind() = %+v, %v", res, err)
		}
		if got := readFile(t, dir, "edited.txt"); got != "one\ntwo\n" {
			t.Errorf("edited.txt after an approved rewind = %q", got)
		}
	}
}

// TestRewindPatch rewinds a patch transaction's files like any others.
func TestRewindPatch(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "x.txt", "x\n")
	a := w.NewSession("a")
	if _, err := a.Read(ctx, "x.txt", nil); err != nil {
		t.Fatal(err)
	}
	patch := "*** Begin Patch\n*** Update File: x.txt\n@@\n-x\n+X\n*** Add File: y.txt\n+y\n*** End Patch\n"
	if _, err := a.ApplyPatch(ctx, patch, nil); err != nil {
		t.Fatal(err)
	}
	res, err := w.NewSession("r").Rewind(ctx, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := rewoundPaths(res); !slices.Equal(got, []string{"x.txt", "y.txt"}) {
		t.Errorf("Rewind() rewound %q, want x.txt and y.txt", got)
	}
	if got := readFile(t, dir, "x.txt"); got != "x\n" {
		t.Errorf("x.txt = %q, want x", got)
	}
	if onDisk(dir, "y.txt") {
		t.Error("y.txt, which the patch added, exists after Rewind")
	}
}

// TestRewindTrimmedHistory: when retention has removed the version the
// session's first change saved, another version with the same content
// serves; when none is left, the file is refused with NOT_FOUND and kept.
func TestRewindTrimmedHistory(t *testing.T) {
	w, err := editguard.Open(t.TempDir(), &editguard.Options{KeepVersions: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	dir := w.Dir()
	writeFile(t, dir, "same.txt", "v0\n")
	writeFile(t, dir, "lost.txt", "v0\n")
	a := w.NewSession("a")
	for name, contents := range map[string][]string{
		"same.txt": {"v1\n", "v0\n", "v5\n"}, // the third write displaces v0 again
		"lost.txt": {"v1\n", "v2\n", "v3\n"},
	} {
		if _, err := a.Read(ctx, name, nil); err != nil {
			t.Fatal(err)
		}
		for _, c := range contents {
			if _, err := a.Write(ctx, name, c, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	res, err := w.NewSession("r").Rewind(ctx, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := rewoundPaths(res); !slices.Equal(got, []string{"same.txt"}) {
		t.Errorf("Rewind() rewound %q, want same.txt", got)
	}
	if got := readFile(t, dir, "same.txt"); got != "v0\n" {
		t.Errorf("same.txt = %q, want v0", got)
	}
	if len(res.Rewound) == 1 && res.Rewound[0].Version != "v000003" {
		t.Errorf("same.txt put back from version %s, want v000003 (v000001 was trimmed)", res.Rewound[0].Version)
	}
	if len(res.Refused) != 1 || !errors.Is(res.Refused[0].Error, editguard.ErrNotFound) {
		t.Errorf("Rewind() refused %+v, want lost.txt with NOT_FOUND", res.Refused)
	}
	if got := readFile(t, dir, "lost.txt"); got != "v3\n" {
		t.Errorf("lost.txt = %q, want it kept as v3", got)
	}
}

// TestRewindLongLedger rewinds a session and lists its records in a
// ledger long enough for the session index (ledger.Index), and checks
// both against a read of every record, before and after the rewind's own
// records follow.
func TestRewindLongLedger(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	w, dir := newWorkspace(t)
	pad := strings.Repeat("padding of a line\n", 300) // intents carry what they displace
	writeFile(t, dir, "x.txt", "x0\n"+pad)
	writeFile(t, dir, "y.txt", "y0\n"+pad)
	a, b := w.NewSession("a"), w.NewSession("b")
	for _, r := range []struct {
		s    *editguard.Session
		name string
	}{{a, "x.txt"}, {b, "y.txt"}} {
		if _, err := r.s.Read(ctx, r.name, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 40; i++ {
		for _, c := range []struct {
			s    *editguard.Session
			name string
		}{{a, "x"}, {b, "y"}} {
			if _, err := c.s.Write(ctx, c.name+".txt", fmt.Sprintf("%s%d\n%s", c.name, i, pad), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	sessionSeqs := func(session string) (indexed, all []uint64) {
		t.Helper()
		w.Log(editguard.LogFilter{Session: session}, func(r *editguard.LedgerRecord) error {
			indexed = append(indexed, r.Seq)
			return nil
		})
		w.Log(editguard.LogFilter{}, func(r *editguard.LedgerRecord) error {
			if r.Session == session {
				all = append(all, r.Seq)
			}
			return nil
		})
		return indexed, all
	}
	if got, want := sessionSeqs("a"); len(want) != 40 || !slices.Equal(got, want) {
		t.Fatalf("log of session a: %d records %v, want %d %v", len(got), got, len(want), want)
	}
	if ents, _ := os.ReadDir(filepath.Join(cache, "editguard", "ledger-index")); len(ents) != 1 {
		t.Fatalf("the ledger's session index was not written in the cache: %v", ents)
	}
	// Back to before a's 21st change: x20. The rewind's records are
	// session r's, and count as changes of a's for the next rewind.
	aSeqs, _ := sessionSeqs("a")
	res, err := w.NewSession("r").Rewind(ctx, "a", &editguard.RewindOptions{ToSeq: aSeqs[20] - 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := rewoundPaths(res); !slices.Equal(got, []string{"x.txt"}) || len(res.Refused) != 0 {
		t.Fatalf("Rewind(a) rewound %q, refused %+v", got, res.Refused)
	}
	if got := readFile(t, dir, "x.txt"); got != "x20\n"+pad {
		t.Errorf("x.txt after the rewind starts %q", got[:4])
	}
	if got := readFile(t, dir, "y.txt"); got != "y40\n"+pad {
		t.Errorf("y.txt after the rewind starts %q", got[:4])
	}
	if got, want := sessionSeqs("a"); len(want) != 40 || !slices.Equal(got, want) {
		t.Errorf("log of session a after the rewind: %v, want %v", got, want)
	}
	// More of b, then a read that extends the index over the rewind's
	// records: the full rewind finds them through the index's tool key,
	// and without them it would take x20 for another's change.
	for i := 41; i <= 80; i++ {
		if _, err := b.Write(ctx, "y.txt", fmt.Sprintf("y%d\n%s", i, pad), nil); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := sessionSeqs("b"); len(want) != 80 || !slices.Equal(got, want) {
		t.Errorf("log of session b: %v, want %v", got, want)
	}
	all, err := w.NewSession("r").Rewind(ctx, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := rewoundPaths(all); !slices.Equal(got, []string{"x.txt"}) || len(all.Refused) != 0 {
		t.Fatalf("Rewind(a) rewound %q, refused %+v", got, all.Refused)
	}
	if got := readFile(t, dir, "x.txt"); got != "x0\n"+pad {
		t.Errorf("x.txt after the full rewind starts %q", got[:3])
	}
}
