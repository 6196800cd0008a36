package main

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/testutil"
)

// TestVerifyReportsState makes the state a crash in the middle of a patch
// leaves: the patch's commit is stopped before its second swap, and the
// workspace copied as it is then (the owner stamp comes along, so the copy
// is the user's own workspace, journal and all). verify on the copy names
// the unfinished, half-applied transaction and its files and exits 1; on a
// second copy whose journal is cut in half it names the journal as
// UNSAFE_STATE and exits 1; neither run changes a byte. On the workspace
// whose patch then finished, and on the first copy once editguard state
// has let recovery finish the transaction, verify exits 0 and says what
// it checked.
func TestVerifyReportsState(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	w, dir, s := testutil.ApplyWorkspace(t)
	crashed, truncated := t.TempDir(), t.TempDir()
	swaps := 0
	testutil.SetFaults(w, func(c *atomicfile.Call) error {
		if c.Op != "renameat2" && c.Op != "renameat" {
			return nil
		}
		if swaps++; swaps == 2 {
			copyTree(t, dir, crashed)
			copyTree(t, dir, truncated)
		}
		return nil
	}, nil, nil)
	if _, err := s.ApplyPatch(context.Background(), testutil.ApplyPatchText, nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if swaps < 2 {
		t.Fatalf("the patch made %d swaps, want at least 2", swaps)
	}
	journals := testutil.Journals(t, crashed)
	if len(journals) != 1 {
		t.Fatalf("the copy holds journals %v, want one", journals)
	}
	journal := ".editguard/tx/" + journals[0]

	before := treeBytes(t, crashed)
	code, out, errs := cliRun(t, crashed, "verify")
	if code != exitError || !strings.Contains(out, "unfinished: transaction ") || !strings.Contains(out, journal) ||
		!strings.Contains(out, "half applied: ") || !strings.Contains(out, "as the transaction found it") ||
		!strings.Contains(out, "as the transaction leaves it") || !strings.Contains(errs, "UNSAFE_STATE") {
		t.Errorf("verify of a half-applied transaction: exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(out, "ledger ok: ") {
		t.Errorf("verify does not say the ledger is sound:\n%s", out)
	}
	code, out, errs = cliRun(t, crashed, "verify", "--json")
	var res struct {
		Status string
		Error  struct {
			Code    string
			Details struct {
				Unfinished []struct {
					Tx, Journal string
					Files       []struct{ Path, State string }
				}
			}
		}
	}
	if code != exitError || json.Unmarshal([]byte(out), &res) != nil || res.Status != "UNSAFE_STATE" || res.Error.Code != "UNSAFE_STATE" ||
		len(res.Error.Details.Unfinished) != 1 || res.Error.Details.Unfinished[0].Journal != journal {
		t.Errorf("verify --json of a half-applied transaction: exit %d\n%s%s", code, out, errs)
	} else {
		states := map[string]int{}
		for _, f := range res.Error.Details.Unfinished[0].Files {
			states[f.State]++
		}
		if states["before"] == 0 || states["after"] == 0 || states["neither"] != 0 {
			t.Errorf("file states %v, want some before and some after", states)
		}
	}
	if after := treeBytes(t, crashed); after != before {
		t.Errorf("verify changed the workspace")
	}

	// A journal damaged after it was written.
	jpath := filepath.Join(truncated, journal)
	data, err := os.ReadFile(jpath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(jpath, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = cliRun(t, truncated, "verify")
	if code != exitError || !strings.Contains(out, "UNSAFE_STATE: "+journal+" does not parse") || !strings.Contains(out, "did not finish, so the files it names may be partly changed") || !strings.Contains(errs, "holds 1 unsafe item\n") {
		t.Errorf("verify of a truncated journal: exit %d\n%s%s", code, out, errs)
	}
	if b, _ := os.ReadFile(jpath); len(b) != len(data)/2 {
		t.Errorf("verify changed the truncated journal")
	}

	// Healthy: the workspace whose patch finished.
	code, out, errs = cliRun(t, dir, "verify")
	if code != 0 || !strings.Contains(out, "ledger ok: ") || !strings.Contains(out, "hash chain intact") ||
		!strings.Contains(out, "state ok: no transaction left unfinished and nothing unsafe in .editguard") {
		t.Errorf("verify of a healthy workspace: exit %d\n%s%s", code, out, errs)
	}
	// Recovery at open finishes the crashed transaction; then all is sound.
	if code, out, errs := cliRun(t, crashed, "state"); code != 0 {
		t.Fatalf("state: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := cliRun(t, crashed, "verify"); code != 0 || !strings.Contains(out, "state ok: ") {
		t.Errorf("verify after recovery: exit %d\n%s%s", code, out, errs)
	}
}

// copyTree copies the directory src into dst (which exists), files with
// their modes; it fails on a symlink or a special file, which the tests'
// workspaces do not hold.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, info.Mode().Perm())
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, b, info.Mode().Perm())
		}
		t.Fatalf("copyTree: %s is neither a directory nor a regular file", p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
