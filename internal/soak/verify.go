package soak

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/history"
	"github.com/editguard/editguard/internal/statedir"
)

// Report is the outcome of a run: what happened, and every broken
// guarantee in Violations.
type Report struct {
	Mode        Mode
	Elapsed     time.Duration
	Files       int // files verified
	CLIWorkers  int
	MCPSessions int
	Own         bool // each writer kept to files of its own

	Attempts  int            // guarded edit attempts
	Committed map[string]int // acknowledged commits by client kind ("cli", "mcp")
	Refused   map[string]int // refusals by error code
	Failed    int            // attempts whose outcome is unknown (transport or process failure)

	// TornReads counts guarded reads that caught the unguarded writer's
	// in-place write half done, each matched with a write in progress.
	TornReads int

	UnguardedWrites int
	// UnguardedLost counts the unguarded writer's markers missing from the
	// final files; each overlapped a guarded commit attempt.
	UnguardedLost int
	// LostToUnguarded counts acknowledged guarded markers missing from the
	// final files, each overwritten by an unguarded read-modify-write that
	// read the file before the commit and wrote it after.
	LostToUnguarded int
	// Phantoms counts markers of refused edits present in the final files,
	// each copied by an unguarded read during the refused commit's
	// exchange-and-back.
	Phantoms int

	// LostUpdates counts acknowledged guarded markers missing with no
	// unguarded write to explain it; TornFiles counts final files, guarded
	// reads and displaced versions that were not whole files with no
	// in-place write to explain it. Each is also a violation.
	LostUpdates int
	TornFiles   int

	LedgerRecords int
	// Merged counts the commits the ledger records as merged over another
	// session's change since the editing session's read (merge.go): the
	// conflicts that no longer cost a refusal.
	Merged int
	// CaughtAtExchange counts STALE_FILE records whose file matched the
	// baseline under the lock but changed before the exchange was
	// verified: the unguarded writer caught by the swap (engine.StepSwap).
	CaughtAtExchange int
	HistoryVersions  int // displaced versions loaded and checked
	HistoryPruned    int // displaced versions removed by retention (older than the newest KeepVersions)
	LeakedTemps      int
	Escapes          int

	// DeviceFlushes counts the flush requests the workspace's block
	// device completed from the writers' start to the server's exit (the
	// whole machine's, Linux only), if FlushesKnown.
	DeviceFlushes int64
	FlushesKnown  bool

	Latency    []Latency
	Violations []string
	ServerLog  string // the server's standard error (warnings), if any
}

// OK reports whether no guarantee was broken.
func (r *Report) OK() bool { return len(r.Violations) == 0 }

// CommittedTotal is the number of acknowledged guarded commits.
func (r *Report) CommittedTotal() int {
	n := 0
	for _, v := range r.Committed {
		n += v
	}
	return n
}

func (r *Report) violate(format string, args ...any) {
	r.Violations = append(r.Violations, fmt.Sprintf(format, args...))
}

// Latency summarises the durations of one kind of call.
type Latency struct {
	Op            string
	N             int
	P50, P99, Max time.Duration
}

// allowedRefusals are the error codes a guarded edit may be refused with in
// each mode. The loop always reads before it edits, so in a soak the only
// legitimate refusal is STALE_FILE; the load mode also accepts NOT_READ,
// which a server may return after expiring an idle session's baselines.
var allowedRefusals = map[Mode]map[string]bool{
	ModeSoak: {"STALE_FILE": true},
	ModeLoad: {"STALE_FILE": true, "NOT_READ": true},
}

