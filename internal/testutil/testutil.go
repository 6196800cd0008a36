// Package testutil holds the helpers that the tests of the root package,
// internal/durability, remote and others share: workspaces in a test's
// temporary directory, files, the ledger, child processes of the test
// binary, the traced write, the checks of history, git repositories and
// clones (git.go), and the peak resident size. Only tests import it.
package testutil

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/faults"
	"github.com/editguard/editguard/internal/history"
	"github.com/editguard/editguard/internal/ledger"
)

// NewWorkspace opens a workspace in a new temporary directory, closed when
// the test ends, and returns it and its directory.
func NewWorkspace(t testing.TB) (*editguard.Workspace, string) {
	t.Helper()
	dir := t.TempDir()
	w, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, w.Dir()
}

// WriteFile writes content to name under dir, making its directories.
func WriteFile(t testing.TB, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ReadFile returns the content of name under dir.
func ReadFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// SHA256Hex is the hex SHA-256 of b.
func SHA256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// LedgerRecords returns every record of w's ledger, oldest first.
func LedgerRecords(t *testing.T, w *editguard.Workspace) []*editguard.LedgerRecord {
	t.Helper()
	var recs []*editguard.LedgerRecord
	if err := w.Log(editguard.LogFilter{}, func(r *editguard.LedgerRecord) error {
		recs = append(recs, r)
		return nil
	}); err != nil {
		t.Fatalf("Log() error = %v", err)
	}
	return recs
}

// AssertNoTemp fails if a temporary file of a commit is left in dir.
func AssertNoTemp(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".egtmp") {
			t.Errorf("temporary file %s left in %s", e.Name(), dir)
		}
	}
}

// Open opens the workspace at dir as editguard.Open does, with
// Options.Faults set so that SetFaults and TempName reach it. Every
// workspace this package opens is opened through it.
func Open(dir string, opts *editguard.Options) (*editguard.Workspace, error) {
	var o editguard.Options
	if opts != nil {
		o = *opts
	}
	h := &faults.Hooks{}
	o.Faults = h
	w, err := editguard.Open(dir, &o)
	if err == nil {
		opened.Store(w, h)
	}
	return w, err
}

// opened holds the faults.Hooks of each workspace Open opened.
var opened sync.Map // *editguard.Workspace → *faults.Hooks

// hooksOf returns the faults.Hooks of w, which Open must have opened.
func hooksOf(w *editguard.Workspace) *faults.Hooks {
	h, ok := opened.Load(w)
	if !ok {
		panic("testutil: the workspace was not opened by testutil.Open")
	}
	return h.(*faults.Hooks)
}

// SetFaults installs fault-injection hooks on w: commit on the directory of
// every later commit's target, hist on its history store, led on its
// ledger. nil removes each. w must have been opened by Open.
func SetFaults(w *editguard.Workspace, commit atomicfile.Hook, hist history.Hook, led ledger.Hook) {
	hooksOf(w).Set(commit, hist, led)
}

// TempName is the temporary name w uses for a target named name. w must
// have been opened by Open.
func TempName(w *editguard.Workspace, name string) string { return hooksOf(w).TempName(name) }
