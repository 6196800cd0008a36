package editguard

import "context"

// RestoreOptions control Restore.
type RestoreOptions struct {
	Precondition *Precondition
	DryRun       bool
}

// Restore puts a history version back. It is a guarded write like any other:
// it needs a full read or a precondition, it fails with STALE_FILE if the
// file changed since, and what it displaces goes to history first, so no
// restore can destroy later work. Restoring a version that records "did not
// exist" deletes the file. The bytes are restored exactly, encoding and line
// endings included.
func (s *Session) Restore(ctx context.Context, p, version string, opts *RestoreOptions) (*Result, error) {
	var o RestoreOptions
	if opts != nil {
		o = *opts
	}
	if version == "" {
		return nil, newError(CodeInvalidArgument, p, "version is empty", "list versions with file_history", nil)
	}
	return s.mutate(ctx, &change{
		tool: "restore_file", path: p, pre: o.Precondition, dryRun: o.DryRun, wholeFile: true,
		args: restoreArgs(p, version, &o),
		build: func(t *target, obs *observation, enc string) (*plan, error) {
			v, data, err := s.w.loadVersion(p, t.resolved, version)
			if err != nil {
				return nil, err
			}
			if v.Absent {
				if !obs.stat.Exists {
					return nil, newError(CodeNoChange, p, "the version records that the file did not exist, and it does not", "", nil)
				}
				return &plan{remove: true, oldText: textOf(obs.data, enc)}, nil
			}
			if obs.stat.Exists && obs.sum == v.SHA256 {
				return nil, newError(CodeNoChange, p, "the file already has this version's content", "", nil)
			}
			return &plan{data: data, oldText: textOf(obs.data, enc), newText: textOf(data, enc), encoding: enc}, nil
		},
	})
}