// verify checks a finished run. Its rules, for a marker M of a guarded edit
// attempt with call interval [start, end] on file F:
//
//  1. A guarded commit changes F only if F is byte-for-byte what its
//     session read, and our edit only appends, so a guarded commit never
//     removes a marker. Once M is committed, the first write that leaves F
//     without M can only be an unguarded read-modify-write W that read F
//     before M was committed and wrote it after: W.readStart < end and
//     W.writeEnd > start. An acknowledged M missing from F with no such W
//     is a lost update caused by editguard.
//  2. A refused M may still be in F only if the unguarded writer read F
//     while the refused commit had its content exchanged in (the exchange
//     is undone when the displaced content turns out to have changed):
//     the same overlap test. Otherwise a refused edit was written.
//  3. A guarded read that returns a file without its final END line saw a
//     partial file. editguard replaces files whole, so that is legitimate
//     only while an os.WriteFile of the unguarded writer was in progress.
//  4. An unguarded marker can go missing only when the in-place write
//     landed in a file editguard was exchanging (the unguarded writer
//     itself works sequentially), so some guarded attempt on F must
//     overlap the write.
//
// Then, through the library: the ledger verifies; each session's ok and
// refused records match what its client was told; every displaced version
// an ok record names is in history with the recorded sha256 and is a whole
// file, unless retention removed it (only versions older than the newest
// KeepVersions may be gone); and no temp file is left in the tree.
func verify(c *Config, rec *recorder, files fileSet) (*Report, error) {
	rep := &Report{
		Mode: c.Mode, CLIWorkers: c.CLIWorkers, MCPSessions: c.MCPSessions, Own: c.Own,
		Committed: map[string]int{}, Refused: map[string]int{},
		UnguardedWrites: len(rec.writes),
	}
	for _, e := range rec.errors {
		rep.violate("%s", e)
	}
	root := c.WorkspaceDir()
	final := make(map[string]string)
	for _, f := range files.all() {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			rep.violate("final %s: %v", f, err)
			continue
		}
		final[f] = string(data)
	}
	rep.Files = len(final)
	checkMarkers(rep, &events{attempts: rec.attempts, torn: rec.torn, writes: rec.writes}, final, allowedRefusals[c.Mode])
	if err := checkWorkspace(rep, root, rec.attempts); err != nil {
		return nil, err
	}
	checkTemps(rep, root)
	checkEscapes(rep, c.Dir)
	rep.Latency = latencies(rec.lat)
	return rep, nil
}

// events are the recorded events of a run.
type events struct {
	attempts []attempt
	torn     []tornRead
	writes   []unguardedWrite
}

// checkMarkers applies rules 1-4 of verify and checks that each final file
// is whole: a header, known markers each once and in their own file, END.
func checkMarkers(rep *Report, ev *events, final map[string]string, allowed map[string]bool) {
	m := indexMarkers(rep, ev, allowed)
	for f, content := range final {
		m.checkFinal(f, content)
	}
	for _, a := range ev.attempts {
		m.checkAttempt(a)
	}
	for _, t := range ev.torn {
		m.checkTornRead(t)
	}
	for _, w := range ev.writes {
		m.checkUnguarded(w)
	}
}

// markerCheck is the state checkMarkers shares among its rules: the
// events indexed by file and marker, and the markers each final file holds.
type markerCheck struct {
	rep        *Report
	allowed    map[string]bool // refusal codes expected
	writesOf   map[string][]unguardedWrite
	attemptsOf map[string][]attempt
	known      map[string]string          // marker -> file
	present    map[string]map[string]bool // file -> markers in its final content
}

// indexMarkers indexes the events of a run by file and by marker, so that
// each rule looks up the events that may explain what it finds.
func indexMarkers(rep *Report, ev *events, allowed map[string]bool) *markerCheck {
	m := &markerCheck{
		rep: rep, allowed: allowed,
		writesOf:   make(map[string][]unguardedWrite),
		attemptsOf: make(map[string][]attempt),
		known:      make(map[string]string),
		present:    make(map[string]map[string]bool),
	}
	for _, w := range ev.writes {
		m.writesOf[w.file] = append(m.writesOf[w.file], w)
	}
	for _, a := range ev.attempts {
		m.attemptsOf[a.file] = append(m.attemptsOf[a.file], a)
		m.known[a.marker] = a.file
	}
	for _, w := range ev.writes {
		m.known[w.marker] = w.file
	}
	return m
}

// readBefore reports whether an unguarded write read f before [start,
// end] ended and wrote it after it began: rules 1 and 2's explanation of
// a marker gone or left.
func (m *markerCheck) readBefore(f string, start, end time.Duration) bool {
	for _, w := range m.writesOf[f] {
		if w.readStart < end && w.writeEnd > start {
			return true
		}
	}
	return false
}

// checkFinal checks that the final content of f is a whole file of known
// markers, each once and in its own file, and notes the markers present
// for the rules that follow.
func (m *markerCheck) checkFinal(f, content string) {
	m.present[f] = make(map[string]bool)
	lines := strings.Split(content, "\n")
	if len(lines) < 3 || lines[0] != header(f) || lines[len(lines)-2] != endLine || lines[len(lines)-1] != "" {
		m.rep.TornFiles++
		m.rep.violate("final %s is not a whole file (%d bytes): torn or corrupted", f, len(content))
		return
	}
	for _, l := range lines[1 : len(lines)-2] {
		switch {
		case strings.HasPrefix(l, padPrefix):
			// The padding the file started with (Config.Pad).
		case m.present[f][l]:
			m.rep.violate("final %s: line %q appears twice", f, l)
		case m.known[l] == "":
			m.rep.violate("final %s: unknown line %q: torn or corrupted", f, l)
		case m.known[l] != f:
			m.rep.violate("final %s: marker %q belongs in %s", f, l, m.known[l])
		}
		m.present[f][l] = true
	}
}

