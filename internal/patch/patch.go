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
	p := &lineParser{lines: lines, i: start + 1}
	closed := p.cutEnd(start)
	var ops []FileOp
	for {
		if p.i >= len(p.lines) {
			if closed {
				return ops, nil
			}
			return nil, p.errAt(`missing "*** End Patch"`)
		}
		// File headers, like the Begin and End Patch lines, may be indented.
		l := p.lines[p.i]
		if t := strings.TrimLeft(l, " \t"); strings.HasPrefix(t, "*** ") {
			l = t
		}
		switch {
		case strings.TrimSpace(l) == "*** End Patch":
			if err := p.afterEnd(); err != nil {
				return nil, err
			}
			return ops, nil
		case strings.HasPrefix(l, "*** Add File: "):
			op, err := p.addFile(l)
			if err != nil {
				return nil, err
			}
			ops = append(ops, op)
		case strings.HasPrefix(l, "*** Delete File: "):
			ops = append(ops, FileOp{Kind: Delete, Path: strings.TrimSpace(strings.TrimPrefix(l, "*** Delete File: "))})
			p.i++
		case strings.HasPrefix(l, "*** Update File: "):
			op, err := p.updateFile(l)
			if err != nil {
				return nil, err
			}
			ops = append(ops, op)
		case strings.TrimSpace(l) == "":
			p.i++
		default:
			return nil, p.errAt("expected a file header (*** Add File:, *** Delete File:, *** Update File:) or *** End Patch, got %q", l)
		}
	}
}

// lineParser is a patch being read: its lines and the index i of the line
// being read, which a syntax error reports.
type lineParser struct {
	lines []string
	i     int
}

// errAt is a *SyntaxError at the line being read.
func (p *lineParser) errAt(msg string, args ...any) error {
	return &SyntaxError{p.i + 1, fmt.Sprintf(msg, args...)}
}

// cutEnd finds whether the apply_patch text that starts at lines[start] is
// closed. The last line ends the patch, spaces around it or not; cutEnd
// leaves only what comes before it to read, so that " *** End Patch" there
// is not taken for a hunk's context line.
func (p *lineParser) cutEnd(start int) bool {
	last := len(p.lines) - 1
	for last > start && strings.TrimSpace(p.lines[last]) == "" {
		last--
	}
	closed := last > start && strings.TrimSpace(p.lines[last]) == "*** End Patch"
	if closed {
		p.lines = p.lines[:last]
	}
	return closed
}

// afterEnd checks that nothing but blank lines follows an "*** End Patch"
// line met before the last line, since such text would be silently
// ignored.
func (p *lineParser) afterEnd() error {
	for _, rest := range p.lines[p.i+1:] {
		if strings.TrimSpace(rest) != "" {
			return p.errAt(`text after "*** End Patch"`)
		}
	}
	return nil
}

// addFile reads an Add File section whose header line is l: its lines,
// each starting with "+", give the new file's content.
func (p *lineParser) addFile(l string) (FileOp, error) {
	op := FileOp{Kind: Add, Path: strings.TrimSpace(strings.TrimPrefix(l, "*** Add File: "))}
	p.i++
	var b strings.Builder
	for p.i < len(p.lines) && !strings.HasPrefix(strings.TrimLeft(p.lines[p.i], " \t"), "***") {
		if !strings.HasPrefix(p.lines[p.i], "+") {
			return FileOp{}, p.errAt(`a line of an added file must start with "+"`)
		}
		b.WriteString(p.lines[p.i][1:] + "\n")
		p.i++
	}
	op.Content = b.String()
	return op, nil
}

// updateFile reads an Update File section whose header line is l: an
// optional "*** Move to:" line and the hunks. An update must move the file
// or change it, and each of its hunks must change something.
func (p *lineParser) updateFile(l string) (FileOp, error) {
	op := FileOp{Kind: Update, Path: strings.TrimSpace(strings.TrimPrefix(l, "*** Update File: "))}
	p.i++
	if p.i < len(p.lines) && strings.HasPrefix(p.lines[p.i], "*** Move to: ") {
		op.MoveTo = strings.TrimSpace(strings.TrimPrefix(p.lines[p.i], "*** Move to: "))
		p.i++
	}
	if err := p.codexHunks(&op); err != nil {
		return FileOp{}, err
	}
	if len(op.Hunks) == 0 && op.MoveTo == "" {
		return FileOp{}, p.errAt("update of %s has no hunks", op.Path)
	}
	for k, h := range op.Hunks {
		if !changes(h) {
			return FileOp{}, &SyntaxError{0, fmt.Sprintf("hunk %d of %s changes nothing", k+1, op.Path)}
		}
	}
	return op, nil
}

