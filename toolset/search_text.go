package toolset

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"regexp/syntax"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/rawpath"
)

var searchTextTool = &toolDef{
	name: "search_text", title: "Search text",
	description: searchTextDescription,
	input: `{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "What to find: an RE2 regular expression, or plain text with literal: true."},
    "path": {"type": "string", "description": "Directory to search, relative to the workspace root. Default: the root."},
    "glob": {"type": "string", "description": "Only files whose path matches this glob (\"*.go\", \"src/**/*.{ts,tsx}\")."},
    "literal": {"type": "boolean", "description": "Treat pattern as plain text. Default false."},
    "case_insensitive": {"type": "boolean", "description": "Ignore case. Default false."},
    "max_results": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "Most matching lines to return. Default 100."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`,
	annotations: Annotations{ReadOnly: true, Idempotent: true},
	run:         (*Toolset).searchText,
}

const searchTextDescription = `Search the text of files for a regular expression (RE2 syntax) or, with literal, plain text. The result is text: one line per matching line, "path:line: text", in path order, at most max_results (default 100) and about 25,000 characters; long lines are cut. Files that .gitignore excludes, binary files, files over 8 MiB, .git directories and editguard's state are skipped (the result says how many files over 8 MiB it skipped, and binary ones when nothing matched); symlinks are not followed. It does not count as a read: read_file a file before changing it.`

const (
	defaultResults = 100
	maxResults     = 1000
	maxSearchBytes = 8 << 20
	maxShownLine   = 300
)

// searchText runs search_text: it checks the arguments before anything is
// opened, searches the files under the start directory and renders what it
// found and what it did not search.
func (t *Toolset) searchText(ctx context.Context, raw json.RawMessage) (*Output, error) {
	q, path, err := parseSearch(raw)
	if err != nil {
		return nil, err
	}
	display, err := t.startDir("search_text", path)
	if err != nil {
		return nil, err
	}
	s := startSearch(q)
	err = t.ws.Walk(ctx, display, s.visit)
	s.finish()
	if err != nil {
		return nil, err
	}
	return s.output(display), nil
}

// searchQuery is what search_text looks for, its arguments checked.
type searchQuery struct {
	pattern string // as given, for the result's text
	glob    string
	limit   int // the most matching lines returned
	re      *regexp.Regexp
	// must is text every match contains, or nil: it is looked for with
	// bytes.Index first, since most files do not contain it and the
	// regular expression then never runs on them.
	must []byte
}

// parseSearch decodes and checks search_text's arguments, in the order
// their errors are reported, and returns the query and the path argument.
func parseSearch(raw json.RawMessage) (*searchQuery, *string, error) {
	var a struct {
		Pattern         *string `json:"pattern"`
		Path            *string `json:"path"`
		Glob            string  `json:"glob"`
		Literal         bool    `json:"literal"`
		CaseInsensitive bool    `json:"case_insensitive"`
		MaxResults      int     `json:"max_results"`
	}
	if err := decodeArgs("search_text", raw, &a); err != nil {
		return nil, nil, err
	}
	if a.Pattern == nil || *a.Pattern == "" {
		return nil, nil, missing("search_text", "pattern")
	}
	limit := a.MaxResults
	if limit == 0 {
		limit = defaultResults
	}
	if limit < 0 || limit > maxResults {
		return nil, nil, invalidArgument("search_text", fmt.Sprintf("max_results must be between 1 and %d", maxResults), map[string]any{"argument": "max_results"})
	}
	if a.Glob != "" && !validGlob(a.Glob) {
		return nil, nil, invalidArgument("search_text", fmt.Sprintf("bad glob %q", a.Glob), map[string]any{"argument": "glob"})
	}
	re, must, err := compileSearch(*a.Pattern, a.Literal, a.CaseInsensitive)
	if err != nil {
		return nil, nil, err
	}
	return &searchQuery{pattern: *a.Pattern, glob: a.Glob, limit: limit, re: re, must: must}, a.Path, nil
}

// compileSearch compiles the pattern as the literal and case_insensitive
// arguments ask, and returns the text every match must contain, so that a
// bad expression is refused as an argument error naming the pattern.
func compileSearch(pattern string, literal, caseInsensitive bool) (*regexp.Regexp, []byte, error) {
	expr := pattern
	if literal {
		expr = regexp.QuoteMeta(expr)
	}
	if caseInsensitive {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, nil, invalidArgument("search_text", "bad regular expression: "+err.Error(), map[string]any{"argument": "pattern"})
	}
	return re, requiredLiteral(expr), nil
}

// searchJob is one file the walk hands to a worker: its place in path
// order, its path and the open file.
type searchJob struct {
	idx int
	rel string
	f   *editguard.RegularFile
}

