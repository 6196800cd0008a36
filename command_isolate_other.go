//go:build unix && !linux

package editguard

import (
	"context"
	"errors"
	"time"
)

// EndIsolated needs Linux's overlayfs (command_isolate_linux.go): here it
// puts nothing into the tree and fails.
func (c *Command) EndIsolated(ctx context.Context, upper string) (*CommandResult, error) {
	return nil, errors.New("editguard: isolated commands need Linux")
}

// Isolate needs Linux: no command runs isolated here.
func (c *Command) Isolate(ctx context.Context, dir string, pid int, mntNS string) error {
	return errors.New("editguard: isolated commands need Linux")
}

// applyUnendedIsolated: no command runs isolated here, so none is
// recovered as one.
func (w *Workspace) applyUnendedIsolated(cp *checkpoints, id string) map[string]*isolatedRecovery {
	return nil
}

func (ir *isolatedRecovery) finish(res *CommandResult) {}

// isolatedOver: no command runs isolated here.
func isolatedOver(h *activeCommand, id string, now time.Time) bool { return false }
