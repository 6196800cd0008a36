//go:build unix && !darwin

package testutil

import "syscall"

// MaxRSSKiB is the peak resident size in KiB.
func MaxRSSKiB(ru *syscall.Rusage) int64 { return int64(ru.Maxrss) }
