package atomicfile

import (
	"errors"

	"golang.org/x/sys/unix"
)

// Move strategies reported in Result.Strategy.
const (
	MoveNew      = "move"          // no-replace rename to a name that did not exist
	MoveExchange = "move_exchange" // exchange with the destination, both sides verified, then the displaced removed
	MoveReplace  = "move_replace"  // rename over the destination (systems without an exchange)
)

// ErrCrossDevice reports a move between two file systems, which no rename
// can make atomic.
var ErrCrossDevice = errors.New("atomicfile: source and destination are on different file systems")

// Move renames name in d to newName in to, atomically, if name's bytes
// still hash to want: the content is always whole under exactly one of the
// two names, whatever crashes.
//
// With dstWant "" the destination must not exist: a no-replace rename, and
// ErrExist if a file appeared there. Otherwise the destination must hash
// to dstWant: the two names are exchanged (Linux), both files verified, and
// the displaced destination, now under the source's name, removed (parked
// in opts.Park if set; bytes a writer added to it meanwhile come back in
// Result.Displaced). If either side is not what the caller verified, the
// exchange is undone and ErrRaced returned. Both directories are fsynced.
func (d *Dir) Move(name, want string, to *Dir, newName, dstWant string, opts Options) (Result, error) {
	if err := d.checkWritable(name); err != nil {
		return Result{}, err
	}
	if dstWant == "" {
		return d.moveNew(name, want, to, newName)
	}
	if err := to.checkWritable(newName); err != nil {
		return Result{}, err
	}
	strategy := MoveExchange
	err := sys.renameat2(d.hook, d.fd, name, to.fd, newName, renameExchange)
	switch err {
	case nil:
	case unix.EINVAL, unix.ENOSYS, unix.ENOTSUP:
		// No exchange here: a plain rename over the destination. The
		// caller's locks serialise every cooperating writer.
		v, got, herr := d.openHash(name)
		if v != nil {
			v.f.Close()
		}
		if herr != nil || got != want {
			return Result{}, ErrRaced
		}
		if err := sys.renameat(d.hook, d.fd, name, to.fd, newName); err != nil {
			return Result{}, moveError(err)
		}
		return d.syncMove(to, MoveReplace, nil)
	default:
		return Result{}, moveError(err)
	}
	// The content is now at newName, the old destination at name.
	moved, gotMoved, merr := to.openHash(newName)
	if moved != nil {
		moved.f.Close()
	}
	old, gotOld, oerr := d.openHash(name)
	if merr != nil || oerr != nil || gotMoved != want || gotOld != dstWant {
		if old != nil {
			old.f.Close()
		}
		if uerr := sys.renameat2(d.hook, d.fd, name, to.fd, newName, renameExchange); uerr != nil {
			return Result{}, &StepError{"exchange back", uerr}
		}
		return Result{}, ErrRaced
	}
	displaced, err := d.removeVerified(name, old, dstWant, opts.Park)
	if err != nil {
		return Result{Strategy: strategy}, err
	}
	return d.syncMove(to, strategy, displaced)
}

// moveNew is Move to a name that must not exist.
func (d *Dir) moveNew(name, want string, to *Dir, newName string) (Result, error) {
	err := d.renameNoReplaceTo(name, to, newName)
	switch err {
	case nil:
	case unix.EEXIST:
		return Result{}, ErrExist
	default:
		return Result{}, moveError(err)
	}
	v, got, herr := to.openHash(newName)
	if v != nil {
		v.f.Close()
	}
	if herr != nil || got != want {
		// Another writer replaced the source before the rename: put what
		// we moved back where it was.
		if rerr := to.renameNoReplaceTo(newName, d, name); rerr != nil {
			return Result{}, &StepError{"rename back", rerr}
		}
		return Result{}, ErrRaced
	}
	return d.syncMove(to, MoveNew, nil)
}

// renameNoReplaceTo renames name in d to newName in to, failing with
// EEXIST if newName exists.
func (d *Dir) renameNoReplaceTo(name string, to *Dir, newName string) error {
	err := sys.renameat2(d.hook, d.fd, name, to.fd, newName, renameNoReplace)
	if err == unix.EINVAL || err == unix.ENOSYS || err == unix.ENOTSUP {
		// link(2) fails if newName exists: a no-replace rename in two steps.
		if err = unix.Linkat(d.fd, name, to.fd, newName, 0); err == nil {
			err = sys.unlinkat(d.hook, d.fd, name, 0)
		}
	}
	return err
}

// syncMove makes the move durable: the new name, then the old one gone.
func (d *Dir) syncMove(to *Dir, strategy string, displaced []byte) (Result, error) {
	r := Result{Strategy: strategy, Displaced: displaced}
	if err := to.syncDir(); err != nil {
		return r, err
	}
	if to.fd != d.fd {
		if err := d.syncDir(); err != nil {
			return r, err
		}
	}
	return r, nil
}

func moveError(err error) error {
	switch err {
	case unix.ENOENT:
		return ErrRaced // the source vanished after it was verified
	case unix.EXDEV:
		return ErrCrossDevice
	}
	return &StepError{"rename", err}
}
