package editguard

// SetSessionBaselines records bs, keyed as the session keys them, in s in
// one update, as if s had read every file they name.
func SetSessionBaselines(s *Session, bs map[string]baseline) error {
	return s.update(func(e baselineEditor) error {
		for k, b := range bs {
			if err := e.set(k, b); err != nil {
				return err
			}
		}
		return nil
	})
}

// Baseline is the type of a session's baseline, for the tests that
// write or decode its stored form.
type Baseline = baseline
