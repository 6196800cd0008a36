package toolset

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/udiff"
)

// What a model sees is bounded in characters, since that is what agent
// clients limit: Claude Code moves a tool result over about 50,000
// characters into a file and shows the model a preview, and Codex cuts the
// middle out of long outputs. The budgets keep every result inline.
const (
	// ReadBudget is about the most characters read_file's text holds when
	// the call gives no limit: the header, the numbered lines and the
	// note on how to read on. The lines end at a line boundary.
	ReadBudget = 25000
	// MaxReadBudget is the most a read_file call may ask for instead
	// (max_chars), to read a large file in fewer calls: Claude Code's
	// threshold above, and under its default cap of 25,000 tokens (at
	// two characters a token or more). Codex cuts results over about
	// 40,000 characters unless configured as `editguard init` does.
	MaxReadBudget = 2 * ReadBudget
	// MinReadBudget is the least max_chars: room for the header, the
	// notes and a line of MaxLineBytes.
	MinReadBudget = 4000
	// DiffBudget is about the most characters of diff a change's result
	// shows the model; a longer diff is cut after whole hunks, with a note
	// of what was left out. The person approving a change sees all of it.
	DiffBudget = 4000
	// ListBudget is about the most characters of the lines that list
	// files in a result of several files (apply_patch, undo_patch); the
	// files after them are counted, with a note of where to see them.
	ListBudget = 4000
	// lineNumberWidth is what numberLines adds to each line: six columns
	// and a TAB.
	lineNumberWidth = 7
)

// readHeader is the first line of read_file's text: the path, which lines
// are shown, the file's SHA-256, and how the file differs from plain UTF-8
// with LF line endings, if it does.
func readHeader(res *editguard.ReadResult, first, last int) string {
	var b strings.Builder
	b.WriteString(res.Path)
	switch {
	case res.TotalLines == 0:
		b.WriteString(": empty file")
	case last < first:
		fmt.Fprintf(&b, ": no lines shown, the file has %d", res.TotalLines)
	case first == 1 && last == res.TotalLines:
		fmt.Fprintf(&b, ": all %d lines", res.TotalLines)
	case first == last:
		fmt.Fprintf(&b, ": line %d of %d", first, res.TotalLines)
	default:
		fmt.Fprintf(&b, ": lines %d-%d of %d", first, last, res.TotalLines)
	}
	if res.SHA256Pending {
		fmt.Fprintf(&b, ", %d bytes, sha256 being computed", res.SizeBytes)
	} else {
		fmt.Fprintf(&b, ", %d bytes, sha256 %s", res.SizeBytes, res.SHA256)
	}
	var notes []string
	if res.Encoding != "" && res.Encoding != "utf-8" {
		notes = append(notes, "encoding "+res.Encoding)
	}
	if res.BOM {
		notes = append(notes, "byte order mark")
	}
	switch res.LineEnding {
	case "crlf":
		notes = append(notes, "CRLF line endings, shown as LF; edits keep CRLF")
	case "mixed":
		notes = append(notes, "mixed LF and CRLF line endings, shown as LF")
	}
	if len(notes) > 0 {
		b.WriteString(" (" + strings.Join(notes, ", ") + ")")
	}
	b.WriteString("\n")
	return b.String()
}

// numberLines renders a read: the header line, then each line the way cat
// -n shows it (the number right-aligned in six columns, a TAB, the line),
// then, when the read did not reach the end of the file, where to go on.
// first is the number of the first line in res.Content. Lines the read cut
// carry the core's marker.
func numberLines(res *editguard.ReadResult, first int) string {
	text := strings.TrimSuffix(res.Content, "\n")
	n := 0
	if res.Content != "" {
		n = strings.Count(text, "\n") + 1
	}
	last := first + n - 1
	var b strings.Builder
	b.Grow(len(res.Content) + n*lineNumberWidth + 512)
	b.WriteString(readHeader(res, first, last))
	if n > 0 {
		// As fmt's "%6d\t%s\n", without its cost on every line.
		var num [20]byte
		i := first
		for line := range strings.SplitSeq(text, "\n") {
			d := strconv.AppendInt(num[:0], int64(i), 10)
			for range lineNumberWidth - 1 - len(d) {
				b.WriteByte(' ')
			}
			b.Write(d)
			b.WriteByte('\t')
			b.WriteString(line)
			b.WriteByte('\n')
			i++
		}
	}
	if res.LinesCut {
		fmt.Fprintf(&b, "(lines marked \"line cut\" are longer than %d bytes and are shown in part)\n", MaxLineBytes)
	}
	switch {
	case n == 0 || last >= res.TotalLines:
	case last+1 == res.TotalLines:
		fmt.Fprintf(&b, "(line %d is not shown: call read_file with offset=%d to read on)\n", last+1, last+1)
	default:
		fmt.Fprintf(&b, "(lines %d-%d are not shown: call read_file with offset=%d to read on)\n", last+1, res.TotalLines, last+1)
	}
	return b.String()
}

