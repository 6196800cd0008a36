package testutil

import "syscall"

// MaxRSSKiB is the peak resident size in KiB (darwin reports bytes).
func MaxRSSKiB(ru *syscall.Rusage) int64 { return ru.Maxrss >> 10 }
