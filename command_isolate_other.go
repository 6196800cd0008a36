//go:build unix && !linux

package editguard

import (
	"context"
	"errors"
)

// EndIsolated needs Linux's overlayfs (command_isolate_linux.go): here it
// puts nothing into the tree and fails.
func (c *Command) EndIsolated(ctx context.Context, upper string) (*CommandResult, error) {
	return nil, errors.New("editguard: isolated commands need Linux")
}
