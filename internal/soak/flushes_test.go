package soak

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseFlushes(t *testing.T) {
	for _, c := range []struct {
		line string
		want int64
		ok   bool
	}{
		{"  5391   120  412018   2150  95866  40219 2043688 109480 0 100152 124093 0 0 0 0 13200 12345\n", 13200, true},
		{"5391 120 412018 2150 95866 40219 2043688 109480 0 100152 124093\n", 0, false}, // before Linux 5.5
		{"", 0, false},
		{"1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 x 17", 0, false},
	} {
		got, ok := parseFlushes(c.line)
		if got != c.want || ok != c.ok {
			t.Errorf("parseFlushes(%q) = %d, %v; want %d, %v", c.line, got, ok, c.want, c.ok)
		}
	}
}

// TestDeviceFlushesPartition checks that a partition's flushes are read
// from its disk, in a sysfs laid out as Linux lays it out.
func TestDeviceFlushesPartition(t *testing.T) {
	dir := t.TempDir()
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	sys := t.TempDir()
	disk := filepath.Join(sys, "devices", "vdx")
	part := filepath.Join(disk, "vdx1")
	if err := os.MkdirAll(part, 0o755); err != nil {
		t.Fatal(err)
	}
	stat := func(flushes int) []byte {
		return []byte("1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 " + strconv.Itoa(flushes) + " 17\n")
	}
	os.WriteFile(filepath.Join(disk, "stat"), stat(700), 0o644)
	os.WriteFile(filepath.Join(part, "stat"), stat(3), 0o644)
	link := filepath.Join(sys, "dev", "block", strconv.FormatUint(uint64(unix.Major(uint64(st.Dev))), 10)+":"+strconv.FormatUint(uint64(unix.Minor(uint64(st.Dev))), 10))
	os.MkdirAll(filepath.Dir(link), 0o755)
	if err := os.Symlink(part, link); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(part, "partition"), []byte("1\n"), 0o644)
	if n, ok := DeviceFlushes(sys, dir); n != 700 || !ok {
		t.Errorf("partition: %d, %v; want its disk's 700", n, ok)
	}
	os.Remove(filepath.Join(part, "partition"))
	if n, ok := DeviceFlushes(sys, dir); n != 3 || !ok {
		t.Errorf("whole device: %d, %v; want 3", n, ok)
	}
}
