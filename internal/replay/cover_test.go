package replay_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/ledger"
	"github.com/editguard/editguard/internal/replay"
)

// patchCase is a patch the session sends and the refusal it gets ("" if
// it commits).
type patchCase struct {
	name, text string
	opts       *editguard.PatchOptions
	code       editguard.Code
}

// refusedPatches are patches refused in every way a patch's check is:
// by the file's text (NO_MATCH, AMBIGUOUS_MATCH, NO_CHANGE, a stale
// update that does not merge), by its hash (STALE_FILE, by the read or by
// a precondition), by the session's reads (NOT_READ), by what exists
// (NOT_FOUND, an add or a move onto a file), and by the text itself
// (INVALID_ARGUMENT); one of them fails at its second file.
var refusedPatches = []patchCase{
	{"no match", "*** Begin Patch\n*** Update File: r1.txt\n@@\n-zzz\n+x\n*** End Patch\n", nil, editguard.CodeNoMatch},
	{"ambiguous", "*** Begin Patch\n*** Update File: r2.txt\n@@\n-x\n+z\n*** End Patch\n", nil, editguard.CodeAmbiguousMatch},
	{"no change", "*** Begin Patch\n*** Update File: r1.txt\n@@\n-one\n+one\n*** End Patch\n", nil, editguard.CodeNoChange},
	{"not read", "*** Begin Patch\n*** Update File: r3.txt\n@@\n-three\n+3\n*** End Patch\n", nil, editguard.CodeNotRead},
	{"not found", "*** Begin Patch\n*** Update File: missing.txt\n@@\n-a\n+b\n*** End Patch\n", nil, editguard.CodeNotFound},
	{"stale, not merged", "*** Begin Patch\n*** Update File: r4.txt\n@@\n-two\n+2\n*** End Patch\n", nil, editguard.CodeStaleFile},
	{"stale delete", "*** Begin Patch\n*** Delete File: r5.txt\n*** End Patch\n", nil, editguard.CodeStaleFile},
	{"stale by precondition", "*** Begin Patch\n*** Update File: r1.txt\n@@\n-one\n+1\n*** End Patch\n",
		&editguard.PatchOptions{Preconditions: map[string]*editguard.Precondition{"r1.txt": {ExpectedSHA256: hexSum("not it\n")}}},
		editguard.CodeStaleFile},
	{"add onto a file", "*** Begin Patch\n*** Add File: r1.txt\n+new\n*** End Patch\n", nil, editguard.CodeStaleFile},
	{"move onto a file", "*** Begin Patch\n*** Update File: r1.txt\n*** Move to: r2.txt\n@@\n-one\n+uno\n*** End Patch\n", nil, editguard.CodeStaleFile},
	{"second file", "*** Begin Patch\n*** Update File: r1.txt\n@@\n-one\n+1\n*** Update File: r2.txt\n@@\n-nope\n+z\n*** End Patch\n", nil, editguard.CodeNoMatch},
	{"does not parse", "this is not a patch\n", nil, editguard.CodeInvalidArgument},
	{"dry run", "*** Begin Patch\n*** Update File: r1.txt\n@@\n-zzz\n+x\n*** End Patch\n",
		&editguard.PatchOptions{DryRun: true}, editguard.CodeNoMatch},
}