// changeText summarises a change for a model: what happened and how much
// changed, the new state, where the displaced content went, warnings, and
// the diff, cut to DiffBudget. A deletion shows no diff: it would repeat
// the whole content.
func changeText(verb string, res *editguard.Result) string {
	var b strings.Builder
	if res.DryRun {
		b.WriteString("Dry run, nothing was written. Would have: ")
	}
	stats := udiff.Count(res.Diff)
	switch {
	case res.Deleted:
		fmt.Fprintf(&b, "%s %s: the file was removed (-%d lines).\n", verb, res.Path, stats.Removed)
	default:
		fmt.Fprintf(&b, "%s %s: %s; now %d bytes, sha256 %s.\n", verb, res.Path, stats, res.SizeBytes, res.SHA256)
	}
	if res.Merged {
		b.WriteString("Merged: the file had changed since your last read; your edit was applied on top of that change, which is kept (shown after your diff).\n")
	}
	if res.Replacements > 1 {
		fmt.Fprintf(&b, "Replacements: %d.\n", res.Replacements)
	}
	var relaxed []string
	for _, m := range res.MatchedWith {
		if m != "exact" {
			relaxed = append(relaxed, m)
		}
	}
	if len(relaxed) > 0 {
		fmt.Fprintf(&b, "Note: old_string matched only after relaxing: %s. Check the diff.\n", strings.Join(relaxed, ", "))
	}
	switch {
	case res.BackupVersion == "":
	case res.Deleted:
		fmt.Fprintf(&b, "Its content is kept as version %s: restore_file with path %s and version %s brings the file back.\n", res.BackupVersion, res.Path, res.BackupVersion)
	case res.Created:
		fmt.Fprintf(&b, "History version %s records that the file did not exist (restore_file with it removes the file).\n", res.BackupVersion)
	default:
		fmt.Fprintf(&b, "The previous content is kept as version %s (file_history, restore_file).\n", res.BackupVersion)
	}
	if info := fileInfoText(res); info != "" {
		b.WriteString(info)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(&b, "Warning: %s\n", w)
	}
	// A deletion's diff is the whole content, which the model read before
	// it could delete the file: the summary above says what it needs.
	if res.Diff != "" && !res.Deleted {
		d, _ := udiff.Bound(res.Diff, DiffBudget)
		b.WriteString("\n")
		b.WriteString(d)
	}
	if res.ExternalDiff != "" {
		d, _ := udiff.Bound(res.ExternalDiff, DiffBudget/2)
		b.WriteString("\nThe other change, since your last read:\n")
		b.WriteString(d)
	}
	return b.String()
}

// fileInfoText is the line on the file a write left: its mode, encoding
// and line endings, those the result gives.
func fileInfoText(res *editguard.Result) string {
	var parts []string
	if res.Mode != "" {
		parts = append(parts, "mode "+res.Mode)
	}
	if res.EncodingUsed != "" {
		parts = append(parts, "encoding "+res.EncodingUsed)
	}
	if res.LineEnding != "" {
		parts = append(parts, "line endings "+res.LineEnding)
	}
	if len(parts) == 0 {
		return ""
	}
	return "File: " + strings.Join(parts, ", ") + ".\n"
}

// moveText summarises a move for a model.
func moveText(res *editguard.Result) string {
	var b strings.Builder
	if res.DryRun {
		b.WriteString("Dry run, nothing was moved. Would have: ")
	}
	fmt.Fprintf(&b, "Moved %s to %s (%d bytes, sha256 %s).\n", res.MovedFrom, res.Path, res.SizeBytes, res.SHA256)
	if res.SourceVersion != "" {
		fmt.Fprintf(&b, "History keeps the content as version %s of %s (restore_file puts it back there).\n", res.SourceVersion, res.MovedFrom)
	}
	switch {
	case res.BackupVersion == "":
	case res.Created:
		fmt.Fprintf(&b, "Version %s of %s records that it did not exist.\n", res.BackupVersion, res.Path)
	default:
		fmt.Fprintf(&b, "The replaced content of %s is kept as its version %s.\n", res.Path, res.BackupVersion)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(&b, "Warning: %s\n", w)
	}
	if res.Diff != "" {
		d, _ := udiff.Bound(res.Diff, DiffBudget)
		b.WriteString("\nThe destination's content changed as follows:\n")
		b.WriteString(d)
	}
	return b.String()
}

