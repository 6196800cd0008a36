//go:build unix

package editguard

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"time"
)

// RecoverCommands ends, as the next BeginCommand would, every command in
// progress whose end will not come (its process gone, its deadline passed;
// an isolated one whose exec and command are both gone, its changes put
// into the tree first: command_isolate_recover_linux.go), without
// beginning one, and returns what it recorded of each. With none to end,
// it reads only the active records and takes no checkpoint.
func (w *Workspace) RecoverCommands(ctx context.Context) ([]*CommandResult, error) {
	// A look without the lock first, creating nothing: a command in
	// progress holds the lock for its checkpoints, and most calls find
	// nothing to do.
	active, err := w.state.Sub(checkpointDir+"/active", false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, stateError("open checkpoints", err)
	}
	heads, err := (&checkpoints{active: active}).activeRecords()
	active.Close()
	if err != nil || !anyOver(heads) {
		return nil, nil
	}
	cp, unlock, err := w.lockCheckpoints(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	heads, err = cp.activeRecords()
	if err != nil || !anyOver(heads) {
		return nil, nil
	}
	pos, err := w.led.Last()
	if err != nil {
		return nil, readError("read ledger", err)
	}
	isolated := w.applyUnendedIsolated(cp, "")
	cache, cacheName := cp.loadCache()
	cur, notChecked, mark, err := cp.checkpoint(ctx, w, cache, cacheName)
	if err != nil {
		return nil, err
	}
	recovered := w.recoverCommands(cp, "", cur, pos, notChecked, isolated)
	if manifest, sum, err := cp.saveManifest(cur); err == nil {
		cp.remember(manifest, sum, cur, mark)
		cp.setLast(manifest)
	}
	cp.sweepManifests()
	cp.collect(cur, nil, true)
	if len(recovered) > 0 {
		w.afterCommit()
	}
	return recovered, nil
}

// anyOver reports whether a command of the active records heads will not
// end on its own (see recoverCommands).
func anyOver(heads []*activeCommand) bool {
	host, _ := os.Hostname()
	now := time.Now()
	for _, h := range heads {
		if h.Isolation != nil && h.Host == host {
			if isolatedOver(h, "", now) {
				return true
			}
		} else if commandOver(h, "", now, host) {
			return true
		}
	}
	return false
}
