package editguard

import (
	"path"
	"strings"
)

// denied reports whether resolved matches a Deny pattern.
func (w *Workspace) denied(resolved string) (string, bool) {
	for _, pat := range w.opts.Deny {
		if globMatch(pat, resolved) {
			return pat, true
		}
	}
	return "", false
}

// globMatch matches a slash-separated path against a pattern in which "**"
// matches zero or more whole path elements, an element that is literally
// ".git" matches every name that is ".git" on some file system (see
// isGitName), and other elements follow path.Match.
func globMatch(pattern, name string) bool {
	return matchElems(splitPath(pattern), splitPath(name))
}

func matchElems(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if matchElems(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if !matchElem(pat[0], name[0]) {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// matchElem matches one path element against one pattern element.
func matchElem(pat, name string) bool {
	if pat == ".git" {
		return isGitName(name)
	}
	ok, _ := path.Match(pat, name)
	return ok
}

// isGitName reports whether name may be the directory ".git" on some file
// system: ".git" in any case (case-insensitive file systems), with any
// trailing dots and spaces (Windows drops them), or the 8.3 short name
// "GIT~1" to "GIT~9" in any case.
func isGitName(name string) bool {
	name = strings.TrimRight(name, ". ")
	if strings.EqualFold(name, ".git") {
		return true
	}
	return len(name) == 5 && strings.EqualFold(name[:4], "git~") && '1' <= name[4] && name[4] <= '9'
}
