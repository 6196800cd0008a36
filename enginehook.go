package editguard

import (
	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/enginehook"
	"github.com/editguard/editguard/internal/history"
	"github.com/editguard/editguard/internal/ledger"
)

// The hooks tests outside this package use (internal/enginehook).
func init() {
	enginehook.SetFaults = func(w any, commit atomicfile.Hook, hist history.Hook, led ledger.Hook) {
		setFaults(w.(*Workspace), commit, hist, led)
	}
	enginehook.TempName = func(w any, name string) string { return w.(*Workspace).eng.TempName(name) }
}

// setFaults installs fault-injection hooks on w: commit on the directory of
// every later commit's target, hist on its history store, led on its
// ledger. nil removes each. Only tests call it.
func setFaults(w *Workspace, commit atomicfile.Hook, hist history.Hook, led ledger.Hook) {
	w.eng.SetHook(commit)
	w.hist.SetHook(hist)
	w.led.SetHook(led)
}
