//go:build unix && !linux

package ledger

import "os"

// datasync flushes f; without fdatasync(2), a full fsync.
func datasync(f *os.File) error { return f.Sync() }
