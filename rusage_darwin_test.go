package editguard_test

import "syscall"

// maxRSSKiB is the peak resident size in KiB (darwin reports bytes).
func maxRSSKiB(ru *syscall.Rusage) int64 { return ru.Maxrss >> 10 }
