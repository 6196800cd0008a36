package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
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

// replaySession makes, in a new workspace, a session of calls: two writes,
// an edit, a NOT_READ and a STALE_FILE refusal, a restore and a patch;
// edits of f.txt past what history keeps (keep versions) leave records
// whose displaced content is retired. It returns the workspace's root.
func replaySession(t *testing.T, keep int) string {
	t.Helper()
	dir := t.TempDir()
	w, err := editguard.Open(dir, &editguard.Options{KeepVersions: keep})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx := context.Background()
	s := w.NewSession("agent")
	step := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	step(s.Write(ctx, "a.txt", "alpha\nbeta\n", nil))
	step(s.Edit(ctx, "a.txt", []editguard.Edit{{OldString: "beta", NewString: "gamma"}}, nil))
	writeFile(t, dir, "b.txt", "bee\n")
	if _, err := s.Write(ctx, "b.txt", "B\n", nil); err == nil {
		t.Fatal("a write over an unread file was accepted")
	}
	step(s.Read(ctx, "b.txt", nil))
	writeFile(t, dir, "b.txt", "bee 2\n")
	if _, err := s.Write(ctx, "b.txt", "B\n", nil); err == nil {
		t.Fatal("a write over a changed file was accepted")
	}
	vs, err := w.History("a.txt")
	step(nil, err)
	i := slices.IndexFunc(vs, func(v editguard.Version) bool { return v.SHA256 == sha256Text("alpha\nbeta\n") })
	if i < 0 {
		t.Fatalf("no version of a.txt's first content in %+v", vs)
	}
	step(s.Restore(ctx, "a.txt", vs[i].ID, nil))
	step(s.ApplyPatch(ctx, "*** Begin Patch\n*** Add File: p.txt\n+patched\n*** End Patch\n", nil))
	step(s.Write(ctx, "f.txt", "f0\n", nil))
	for n := 1; n <= 3; n++ {
		step(s.Edit(ctx, "f.txt", []editguard.Edit{{OldString: fmt.Sprintf("f%d", n-1), NewString: fmt.Sprintf("f%d", n)}}, nil))
	}
	return dir
}