// checkAttempt counts a guarded attempt by outcome and applies rules 1
// and 2 to its marker: an acknowledged one missing, or a refused one
// present, must be explained by an unguarded write.
func (m *markerCheck) checkAttempt(a attempt) {
	rep := m.rep
	rep.Attempts++
	in := m.present[a.file][a.marker]
	switch a.outcome {
	case acked:
		rep.Committed[kindOf(a.worker)]++
		if in {
			return
		}
		if m.readBefore(a.file, a.start, a.end) {
			rep.LostToUnguarded++
			return
		}
		rep.LostUpdates++
		rep.violate("lost update: %s's marker %s, acknowledged in [%v, %v], is missing from %s and no unguarded write overlapped",
			a.worker, a.marker, a.start, a.end, a.file)
	case refused:
		rep.Refused[a.code]++
		if !m.allowed[a.code] {
			rep.violate("%s: edit of %s refused with %s; only %v are expected", a.worker, a.file, a.code, keys(m.allowed))
		}
		if !in {
			return
		}
		if m.readBefore(a.file, a.start, a.end) {
			rep.Phantoms++
			return
		}
		rep.violate("refused edit written: %s's marker %s (refused with %s in [%v, %v]) is in %s",
			a.worker, a.marker, a.code, a.start, a.end, a.file)
	case failed:
		rep.Failed++
		rep.violate("%s: edit of %s failed: %s", a.worker, a.file, a.detail)
	}
}

// checkTornRead applies rule 3: a guarded read of a partial file is
// legitimate only while an in-place write of that file was in progress.
func (m *markerCheck) checkTornRead(t tornRead) {
	for _, w := range m.writesOf[t.file] {
		if w.writeStart < t.end && w.writeEnd > t.start {
			m.rep.TornReads++
			return
		}
	}
	m.rep.TornFiles++
	m.rep.violate("torn read: %s read %s in [%v, %v] and got %d bytes without END, with no in-place write in progress",
		t.worker, t.file, t.start, t.end, t.size)
}

// checkUnguarded applies rule 4: an unguarded marker missing from its
// final file must have been written while a guarded attempt on the file
// was under way.
func (m *markerCheck) checkUnguarded(w unguardedWrite) {
	if m.present[w.file][w.marker] {
		return
	}
	for _, a := range m.attemptsOf[w.file] {
		if a.start < w.writeEnd && a.end > w.writeStart {
			m.rep.UnguardedLost++
			return
		}
	}
	m.rep.violate("unguarded write %s to %s in [%v, %v] is missing and no guarded attempt overlapped it",
		w.marker, w.file, w.writeStart, w.writeEnd)
}

// kindOf is the client kind ("cli", "mcp") of a worker's session name,
// by which acknowledged commits are counted.
func kindOf(worker string) string {
	kind, _, _ := strings.Cut(worker, "-")
	return kind
}

// keys returns m's keys sorted, so that messages listing them are stable.
func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// checkWorkspace checks the ledger and the history through the library.
func checkWorkspace(rep *Report, root string, attempts []attempt) error {
	w, err := editguard.Open(root, nil)
	if err != nil {
		return fmt.Errorf("soak: open workspace: %w", err)
	}
	defer w.Close()
	if rep.LedgerRecords, err = w.VerifyLedger(); err != nil {
		rep.violate("ledger does not verify: %v", err)
	}
	recorded, versions := scanLedger(rep, w)
	compareTallies(rep, toldTallies(attempts), recorded)

	store, err := openHistory(root)
	if err != nil {
		return fmt.Errorf("soak: open history: %w", err)
	}
	defer store.Close()
	for _, p := range slices.Sorted(maps.Keys(versions)) {
		checkVersions(rep, w, store, p, versions[p])
	}
	return nil
}

// tally counts the outcomes of one session's edits, as its client was told
// them or as the ledger records them.
type tally struct {
	ok      int
	refused map[string]int
	unknown bool // an attempt failed, so its record may say either
	// interrupted counts the intents whose outcome Open recorded as not
	// made.
	interrupted int
}