// coverSession runs, beside session's calls, those replay could not
// decide before their records said enough: an edit and a patch merged
// over another writer's change, a whole-file write and a delete after a
// partial read (NOT_READ), an edit of a file read in a legacy encoding,
// and every kind of refused patch.
func coverSession(t testing.TB, w *editguard.Workspace, dir string) {
	t.Helper()
	s, c := w.NewSession("cover"), checker{t}

	c.ok(s.Write(ctx, "m.txt", "alpha\nbeta\ngamma\ndelta\nepsilon\n", nil))
	put(t, dir, "m.txt", "ALPHA\nbeta\ngamma\ndelta\nepsilon\n")
	res, err := s.Edit(ctx, "m.txt", []editguard.Edit{{OldString: "epsilon", NewString: "EPSILON"}}, nil)
	c.ok(nil, err)
	if !res.Merged {
		t.Fatal("the edit over another writer's change did not merge")
	}
	c.ok(s.Write(ctx, "mp.txt", "one\ntwo\nthree\nfour\nfive\n", nil))
	put(t, dir, "mp.txt", "ONE\ntwo\nthree\nfour\nfive\n")
	pres, err := s.ApplyPatch(ctx, "*** Begin Patch\n*** Update File: mp.txt\n@@\n four\n-five\n+5\n*** End Patch\n", nil)
	c.ok(nil, err)
	if !pres.Files[0].Merged {
		t.Fatal("the patch over another writer's change did not merge")
	}

	put(t, dir, "p.txt", strings.Repeat("a line\n", 10))
	c.ok(s.Read(ctx, "p.txt", &editguard.ReadOptions{Offset: 3, Limit: 4}))
	_, err = s.Write(ctx, "p.txt", "whole\n", nil)
	refuse(t, err, editguard.CodeNotRead)
	_, err = s.Delete(ctx, "p.txt", nil)
	refuse(t, err, editguard.CodeNotRead)

	put(t, dir, "l.txt", "caf\xe9 cr\xe8me\nprice 10\n")
	c.ok(s.Read(ctx, "l.txt", &editguard.ReadOptions{Encoding: "windows-1252"}))
	c.ok(s.Edit(ctx, "l.txt", []editguard.Edit{{OldString: "price 10", NewString: "price 10 \u20ac"}}, nil))

	put(t, dir, "r1.txt", "one\ntwo\nthree\n")
	put(t, dir, "r2.txt", "x\ny\nx\ny\n")
	put(t, dir, "r3.txt", "three\n")
	put(t, dir, "r4.txt", "one\ntwo\nthree\n")
	put(t, dir, "r5.txt", "five\n")
	for _, p := range []string{"r1.txt", "r2.txt", "r4.txt", "r5.txt"} {
		c.ok(s.Read(ctx, p, nil))
	}
	put(t, dir, "r4.txt", "one\nTWO\nthree\n")
	put(t, dir, "r5.txt", "FIVE\n")
	for _, pc := range refusedPatches {
		_, err := s.ApplyPatch(ctx, pc.text, pc.opts)
		if err == nil {
			t.Fatalf("patch %q was not refused", pc.name)
		}
		refuse(t, err, pc.code)
	}
	// Committed: a move with a change, and a change of the file read in
	// a legacy encoding.
	c.ok(s.ApplyPatch(ctx, "*** Begin Patch\n*** Update File: r1.txt\n*** Move to: r9.txt\n@@\n-one\n+uno\n*** End Patch\n", nil))
	c.ok(s.ApplyPatch(ctx, "*** Begin Patch\n*** Update File: l.txt\n@@\n-price 10 \u20ac\n+price 12 \u20ac\n*** End Patch\n", nil))
}

func TestReplayCoversMergesReadsEncodingsAndPatches(t *testing.T) {
	w, orig := open(t, nil)
	session(t, w, orig)
	coverSession(t, w, orig)
	w.Close()
	dir := copyState(t, orig)
	readOnly(t, dir)
	rep := run(t, dir, replay.Options{})
	for _, d := range rep.Divergences {
		t.Errorf("diverged: %+v", d)
	}
	for _, s := range rep.Skips {
		t.Errorf("skipped: %+v", s)
	}
	recs := records(t, dir)
	if rep.Replayed != len(recs) || rep.Matched != rep.Replayed || rep.DecisionOnly != 0 {
		t.Errorf("report %d replayed, %d matched, %d on the decision only; the ledger holds %d records",
			rep.Replayed, rep.Matched, rep.DecisionOnly, len(recs))
	}
	var codes []string
	merged, partial, legacy := false, false, false
	for _, r := range recs {
		switch {
		case r.Tool == "apply_patch" && r.Outcome == "error":
			codes = append(codes, r.ErrorCode)
			if r.Text == nil {
				t.Errorf("refused patch record %d names no kept text", r.Seq)
			}
		case r.Tool == "edit_file" && r.Strategy == "merged":
			merged = r.Baseline != nil && r.Baseline.Read != nil && r.Baseline.Read.Version != ""
		case r.ErrorCode == "NOT_READ" && r.Path == "p.txt":
			rd := r.Baseline.Read
			var e struct {
				Details map[string]any `json:"details"`
			}
			json.Unmarshal(r.Result, &e)
			partial = rd != nil && !rd.Full && rd.FromLine == 3 && rd.ToLine == 6 && rd.TotalLines == 10 &&
				e.Details["read_lines"] == "3-6 of 10"
		case r.Path == "l.txt" && r.Outcome == "ok":
			legacy = r.Baseline.Read != nil && r.Baseline.Read.Encoding == "windows-1252"
		}
	}
	if len(codes) != len(refusedPatches) {
		t.Errorf("refused patch records: %v, want %d", codes, len(refusedPatches))
	}
	if !merged || !partial || !legacy {
		t.Errorf("records say: merge's read kept %v, partial read's lines 3-6 of 10 %v, read in windows-1252 %v", merged, partial, legacy)
	}
}

