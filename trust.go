package editguard

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/editguard/editguard/internal/safeopen"
	"github.com/editguard/editguard/internal/statedir"
	"github.com/editguard/editguard/internal/userkey"
	"golang.org/x/sys/unix"
)

// Trusted state.
//
// A repository can ship a .editguard directory (git commits it with
// "add -f", an archive carries it), and state that editguard acts on at
// Open (transaction journals, ledger intents, history) would then be the
// repository's to choose. So editguard acts only on state it can
// authenticate with a secret the repository cannot know: the user's key
// (package userkey), kept outside every workspace.
//
// The owner stamp, .editguard/owner, holds a random workspace id and its MAC
// under the user's key; it is written when editguard creates the state
// directory (or adopts an empty one). The workspace key is HMAC(user key,
// "workspace", id): a state directory made by another user, or by no one,
// verifies nothing. A state directory without a valid stamp is foreign: Open
// refuses it with UNSAFE_STATE, acting on nothing in it, unless asked to set
// it aside (Options.SetAsideUntrusted, "editguard state --set-aside"), which
// moves every entry into .editguard/untrusted-<time>/ and starts afresh.
// Nothing is deleted. A copy of the user's own workspace keeps its stamp:
// its state describes the copied files. From the workspace key come:
//
//   - the MAC of every transaction journal (apply.go), the seal of every
//     intent (internal/engine/intent.go) and the seal of every command's active record
//     with its manifest (command.go), checked before recovery or End acts
//     on them;
//   - the names of temporary files (internal/engine/temp.go).

// ownerFile is the owner stamp's name in the state directory.
const ownerFile = "owner"

// ownerMagic begins the owner stamp.
const ownerMagic = "editguard-owner v1 "

// untrustedPrefix begins the names of the directories that foreign state is
// set aside in.
const untrustedPrefix = "untrusted-"

// trust loads the user's key, derives the workspace's keys and checks (or
// writes) the owner stamp.
func (w *Workspace) trust() error {
	uk, err := userkey.LoadFor(w.dir)
	if err != nil {
		return keyError(err)
	}
	w.ukey = uk
	if w.ownerValid() {
		w.noteTracked()
		return nil
	}
	// Under the directory's lock, so that processes opening a new
	// workspace at once agree: the first stamps it, the others see the
	// stamp.
	fd := int(w.state.File().Fd())
	if err := flockWait(fd); err != nil {
		return stateError("lock state directory", err)
	}
	defer unix.Flock(fd, unix.LOCK_UN)
	if w.ownerValid() {
		w.noteTracked()
		return nil
	}
	ents, err := w.state.ReadDir()
	if err != nil {
		return stateError("read state directory", err)
	}
	if adoptable(w.state, ents) {
		return w.writeOwner()
	}
	tracked := w.gitTracksState()
	if !w.opts.SetAsideUntrusted {
		return foreignState(ents, tracked)
	}
	aside, err := w.setAside(ents)
	if err != nil {
		return stateError("set aside the state directory editguard did not write", err)
	}
	msg := fmt.Sprintf("%s/ held state editguard did not write for this user on this machine (it came with the repository, or from a copy); nothing in it was acted upon, and it was moved to %s/%s/", StateDir, StateDir, aside)
	if tracked {
		msg += "; git tracks files under .editguard/: remove them from the repository (git rm -r --cached .editguard)"
	}
	w.warn(CodeUnsafeState, StateDir+"/"+aside, msg)
	return w.writeOwner()
}

// checkOwner verifies the owner stamp of an existing state directory and
// writes nothing: a foreign one is refused as Open refuses it.
func checkOwner(state *statedir.Dir, root string) error {
	uk, err := userkey.LoadFor(root)
	if err != nil {
		return keyError(err)
	}
	w := &Workspace{state: state, ukey: uk}
	if w.ownerValid() {
		return nil
	}
	ents, err := state.ReadDir()
	if err != nil {
		return stateError("read state directory", err)
	}
	if adoptable(state, ents) {
		return nil
	}
	return foreignState(ents, false)
}

// keyError is the UNSAFE_STATE error of a key that cannot be loaded for
// the workspace.
func keyError(err error) error {
	hint := "make the key's directory usable (or set " + userkey.Variable + " to an absolute directory of yours outside every workspace), then retry"
	if errors.Is(err, userkey.ErrPlace) {
		hint = "place the key's directory as the message says, then retry"
	}
	return newError(CodeUnsafeState, "", "editguard cannot load its key, so it cannot tell its own state from a repository's: "+err.Error(), hint, err)
}

// derive returns the workspace's key for one purpose.
func (w *Workspace) derive(purpose string, data ...[]byte) []byte {
	return userkey.Derive(w.wkey, purpose, data...)
}

// mac returns the hex MAC of data for purpose under the workspace key.
func (w *Workspace) mac(purpose string, data ...[]byte) string {
	return hex.EncodeToString(w.derive(purpose, data...))
}

