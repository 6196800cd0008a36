package ledger

import (
	"encoding/json"
	"errors"
	"os"
	"testing"
)

// replayLog records a short session mix: a refused write, an accepted
// edit, and another session's write.
func replayLog(t *testing.T) testLedger {
	t.Helper()
	lg := newTestLedger(t)
	l := openTest(t, lg, nil)
	for _, r := range []*Record{
		{Session: "a", Tool: "write_file", Path: "x.go", Args: json.RawMessage(`{"lg":"x.go","content":"1"}`),
			Outcome: "error", ErrorCode: "STALE_FILE", Result: json.RawMessage(`{"code":"STALE_FILE"}`)},
		{Session: "b", Tool: "write_file", Path: "y.go", Args: json.RawMessage(`{"lg":"y.go","content":"2"}`),
			Outcome: "ok"},
		{Session: "a", Tool: "edit_file", Path: "x.go",
			Args:    json.RawMessage(`{"lg":"x.go","edits":[{"old_string":"a","new_string":"b"}],"dry_run":false}`),
			Outcome: "ok", SHA256After: "ff", Result: json.RawMessage(`{"sha256":"ff"}`)},
		{Session: "a", Tool: "restore_file", Path: "x.go", Outcome: "ok"},
	} {
		if err := l.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	return lg
}

func TestReplayMatches(t *testing.T) {
	rp, err := LoadReplayer(replayLog(t).dir, testName, "a")
	if err != nil {
		t.Fatal(err)
	}
	if got := rp.Remaining(); got != 3 {
		t.Fatalf("Remaining() = %d, want 3 records of session a", got)
	}
	for _, c := range []struct {
		tool, lg, args string
		wantSeq        uint64
		wantCode       string
	}{
		{"write_file", "x.go", `{"content":"1","lg":"x.go"}`, 1, "STALE_FILE"},
		// Key order and spacing do not matter.
		{"edit_file", "x.go", "{\"dry_run\": false,\n \"edits\": [{\"new_string\": \"b\", \"old_string\": \"a\"}], \"lg\": \"x.go\"}", 3, ""},
		// No recorded arguments and none given.
		{"restore_file", "x.go", "", 4, ""},
	} {
		rec, err := rp.Next(c.tool, c.lg, json.RawMessage(c.args))
		if err != nil {
			t.Fatalf("Next(%s, %s) error: %v", c.tool, c.lg, err)
		}
		if rec.Seq != c.wantSeq || rec.ErrorCode != c.wantCode {
			t.Errorf("Next(%s, %s) = record %d with code %q, want %d with %q", c.tool, c.lg, rec.Seq, rec.ErrorCode, c.wantSeq, c.wantCode)
		}
	}
	if got := rp.Remaining(); got != 0 {
		t.Errorf("Remaining() after replay = %d, want 0", got)
	}
}

func TestReplayDiverges(t *testing.T) {
	lg := replayLog(t)
	for _, tc := range []struct {
		name     string
		tool, lg string
		args     string
		seq      uint64
		reason   string
	}{
		{"wrong tool", "edit_file", "x.go", `{"lg":"x.go","content":"1"}`, 1, DivergedTool},
		{"wrong lg", "write_file", "z.go", `{"lg":"x.go","content":"1"}`, 1, DivergedPath},
		{"different args", "write_file", "x.go", `{"lg":"x.go","content":"2"}`, 1, DivergedArgs},
		{"extra arg", "write_file", "x.go", `{"lg":"x.go","content":"1","dry_run":true}`, 1, DivergedArgs},
		{"missing args", "write_file", "x.go", ``, 1, DivergedArgs},
		{"number spelled differently", "write_file", "x.go", `{"lg":"x.go","content":1}`, 1, DivergedArgs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rp, err := LoadReplayer(lg.dir, testName, "")
			if err != nil {
				t.Fatal(err)
			}
			rec, err := rp.Next(tc.tool, tc.lg, json.RawMessage(tc.args))
			var de *DivergenceError
			if !errors.As(err, &de) || !errors.Is(err, ErrDiverged) {
				t.Fatalf("Next() = %v, %v; want a *DivergenceError", rec, err)
			}
			if de.Seq != tc.seq || de.Reason != tc.reason {
				t.Errorf("divergence at record %d (%s), want %d (%s)", de.Seq, de.Reason, tc.seq, tc.reason)
			}
			if de.Want == nil || de.Want.Tool != "write_file" || de.Want.Path != "x.go" || de.Got.Tool != tc.tool || de.Got.Path != tc.lg {
				t.Errorf("divergence Want %+v Got %+v, want the recorded call and the given one", de.Want, de.Got)
			}
			if got := rp.Remaining(); got != 4 {
				t.Errorf("Remaining() after divergence = %d, want 4 (not advanced)", got)
			}
		})
	}

	t.Run("exhausted", func(t *testing.T) {
		rp, err := LoadReplayer(lg.dir, testName, "b")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rp.Next("write_file", "y.go", json.RawMessage(`{"lg":"y.go","content":"2"}`)); err != nil {
			t.Fatal(err)
		}
		_, err = rp.Next("write_file", "y.go", nil)
		var de *DivergenceError
		if !errors.As(err, &de) || de.Reason != DivergedExhausted || de.Want != nil || de.Seq != 3 {
			t.Fatalf("Next() past the end = %v, want exhausted after record 2", err)
		}
	})
}

func TestLoadReplayerRefusesTamperedLog(t *testing.T) {
	lg := replayLog(t)
	data, err := os.ReadFile(lg.file)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	if err := os.WriteFile(lg.file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	var ve *VerifyError
	if _, err := LoadReplayer(lg.dir, testName, ""); !errors.As(err, &ve) {
		t.Fatalf("LoadReplayer of a tampered log error = %v, want *VerifyError", err)
	}
}

func TestNewReplayerEmpty(t *testing.T) {
	_, err := NewReplayer(nil).Next("write_file", "a", nil)
	var de *DivergenceError
	if !errors.As(err, &de) || de.Reason != DivergedExhausted || de.Seq != 1 {
		t.Fatalf("Next() on an empty log = %v, want exhausted at record 1", err)
	}
}

// TestRewriteVerifies checks that a ledger rewritten with an edited record
// verifies, holds the edit, and that the unedited records keep their hashes
// up to the edited one.
func TestRewriteVerifies(t *testing.T) {
	lg := replayLog(t)
	var recs []*Record
	if err := Scan(lg.dir, testName, func(r *Record) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	first := recs[0].Hash
	edited := recs[2].Hash
	recs[2].SHA256After = "00"
	if err := Rewrite(lg.file, recs); err != nil {
		t.Fatal(err)
	}
	n, err := Verify(lg.dir, testName)
	if err != nil || n != len(recs) {
		t.Fatalf("Verify() after Rewrite = %d, %v; want %d, nil", n, err, len(recs))
	}
	var got []*Record
	if err := Scan(lg.dir, testName, func(r *Record) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if got[2].SHA256After != "00" || got[2].Hash == edited {
		t.Errorf("record 3 after Rewrite: sha256_after %q hash %s; want the edit and a new hash", got[2].SHA256After, got[2].Hash)
	}
	if got[0].Hash != first {
		t.Errorf("record 1's hash changed from %s to %s", first, got[0].Hash)
	}
}
