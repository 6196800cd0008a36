package editguard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"github.com/editguard/editguard/internal/engine"
	"github.com/editguard/editguard/internal/filelock"
	"github.com/editguard/editguard/internal/ledger"
	"github.com/editguard/editguard/internal/remote"
)

// remoteHost is what package internal/remote (publish and pull) needs of
// a session and its workspace: the sync state in .editguard, the ledger, a
// snapshot of several files under their locks, and guarded changes under
// the tool name "pull". Session.Publish and Session.Pull pass one to
// internal/remote, whose interface Host it implements.
type remoteHost struct {
	s *Session
	// writer makes the changes of a pull, made on its first Put.
	writer *Session
}

var _ remote.Host = (*remoteHost)(nil)

// Dir is the workspace's root directory.
func (h *remoteHost) Dir() string { return h.s.w.dir }

// MaxFileSize is the workspace's file size limit.
func (h *remoteHost) MaxFileSize() int64 { return h.s.w.opts.MaxFileSize }

// Log calls fn for every record of the ledger, as Workspace.Log does.
func (h *remoteHost) Log(fn func(*ledger.Record) error) error { return h.s.w.Log(LogFilter{}, fn) }

// ErrorCode returns the code of err if it is an *Error, else "".
func (h *remoteHost) ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return string(e.Code)
	}
	return ""
}

// Denied reports the Deny pattern that protects resolved, if any.
func (h *remoteHost) Denied(resolved string) (string, bool) { return h.s.w.denied(resolved) }

// Version returns the bytes history version id of the file at resolved
// keeps (nil for "did not exist").
func (h *remoteHost) Version(resolved, id string) ([]byte, error) {
	_, data, err := h.s.w.hist.Load(resolved, id)
	return data, err
}

// LockSync takes the workspace's publish/pull lock, so that one publish or
// pull at a time reads and writes the sync state (guarded writes of agents
// go on meanwhile, under their own locks). unlock releases it.
func (h *remoteHost) LockSync(ctx context.Context) (unlock func(), err error) {
	w := h.s.w
	l, err := w.state.Lock(ctx, syncLockName, &filelock.Options{Timeout: w.opts.LockTimeout})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		e := ioError("", err)
		if errors.Is(err, filelock.ErrBusy) {
			e.Message = "another publish or pull in this workspace is still running: " + err.Error()
		}
		return nil, e
	}
	return func() { l.Unlock() }, nil
}

// syncLockName is the lock file of LockSync in .editguard.
const syncLockName = "sync.lock"

// LoadState decodes the JSON file name of .editguard into v; a missing
// file leaves v as it is.
func (h *remoteHost) LoadState(name string, v any) error {
	st := h.s.w.state
	data, err := st.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return stateError("read sync state", err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return stateError("read sync state", fmt.Errorf("%s: %w", st.Join(name), err))
	}
	return nil
}

// SaveState replaces the JSON file name of .editguard with v, durably and
// atomically.
func (h *remoteHost) SaveState(name string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := h.s.w.state.WriteFile(name, append(data, '\n'), 0o644); err != nil {
		return stateError("write sync state", err)
	}
	return nil
}

// Snapshot opens the files at paths, takes all their locks (as a patch
// does: engine.Engine.LockTx), calls under, and then reads the files under reads
// that under returned and whose path leads to themselves: so no guarded
// change falls between what under read (the ledger) and the files. It
// returns the files in the order of paths; one that could not be opened
// has OpenErr set, one not read has Read false.
func (h *remoteHost) Snapshot(ctx context.Context, paths []string, under func() (map[string]bool, error)) ([]remote.File, error) {
	w := h.s.w
	out := make([]remote.File, len(paths))
	var targets []*txFile
	var at []int // index in out of each target
	defer func() {
		for _, f := range targets {
			f.t.Close()
		}
	}()
	for i, p := range paths {
		out[i].Path = p
		t, err := w.openTarget(p)
		if err != nil {
			out[i].OpenErr = err
			continue
		}
		out[i].Resolved = t.Resolved
		targets = append(targets, &txFile{t: t})
		at = append(at, i)
	}
	ts := make([]*target, len(targets))
	for i, f := range targets {
		ts[i] = f.t
	}
	locks, err := w.eng.LockTx(ctx, ts)
	if err != nil {
		return nil, lockTxError(err)
	}
	defer engine.UnlockAll(locks)
	reads, err := under()
	if err != nil {
		return nil, err
	}
	for k, tf := range targets {
		if tf.t.Resolved != tf.t.Path || !reads[tf.t.Path] {
			continue
		}
		obs, err := w.observe(tf.t)
		if err != nil {
			return nil, err
		}
		out[at[k]] = observed(out[at[k]], obs)
	}
	return out, nil
}