// fileSearch is one search in progress. The walk (in the caller's
// goroutine, through visit) opens the files in path order and hands them
// to workers, one per CPU, that read and search them; the results are put
// back in path order. The walk stops once the files handed out hold more
// matching lines than asked for: every file before the last one handed
// out is searched, so the first lines in path order are all found.
type fileSearch struct {
	q       *searchQuery
	jobs    chan searchJob
	mu      sync.Mutex
	found   map[int][]string // matching lines by job index, under mu
	rels    map[int]string   // the path of each job with matching lines, under mu
	total   atomic.Int64     // matching lines found
	binary  atomic.Int64     // binary files met
	workers sync.WaitGroup
	next    int // jobs handed out

	// What the walk met and did not search, and why.
	large      []string
	nLarge     int
	unreadable int
}

// startSearch starts the workers of a search for q, so that files are
// searched while the walk still opens the next ones.
func startSearch(q *searchQuery) *fileSearch {
	s := &fileSearch{q: q, jobs: make(chan searchJob, 256), found: map[int][]string{}, rels: map[int]string{}}
	for range runtime.GOMAXPROCS(0) {
		s.workers.Go(s.work)
	}
	return s
}

// work is one worker: it searches the files handed to it, reusing one
// buffer that grows to the largest, closes them, and keeps their matching
// lines by the files' place in path order.
func (s *fileSearch) work() {
	var buf []byte
	for j := range s.jobs {
		var lines []string
		if size := j.f.Size(); int64(cap(buf)) <= size {
			buf = make([]byte, 0, size+size/8+512)
		}
		var bin bool
		lines, buf, bin = searchFile(j.f, buf, s.q.re, s.q.must, j.rel, s.q.limit+1)
		j.f.Close()
		if bin {
			s.binary.Add(1)
		}
		if len(lines) > 0 {
			s.total.Add(int64(len(lines)))
			s.mu.Lock()
			s.found[j.idx] = lines
			s.rels[j.idx] = j.rel
			s.mu.Unlock()
		}
	}
}

// visit is the walk's callback: it hands a file the glob admits to the
// workers, counts those it cannot open or that are too large so that the
// result can say so, and stops the walk once enough lines were found.
func (s *fileSearch) visit(wf *editguard.WalkFile) bool {
	if s.q.glob != "" && !matchGlob(s.q.glob, wf.Rel) {
		return true
	}
	f, err := wf.Open()
	if err != nil {
		s.unreadable++
		return true
	}
	if f.Size() > maxSearchBytes {
		if s.nLarge++; len(s.large) < maxSkippedNames {
			s.large = append(s.large, wf.Path)
		}
	}
	if f.Size() > maxSearchBytes || f.Size() == 0 {
		f.Close()
		return true
	}
	s.jobs <- searchJob{s.next, wf.Path, f}
	s.next++
	return s.total.Load() <= int64(s.q.limit)
}

// finish ends the search once the walk is over: no more files come, and
// every file handed out has been searched.
func (s *fileSearch) finish() {
	close(s.jobs)
	s.workers.Wait()
}

// output renders the finished search for the model, rooted at display:
// a heading, the matching lines, and what was not searched.
func (s *fileSearch) output(display string) *Output {
	lines, results, files, more := s.collect()
	n := len(results)
	var out strings.Builder
	switch {
	case n == 0:
		fmt.Fprintf(&out, "No matches for %s %s.\n", s.q.pattern, under(display))
	case more:
		fmt.Fprintf(&out, "First %d matching lines (more exist; narrow the pattern, path or glob, or raise max_results):\n", n)
	default:
		fmt.Fprintf(&out, "%d matching lines in %d files:\n", n, files)
	}
	out.WriteString(lines)
	notes, skipped := s.skipped(n)
	structured := map[string]any{"matches": n, "truncated": more, "results": results}
	meta := map[string]any{"matches": n, "files": files, "truncated": more}
	if len(notes) > 0 {
		fmt.Fprintf(&out, "Not searched: %s.\n", strings.Join(notes, "; "))
	}
	if len(skipped) > 0 {
		structured["skipped"], meta["skipped"] = skipped, skipped
	}
	return &Output{Structured: structured, Text: out.String(), Meta: meta}
}

func (m SearchMatch) MarshalJSON() ([]byte, error) {
	type plain SearchMatch
	w := struct {
		plain
		PathHex string `json:"path_hex,omitempty"`
	}{plain: plain(m)}
	w.Path, w.PathHex = rawpath.Split(m.Path)
	return json.Marshal(&w)
}

// SearchMatch is one matching line of search_text's structured result.
type SearchMatch struct {
	// Path is the exact path; its JSON shows each byte that is not UTF-8
	// as U+FFFD, with the exact bytes in path_hex beside.
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"` // cut like the text's, when long
}

