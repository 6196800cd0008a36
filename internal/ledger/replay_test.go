package ledger

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// replayLog records a short session mix: a refused write, an accepted
// edit, and another session's write.
func replayLog(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	l := openTest(t, path, nil)
	for _, r := range []*Record{
		{Session: "a", Tool: "write_file", Path: "x.go", Args: json.RawMessage(`{"path":"x.go","content":"1"}`),
			Outcome: "error", ErrorCode: "STALE_FILE", Result: json.RawMessage(`{"code":"STALE_FILE"}`)},
		{Session: "b", Tool: "write_file", Path: "y.go", Args: json.RawMessage(`{"path":"y.go","content":"2"}`),
			Outcome: "ok"},
		{Session: "a", Tool: "edit_file", Path: "x.go",
			Args:    json.RawMessage(`{"path":"x.go","edits":[{"old_string":"a","new_string":"b"}],"dry_run":false}`),
			Outcome: "ok", SHA256After: "ff", Result: json.RawMessage(`{"sha256":"ff"}`)},
		{Session: "a", Tool: "restore_file", Path: "x.go", Outcome: "ok"},
	} {
		if err := l.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func TestReplayMatches(t *testing.T) {
	rp, err := LoadReplayer(replayLog(t), "a")
	if err != nil {
		t.Fatal(err)
	}
	if got := rp.Remaining(); got != 3 {
		t.Fatalf("Remaining() = %d, want 3 records of session a", got)
	}
	for _, c := range []struct {
		tool, path, args string
		wantSeq          uint64
		wantCode         string
	}{
		{"write_file", "x.go", `{"content":"1","path":"x.go"}`, 1, "STALE_FILE"},
		// Key order and spacing do not matter.
		{"edit_file", "x.go", "{\"dry_run\": false,\n \"edits\": [{\"new_string\": \"b\", \"old_string\": \"a\"}], \"path\": \"x.go\"}", 3, ""},
		// No recorded arguments and none given.
		{"restore_file", "x.go", "", 4, ""},
	} {
		rec, err := rp.Next(c.tool, c.path, json.RawMessage(c.args))
		if err != nil {
			t.Fatalf("Next(%s, %s) error: %v", c.tool, c.path, err)
		}
		if rec.Seq != c.wantSeq || rec.ErrorCode != c.wantCode {
			t.Errorf("Next(%s, %s) = record %d with code %q, want %d with %q", c.tool, c.path, rec.Seq, rec.ErrorCode, c.wantSeq, c.wantCode)
		}
	}
	if got := rp.Remaining(); got != 0 {
		t.Errorf("Remaining() after replay = %d, want 0", got)
	}
}

func TestReplayDiverges(t *testing.T) {
	path := replayLog(t)
	for _, tc := range []struct {
		name       string
		tool, path string
		args       string
		seq        uint64
		reason     string
	}{
		{"wrong tool", "edit_file", "x.go", `{"path":"x.go","content":"1"}`, 1, DivergedTool},
		{"wrong path", "write_file", "z.go", `{"path":"x.go","content":"1"}`, 1, DivergedPath},
		{"different args", "write_file", "x.go", `{"path":"x.go","content":"2"}`, 1, DivergedArgs},
		{"extra arg", "write_file", "x.go", `{"path":"x.go","content":"1","dry_run":true}`, 1, DivergedArgs},
		{"missing args", "write_file", "x.go", ``, 1, DivergedArgs},
		{"number spelled differently", "write_file", "x.go", `{"path":"x.go","content":1}`, 1, DivergedArgs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rp, err := LoadReplayer(path, "")
			if err != nil {
				t.Fatal(err)
			}
			rec, err := rp.Next(tc.tool, tc.path, json.RawMessage(tc.args))
			var de *DivergenceError
			if !errors.As(err, &de) || !errors.Is(err, ErrDiverged) {
				t.Fatalf("Next() = %v, %v; want a *DivergenceError", rec, err)
			}
			if de.Seq != tc.seq || de.Reason != tc.reason {
				t.Errorf("divergence at record %d (%s), want %d (%s)", de.Seq, de.Reason, tc.seq, tc.reason)
			}
			if de.Want == nil || de.Want.Tool != "write_file" || de.Want.Path != "x.go" || de.Got.Tool != tc.tool || de.Got.Path != tc.path {
				t.Errorf("divergence Want %+v Got %+v, want the recorded call and the given one", de.Want, de.Got)
			}
			if got := rp.Remaining(); got != 4 {
				t.Errorf("Remaining() after divergence = %d, want 4 (not advanced)", got)
			}
		})
	}

	t.Run("exhausted", func(t *testing.T) {
		rp, err := LoadReplayer(path, "b")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rp.Next("write_file", "y.go", json.RawMessage(`{"path":"y.go","content":"2"}`)); err != nil {
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
	path := replayLog(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	var ve *VerifyError
	if _, err := LoadReplayer(path, ""); !errors.As(err, &ve) {
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
