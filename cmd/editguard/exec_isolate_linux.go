package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/mounts"
	"golang.org/x/sys/unix"
)

// Isolated commands (Linux).
//
// exec runs the command in a user and mount namespace of its own, where an
// overlay is mounted on the workspace root: the root itself as its lower
// layer, and as its upper layer a directory of editguard's outside the
// tree (isolateBase). The command sees the same paths and the same files;
// what it writes goes to the upper layer only, so when it ends the upper
// layer holds exactly its changes, whatever else changed in the tree
// meanwhile, and editguard's EndIsolated puts them into the tree and
// records them alone.
//
// Go cannot run code between clone and exec, so exec starts itself
// (isolateHelper, a hidden entry point) in the new namespaces. The helper
// makes every mount private, mounts the overlay (userxattr: the kernel
// allows an overlay in a user namespace that way), mounts the tree's own
// .editguard over the overlay's (an editguard run by the command shares
// the tree's locks, ledger and sessions), moves to the working directory
// again (now through the overlay), and execs the command. A user other
// than root keeps their uid and gid (each mapped to itself), with
// CAP_SYS_ADMIN in the namespace only as an ambient capability of the
// helper, cleared before the command's exec, so the command runs with no
// capability; other users' and groups' ids show as the overflow id
// (65534, nobody), and a file whose owner or group is not mapped cannot be
// changed (the kernel cannot copy it up: EOVERFLOW). Root maps every id to
// itself and is root in the namespace. Neither may call setgroups.
//
// The helper's process is the command's (exec keeps the pid), so signals,
// process groups and the exit status are as for a command run directly.
// The helper reports a failure to set up on a pipe (fd 3, closed on exec):
// exec then runs the command in the tree itself, as without isolation.
// Set up, it writes one NUL byte there and waits for a byte on fd 4 before
// its exec: meanwhile exec puts the overlay's directory, the command's pid
// and mount namespace into the command's active record
// (editguard.Command.Isolate), so that if exec is killed while the command
// runs, the next editguard process to begin or recover commands puts the
// command's changes into the tree and records them as its own. If exec is
// gone before its word, the command does not run.

// isolateEntry is the hidden first argument that runs isolateHelper.
const isolateEntry = "__isolated-exec"

// isolation is the overlay directory of one command: upper and work under
// dir.
type isolation struct {
	dir, upper, work string
	root             string // the workspace root, absolute, symlinks resolved
	mntNS            string // the command's mount namespace, once started

	// The helper, once started (start), and exec's ends of its report
	// pipe (fd 3) and its go-ahead pipe (fd 4).
	cmd      *exec.Cmd
	rep, goW *os.File

	// pending is dir's file "pending", locked while this process may
	// still drop the directory; nil once claimed (see sweepIsolations).
	pending *os.File
}

// pendingName is the file a run directory holds, locked by its exec,
// until a command's record names the directory (claim).
const pendingName = "pending"

// newIsolation makes the overlay's directories for the workspace root.
func newIsolation(root string) (*isolation, error) {
	if m := mountBelow(root); m != "" {
		// The overlay's lower layer is the root's own file system: the
		// command would see what is under that mount, not in it.
		return nil, fmt.Errorf("a file system is mounted inside the workspace, at %s", quoteName(m))
	}
	base, err := isolateBase(root)
	if err != nil {
		return nil, err
	}
	sweepIsolations(base)
	dir, pending, err := makeRunDir(base)
	if err != nil {
		return nil, err
	}
	iso := &isolation{dir: dir, upper: filepath.Join(dir, "upper"), work: filepath.Join(dir, "work"), root: root, pending: pending}
	for _, d := range []string{iso.upper, iso.work} {
		if err := os.Mkdir(d, 0o700); err != nil {
			iso.discard()
			return nil, err
		}
	}
	return iso, nil
}

