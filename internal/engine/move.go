package engine

import "github.com/editguard/editguard/internal/atomicfile"

// Move renames the file observed as obsS at src to dst, where obsD was
// observed (absent, or the file a move with overwrite replaces): the
// rename verified against both observations, then both directories
// fsynced (atomicfile.Dir.Move). The caller holds both files' locks and
// both directories' commit locks (LockTx), and has saved what leaves
// each name to history. An error whose result has no Strategy changed
// nothing (atomicfile's ErrExist, ErrRaced, ErrCrossDevice, or another);
// one with a Strategy came after the rename. Bytes another program wrote
// into the displaced destination while it was replaced are kept in
// history under session, and kept names that version.
func (e *Engine) Move(src, dst *Target, obsS, obsD *Observation, session string) (r atomicfile.Result, kept string, err error) {
	want := ""
	if obsD.Stat.Exists {
		want = obsD.Sum
	}
	r, err = src.Dir.Move(src.Base, obsS.Sum, dst.Dir, dst.Base, want, atomicfile.Options{Park: e.parkDir()})
	if r.Strategy != "" && len(r.Displaced) > 0 {
		kept = e.keepDisplaced(dst, session, r.Displaced)
	}
	return r, kept, err
}
