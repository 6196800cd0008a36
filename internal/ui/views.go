package ui

import (
	"bytes"
	"embed"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/cliwords"
	"github.com/editguard/editguard/internal/rawpath"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticRoot embed.FS

// staticFS serves the page's script and style under /static/.
var staticFS fs.FS = staticRoot

// templates parses the pages on first use, not at init: every editguard
// command, and every hook, starts a program that links this package.
var templates = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Funcs(template.FuncMap{
		"short":     shortHash,
		"body":      lineBody,
		"pathHex":   pathHex,
		"add":       func(a, b int) int { return a + b },
		"overReach": func() int { return overReach },
		"ms":        func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
	}).ParseFS(templateFS, "templates/*.html"))
})

func urlEscape(s string) string { return url.QueryEscape(s) }

// pathHex is the hex of a path that is not UTF-8, "" for one that is. A
// form carries it beside the path: the page is UTF-8, so a browser sends
// such a path back with U+FFFD in place of its bytes.
func pathHex(p string) string {
	_, h := rawpath.Split(p)
	return h
}

// formPath is the path a form posts: its exact bytes from path_hex when
// the form carries them.
func formPath(r *http.Request) (string, error) {
	return exactPath(r.PostFormValue("path"), r.PostFormValue("path_hex"))
}

// queryPath is the path a URL's query names, the same way. (A link
// carries the exact bytes percent-encoded; a form sent with GET carries
// path_hex.)
func queryPath(r *http.Request) (string, error) {
	q := r.URL.Query()
	return exactPath(q.Get("path"), q.Get("path_hex"))
}

func exactPath(p, hexBytes string) (string, error) {
	if hexBytes == "" {
		return p, nil
	}
	return rawpath.Join(rawpath.Display(p), hexBytes)
}

// lineBody is a diff line without its first column (+, - or space).
func lineBody(s string) string {
	if s == "" {
		return ""
	}
	return s[1:]
}

func shortHash(s string) string { return s[:min(12, len(s))] }

// member is one file of a timeline row.
type member struct {
	Seq       uint64
	Path      string
	Outcome   string
	Added     int
	Removed   int
	Counted   bool
	Unchanged bool      // a rewind's file that was already as before
	Over      *overInfo // what a merge or an overwrite went over
}

// row is one line of the timeline: a record, or the records of one patch
// transaction, shell command or rewind.
type row struct {
	Seq     uint64
	Time    string
	Session string
	Source  string
	Tool    string
	Outcome string
	Refused bool
	Tx      string
	Command string
	Rewind  string // the session a rewind rewound
	Files   []member
	Added   int
	Removed int
	Counted bool
	Live    bool
	Turn    bool // a begin_turn mark: the session's next turn starts here
}

// rows groups records, newest first, into timeline rows: consecutive
// records of one transaction, command or rewind make one row, and a
// session's begin_turn mark a row of its own that divides its turns.
func (s *Server) rows(recs []*editguard.LedgerRecord, h *histories, live bool) []*row {
	var out []*row
	lastKey := ""
	for _, r := range recs {
		if r.Tool == toolBeginTurn {
			out = append(out, &row{Seq: r.Seq, Time: r.Time.Local().Format(time.RFC3339), Session: r.Session, Tool: r.Tool, Turn: true, Live: live})
			lastKey = ""
			continue
		}
		key := groupOf(r)
		m := member{Seq: r.Seq, Path: r.Path, Outcome: outcomeOf(r), Unchanged: unchangedOf(r)}
		if v, ok := s.lineCounts(r, h); ok {
			m.Added, m.Removed, m.Counted = v[0], v[1], true
		}
		if m.Outcome == outcomeMerged || m.Outcome == outcomeOverwrote {
			m.Over = s.overOf(r)
		}
		if key != "" && key == lastKey {
			out[len(out)-1].add(m, r)
			continue
		}
		lastKey = key
		rw := &row{Seq: r.Seq, Time: r.Time.Local().Format(time.RFC3339), Session: r.Session,
			Source: sourceOf(r), Tool: r.Tool, Outcome: m.Outcome, Tx: txOf(r), Command: commandText(r), Live: live}
		if a, ok := rewindOf(r); ok {
			rw.Rewind = a.Session
		}
		rw.add(m, r)
		out = append(out, rw)
	}
	return out
}

