//go:build unix

package atomicfile

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// A Staged change is a replacement, creation or removal of one name cut at
// its steps, which the caller runs in order, doing its own work between
// them (a lock taken before the swap and released after it, a directory
// fsync shared with other changes, one file system flush for many files):
//
//  1. stage (StageReplace, StageCreate, StageRemove): the new content is
//     written under its temporary name, with the target's owner and mode;
//     the file stays open. A removal writes nothing.
//  2. sync (Sync, or SkipSync when the caller made the file durable by
//     other means, such as Dir.SyncFS begun after the write): the new
//     content is durable under its temporary name before any name
//     changes. Swap syncs a file the caller left unsynced.
//  3. swap (Swap): the new file takes the name, verified against what the
//     caller observed, or the removed one leaves it. A held target's
//     displaced file is unlinked here too, at once (Options.Held).
//  4. the caller makes the directory's entries durable (Dir.Sync, or one
//     fsync shared with other changes of the directory).
//  5. finish (Finish): what an exchange displaced is taken off its
//     temporary name, after the directory's fsync, so that a crash in
//     between leaves an extra temporary file, never a missing target.
//
// Abort, at any step, lets the change go: before the swap the temporary
// file is removed; after it, a displaced file stays under its temporary
// name (a durability failure, where it is not ours to remove). Replace,
// Create and Remove are these steps back to back with Dir.Sync as step 4.
type Staged struct {
	d        *Dir
	kind     string // Exchange (a replacement), Create or Delete
	name     string
	tmp      string // the temporary name: the new file's, or the removed one's
	want     string
	data     []byte
	opts     Options
	fd       int       // the new file, open from stage to sync; -1 once closed
	old      *verified // the file an exchange displaced, until Finish
	late     error     // the failure to unlink a held displaced file, for Finish
	r        Result
	swapped  bool
	finished bool
}

// ErrEnded is Swap's error for a change that already ended: its Sync
// failed, or it was aborted.
var ErrEnded = errors.New("atomicfile: the staged change has ended")

// StageReplace writes the replacement of the existing regular file name,
// whose bytes the caller verified to hash to want (see Replace). A target
// the caller could not write in place fails with ErrNotWritable.
func (d *Dir) StageReplace(name string, data []byte, want string, opts Options) (*Staged, error) {
	if err := d.checkWritable(name); err != nil {
		return nil, err
	}
	tmp, fd, err := d.createTemp(name, data, opts)
	if err != nil {
		return nil, err
	}
	return &Staged{d: d, kind: Exchange, name: name, tmp: tmp, fd: fd, want: want, data: data, opts: opts}, nil
}

// StageCreate writes the new file name, which must not exist (see Create).
func (d *Dir) StageCreate(name string, data []byte, opts Options) (*Staged, error) {
	tmp, fd, err := d.createTemp(name, data, opts)
	if err != nil {
		return nil, err
	}
	return &Staged{d: d, kind: Create, name: name, tmp: tmp, fd: fd, data: data, opts: opts}, nil
}

// StageRemove prepares the removal of the regular file name if its bytes
// still hash to want (see Remove). Nothing is written.
func (d *Dir) StageRemove(name, want string, opts Options) (*Staged, error) {
	if err := d.checkWritable(name); err != nil {
		return nil, err
	}
	tmp := opts.Temp
	if tmp == "" {
		tmp = tempName(name)
	}
	return &Staged{d: d, kind: Delete, name: name, tmp: tmp, fd: -1, want: want, opts: opts}, nil
}

// Sync is step 2: the new content's fsync, then its close. On error the
// temporary file is gone and the change is over. A removal has nothing to
// sync.
func (s *Staged) Sync() error { return s.close(true) }

// SkipSync is step 2 for a caller that made the new content durable by
// other means (a flush of its file system begun after the write): the
// file is closed without its own fsync.
func (s *Staged) SkipSync() error { return s.close(false) }

func (s *Staged) close(sync bool) error {
	if s.fd < 0 {
		return nil
	}
	fd := s.fd
	s.fd = -1
	if err := s.d.closeTemp(fd, s.tmp, sync); err != nil {
		s.finished = true
		return err
	}
	return nil
}

