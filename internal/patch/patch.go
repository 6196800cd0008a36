// Package patch parses multi-file patches and applies their hunks to text.
// It is pure: it never touches the disk.
//
// Two formats are read, detected by their first significant line: the
// apply_patch grammar of Codex ("*** Begin Patch" ... "*** End Patch", with
// Add File, Delete File, Update File, Move to, "@@" hunks with optional
// anchor text and "*** End of File"), and unified diffs as git diff and
// diff -u write them (a/ and b/ prefixes, /dev/null for added and deleted
// files, renames).
//
// Applying differs from Codex on purpose: a hunk must match exactly one
// place in the file (else *AmbiguousError with the candidate lines), hunks
// of one file may not overlap, and nothing is applied unless every hunk of
// every file matches.
package patch

import (
	"fmt"
	"strings"
)

// Kind is what a FileOp does.
type Kind int

// Kinds of FileOp.
const (
	Add Kind = iota
	Delete
	Update
)

func (k Kind) String() string {
	return [...]string{"add", "delete", "update"}[k]
}

// FileOp is the change a patch makes to one file.
type FileOp struct {
	Kind   Kind
	Path   string // slash-separated, as the patch names it
	MoveTo string // Update only: the file's new path, if it moves
	// Content is an added file's text (LF line endings).
	Content string
	Hunks   []Hunk // Update only
}

// Hunk is one change within a file: lines of context, removed and added.
type Hunk struct {
	// Anchors are lines that must come before the change, in order (the
	// text after "@@" in the apply_patch grammar): the hunk is looked for
	// after the last of them.
	Anchors []string
	// OldStart is the unified diff's old line number (1-based), a hint for
	// messages only; 0 when unknown.
	OldStart int
	Lines    []Line
	// EndOfFile anchors the hunk at the end of the file.
	EndOfFile bool
}

// Line is one line of a hunk: Op is ' ' (context), '-' or '+'. Text has no
// newline.
type Line struct {
	Op   byte
	Text string
}

// Old returns the text the hunk replaces, New the text it puts there, one
// line each with "\n".
func (h *Hunk) Old() string { return h.side('+') }

// New returns the text the hunk puts in place of Old.
func (h *Hunk) New() string { return h.side('-') }

func (h *Hunk) side(skip byte) string {
	var b strings.Builder
	for _, l := range h.Lines {
		if l.Op != skip {
			b.WriteString(l.Text)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// SyntaxError reports a patch that cannot be parsed.
type SyntaxError struct {
	Line int // 1-based line of the patch
	Msg  string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("patch line %d: %s", e.Line, e.Msg) }

// Parse reads a patch in either format. Paths must be relative and stay
// below the root (no "..", not absolute); the caller still resolves them
// as it resolves any path.
func Parse(text string) ([]FileOp, error) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	first := 0
	for first < len(lines) && strings.TrimSpace(lines[first]) == "" {
		first++
	}
	if first == len(lines) {
		return nil, &SyntaxError{1, "the patch is empty"}
	}
	var (
		ops []FileOp
		err error
	)
	if strings.TrimSpace(lines[first]) == "*** Begin Patch" {
		ops, err = parseCodex(lines, first)
	} else {
		ops, err = parseUnified(lines, first)
	}
	if err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		return nil, &SyntaxError{first + 1, "the patch changes no file"}
	}
	seen := map[string]bool{}
	for _, op := range ops {
		for _, p := range []string{op.Path, op.MoveTo} {
			if p == "" {
				continue
			}
			if bad := checkPath(p); bad != "" {
				return nil, &SyntaxError{0, fmt.Sprintf("path %q %s", p, bad)}
			}
			if seen[p] {
				return nil, &SyntaxError{0, fmt.Sprintf("path %q appears twice in the patch", p)}
			}
			seen[p] = true
		}
	}
	return ops, nil
}

func checkPath(p string) string {
	switch {
	case strings.HasPrefix(p, "/"):
		return "is absolute; paths in a patch are relative to the workspace root"
	case p == "." || p == "..":
		return "is not a file"
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return `goes up with ".."`
		}
	}
	return ""
}

