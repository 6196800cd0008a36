//go:build !linux

package main

import (
	"context"
	"errors"
	"io"

	"github.com/editguard/editguard"
)

// isolation is Linux's (exec_isolate_linux.go); elsewhere a command is not
// isolated.
type isolation struct{ dir, upper string }

func newIsolation(root string) (*isolation, error) {
	return nil, errors.New("isolation needs Linux's user namespaces and overlayfs")
}

func (iso *isolation) start(e *env, argv []string) error {
	return errors.New("isolation needs Linux")
}

func (iso *isolation) cancel() {}

func (iso *isolation) run(e *env, argv []string, ready func(pid int, mntNS string) error) (int, error) {
	return 0, errors.New("isolation needs Linux")
}

func (iso *isolation) end(ctx context.Context, e *env, c commandEnder) (*editguard.CommandResult, error) {
	return c.End(ctx)
}

func (iso *isolation) discard() {}

func (iso *isolation) claim() {}

func isolateHelper(args []string, stderr io.Writer) int { return 125 }

const isolateEntry = "__isolated-exec"
