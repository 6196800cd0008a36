package editguard

// VersionBytes returns the bytes that history version id of the file p
// keeps, or nil for a version that records that the file did not exist.
// It changes nothing and records nothing.
func (w *Workspace) VersionBytes(p, id string) ([]byte, error) {
	resolved, err := w.resolve(p)
	if err != nil {
		return nil, err
	}
	_, data, err := w.loadVersion(p, resolved, id)
	return data, err
}

// Current returns the file p as it is now: its state (SHA-256, size,
// mtime; Exists false when there is no file) and its bytes, observed the
// way a commit observes them. It records no read, so it is no baseline
// for a later change; pass the SHA-256 as a Precondition instead. A name
// that is not a regular file fails with NOT_A_FILE.
func (w *Workspace) Current(p string) (FileState, []byte, error) {
	t, err := w.openTarget(p)
	if err != nil {
		return FileState{}, nil, err
	}
	defer t.Close()
	obs, err := w.observe(t)
	if err != nil {
		return FileState{}, nil, err
	}
	if obs.Stat.Exists && !obs.Stat.Regular() {
		return FileState{}, nil, notAFile(p, obs)
	}
	return stateOf(obs), obs.Data, nil
}
