//go:build unix && !linux

package testutil

import "testing"

// SharedObjects finds none: no object is ever linked here.
func SharedObjects(dir string) []string { return nil }

// CheckHistoryRestorable checks nothing here and returns no sums.
func CheckHistoryRestorable(t *testing.T, dir, path string) map[string]bool { return nil }