func (rw *row) add(m member, r *editguard.LedgerRecord) {
	rw.Files = append(rw.Files, m)
	if m.Counted {
		rw.Added += m.Added
		rw.Removed += m.Removed
		rw.Counted = true
	}
	if refusedOf(r) {
		rw.Refused = true
	}
	if outcomeRank(m.Outcome) > outcomeRank(rw.Outcome) {
		rw.Outcome = m.Outcome
	}
}

// outcomeRank orders outcomes by how much a row's reader needs to see
// them: the row of several records shows the highest of theirs.
func outcomeRank(o string) int {
	switch o {
	case outcomeUnchanged:
		return 0
	case "ok", "dry_run", "pending", outcomeWriterUnknown:
		return 1
	case outcomeMerged, outcomeOverwrote:
		return 2
	}
	return 3 // a refusal
}

// Changed returns the row's files except a rewind's unchanged ones.
func (rw *row) Changed() []member {
	var out []member
	for _, m := range rw.Files {
		if !m.Unchanged {
			out = append(out, m)
		}
	}
	return out
}

// Unchanged returns a rewind's files that were already as before.
func (rw *row) Unchanged() []member {
	var out []member
	for _, m := range rw.Files {
		if m.Unchanged {
			out = append(out, m)
		}
	}
	return out
}

// Over is what the row's one file's merge or overwrite went over.
func (rw *row) Over() *overInfo {
	if len(rw.Files) != 1 {
		return nil
	}
	return rw.Files[0].Over
}

// overInfo is the other writer's change a merged edit was applied over,
// or a command's change replaced: its content (the record's SHA256Before,
// kept by the record's history version) and the record that made it,
// when the ledger holds one near.
type overInfo struct {
	SHA256  string
	Version string
	Seq     uint64 // the record that left that content; 0 if none found
	Session string
	Tool    string
}

// overReach is how many earlier records of the same file are searched for
// the one whose change a merge or an overwrite went over.
const overReach = 64

// overOf returns what the merge or overwrite r went over.
func (s *Server) overOf(r *editguard.LedgerRecord) *overInfo {
	o := &overInfo{SHA256: r.SHA256Before, Version: r.HistoryVersion}
	if o.SHA256 == "" {
		return o
	}
	_ = s.w.Log(editguard.LogFilter{Path: r.Path, Before: r.Seq, Last: overReach}, func(p *editguard.LedgerRecord) error {
		if p.Outcome == "ok" && p.SHA256After == o.SHA256 {
			o.Seq, o.Session, o.Tool = p.Seq, p.Session, p.Tool // the newest one wins
		}
		return nil
	})
	return o
}

// toolBeginTurn is the ledger's mark of a turn's start.
const toolBeginTurn = "begin_turn"

// base is what every page's header shows.
type base struct {
	Title string
	Trust trustStatus
}

func (s *Server) base(title string) base { return base{Title: title, Trust: s.trust.get()} }

