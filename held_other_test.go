//go:build unix && !linux

package editguard_test

import (
	"errors"
	"testing"
)

// heldCrashWorker needs the exchange and the leases of Linux.
func heldCrashWorker(dir string) error { return errors.New("linux only") }

// sharedObjects finds none: no object is ever linked here.
func sharedObjects(dir string) []string { return nil }

func checkHistoryRestorable(t *testing.T, dir, path string) map[string]bool { return nil }
