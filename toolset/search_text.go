package toolset

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode/utf8"
)

func init() {
	register(&toolDef{
		order: 28, name: "search_text", title: "Search text",
		description: searchTextDescription,
		input: json.RawMessage(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "What to find: an RE2 regular expression, or plain text with literal: true."},
    "path": {"type": "string", "description": "Directory to search, relative to the workspace root. Default: the root."},
    "glob": {"type": "string", "description": "Only files whose path matches this glob (\"*.go\", \"src/**/*.ts\")."},
    "literal": {"type": "boolean", "description": "Treat pattern as plain text. Default false."},
    "case_insensitive": {"type": "boolean", "description": "Ignore case. Default false."},
    "max_results": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "Most matching lines to return. Default 100."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`),
		annotations: Annotations{ReadOnly: true, Idempotent: true},
		run:         (*Toolset).searchText,
	})
}

const searchTextDescription = `Search the text of files for a regular expression (RE2 syntax) or, with literal, plain text. The result is text: one line per matching line, "path:line: text", in path order, at most max_results (default 100) and about 25,000 characters; long lines are cut. Files that .gitignore excludes, binary files, files over 8 MiB, .git directories and editguard's state are skipped; symlinks are not followed. It does not count as a read: read_file a file before changing it.`

const (
	defaultResults = 100
	maxResults     = 1000
	maxSearchBytes = 8 << 20
	maxShownLine   = 300
)

func (t *Toolset) searchText(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a struct {
		Pattern         *string `json:"pattern"`
		Path            *string `json:"path"`
		Glob            string  `json:"glob"`
		Literal         bool    `json:"literal"`
		CaseInsensitive bool    `json:"case_insensitive"`
		MaxResults      int     `json:"max_results"`
	}
	if err := decodeArgs("search_text", raw, &a); err != nil {
		return nil, err
	}
	if a.Pattern == nil || *a.Pattern == "" {
		return nil, missing("search_text", "pattern")
	}
	limit := a.MaxResults
	if limit == 0 {
		limit = defaultResults
	}
	if limit < 0 || limit > maxResults {
		return nil, invalidArgument("search_text", fmt.Sprintf("max_results must be between 1 and %d", maxResults), map[string]any{"argument": "max_results"})
	}
	if a.Glob != "" && !validGlob(a.Glob) {
		return nil, invalidArgument("search_text", fmt.Sprintf("bad glob %q", a.Glob), map[string]any{"argument": "glob"})
	}
	expr := *a.Pattern
	if a.Literal {
		expr = regexp.QuoteMeta(expr)
	}
	if a.CaseInsensitive {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, invalidArgument("search_text", "bad regular expression: "+err.Error(), map[string]any{"argument": "pattern"})
	}
	// A literal (or a pattern with a literal prefix) is looked for with
	// bytes.Index first: most files do not contain it at all.
	var must []byte
	if prefix, _ := re.LiteralPrefix(); prefix != "" && !a.CaseInsensitive {
		must = []byte(prefix)
	}
	root, dir, display, err := t.startDir("search_text", a.Path)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	var (
		b       strings.Builder
		n       int
		files   int
		more    bool
		budget  = ReadBudget - readOverhead
		readBuf []byte
	)
	w := &walker{root: root}
	err = w.walk(ctx, dir, func(rel string, size int64) bool {
		if size > maxSearchBytes || size == 0 {
			return true
		}
		under := rel
		if dir != "." {
			under = strings.TrimPrefix(strings.TrimPrefix(rel, dir), "/")
		}
		if a.Glob != "" && !matchGlob(a.Glob, under) {
			return true
		}
		f, err := root.Open(rel)
		if err != nil {
			return true
		}
		if cap(readBuf) < int(size)+1 {
			readBuf = make([]byte, 0, size+size/8+1)
		}
		data, err := readAllInto(readBuf[:0], f, maxSearchBytes)
		f.Close()
		if err != nil {
			return true
		}
		readBuf = data
		if bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
			return true // binary
		}
		if must != nil && bytes.Index(data, must) < 0 {
			return true
		}
		locs := re.FindAllIndex(data, -1)
		if len(locs) == 0 {
			return true
		}
		files++
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
			entry := fmt.Sprintf("%s:%d: %s\n", rel, line, shortLine(text))
			if n == limit || b.Len()+len(entry) > budget {
				more = true
				return false
			}
			b.WriteString(entry)
			n++
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	var out strings.Builder
	switch {
	case n == 0:
		fmt.Fprintf(&out, "No matches for %s under %s.\n", *a.Pattern, display)
	case more:
		fmt.Fprintf(&out, "First %d matching lines (more exist; narrow the pattern, path or glob, or raise max_results):\n", n)
	default:
		fmt.Fprintf(&out, "%d matching lines in %d files:\n", n, files)
	}
	out.WriteString(b.String())
	return &Output{Structured: map[string]any{"matches": n, "truncated": more}, Text: out.String(), Meta: map[string]any{"matches": n, "files": files, "truncated": more}}, nil
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

// readAllInto reads r to the end into buf, up to max bytes.
func readAllInto(buf []byte, r io.Reader, max int64) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > max {
			return nil, fmt.Errorf("file grew past %d bytes", max)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