// render executes the template name into w with status.
func render(w http.ResponseWriter, status int, name string, data any) {
	var b bytes.Buffer
	if err := templates().ExecuteTemplate(&b, name, data); err != nil {
		http.Error(w, "page failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = b.WriteTo(w)
}

// failPage shows an error of the library (its code, message and hint).
func (s *Server) failPage(w http.ResponseWriter, status int, err error) {
	render(w, status, "error", struct {
		base
		Err *errorView
	}{s.base("error"), errorOf(err)})
}

// errorView is an error as a page shows it.
type errorView struct {
	Code, Message, Hint string
	Changes             *shownDiff
	Unavailable         string
}

func errorOf(err error) *errorView {
	var e *editguard.Error
	if !asError(err, &e) {
		return &errorView{Code: "ERROR", Message: err.Error()}
	}
	v := &errorView{Code: string(e.Code), Message: e.Message, Hint: e.RecoveryHint}
	if d, ok := e.Details["changes"].(string); ok && d != "" {
		v.Changes = showDiff(d)
	}
	v.Unavailable, _ = e.Details["changes_unavailable"].(string)
	return v
}

func filterFrom(r *http.Request) filter {
	q := r.URL.Query()
	return filter{Path: q.Get("path"), Session: q.Get("session"), Tool: q.Get("tool"),
		Outcome: q.Get("outcome"), Source: q.Get("source")}
}

// timeline serves the newest records, a page at a time from the ledger's
// end (?before=SEQ: the records older than SEQ), with the filters.
func (s *Server) timeline(w http.ResponseWriter, r *http.Request) {
	f := filterFrom(r)
	before, _ := strconv.ParseUint(r.URL.Query().Get("before"), 10, 64)
	newest, err := s.newestSeq()
	if err != nil {
		s.failPage(w, http.StatusInternalServerError, err)
		return
	}
	recs, more, err := s.page(f, before, s.opts.PageSize)
	if err != nil {
		s.failPage(w, http.StatusInternalServerError, err)
		return
	}
	sum, err := s.summary(f.Session)
	if err != nil {
		s.failPage(w, http.StatusInternalServerError, err)
		return
	}
	h := &histories{w: s.w}
	render(w, http.StatusOK, "timeline", struct {
		base
		Sum      *summary
		F        filter
		Rows     []*row
		Newest   string // the first page's address, "" on the first page
		Older    string // the next page's address, "" on the last
		Since    uint64
		Query    string
		Sources  []string
		Outcomes []string
		At       string // when the page was made
		Snapshot bool   // ?snapshot=1: the page does not follow the ledger
	}{s.base("timeline"), sum, f, s.rows(recs, h, false), pageURL(f, 0, before > 0), pageURL(f, oldestOf(recs), more), newest, f.query(),
		[]string{sourceMCP, sourceHook, sourceShell, sourceCLI, sourceRecover},
		[]string{"ok", outcomeMerged, outcomeOverwrote, outcomeWriterUnknown, "refused", "STALE_FILE", "NOT_READ", outcomeUnchanged, "dry_run", "pending"},
		time.Now().Local().Format("2006-01-02 15:04:05"), r.URL.Query().Get("snapshot") == "1"})
}

// pageURL returns the address of the timeline's page of the records older
// than before (0: the newest) with the filters f, or "" when there is no
// such page.
func pageURL(f filter, before uint64, exists bool) string {
	if !exists {
		return ""
	}
	q := f.query()
	if before == 0 {
		return "/?" + q
	}
	if q != "" {
		q += "&"
	}
	return "/?" + q + "before=" + strconv.FormatUint(before, 10)
}

// oldestOf returns the seq of the last of recs (newest first), or 0.
func oldestOf(recs []*editguard.LedgerRecord) uint64 {
	if len(recs) == 0 {
		return 0
	}
	return recs[len(recs)-1].Seq
}

// change serves one record: its diff inline or side by side, or what the
// refusal said, and the other files of its transaction or command.
func (s *Server) change(w http.ResponseWriter, r *http.Request) {
	rec, ok := s.recordParam(w, r)
	if !ok {
		return
	}
	h := &histories{w: s.w}
	d, notes := s.changeDiff(rec, h)
	group, _ := s.group(rec)
	res := resultOf(rec)
	data := struct {
		base
		Rec     *editguard.LedgerRecord
		Source  string
		Outcome string
		Tx      string
		Command string
		Group   []*row
		Diff    *shownDiff
		Notes   []string
		Split   bool
		Refusal *errorView
		Result  *storedResult
		Over    *overInfo // what a merge or an overwrite went over
	}{base: s.base("change " + strconv.FormatUint(rec.Seq, 10)), Rec: rec, Source: sourceOf(rec), Outcome: outcomeOf(rec),
		Tx: txOf(rec), Command: commandText(rec), Diff: showDiff(d), Notes: notes,
		Split: r.URL.Query().Get("view") == "split", Result: res}
	if len(group) > 1 {
		data.Group = s.rows(group, h, false)
	}
	if data.Outcome == outcomeMerged || data.Outcome == outcomeOverwrote {
		data.Over = s.overOf(rec)
	}
	if rec.Outcome == "error" {
		data.Refusal = refusalOf(rec, res)
	}
	render(w, http.StatusOK, "change", data)
}

// refusalOf is the error a refused record's result holds. Its hint speaks
// to the model that made the call ("call read_file on a.go"); for a change
// made at the command line it is said in that line's words ("run
// editguard read a.go"), as the CLI itself said it.
func refusalOf(rec *editguard.LedgerRecord, res *storedResult) *errorView {
	v := &errorView{Code: res.Code, Message: res.Message, Hint: res.RecoveryHint,
		Unavailable: res.detail("changes_unavailable")}
	if v.Hint != "" && sourceOf(rec) == sourceCLI {
		p := res.detail("path")
		if p == "" {
			p = rec.Path
		}
		v.Hint = cliwords.Hint(v.Hint, shellWord(p))
	}
	if d := res.detail("changes"); d != "" {
		v.Changes = showDiff(d)
	}
	return v
}

// shellWord is the path p as an argument of an editguard command at a
// shell: as it is when it needs no quotes, else in single quotes; "PATH"
// for no path. A name that starts with "-" gets "./" first, so that it
// does not read as a flag.
func shellWord(p string) string {
	if p == "" {
		return "PATH"
	}
	if strings.HasPrefix(p, "-") {
		p = "./" + p
	}
	if strings.Trim(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./+@%:,=") == "" {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}

// changeRaw streams a change's whole diff as plain text.
func (s *Server) changeRaw(w http.ResponseWriter, r *http.Request) {
	rec, ok := s.recordParam(w, r)
	if !ok {
		return
	}
	d, _ := s.changeDiff(rec, &histories{w: s.w})
	if rec.Outcome == "error" {
		d = resultOf(rec).detail("changes")
	}
	streamText(w, d)
}

// streamText writes text as plain text, in pieces.
func streamText(w http.ResponseWriter, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fl, _ := w.(http.Flusher)
	rd := strings.NewReader(text)
	buf := make([]byte, 64<<10)
	for {
		n, err := rd.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if fl != nil {
				fl.Flush()
			}
		}
		if err == io.EOF {
			return
		}
	}
}

// recordParam finds the record the path's {seq} names, or answers 404.
func (s *Server) recordParam(w http.ResponseWriter, r *http.Request) (*editguard.LedgerRecord, bool) {
	seq, err := strconv.ParseUint(r.PathValue("seq"), 10, 64)
	if err != nil {
		http.Error(w, "no such record", http.StatusNotFound)
		return nil, false
	}
	rec, err := s.record(seq)
	if err != nil {
		s.failPage(w, http.StatusInternalServerError, err)
		return nil, false
	}
	if rec == nil {
		http.Error(w, "no such record", http.StatusNotFound)
		return nil, false
	}
	return rec, true
}

// session serves the changes of one session, with its rewind and the
// undo of its patches.
func (s *Server) session(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	if name == "" {
		http.Error(w, "which session? (?name=)", http.StatusBadRequest)
		return
	}
	recs, more, err := s.page(filter{Session: name}, 0, 1000)
	if err != nil {
		s.failPage(w, http.StatusInternalServerError, err)
		return
	}
	sum, err := s.summary(name)
	if err != nil {
		s.failPage(w, http.StatusInternalServerError, err)
		return
	}
	var txs []string
	for _, rec := range recs {
		if tx := txOf(rec); tx != "" && rec.Outcome == "ok" && !contains(txs, tx) {
			txs = append(txs, tx)
		}
	}
	render(w, http.StatusOK, "session", struct {
		base
		Sum  *summary
		Name string
		Rows []*row
		More bool
		Txs  []string
	}{s.base("session " + name), sum, name, s.rows(recs, &histories{w: s.w}, false), more, txs})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