// TestReplayRefusedPatchRecord checks what a refused patch's record holds:
// each file it checked, with what was expected and what was there, and
// the text, which history keeps.
func TestReplayRefusedPatchRecord(t *testing.T) {
	w, dir := open(t, nil)
	coverSession(t, w, dir)
	w.Close()
	recs := records(t, dir)
	i := slices.IndexFunc(recs, func(r *ledger.Record) bool {
		return r.Tool == "apply_patch" && r.ErrorCode == "NO_MATCH" && len(r.Files) == 2
	})
	if i < 0 {
		t.Fatal("no record of the patch refused at its second file")
	}
	r := recs[i]
	if r.Path != "r2.txt" || r.Files[0].Path != "r1.txt" || r.Files[1].Path != "r2.txt" {
		t.Errorf("record of %q checks %q and %q; want r2.txt after r1.txt", r.Path, r.Files[0].Path, r.Files[1].Path)
	}
	for _, f := range r.Files {
		if f.Baseline == nil || f.Observed == nil || f.Baseline.SHA256 != f.Observed.SHA256 || f.Baseline.Read == nil || !f.Baseline.Read.Full {
			t.Errorf("file %s: expected %+v, observed %+v; want the full read's hash, and the same observed", f.Path, f.Baseline, f.Observed)
		}
	}
	if r.Observed == nil || r.Observed.SHA256 != hexSum("x\ny\nx\ny\n") {
		t.Errorf("observed %+v, want r2.txt's content", r.Observed)
	}
	text := refusedPatches[10].text
	if r.Text == nil || r.Text.Path != editguard.PatchTextPath || r.Text.SHA256 != hexSum(text) {
		t.Fatalf("kept text %+v, want the patch's under %s", r.Text, editguard.PatchTextPath)
	}
	sr, err := editguard.OpenStateReader(dir)
	checker{t}.ok(nil, err)
	defer sr.Close()
	got, err := sr.Content(r.Text.Path, r.Text.SHA256)
	if err != nil || string(got) != text {
		t.Errorf("history keeps %q (%v), want the patch's text", got, err)
	}
	var args map[string]any
	json.Unmarshal(r.Args, &args)
	if args["patch_sha256"] != hexSum(text) {
		t.Errorf("args %v, want the text's hash", args)
	}
}

