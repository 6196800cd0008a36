package soak

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// DeviceFlushes returns the number of flush requests the block device
// holding dir has completed since boot, as Linux counts them in the
// 16th field of its stat file in sysfs (under sys, normally "/sys"), and
// whether it could be read. A partition's flushes are counted on its disk.
func DeviceFlushes(sys, dir string) (int64, bool) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return 0, false
	}
	dev := filepath.Join(sys, "dev", "block", strconv.FormatUint(uint64(unix.Major(uint64(st.Dev))), 10)+":"+strconv.FormatUint(uint64(unix.Minor(uint64(st.Dev))), 10))
	if _, err := os.Stat(filepath.Join(dev, "partition")); err == nil {
		// The link names the partition's directory, inside its disk's.
		real, err := filepath.EvalSymlinks(dev)
		if err != nil {
			return 0, false
		}
		dev = filepath.Dir(real)
	}
	b, err := os.ReadFile(filepath.Join(dev, "stat"))
	if err != nil {
		return 0, false
	}
	return parseFlushes(string(b))
}

// parseFlushes returns the flush requests completed from a block device's
// stat line, if it has that field (Linux 5.5 and later).
func parseFlushes(stat string) (int64, bool) {
	f := strings.Fields(stat)
	if len(f) < 16 {
		return 0, false
	}
	n, err := strconv.ParseInt(f[15], 10, 64)
	return n, err == nil
}
