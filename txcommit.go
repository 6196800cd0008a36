package editguard

import (
	"errors"
	"fmt"

	"github.com/editguard/editguard/internal/engine"
)

// A transaction's files are put in place by the engine's staged steps
// (internal/engine/tx.go: stage, durable, swap, settle, each paid once for
// all the files); stagedTx carries them for commitTx and turns their
// failures into the caller's errors and warnings.

// stagedTx is a transaction's files between staging and settling.
type stagedTx struct {
	w     *Workspace
	files []*txFile
	tx    []*engine.TxFile // by file
	st    *engine.Staged
}

// stageTx writes every file's new content under its temporary name. On
// error nothing is left staged.
func (w *Workspace) stageTx(files []*txFile, session string, bulk bool) (*stagedTx, error) {
	tx := make([]*engine.TxFile, len(files))
	for i, f := range files {
		tx[i] = &engine.TxFile{T: f.t, Obs: f.obs, Data: f.data, Remove: f.remove}
	}
	st, err := w.eng.Stage(tx, session, bulk)
	if err != nil {
		return nil, txError(err)
	}
	return &stagedTx{w: w, files: files, tx: tx, st: st}, nil
}

// durable makes the history lines of histPaths and the temporary files
// durable; a failure changes nothing.
func (st *stagedTx) durable(histPaths []string) error {
	return txError(st.st.Durable(histPaths))
}

// swap swaps the i-th file in. On error the file is unchanged.
func (st *stagedTx) swap(i int) error {
	if err := st.st.Swap(i); err != nil {
		f := st.files[i]
		return st.w.commitError(f.t, f.obs, err)
	}
	return nil
}

// settle syncs the directories of the files swapped so far and takes off
// what their swaps displaced: it returns a warning for each step that
// failed, since the changes are made.
func (st *stagedTx) settle(session string) []string {
	var warnings []string
	for _, err := range st.st.Settle(session) {
		var pe *engine.PathError
		if errors.As(err, &pe) {
			warnings = append(warnings, fmt.Sprintf("%s is changed, but %v", pe.Path, ioError(pe.Path, pe.Err)))
		}
	}
	for i, f := range st.files {
		if m := st.tx[i].MtimeMS; m != 0 {
			f.mtimeMS = m
		}
	}
	return warnings
}

// abort removes the temporary files of the files not swapped.
func (st *stagedTx) abort() { st.st.Abort() }
