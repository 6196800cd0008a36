package editguard

import "strings"

// checkPlaceholders refuses new text that elides code with a placeholder
// comment the old text did not have.
func checkPlaceholders(p, oldText, newText string, existed, allow bool) error {
	if allow || !existed {
		return nil
	}
	var found []string
	for _, l := range strings.Split(newText, "\n") {
		t := strings.ToLower(strings.TrimSpace(l))
		if (strings.Contains(t, "rest of code") || strings.Contains(t, "existing code") || strings.Contains(t, "(unchanged)")) &&
			!strings.Contains(oldText, strings.TrimSpace(l)) {
			found = append(found, strings.TrimSpace(l))
		}
	}
	if len(found) == 0 {
		return nil
	}
	return placeholderError(p, found)
}

func placeholderError(p string, found []string) *Error {
	e := newError(CodePlaceholder, p, "new content elides existing code with a placeholder",
		"write the full code instead of a placeholder, or set allow_placeholders if the text is meant literally", nil)
	e.Details["placeholders"] = found
	return e
}