// TestReplayFindsTamperedCoverage tampers with one record of each kind
// coverSession adds, re-sealing the chain: each diverges.
func TestReplayFindsTamperedCoverage(t *testing.T) {
	patchRefusal := func(code string) func(*ledger.Record) bool {
		return func(r *ledger.Record) bool { return r.Tool == "apply_patch" && r.ErrorCode == code }
	}
	swapCode := func(to string) func(*ledger.Record) { return func(r *ledger.Record) { r.ErrorCode = to } }
	type tc struct {
		name               string
		pick               func(*ledger.Record) bool
		edit               func(*ledger.Record)
		what               string
		recorded, replayed string
		// undone: the tampered record's transaction was undone, and
		// the undo's record, which starts from the recorded result,
		// diverges too.
		undone bool
	}
	cases := []tc{{
		name: "result of a merged edit",
		pick: func(r *ledger.Record) bool { return r.Tool == "edit_file" && r.Strategy == "merged" },
		edit: func(r *ledger.Record) { r.SHA256After = hexSum("other") },
		what: "sha256_after", recorded: hexSum("other"), replayed: hexSum("ALPHA\nbeta\ngamma\ndelta\nEPSILON\n"),
	}, {
		name: "result of a merged patch",
		pick: func(r *ledger.Record) bool { return r.Tool == "apply_patch" && r.Path == "mp.txt" && r.Outcome == "ok" },
		edit: func(r *ledger.Record) { r.SHA256After = hexSum("other") },
		what: "sha256_after", recorded: hexSum("other"), replayed: hexSum("ONE\ntwo\nthree\nfour\n5\n"),
	}, {
		name: "extent of a partial read",
		pick: func(r *ledger.Record) bool { return r.Tool == "delete_file" && r.Path == "p.txt" },
		edit: func(r *ledger.Record) { r.Baseline.Read.Full = true },
		what: "decision", recorded: "NOT_READ", replayed: "ok",
	}, {
		name: "encoding of a read",
		pick: func(r *ledger.Record) bool { return r.Path == "l.txt" && r.Outcome == "ok" },
		edit: func(r *ledger.Record) { r.Baseline.Read.Encoding = "iso-8859-1" },
		what: "decision", recorded: "ok", replayed: "ENCODING",
	}, {
		name: "text of a committed patch",
		pick: func(r *ledger.Record) bool { return r.Tool == "apply_patch" && r.Path == "c.txt" && r.Outcome == "ok" },
		edit: func(r *ledger.Record) { r.SHA256After = hexSum("other") },
		what: "sha256_after", recorded: hexSum("other"), replayed: hexSum("one\nzwei\n"), undone: true,
	}, {
		name: "destination of a patch's move",
		pick: func(r *ledger.Record) bool { return r.Tool == "apply_patch" && r.Path == "r9.txt" },
		edit: func(r *ledger.Record) { r.SHA256After = hexSum("other") },
		what: "sha256_after", recorded: hexSum("other"), replayed: hexSum("uno\ntwo\nthree\n"),
	}, {
		name: "encoding of a patch's read",
		pick: func(r *ledger.Record) bool { return r.Tool == "apply_patch" && r.Path == "l.txt" },
		// Read as Latin-1, the file's euro sign is another character:
		// the hunk's old line is not there.
		edit: func(r *ledger.Record) { r.Baseline.Read.Encoding = "iso-8859-1" },
		what: "decision", recorded: "ok", replayed: "NO_MATCH",
	}}
	// Each refusal recorded as another: the text and the files say which.
	for _, sw := range [][3]string{
		{"NO_MATCH", "AMBIGUOUS_MATCH", "NO_MATCH"}, {"AMBIGUOUS_MATCH", "NO_MATCH", "AMBIGUOUS_MATCH"},
		{"NO_CHANGE", "NO_MATCH", "NO_CHANGE"}, {"NOT_READ", "STALE_FILE", "NOT_READ"},
		{"NOT_FOUND", "NOT_READ", "NOT_FOUND"}, {"STALE_FILE", "NO_MATCH", "STALE_FILE"},
		{"INVALID_ARGUMENT", "NO_MATCH", "INVALID_ARGUMENT"},
	} {
		cases = append(cases, tc{name: "refused patch " + sw[0], pick: patchRefusal(sw[0]), edit: swapCode(sw[1]),
			what: "decision", recorded: sw[1], replayed: sw[2]})
	}
	cases = append(cases, tc{
		// The read made to agree with what was there: the patch's
		// hunks then decide, and they apply.
		name: "expectation of a stale patch",
		pick: func(r *ledger.Record) bool {
			return r.Tool == "apply_patch" && r.ErrorCode == "STALE_FILE" && r.Path == "r4.txt"
		},
		edit: func(r *ledger.Record) { r.Files[0].Baseline.SHA256 = r.Files[0].Observed.SHA256 },
		what: "decision", recorded: "STALE_FILE", replayed: "NO_MATCH",
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, dir := open(t, nil)
			session(t, w, dir)
			coverSession(t, w, dir)
			w.Close()
			rec := tamper(t, dir, tc.pick, tc.edit)
			rep := run(t, dir, replay.Options{})
			want := 1
			if tc.undone {
				want = 2
			}
			if rep.Diverged != want || len(rep.Divergences) != want {
				t.Fatalf("%d divergences, want %d: %+v (skips %+v)", rep.Diverged, want, rep.Divergences, rep.Skips)
			}
			if tc.undone && rep.Divergences[1].Tool != "undo_patch" {
				t.Errorf("second divergence %+v, want the undo's", rep.Divergences[1])
			}
			d := rep.Divergences[0]
			if d.Seq != rec.Seq || d.What != tc.what || d.Recorded != tc.recorded || d.Replayed != tc.replayed {
				t.Errorf("divergence %+v; want seq %d, %s recorded %s, replayed %s", d, rec.Seq, tc.what, tc.recorded, tc.replayed)
			}
			if rep.Skipped != 0 {
				t.Errorf("skips: %+v", rep.Skips)
			}
		})
	}
}

