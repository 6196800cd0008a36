package replay_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/ledger"
	"github.com/editguard/editguard/internal/replay"
)

var ctx = context.Background()

// open opens a workspace on a new directory, closed at the test's end.
func open(t testing.TB, opts *editguard.Options) (*editguard.Workspace, string) {
	t.Helper()
	dir := t.TempDir()
	w, err := editguard.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, dir
}

func put(t testing.TB, dir, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func hexSum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// checker fails its test on an error.
type checker struct{ t testing.TB }

// ok fails the test if err is not nil.
func (c checker) ok(_ any, err error) {
	c.t.Helper()
	if err != nil {
		c.t.Fatal(err)
	}
}

// refuse checks that err is an *editguard.Error with code.
func refuse(t testing.TB, err error, code editguard.Code) {
	t.Helper()
	var e *editguard.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("error = %v, want %s", err, code)
	}
}

// session runs a mix of calls through one session: writes, edits in two
// line-ending styles, a dry run, refusals (NOT_READ, STALE_FILE by the
// baseline and by a precondition, NO_MATCH, NOT_FOUND), a restore, a
// delete, a move, a patch and its undo, appends, and edits of a file kept
// in history as objects.
func session(t testing.TB, w *editguard.Workspace, dir string) {
	t.Helper()
	s, c := w.NewSession("agent"), checker{t}
	c.ok(s.Write(ctx, "a.txt", "one\ntwo\n", nil))
	c.ok(s.Edit(ctx, "a.txt", []editguard.Edit{{OldString: "one", NewString: "uno"}}, nil))
	_, err := s.Edit(ctx, "a.txt", []editguard.Edit{{OldString: "zzz", NewString: "x"}}, nil)
	refuse(t, err, editguard.CodeNoMatch)
	c.ok(s.Edit(ctx, "a.txt", []editguard.Edit{{OldString: "two", NewString: "dos"}}, &editguard.EditOptions{DryRun: true}))

	put(t, dir, "b.txt", "bee\n")
	_, err = s.Write(ctx, "b.txt", "B\n", nil)
	refuse(t, err, editguard.CodeNotRead)
	c.ok(s.Read(ctx, "b.txt", nil))
	put(t, dir, "b.txt", "bee, changed\n")
	_, err = s.Write(ctx, "b.txt", "B\n", nil)
	refuse(t, err, editguard.CodeStaleFile)
	_, err = s.Write(ctx, "b.txt", "B\n", &editguard.WriteOptions{Precondition: &editguard.Precondition{ExpectedSHA256: hexSum("bee\n")}})
	refuse(t, err, editguard.CodeStaleFile)
	c.ok(s.Write(ctx, "b.txt", "B\n", &editguard.WriteOptions{Precondition: &editguard.Precondition{ExpectedSHA256: hexSum("bee, changed\n")}}))

	put(t, dir, "crlf.txt", "first\r\nsecond\r\n")
	c.ok(s.Read(ctx, "crlf.txt", nil))
	c.ok(s.Edit(ctx, "crlf.txt", []editguard.Edit{{OldString: "second", NewString: "2nd\nthird"}}, nil))
	c.ok(s.Write(ctx, "crlf.txt", "whole\nnew\n", nil))
	// An edit keeps the write's result in history, against which the
	// write, whose bytes are not its content, is checked.
	c.ok(s.Edit(ctx, "crlf.txt", []editguard.Edit{{OldString: "new", NewString: "newer"}}, nil))

	vs, err := w.History("a.txt")
	c.ok(nil, err)
	i := slices.IndexFunc(vs, func(v editguard.Version) bool { return v.SHA256 == hexSum("one\ntwo\n") })
	if i < 0 {
		t.Fatalf("history of a.txt has no version of its first content: %+v", vs)
	}
	c.ok(s.Restore(ctx, "a.txt", vs[i].ID, nil))
	c.ok(s.Delete(ctx, "b.txt", nil))
	_, err = s.Delete(ctx, "gone.txt", nil)
	refuse(t, err, editguard.CodeNotFound)
	c.ok(s.Read(ctx, "a.txt", nil))
	c.ok(s.Move(ctx, "a.txt", "c.txt", nil))

	c.ok(s.Read(ctx, "c.txt", nil))
	patch := "*** Begin Patch\n*** Update File: c.txt\n@@\n-two\n+zwei\n*** Add File: d.txt\n+dee\n*** End Patch\n"
	res, err := s.ApplyPatch(ctx, patch, nil)
	c.ok(nil, err)
	c.ok(s.UndoPatch(ctx, res.TxID, nil))
	c.ok(s.Write(ctx, "e.txt", "tail\n", nil))
	c.ok(s.Write(ctx, "e.txt", "more\n", &editguard.WriteOptions{Mode: editguard.WriteAppend}))
	c.ok(s.Write(ctx, "e.txt", "last\n", nil))
	// Contents over history's inline limit are kept as objects.
	c.ok(s.Write(ctx, "big.txt", "start\n"+strings.Repeat("a line of text\n", 4000)+"end\n", nil))
	c.ok(s.Edit(ctx, "big.txt", []editguard.Edit{{OldString: "start", NewString: "begin"}}, nil))
	c.ok(s.Edit(ctx, "big.txt", []editguard.Edit{{OldString: "end", NewString: "finish"}}, nil))

	// A directory where a file is needed, never read: NOT_A_FILE.
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = s.Edit(ctx, "sub", []editguard.Edit{{OldString: "a", NewString: "b"}}, nil)
	refuse(t, err, editguard.CodeNotAFile)
	_, err = s.Write(ctx, "sub", "x\n", nil)
	refuse(t, err, editguard.CodeNotAFile)
}

