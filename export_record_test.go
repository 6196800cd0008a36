package editguard

// SetUnrecorded turns history and the ledger off, for benchmarks that measure
// their cost.
func SetUnrecorded(w *Workspace, off bool) { w.unrecorded = off }

// TempName is the temporary name w uses for a target named name.
func TempName(w *Workspace, name string) string { return w.tempName(name) }
