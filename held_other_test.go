//go:build unix && !linux

package editguard_test

import "errors"

// heldCrashWorker needs the exchange and the leases of Linux.
func heldCrashWorker(dir string) error { return errors.New("linux only") }
