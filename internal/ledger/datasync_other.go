//go:build unix && !linux

package ledger

import "github.com/editguard/editguard/internal/statedir"

// datasync flushes f; without fdatasync(2), a full fsync.
func datasync(f *statedir.File) error { return f.Sync() }