// makeRunDir makes a run directory under base: made as ".new-*", its
// file "pending" created and locked, then renamed "run-*", so that a
// run directory is never seen by sweepIsolations before its lock is
// held. It returns the directory and its locked "pending".
func makeRunDir(base string) (string, *os.File, error) {
	tmp, err := os.MkdirTemp(base, ".new-")
	if err != nil {
		return "", nil, err
	}
	f, err := os.OpenFile(filepath.Join(tmp, pendingName), os.O_RDWR|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err == nil {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		os.RemoveAll(tmp)
		return "", nil, err
	}
	dir := filepath.Join(base, "run-"+strings.TrimPrefix(filepath.Base(tmp), ".new-"))
	if unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, dir, unix.RENAME_NOREPLACE) != nil {
		// A run directory of that name (or no rename): left under its
		// temporary name, never swept, as one whose exec was killed in
		// this very step would be.
		return tmp, f, nil
	}
	return dir, f, nil
}

// sweepIsolations removes the run directories under base that an exec
// made and left before a command's record named them: an exec killed
// while it took the command's first checkpoint, whose command never ran
// (the helper runs it only on exec's word, given after the record is
// written). Such a directory still holds "pending", and its lock is free
// once the exec that made it is gone; a directory that lost "pending"
// (claim) belongs to a command's record, which recovery removes, and one
// whose lock is held is another exec's at work.
func sweepIsolations(base string) {
	ents, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, d := range ents {
		if !d.IsDir() || !strings.HasPrefix(d.Name(), "run-") {
			continue
		}
		dir := filepath.Join(base, d.Name())
		p := filepath.Join(dir, pendingName)
		f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
		if err != nil {
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil && samePending(f, p) {
			(&isolation{dir: dir, work: filepath.Join(dir, "work")}).discard()
		}
		f.Close()
	}
}

// samePending reports whether f, locked, is still the file at p: the
// lock was not taken on a "pending" its exec unlinked meanwhile (claim).
func samePending(f *os.File, p string) bool {
	var a, b unix.Stat_t
	if unix.Fstat(int(f.Fd()), &a) != nil || unix.Lstat(p, &b) != nil {
		return false
	}
	return a.Dev == b.Dev && a.Ino == b.Ino && a.Mode&unix.S_IFMT == unix.S_IFREG
}

// claim hands the run directory over to the command's record, right
// before the record names it: from then on recovery, not
// sweepIsolations, removes it. An exec killed between claim and the
// record leaves the directory in place, never a command's changes lost.
func (iso *isolation) claim() {
	if iso.pending != nil {
		os.Remove(filepath.Join(iso.dir, pendingName))
		iso.pending.Close()
		iso.pending = nil
	}
}

// mountBelow returns a mount point strictly inside root, "" if none (or if
// the mount table cannot be read: the overlay mount then tells).
func mountBelow(root string) string {
	ms, err := mounts.Below(root)
	if err != nil || len(ms) == 0 {
		return ""
	}
	return ms[0].Point
}

// isolateBase returns the directory the overlay directories go under:
// $EDITGUARD_ISOLATE_DIR, else the user's cache directory's
// editguard/isolate, else one in the temporary directory; never one in the
// root (the kernel does not allow layers inside each other), and
// preferably one on the root's file system, where the command's files are
// moved into the tree rather than copied.
func isolateBase(root string) (string, error) {
	var cands []string
	if d := os.Getenv("EDITGUARD_ISOLATE_DIR"); d != "" {
		cands = append(cands, d)
	}
	if d, err := os.UserCacheDir(); err == nil {
		cands = append(cands, filepath.Join(d, "editguard", "isolate"))
	}
	cands = append(cands, filepath.Join(os.TempDir(), fmt.Sprintf("editguard-isolate-%d", os.Getuid())))
	var rootSt unix.Stat_t
	if err := unix.Stat(root, &rootSt); err != nil {
		return "", err
	}
	first, lastErr := "", error(errors.New("no directory for the overlay"))
	for _, c := range cands {
		abs, err := filepath.Abs(c)
		if err != nil {
			continue
		}
		if err := os.MkdirAll(abs, 0o700); err != nil {
			lastErr = err
			continue
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			lastErr = err
			continue
		}
		if rel, err := filepath.Rel(root, real); err == nil && (rel == "." || !strings.HasPrefix(rel, "..")) {
			lastErr = fmt.Errorf("%s is inside the workspace", real)
			continue
		}
		var st unix.Stat_t
		if err := unix.Lstat(real, &st); err != nil {
			lastErr = err
			continue
		}
		if st.Uid != uint32(os.Getuid()) || st.Mode&0o022 != 0 {
			lastErr = fmt.Errorf("%s is not a private directory of this user", real)
			continue
		}
		if st.Dev == rootSt.Dev {
			return real, nil
		}
		if first == "" {
			first = real
		}
	}
	if first != "" {
		return first, nil
	}
	return "", lastErr
}

// start starts the helper for argv: it mounts the overlay, reports on
// fd 3 and waits for exec's word on fd 4 (run gives it) before it runs the
// command. Started before the command is begun, its start and mount go on
// while the command's first checkpoint is taken; exec catches no signal
// meanwhile, so one that ends exec ends the helper's wait, and the command
// never runs. An error is why it could not be started.
func (iso *isolation) start(e *env, argv []string) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	rep, repW, err := os.Pipe()
	if err != nil {
		return err
	}
	goR, goW, err := os.Pipe()
	if err != nil {
		rep.Close()
		repW.Close()
		return err
	}
	cmd := exec.Command("/proc/self/exe", append([]string{isolateEntry, iso.root, iso.upper, iso.work, wd, "--"}, argv...)...)
	cmd.Args[0] = "editguard"
	cmd.ExtraFiles = []*os.File{repW, goR}
	uid, gid := os.Getuid(), os.Getgid()
	attr := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS}
	if uid == 0 {
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1<<32 - 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1<<32 - 1}}
	} else {
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_DAC_OVERRIDE}
	}
	cmd.SysProcAttr = attr
	prepareCommand(e, cmd)
	err = cmd.Start()
	repW.Close()
	goR.Close()
	if err != nil { // clone refused: no user namespaces here
		rep.Close()
		goW.Close()
		return fmt.Errorf("the namespaces could not be made: %w", err)
	}
	iso.cmd, iso.rep, iso.goW = cmd, rep, goW
	iso.mntNS, _ = os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", cmd.Process.Pid))
	return nil
}