// Look opens the file at p and, unless allowed refuses where it leads
// (then with allowed's error), reads it.
func (h *remoteHost) Look(p string, allowed func(resolved string) error) (remote.File, error) {
	w := h.s.w
	t, err := w.openTarget(p)
	if err != nil {
		return remote.File{}, err
	}
	defer t.Close()
	f := remote.File{Path: p, Resolved: t.Resolved}
	if err := allowed(t.Resolved); err != nil {
		return f, err
	}
	obs, err := w.observe(t)
	if err != nil {
		return f, err
	}
	return observed(f, obs), nil
}

// observed fills in f from obs.
func observed(f remote.File, obs *observation) remote.File {
	f.Read, f.Exists, f.Regular = true, obs.Stat.Exists, obs.Stat.Regular()
	f.Exec = obs.Stat.Mode&0o111 != 0
	f.SHA256, f.Size, f.MtimeMS, f.Data = obs.Sum, obs.Stat.Size, obs.MtimeMS(), obs.Data
	return f
}

// Put makes the change p describes as one guarded change (tool "pull"),
// with p's precondition: a change made meanwhile is not overwritten, the
// change fails instead.
//
// The changes are recorded under the session's name, but in a session of
// their own: the session did not see upstream's content, so its reads must
// not come to cover it (its next change to such a file is STALE_FILE, as
// for every other session's). The session's approver is asked about each
// file, as about every other change.
func (h *remoteHost) Put(ctx context.Context, p remote.Put) (*remote.Written, error) {
	if h.writer == nil {
		h.writer = h.s.w.NewSession(h.s.name)
		h.writer.SetApprover(h.s.getApprover())
	}
	pre := &Precondition{ExpectedSHA256: p.ExpectedSHA256}
	if p.MustNotExist {
		pre = &Precondition{MustNotExist: true}
	}
	r, err := h.writer.mutate(ctx, &change{
		tool: opPull, path: p.Path, pre: pre, wholeFile: true, args: p.Args,
		build: func(t *target, obs *observation, enc string) (*plan, error) {
			if p.Remove {
				return &plan{remove: true, oldText: textOf(obs.Data, "")}, nil
			}
			pl := &plan{data: p.Data, sum: p.SHA256, oldText: textOf(obs.Data, ""), newText: textOf(p.Data, "")}
			if p.Exec {
				pl.mode = 0o755
			}
			return pl, nil
		},
	})
	if err != nil {
		return nil, err
	}
	return &remote.Written{SHA256: r.SHA256, BackupVersion: r.BackupVersion, Created: r.Created, Deleted: r.Deleted, Warnings: r.Warnings}, nil
}

// recordSync appends the ledger record of a publish or a pull (tool) of
// the session: its arguments, and its result or the error it failed with.
func (h *remoteHost) recordSync(tool string, args map[string]any, res any, err error) error {
	r := &ledger.Record{Session: h.s.name, Tool: tool, Approval: "auto"}
	r.Args, _ = json.Marshal(args)
	if err != nil {
		recordError(r, err)
	} else {
		r.Outcome = "ok"
		r.Strategy = "git"
		r.Result, _ = json.Marshal(res)
	}
	return h.s.w.led.Append(r)
}
