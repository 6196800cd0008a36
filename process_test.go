//go:build unix

package editguard_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/testutil"
)

// Tests in this file start copies of the test binary as separate processes
// with startWorker: the child runs TestWorkerProcess, which does the job
// named in EDITGUARD_TEST_WORKER and writes what it did as JSON to
// EDITGUARD_TEST_OUT.
const (
	workerEnv    = testutil.WorkerEnv
	workerDirEnv = testutil.WorkerDirEnv
	workerOutEnv = testutil.WorkerOutEnv
	workerArgEnv = testutil.WorkerArgEnv
)

// TestWorkerProcess is the body of a child process; it does nothing in a
// normal test run.
func TestWorkerProcess(t *testing.T) {
	job := os.Getenv(workerEnv)
	if job == "" {
		t.Skip("runs only as a child process of another test")
	}
	dir, arg := os.Getenv(workerDirEnv), os.Getenv(workerArgEnv)
	var out any
	var err error
	switch job {
	case "append":
		out, err = appendWorker(dir, arg)
	case "unguarded":
		out, err = unguardedWorker(dir, arg)
	case "bigread":
		out, err = bigReadWorker(dir, arg)
	case "rawappend":
		out, err = rawAppendWorker(dir, arg)
	case "heldcrash":
		err = heldCrashWorker(dir) // kills itself
	default:
		err = fmt.Errorf("unknown job %q", job)
	}
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(os.Getenv(workerOutEnv), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func waitWorker(t *testing.T, cmd *exec.Cmd, out string, v any) {
	t.Helper()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("worker %v: %v\n%s", cmd.Env[len(cmd.Env)-4:], err, cmd.Stdout)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}

// appendWorker appends to log.txt (or PATH) with appendRounds. arg is
// "ID,ROUNDS,PAUSE[,PATH]".
func appendWorker(dir, arg string) (*appendLog, error) {
	f := strings.Split(arg, ",")
	rounds, _ := strconv.Atoi(f[1])
	pause, _ := time.ParseDuration(f[2])
	target := "log.txt"
	if len(f) > 3 {
		target = f[3]
	}
	w, err := editguard.Open(dir, nil)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	return appendRounds(ctx, w.NewSession(f[0]), target, f[0], rounds, pause)
}

// TestProcessesNoLostUpdate races processes, each with its own workspace
// handle and session, appending to one file: the per-file lock must
// serialise check-then-commit across processes.
func TestProcessesNoLostUpdate(t *testing.T) {
	const procs = 6
	rounds := 8
	if testing.Short() {
		rounds = 4
	}
	w, dir := newWorkspace(t)
	w.Close()
	writeFile(t, dir, "log.txt", "start\n")
	out := t.TempDir()
	cmds := make([]*exec.Cmd, procs)
	for i := range procs {
		cmds[i] = startWorker(t, "append", dir, fmt.Sprintf("p%d,%d,0s", i, rounds), filepath.Join(out, fmt.Sprint(i)))
	}
	logs := make([]*appendLog, procs)
	for i, cmd := range cmds {
		logs[i] = new(appendLog)
		waitWorker(t, cmd, filepath.Join(out, fmt.Sprint(i)), logs[i])
	}
	checkAppended(t, readFile(t, dir, "log.txt"), logs)
	if got, want := countCommitted(logs), procs*rounds; got != want {
		t.Errorf("%d edits committed, want %d", got, want)
	}
	assertNoTemp(t, dir)
}

// unguardedWrite is one completed write of the non-cooperating writer.
type unguardedWrite struct {
	Marker string `json:"marker"`
	Start  int64  `json:"start"` // before reading the file
	End    int64  `json:"end"`   // after os.WriteFile returned
	// Content is what it wrote: the file as it read it plus its marker.
	Content string `json:"content"`
}

// copiedByUnguarded reports whether an unguarded write carried line.
func copiedByUnguarded(uw []unguardedWrite, line string) bool {
	for _, u := range uw {
		if strings.Contains("\n"+u.Content, "\n"+line+"\n") {
			return true
		}
	}
	return false
}

// unguardedWorker is a program that knows nothing of editguard: it appends
// marker lines to log.txt by os.ReadFile and os.WriteFile (truncate and
// write in place), with no lock. arg is "COUNT,PAUSE".
func unguardedWorker(dir, arg string) ([]unguardedWrite, error) {
	f := strings.Split(arg, ",")
	n, _ := strconv.Atoi(f[0])
	pause, _ := time.ParseDuration(f[1])
	p := filepath.Join(dir, "log.txt")
	var log []unguardedWrite
	for i := range n {
		time.Sleep(pause)
		start := time.Now().UnixNano()
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		if len(data) == 0 || data[len(data)-1] != '\n' {
			continue // it too can catch a torn state of its own making; skip
		}
		marker := fmt.Sprintf("U%d", i)
		content := string(data) + marker + "\n"
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return nil, err
		}
		log = append(log, unguardedWrite{Marker: marker, Start: start, End: time.Now().UnixNano(), Content: content})
	}
	return log, nil
}

// TestNonCooperatingWriter races guarded writers against a program that
// rewrites the file without any lock, and counts what each side lost.
//
// A marker line of the unguarded writer that is missing from the final file
// was lost either by a later unguarded write that did not contain it (then
// something replaced the file in between) or, for its last write, by
// whatever came after. Such a loss is charged to the guarded commits only
// if no guarded Edit call overlapped the unguarded write in time: the
// exchange-verify step re-hashes the displaced file after the swap and
// undoes the swap if it is not what was verified, so a write that completed
// before a guarded commit's exchange is never lost. That count must be zero.
// Losses of writes in flight during a guarded call (the unguarded writer
// truncating and writing an inode that the swap just displaced), guarded
// lines overwritten by the unguarded writer's stale read-modify-write, and
// lines of a refused commit that the unguarded writer read while the
// exchange was not yet undone and wrote back, are outside what any lock can
// prevent; they are counted and reported.
func TestNonCooperatingWriter(t *testing.T) {
	const guarded = 2
	rounds, unguardedWrites := 20, 700
	if testing.Short() {
		rounds, unguardedWrites = 10, 150
	}
	w, dir := newWorkspace(t)
	w.Close()
	writeFile(t, dir, "log.txt", "start\n")
	out := t.TempDir()
	var cmds []*exec.Cmd
	for i := range guarded {
		cmds = append(cmds, startWorker(t, "append", dir, fmt.Sprintf("g%d,%d,25ms", i, rounds), filepath.Join(out, fmt.Sprint(i))))
	}
	ucmd := startWorker(t, "unguarded", dir, fmt.Sprintf("%d,3ms", unguardedWrites), filepath.Join(out, "u"))

	var logs []*appendLog
	for i, cmd := range cmds {
		lg := new(appendLog)
		waitWorker(t, cmd, filepath.Join(out, fmt.Sprint(i)), lg)
		logs = append(logs, lg)
	}
	var uw []unguardedWrite
	waitWorker(t, ucmd, filepath.Join(out, "u"), &uw)

	final := readFile(t, dir, "log.txt")
	has := func(content, line string) bool {
		return strings.Contains("\n"+content, "\n"+line+"\n")
	}
	overlaps := func(u unguardedWrite) bool {
		for _, lg := range logs {
			for _, c := range lg.Calls {
				if c[0] <= u.End && u.Start <= c[1] {
					return true
				}
			}
		}
		return false
	}
	var survived, carried, lostInFlight, lostUnexplained int
	for i, u := range uw {
		switch {
		case has(final, u.Marker):
			survived++
		case i+1 < len(uw) && has(uw[i+1].Content, u.Marker):
			carried++ // its loss is the loss of a later write that included it
		case overlaps(u):
			lostInFlight++
		default:
			lostUnexplained++
			t.Errorf("unguarded write %s completed with no guarded call overlapping it, and was lost", u.Marker)
		}
	}
	guardedLost, leaked := 0, 0
	for _, lg := range logs {
		for _, l := range lg.Committed {
			if !has(final, l) {
				guardedLost++
			}
		}
		for _, l := range lg.Refused {
			if !has(final, l) {
				continue
			}
			// A refused commit's content is visible between the exchange
			// and its undo; an unguarded read-modify-write in that window
			// copies it. Any other way in is a defect.
			if copiedByUnguarded(uw, l) {
				leaked++
			} else {
				t.Errorf("refused guarded line %q is in the file, and no unguarded write copied it", l)
			}
		}
	}
	t.Logf("unguarded writes: %d completed; %d in the final file; %d lost but carried by a later unguarded write; "+
		"%d lost while a guarded call was in flight; %d lost otherwise (must be 0)",
		len(uw), survived, carried, lostInFlight, lostUnexplained)
	t.Logf("guarded edits: %d committed, %d refused; %d committed lines later overwritten by the unguarded writer; "+
		"%d refused lines copied by the unguarded writer while the undone exchange was visible",
		countCommitted(logs), len(logs[0].Refused)+len(logs[1].Refused), guardedLost, leaked)
	if survived == 0 {
		t.Error("no unguarded write survived: the test measured nothing")
	}
	assertNoTemp(t, dir)
}

// rawAppendWorker appends lines to log.txt the way "echo >>" does, without
// editguard: open with O_APPEND, write one line, close. arg is
// "COUNT,PAUSE". It returns the lines whose write succeeded.
func rawAppendWorker(dir, arg string) ([]string, error) {
	f := strings.Split(arg, ",")
	count, _ := strconv.Atoi(f[0])
	pause, _ := time.ParseDuration(f[1])
	var written []string
	for i := range count {
		line := fmt.Sprintf("raw-%d", i)
		fd, err := os.OpenFile(filepath.Join(dir, "log.txt"), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return written, err
		}
		_, err = fd.WriteString(line + "\n")
		fd.Close()
		if err != nil {
			return written, err
		}
		written = append(written, line)
		time.Sleep(pause)
	}
	return written, nil
}

// TestUnguardedAppenderLosesNothing races guarded edits against a program
// that appends lines without any lock ("echo >> log.txt"). Every line it
// appended must end on disk or in history: an append that lands in the file
// editguard is replacing is either caught by the verification after the
// exchange (the commit is undone), or found in the displaced file after its
// unlink and saved as a version; one that lands in editguard's new file
// before an undo is saved too.
func TestUnguardedAppenderLosesNothing(t *testing.T) {
	rounds, lines := 30, 3000
	if testing.Short() {
		rounds, lines = 10, 800
	}
	w, dir := newWorkspace(t)
	w.Close()
	writeFile(t, dir, "log.txt", "start\n")
	out := t.TempDir()
	var cmds []*exec.Cmd
	for i := range 2 {
		cmds = append(cmds, startWorker(t, "append", dir, fmt.Sprintf("g%d,%d,1ms", i, rounds), filepath.Join(out, fmt.Sprint(i))))
	}
	raw := startWorker(t, "rawappend", dir, fmt.Sprintf("%d,100us", lines), filepath.Join(out, "raw"))
	var logs []*appendLog
	for i, cmd := range cmds {
		lg := new(appendLog)
		waitWorker(t, cmd, filepath.Join(out, fmt.Sprint(i)), lg)
		logs = append(logs, lg)
	}
	var written []string
	waitWorker(t, raw, filepath.Join(out, "raw"), &written)

	w, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	final := readFile(t, dir, "log.txt")
	has := func(content, line string) bool { return strings.Contains("\n"+content, "\n"+line+"\n") }
	vs, err := w.History("log.txt")
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	rescued := 0
	for _, v := range vs {
		if v.Absent {
			continue
		}
		data, err := editguard.VersionContent(w, "log.txt", v.ID)
		if err != nil {
			t.Fatalf("version %s: %v", v.ID, err)
		}
		kept = append(kept, string(data))
		if v.Op == "displaced_write" {
			rescued++
		}
	}
	// Files taken off the name wait in .editguard/displaced, and any that
	// changed after their verification are moved to .editguard/quarantine.
	quarantined := 0
	for _, sub := range []string{"displaced", "quarantine"} {
		ents, _ := os.ReadDir(filepath.Join(dir, editguard.StateDir, sub))
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(dir, editguard.StateDir, sub, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			kept = append(kept, string(b))
			if sub == "quarantine" {
				quarantined++
			}
		}
	}
	onDisk, inHistory, lost := 0, 0, 0
	for _, l := range written {
		switch {
		case has(final, l):
			onDisk++
		case slices.ContainsFunc(kept, func(c string) bool { return has(c, l) }):
			inHistory++
		default:
			lost++
			t.Errorf("appended line %s is neither in the file nor in history", l)
		}
	}
	t.Logf("%d lines appended without editguard: %d on disk, %d only in history or kept files (%d versions saved from displaced files, %d files quarantined), %d lost; %d guarded edits committed",
		len(written), onDisk, inHistory, rescued, quarantined, lost, countCommitted(logs))
	if countCommitted(logs) == 0 || len(written) == 0 {
		t.Fatal("nothing raced: the test measured nothing")
	}
}
