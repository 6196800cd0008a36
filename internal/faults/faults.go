// Package faults lets tests outside the root package reach into one
// workspace: inject faults into its commit, history and ledger, and name
// its temporary files. A test passes a *Hooks in the root's
// Options.Faults; Open binds it to the workspace it opens. Only tests make
// a Hooks: code outside the module cannot import this package, so it can
// pass only nil.
package faults

import (
	"sync"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/history"
	"github.com/editguard/editguard/internal/ledger"
)

// Hooks reaches the workspace it was bound to. Its zero value is ready to
// be passed to Open; its methods panic before that.
type Hooks struct {
	mu       sync.Mutex
	set      func(commit atomicfile.Hook, hist history.Hook, led ledger.Hook)
	tempName func(name string) string
}

// Bind is called by the root's Open with what reaches the workspace it
// opened: set installs the three hooks, tempName names a temporary file.
// A Hooks passed to a second Open reaches the last workspace opened.
func (h *Hooks) Bind(set func(commit atomicfile.Hook, hist history.Hook, led ledger.Hook), tempName func(name string) string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.set, h.tempName = set, tempName
}

// Set installs fault-injection hooks on the workspace: commit on the
// directory of every later commit's target, hist on its history store, led
// on its ledger. nil removes each.
func (h *Hooks) Set(commit atomicfile.Hook, hist history.Hook, led ledger.Hook) {
	h.bound().set(commit, hist, led)
}

// TempName is the temporary name the workspace uses for a target named
// name.
func (h *Hooks) TempName(name string) string { return h.bound().tempName(name) }

func (h *Hooks) bound() *Hooks {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.set == nil {
		panic("faults: Hooks used before a workspace was opened with it")
	}
	return &Hooks{set: h.set, tempName: h.tempName}
}
