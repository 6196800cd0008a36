package editguard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/editguard/editguard/internal/atomicfile"
	"golang.org/x/sys/unix"
)

// Putting an isolated command's changes into the tree.
//
// The upper layer of an overlay (Linux's overlayfs) over the root holds what
// the command changed: regular files and symbolic links it wrote or made
// (a file it changed is copied up whole), directories it made or that hold
// something it changed, whiteouts (character devices 0:0) for what it
// removed, and opaque directories (the xattr user.overlay.opaque or
// trusted.overlay.opaque is "y") for a directory it removed and made
// again, which hide everything the root had below them. EndIsolated walks
// it in path order and makes each change in the tree, each one atomic:
//
//   - A file or link is moved from the upper layer into the target's
//     directory under a temporary name (rename(2) when both are on one file
//     system, its bytes made durable by one syncfs of the upper layer's
//     file system before any change, none when the upper layer holds
//     nothing, else copied and fsynced), then
//     swapped in: over a file the
//     first checkpoint saw, by renameat2(RENAME_EXCHANGE) and a check that
//     the bytes displaced are the ones that checkpoint saw (else swapped
//     back); over nothing, by RENAME_NOREPLACE.
//   - A removal renames the file away, checks it the same way, and unlinks
//     it; a directory is removed file by file, and stays when anything in
//     it is kept.
//   - A path the first checkpoint did not cover (ignored, in .git, over
//     the size limit, a link or a directory) has no content to check: it
//     counts as changed meanwhile when its ctime is after the first
//     checkpoint began (less isolateSlack, as the kernel's clock for
//     timestamps runs behind).
//
// A change whose target changed meanwhile is not made: the tree keeps what
// is there, the command's version stays in the upper layer (named by the
// conflict's Kept), and the result lists it in Conflicts. The .editguard
// directory is the tree's own in the command's view (exec mounts it over
// the overlay), so nothing under it is in the upper layer; anything there
// is left alone.

// isolateSlack widens "changed since the command began" for paths judged by
// their ctime.
const isolateSlack = int64(20 * time.Millisecond)

// EndIsolated puts the changes of a command that ran isolated, whose
// overlay upper layer is the directory upper, into the tree (see above),
// then ends the command as End does, recording only the changes it put
// there (command_isolate.go). What it could not put there is in the
// result's Conflicts; what it put there leaves the upper layer.
func (c *Command) EndIsolated(ctx context.Context, upper string) (*CommandResult, error) {
	a := &upperApplier{w: c.s.w, before: c.act.Before, since: c.act.Before.StartNS - isolateSlack,
		upper: upper, applied: isolatedAttribution{}}
	a.apply()
	c.act.isolated = a.applied
	res, err := c.End(ctx)
	if err != nil {
		return nil, err
	}
	res.Conflicts = a.conflicts
	if a.unlisted > 0 {
		a.warn("%d more changes of the command were not put into the tree, as someone else had changed those files meanwhile; they are in %s", a.unlisted, upper)
	}
	for _, wn := range a.warnings {
		res.warn("%s", wn)
	}
	return res, nil
}

// upperApplier puts an upper layer's changes into the tree.
type upperApplier struct {
	w         *Workspace
	before    *cpManifest // the command's first checkpoint
	since     int64       // a ctime after this is a change made meanwhile
	upper     string
	applied   isolatedAttribution
	conflicts []CommandConflict
	unlisted  int // conflicts past maxListedChanges
	warnings  []string
}

func (a *upperApplier) warn(format string, args ...any) {
	if len(a.warnings) < maxWarnings {
		a.warnings = append(a.warnings, fmt.Sprintf(format, args...))
	}
}

// conflict lists the change op of p as not made, for reason; kept says
// its version stays in the upper layer. At most maxListedChanges are
// listed; the others are counted in a warning.
func (a *upperApplier) conflict(p, op, reason string, kept bool) {
	if len(a.conflicts) == maxListedChanges {
		a.unlisted++
		return
	}
	c := CommandConflict{Path: p, Op: op, Reason: reason}
	if kept {
		c.Kept = filepath.Join(a.upper, filepath.FromSlash(p))
	}
	a.conflicts = append(a.conflicts, c)
}

