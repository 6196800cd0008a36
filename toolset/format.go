package toolset

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/editguard/editguard"
)

// numberLines renders a read the way cat -n does: the line number right
// aligned in six columns, a TAB, the line. first is the number of the first
// line in res.Content. Lines longer than MaxLineLength characters are cut
// with a marker; a note at the end says how to read on when the read did not
// reach the end of the file.
func numberLines(res *editguard.ReadResult, first int) string {
	var b strings.Builder
	text := strings.TrimSuffix(res.Content, "\n")
	n := 0
	if res.Content != "" {
		for line := range strings.SplitSeq(text, "\n") {
			fmt.Fprintf(&b, "%6d\t%s\n", first+n, cutLine(line))
			n++
		}
	}
	last := first + n - 1
	switch {
	case res.TotalLines == 0:
		b.WriteString("(the file is empty)\n")
	case n == 0:
		fmt.Fprintf(&b, "(offset %d is past the end of the file, which has %d lines)\n", first, res.TotalLines)
	case last < res.TotalLines:
		fmt.Fprintf(&b, "(showing lines %d-%d of %d; to read more, call read_file with offset=%d)\n", first, last, res.TotalLines, last+1)
	case first > 1:
		fmt.Fprintf(&b, "(showing lines %d-%d of %d)\n", first, last, res.TotalLines)
	}
	return b.String()
}

func cutLine(line string) string {
	if len(line) <= MaxLineLength {
		return line
	}
	// Cut at a character boundary: the MaxLineLength'th rune.
	i, count := 0, 0
	for i < len(line) && count < MaxLineLength {
		_, size := utf8.DecodeRuneInString(line[i:])
		i += size
		count++
	}
	if i >= len(line) {
		return line
	}
	return fmt.Sprintf("%s… [line cut: %d more characters]", line[:i], utf8.RuneCountInString(line[i:]))
}

// changeText summarises a change for a model: what happened, the new state,
// where the displaced content went, and the diff.
func changeText(verb string, res *editguard.Result) string {
	var b strings.Builder
	if res.DryRun {
		b.WriteString("Dry run, nothing was written. Would have: ")
	}
	switch {
	case res.Deleted:
		fmt.Fprintf(&b, "%s %s: the file was removed.\n", verb, res.Path)
	default:
		fmt.Fprintf(&b, "%s %s (%d bytes, sha256 %s).\n", verb, res.Path, res.SizeBytes, res.SHA256)
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
	if res.BackupVersion != "" {
		fmt.Fprintf(&b, "The previous content is kept as version %s (file_history, restore_file).\n", res.BackupVersion)
	}
	if res.Diff != "" {
		b.WriteString("\n")
		b.WriteString(res.Diff)
	}
	return b.String()
}
