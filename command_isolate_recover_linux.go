package editguard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Recovering an isolated command whose exec was killed.
//
// exec writes, before the command runs (Isolate, while the command's
// process waits in its namespace for exec's word to start it), where the
// command's overlay is and which process it is into the command's sealed
// active record. Its changes are then only in the overlay's upper layer.
// If exec is killed, the next BeginCommand (of a hook, of exec, of the
// hook server) or RecoverCommands finds the record whose exec and
// command are both gone (or whose deadline passed), and before its
// checkpoint puts the upper layer's changes into the tree as EndIsolated
// does (applyUnendedIsolated): a file someone else changed meanwhile keeps
// their version, the command's stays in the upper layer, listed as a
// conflict. recoverCommands then ends the command against that checkpoint
// with the attribution EndIsolated gives: only the changes it put there
// are the command's (recorded as unended, under its session and tool), any
// other change is someone else's, not recorded. The overlay's directories
// are removed after, but for the upper layer while it keeps a conflict's
// version or a process the command left in the background still lives in
// its mount namespace.
//
// The record is written as BeginCommand writes it, without an fsync: a
// killed process leaves it, a power cut may take it (with the command,
// whose unsynced writes in the upper layer it may take too); the
// directories are then left for a person.

// Isolate records in c's active record, before its command runs, that it
// runs isolated: dir holds the overlay's upper/ and work/, pid is the
// process that will exec the command, in mount namespace mntNS.
func (c *Command) Isolate(ctx context.Context, dir string, pid int, mntNS string) error {
	start, alive := procState(pid)
	if !alive {
		return fmt.Errorf("the command's process %d is gone", pid)
	}
	cp, unlock, err := c.s.w.lockCheckpoints(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	cur, err := cp.readActiveHead(c.act.ID + ".json")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return stateError("read checkpoint", err)
	}
	if cur == nil || cur.ID != c.act.ID || !cur.Started.Equal(c.act.Started) || cur.StartNS != c.act.StartNS {
		return newError(CodeNotFound, "", fmt.Sprintf("command %s has ended already", c.act.ID), "", nil)
	}
	act := *c.act
	act.Isolation = &isolationRecord{Dir: dir, PID: pid, Start: start, MntNS: mntNS}
	act.Seal = cp.mac("command", act.sealFields())
	data, err := json.Marshal(&act)
	if err != nil {
		return err
	}
	if err := cp.active.WriteFileVolatile(act.ID+".json", data, 0o600); err != nil {
		return stateError("write checkpoint", err)
	}
	c.act.Isolation, c.act.Seal = act.Isolation, act.Seal
	return nil
}

// procState returns the start time of process pid (clock ticks after
// boot) and whether it is alive: not gone, and not a zombie waiting to be
// reaped.
func procState(pid int) (start uint64, alive bool) {
	if pid <= 0 {
		return 0, false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, false
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, false
	}
	return start, f[0] != "Z" && f[0] != "X"
}

// sameProcess reports whether process pid, started at start, still runs.
func sameProcess(pid int, start uint64) bool {
	s, alive := procState(pid)
	return alive && s == start
}

// nsProcesses counts the live processes in mount namespace ns ("" for
// none): those an isolated command left in the background.
func nsProcesses(ns string) int {
	if ns == "" {
		return 0
	}
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, d := range ents {
		if d.Name()[0] < '0' || d.Name()[0] > '9' {
			continue
		}
		if l, err := os.Readlink("/proc/" + d.Name() + "/ns/mnt"); err == nil && l == ns {
			n++
		}
	}
	return n
}

// isolatedOver reports whether the isolated command of the active record
// h, begun on this host, will not end on its own: it has the id about to
// begin, its deadline passed, or both exec's process and the command's
// are gone.
func isolatedOver(h *activeCommand, id string, now time.Time) bool {
	deadline := h.Deadline
	if deadline.IsZero() {
		deadline = h.Started.Add(DefaultCommandMaxAge)
	}
	return h.ID == id || !now.Before(deadline) || !processAlive(h.PID) && !sameProcess(h.Isolation.PID, h.Isolation.Start)
}

// applyUnendedIsolated puts into the tree the changes of each isolated
// command of this host whose end will not come (commandOver, with both
// exec's process and the command's gone), as EndIsolated does, and returns
// what it did by command id, for recoverCommands (id is the command about
// to begin, "" for none). A record that does not verify is not acted on.
// The caller holds the checkpoint lock.
func (w *Workspace) applyUnendedIsolated(cp *checkpoints, id string) map[string]*isolatedRecovery {
	heads, err := cp.activeRecords()
	if err != nil {
		return nil
	}
	host, _ := os.Hostname()
	now := time.Now()
	var out map[string]*isolatedRecovery
	for _, h := range heads {
		if h.Isolation == nil || h.Host != host || !isolatedOver(h, id, now) {
			continue
		}
		act, err := cp.readActive(h.ID)
		if err != nil || act.Isolation == nil || !filepath.IsAbs(act.Isolation.Dir) {
			continue
		}
		upper := filepath.Join(act.Isolation.Dir, "upper")
		a := &upperApplier{w: w, before: act.Before, since: act.Before.StartNS - isolateSlack,
			upper: upper, applied: isolatedAttribution{}}
		if _, err := os.Lstat(upper); err != nil {
			a.warn("the command ran isolated, but its changes are not in %s (%v): none was put into the tree", upper, err)
		} else {
			a.apply()
		}
		if out == nil {
			out = map[string]*isolatedRecovery{}
		}
		out[h.ID] = &isolatedRecovery{rec: act.Isolation, applied: a.applied, conflicts: a.conflicts,
			unlisted: a.unlisted, warnings: a.warnings, upper: upper}
	}
	return out
}

// finish adds to res, the result of the isolated command ir recovered,
// what was not put into the tree, and removes the overlay's directories
// but for what is kept (see the section comment). Nil: nothing to do.
func (ir *isolatedRecovery) finish(res *CommandResult) {
	if ir == nil {
		return
	}
	res.Conflicts = ir.conflicts
	if ir.unlisted > 0 {
		res.warn("%d more changes of the command were not put into the tree, as someone else had changed those files meanwhile; they are in %s", ir.unlisted, ir.upper)
	}
	for _, wn := range ir.warnings {
		res.warn("%s", wn)
	}
	if n := nsProcesses(ir.rec.MntNS); n > 0 {
		res.warn("%d process(es) the command left running still see its isolated view: what they write from now on stays in %s and is not put into the tree", n, ir.upper)
		return
	}
	work := filepath.Join(ir.rec.Dir, "work")
	os.Chmod(filepath.Join(work, "work"), 0o700)
	os.RemoveAll(work)
	if len(ir.conflicts) == 0 && ir.unlisted == 0 {
		os.RemoveAll(ir.rec.Dir)
	}
}