func (a *upperApplier) apply() {
	up, err := unix.Open(a.upper, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		a.warn("the command's changes could not be read from %s: %v; none was put into the tree", a.upper, err)
		return
	}
	defer unix.Close(up)
	if names, err := readNames(up); err == nil && len(slices.DeleteFunc(names, func(n string) bool { return n == StateDir })) == 0 {
		return // the command changed nothing: no flush, no directory to sync
	}
	// The command's bytes need not be durable: one syncfs of the upper
	// layer's file system makes them all so, before any is renamed into
	// the tree (a copy is fsynced on its own).
	if err := unix.Syncfs(up); err != nil {
		a.warn("flushing the command's changes failed: %v; none was put into the tree (they are in %s)", err, a.upper)
		return
	}
	root, err := unix.Dup(int(a.w.rootDir.Fd()))
	if err != nil {
		a.warn("opening the root failed: %v; none of the command's changes was put into the tree (they are in %s)", err, a.upper)
		return
	}
	defer unix.Close(root)
	a.dir(up, root, "")
}

// dir applies the entries of the upper directory up to the tree's
// directory real, both at rel ("" for the root).
func (a *upperApplier) dir(up, real int, rel string) {
	names, err := readNames(up)
	if err != nil {
		a.warn("reading the command's directory %s in %s failed: %v", rel, a.upper, err)
		return
	}
	changed := false
	for _, name := range names {
		p := path.Join(rel, name)
		if rel == "" && name == StateDir {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstatat(up, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue
		}
		changed = true
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFCHR:
			if st.Rdev == 0 {
				if a.remove(real, name, p) {
					unix.Unlinkat(up, name, 0)
				}
				continue
			}
			a.warn("%s: the command made a device file; it was not put into the tree", p)
		case unix.S_IFDIR:
			a.subdir(up, real, name, p, st.Mode&0o7777)
		case unix.S_IFREG, unix.S_IFLNK:
			a.put(up, real, name, p, &st)
		default:
			a.warn("%s: the command made a FIFO or socket; it was not put into the tree", p)
		}
	}
	if changed { // the entries put into it, or removed, durable
		unix.Fsync(real)
	}
}

// readNames lists the directory open as fd, in order.
func readNames(fd int) ([]string, error) {
	d, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(d), "dir")
	defer f.Close()
	names, err := f.Readdirnames(-1)
	slices.Sort(names)
	return names, err
}

// opaque reports whether the upper directory fd hides what the lower one
// held.
func opaque(fd int) bool {
	var b [4]byte
	for _, x := range []string{"user.overlay.opaque", "trusted.overlay.opaque"} {
		if n, err := unix.Fgetxattr(fd, x, b[:]); err == nil && n == 1 && b[0] == 'y' {
			return true
		}
	}
	return false
}

// subdir applies the upper directory name in up, at p, to the tree's
// directory real: made if it is not a directory there (what is there is
// removed first, if it is unchanged since the command began), emptied of
// what the upper one hides if opaque, then filled.
func (a *upperApplier) subdir(up, real int, name, p string, mode uint32) {
	u, err := unix.Openat(up, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		a.warn("%s: reading the command's directory failed: %v", p, err)
		return
	}
	defer unix.Close(u)
	isOpaque := opaque(u)
	var st unix.Stat_t
	err = unix.Fstatat(real, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		if !a.remove(real, name, p) {
			a.conflict(p, "made a directory", "something else is at its name, changed since the command began", true)
			return
		}
		err = unix.ENOENT
	}
	if errors.Is(err, unix.ENOENT) {
		if err := unix.Mkdirat(real, name, mode); err != nil && !errors.Is(err, unix.EEXIST) {
			a.warn("%s: making the command's directory failed: %v", p, err)
			return
		}
	}
	r, err := unix.Openat(real, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		a.conflict(p, "made a directory", fmt.Sprintf("the directory could not be opened in the tree (%v)", err), true)
		return
	}
	defer unix.Close(r)
	if isOpaque {
		// The command removed the directory and made it again: what the
		// tree has in it and the upper layer does not, it removed.
		have, _ := readNames(r)
		for _, n := range have {
			var x unix.Stat_t
			if unix.Fstatat(u, n, &x, unix.AT_SYMLINK_NOFOLLOW) == nil {
				continue
			}
			a.remove(r, n, path.Join(p, n))
		}
	}
	a.dir(u, r, p)
	// real is fsynced by the dir that called this, once its entries are
	// all done (this one's among them).
	// Emptied: all of it is in the tree. (What stays is the conflicts'.)
	unix.Unlinkat(up, name, unix.AT_REMOVEDIR)
}