// parseCodex reads the apply_patch grammar from lines[start] ("*** Begin Patch").
func parseCodex(lines []string, start int) ([]FileOp, error) {
	var ops []FileOp
	i := start + 1
	errAt := func(msg string, args ...any) error { return &SyntaxError{i + 1, fmt.Sprintf(msg, args...)} }
	// The last line ends the patch, spaces around it or not; read only what
	// comes before it, so that " *** End Patch" there is not taken for a
	// hunk's context line.
	last := len(lines) - 1
	for last > start && strings.TrimSpace(lines[last]) == "" {
		last--
	}
	closed := last > start && strings.TrimSpace(lines[last]) == "*** End Patch"
	if closed {
		lines = lines[:last]
	}
	for {
		if i >= len(lines) {
			if closed {
				return ops, nil
			}
			return nil, errAt(`missing "*** End Patch"`)
		}
		// File headers, like the Begin and End Patch lines, may be indented.
		l := lines[i]
		if t := strings.TrimLeft(l, " \t"); strings.HasPrefix(t, "*** ") {
			l = t
		}
		switch {
		case strings.TrimSpace(l) == "*** End Patch":
			for _, rest := range lines[i+1:] {
				if strings.TrimSpace(rest) != "" {
					return nil, errAt(`text after "*** End Patch"`)
				}
			}
			return ops, nil
		case strings.HasPrefix(l, "*** Add File: "):
			op := FileOp{Kind: Add, Path: strings.TrimSpace(strings.TrimPrefix(l, "*** Add File: "))}
			i++
			var b strings.Builder
			for i < len(lines) && !strings.HasPrefix(strings.TrimLeft(lines[i], " \t"), "***") {
				if !strings.HasPrefix(lines[i], "+") {
					return nil, errAt(`a line of an added file must start with "+"`)
				}
				b.WriteString(lines[i][1:] + "\n")
				i++
			}
			op.Content = b.String()
			ops = append(ops, op)
		case strings.HasPrefix(l, "*** Delete File: "):
			ops = append(ops, FileOp{Kind: Delete, Path: strings.TrimSpace(strings.TrimPrefix(l, "*** Delete File: "))})
			i++
		case strings.HasPrefix(l, "*** Update File: "):
			op := FileOp{Kind: Update, Path: strings.TrimSpace(strings.TrimPrefix(l, "*** Update File: "))}
			i++
			if i < len(lines) && strings.HasPrefix(lines[i], "*** Move to: ") {
				op.MoveTo = strings.TrimSpace(strings.TrimPrefix(lines[i], "*** Move to: "))
				i++
			}
			var h *Hunk
			flush := func() {
				if h != nil && len(h.Lines) > 0 {
					op.Hunks = append(op.Hunks, *h)
				}
				h = nil
			}
			for i < len(lines) {
				l := lines[i]
				if strings.HasPrefix(l, "*** End of File") {
					if h == nil || len(h.Lines) == 0 {
						return nil, errAt(`"*** End of File" outside a hunk`)
					}
					h.EndOfFile = true
					flush()
					i++
					continue
				}
				if strings.HasPrefix(l, "***") {
					break
				}
				if strings.HasPrefix(l, "@@") {
					anchor := strings.TrimSpace(strings.TrimPrefix(l, "@@"))
					if h != nil && len(h.Lines) == 0 {
						// Several @@ lines in a row narrow the place down.
						if anchor != "" {
							h.Anchors = append(h.Anchors, anchor)
						}
					} else {
						flush()
						h = &Hunk{}
						if anchor != "" {
							h.Anchors = []string{anchor}
						}
					}
					i++
					continue
				}
				if h == nil {
					if len(op.Hunks) > 0 {
						return nil, errAt(`expected "@@" to start the next hunk`)
					}
					h = &Hunk{} // the first hunk's "@@" may be left out
				}
				if l == "" {
					// An empty line is an empty context line, as models write it.
					h.Lines = append(h.Lines, Line{' ', ""})
					i++
					continue
				}
				switch l[0] {
				case ' ', '-', '+':
					h.Lines = append(h.Lines, Line{l[0], l[1:]})
				default:
					return nil, errAt(`a hunk line must start with " ", "-" or "+": %q`, l)
				}
				i++
			}
			if h != nil && len(h.Lines) == 0 {
				return nil, errAt(`hunk %d of %s has no lines after its "@@"`, len(op.Hunks)+1, op.Path)
			}
			flush()
			if len(op.Hunks) == 0 && op.MoveTo == "" {
				return nil, errAt("update of %s has no hunks", op.Path)
			}
			for k, h := range op.Hunks {
				if !changes(h) {
					return nil, &SyntaxError{0, fmt.Sprintf("hunk %d of %s changes nothing", k+1, op.Path)}
				}
			}
			ops = append(ops, op)
		case strings.TrimSpace(l) == "":
			i++
		default:
			return nil, errAt("expected a file header (*** Add File:, *** Delete File:, *** Update File:) or *** End Patch, got %q", l)
		}
	}
}

func changes(h Hunk) bool {
	for _, l := range h.Lines {
		if l.Op != ' ' {
			return true
		}
	}
	return false
}

