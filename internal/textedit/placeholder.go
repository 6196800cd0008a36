package textedit

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/editguard/editguard/internal/udiff"
)

// Placeholder is a line of new content that stands for omitted content,
// such as "// ... rest of code ..." or "# (unchanged)".
type Placeholder struct {
	Line int    // 1-based line in the new content
	Text string // the line, trimmed
}

// PlaceholderError reports new content with omission placeholders. Writing
// it would replace real code with a comment about code.
type PlaceholderError struct {
	Index        int // which edit, 0-based; -1 for a whole-file write
	Placeholders []Placeholder
}

func (e *PlaceholderError) Error() string {
	p := e.Placeholders[0]
	what := "content"
	if e.Index >= 0 {
		what = fmt.Sprintf("edit %d: new_string", e.Index)
	}
	return fmt.Sprintf("%s has an omission placeholder at line %d: %q", what, p.Line, p.Text)
}

// CheckPlaceholders returns a *PlaceholderError for the first edit whose New
// has placeholder lines that neither its Old nor text (the file) has.
func CheckPlaceholders(text string, edits []Edit) error {
	for i, e := range edits {
		var found []Placeholder
		for _, p := range DetectPlaceholders(e.Old, e.New) {
			if !strings.Contains(text, p.Text) {
				found = append(found, p)
			}
		}
		if len(found) > 0 {
			return &PlaceholderError{Index: i, Placeholders: found}
		}
	}
	return nil
}

// DetectPlaceholders returns the lines of newText that look like omission
// placeholders and do not occur in oldText: a comment that only says
// "...", or says that code is omitted ("rest of code", "existing code",
// "unchanged", "remaining methods", ...), or a bare "..." line that is not
// the body of a Python block. Spread and variadic syntax ("...args") and a
// "..." that oldText already had are not placeholders.
//
// Only the lines between what the two texts share at the start and at the
// end are looked at: a line in the shared part is in oldText, so it cannot
// be a new placeholder, and a whole-file write that changes a few lines of
// a large file costs those lines, not the file.
func DetectPlaceholders(oldText, newText string) []Placeholder {
	var out []Placeholder
	// The changed lines are found by their offsets: splitting a large file
	// into lines would cost more than looking at the few that changed.
	first, last, pos := changedLines(oldText, newText, strings.Count(newText, "\n")+1)
	for i := first; i < last; i++ {
		start, l := pos, newText[pos:]
		if end := strings.IndexByte(l, '\n'); end >= 0 {
			l, pos = l[:end], pos+end+1
		} else {
			pos = len(newText)
		}
		t := strings.TrimSpace(l)
		// The pattern test first: it looks at one line, while the
		// search of the old text is linear in the file, and doing it for
		// every line made a large write quadratic.
		if t == "" || !isPlaceholderAfter(t, func() (string, bool) { return lastNonBlank(newText[:start]) }, l) || strings.Contains(oldText, t) {
			continue
		}
		out = append(out, Placeholder{Line: i + 1, Text: t})
	}
	return out
}

// lastNonBlank returns the last line of text (whole lines, each ending in
// a newline) that is not blank, with trailing blanks trimmed.
func lastNonBlank(text string) (string, bool) {
	for len(text) > 0 {
		text = text[:len(text)-1] // the newline that ends the line
		j := strings.LastIndexByte(text, '\n') + 1
		if p := strings.TrimRight(text[j:], " \t"); strings.TrimSpace(p) != "" {
			return p, true
		}
		text = text[:j]
	}
	return "", false
}

// changedLines returns the range [first, last) of newText's lines (it has
// n) that are not in the prefix or suffix of whole lines newText shares
// with oldText, and the offset in newText where line first starts.
func changedLines(oldText, newText string, n int) (first, last, start int) {
	p := udiff.CommonPrefix(oldText, newText)
	p = strings.LastIndexByte(newText[:p], '\n') + 1 // back to a line start
	first = strings.Count(newText[:p], "\n")
	sfx := udiff.CommonSuffix(oldText[p:], newText[p:])
	// Forward to just after a newline inside the suffix: a whole line.
	if i := strings.IndexByte(newText[len(newText)-sfx:], '\n'); i >= 0 {
		sfx -= i + 1
	} else {
		sfx = 0
	}
	last = n - strings.Count(newText[len(newText)-sfx:], "\n")
	return first, max(last, first), p
}

// commentForms strip the comment syntax of common languages.
var commentForms = []struct{ open, close string }{
	{"<!--", "-->"}, {"{/*", "*/}"}, {"/*", "*/"}, {"(*", "*)"}, {`"""`, `"""`},
	{"//", ""}, {"#", ""}, {"--", ""}, {";", ""},
}