// unchanged reports whether the tree's entry at p, whose stat is st, is
// as it was when the command began (see the section comment); for a file
// the first checkpoint saw, want is its content, which the swap checks.
func (a *upperApplier) unchanged(p string, st *unix.Stat_t) (ok bool, want string) {
	if e, seen := a.before.file(p); seen {
		return st.Mode&unix.S_IFMT == unix.S_IFREG, e.SHA256
	}
	return st.Ctim.Nano() <= a.since, ""
}

// remove removes name in real, at p, if it is unchanged since the command
// began: a directory entry by entry. It reports whether nothing is left
// there; what stays is listed as a conflict.
func (a *upperApplier) remove(real int, name, p string) bool {
	var st unix.Stat_t
	if err := unix.Fstatat(real, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return errors.Is(err, unix.ENOENT) // gone already: the same result
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		d, err := unix.Openat(real, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			a.conflict(p, "deleted", fmt.Sprintf("the directory could not be opened (%v)", err), false)
			return false
		}
		names, _ := readNames(d)
		all := true
		for _, n := range names {
			all = a.remove(d, n, path.Join(p, n)) && all
		}
		unix.Close(d)
		if !all {
			return false
		}
		if err := unix.Unlinkat(real, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
			a.conflict(p, "deleted", fmt.Sprintf("the directory could not be removed (%v): something was added to it", err), false)
			return false
		}
		return true
	}
	ok, want := a.unchanged(p, &st)
	if !ok {
		a.conflict(p, "deleted", "changed in the tree since the command began", false)
		return false
	}
	if want == "" {
		if err := unix.Unlinkat(real, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			a.warn("%s: removing it failed: %v", p, err)
			return false
		}
		if st.Mode&unix.S_IFMT == unix.S_IFREG {
			a.applied[p] = ""
		}
		return true
	}
	dup, err := unix.Dup(real)
	if err != nil {
		a.warn("%s: removing it failed: %v", p, err)
		return false
	}
	df := os.NewFile(uintptr(dup), "dir")
	defer df.Close()
	if _, err := atomicfile.NewDir(df).Remove(name, want, atomicfile.Options{}); err != nil {
		if errors.Is(err, atomicfile.ErrRaced) {
			a.conflict(p, "deleted", "changed in the tree since the command began", false)
		} else {
			a.warn("%s: removing it failed: %v", p, err)
		}
		return false
	}
	a.applied[p] = ""
	return true
}

// put puts the upper file or link name in up (stat ust), at p, into the
// tree's directory real, over what is there if that is unchanged since
// the command began.
func (a *upperApplier) put(up, real int, name, p string, ust *unix.Stat_t) {
	op, state := "changed", ""
	if ust.Mode&unix.S_IFMT == unix.S_IFLNK {
		op = "linked"
	} else {
		state = a.stateOf(up, name, ust)
	}
	want, replace := "", false
	var st unix.Stat_t
	switch err := unix.Fstatat(real, name, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case errors.Is(err, unix.ENOENT):
		if op == "changed" {
			op = "created"
		}
		if _, seen := a.before.file(p); seen {
			a.conflict(p, op, "deleted in the tree since the command began", true)
			return
		}
	case err != nil:
		a.conflict(p, op, fmt.Sprintf("its name in the tree could not be looked at (%v)", err), true)
		return
	case st.Mode&unix.S_IFMT == unix.S_IFDIR:
		if !a.remove(real, name, p) {
			a.conflict(p, op, "a directory is at its name, changed since the command began", true)
			return
		}
	default:
		var ok bool
		if ok, want = a.unchanged(p, &st); !ok {
			a.conflict(p, op, "changed in the tree since the command began", true)
			return
		}
		replace = true
	}
	tmp := atomicfile.TempName(name)
	moved, err := a.stage(up, real, name, tmp, ust)
	if err != nil {
		a.warn("%s: putting the command's version into the tree failed: %v (it is in %s)", p, err, a.upper)
		return
	}
	// back returns the staged file to the upper layer, or drops the copy.
	back := func() {
		if moved && unix.Renameat(real, tmp, up, name) == nil {
			return
		}
		unix.Unlinkat(real, tmp, 0)
	}
	switch {
	case !replace:
		if err := unix.Renameat2(real, tmp, real, name, unix.RENAME_NOREPLACE); err != nil {
			back()
			if errors.Is(err, unix.EEXIST) {
				a.conflict(p, op, "made in the tree since the command began", true)
			} else {
				a.warn("%s: putting the command's version into the tree failed: %v (it is in %s)", p, err, a.upper)
			}
			return
		}
	case want == "":
		if err := unix.Renameat(real, tmp, real, name); err != nil {
			back()
			a.warn("%s: putting the command's version into the tree failed: %v (it is in %s)", p, err, a.upper)
			return
		}
	default:
		if err := unix.Renameat2(real, tmp, real, name, unix.RENAME_EXCHANGE); err != nil {
			back()
			a.warn("%s: putting the command's version into the tree failed: %v (it is in %s)", p, err, a.upper)
			return
		}
		// tmp is what the tree had: the content the checkpoint saw, or
		// someone else's, which goes back.
		if sum, err := hashAt(real, tmp); err != nil || sum != want {
			if err := unix.Renameat2(real, tmp, real, name, unix.RENAME_EXCHANGE); err != nil {
				a.warn("%s: swapping someone else's version back failed: %v; it is at %s next to it", p, err, tmp)
				return
			}
			back()
			a.conflict(p, op, "changed in the tree since the command began", true)
			return
		}
		unix.Unlinkat(real, tmp, 0)
	}
	if !moved {
		unix.Unlinkat(up, name, 0)
	}
	if op == "linked" {
		if e, _ := a.before.file(p); replace && e.SHA256 != "" {
			a.applied[p] = "" // a file replaced by a link is deleted
		}
		return
	}
	a.applied[p] = state
}

