package atomicfile

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

const (
	renameExchange  = unix.RENAME_EXCHANGE
	renameNoReplace = unix.RENAME_NOREPLACE
)

func renameat2(olddirfd int, oldpath string, newdirfd int, newpath string, flags uint) error {
	return unix.Renameat2(olddirfd, oldpath, newdirfd, newpath, flags)
}

// syncfs makes every write to the file system holding fd durable: one
// flush for many files (syncfs(2)).
func syncfs(fd int) error { return unix.Syncfs(fd) }

// FileSystemSync reports whether Dir.SyncFS flushes one file system and
// returns once its writes are durable (syncfs(2)), so that it may stand in
// for the fsyncs of files written before it began.
const FileSystemSync = true

// Where RENAME_EXCHANGE was refused, later commits go straight to rename:
// everywhere once the kernel has refused renameat2 itself (ENOSYS,
// noExchange); on one file system once it has refused the flag (EINVAL,
// ENOTSUP: noExchangeOn, by device), so that a workspace's other file
// systems keep the exchange and its verification. A commit looks its
// directory's device up only once some file system has refused.
var (
	noExchange    atomic.Bool
	noExchangeAny atomic.Bool
	noExchangeMu  sync.Mutex
	noExchangeOn  map[uint64]bool
)

// exchangeRefused reports whether RENAME_EXCHANGE was refused for d's file
// system.
func (d *Dir) exchangeRefused() bool {
	if noExchange.Load() {
		return true
	}
	if !noExchangeAny.Load() {
		return false
	}
	var st unix.Stat_t
	if unix.Fstat(d.fd, &st) != nil {
		return false // the exchange itself will say
	}
	noExchangeMu.Lock()
	defer noExchangeMu.Unlock()
	return noExchangeOn[uint64(st.Dev)]
}

// refuseExchange remembers that RENAME_EXCHANGE was refused with err for
// d's file system, or for every one (ENOSYS, or d's device unknown).
func (d *Dir) refuseExchange(err error) {
	var st unix.Stat_t
	if err == unix.ENOSYS || unix.Fstat(d.fd, &st) != nil {
		noExchange.Store(true)
		return
	}
	noExchangeMu.Lock()
	defer noExchangeMu.Unlock()
	if noExchangeOn == nil {
		noExchangeOn = map[uint64]bool{}
	}
	noExchangeOn[uint64(st.Dev)] = true
	noExchangeAny.Store(true)
}

// swap puts tmp in place of name. With RENAME_EXCHANGE both names survive the
// call, so the displaced file can be hashed; it is returned open, verified. If
// it is not what the caller verified, a writer outside our lock changed it and
// the exchange is undone: the target gets back what the other writer wrote,
// and our new file, with anything written into it meanwhile, is removed
// (see undone).
func (d *Dir) swap(tmp, name, want string, expect []byte, held *Held, data []byte, park *Dir) (string, *verified, error) {
	if !d.exchangeRefused() {
		err := sys.renameat2(d.hook, d.fd, tmp, d.fd, name, unix.RENAME_EXCHANGE)
		switch err {
		case nil:
			var v *verified
			var ok bool
			var herr error
			if held != nil {
				v, ok, herr = d.verifyHeld(tmp, held, expect)
			} else {
				v, ok, herr = d.openVerify(tmp, want, expect)
			}
			if ok {
				return Exchange, v, nil
			}
			if v != nil {
				v.f.Close()
			}
			if uerr := sys.renameat2(d.hook, d.fd, tmp, d.fd, name, unix.RENAME_EXCHANGE); uerr != nil {
				return "", nil, &StepError{"exchange back", uerr}
			}
			rerr := d.undone(tmp, data, park)
			if herr != nil {
				return "", nil, &StepError{"hash displaced", herr}
			}
			return "", nil, rerr
		case unix.EINVAL, unix.ENOSYS, unix.ENOTSUP:
			d.refuseExchange(err)
		case unix.ENOENT:
			sys.unlinkat(d.hook, d.fd, tmp, 0)
			return "", nil, ErrRaced // the target vanished after it was verified
		default:
			sys.unlinkat(d.hook, d.fd, tmp, 0)
			return "", nil, &StepError{"exchange", err}
		}
	}
	if err := sys.renameat(d.hook, d.fd, tmp, d.fd, name); err != nil {
		sys.unlinkat(d.hook, d.fd, tmp, 0)
		return "", nil, &StepError{"rename", err}
	}
	return Rename, nil, nil
}

// renameNoReplace renames old to new, failing with EEXIST if new exists.
func (d *Dir) renameNoReplace(old, new string) error {
	err := sys.renameat2(d.hook, d.fd, old, d.fd, new, unix.RENAME_NOREPLACE)
	if err == unix.EINVAL || err == unix.ENOSYS || err == unix.ENOTSUP {
		return d.linkUnlink(old, new)
	}
	return err
}