func sha256Text(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// stateDigest hashes the names, modes and bytes of everything under dir's
// state directory.
func stateDigest(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(filepath.Join(dir, editguard.StateDir), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%v\x00", p, info.Mode())
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

func TestReplayCommand(t *testing.T) {
	dir := replaySession(t, 50)
	before := stateDigest(t, dir)
	code, out, errs := cliRun(t, dir, "replay")
	if code != 0 {
		t.Fatalf("replay: exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(out, "diverged 0, skipped 0\n") || strings.Contains(out, "diverged:") {
		t.Errorf("replay of an untouched ledger:\n%s", out)
	}
	// The patch is decided on its text, which history keeps: its
	// result is computed again like any other.
	if strings.Contains(out, "matched on the decision only") {
		t.Errorf("replay matched the patch on its decision only:\n%s", out)
	}

	code, out, errs = cliRun(t, dir, "replay", "--json")
	if code != 0 {
		t.Fatalf("replay --json: exit %d\n%s%s", code, out, errs)
	}
	var rep replay.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("replay --json: %v\n%s", err, out)
	}
	_, logOut, _ := cliRun(t, dir, "log", "--json")
	n := strings.Count(logOut, "\n")
	if rep.Replayed != n || rep.Matched != n || rep.Diverged != 0 || rep.Skipped != 0 || len(rep.Divergences) != 0 {
		t.Errorf("replay --json = %+v; want all %d records of log replayed and matched", rep, n)
	}
	var status struct{ Status string }
	if json.Unmarshal([]byte(out), &status); status.Status != "ok" {
		t.Errorf("replay --json: status %q, want ok", status.Status)
	}
	if after := stateDigest(t, dir); after != before {
		t.Error("replay changed the state directory")
	}

	code, _, errs = cliRun(t, dir, "replay", "extra")
	if code != exitUsage || !strings.Contains(errs, "replay takes no arguments") {
		t.Errorf("replay extra: exit %d, %q; want a usage error", code, errs)
	}
}

func TestReplayCommandDivergence(t *testing.T) {
	dir := replaySession(t, 50)
	path := filepath.Join(dir, editguard.StateDir, "ledger.jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var recs []*ledger.Record
	for _, line := range strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n") {
		r := &ledger.Record{}
		if err := json.Unmarshal([]byte(line), r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	i := slices.IndexFunc(recs, func(r *ledger.Record) bool { return r.Tool == "edit_file" && r.Outcome == "ok" })
	forged := sha256Text("forged\n")
	recs[i].SHA256After = forged
	if err := ledger.Rewrite(path, recs); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := cliRun(t, dir, "verify"); code != 0 {
		t.Fatalf("verify of the rewritten ledger: exit %d\n%s%s", code, out, errs)
	}

	code, out, _ := cliRun(t, dir, "replay")
	want := fmt.Sprintf("diverged: seq %d edit_file a.txt: sha256_after recorded %s, replay computes %s\n",
		recs[i].Seq, forged, sha256Text("alpha\ngamma\n"))
	if code != exitError || !strings.Contains(out, want) || !strings.Contains(out, "diverged 1,") {
		t.Errorf("replay: exit %d\n%s\nwant exit %d and %q", code, out, exitError, want)
	}

	code, out, _ = cliRun(t, dir, "replay", "--json")
	var rep replay.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("replay --json: %v\n%s", err, out)
	}
	if code != exitError || rep.Diverged != 1 || len(rep.Divergences) != 1 || rep.Divergences[0].Seq != recs[i].Seq ||
		rep.Divergences[0].Recorded != forged {
		t.Errorf("replay --json: exit %d, %+v; want exit %d and the divergence at seq %d", code, rep, exitError, recs[i].Seq)
	}

	// Records before the forged one replay without it.
	code, out, _ = cliRun(t, dir, "replay", "--since", fmt.Sprint(recs[i].Seq+1))
	if code != 0 || strings.Contains(out, "diverged:") {
		t.Errorf("replay --since %d: exit %d\n%s", recs[i].Seq+1, code, out)
	}
}

func TestReplayCommandSkips(t *testing.T) {
	dir := replaySession(t, 1)
	code, out, errs := cliRun(t, dir, "replay")
	if code != 0 {
		t.Fatalf("replay: exit %d\n%s%s", code, out, errs)
	}
	// The first edits of f.txt displaced contents that retention retired.
	lines, edits := 0, 0
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "skipped: seq ") && strings.Contains(l, ": "+replay.SkippedRetired) {
			lines++
			if strings.Contains(l, " edit_file f.txt: ") {
				edits++
			}
		}
	}
	if edits != 2 {
		t.Errorf("replay lists %d edits of f.txt skipped as retired, want the 2 before the last:\n%s", edits, out)
	}
	if want := fmt.Sprintf("  skipped %d: %s\n", lines, replay.SkippedRetired); !strings.Contains(out, want) {
		t.Errorf("replay's summary lacks %q:\n%s", want, out)
	}

	code, out, _ = cliRun(t, dir, "replay", "--json")
	var rep replay.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("replay --json: exit %d, %v\n%s", code, err, out)
	}
	if rep.SkippedBy[replay.SkippedRetired] != lines || len(rep.Skips) != rep.Skipped || rep.Skipped < lines {
		t.Errorf("replay --json: skipped by %v, %d skips listed; want %d retired", rep.SkippedBy, len(rep.Skips), lines)
	}
	for _, s := range rep.Skips {
		if s.Reason == "" || s.Seq == 0 {
			t.Errorf("skip without a reason or seq: %+v", s)
		}
	}
}

func TestReplayCommandNoState(t *testing.T) {
	dir := t.TempDir()
	code, _, errs := cliRun(t, dir, "replay")
	if code != exitError || errs == "" {
		t.Errorf("replay without a state directory: exit %d, %q; want an error", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, editguard.StateDir)); err == nil {
		t.Error("replay created a state directory")
	}
}
