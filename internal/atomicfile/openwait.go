//go:build unix

package atomicfile

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// leaseWait bounds how long WaitLeased retries an open that a lease refuses:
// a file another editguard change holds (Dir.Hold) is released when that
// change's swap is done, normally within milliseconds, and a slow disk's
// fsyncs may stretch that to seconds.
const leaseWait = 10 * time.Second

// WaitLeased calls open until it fails otherwise than with EAGAIN
// (EWOULDBLOCK), sleeping a little longer each time, for leaseWait at
// most. An open with O_NONBLOCK (which editguard uses so that a FIFO put
// where a file was cannot block it) fails with EAGAIN instead of waiting
// when another process holds a lease on the file.
func WaitLeased[T any](open func() (T, error)) (T, error) {
	v, err := open()
	if !errors.Is(err, unix.EAGAIN) {
		return v, err
	}
	deadline := time.Now().Add(leaseWait)
	for pause := 20 * time.Microsecond; errors.Is(err, unix.EAGAIN) && time.Now().Before(deadline); pause = min(2*pause, 5*time.Millisecond) {
		time.Sleep(pause)
		v, err = open()
	}
	return v, err
}

// Openat is unix.Openat, waiting out a lease (WaitLeased).
func Openat(dirfd int, path string, flags int, mode uint32) (int, error) {
	return WaitLeased(func() (int, error) { return unix.Openat(dirfd, path, flags, mode) })
}
