package testutil

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/history"
	"github.com/editguard/editguard/internal/statedir"
)

// CheckHistoryRestorable loads every version of every path in the history
// of the workspace at dir: the history must never name content it cannot
// give back. It returns the sums of the loaded contents of path.
func CheckHistoryRestorable(t *testing.T, dir, path string) map[string]bool {
	t.Helper()
	root, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	hd, err := statedir.Open(root, "", editguard.StateDir)
	if err == nil {
		defer hd.Close()
		hd, err = hd.Sub("history", true)
	}
	if err != nil {
		t.Fatalf("open history directory: %v", err)
	}
	defer hd.Close()
	st, err := history.Open(hd, nil)
	if err != nil {
		t.Fatalf("history.Open() error = %v", err)
	}
	defer st.Close()
	paths, err := st.Paths()
	if err != nil {
		t.Fatalf("Paths() error = %v", err)
	}
	sums := map[string]bool{}
	for _, p := range paths {
		vs, err := st.List(p)
		if err != nil {
			t.Fatalf("List(%s) error = %v", p, err)
		}
		for _, v := range vs {
			v2, data, err := st.Load(p, v.ID)
			if err != nil {
				t.Errorf("history names %s %s but cannot load it: %v", p, v.ID, err)
				continue
			}
			if p == path && !v2.Absent {
				sums[SHA256Hex(data)] = true
			}
		}
	}
	CheckNoSharedObjects(t, dir)
	return sums
}

// CheckNoSharedObjects fails if a history object is also a file of the
// workspace: an object linked into history (held.go) must be history's
// alone, or a program changing the file would change the version.
func CheckNoSharedObjects(t *testing.T, dir string) {
	t.Helper()
	for _, e := range SharedObjects(dir) {
		t.Errorf("history object %s", e)
	}
}

// SharedObjects lists the history objects that are also files of the
// workspace.
func SharedObjects(dir string) []string {
	type key struct{ dev, ino uint64 }
	inodes := func(root string, skip string) map[key]string {
		m := map[key]string{}
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() && skip != "" && p == skip {
				return filepath.SkipDir
			}
			if d.Type().IsRegular() {
				var st unix.Stat_t
				if unix.Stat(p, &st) == nil {
					m[key{uint64(st.Dev), st.Ino}] = p
				}
			}
			return nil
		})
		return m
	}
	objects := inodes(filepath.Join(dir, editguard.StateDir, "history", "objects"), "")
	var shared []string
	for k, p := range inodes(dir, filepath.Join(dir, editguard.StateDir)) {
		if o, ok := objects[k]; ok {
			shared = append(shared, o+" is the workspace's file "+p)
		}
	}
	return shared
}

// FDPath names what an open descriptor refers to.
func FDPath(fd int) string {
	p, _ := os.Readlink("/proc/self/fd/" + itoa(fd))
	return p
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
