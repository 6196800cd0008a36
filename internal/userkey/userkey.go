//go:build unix

// Package userkey keeps the per-user secret that editguard authenticates its
// own state with.
//
// A workspace's state directory (.editguard) lives inside a repository, and a
// repository can ship one: git commits it with "add -f", an archive carries
// it. So nothing in the state directory can tell editguard that editguard
// wrote it. The secret that can lives outside every workspace, in the user's
// own state directory:
//
//	$EDITGUARD_STATE_HOME/key, else
//	$HOME/.local/state/editguard/key
//
// XDG_STATE_HOME is not consulted on purpose: agent clients start MCP
// servers and hooks with an environment of their own choosing (Codex passes
// a few variables, HOME among them), and a location that depends on a
// variable one of them drops would give one user two keys, and each half of
// their tools the other's state as foreign.
//
// The directory is made 0700 and the key file 0600; both must belong to the
// user and be reachable without a symlink in their last element, and the
// directory may not be writable by anyone else, or Load refuses them. The key
// is 32 random bytes, created once with an exclusive link so that processes
// starting at once agree on one key.
//
// What the key protects: a repository, an archive or another user cannot make
// state that editguard will act on, since they cannot compute its MACs. What
// it does not protect: a program running as the same user can read the key,
// as it can change the files directly.
package userkey

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Size is the key's length in bytes.
const Size = 32

// Dir returns the directory that holds the key.
func Dir() (string, error) {
	if d := os.Getenv("EDITGUARD_STATE_HOME"); d != "" {
		return filepath.Abs(d)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no directory for editguard's key: set HOME or EDITGUARD_STATE_HOME: %w", err)
	}
	return filepath.Join(home, ".local", "state", "editguard"), nil
}

// Load returns the user's key, creating it (and its directory) on first use.
func Load() ([]byte, error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	return LoadFrom(dir)
}

// LoadFrom is Load with the key's directory given.
func LoadFrom(dir string) ([]byte, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("editguard's key directory: %w", err)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("editguard's key directory %s: %w (it must be a directory, not a symlink)", dir, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("editguard's key directory %s: %w", dir, err)
	}
	if int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		return nil, fmt.Errorf("editguard's key directory %s must belong to you and be writable only by you (it is uid %d, mode %o)", dir, st.Uid, st.Mode&0o777)
	}
	for range 3 {
		k, err := read(fd, dir)
		if err == nil || !errors.Is(err, unix.ENOENT) {
			return k, err
		}
		if err := create(fd, dir); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("editguard's key %s: it keeps vanishing", filepath.Join(dir, "key"))
}

func read(dirfd int, dir string) ([]byte, error) {
	name := filepath.Join(dir, "key")
	fd, err := unix.Openat(dirfd, "key", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		if err == unix.ENOENT {
			return nil, err
		}
		return nil, fmt.Errorf("editguard's key %s: %w (it must be a regular file, not a symlink)", name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("editguard's key %s: %w", name, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != os.Geteuid() || st.Mode&0o077 != 0 {
		return nil, fmt.Errorf("editguard's key %s must be a regular file of yours that only you can read (mode 0600); it is mode %o, uid %d", name, st.Mode&0o7777, st.Uid)
	}
	k := make([]byte, Size+1)
	n, err := io.ReadFull(f, k)
	if n != Size || !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("editguard's key %s is not %d bytes long; remove it and editguard makes a new one (state authenticated with the old one is then refused)", name, Size)
	}
	return k[:Size], nil
}

// create makes the key: written whole and fsynced under a temporary name,
// then linked to "key", which fails with EEXIST if another process was
// first.
func create(dirfd int, dir string) error {
	k := make([]byte, Size)
	if _, err := rand.Read(k); err != nil {
		return err
	}
	var r [8]byte
	rand.Read(r[:])
	tmp := fmt.Sprintf(".key.%x.tmp", r)
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("create editguard's key in %s: %w", dir, err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = f.Write(k)
	if err == nil {
		err = f.Sync()
	}
	f.Close()
	if err == nil {
		err = unix.Linkat(dirfd, tmp, dirfd, "key", 0)
	}
	unix.Unlinkat(dirfd, tmp, 0)
	if err != nil {
		if err == unix.EEXIST {
			return err
		}
		return fmt.Errorf("create editguard's key in %s: %w", dir, err)
	}
	return unix.Fsync(dirfd)
}

// Derive returns HMAC-SHA256(key, label || 0 || data...), a key or tag for
// one purpose.
func Derive(key []byte, label string, data ...[]byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(label))
	m.Write([]byte{0})
	for _, d := range data {
		m.Write(d)
	}
	return m.Sum(nil)
}