// tallyOf returns the tally of name in m, adding an empty one if it has
// none.
func tallyOf(m map[string]*tally, name string) *tally {
	t := m[name]
	if t == nil {
		t = &tally{refused: map[string]int{}}
		m[name] = t
	}
	return t
}

// toldTallies counts what each session was told, to compare with what the
// ledger says.
func toldTallies(attempts []attempt) map[string]*tally {
	told := make(map[string]*tally)
	for _, a := range attempts {
		t := tallyOf(told, a.worker)
		switch a.outcome {
		case acked:
			t.ok++
		case refused:
			t.refused[a.code]++
		case failed:
			t.unknown = true
		}
	}
	return told
}

// displaced is a version an ok ledger record says its commit displaced:
// its history ID, its sha256 and the record's sequence number.
type displaced struct {
	id, sum string
	seq     uint64
}

// scanLedger reads every ledger record, checks each on its own and
// returns the outcomes recorded per session and the displaced versions
// per path, for the checks against the clients and the history.
func scanLedger(rep *Report, w *editguard.Workspace) (map[string]*tally, map[string][]displaced) {
	recorded := make(map[string]*tally)
	versions := make(map[string][]displaced)
	err := w.Log(editguard.LogFilter{}, func(r *editguard.LedgerRecord) error {
		checkRecord(rep, r, tallyOf(recorded, r.Session), versions)
		return nil
	})
	if err != nil {
		rep.violate("ledger scan: %v", err)
	}
	return recorded, versions
}

// checkRecord checks one ledger record (the run only edits, and a commit
// names the version it displaced), counts its outcome in t and adds the
// version a commit displaced to versions.
func checkRecord(rep *Report, r *editguard.LedgerRecord, t *tally, versions map[string][]displaced) {
	if r.Tool != "edit_file" {
		rep.violate("ledger record %d: tool %s; the run only edits", r.Seq, r.Tool)
	}
	switch r.Outcome {
	case "ok":
		t.ok++
		if r.Strategy == "merged" {
			rep.Merged++
		}
		if r.HistoryVersion == "" || r.SHA256Before == "" {
			rep.violate("ledger record %d: a commit without history_version or sha256_before", r.Seq)
			return
		}
		versions[r.Path] = append(versions[r.Path], displaced{r.HistoryVersion, r.SHA256Before, r.Seq})
	case "error":
		t.refused[r.ErrorCode]++
		if r.ErrorCode == "STALE_FILE" && r.Baseline != nil && r.Observed != nil && r.Baseline.SHA256 == r.Observed.SHA256 {
			rep.CaughtAtExchange++
		}
	case "interrupted":
		// The outcome Open appended for an intent whose server was
		// killed before it wrote one: the change was not made.
		t.interrupted++
	default:
		rep.violate("ledger record %d: outcome %q", r.Seq, r.Outcome)
	}
}

// compareTallies checks that the ledger names only the run's sessions and
// records, for each session whose every attempt had a known end, exactly
// the commits and refusals its client was told of.
func compareTallies(rep *Report, told, recorded map[string]*tally) {
	for name := range recorded {
		if told[name] == nil {
			rep.violate("ledger names session %q, which no client of the run used", name)
		}
	}
	for name, want := range told {
		if want.unknown {
			continue
		}
		got := recorded[name]
		if got == nil {
			got = &tally{refused: map[string]int{}}
		}
		if got.ok != want.ok {
			rep.violate("session %s: ledger has %d ok records, the client was told of %d commits", name, got.ok, want.ok)
		}
		if got.interrupted != 0 {
			rep.violate("session %s: ledger has %d interrupted changes, the client was told how each attempt ended", name, got.interrupted)
		}
		for _, code := range keys(union(got.refused, want.refused)) {
			if got.refused[code] != want.refused[code] {
				rep.violate("session %s: ledger has %d %s records, the client was refused %d times", name, got.refused[code], code, want.refused[code])
			}
		}
	}
}

// historyRange is the versions the history of one path lists: their
// numbers, the lowest and highest (-1 if none), and how many entries.
type historyRange struct {
	listed map[int]bool
	lo, hi int
	n      int
}