// TestReplayOldRecords: records written before they held a read's extent,
// encoding and merge base, a patch's text or a refused patch's files
// replay as they did: a merge and a NOT_READ after a partial read are
// skipped, a committed patch is matched on its decision, and a refused
// patch, which recorded no observation, is skipped.
func TestReplayOldRecords(t *testing.T) {
	w, dir := open(t, nil)
	s, c := w.NewSession("old"), checker{t}
	c.ok(s.Write(ctx, "m.txt", "alpha\nbeta\ngamma\ndelta\nepsilon\n", nil))
	put(t, dir, "m.txt", "ALPHA\nbeta\ngamma\ndelta\nepsilon\n")
	c.ok(s.Edit(ctx, "m.txt", []editguard.Edit{{OldString: "epsilon", NewString: "EPSILON"}}, nil))
	put(t, dir, "p.txt", strings.Repeat("a line\n", 10))
	c.ok(s.Read(ctx, "p.txt", &editguard.ReadOptions{Offset: 3, Limit: 4}))
	_, err := s.Write(ctx, "p.txt", "whole\n", nil)
	refuse(t, err, editguard.CodeNotRead)
	c.ok(s.Read(ctx, "p.txt", nil))
	c.ok(s.ApplyPatch(ctx, "*** Begin Patch\n*** Update File: p.txt\n@@\n-a line\n+first\n a line\n a line\n a line\n a line\n a line\n a line\n a line\n a line\n a line\n*** End Patch\n", nil))
	_, err = s.ApplyPatch(ctx, "*** Begin Patch\n*** Update File: p.txt\n@@\n-zzz\n+x\n*** End Patch\n", nil)
	refuse(t, err, editguard.CodeNoMatch)
	w.Close()

	path := dir + "/" + editguard.StateDir + "/ledger.jsonl"
	data, err := os.ReadFile(path)
	c.ok(nil, err)
	var recs []*ledger.Record
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if line == "" {
			continue
		}
		r := &ledger.Record{}
		c.ok(nil, json.Unmarshal([]byte(line), r))
		r.Text, r.Files = nil, nil
		for _, fs := range []*ledger.FileState{r.Baseline, r.Observed} {
			if fs != nil {
				fs.Read = nil
			}
		}
		if r.Tool == "apply_patch" && r.Outcome == "error" {
			r.Observed, r.Baseline, r.SHA256Before = nil, nil, ""
		}
		recs = append(recs, r)
	}
	if err := ledger.Rewrite(path, recs); err != nil {
		t.Fatal(err)
	}
	rep := run(t, dir, replay.Options{})
	if rep.Diverged != 0 {
		t.Errorf("divergences: %+v", rep.Divergences)
	}
	want := map[string]int{replay.SkippedMerged: 1, replay.SkippedReadExtent: 1, replay.SkippedUnobserved: 1}
	for reason, n := range want {
		if rep.SkippedBy[reason] != n {
			t.Errorf("skipped for %q: %d, want %d (all: %v)", reason, rep.SkippedBy[reason], n, rep.SkippedBy)
		}
	}
	if rep.Skipped != 3 || rep.DecisionOnly != 1 {
		t.Errorf("%d skipped, %d matched on the decision only; want 3 and the patch's 1", rep.Skipped, rep.DecisionOnly)
	}
}
