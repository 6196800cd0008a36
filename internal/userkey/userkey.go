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
// The key must stay outside every workspace: inside one, editguard's own
// listing tools would show it, its write tools could replace it, and "git
// add -A" would stage it. So a relative EDITGUARD_STATE_HOME is refused
// (it would name a different directory from every workspace), and so is a
// key directory inside the workspace being opened (LoadFor), or at or below
// a directory that holds .git or .editguard. That walk up from the key
// directory stops below HOME: the default location is under HOME, and a
// HOME that is itself a git repository (a dotfiles repository) is common
// and does not stage what it does not track; a workspace rooted at HOME
// (or above it) is refused by the workspace check instead.
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
	"strings"

	"github.com/editguard/editguard/internal/safeopen"
	"golang.org/x/sys/unix"
)

// Size is the key's length in bytes.
const Size = 32

// Variable is the environment variable that names the key's directory.
const Variable = "EDITGUARD_STATE_HOME"

// Dir returns the directory that holds the key. A relative
// EDITGUARD_STATE_HOME is a *PlaceError.
func Dir() (string, error) {
	if d := os.Getenv(Variable); d != "" {
		if !filepath.IsAbs(d) {
			return "", &PlaceError{Dir: d, Set: true, Why: "is a relative path, which names a directory in whatever directory editguard runs from"}
		}
		return filepath.Clean(d), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no directory for editguard's key: set HOME or %s: %w", Variable, err)
	}
	return filepath.Join(home, ".local", "state", "editguard"), nil
}

// ErrPlace is wrapped by every *PlaceError.
var ErrPlace = errors.New("editguard's key directory is inside a workspace")

// PlaceError refuses a key directory where a workspace's files are: the key
// would be listed, readable and replaceable by editguard's own tools there,
// and committed with the workspace.
type PlaceError struct {
	Dir string // the key directory, as EDITGUARD_STATE_HOME or the default names it
	Set bool   // EDITGUARD_STATE_HOME named it
	Why string // "is inside the workspace /w", ...
}

func (e *PlaceError) Error() string {
	fix := "set " + Variable + " to an absolute directory outside every workspace and repository"
	if e.Set {
		fix = fmt.Sprintf("%s=%s %s; %s, or unset it to use ~/.local/state/editguard", Variable, e.Dir, e.Why, fix)
	} else {
		fix = fmt.Sprintf("%s, the default, %s; %s", e.Dir, e.Why, fix)
	}
	return "editguard's key must stay outside every workspace, where its tools would list it and git would commit it: " + fix +
		" (move an existing key along: it authenticates the state editguard already wrote)"
}

func (e *PlaceError) Unwrap() error { return ErrPlace }

// Load returns the user's key, creating it (and its directory) on first use.
func Load() ([]byte, error) {
	return LoadFor("")
}

// LoadFor is Load for the workspace whose root is the absolute directory
// root (its real path, "" for none): a key directory inside it is refused,
// as is one inside any repository or other workspace (see the package
// comment), before anything is created.
func LoadFor(root string) ([]byte, error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	if err := CheckPlace(dir, root); err != nil {
		return nil, err
	}
	return LoadFrom(dir)
}

// CheckPlace returns a *PlaceError if the key directory dir is inside the
// workspace root ("" for none), or at or below a directory that holds .git
// or .editguard, up to (not including) HOME. Paths are compared by where
// their symlinks lead; dir need not exist yet.
func CheckPlace(dir, root string) error {
	set := os.Getenv(Variable) != ""
	real := realPath(dir)
	if root != "" {
		r := realPath(root)
		if within(real, r) {
			return &PlaceError{Dir: dir, Set: set, Why: "is inside the workspace " + root}
		}
	}
	home := ""
	if h, err := os.UserHomeDir(); err == nil && filepath.IsAbs(h) {
		home = realPath(h)
	}
	for p := real; p != home; p = filepath.Dir(p) {
		for _, marker := range []string{".git", ".editguard"} {
			if _, err := os.Lstat(filepath.Join(p, marker)); err == nil {
				return &PlaceError{Dir: dir, Set: set, Why: "is inside " + p + ", which holds " + marker}
			}
		}
		if p == filepath.Dir(p) {
			break
		}
	}
	return nil
}

// within reports whether p is dir or below it; both are clean and absolute.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// realPath returns the absolute path p with the symlinks of its longest
// existing prefix resolved.
func realPath(p string) string {
	p = filepath.Clean(p)
	rest := ""
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(p, rest)
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
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
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		fi, _ := f.Stat()
		kind := "a special file"
		if fi != nil {
			kind = safeopen.Kind(fi.Mode())
		}
		return nil, fmt.Errorf("editguard's key %s is not a regular file (%s): remove it and editguard makes a new one (state authenticated with the old one is then refused)", name, kind)
	}
	if int(st.Uid) != os.Geteuid() || st.Mode&0o077 != 0 {
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