// collect joins the matching lines in path order, within the line limit
// and the result's budget, and returns them with the lines as records, how
// many files they are in and whether some were left out.
func (s *fileSearch) collect() (lines string, results []SearchMatch, files int, more bool) {
	var b strings.Builder
	budget := ReadBudget - readOverhead
	results = []SearchMatch{}
	for idx := range s.next {
		found := s.found[idx]
		if len(found) > 0 {
			files++
		}
		for _, entry := range found {
			if len(results) == s.q.limit || b.Len()+len(entry) > budget {
				return b.String(), results, files, true
			}
			b.WriteString(entry)
			results = append(results, matchRecord(s.rels[idx], entry))
		}
	}
	return b.String(), results, files, false
}

// matchRecord reads back an entry "rel:line: text\n" of the file rel.
func matchRecord(rel, entry string) SearchMatch {
	rest := strings.TrimSuffix(strings.TrimPrefix(entry, rel+":"), "\n")
	m := SearchMatch{Path: rel}
	num, text, _ := strings.Cut(rest, ": ")
	m.Line, _ = strconv.Atoi(num)
	m.Text = text
	return m
}

// skipped says what was not searched, so that "no matches" is never a
// silent "not looked at": the notes for the text and the counts for the
// structured result, given the n lines that matched.
func (s *fileSearch) skipped(n int) ([]string, map[string]any) {
	skipped := map[string]any{}
	var notes []string
	if s.nLarge > 0 {
		names := strings.Join(s.large, ", ")
		if s.nLarge > len(s.large) {
			names += ", ..."
		}
		notes = append(notes, fmt.Sprintf("%d over %d MiB (%s; read_file reads them by pages)", s.nLarge, maxSearchBytes>>20, names))
		skipped["over_size"], skipped["over_size_files"] = s.nLarge, s.large
	}
	if nb := s.binary.Load(); nb > 0 {
		// Said in the text only when nothing matched: most trees have
		// binary files, and a model then needs no word about them.
		if n == 0 {
			notes = append(notes, fmt.Sprintf("%d binary", nb))
		}
		skipped["binary"] = nb
	}
	if s.unreadable > 0 {
		notes = append(notes, fmt.Sprintf("%d unreadable", s.unreadable))
		skipped["unreadable"] = s.unreadable
	}
	return notes, skipped
}

// maxSkippedNames is how many files too large to search a result names.
const maxSkippedNames = 5

// searchFile reads f (into buf, which it returns for reuse) and returns
// its matching lines as "rel:line: text\n", at most max of them, and
// whether it is binary (a NUL in its first 8,000 bytes): binary files have
// none.
func searchFile(f *editguard.RegularFile, buf []byte, re *regexp.Regexp, must []byte, rel string, max int) ([]string, []byte, bool) {
	data, err := f.ReadAll(buf, maxSearchBytes)
	if err != nil {
		return nil, buf, false
	}
	if bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
		return nil, data, true
	}
	if must != nil && bytes.Index(data, must) < 0 {
		return nil, data, false
	}
	locs := re.FindAllIndex(data, -1)
	var out []string
	line, pos, lastLine := 1, 0, 0
	for _, loc := range locs {
		line += bytes.Count(data[pos:loc[0]], []byte{'\n'})
		pos = loc[0]
		if line == lastLine {
			continue // one result per line
		}
		lastLine = line
		start := bytes.LastIndexByte(data[:loc[0]], '\n') + 1
		end := bytes.IndexByte(data[loc[0]:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += loc[0]
		}
		text := strings.TrimSuffix(string(data[start:end]), "\r")
		out = append(out, fmt.Sprintf("%s:%d: %s\n", rel, line, shortLine(text)))
		if len(out) == max {
			break
		}
	}
	return out, data, false
}

// requiredLiteral returns the longest literal text that every match of the
// regular expression expr contains (a literal piece of a top-level
// concatenation), or nil. Case-folded pieces do not count.
func requiredLiteral(expr string) []byte {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	re = re.Simplify()
	lit := func(r *syntax.Regexp) []byte {
		if r.Op != syntax.OpLiteral || r.Flags&syntax.FoldCase != 0 {
			return nil
		}
		return []byte(string(r.Rune))
	}
	if re.Op != syntax.OpConcat {
		return lit(re)
	}
	var best []byte
	for _, sub := range re.Sub {
		if l := lit(sub); len(l) > len(best) {
			best = l
		}
	}
	return best
}

// shortLine cuts a matching line for the result at a character boundary.
func shortLine(s string) string {
	if len(s) <= maxShownLine {
		return s
	}
	i := maxShownLine
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + fmt.Sprintf("… [%d more bytes]", len(s)-i)
}