// codexHunks reads the hunks of an Update File section into op, up to the
// next "***" line other than "*** End of File".
func (p *lineParser) codexHunks(op *FileOp) error {
	hs := &hunkSet{op: op}
	for p.i < len(p.lines) {
		l := p.lines[p.i]
		if strings.HasPrefix(l, "*** End of File") {
			if hs.h == nil || len(hs.h.Lines) == 0 {
				return p.errAt(`"*** End of File" outside a hunk`)
			}
			hs.h.EndOfFile = true
			hs.flush()
			p.i++
			continue
		}
		if strings.HasPrefix(l, "***") {
			break
		}
		if strings.HasPrefix(l, "@@") {
			hs.at(strings.TrimSpace(strings.TrimPrefix(l, "@@")))
			p.i++
			continue
		}
		if err := p.hunkLine(hs, l); err != nil {
			return err
		}
		p.i++
	}
	if hs.h != nil && len(hs.h.Lines) == 0 {
		return p.errAt(`hunk %d of %s has no lines after its "@@"`, len(op.Hunks)+1, op.Path)
	}
	hs.flush()
	return nil
}

// hunkLine adds l, a line of an Update File section that is neither a
// "***" nor an "@@" line, to the hunk being read.
func (p *lineParser) hunkLine(hs *hunkSet, l string) error {
	if hs.h == nil {
		if len(hs.op.Hunks) > 0 {
			return p.errAt(`expected "@@" to start the next hunk`)
		}
		hs.h = &Hunk{} // the first hunk's "@@" may be left out
	}
	if l == "" {
		// An empty line is an empty context line, as models write it.
		hs.h.Lines = append(hs.h.Lines, Line{' ', ""})
		return nil
	}
	switch l[0] {
	case ' ', '-', '+':
		hs.h.Lines = append(hs.h.Lines, Line{l[0], l[1:]})
		return nil
	default:
		return p.errAt(`a hunk line must start with " ", "-" or "+": %q`, l)
	}
}

// hunkSet collects the hunks of one Update File section into op. h is the
// hunk being read, nil before the first and after "*** End of File".
type hunkSet struct {
	op *FileOp
	h  *Hunk
}

// flush ends the hunk being read, keeping it if it has lines.
func (hs *hunkSet) flush() {
	if hs.h != nil && len(hs.h.Lines) > 0 {
		hs.op.Hunks = append(hs.op.Hunks, *hs.h)
	}
	hs.h = nil
}

