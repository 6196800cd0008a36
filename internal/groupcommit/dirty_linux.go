package groupcommit

import (
	"bytes"
	"os"
	"strconv"
)

// dirtyBytes returns how many bytes the machine holds dirty or under
// write-back (/proc/meminfo's Dirty and Writeback), and whether it could
// tell.
func dirtyBytes() (int64, bool) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	var total int64
	found := 0
	for line := range bytes.Lines(b) {
		for _, key := range [][]byte{[]byte("Dirty:"), []byte("Writeback:")} {
			rest, ok := bytes.CutPrefix(line, key)
			if !ok {
				continue
			}
			f := bytes.Fields(rest)
			if len(f) != 2 || string(f[1]) != "kB" {
				return 0, false
			}
			kb, err := strconv.ParseInt(string(f[0]), 10, 64)
			if err != nil {
				return 0, false
			}
			total += kb << 10
			found++
		}
	}
	return total, found == 2
}
