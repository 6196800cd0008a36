//go:build unix && !darwin

package editguard_test

import "syscall"

// maxRSSKiB is the peak resident size in KiB.
func maxRSSKiB(ru *syscall.Rusage) int64 { return int64(ru.Maxrss) }
