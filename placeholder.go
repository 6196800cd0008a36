package editguard

import (
	"fmt"

	"github.com/editguard/editguard/internal/textedit"
)

// checkWritePlaceholders refuses whole-file content that elides code with a
// placeholder comment ("// ... rest of code ...") the old file did not have.
// A new file has nothing to elide.
func checkWritePlaceholders(p, oldText, newText string, existed, allow bool) error {
	if allow || !existed {
		return nil
	}
	if found := textedit.DetectPlaceholders(oldText, newText); len(found) > 0 {
		return placeholderError(p, -1, found)
	}
	return nil
}

func placeholderError(p string, index int, found []textedit.Placeholder) *Error {
	e := newError(CodePlaceholder, p, "new content replaces existing code with a placeholder such as \"// ... rest of code ...\"",
		"write out the full code instead of a placeholder, or set allow_placeholders if the text is meant literally", nil)
	var lines []map[string]any
	for _, f := range found {
		lines = append(lines, map[string]any{"line": f.Line, "text": f.Text})
	}
	e.Details["placeholders"] = lines
	if index >= 0 {
		e.Details["edit_index"] = index
		e.Message = fmt.Sprintf("edit %d: %s", index+1, e.Message)
	}
	return e
}