// stateHash hashes every entry of dir's state directory: names, types and
// bytes.
func stateHash(t testing.TB, dir string) string {
	t.Helper()
	h := sha256.New()
	root := filepath.Join(dir, editguard.StateDir)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h.Write([]byte(p + "\x00" + info.Mode().String() + "\x00"))
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			h.Write(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// readOnly takes the write permission from every entry of dir's state
// directory, and gives it back at the test's end.
func readOnly(t testing.TB, dir string) {
	t.Helper()
	root := filepath.Join(dir, editguard.StateDir)
	var dirs, files []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		} else if err == nil && d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	for _, f := range files {
		os.Chmod(f, 0o400)
	}
	for _, d := range dirs {
		os.Chmod(d, 0o500)
	}
	t.Cleanup(func() {
		for _, d := range dirs {
			os.Chmod(d, 0o700)
		}
	})
}

// run replays the workspace at dir.
func run(t testing.TB, dir string, o replay.Options) *replay.Report {
	t.Helper()
	sr, err := editguard.OpenStateReader(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	if _, err := sr.VerifyLedger(); err != nil {
		t.Fatal(err)
	}
	rep, err := replay.Run(sr, o)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// records returns the ledger's records as Workspace.Log gives them.
func records(t testing.TB, dir string) []*ledger.Record {
	t.Helper()
	sr, err := editguard.OpenStateReader(dir)
	checker{t}.ok(nil, err)
	defer sr.Close()
	var recs []*ledger.Record
	if err := sr.Records("", func(r *ledger.Record) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return recs
}

// copyState copies dir's state directory into a new directory, whose
// root it returns.
func copyState(t testing.TB, dir string) string {
	t.Helper()
	to := t.TempDir()
	from := filepath.Join(dir, editguard.StateDir)
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			return os.Mkdir(filepath.Join(to, rel), 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return to
}

func TestReplaySessionMatches(t *testing.T) {
	w, orig := open(t, nil)
	session(t, w, orig)
	w.Close()
	// A read-only copy of the state, without the files.
	dir := copyState(t, orig)
	readOnly(t, dir)
	before := stateHash(t, dir)
	rep := run(t, dir, replay.Options{})
	if after := stateHash(t, dir); after != before {
		t.Errorf("replay changed the state directory")
	}
	for _, d := range rep.Divergences {
		t.Errorf("diverged: %+v", d)
	}
	for _, s := range rep.Skips {
		t.Errorf("skipped: %+v", s)
	}
	recs := records(t, dir)
	if rep.Replayed != len(recs) || rep.Matched != rep.Replayed || rep.Diverged != 0 || rep.Skipped != 0 {
		t.Errorf("report %d replayed, %d matched, %d diverged, %d skipped; the ledger holds %d records",
			rep.Replayed, rep.Matched, rep.Diverged, rep.Skipped, len(recs))
	}
	// Every tool and refusal of the session was decided again.
	seen := map[string]bool{}
	for _, r := range recs {
		seen[r.Tool+" "+strings.ToLower(r.Outcome)+" "+r.ErrorCode] = true
	}
	for _, want := range []string{
		"write_file ok ", "edit_file ok ", "edit_file error NO_MATCH", "edit_file dry_run ", "write_file error NOT_READ",
		"write_file error STALE_FILE", "restore_file ok ", "delete_file ok ", "delete_file error NOT_FOUND",
		"move_file ok ", "apply_patch ok ", "undo_patch ok ", "edit_file error NOT_A_FILE", "write_file error NOT_A_FILE",
	} {
		if !seen[want] {
			t.Errorf("the session recorded no %q", want)
		}
	}
	// The patch's records are decided on its text, which history keeps:
	// none is compared on its decision alone.
	if rep.DecisionOnly != 0 {
		t.Errorf("DecisionOnly = %d, want 0", rep.DecisionOnly)
	}
}

// tamper rewrites the ledger of dir with edit applied to the first record
// that pick selects, the hash chain sealed again so that it verifies, and
// returns that record as rewritten.
func tamper(t testing.TB, dir string, pick func(*ledger.Record) bool, edit func(*ledger.Record)) *ledger.Record {
	t.Helper()
	path := filepath.Join(dir, editguard.StateDir, "ledger.jsonl")
	data, err := os.ReadFile(path)
	checker{t}.ok(nil, err)
	var recs []*ledger.Record
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if line == "" {
			continue
		}
		r := &ledger.Record{}
		if err := json.Unmarshal([]byte(line), r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	i := slices.IndexFunc(recs, pick)
	if i < 0 {
		t.Fatal("no record to tamper with")
	}
	edit(recs[i])
	if err := ledger.Rewrite(path, recs); err != nil {
		t.Fatal(err)
	}
	if _, err := editguard.VerifyDir(dir); err != nil {
		t.Fatalf("the rewritten ledger does not verify: %v", err)
	}
	return recs[i]
}

func TestReplayFindsTampering(t *testing.T) {
	for _, tc := range []struct {
		name               string
		pick               func(*ledger.Record) bool
		edit               func(*ledger.Record)
		what               string
		recorded, replayed func(*ledger.Record) string
	}{{
		// The observation made to agree with the baseline: the refusal no
		// longer follows from it.
		name: "observation of a stale write",
		pick: func(r *ledger.Record) bool { return r.ErrorCode == "STALE_FILE" && r.Baseline != nil },
		edit: func(r *ledger.Record) { *r.Observed = *r.Baseline },
		what: "decision", recorded: func(*ledger.Record) string { return "STALE_FILE" },
		replayed: func(*ledger.Record) string { return "ok" },
	}, {
		name: "result of an edit",
		pick: func(r *ledger.Record) bool { return r.Tool == "edit_file" && r.Outcome == "ok" },
		edit: func(r *ledger.Record) { r.SHA256After = hexSum("something else") },
		what: "sha256_after", recorded: func(*ledger.Record) string { return hexSum("something else") },
		replayed: func(*ledger.Record) string { return hexSum("uno\ntwo\n") },
	}, {
		name: "observation of an accepted write",
		pick: func(r *ledger.Record) bool {
			return r.Tool == "write_file" && r.Outcome == "ok" && r.Precondition != nil
		},
		edit: func(r *ledger.Record) { r.Observed.SHA256 = hexSum("bee\n") },
		what: "decision", recorded: func(*ledger.Record) string { return "ok" },
		replayed: func(*ledger.Record) string { return "STALE_FILE" },
	}, {
		// Without the session's read, the edit needs one.
		name: "baseline of an edit",
		pick: func(r *ledger.Record) bool { return r.Tool == "edit_file" && r.Outcome == "ok" && r.Baseline != nil },
		edit: func(r *ledger.Record) { r.Baseline = nil },
		what: "decision", recorded: func(*ledger.Record) string { return "ok" },
		replayed: func(*ledger.Record) string { return "NOT_READ" },
	}, {
		name: "observation of a delete removed",
		pick: func(r *ledger.Record) bool { return r.Tool == "delete_file" && r.Outcome == "ok" },
		edit: func(r *ledger.Record) { r.Observed = nil },
		what: "decision", recorded: func(*ledger.Record) string { return "ok" },
		replayed: func(*ledger.Record) string { return "no observation recorded" },
	}, {
		// A write into a CRLF file: its bytes are not its content, and the
		// content history keeps under its result is not the one recorded.
		name: "content of a re-encoded write",
		pick: func(r *ledger.Record) bool {
			return r.Tool == "write_file" && r.Path == "crlf.txt" && r.Outcome == "ok"
		},
		edit: func(r *ledger.Record) {
			r.Args = json.RawMessage(strings.Replace(string(r.Args), hexSum("whole\nnew\n"), hexSum("other\n"), 1))
		},
		what: "sha256_after", recorded: func(r *ledger.Record) string { return r.SHA256After },
		replayed: func(*ledger.Record) string {
			return "content_sha256 " + hexSum("other\n")[:12] + " is not what history keeps"
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			w, dir := open(t, nil)
			session(t, w, dir)
			w.Close()
			rec := tamper(t, dir, tc.pick, tc.edit)
			rep := run(t, dir, replay.Options{})
			if rep.Diverged != 1 || len(rep.Divergences) != 1 {
				t.Fatalf("%d divergences, want 1: %+v", rep.Diverged, rep.Divergences)
			}
			d := rep.Divergences[0]
			if d.Seq != rec.Seq || d.What != tc.what || d.Recorded != tc.recorded(rec) || d.Replayed != tc.replayed(rec) {
				t.Errorf("divergence %+v; want seq %d, %s recorded %s, replayed %s", d, rec.Seq, tc.what, tc.recorded(rec), tc.replayed(rec))
			}
			if rep.Matched != rep.Replayed-1 {
				t.Errorf("%d of %d replayed records matched, want all but one", rep.Matched, rep.Replayed)
			}
		})
	}
}

func TestReplaySkips(t *testing.T) {
	w, dir := open(t, &editguard.Options{KeepVersions: 1})
	s, c := w.NewSession("agent"), checker{t}
	c.ok(s.Write(ctx, "f.txt", "v0\n", nil))
	for _, v := range []string{"v1", "v2", "v3"} {
		c.ok(s.Edit(ctx, "f.txt", []editguard.Edit{{OldString: "v" + string(v[1]-1), NewString: v}}, nil))
	}
	asked := w.NewSession("asked")
	asked.SetApprover(editguard.ApproverFunc(func(context.Context, *editguard.Preview) (bool, error) { return true, nil }))
	c.ok(asked.Write(ctx, "g.txt", "approved\n", nil))
	_, err := s.Write(ctx, "../outside.txt", "x", nil)
	if err == nil {
		t.Fatal("a write outside the root was accepted")
	}
	w.Close()

	rep := run(t, dir, replay.Options{})
	if rep.Diverged != 0 {
		t.Errorf("divergences: %+v", rep.Divergences)
	}
	bySeq := map[uint64]replay.Skip{}
	for _, sk := range rep.Skips {
		bySeq[sk.Seq] = sk
	}
	for _, r := range records(t, dir) {
		want := ""
		switch {
		case r.Tool == "edit_file" && r.SHA256After != hexSum("v3\n"):
			// Retention kept only the newest version: what the earlier
			// edits displaced is gone.
			want = replay.SkippedRetired
		case r.Session == "asked":
			want = replay.SkippedApproval
		case r.Outcome == "error":
			want = replay.SkippedUnobserved
		}
		if got := bySeq[r.Seq].Reason; got != want {
			t.Errorf("record %d (%s %s %s): skip reason %q, want %q", r.Seq, r.Tool, r.Outcome, r.ErrorCode, got, want)
		}
	}
	if rep.SkippedBy[replay.SkippedRetired] != 2 || rep.SkippedBy[replay.SkippedApproval] != 1 || rep.SkippedBy[replay.SkippedUnobserved] != 1 {
		t.Errorf("skipped by reason %v; want 2 retired, 1 approval, 1 unobserved", rep.SkippedBy)
	}
	if rep.Skipped != len(rep.Skips) || rep.Replayed != rep.Matched || rep.Replayed != 2 {
		t.Errorf("report %+v: want the first write and the last edit replayed and matched", rep)
	}
}

func TestReplaySelects(t *testing.T) {
	w, dir := open(t, nil)
	session(t, w, dir)
	other, c := w.NewSession("other"), checker{t}
	c.ok(other.Write(ctx, "o.txt", "other\n", nil))
	w.Close()
	recs := records(t, dir)
	if got := run(t, dir, replay.Options{Session: "other"}); got.Replayed != 1 || got.Matched != 1 {
		t.Errorf("--session other: %d replayed, %d matched; want its one record", got.Replayed, got.Matched)
	}
	since := recs[len(recs)-3].Seq
	if got := run(t, dir, replay.Options{Since: since}); got.Replayed+got.Skipped != 3 || got.Diverged != 0 {
		t.Errorf("since %d: %d replayed, %d skipped, %d diverged; want the last 3 records, none diverged",
			since, got.Replayed, got.Skipped, got.Diverged)
	}
}