// ErrorText renders a failure for a model: the code, the path and the
// message on one line, each detail once, the diff of a STALE_FILE error as
// a block, and the recovery hint. A file state (details.actual, and
// details.expected of a precondition) reads as one line, "exists, 9 bytes,
// sha256 …", a fact that another detail states already is left out, and
// any other detail that is not a string or a list of strings is JSON. The
// whole error object, every detail in its JSON form, is what the library
// returns, what the CLI prints with --json and what an MCP result holds in
// _meta.
func ErrorText(e *editguard.Error) string {
	var b strings.Builder
	b.WriteString(string(e.Code))
	path, _ := e.Details["path"].(string)
	if path != "" {
		b.WriteString(" " + path)
	}
	b.WriteString(": " + e.Message + "\n")
	d := maps.Clone(e.Details)
	delete(d, "path")
	var block string
	if c, ok := d["changes"].(string); ok {
		block = c
		delete(d, "changes")
	}
	// File states, each on a line. A precondition's modification time
	// is set against the file's; otherwise the time says nothing to a
	// model.
	exp, hasExp := d["expected"].(map[string]any)
	if act, ok := fileState(d["actual"]); ok {
		d["actual"] = stateText(act, hasExp && exp["mtime_ms"] != nil)
		// The current hash repeats the state's (empty if the file is gone).
		if cur, isStr := d["current_sha256"].(string); isStr && (cur == act.SHA256 || cur == "" && !act.Exists) {
			delete(d, "current_sha256")
		}
	}
	switch {
	case !hasExp:
	case len(exp) == 1 && exp["sha256"] != nil && exp["sha256"] == d["baseline_sha256"]:
		delete(d, "expected") // the baseline is what was expected
	default:
		d["expected"] = expectedText(exp)
	}
	if d["baseline_updated"] == true {
		delete(d, "baseline_updated") // the message and the hint say so
	}
	for _, k := range slices.Sorted(maps.Keys(d)) {
		fmt.Fprintf(&b, "%s: %s\n", k, detailText(d[k]))
	}
	if block != "" {
		b.WriteString(block)
		if !strings.HasSuffix(block, "\n") {
			b.WriteString("\n")
		}
	}
	if e.RecoveryHint != "" {
		b.WriteString("hint: " + e.RecoveryHint + "\n")
	}
	return b.String()
}

// fileState returns v as a FileState: a details.actual of the library, or
// its JSON decoded.
func fileState(v any) (editguard.FileState, bool) {
	switch v := v.(type) {
	case editguard.FileState:
		return v, true
	case *editguard.FileState:
		if v != nil {
			return *v, true
		}
	case map[string]any:
		var fs editguard.FileState
		b, err := json.Marshal(v)
		if _, known := v["exists"].(bool); known && err == nil && json.Unmarshal(b, &fs) == nil {
			return fs, true
		}
	}
	return editguard.FileState{}, false
}

// stateText renders a file state as read_file's header does: "exists, 9
// bytes, sha256 …", or "does not exist". The modification time is shown
// only with mtime.
func stateText(fs editguard.FileState, mtime bool) string {
	if !fs.Exists {
		return "does not exist"
	}
	s := fmt.Sprintf("exists, %d bytes", fs.Size)
	if fs.SHA256 != "" {
		s += ", sha256 " + fs.SHA256
	}
	if mtime && fs.MtimeMS != 0 {
		s += fmt.Sprintf(", mtime_ms %d", fs.MtimeMS)
	}
	return s
}

// expectedText renders what a precondition expected (details.expected) in
// the terms and order of stateText: "9 bytes, sha256 …, mtime_ms …".
func expectedText(exp map[string]any) string {
	var parts []string
	if v, ok := exp["size_bytes"]; ok {
		parts = append(parts, detailText(v)+" bytes")
	}
	if v, ok := exp["sha256"]; ok {
		parts = append(parts, "sha256 "+detailText(v))
	}
	if v, ok := exp["mtime_ms"]; ok {
		parts = append(parts, "mtime_ms "+detailText(v))
	}
	if len(parts) != len(exp) {
		return detailText(exp) // something else: as it is
	}
	return strings.Join(parts, ", ")
}

// detailText renders one detail value compactly: strings as they are,
// lists of strings joined, anything else as JSON.
func detailText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []string:
		return strings.Join(v, ", ")
	}
	j, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(j)
}

// ReadText returns the file text that read_file's Text shows: the lines
// without the header, the number columns and the notes. It is for programs
// that drive the tools as a model does; the text of a line that read_file
// cut ends with the cut marker.
func ReadText(text string) (string, error) {
	_, body, ok := strings.Cut(text, "\n")
	if !ok {
		return "", fmt.Errorf("read_file text has no header line")
	}
	var b strings.Builder
	for line := range strings.Lines(body) {
		if strings.HasPrefix(line, "(") {
			continue // a note
		}
		n, l, ok := strings.Cut(line, "\t")
		if !ok || strings.TrimLeft(n, " 0123456789") != "" {
			return "", fmt.Errorf("read_file text line %q is not numbered", line)
		}
		b.WriteString(l)
	}
	return b.String(), nil
}