// Swap is step 3: the change becomes visible. The new file takes the name,
// or the removed one leaves it (parked or unlinked at once, as Remove
// does; its late bytes are in the Result). If it fails nothing is changed
// and the temporary file is gone: ErrRaced if the target is not what the
// caller verified, ErrExist if a created name appeared, ErrEnded if the
// change already ended (a failed Sync, Abort). A new file not yet synced
// is synced first.
func (s *Staged) Swap() error {
	if s.finished {
		return ErrEnded
	}
	if err := s.Sync(); err != nil {
		return err
	}
	s.finished = true // a failed swap leaves nothing to abort
	var err error
	switch s.kind {
	case Create:
		err = s.d.renameNoReplace(s.tmp, s.name)
		if err != nil {
			s.d.unlink(s.tmp)
			if err == unix.EEXIST {
				return ErrExist
			}
			return &StepError{"rename", err}
		}
		s.r.Strategy = Create
	case Delete:
		s.r.Displaced, err = s.d.removeName(s.name, s.tmp, s.want, s.opts.Park)
		if err != nil {
			return err
		}
		s.r.Strategy = Delete
	default:
		s.r.Strategy, s.old, err = s.d.swap(s.tmp, s.name, s.want, s.opts.Expect, s.opts.Held, s.data, s.opts.Park)
		if err != nil {
			return err
		}
		if s.old != nil && s.opts.Held != nil && s.opts.Held.Intact() {
			s.removeHeld()
		}
	}
	s.swapped, s.finished = true, false
	return nil
}

// removeHeld takes off the displaced file of a swap, which is the held
// file with its lease intact: no one has it open and no one can open it,
// so it is unlinked, not parked, and at once, before the directory's
// fsync, which then makes the exchange and the removal durable together.
// The held file may be history's object too (a link), and the removal is
// durable before the caller records the change, so no crash leaves a name
// of the object in the directory without the intent that lets the caller
// find and remove it. A crash before the fsync leaves the exchange undone,
// or done with the file still under its temporary name (the directory's
// changes reach the disk in their order). A failure here comes after the
// swap: Finish returns it.
func (s *Staged) removeHeld() {
	old := s.old
	s.old = nil
	s.r.Displaced, s.late = s.d.removeVerified(s.tmp, old, s.want, nil)
}

// Finish is step 5, once the directory's entries are durable: what an
// exchange displaced is taken off, and the new file's stat is read. Its
// error comes after the change is made.
func (s *Staged) Finish() (Result, error) {
	if !s.swapped || s.finished {
		return s.r, nil
	}
	s.finished = true
	if s.kind == Delete {
		return s.r, nil
	}
	if s.late != nil {
		return s.r, s.late
	}
	if s.old != nil {
		var err error
		s.r.Displaced, err = s.d.removeVerified(s.tmp, s.old, s.want, s.opts.Park)
		s.old = nil
		if err != nil {
			return s.r, err
		}
	}
	var err error
	s.r.Stat, err = s.d.statName(s.name)
	return s.r, err
}

// Abort lets the change go. Before Swap it removes the temporary file.
// After a swap it lets the displaced file go without taking it off: it
// stays under its temporary name (a durability failure, where it is not
// ours to remove).
func (s *Staged) Abort() {
	if s.finished {
		return
	}
	s.finished = true
	if s.old != nil {
		s.old.f.Close()
		s.old = nil
	}
	if s.fd >= 0 {
		unix.Close(s.fd)
		s.fd = -1
	}
	if !s.swapped && s.kind != Delete {
		s.d.unlink(s.tmp)
	}
}

// run is the steps back to back, with the directory's own fsync as step 4.
func (s *Staged) run() (Result, error) {
	if err := s.Swap(); err != nil {
		return Result{}, err
	}
	if err := s.d.Sync(); err != nil {
		// The new content is in place but its durability is unknown.
		s.Abort()
		return s.r, err
	}
	return s.Finish()
}

// Result is what the change did so far: its strategy once swapped.
func (s *Staged) Result() Result { return s.r }

// unlink removes name, ignoring the error: for our own temporary files on
// a path that already failed.
func (d *Dir) unlink(name string) { sys.unlinkat(d.hook, d.fd, name, 0) }

// removeName takes name off the directory if its bytes still hash to
// want: renamed to tmp, which is atomic, and hashed there; if it is not
// what the caller verified it is renamed back and ErrRaced returned. It
// returns the bytes a writer that had the file open added after the check.
func (d *Dir) removeName(name, tmp, want string, park *Dir) ([]byte, error) {
	if err := d.renameNoReplace(name, tmp); err != nil {
		if err == unix.ENOENT {
			return nil, ErrRaced
		}
		return nil, &StepError{"rename", err}
	}
	v, got, err := d.openHash(tmp)
	if err != nil || got != want {
		if v != nil {
			v.f.Close()
		}
		if rerr := d.renameNoReplace(tmp, name); rerr != nil {
			return nil, &StepError{"rename back", fmt.Errorf("%w; the displaced file is kept as %s", rerr, tmp)}
		}
		if err != nil {
			return nil, &StepError{"hash displaced", err}
		}
		return nil, ErrRaced
	}
	return d.removeVerified(tmp, v, want, park)
}
