//go:build unix

package gitsync

import (
	"os/exec"
	"syscall"
)

// detach runs cmd in a session of its own: it has no controlling terminal,
// so nothing it starts (ssh asking for a passphrase or a host key, a
// credential helper) can stop to wait for a person, and it leads a process
// group, so that cancelling kills git with everything it started rather
// than leaving a transport helper behind.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