// checkVersions checks the history of p against the versions ds that the
// ledger says its commits displaced: its version numbers run without
// gaps, and each displaced version is there, whole and with its recorded
// sha256, unless retention removed it.
func checkVersions(rep *Report, w *editguard.Workspace, store *history.Store, p string, ds []displaced) {
	list, err := w.History(p)
	if err != nil {
		rep.violate("history of %s: %v", p, err)
		return
	}
	h := historyRange{listed: make(map[int]bool), lo: -1, hi: -1, n: len(list)}
	for _, v := range list {
		n, ok := versionNumber(v.ID)
		if !ok {
			rep.violate("history of %s: version ID %q", p, v.ID)
			continue
		}
		h.listed[n] = true
		if h.lo < 0 || n < h.lo {
			h.lo = n
		}
		h.hi = max(h.hi, n)
	}
	if len(list) > 0 && h.hi-h.lo+1 != len(h.listed) {
		rep.violate("history of %s: versions %d..%d have gaps (%d listed)", p, h.lo, h.hi, len(h.listed))
	}
	for _, d := range ds {
		checkDisplaced(rep, store, p, d, &h)
	}
}

// checkDisplaced checks one displaced version d of p against the history
// h lists: it must be listed, unless older than every listed one while
// retention keeps its limit, and load as a whole file with the sha256 the
// ledger recorded.
func checkDisplaced(rep *Report, store *history.Store, p string, d displaced, h *historyRange) {
	n, ok := versionNumber(d.id)
	switch {
	case !ok:
		rep.violate("ledger record %d: history_version %q", d.seq, d.id)
		return
	case !h.listed[n] && n < h.lo && h.n >= history.DefaultKeepVersions:
		rep.HistoryPruned++
		return
	case !h.listed[n]:
		rep.violate("ledger record %d: displaced version %s of %s is not in history (%d versions listed, %d..%d)", d.seq, d.id, p, h.n, h.lo, h.hi)
		return
	}
	v, data, err := store.Load(p, d.id)
	if err != nil {
		rep.violate("ledger record %d: load %s %s: %v", d.seq, p, d.id, err)
		return
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != d.sum || v.SHA256 != d.sum {
		rep.violate("ledger record %d: version %s of %s has sha256 %s (index %s), the ledger says %s", d.seq, d.id, p, got, v.SHA256, d.sum)
		return
	}
	if !complete(string(data)) {
		rep.TornFiles++
		rep.violate("ledger record %d: version %s of %s is not a whole file (%d bytes)", d.seq, d.id, p, len(data))
	}
	rep.HistoryVersions++
}

// union returns the keys of a and b, so that a code counted on either side
// is compared.
func union(a, b map[string]int) map[string]bool {
	out := make(map[string]bool)
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// versionNumber parses a history version ID such as "v000042".
func versionNumber(id string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(id, "v"))
	return n, err == nil && strings.HasPrefix(id, "v")
}

// checkTemps counts temp files left anywhere in the tree: the commit's
// ".*.egtmp" next to the files and history's ".tmp-*" under .editguard.
func checkTemps(rep *Report, root string) {
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			rep.violate("walk %s: %v", p, err)
			return nil
		}
		name := d.Name()
		if (strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".egtmp") && len(name) > len(".egtmp")) ||
			(strings.HasPrefix(name, ".tmp-") && strings.Contains(p, string(filepath.Separator)+editguard.StateDir+string(filepath.Separator))) {
			rep.LeakedTemps++
			rep.violate("leaked temp file %s", p)
		}
		return nil
	})
}

// checkEscapes counts entries next to the workspace root: nothing the run
// does may create files outside it.
func checkEscapes(rep *Report, dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		rep.violate("read %s: %v", dir, err)
		return
	}
	for _, e := range ents {
		if e.Name() != "ws" {
			rep.Escapes++
			rep.violate("file outside the workspace root: %s", filepath.Join(dir, e.Name()))
		}
	}
}

// latencies computes percentiles per kind of call (nearest rank).
func latencies(lat map[string][]time.Duration) []Latency {
	var out []Latency
	for _, op := range slices.Sorted(maps.Keys(lat)) {
		d := slices.Clone(lat[op])
		slices.Sort(d)
		rank := func(p int) time.Duration { return d[max((p*len(d)+99)/100-1, 0)] }
		out = append(out, Latency{Op: op, N: len(d), P50: rank(50), P99: rank(99), Max: d[len(d)-1]})
	}
	return out
}

// openHistory opens the history store of the workspace at root, as the
// workspace reaches it: through statedir.
func openHistory(root string) (*history.Store, error) {
	rf, err := os.Open(root)
	if err != nil {
		return nil, err
	}
	defer rf.Close()
	state, err := statedir.Open(rf, "", editguard.StateDir)
	if err != nil {
		return nil, err
	}
	defer state.Close()
	hd, err := state.Sub("history", false)
	if err != nil {
		return nil, err
	}
	// The store keeps its subdirectories open; hd itself may close.
	defer hd.Close()
	return history.Open(hd, nil)
}
