package editguard

import (
	"path/filepath"
	"strings"
)

// Ignore patterns, as Walk reads them from .gitignore files and
// .git/info/exclude. The rules are those of go-git's gitignore package,
// which Walk used before (a test holds the two to the same answers): a
// pattern without a slash matches any path element below its file's
// directory, one with a slash is matched element by element ("**" for any
// number of them), a trailing slash matches directories only, a leading
// "!" re-includes, and the last pattern that matches decides.
//
// What differs is the cost. Each element pattern is compiled once into
// the cheapest test that gives filepath.Match's answer (a comparison, a
// prefix or a suffix where the pattern allows), and a path is matched as
// the walk's reused slice of elements, so matching a file allocates
// nothing.

// ignorePattern is one line of an ignore file.
type ignorePattern struct {
	domain    []string // the elements of the directory of its file
	elems     []elemPattern
	inclusion bool
	dirOnly   bool
	isGlob    bool // has a slash: matched element by element
}

// elemPattern matches one path element as filepath.Match(pat, name) does.
type elemPattern struct {
	pat  string
	kind byte // '=': equal to pat; '*': any; '>': suffix lit; '<': prefix lit; 'm': filepath.Match
	lit  string
}

func compileElem(pat string) elemPattern {
	const meta = `*?[\`
	switch {
	case !strings.ContainsAny(pat, meta):
		return elemPattern{pat: pat, kind: '='}
	case pat == "*":
		return elemPattern{pat: pat, kind: '*'}
	case pat[0] == '*' && !strings.ContainsAny(pat[1:], meta):
		return elemPattern{pat: pat, kind: '>', lit: pat[1:]}
	case pat[len(pat)-1] == '*' && !strings.ContainsAny(pat[:len(pat)-1], meta):
		return elemPattern{pat: pat, kind: '<', lit: pat[:len(pat)-1]}
	}
	return elemPattern{pat: pat, kind: 'm'}
}

// match reports whether name matches; ok is false for a malformed pattern
// (which filepath.Match reports as an error).
func (e *elemPattern) match(name string) (matched, ok bool) {
	switch e.kind {
	case '=':
		return name == e.pat, true
	case '*':
		return true, true
	case '>':
		return strings.HasSuffix(name, e.lit), true
	case '<':
		return strings.HasPrefix(name, e.lit), true
	}
	m, err := filepath.Match(e.pat, name)
	return m, err == nil
}

// parseIgnore parses one line of an ignore file found in the directory
// whose elements are domain.
func parseIgnore(line string, domain []string) *ignorePattern {
	p := &ignorePattern{domain: domain}
	if strings.HasPrefix(line, "!") {
		p.inclusion, line = true, line[1:]
	}
	if !strings.HasSuffix(line, `\ `) {
		line = strings.TrimRight(line, " ")
	}
	if strings.HasSuffix(line, "/") {
		p.dirOnly, line = true, line[:len(line)-1]
	}
	p.isGlob = strings.Contains(line, "/")
	for e := range strings.SplitSeq(line, "/") {
		p.elems = append(p.elems, compileElem(e))
	}
	return p
}

// ignoreResult is a pattern's answer for a path.
type ignoreResult int

const (
	noMatch ignoreResult = iota
	exclude
	include
)

func (p *ignorePattern) match(path []string, isDir bool) ignoreResult {
	if len(path) <= len(p.domain) {
		return noMatch
	}
	for i, e := range p.domain {
		if path[i] != e {
			return noMatch
		}
	}
	path = path[len(p.domain):]
	if p.isGlob && !p.globMatch(path, isDir) || !p.isGlob && !p.nameMatch(path, isDir) {
		return noMatch
	}
	if p.inclusion {
		return include
	}
	return exclude
}

// nameMatch: a pattern without a slash matches if any element does (a
// directory-only one, not the last element of a file).
func (p *ignorePattern) nameMatch(path []string, isDir bool) bool {
	for i, name := range path {
		m, ok := p.elems[0].match(name)
		if !ok {
			return false
		}
		if !m {
			continue
		}
		return !(p.dirOnly && !isDir && i == len(path)-1)
	}
	return false
}

// globMatch matches the pattern's elements against the path's in order,
// "**" standing for any number of elements.
func (p *ignorePattern) globMatch(path []string, isDir bool) bool {
	matched, traverse := false, false
elems:
	for i := range p.elems {
		e := &p.elems[i]
		switch {
		case e.pat == "":
			traverse = false
			continue
		case e.pat == "**":
			if i == len(p.elems)-1 {
				break elems
			}
			traverse = true
			continue
		case strings.Contains(e.pat, "**"):
			return false
		case len(path) == 0:
			return false
		}
		if traverse {
			traverse = false
			for len(path) > 0 {
				name := path[0]
				path = path[1:]
				m, ok := e.match(name)
				if !ok {
					return false
				}
				if m {
					matched = true
					break
				}
				if len(path) == 0 {
					matched = false
				}
			}
		} else {
			m, ok := e.match(path[0])
			if !ok || !m {
				return false
			}
			matched = true
			path = path[1:]
		}
	}
	if matched && p.dirOnly && !isDir && len(path) == 0 {
		matched = false
	}
	return matched
}

// ignoreMatcher is the patterns in force in a directory, in file order.
type ignoreMatcher []*ignorePattern

// ignored reports whether the last pattern that matches path excludes it.
func (m ignoreMatcher) ignored(path []string, isDir bool) bool {
	for i := len(m) - 1; i >= 0; i-- {
		if r := m[i].match(path, isDir); r != noMatch {
			return r == exclude
		}
	}
	return false
}