// stateOf is the state (see unchecked) of the upper file name in up, as a
// checkpoint would find it: its content's SHA-256 up to MaxFileSize.
func (a *upperApplier) stateOf(up int, name string, st *unix.Stat_t) string {
	if st.Size > a.w.opts.MaxFileSize {
		return unchecked
	}
	sum, err := hashAt(up, name)
	if err != nil {
		return unchecked
	}
	return sum
}

// stage puts the upper file or link name in up into real under tmp, made
// durable: moved if both are on one file system (moved true; apply's
// syncfs made its bytes durable), else copied and fsynced.
func (a *upperApplier) stage(up, real int, name, tmp string, st *unix.Stat_t) (moved bool, err error) {
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(up, name, buf)
		if err != nil {
			return false, err
		}
		return false, unix.Symlinkat(string(buf[:n]), real, tmp)
	}
	src, err := unix.Openat(up, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return false, err
	}
	defer unix.Close(src)
	if err := unix.Renameat(up, name, real, tmp); err == nil {
		stripOverlayXattrs(src)
		return true, nil // durable: apply's syncfs
	} else if !errors.Is(err, unix.EXDEV) {
		return false, err
	}
	dst, err := unix.Openat(real, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(st.Mode&0o777))
	if err != nil {
		return false, err
	}
	_, err = io.Copy(fdIO(dst), fdIO(src))
	if err == nil {
		err = unix.Fchmod(dst, st.Mode&0o7777)
	}
	if err == nil {
		err = unix.Fsync(dst)
	}
	unix.Close(dst)
	if err != nil {
		unix.Unlinkat(real, tmp, 0)
	}
	return false, err
}

// stripOverlayXattrs removes from the file open as fd the attributes
// overlayfs gave it in the upper layer (user.overlay.origin on a copied-up
// file, and the like): they mean nothing in the tree.
func stripOverlayXattrs(fd int) {
	buf := make([]byte, 4096)
	n, err := unix.Flistxattr(fd, buf)
	if err != nil || n <= 0 {
		return
	}
	for _, x := range strings.Split(string(buf[:n]), "\x00") {
		if strings.HasPrefix(x, "user.overlay.") || strings.HasPrefix(x, "trusted.overlay.") {
			unix.Fremovexattr(fd, x)
		}
	}
}

// fdIO reads and writes a descriptor the caller owns.
type fdIO int

func (fd fdIO) Read(p []byte) (int, error) {
	for {
		n, err := unix.Read(int(fd), p)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (fd fdIO) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		n, err := unix.Write(int(fd), p[done:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return done, err
		}
		done += n
	}
	return done, nil
}

// hashAt hashes the regular file name in dir without following a link.
func hashAt(dir int, name string) (string, error) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", errors.New("not a regular file")
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