// ownerValid reads the owner stamp and, if it verifies, sets the
// workspace's keys from it.
func (w *Workspace) ownerValid() bool {
	b, err := w.state.ReadFile(ownerFile)
	if err != nil || len(b) > 256 {
		return false
	}
	f := strings.Fields(strings.TrimPrefix(string(b), ownerMagic))
	if !strings.HasPrefix(string(b), ownerMagic) || len(f) != 2 || len(f[0]) != 32 {
		return false
	}
	want := hex.EncodeToString(userkey.Derive(w.ukey, "owner", []byte(f[0])))
	if !hmac.Equal([]byte(f[1]), []byte(want)) {
		return false
	}
	w.setKeys(f[0])
	return true
}

// writeOwner stamps the state directory with a new workspace id.
func (w *Workspace) writeOwner() error {
	id := make([]byte, 16)
	rand.Read(id)
	hid := hex.EncodeToString(id)
	stamp := ownerMagic + hid + " " + hex.EncodeToString(userkey.Derive(w.ukey, "owner", []byte(hid))) + "\n"
	if err := w.state.WriteFile(ownerFile, []byte(stamp), 0o644); err != nil {
		return stateError("write "+StateDir+"/"+ownerFile, err)
	}
	w.setKeys(hid)
	return nil
}

func (w *Workspace) setKeys(id string) {
	w.wkey = userkey.Derive(w.ukey, "workspace", []byte(id))
	w.key = w.derive("temporary names")
}

// adoptable reports whether a state directory without a stamp holds nothing
// that could be acted upon: it is empty, or holds only editguard's
// .gitignore, as a directory that another process is creating right now
// does.
func adoptable(d *statedir.Dir, ents []fs.DirEntry) bool {
	for _, e := range ents {
		if e.Name() != ".gitignore" {
			return false
		}
		b, err := d.ReadFile(".gitignore")
		if err != nil || string(b) != stateIgnore {
			return false
		}
	}
	return true
}

// ErrForeignState is wrapped by the error Open returns for a state directory
// that editguard did not write for this user on this machine.
var ErrForeignState = fmt.Errorf("state directory not written by editguard for this user on this machine: %w", statedir.ErrUnsafe)

func foreignState(ents []fs.DirEntry, tracked bool) error {
	var names []string
	for _, e := range ents {
		if len(names) == 8 {
			names = append(names, "...")
			break
		}
		names = append(names, e.Name())
	}
	msg := fmt.Sprintf("%s/ holds state editguard did not write for this user on this machine (%s): it came with the repository, an archive or a copy, and nothing in it is acted upon", StateDir, strings.Join(names, ", "))
	if tracked {
		msg += "; git tracks files under .editguard/, which no repository should"
	}
	e := newError(CodeUnsafeState, "", msg,
		"look at it, then move it aside with 'editguard state --set-aside' (it goes to .editguard/untrusted-<time>/ and editguard starts afresh) or remove .editguard/", ErrForeignState)
	e.Details["entry"] = StateDir
	e.Details["git_tracked"] = tracked
	return e
}

// setAside moves every entry of the state directory into a new directory
// untrusted-<time> in it, and returns that directory's name. Entries are
// renamed, never followed or opened.
func (w *Workspace) setAside(ents []fs.DirEntry) (string, error) {
	fd := int(w.state.File().Fd())
	name := untrustedPrefix + time.Now().UTC().Format("20060102T150405.000000000Z")
	if err := unix.Mkdirat(fd, name, 0o700); err != nil {
		return "", err
	}
	sub, err := w.state.Sub(name, false)
	if err != nil {
		return "", err
	}
	defer sub.Close()
	for _, e := range ents {
		if err := unix.Renameat(fd, e.Name(), int(sub.File().Fd()), e.Name()); err != nil && !errors.Is(err, unix.ENOENT) {
			return "", fmt.Errorf("move %s/%s: %w", StateDir, e.Name(), err)
		}
	}
	if err := sub.Sync(); err != nil {
		return "", err
	}
	return name, w.state.Sync()
}

// noteTracked adds a warning if git tracks files of the state directory.
func (w *Workspace) noteTracked() {
	if w.gitTracksState() {
		w.warn("", StateDir, "git tracks files under .editguard/ (editguard's local state): remove them from the repository with 'git rm -r --cached .editguard', or the next clone ships them")
	}
}

// gitTracksState reports whether the root's git index names a file under
// .editguard/. It reads the index file without running git (whose
// configuration the repository controls) and looks for ".editguard/"
// anywhere in it; a false positive is only a warning. An index that
// cannot be read, is over 256 MiB or is not a regular file (a FIFO there
// would block the open for ever: safeopen) is as none: the answer only
// adds a warning.
func (w *Workspace) gitTracksState() bool {
	b, err := safeopen.ReadFileIn(w.root, ".git/index", 256<<20)
	if err != nil {
		return false
	}
	return bytes.Contains(b, []byte(StateDir+"/"))
}

// flockWait takes an exclusive flock on fd, waiting for it.
func flockWait(fd int) error {
	for {
		err := unix.Flock(fd, unix.LOCK_EX)
		if err != unix.EINTR {
			return err
		}
	}
}
