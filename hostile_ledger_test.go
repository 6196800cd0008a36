package editguard_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/statedir"
)

// TestHostileLedgerEntries plants symlinks where editguard keeps its ledger
// and lock, both before the workspace is opened and behind an open
// workspace's back, and checks that Open, a write (whose ledger append
// meets the symlink) and verification follow none of them: the outside
// file keeps its bytes, a dangling target is not created, and the failure
// is UNSAFE_STATE.
func TestHostileLedgerEntries(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entry   string
		outside []byte // nil: the symlink dangles
	}{
		{"ledger to a file without final newline", "ledger.jsonl", []byte("someone's notes\nwithout a final newline")},
		{"ledger to an empty file", "ledger.jsonl", []byte{}},
		{"dangling lock", "ledger.jsonl.lock", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plant := func(t *testing.T, dir string) string {
				t.Helper()
				target := filepath.Join(t.TempDir(), "outside")
				if tc.outside != nil {
					if err := os.WriteFile(target, tc.outside, 0o600); err != nil {
						t.Fatal(err)
					}
				}
				entry := filepath.Join(dir, editguard.StateDir, tc.entry)
				os.Remove(entry)
				if err := os.MkdirAll(filepath.Dir(entry), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(target, entry); err != nil {
					t.Fatal(err)
				}
				return target
			}
			unchanged := func(t *testing.T, target string) {
				t.Helper()
				got, err := os.ReadFile(target)
				switch {
				case tc.outside == nil && !errors.Is(err, fs.ErrNotExist):
					t.Errorf("the dangling symlink's target was created: %q, %v", got, err)
				case tc.outside != nil && !bytes.Equal(got, tc.outside):
					t.Errorf("the outside file is %q, %v; want it unchanged, %q", got, err, tc.outside)
				}
			}
			unsafe := func(t *testing.T, op string, err error) {
				t.Helper()
				if !errors.Is(err, statedir.ErrUnsafe) || !errors.Is(err, editguard.ErrUnsafeState) {
					t.Errorf("%s error = %v, want UNSAFE_STATE wrapping statedir.ErrUnsafe", op, err)
				}
			}

			t.Run("shipped", func(t *testing.T) {
				dir := t.TempDir()
				target := plant(t, dir)
				w, err := editguard.Open(dir, nil)
				if err == nil {
					w.Close()
				}
				unsafe(t, "Open", err)
				_, err = editguard.VerifyDir(dir)
				unsafe(t, "VerifyDir", err)
				unchanged(t, target)
			})

			t.Run("planted later", func(t *testing.T) {
				w, dir := newWorkspace(t)
				s := w.NewSession("agent")
				if _, err := s.Write(ctx, "a.txt", "one\n", nil); err != nil {
					t.Fatal(err)
				}
				target := plant(t, dir)
				res, err := s.Write(ctx, "b.txt", "two\n", nil)
				if err != nil {
					t.Fatalf("Write() error = %v; the change itself does not need the ledger", err)
				}
				if len(res.Warnings) == 0 {
					t.Errorf("Write() has no warning, but its ledger append cannot have succeeded")
				}
				_, err = w.VerifyLedger()
				unsafe(t, "VerifyLedger", err)
				_, err = editguard.VerifyDir(dir)
				unsafe(t, "VerifyDir", err)
				unchanged(t, target)
			})
		})
	}
}

// TestVerifyDirReadsOnly checks that the read-only verification reports a
// torn final line, records cut from the end and a deleted ledger whose
// anchor remains, and changes no byte of the state directory doing so.
func TestVerifyDirReadsOnly(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, ledger []byte) []byte // nil result: remove the ledger
		reason string
		n      int
	}{
		{"torn tail", func(t *testing.T, l []byte) []byte { return append(l, `{"seq":9,"ti`...) }, "torn tail", 8}, // four writes, each an intent and its outcome
		{"last two records cut", func(t *testing.T, l []byte) []byte {
			lines := bytes.SplitAfter(l, []byte("\n"))
			return bytes.Join(lines[:2], nil)
		}, "records missing after the last one", 2},
		{"ledger deleted, anchor kept", func(t *testing.T, l []byte) []byte { return nil }, "records missing after the last one", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, dir := newWorkspace(t)
			s := w.NewSession("agent")
			for _, c := range []string{"1\n", "2\n", "3\n", "4\n"} {
				if _, err := s.Write(ctx, c[:1]+".txt", c, nil); err != nil {
					t.Fatal(err)
				}
			}
			w.Close()
			path := filepath.Join(dir, editguard.StateDir, "ledger.jsonl")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if damaged := tc.damage(t, data); damaged == nil {
				err = os.Remove(path)
			} else {
				err = os.WriteFile(path, damaged, 0o600)
			}
			if err != nil {
				t.Fatal(err)
			}
			os.Remove(path + ".lock")
			before := stateFiles(t, dir)

			n, err := editguard.VerifyDir(dir)
			var ve *editguard.LedgerVerifyError
			if !errors.As(err, &ve) || ve.Reason != tc.reason || n != tc.n {
				t.Errorf("VerifyDir() = %d, %v; want %d, %q", n, err, tc.n, tc.reason)
			}
			after := stateFiles(t, dir)
			if len(after) != len(before) {
				t.Errorf("VerifyDir changed the state directory's entries from %d to %d", len(before), len(after))
			}
			for name, b := range before {
				if !bytes.Equal(after[name], b) {
					t.Errorf("VerifyDir changed %s", name)
				}
			}
		})
	}
}

// stateFiles maps every entry of dir's state directory to its bytes.
func stateFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	root := filepath.Join(dir, editguard.StateDir)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		m[p] = nil
		if d.Type().IsRegular() {
			m[p], err = os.ReadFile(p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
