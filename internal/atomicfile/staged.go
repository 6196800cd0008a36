//go:build unix

package atomicfile

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// A Staged change is a Replace, Create or Remove cut at its steps, so that
// a caller changing many files pays each step's cost once for all of them:
// Stage* writes each new file under its temporary name (durable, unless
// Options.SyncLater leaves that to the caller, for example one SyncFS for
// all of them), Swap puts each in place, the caller syncs each directory
// once (Dir.Sync), and Finish takes off what each swap displaced. Abort,
// before Swap, removes the temporary file. Replace, Create and Remove are
// the same steps for one file, with Options.Ready, Swapped and SyncDir
// between them; a Staged change uses none of those, nor Held.
type Staged struct {
	d        *Dir
	kind     string // Exchange (a replacement), Create or Delete
	name     string
	tmp      string // the temporary name: the new file's, or the removed one's
	want     string
	data     []byte
	opts     Options
	old      *verified // the file an exchange displaced, until Finish
	r        Result
	swapped  bool
	finished bool
}

// StageReplace writes the replacement of the existing regular file name,
// whose bytes the caller verified to hash to want (see Replace). A target
// the caller could not write in place fails with ErrNotWritable.
func (d *Dir) StageReplace(name string, data []byte, want string, opts Options) (*Staged, error) {
	if err := d.checkWritable(name); err != nil {
		return nil, err
	}
	tmp, err := d.writeTemp(name, data, opts)
	if err != nil {
		return nil, err
	}
	return &Staged{d: d, kind: Exchange, name: name, tmp: tmp, want: want, data: data, opts: opts}, nil
}

// StageCreate writes the new file name, which must not exist (see Create).
func (d *Dir) StageCreate(name string, data []byte, opts Options) (*Staged, error) {
	tmp, err := d.writeTemp(name, data, opts)
	if err != nil {
		return nil, err
	}
	return &Staged{d: d, kind: Create, name: name, tmp: tmp, data: data, opts: opts}, nil
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
	return &Staged{d: d, kind: Delete, name: name, tmp: tmp, want: want, opts: opts}, nil
}

// Swap makes the change visible: the new file takes the name, or the
// removed one leaves it (parked or unlinked at once, as Remove does; its
// late bytes are in the Result). If it fails nothing is changed and the
// temporary file is gone: ErrRaced if the target is not what the caller
// verified, ErrExist if a created name appeared.
func (s *Staged) Swap() error {
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
	}
	s.swapped, s.finished = true, false
	return nil
}

// Finish ends a swapped change once its directory is synced: what an
// exchange displaced is taken off (so a crash before the sync leaves an
// extra temporary file, never a missing target), and the new file's stat
// is read. Its error comes after the change is made.
func (s *Staged) Finish() (Result, error) {
	if !s.swapped || s.finished {
		return s.r, nil
	}
	s.finished = true
	if s.kind == Delete {
		return s.r, nil
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

// Abort removes the temporary file of a change not swapped. After a swap,
// it lets the displaced file go without taking it off: it stays under its
// temporary name (a durability failure, where it is not ours to remove).
func (s *Staged) Abort() {
	if s.finished {
		return
	}
	s.finished = true
	if s.old != nil {
		s.old.f.Close()
		s.old = nil
	}
	if !s.swapped && s.kind != Delete {
		s.d.unlink(s.tmp)
	}
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
