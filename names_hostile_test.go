package editguard_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/engine"
)

// hostileNames are ordinary names to the file system: not UTF-8, with a
// newline, a tab and control bytes, terminal escapes (OSC 52 sets the
// clipboard, CSI 2J clears the screen), a leading dash, and the longest
// element allowed.
var hostileNames = []string{
	"caf\xe9.txt",
	"new\nline.txt",
	"tab\there\x01\x7f.txt",
	"\x1b]52;c;aGVsbG8=\x07.txt",
	"\x1b[2J\x1b[H.txt",
	"-rf",
	"\xff\xfe\xfd",
	strings.Repeat("\xe9", 255),
}

// TestHostileNamesKeepEverything takes each hostile name through every
// change path of the library (a write that creates, an edit, a command's
// overwrite, a move there and back, a delete, restores and a rewind), with
// verify after each step, and checks that every version displaced along
// the way is restorable byte for byte.
func TestHostileNamesKeepEverything(t *testing.T) {
	for i, name := range hostileNames {
		t.Run(fmt.Sprintf("%d", i), func(t *testing.T) {
			w, dir := newWorkspace(t)
			if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
				t.Skipf("the file system refuses %q: %v", name, err)
			}
			os.Remove(filepath.Join(dir, name))
			s := w.NewSession("agent")
			verify := func(step string) {
				t.Helper()
				if _, err := w.VerifyLedger(); err != nil {
					t.Fatalf("after %s: verify: %v", step, err)
				}
			}
			disk := func() []byte {
				t.Helper()
				b, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatalf("read %q: %v", name, err)
				}
				return b
			}
			// Contents the file holds in turn, each displaced by the next.
			var held [][]byte

			if _, err := s.Write(ctx, name, "one\n", nil); err != nil {
				t.Fatalf("create: %v", err)
			}
			verify("create")
			held = append(held, disk())

			if _, err := s.Read(ctx, name, nil); err != nil {
				t.Fatalf("read: %v", err)
			}
			if _, err := s.Edit(ctx, name, []editguard.Edit{{OldString: "one", NewString: "two"}}, nil); err != nil {
				t.Fatalf("edit: %v", err)
			}
			verify("edit")
			held = append(held, disk())

			cmd, err := s.BeginCommand(ctx, "overwrite", nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte("three from a command\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := cmd.End(ctx)
			if err != nil {
				t.Fatalf("command end: %v", err)
			}
			if len(res.Changes) != 1 || res.Changes[0].Path != name {
				t.Fatalf("command changes = %+v, want one of %q", res.Changes, name)
			}
			exactInJSON(t, res, name)
			verify("command")
			held = append(held, disk())

			other := name + "\n2"
			if len(other) > 255 {
				other = "moved-" + name[:200]
			}
			if _, err := s.Read(ctx, name, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Move(ctx, name, other, nil); err != nil {
				t.Fatalf("move: %v", err)
			}
			verify("move")
			if _, err := s.Move(ctx, other, name, nil); err != nil {
				t.Fatalf("move back: %v", err)
			}
			verify("move back")

			if _, err := s.Read(ctx, name, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Delete(ctx, name, nil); err != nil {
				t.Fatalf("delete: %v", err)
			}
			verify("delete")

			vs, err := w.History(name)
			if err != nil {
				t.Fatalf("history: %v", err)
			}
			for _, want := range held {
				found := false
				for _, v := range vs {
					if v.Absent || v.SHA256 != sha256hex(want) {
						continue
					}
					found = true
					if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
						if _, err := s.Read(ctx, name, nil); err != nil {
							t.Fatal(err)
						}
					}
					if _, err := s.Restore(ctx, name, v.ID, nil); err != nil {
						t.Fatalf("restore %s: %v", v.ID, err)
					}
					if got := disk(); !bytes.Equal(got, want) {
						t.Fatalf("restore %s gave %q, want %q", v.ID, got, want)
					}
					verify("restore " + v.ID)
					break
				}
				if !found {
					t.Fatalf("no history version of %q holds %q: %+v", name, want, vs)
				}
			}

			rw, err := s.Rewind(ctx, "agent", nil)
			if err != nil {
				t.Fatalf("rewind: %v", err)
			}
			verify("rewind")
			if len(rw.Refused) != 0 {
				t.Fatalf("rewind refused %+v", rw.Refused)
			}
			exactInJSON(t, rw, name)
			if _, err := os.Lstat(filepath.Join(dir, name)); !os.IsNotExist(err) {
				t.Fatalf("after the rewind %q exists (%v); the session created it", name, err)
			}

			// Every record names the file by its exact bytes.
			n := 0
			if err := w.Log(editguard.LogFilter{Path: name}, func(r *editguard.LedgerRecord) error {
				n++
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if n < 8 {
				t.Fatalf("the ledger has %d records of %q, want every change", n, name)
			}
		})
	}
}

// TestHostileNamesInATransaction: a patch changes files whose names are
// not UTF-8 or hold a newline; its journal names them exactly, so that
// recovery of a transaction that stopped puts back the very files it
// changed, and their versions are kept under those names.
func TestHostileNamesInATransaction(t *testing.T) {
	w, dir := newWorkspace(t)
	a, b := "caf\xe9.txt", "two\nlines.txt"
	writeFile(t, dir, a, "alpha\n")
	writeFile(t, dir, b, "beta\n")
	s := w.NewSession("agent")
	for _, p := range []string{a, b} {
		if _, err := s.Read(ctx, p, nil); err != nil {
			t.Fatal(err)
		}
	}
	before := tree(t, dir)
	patch := "*** Begin Patch\n*** Update File: " + a + "\n@@\n-alpha\n+ALPHA\n*** Add File: new\xff.txt\n+new\n*** End Patch\n"
	res, err := s.ApplyPatch(ctx, patch, nil)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if _, err := w.VerifyLedger(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, a); got != "ALPHA\n" {
		t.Fatalf("%q holds %q after the patch", a, got)
	}
	// The journal a transaction that stopped before its records would
	// have left, as the engine writes it.
	var files []engine.JournalFile
	if err := w.Log(editguard.LogFilter{}, func(r *editguard.LedgerRecord) error {
		if r.Strategy == "transaction "+res.TxID {
			files = append(files, engine.JournalFile{
				Path: r.Path, BeforeExists: r.Observed != nil && r.Observed.Exists, BeforeSHA256: r.SHA256Before,
				Version: r.HistoryVersion, AfterExists: r.SHA256After != "", AfterSHA256: r.SHA256After,
			})
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Fatalf("records of the transaction: %+v, want 2", files)
	}
	w.Close()
	data, err := json.Marshal(&engine.Journal{ID: "stopped", Op: "apply_patch", Session: "agent", Files: files})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"path_hex":"`+hex.EncodeToString([]byte(a))+`"`)) {
		t.Fatalf("the journal does not hold %q exactly: %s", a, data)
	}
	if err := os.WriteFile(filepath.Join(dir, ".editguard", "tx", "stopped.json"), editguard.SealJournal(w, data), 0o644); err != nil {
		t.Fatal(err)
	}
	w2, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if got := w2.Recovery().RolledBack; len(got) != 1 || got[0] != "stopped" {
		t.Fatalf("RolledBack = %v, problems %v", got, w2.Recovery().Problems)
	}
	if got := tree(t, dir); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("after recovery:\n%q\nwant\n%q", got, before)
	}
	if _, err := w2.VerifyLedger(); err != nil {
		t.Fatal(err)
	}
}

// exactInJSON checks that v's JSON names p exactly: as it is if it is
// UTF-8, else with its bytes in hex beside the readable form.
func exactInJSON(t *testing.T, v any, p string) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(p)
	if !utf8.ValidString(p) {
		want = []byte(`"path_hex":"` + hex.EncodeToString([]byte(p)) + `"`)
	}
	if !bytes.Contains(b, want) {
		t.Fatalf("the JSON of %T does not name %q exactly (%s): %s", v, p, want, b)
	}
}
