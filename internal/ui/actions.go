package ui

import (
	"net/http"
	"slices"

	"github.com/editguard/editguard"
)

// current names the file as it is now where a version ID is expected.
const current = "current"

// fileState is the file as the page shows it; a restore takes it as its
// precondition.
type fileState struct {
	Exists bool
	SHA256 string
	Size   int64
	Expect string // the SHA-256, or "absent"
}

func (s *Server) fileState(p string) (fileState, []byte, error) {
	st, data, err := s.w.Current(p)
	if err != nil {
		return fileState{}, nil, err
	}
	fs := fileState{Exists: st.Exists, SHA256: st.SHA256, Size: st.Size, Expect: "absent"}
	if st.Exists {
		fs.Expect = st.SHA256
	}
	return fs, data, nil
}

// side returns the content of version id of p, or of the file now.
func (s *Server) side(p, id string, cur []byte, st fileState) content {
	if id == current {
		return content{Data: cur, Absent: !st.Exists}
	}
	data, err := s.w.VersionBytes(p, id)
	if err != nil {
		return content{Unknown: err.Error()}
	}
	return content{Data: data, Absent: data == nil}
}

// fileDiff returns the diff of p between the versions from and to
// ("current" for the file now), as chosen by the query or by default the
// newest version against the file.
func (s *Server) fileDiff(r *http.Request, p string, vs []editguard.Version, cur []byte, st fileState) (from, to, d string, notes []string) {
	from, to = r.URL.Query().Get("from"), r.URL.Query().Get("to")
	if from == "" && len(vs) > 0 {
		from = vs[0].ID
	}
	if to == "" {
		to = current
	}
	if from == "" {
		return from, to, "", nil
	}
	d, notes = diffOf(p, s.side(p, from, cur, st), s.side(p, to, cur, st))
	return from, to, d, notes
}

// file serves every version of a file on one line of time, the diff
// between two of them, and a guarded restore of each.
func (s *Server) file(w http.ResponseWriter, r *http.Request) {
	p, err := queryPath(r)
	if err != nil {
		s.failPage(w, http.StatusBadRequest, err)
		return
	}
	vs, err := s.w.History(p)
	if err != nil {
		s.failPage(w, http.StatusBadRequest, err)
		return
	}
	st, cur, err := s.fileState(p)
	if err != nil {
		s.failPage(w, http.StatusBadRequest, err)
		return
	}
	from, to, d, notes := s.fileDiff(r, p, vs, cur, st)
	line := slices.Clone(vs)
	slices.Reverse(line) // oldest first
	render(w, http.StatusOK, "file", struct {
		base
		Path     string
		State    fileState
		Versions []editguard.Version
		From, To string
		Diff     *shownDiff
		Notes    []string
	}{s.base("file " + p), p, st, line, from, to, showDiff(d), notes})
}

// fileRaw streams the whole diff between two versions of a file.
func (s *Server) fileRaw(w http.ResponseWriter, r *http.Request) {
	p, err := queryPath(r)
	if err != nil {
		s.failPage(w, http.StatusBadRequest, err)
		return
	}
	vs, err := s.w.History(p)
	if err != nil {
		s.failPage(w, http.StatusBadRequest, err)
		return
	}
	st, cur, err := s.fileState(p)
	if err != nil {
		s.failPage(w, http.StatusBadRequest, err)
		return
	}
	_, _, d, _ := s.fileDiff(r, p, vs, cur, st)
	streamText(w, d)
}

// restore puts a version back with Session.Restore, under the
// precondition that the file is still what the page showed: a file
// changed since is refused with STALE_FILE and left as it is.
func (s *Server) restore(w http.ResponseWriter, r *http.Request) {
	p, err := formPath(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	version, expect := r.PostFormValue("version"), r.PostFormValue("expect")
	if p == "" || version == "" || expect == "" {
		http.Error(w, "restore needs path, version and expect", http.StatusBadRequest)
		return
	}
	pre := &editguard.Precondition{ExpectedSHA256: expect}
	if expect == "absent" {
		pre = &editguard.Precondition{MustNotExist: true}
	}
	res, err := s.s.Restore(r.Context(), p, version, &editguard.RestoreOptions{Precondition: pre})
	s.actionPage(w, "restore "+p, res, err, p)
}

// actionPage shows the result of a restore, or its refusal.
func (s *Server) actionPage(w http.ResponseWriter, title string, res *editguard.Result, err error, p string) {
	status := http.StatusOK
	var ev *errorView
	if err != nil {
		status, ev = http.StatusConflict, errorOf(err)
	}
	var d *shownDiff
	if res != nil {
		d = showDiff(res.Diff)
	}
	render(w, status, "done", struct {
		base
		Path   string
		Result *editguard.Result
		Diff   *shownDiff
		Err    *errorView
	}{s.base(title), p, res, d, ev})
}

// rewind rewinds a session's changes with Session.Rewind: with dry=1
// first, showing every file and its diff, then for real; with force=1,
// also the changes a shell command made while their writer was unknown
// (RewindOptions.Force), which the page offers to check once a dry run
// refused some.
func (s *Server) rewind(w http.ResponseWriter, r *http.Request) {
	name := r.PostFormValue("session")
	if name == "" {
		http.Error(w, "rewind needs session", http.StatusBadRequest)
		return
	}
	dry, force := r.PostFormValue("dry") == "1", r.PostFormValue("force") == "1"
	res, err := s.s.Rewind(r.Context(), name, &editguard.RewindOptions{DryRun: dry, Force: force})
	if err != nil {
		s.failPage(w, http.StatusConflict, err)
		return
	}
	type file struct {
		editguard.RewindFile
		Diff *shownDiff
	}
	var files []file
	for _, f := range res.Rewound {
		files = append(files, file{f, showDiff(f.Diff)})
	}
	status, unknown := http.StatusOK, 0
	if len(res.Refused) > 0 {
		status = http.StatusConflict
	}
	for _, f := range res.Refused {
		if f.Error != nil && f.Error.Details["reason"] == editguard.ReasonWriterUnknown {
			unknown++
		}
	}
	render(w, status, "rewound", struct {
		base
		Res     *editguard.RewindResult
		Files   []file
		Force   bool
		Unknown int // refused files a force would check again
	}{s.base("rewind " + name), res, files, force, unknown})
}

// undo undoes a patch transaction with Session.UndoPatch, all or nothing:
// with dry=1 first, then for real.
func (s *Server) undo(w http.ResponseWriter, r *http.Request) {
	tx := r.PostFormValue("tx")
	if tx == "" {
		http.Error(w, "undo needs tx", http.StatusBadRequest)
		return
	}
	dry := r.PostFormValue("dry") == "1"
	res, err := s.s.UndoPatch(r.Context(), tx, &editguard.UndoOptions{DryRun: dry})
	if err != nil {
		s.failPage(w, http.StatusConflict, err)
		return
	}
	type file struct {
		editguard.PatchFile
		Diff *shownDiff
	}
	var files []file
	for _, f := range res.Files {
		files = append(files, file{f, showDiff(f.Diff)})
	}
	render(w, http.StatusOK, "undone", struct {
		base
		Tx    string
		Res   *editguard.PatchResult
		Files []file
	}{s.base("undo " + tx), tx, res, files})
}
