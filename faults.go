package editguard

import (
	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/history"
	"github.com/editguard/editguard/internal/ledger"
)

// bindFaults hands Options.Faults, if set, what reaches w: its fault
// hooks and its temporary names. Only tests set it.
func (w *Workspace) bindFaults() {
	if f := w.opts.Faults; f != nil {
		f.Bind(func(commit atomicfile.Hook, hist history.Hook, led ledger.Hook) {
			setFaults(w, commit, hist, led)
		}, w.eng.TempName)
	}
}

// setFaults installs fault-injection hooks on w: commit on the directory of
// every later commit's target, hist on its history store, led on its
// ledger. nil removes each. Only tests call it.
func setFaults(w *Workspace, commit atomicfile.Hook, hist history.Hook, led ledger.Hook) {
	w.eng.SetHook(commit)
	w.hist.SetHook(hist)
	w.led.SetHook(led)
}