// cancel ends the helper start started, for a command that was not begun:
// without exec's word it exits and runs nothing. The overlay's directories
// are removed.
func (iso *isolation) cancel() {
	if iso.cmd != nil {
		iso.goW.Close()
		iso.rep.Close()
		iso.cmd.Wait()
	}
	iso.discard()
}

// run runs argv isolated, with the helper start started (run starts it if
// it was not), and returns its exit status; setup is the reason it could
// not be isolated, in which case it did not run. Once the overlay is
// mounted, and before the command runs, ready is called with the
// command's pid and mount namespace (to put them in the command's record:
// a killed exec's command is then recovered from its overlay); an error
// from it is a reason not to isolate.
func (iso *isolation) run(e *env, argv []string, ready func(pid int, mntNS string) error) (status int, setup error) {
	if iso.cmd == nil {
		if err := iso.start(e, argv); err != nil {
			return 0, err
		}
	}
	rep, goW := iso.rep, iso.goW
	defer rep.Close()
	defer goW.Close()
	pid := iso.cmd.Process.Pid
	var report []byte
	got := make(chan struct{})
	status, err := waitStarted(e, iso.cmd, func() {
		go func() {
			defer close(got)
			// The helper writes one NUL byte once the overlay is
			// mounted, then waits for one byte on its fd 4 to run the
			// command; anything else is why it could not set up.
			var first [1]byte
			n, _ := io.ReadFull(rep, first[:])
			if n == 1 && first[0] == 0 {
				if err := ready(pid, iso.mntNS); err != nil {
					report = []byte(fmt.Sprintf("recording the isolated run failed: %v", err))
					goW.Close()
					io.Copy(io.Discard, rep)
					return
				}
				goW.Write(first[:])
				goW.Close()
			} else {
				report = first[:n]
			}
			rest, _ := io.ReadAll(io.LimitReader(rep, 4096))
			report = append(report, rest...)
		}()
	})
	if err != nil {
		return 0, err
	}
	<-got
	if len(report) > 0 {
		return 0, errors.New(string(report))
	}
	return status, nil
}

// lingering counts the processes still in the command's mount namespace:
// ones it left running in the background.
func (iso *isolation) lingering() int {
	if iso.mntNS == "" {
		return 0
	}
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, d := range ents {
		if d.Name()[0] < '0' || d.Name()[0] > '9' {
			continue
		}
		if ns, err := os.Readlink("/proc/" + d.Name() + "/ns/mnt"); err == nil && ns == iso.mntNS {
			n++
		}
	}
	return n
}

