package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/ledger"
)

// TestVerifySince checks verify --since: "last" needs a full verify first;
// after one it checks only the records after the one the full verify ended
// at; a ledger resealed before that record (so that a full verify passes)
// fails "last" at it; --since SEQ checks from SEQ on; bad values are usage
// errors. The mark is kept in the user's cache, not in the workspace.
func TestVerifySince(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	root := t.TempDir()
	for i := range 5 {
		if code, out, errs := cliRun(t, root, "write", fmt.Sprintf("f%d.txt", i)); code != 0 {
			t.Fatalf("write: %d %s%s", code, out, errs)
		}
	}
	if code, _, errs := cliRun(t, root, "verify", "--since", "last"); code == 0 || !strings.Contains(errs, "no full verify") {
		t.Errorf("verify --since last before any full verify: exit %d %q", code, errs)
	}
	code, out, errs := cliRun(t, root, "verify", "--json")
	var full struct{ Records, First, Last int }
	if code != 0 || json.Unmarshal([]byte(out), &full) != nil || full.Records < 5 || full.First != 1 || full.Last != full.Records {
		t.Fatalf("verify: exit %d %s%s", code, out, errs)
	}
	if ents, _ := os.ReadDir(filepath.Join(root, ".editguard")); len(ents) == 0 {
		t.Fatal("no state directory")
	}
	for i := 5; i < 8; i++ {
		cliRun(t, root, "write", fmt.Sprintf("f%d.txt", i))
	}
	code, out, errs = cliRun(t, root, "verify", "--since", "last", "--json")
	var got struct{ Records, First, Last int }
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.Records == 0 || got.First != full.Last+1 || got.Last != full.Last+got.Records {
		t.Fatalf("verify --since last after 3 more writes: exit %d %s%s; want the records after %d", code, out, errs, full.Last)
	}
	// The mark moved on: nothing new since.
	if code, out, _ := cliRun(t, root, "verify", "--since", "last"); code != 0 || !strings.Contains(out, fmt.Sprintf("record %d has the content and hash the last full verify found", got.Last)) || !strings.Contains(out, " 0 records after it") {
		t.Errorf("verify --since last again: exit %d %q", code, out)
	}
	if code, out, _ := cliRun(t, root, "verify", "--since", "7"); code != 0 || !strings.Contains(out, fmt.Sprintf("records 7 to %d", got.Last)) || !strings.Contains(out, "before 7 not checked") {
		t.Errorf("verify --since 7: exit %d %q", code, out)
	}
	// Record 2 changed and the chain resealed: a full verify passes, the
	// check from the mark does not.
	var recs []*editguard.LedgerRecord
	w, err := editguard.Open(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Log(editguard.LogFilter{}, func(r *editguard.LedgerRecord) error { recs = append(recs, r); return nil })
	w.Close()
	recs[1].Path = "forged.txt"
	if err := ledger.Rewrite(filepath.Join(root, ".editguard", "ledger.jsonl"), recs); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := cliRun(t, root, "verify", "--since", "last"); code != 1 || !strings.Contains(errs, fmt.Sprintf("failed at seq %d", got.Last)) || !strings.Contains(errs, "run a full editguard verify") {
		t.Errorf("verify --since last of a resealed ledger: exit %d %s%s; want a failure at record 8", code, out, errs)
	}
	for _, bad := range []string{"0", "x", "-3"} {
		if code, _, errs := cliRun(t, root, "verify", "--since", bad); code != exitUsage || !strings.Contains(errs, "--since") {
			t.Errorf("verify --since %s: exit %d %q", bad, code, errs)
		}
	}
}

// BenchmarkVerifyGrowth verifies ledgers of 1,000 and 200,000 records in
// full and from a mark 50 records before the end (verify --since last),
// with editguard log -n 50 as a reader of the tail to compare with: the
// check from a mark should cost the same at any length. Each session made
// 50 of the records, and the readers of one session (log --session,
// rewind --session --dry-run) read the last session's and the first's.
// The copies' hashes do not chain, so the rewind refuses (exit 3) once it
// has found the session's records, which is the part that grows. The
// first read of a session builds the ledger's session index, untimed but
// for log-session-cold, which removes it before each read.
//
//	go test -run '^$' -bench VerifyGrowth -benchtime 5x ./cmd/editguard
func BenchmarkVerifyGrowth(b *testing.B) {
	b.Setenv("XDG_CACHE_HOME", b.TempDir())
	for _, n := range []int{1000, 200000} {
		root := b.TempDir()
		if code, _, errs := cliRun(b, root, "write", "a.txt"); code != 0 {
			b.Fatal(errs)
		}
		var proto *editguard.LedgerRecord
		w, err := editguard.Open(root, nil)
		if err != nil {
			b.Fatal(err)
		}
		w.Log(editguard.LogFilter{}, func(r *editguard.LedgerRecord) error {
			if r.Outcome == "ok" {
				proto = r
			}
			return nil
		})
		w.Close()
		recs := make([]*editguard.LedgerRecord, n)
		for i := range recs {
			r := *proto
			r.Seq, r.HistoryVersion = uint64(i+1), ""
			r.Session = fmt.Sprintf("agent-%d", i/50)
			recs[i] = &r
		}
		if err := ledger.Rewrite(filepath.Join(root, ".editguard", "ledger.jsonl"), recs); err != nil {
			b.Fatal(err)
		}
		// The write's history version names a record the copies replaced.
		if err := os.RemoveAll(filepath.Join(root, ".editguard", "history")); err != nil {
			b.Fatal(err)
		}
		// One open catches the new history up with the ledger, as the
		// workspace's first open after the copy would.
		if code, _, errs := cliRun(b, root, "log", "-n", "1"); code != 0 {
			b.Fatal(errs)
		}
		mark := recs[n-51]
		if err := writeVerifiedMark(root, editguard.LedgerMark{Seq: mark.Seq, Hash: mark.Hash}); err != nil {
			b.Fatal(err)
		}
		for _, cell := range []struct {
			name string
			args []string
			cold bool // without the session index each time
		}{
			{"full", []string{"verify"}, false},
			{"since-last", []string{"verify", "--since", "last"}, false},
			{"log-n-50", []string{"log", "-n", "50"}, false},
			{"log-session-last", []string{"log", "--session", fmt.Sprintf("agent-%d", (n-1)/50)}, false},
			{"log-session-first", []string{"log", "--session", "agent-0"}, false},
			{"log-session-cold", []string{"log", "--session", "agent-0"}, true},
			{"rewind-session-last", []string{"rewind", "--session", fmt.Sprintf("agent-%d", (n-1)/50), "--dry-run"}, false},
		} {
			b.Run(fmt.Sprintf("n=%d/%s", n, cell.name), func(b *testing.B) {
				cliRun(b, root, cell.args...) // builds the session index, if any
				syscall.Sync()                // its write-back lands before the clock starts
				for b.Loop() {
					if cell.cold {
						os.RemoveAll(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "editguard", "ledger-index"))
					}
					if cell.name == "since-last" {
						// Each run moves the mark to the end: put it back.
						writeVerifiedMark(root, editguard.LedgerMark{Seq: mark.Seq, Hash: mark.Hash})
					}
					if code, out, errs := cliRun(b, root, cell.args...); code != 0 && (code != 3 || cell.args[0] != "rewind") {
						b.Fatalf("%v: exit %d %s%s", cell.args, code, out, errs)
					}
				}
			})
		}
	}
}
