//go:build unix

package userkey

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

// TestPlaceRefused: a key directory that is relative, inside the workspace
// (directly or through a symlink), or inside another repository or
// workspace is refused before anything is created, with an error naming
// EDITGUARD_STATE_HOME and what to set instead.
func TestPlaceRefused(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	ws := filepath.Join(base, "ws")
	repo := filepath.Join(base, "repo")
	other := filepath.Join(base, "other")
	for _, d := range []string{home, filepath.Join(ws, "sub"), filepath.Join(repo, ".git"), filepath.Join(other, ".editguard"), filepath.Join(base, "outside")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(ws, "sub"), filepath.Join(base, "outside", "link")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	for name, c := range map[string]struct{ dir, want string }{
		"relative":               {"rel/keys", "is a relative path"},
		"dot":                    {".", "is a relative path"},
		"in the workspace":       {filepath.Join(ws, "keys"), "is inside the workspace " + ws},
		"the workspace itself":   {ws, "is inside the workspace " + ws},
		"through a symlink":      {filepath.Join(base, "outside", "link", "keys"), "is inside the workspace " + ws},
		"in a repository":        {filepath.Join(repo, "a", "keys"), "is inside " + repo + ", which holds .git"},
		"in another workspace":   {filepath.Join(other, "keys"), "is inside " + other + ", which holds .editguard"},
		"in a repository's .git": {filepath.Join(repo, ".git", "keys"), "which holds .git"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(Variable, c.dir)
			k, err := LoadFor(ws)
			var pe *PlaceError
			if !errors.As(err, &pe) || !errors.Is(err, ErrPlace) {
				t.Fatalf("LoadFor = %x, %v; want a *PlaceError", k, err)
			}
			msg := err.Error()
			for _, want := range []string{c.want, Variable + "=", "set " + Variable + " to an absolute directory outside every workspace"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not say %q", msg, want)
				}
			}
			if filepath.IsAbs(c.dir) {
				if _, err := os.Stat(filepath.Join(c.dir, "key")); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("a key was made at the refused place: %v", err)
				}
			} else if _, err := os.Stat(c.dir); !errors.Is(err, fs.ErrNotExist) && c.dir != "." {
				t.Errorf("the relative directory was made: %v", err)
			}
		})
	}
	t.Run("default under a home that is the workspace", func(t *testing.T) {
		t.Setenv(Variable, "")
		_, err := LoadFor(home)
		if !errors.Is(err, ErrPlace) || !strings.Contains(err.Error(), "the default, is inside the workspace "+home) {
			t.Fatalf("LoadFor(HOME) = %v; want the default refused as inside the workspace", err)
		}
		if _, err := os.Stat(filepath.Join(home, ".local")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the default directory was made inside the workspace: %v", err)
		}
	})
}

// TestPlaceHomeRepository: a HOME that is itself a git repository (a
// dotfiles repository) or a workspace does not refuse the default key
// directory under it, nor one of EDITGUARD_STATE_HOME's under HOME
// outside any other repository; a repository between HOME and the key
// directory does.
func TestPlaceHomeRepository(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	ws := filepath.Join(home, "src", "project")
	for _, d := range []string{filepath.Join(home, ".git"), filepath.Join(home, ".editguard"), filepath.Join(ws, ".git")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	t.Setenv(Variable, "")
	k, err := LoadFor(ws)
	if err != nil || len(k) != Size {
		t.Fatalf("the default key under a HOME with .git: %x, %v", k, err)
	}
	if _, err := os.Stat(filepath.Join(home, ".local", "state", "editguard", "key")); err != nil {
		t.Errorf("no key at the default place: %v", err)
	}
	t.Setenv(Variable, filepath.Join(home, "keys"))
	if _, err := LoadFor(ws); err != nil {
		t.Errorf("EDITGUARD_STATE_HOME under a HOME with .git: %v", err)
	}
	t.Setenv(Variable, filepath.Join(home, "src", "project", "keys"))
	if _, err := LoadFor(filepath.Join(base, "elsewhere")); !errors.Is(err, ErrPlace) {
		t.Errorf("a key directory in a repository under HOME: %v, want refused", err)
	}
}

// TestLoadFIFO: a FIFO where the key belongs fails the load at once (an
// open without O_NONBLOCK would wait for a writer for ever), saying what
// it is, and is left in place.
func TestLoadFIFO(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	key := filepath.Join(dir, "key")
	if err := unix.Mkfifo(key, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := LoadFrom(dir); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "is not a regular file (a FIFO)") {
			t.Errorf("LoadFrom = %v, want it to say the key is a FIFO", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("LoadFrom blocked on a FIFO for 20 s")
	}
	if st, err := os.Lstat(key); err != nil || st.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v, %v", st, err)
	}
}
