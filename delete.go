package editguard

import "context"

// DeleteOptions control Delete.
type DeleteOptions struct {
	Precondition *Precondition `json:"precondition,omitempty"`
	DryRun       bool          `json:"dry_run,omitempty"`
}

// Delete is like os.Remove for a file, but guarded like Write: it needs a
// full read of the file (or a precondition), fails with STALE_FILE if the
// file changed since, and saves the content to history first, so that
// Restore with the version it reports brings the file back. Restoring over
// the absent file needs no read, since it discards nothing. A path whose
// last element is a symbolic link is refused (NOT_A_FILE): neither the link
// nor the file it points to is deleted.
func (s *Session) Delete(ctx context.Context, p string, opts *DeleteOptions) (*Result, error) {
	var o DeleteOptions
	if opts != nil {
		o = *opts
	}
	args := deleteArgs(p, &o)
	if err := s.w.checkNotLink(p); err != nil {
		// A symlink's name is refused before the path is resolved, which
		// would follow the link; the refusal is recorded like any other.
		_, err = s.w.finish(newAttempt(s, opDelete, p, args, o.Precondition), nil, err)
		return nil, err
	}
	return s.mutate(ctx, &change{
		tool: opDelete, path: p, pre: o.Precondition, dryRun: o.DryRun, wholeFile: true,
		args: args,
		build: func(t *target, obs *observation, enc string) (*plan, error) {
			if !obs.Stat.Exists {
				return nil, newError(CodeNotFound, p, "file does not exist", "check the path with list_directory", nil)
			}
			if !obs.Stat.Regular() {
				return nil, notAFile(p, obs)
			}
			return &plan{remove: true, oldText: textOf(obs.Data, enc)}, nil
		},
	})
}
