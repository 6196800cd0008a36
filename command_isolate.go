//go:build unix

package editguard

import (
	"encoding/json"

	"github.com/editguard/editguard/internal/rawpath"
)

// Attribution of an isolated command's changes.
//
// A command that ran isolated (EndIsolated: on Linux, editguard exec runs
// it over an overlay of the root, see command_isolate_linux.go) wrote only
// into its overlay's upper layer, which therefore holds exactly its
// changes. EndIsolated puts them into the tree and then ends the command as
// End does, except that only the files it put there are the command's: End
// records a step no ledger record accounts for only if it ends at the
// content EndIsolated left at that path. Any other such step was made in
// the tree by someone else while the command ran (a person's editor, a
// tool outside editguard): it is not recorded at all, like any change made
// outside editguard with no command running, and the result names it with
// ChangedBy set to OutsideChange. As with a change another tool recorded,
// the session's baseline does not follow it and rewind of the session does
// not undo it.

// OutsideChange is the ChangedBy of a change made outside an isolated
// command while it ran.
const OutsideChange = "someone else, outside the command's isolated view"

// CommandConflict is a change an isolated command made that EndIsolated
// did not put into the tree, because the file had changed there since the
// command began (someone else's work, which stays).
type CommandConflict struct {
	Path string `json:"path"`
	// Op is what the command did: created, changed, deleted, or linked
	// (a symbolic link), made a directory.
	Op string `json:"op"`
	// Reason says what the tree held instead.
	Reason string `json:"reason"`
	// Kept is where the command's version is, as a file outside the tree
	// ("" for a deletion, or when it could not be kept).
	Kept string `json:"kept,omitempty"`
}

// MarshalJSON adds, beside a path or kept file that is not UTF-8, its exact
// bytes in hex, as pathjson.go does for the other results.
func (c CommandConflict) MarshalJSON() ([]byte, error) {
	type plain CommandConflict
	w := struct {
		plain
		PathHex string `json:"path_hex,omitempty"`
		KeptHex string `json:"kept_hex,omitempty"`
	}{plain: plain(c)}
	w.Path, w.PathHex = rawpath.Split(c.Path)
	w.Kept, w.KeptHex = rawpath.Split(c.Kept)
	return json.Marshal(&w)
}

// isolatedAttribution is what EndIsolated put into the tree: for each path,
// the state (see unchecked) End must find there for a step to be the
// command's.
type isolatedAttribution map[string]string

// attribute marks each step of steps no record accounts for that the
// isolated command did not make as someone else's (see the section
// comment). With no attribution (a command that did not run isolated),
// steps are as they were.
func (act *activeCommand) attribute(steps []step) []step {
	if act.isolated == nil {
		return steps
	}
	for i := range steps {
		st := &steps[i]
		if st.rec != nil {
			continue
		}
		if want, ok := act.isolated[st.path]; ok && st.last && (st.to == want || st.to == unchecked && want == unchecked) {
			continue
		}
		st.rec = &ledgerStep{name: OutsideChange, other: true}
		st.concurrent = nil
	}
	return steps
}

// isolationRecord is what the active record of an isolated command says of
// its run, written before the command starts (Command.Isolate): where its
// overlay is and which process it is. If exec is killed, the next process
// that begins or recovers commands puts what the command wrote into the
// tree from there and ends it (command_isolate_recover_linux.go).
type isolationRecord struct {
	// Dir holds the overlay's directories, upper/ and work/.
	Dir string `json:"dir"`
	// PID is the command's process, Start its start time (clock ticks
	// after boot, as /proc/PID/stat gives it: a pid used again has
	// another), MntNS its mount namespace, which processes it leaves in
	// the background share.
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
	MntNS string `json:"mnt_ns,omitempty"`
}

// isolatedRecovery is what recovery put into the tree of an isolated
// command whose exec is gone, before the checkpoint it ends the command
// against.
type isolatedRecovery struct {
	rec       *isolationRecord
	applied   isolatedAttribution
	conflicts []CommandConflict
	unlisted  int
	warnings  []string
	upper     string
}
