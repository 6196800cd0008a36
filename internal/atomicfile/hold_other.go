//go:build unix && !linux

package atomicfile

import "errors"

var errNoHold = errors.New("atomicfile: no file leases on this system")

// Held is a file frozen by a lease; these systems have none to take, so
// Hold always returns nil and the caller copies what it would have linked.
type Held struct{}

// Hold returns nil: there is no lease to take here.
func (d *Dir) Hold(name string, ino uint64, expect []byte) *Held { return nil }

// Dev is 0.
func (h *Held) Dev() uint64 { return 0 }

// Ino is 0.
func (h *Held) Ino() uint64 { return 0 }

// Intact is false.
func (h *Held) Intact() bool { return false }

// Alone is false.
func (h *Held) Alone() bool { return false }

// Link fails.
func (h *Held) Link(dirfd int, newname string) error { return errNoHold }

// StartSync does nothing.
func (h *Held) StartSync() {}

// Chmod fails.
func (h *Held) Chmod(mode uint32) error { return errNoHold }

// Release does nothing.
func (h *Held) Release() {}

// Close does nothing.
func (h *Held) Close() {}

func (d *Dir) verifyHeld(name string, h *Held, expect []byte) (*verified, bool, error) {
	return d.openVerify(name, "", expect)
}