// end ends the isolated command c: its changes are put into the tree and
// recorded (EndIsolated), and the overlay's directories removed, but for
// what is kept: the command's versions of conflicting files, and all of it
// while a process it left in the background may still write there.
func (iso *isolation) end(ctx context.Context, e *env, c commandEnder) (*editguard.CommandResult, error) {
	bg := iso.lingering()
	res, err := c.EndIsolated(ctx, iso.upper)
	if err != nil {
		return nil, err
	}
	if bg > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d process(es) the command left running still see its isolated view: what they write from now on stays in %s and is not put into the tree", bg, iso.upper))
		return res, nil
	}
	os.Chmod(filepath.Join(iso.work, "work"), 0o700)
	os.RemoveAll(iso.work)
	if len(res.Conflicts) == 0 {
		os.RemoveAll(iso.dir)
	}
	return res, nil
}

// discard removes the directories of an isolation not used.
func (iso *isolation) discard() {
	os.Chmod(filepath.Join(iso.work, "work"), 0o700)
	os.RemoveAll(iso.dir)
	if iso.pending != nil {
		iso.pending.Close()
		iso.pending = nil
	}
}

// isolateHelper is the hidden entry point exec starts in the new
// namespaces: args are the root, the upper and work directories, the
// working directory, "--" and the command. It does not return when the
// command starts.
func isolateHelper(args []string, stderr io.Writer) int {
	unix.CloseOnExec(3)
	report := os.NewFile(3, "report")
	if len(args) < 6 || args[4] != "--" {
		fmt.Fprintln(report, "bad arguments to the isolated command's helper")
		return 125
	}
	root, upper, work, wd, argv := args[0], args[1], args[2], args[3], args[5:]
	if err := isolateMount(root, upper, work); err != nil {
		fmt.Fprint(report, err.Error())
		return 125
	}
	if err := unix.Chdir(wd); err != nil {
		fmt.Fprintf(report, "entering %s in the overlay: %v", wd, err)
		return 125
	}
	// The command gets no capability: the ambient set is cleared, and a
	// user other than root has no other way to keep one across exec. The
	// set is the thread's: the exec below must be made from this thread
	// (a goroutine waiting for exec's word may else go on in another,
	// whose set is not cleared).
	runtime.LockOSThread()
	unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	path, err := exec.LookPath(argv[0])
	if err == nil {
		// Set up: exec records where the overlay is and which process
		// this is, then says go. No word (exec is gone, or could not
		// record it): the command does not run.
		unix.CloseOnExec(4)
		proceed := os.NewFile(4, "go")
		report.Write([]byte{0})
		var b [1]byte
		if n, _ := proceed.Read(b[:]); n != 1 {
			return 125
		}
		proceed.Close()
		err = unix.Exec(path, argv, os.Environ())
	}
	fmt.Fprintf(stderr, "editguard: exec: %s\n", escapeText(err.Error()))
	return 127
}

// isolateMount mounts the overlay on root, and the tree's .editguard over
// the overlay's.
func isolateMount(root, upper, work string) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the mounts private: %w", err)
	}
	open := func(p string) (int, error) {
		return unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	var fds [3]int
	for i, p := range []string{root, upper, work} {
		fd, err := open(p)
		if err != nil {
			return fmt.Errorf("opening %s: %w", p, err)
		}
		fds[i] = fd
	}
	state, serr := open(filepath.Join(root, editguard.StateDir))
	// The layers are named by their descriptors: a name with a comma or
	// a colon would not survive the options' syntax.
	opts := fmt.Sprintf("lowerdir=/proc/self/fd/%d,upperdir=/proc/self/fd/%d,workdir=/proc/self/fd/%d,userxattr", fds[0], fds[1], fds[2])
	if err := unix.Mount("overlay", root, "overlay", 0, opts); err != nil {
		return fmt.Errorf("mounting the overlay: %w", err)
	}
	if serr == nil {
		if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", state), filepath.Join(root, editguard.StateDir), "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("mounting %s over the overlay: %w", editguard.StateDir, err)
		}
	}
	return nil
}