// at reads an "@@" line whose anchor text is anchor: it starts a new hunk,
// unless the hunk being read has no lines yet.
func (hs *hunkSet) at(anchor string) {
	if hs.h != nil && len(hs.h.Lines) == 0 {
		// Several @@ lines in a row narrow the place down.
		if anchor != "" {
			hs.h.Anchors = append(hs.h.Anchors, anchor)
		}
		return
	}
	hs.flush()
	hs.h = &Hunk{}
	if anchor != "" {
		hs.h.Anchors = []string{anchor}
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
	p := &lineParser{lines: lines, i: start}
	var renameFrom, renameTo string
	for p.i < len(p.lines) {
		l := p.lines[p.i]
		switch {
		case strings.HasPrefix(l, "diff --git "):
			renameFrom, renameTo = "", ""
			p.i++
		case strings.HasPrefix(l, "rename from "):
			renameFrom = strings.TrimPrefix(l, "rename from ")
			p.i++
		case strings.HasPrefix(l, "rename to "):
			renameTo = strings.TrimPrefix(l, "rename to ")
			p.i++
			// A pure rename has no ---/+++ lines.
			if renameFrom != "" && (p.i >= len(p.lines) || !strings.HasPrefix(p.lines[p.i], "--- ")) {
				ops = append(ops, FileOp{Kind: Update, Path: renameFrom, MoveTo: renameTo})
				renameFrom, renameTo = "", ""
			}
		case strings.HasPrefix(l, "--- "):
			op, err := p.fileDiff()
			if err != nil {
				return nil, err
			}
			ops = append(ops, op)
			renameFrom, renameTo = "", ""
		case strings.HasPrefix(l, "@@ "):
			return nil, p.errAt(`hunk before any "---"/"+++" file header`)
		default:
			p.i++ // git's index, mode and similarity lines, and text around the diff
		}
	}
	_ = renameTo
	return ops, nil
}

// fileDiff reads the diff of one file: its "---" line, which is the line
// being read, its "+++" line and its hunks.
func (p *lineParser) fileDiff() (FileOp, error) {
	l := p.lines[p.i]
	if p.i+1 >= len(p.lines) || !strings.HasPrefix(p.lines[p.i+1], "+++ ") {
		return FileOp{}, p.errAt(`"---" without "+++" after it`)
	}
	oldName, newName := diffName(l[4:]), diffName(p.lines[p.i+1][4:])
	p.i += 2
	var hunks []Hunk
	for p.i < len(p.lines) && strings.HasPrefix(p.lines[p.i], "@@ ") {
		h, err := p.unifiedHunk()
		if err != nil {
			return FileOp{}, err
		}
		hunks = append(hunks, h)
	}
	return p.diffOp(oldName, newName, hunks)
}

// unifiedHunk reads one hunk of a unified diff, its "@@" header being the
// line being read. The header's counts say where the hunk ends, so a line
// they leave out is not taken for the hunk's.
func (p *lineParser) unifiedHunk() (Hunk, error) {
	header := p.lines[p.i]
	oa, ob, nb, ok := hunkHeader(header)
	if !ok {
		return Hunk{}, p.errAt("bad hunk header %q", header)
	}
	p.i++
	h := Hunk{OldStart: oa}
	oldLeft, newLeft := ob, nb
	for p.i < len(p.lines) && (oldLeft > 0 || newLeft > 0) {
		l := p.lines[p.i]
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
			p.i++
			continue
		default:
			return Hunk{}, p.errAt("hunk line %q does not start with \" \", \"-\" or \"+\" (the hunk header counts more lines)", l)
		}
		h.Lines = append(h.Lines, Line{l[0], l[1:]})
		p.i++
	}
	if oldLeft != 0 || newLeft != 0 {
		return Hunk{}, p.errAt("hunk ends early: its header counts more lines")
	}
	for p.i < len(p.lines) && strings.HasPrefix(p.lines[p.i], `\`) {
		p.i++ // "\ No newline at end of file"
	}
	if !changes(h) {
		return Hunk{}, p.errAt("hunk changes nothing")
	}
	return h, nil
}

// hunkHeader reads a unified hunk header: the old start line and the old
// and new line counts. ok is false if header is not one.
func hunkHeader(header string) (oldStart, oldCount, newCount int, ok bool) {
	var oa, ob, na, nb int
	if n, _ := fmt.Sscanf(header, "@@ -%d,%d +%d,%d @@", &oa, &ob, &na, &nb); n != 4 {
		// "@@ -3 +3 @@": a count of 1 is left out.
		ob, nb = 1, 1
		if !scanShort(header, &oa, &ob, &na, &nb) {
			return 0, 0, 0, false
		}
	}
	return oa, ob, nb, true
}

// diffOp makes the FileOp of one file's diff from its names ("" for
// /dev/null) and hunks: an added file's hunks must only add lines, and a
// change that neither moves the file nor has hunks is no change.
func (p *lineParser) diffOp(oldName, newName string, hunks []Hunk) (FileOp, error) {
	switch {
	case oldName == "":
		var b strings.Builder
		for _, h := range hunks {
			for _, l := range h.Lines {
				if l.Op != '+' {
					return FileOp{}, p.errAt("a diff that adds %s has lines other than +", newName)
				}
				b.WriteString(l.Text + "\n")
			}
		}
		return FileOp{Kind: Add, Path: newName, Content: b.String()}, nil
	case newName == "":
		return FileOp{Kind: Delete, Path: oldName}, nil
	default:
		op := FileOp{Kind: Update, Path: oldName, Hunks: hunks}
		if newName != oldName {
			op.MoveTo = newName
		}
		if len(hunks) == 0 && op.MoveTo == "" {
			return FileOp{}, p.errAt("the diff of %s has no hunks", oldName)
		}
		return op, nil
	}
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