// placeholderREs are the regular expressions of isPlaceholder, compiled
// when it first needs them rather than at every start of a program.
var placeholderREs = sync.OnceValue(func() *placeholderRE {
	return &placeholderRE{
		ellipsisOnly: regexp.MustCompile(`^[\[\(\{]?\s*(\.\.\.+|…)\s*[\]\)\}]?$`),
		// omission phrases, matched against a comment body in lower case
		// with punctuation turned into spaces. The words that may follow a
		// phrase are a closed set, so that "rest of the function handles
		// errors" is a real comment, not a placeholder.
		omission: regexp.MustCompile(`^(?:` +
			`(?:the )?(?:rest|remainder) of (?:the )?(?:\w+ ){0,2}(?:code|file|function|method|class|implementation|body|module|component|imports|tests|cases|content|logic|styles|config|properties|fields|functions|methods)` + trail +
			`|(?:keep(?:ing)? |preserve )?(?:the )?(?:existing|previous|original|other|remaining|unchanged|old|same) (?:\w+ ){0,2}(?:code|implementation|methods|functions|imports|content|lines|logic|fields|cases|tests|properties|styles|config|declarations|definitions|handlers|routes|components|stuff)` + trail +
			`|(?:\w+ ){0,3}(?:unchanged|omitted|elided|truncated|same as before|as before|remains? the same|stays the same|not shown)(?: for brevity)?` +
			`|(?:more|other) (?:\w+ ){0,2}(?:here|below|above)` +
			`|etc` +
			`)$`),
		// strongOmission phrases mean omission even without "..." or
		// brackets.
		strongOmission: regexp.MustCompile(`^(?:` +
			`(?:the )?(?:rest|remainder) of .*` +
			`|(?:keep(?:ing)? |preserve )?(?:the )?existing (?:\w+ ){0,2}code.*` +
			`|.*(?:code|implementation) (?:unchanged|omitted|remains the same).*` +
			`|.*omitted for brevity` +
			`)$`),
		nonWord: regexp.MustCompile(`[^\p{L}\p{N}]+`),
	}
})

type placeholderRE struct {
	ellipsisOnly, omission, strongOmission, nonWord *regexp.Regexp
}

// isPlaceholderAfter reports whether the trimmed line t is a placeholder.
// prev gives the last preceding line that is not blank (trailing blanks
// trimmed), and is called only when needed; raw is t untrimmed.
func isPlaceholderAfter(t string, prev func() (string, bool), raw string) bool {
	// The Contains tests are a cheap guard for the regular expression,
	// which needs one of them; most lines of code fail it at once.
	if (strings.Contains(t, "...") || strings.Contains(t, "…")) && placeholderREs().ellipsisOnly.MatchString(t) {
		// Python's "..." as the body of a def or class is real code.
		if p, ok := prev(); ok {
			return !(strings.HasSuffix(p, ":") && indent(raw) > indent(p))
		}
		return true
	}
	body, ok := commentBody(t)
	if !ok {
		return false
	}
	hasEllipsis := strings.Contains(body, "...") || strings.Contains(body, "…")
	bracketed := strings.HasPrefix(strings.TrimSpace(body), "(") || strings.HasPrefix(strings.TrimSpace(body), "[")
	words := strings.TrimSpace(placeholderREs().nonWord.ReplaceAllString(strings.ToLower(body), " "))
	if words == "" {
		return hasEllipsis // "// ...", "/* … */", "<!-- ... -->"
	}
	if !placeholderREs().omission.MatchString(words) {
		return false
	}
	// A bare phrase such as "// unchanged" could be a real comment; an
	// ellipsis or brackets make the intent plain, and so does a phrase
	// that can only mean omission.
	return hasEllipsis || bracketed || placeholderREs().strongOmission.MatchString(words)
}

// trail is what may follow an omission phrase: "is unchanged", "goes here".
const trail = `(?: (?:is|are|remains?|stays?|goes|go|kept|left|was|were))?(?: (?:here|unchanged|the same|same|as before|as is|as it was|omitted|below|above|intact|untouched))?`

// commentBody returns the text of a line that is entirely a comment.
func commentBody(t string) (string, bool) {
	for _, f := range commentForms {
		if rest, ok := strings.CutPrefix(t, f.open); ok {
			if f.close != "" {
				rest, ok = strings.CutSuffix(rest, f.close)
				if !ok {
					// An unclosed block comment: accept if the line is
					// only the opening.
					rest = strings.TrimSuffix(rest, "*/")
				}
			}
			return strings.TrimSpace(rest), true
		}
	}
	return "", false
}

func indent(s string) int {
	return len(s) - len(strings.TrimLeft(s, " \t"))
}
