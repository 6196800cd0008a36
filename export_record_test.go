package editguard

// SetUnrecorded turns history and the ledger off, for benchmarks that measure
// their cost.
func SetUnrecorded(w *Workspace, off bool) { w.unrecorded = off }
