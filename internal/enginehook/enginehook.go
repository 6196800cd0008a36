// Package enginehook lets tests outside the root package reach into a
// workspace: inject faults into its commit, history and ledger, and name
// its temporary files. Only tests call it.
//
// The root package fills the variables in at init (enginehook.go there).
// This package cannot import the root package, which imports it, so a
// workspace is passed as an any holding an *editguard.Workspace;
// internal/testutil wraps each variable in a function that takes the type.
package enginehook

import (
	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/history"
	"github.com/editguard/editguard/internal/ledger"
)

var (
	// SetFaults installs fault-injection hooks on the workspace w: commit
	// on the directory of every later commit's target, hist on its history
	// store, led on its ledger. nil removes each.
	SetFaults func(w any, commit atomicfile.Hook, hist history.Hook, led ledger.Hook)

	// TempName is the temporary name the workspace w uses for a target
	// named name.
	TempName func(w any, name string) string
)