// parseUnified reads unified diffs: one or more files, each with "---" and
// "+++" headers (and, from git, "diff --git", "rename from/to", "new file
// mode" and such lines, of which only renames matter).
func parseUnified(lines []string, start int) ([]FileOp, error) {
	var ops []FileOp
	i := start
	errAt := func(msg string, args ...any) error { return &SyntaxError{i + 1, fmt.Sprintf(msg, args...)} }
	var renameFrom, renameTo string
	for i < len(lines) {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "diff --git "):
			renameFrom, renameTo = "", ""
			i++
		case strings.HasPrefix(l, "rename from "):
			renameFrom = strings.TrimPrefix(l, "rename from ")
			i++
		case strings.HasPrefix(l, "rename to "):
			renameTo = strings.TrimPrefix(l, "rename to ")
			i++
			// A pure rename has no ---/+++ lines.
			if renameFrom != "" && (i >= len(lines) || !strings.HasPrefix(lines[i], "--- ")) {
				ops = append(ops, FileOp{Kind: Update, Path: renameFrom, MoveTo: renameTo})
				renameFrom, renameTo = "", ""
			}
		case strings.HasPrefix(l, "--- "):
			if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "+++ ") {
				return nil, errAt(`"---" without "+++" after it`)
			}
			oldName, newName := diffName(l[4:]), diffName(lines[i+1][4:])
			i += 2
			var hunks []Hunk
			for i < len(lines) && strings.HasPrefix(lines[i], "@@ ") {
				var oa, ob, na, nb int
				header := lines[i]
				if n, _ := fmt.Sscanf(header, "@@ -%d,%d +%d,%d @@", &oa, &ob, &na, &nb); n != 4 {
					// "@@ -3 +3 @@": a count of 1 is left out.
					ob, nb = 1, 1
					if !scanShort(header, &oa, &ob, &na, &nb) {
						return nil, errAt("bad hunk header %q", header)
					}
				}
				i++
				h := Hunk{OldStart: oa}
				oldLeft, newLeft := ob, nb
				for i < len(lines) && (oldLeft > 0 || newLeft > 0) {
					l := lines[i]
					if l == "" {
						l = " " // an empty context line whose space was stripped
					}
					switch l[0] {
					case ' ':
						oldLeft--
						newLeft--
					case '-':
						oldLeft--
					case '+':
						newLeft--
					case '\\':
						i++
						continue
					default:
						return nil, errAt("hunk line %q does not start with \" \", \"-\" or \"+\" (the hunk header counts more lines)", l)
					}
					h.Lines = append(h.Lines, Line{l[0], l[1:]})
					i++
				}
				if oldLeft != 0 || newLeft != 0 {
					return nil, errAt("hunk ends early: its header counts more lines")
				}
				for i < len(lines) && strings.HasPrefix(lines[i], `\`) {
					i++ // "\ No newline at end of file"
				}
				if !changes(h) {
					return nil, errAt("hunk changes nothing")
				}
				hunks = append(hunks, h)
			}
			switch {
			case oldName == "":
				var b strings.Builder
				for _, h := range hunks {
					for _, l := range h.Lines {
						if l.Op != '+' {
							return nil, errAt("a diff that adds %s has lines other than +", newName)
						}
						b.WriteString(l.Text + "\n")
					}
				}
				ops = append(ops, FileOp{Kind: Add, Path: newName, Content: b.String()})
			case newName == "":
				ops = append(ops, FileOp{Kind: Delete, Path: oldName})
			default:
				op := FileOp{Kind: Update, Path: oldName, Hunks: hunks}
				if newName != oldName {
					op.MoveTo = newName
				}
				if len(hunks) == 0 && op.MoveTo == "" {
					return nil, errAt("the diff of %s has no hunks", oldName)
				}
				ops = append(ops, op)
			}
			renameFrom, renameTo = "", ""
		case strings.HasPrefix(l, "@@ "):
			return nil, errAt(`hunk before any "---"/"+++" file header`)
		default:
			i++ // git's index, mode and similarity lines, and text around the diff
		}
	}
	_ = renameTo
	return ops, nil
}

func scanShort(header string, oa, ob, na, nb *int) bool {
	for _, f := range []string{"@@ -%d +%d,%d @@", "@@ -%d,%d +%d @@", "@@ -%d +%d @@"} {
		var a, b, c int
		n, _ := fmt.Sscanf(header, f, &a, &b, &c)
		switch {
		case f == "@@ -%d +%d,%d @@" && n == 3:
			*oa, *ob, *na, *nb = a, 1, b, c
			return true
		case f == "@@ -%d,%d +%d @@" && n == 3:
			*oa, *ob, *na, *nb = a, b, c, 1
			return true
		case f == "@@ -%d +%d @@" && n == 2:
			*oa, *ob, *na, *nb = a, 1, b, 1
			return true
		}
	}
	return false
}

// diffName is the path a ---/+++ line names: "" for /dev/null, without
// the a/ or b/ prefix and any tab-separated timestamp.
func diffName(s string) string {
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSpace(s)
	if s == "/dev/null" {
		return ""
	}
	if strings.HasPrefix(s, "a/") || strings.HasPrefix(s, "b/") {
		return s[2:]
	}
	return s
}
