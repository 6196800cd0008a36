package editguard

// TempName is the temporary name w uses for a target named name.
func TempName(w *Workspace, name string) string { return w.tempName(name) }

// VersionContent returns the bytes of a history version of p.
func VersionContent(w *Workspace, p, id string) ([]byte, error) {
	resolved, err := w.resolve(p)
	if err != nil {
		return nil, err
	}
	_, data, err := w.loadVersion(p, resolved, id)
	return data, err
}
