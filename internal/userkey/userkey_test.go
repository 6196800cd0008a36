//go:build unix

package userkey

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestLoadAgrees: processes (here goroutines) loading a key that does not
// exist yet all get the same one, and it is 0600 in a 0700 directory.
func TestLoadAgrees(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "editguard")
	keys := make([][]byte, 16)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := LoadFrom(dir)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		}()
	}
	wg.Wait()
	for _, k := range keys {
		if len(k) != Size || !bytes.Equal(k, keys[0]) {
			t.Fatalf("keys differ: %x, %x", k, keys[0])
		}
	}
	st, err := os.Stat(filepath.Join(dir, "key"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("key mode = %v, %v; want 0600", st.Mode(), err)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("directory mode = %v, %v; want 0700", st.Mode(), err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want the key alone", len(ents))
	}
}

// TestLoadRefuses: a key that others could read or replace, a symlink in
// its place, or a key of the wrong length is refused, not used or replaced.
func TestLoadRefuses(t *testing.T) {
	for name, setup := range map[string]func(dir string){
		"group-writable directory": func(dir string) { os.Chmod(dir, 0o770) },
		"readable by others":       func(dir string) { os.WriteFile(filepath.Join(dir, "key"), make([]byte, Size), 0o644) },
		"symlink":                  func(dir string) { os.Symlink("/etc/hostname", filepath.Join(dir, "key")) },
		"short":                    func(dir string) { os.WriteFile(filepath.Join(dir, "key"), []byte("short"), 0o600) },
		"long":                     func(dir string) { os.WriteFile(filepath.Join(dir, "key"), make([]byte, Size+1), 0o600) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			os.Chmod(dir, 0o700)
			setup(dir)
			before, _ := os.ReadFile(filepath.Join(dir, "key"))
			if k, err := LoadFrom(dir); err == nil {
				t.Fatalf("LoadFrom = %x, want an error", k)
			}
			if after, _ := os.ReadFile(filepath.Join(dir, "key")); !bytes.Equal(before, after) {
				t.Errorf("the key file changed")
			}
		})
	}
}

// TestDir follows EDITGUARD_STATE_HOME, then HOME, and not XDG_STATE_HOME,
// which clients drop from the environment of the servers they start.
func TestDir(t *testing.T) {
	t.Setenv("EDITGUARD_STATE_HOME", "")
	t.Setenv("XDG_STATE_HOME", "/xdg")
	t.Setenv("HOME", "/home/someone")
	if d, _ := Dir(); d != "/home/someone/.local/state/editguard" {
		t.Errorf("Dir() = %q with HOME and XDG_STATE_HOME", d)
	}
	t.Setenv("EDITGUARD_STATE_HOME", "/eg")
	if d, _ := Dir(); d != "/eg" {
		t.Errorf("Dir() = %q with EDITGUARD_STATE_HOME", d)
	}
}
