package toolset

import (
	"path"
	"strings"
)

// matchGlob reports whether the slash path rel matches pattern, where "*",
// "?" and "[...]" match within one path element and "**" matches any
// number of elements. A pattern without a "/" matches the file's name at
// any depth, as in .gitignore.
func matchGlob(pattern, rel string) bool {
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

// validGlob checks a pattern's syntax.
func validGlob(pattern string) bool {
	for _, p := range strings.Split(pattern, "/") {
		if p == "**" {
			continue
		}
		if _, err := path.Match(p, ""); err != nil {
			return false
		}
	}
	return true
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
