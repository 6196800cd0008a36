package toolset

import (
	"path"
	"strings"
)

// matchGlob reports whether the slash path rel matches pattern, where "*",
// "?" and "[...]" match within one path element, "**" matches any number
// of elements, and "{a,b}" matches either alternative (see expandBraces).
// A pattern without a "/" matches the file's name at any depth, as in
// .gitignore.
func matchGlob(pattern, rel string) bool {
	for _, alt := range expandBraces(pattern) {
		if matchOne(alt, rel) {
			return true
		}
	}
	return false
}

func matchOne(pattern, rel string) bool {
	if !strings.Contains(pattern, "/") {
		ok, _ := path.Match(pattern, path.Base(rel))
		return ok
	}
	return matchParts(strings.Split(strings.TrimPrefix(pattern, "/"), "/"), strings.Split(rel, "/"))
}

func matchParts(pat, parts []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(parts); i++ {
				if matchParts(pat[1:], parts[i:]) {
					return true
				}
			}
			return false
		}
		if len(parts) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], parts[0]); !ok {
			return false
		}
		pat, parts = pat[1:], parts[1:]
	}
	return len(parts) == 0
}

// validGlob checks a pattern's syntax: each of its alternatives, and that
// its braces do not expand to more than maxBraceAlternatives.
func validGlob(pattern string) bool {
	alts := expandBraces(pattern)
	if alts == nil {
		return false
	}
	for _, alt := range alts {
		for _, p := range strings.Split(alt, "/") {
			if p == "**" {
				continue
			}
			if _, err := path.Match(p, ""); err != nil {
				return false
			}
		}
	}
	return true
}

// maxBraceAlternatives bounds what a pattern's braces expand to.
const maxBraceAlternatives = 256

// expandBraces returns the patterns that pattern's brace groups stand for,
// as a shell expands them: "*.{go,md}" is "*.go" and "*.md", groups may
// nest, and "{}" or a group without a top-level comma ("{x}") stays as
// written, as does a "{" with no "}" (path.Match then matches it as a
// character). A backslash escapes the next character. It returns nil when
// the expansion passes maxBraceAlternatives.
func expandBraces(pattern string) []string {
	if !strings.Contains(pattern, "{") {
		return []string{pattern}
	}
	open, end, commas := braceGroup(pattern)
	if open < 0 {
		return []string{pattern}
	}
	head, tail := pattern[:open], pattern[end+1:]
	var out []string
	for i, from := 0, open+1; i <= len(commas); i++ {
		to := end
		if i < len(commas) {
			to = commas[i]
		}
		for _, alt := range expandBraces(head + pattern[from:to] + tail) {
			if out = append(out, alt); len(out) > maxBraceAlternatives {
				return nil
			}
		}
		from = to + 1
	}
	return out
}

// braceGroup finds the first brace group of pattern that has a top-level
// comma: the index of its "{", of its "}", and of its top-level commas.
// open is -1 if there is none.
func braceGroup(pattern string) (open, end int, commas []int) {
	for start := 0; start < len(pattern); start++ {
		switch pattern[start] {
		case '\\':
			start++
		case '{':
			if end, commas := closeBrace(pattern, start); end > 0 && len(commas) > 0 {
				return start, end, commas
			}
		}
	}
	return -1, -1, nil
}

// closeBrace returns the index of the "}" that closes the "{" at open
// (0 if none does) and the commas at the group's own level.
func closeBrace(pattern string, open int) (int, []int) {
	depth := 0
	var commas []int
	for i := open + 1; i < len(pattern); i++ {
		switch pattern[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			if depth == 0 {
				return i, commas
			}
			depth--
		case ',':
			if depth == 0 {
				commas = append(commas, i)
			}
		}
	}
	return 0, nil
}

// under says where a walk from the directory display looked, for a
// sentence: "under src", or "in the workspace" for its root, which would
// read as "under ." and end a sentence with two dots.
func under(display string) string {
	if display == "." || display == "./" {
		return "in the workspace"
	}
	return "under " + display
}

// startDir checks that a tool's path argument names a directory and
// returns it ("." when none was given).
func (t *Toolset) startDir(tool string, p *string) (string, error) {
	display := "."
	if p != nil && *p != "" {
		display = *p
	}
	st, err := t.ws.Stat(display)
	if err != nil {
		return "", err
	}
	if !st.IsDir() {
		return "", invalidArgument(tool, "not a directory: "+display, map[string]any{"path": display})
	}
	return display, nil
}
