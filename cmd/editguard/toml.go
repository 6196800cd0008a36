package main

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
)

// A small TOML reader: enough to find out what a configuration file
// defines, so that init can add a table at the end of the file without
// disturbing what is there. Tables become map[string]any, arrays []any,
// strings string and other scalars tomlScalar. Whether the file is TOML at
// all is a full parser's question (github.com/BurntSushi/toml), asked of
// every text parseTOML reads: the small reader does not check everything
// TOML forbids, and a file the client's own parser would reject must not
// be written.

type tomlScalar string

// tomlDoc is a parsed TOML document.
type tomlDoc struct {
	root map[string]any
	// inline holds the dotted paths of tables written inline ("a = {...}"),
	// which TOML does not let a later [a.b] header extend.
	inline map[string]bool
	// arrays holds the dotted paths of arrays of tables ("[[a.b]]"), which
	// a later [[a.b]] extends; a static array ("b = [...]") it may not.
	arrays map[string]bool
}

// parseTOML parses text.
func parseTOML(text string) (*tomlDoc, error) {
	if !utf8.ValidString(text) {
		return nil, errors.New("not valid UTF-8")
	}
	p := &tomlParser{s: text, line: 1, doc: &tomlDoc{root: map[string]any{}, inline: map[string]bool{}, arrays: map[string]bool{}}}
	if err := p.parse(); err != nil {
		return nil, fmt.Errorf("line %d: %v", p.line, err)
	}
	var full map[string]any
	if _, err := toml.Decode(text, &full); err != nil {
		return nil, err
	}
	return p.doc, nil
}

// get returns the value at path, or nil.
func (d *tomlDoc) get(path ...string) any {
	var cur any = d.root
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

type tomlParser struct {
	s    string
	i    int
	line int
	doc  *tomlDoc
	cur  map[string]any // the table key/value lines go to
	path []string       // cur's path
	// defined holds the tables defined by a header or by dotted keys, to
	// refuse a second definition.
	defined map[string]bool
}

func (p *tomlParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *tomlParser) next() byte {
	c := p.s[p.i]
	p.i++
	if c == '\n' {
		p.line++
	}
	return c
}

// space skips blanks; with newlines also line ends and comments.
func (p *tomlParser) space(newlines bool) {
	for p.i < len(p.s) {
		switch c := p.s[p.i]; {
		case c == ' ' || c == '\t':
			p.i++
		case c == '#':
			for p.i < len(p.s) && p.s[p.i] != '\n' {
				p.i++
			}
		case newlines && (c == '\n' || c == '\r'):
			p.next()
		default:
			return
		}
	}
}

// endLine expects the end of the line (or of the file).
func (p *tomlParser) endLine() error {
	p.space(false)
	if p.peek() == '\r' {
		p.i++
	}
	if p.i < len(p.s) && p.peek() != '\n' {
		return fmt.Errorf("unexpected %q after a value", p.rest())
	}
	return nil
}

func (p *tomlParser) rest() string {
	r := p.s[p.i:]
	if j := strings.IndexByte(r, '\n'); j >= 0 {
		r = r[:j]
	}
	return r
}

func (p *tomlParser) parse() error {
	p.cur, p.path = p.doc.root, nil
	p.defined = map[string]bool{}
	for {
		p.space(true)
		if p.i >= len(p.s) {
			return nil
		}
		if p.peek() == '[' {
			if err := p.header(); err != nil {
				return err
			}
			continue
		}
		if err := p.keyValue(p.cur, false); err != nil {
			return err
		}
		if err := p.endLine(); err != nil {
			return err
		}
	}
}

func (p *tomlParser) header() error {
	p.i++
	array := p.peek() == '['
	if array {
		p.i++
	}
	p.space(false)
	path, err := p.key()
	if err != nil {
		return err
	}
	p.space(false)
	closing := "]"
	if array {
		closing = "]]"
	}
	if !strings.HasPrefix(p.s[p.i:], closing) {
		return fmt.Errorf("table header does not end with %s", closing)
	}
	p.i += len(closing)
	if err := p.endLine(); err != nil {
		return err
	}
	// Walk to the parent, creating implicit tables.
	t := p.doc.root
	for i, k := range path[:len(path)-1] {
		if t, err = p.descend(t, path[:i+1], k); err != nil {
			return err
		}
	}
	last := path[len(path)-1]
	name := strings.Join(path, ".")
	if p.doc.inline[name] {
		return fmt.Errorf("[%s] extends an inline table", name)
	}
	if array {
		arr, ok := t[last].([]any)
		if t[last] != nil && (!ok || !p.doc.arrays[name]) {
			return fmt.Errorf("[[%s]]: %s is not an array of tables", name, name)
		}
		p.doc.arrays[name] = true
		nt := map[string]any{}
		t[last] = append(arr, nt)
		p.cur, p.path = nt, path
		return nil
	}
	if p.defined[name] {
		return fmt.Errorf("table [%s] is defined twice", name)
	}
	p.defined[name] = true
	switch v := t[last].(type) {
	case nil:
		nt := map[string]any{}
		t[last] = nt
		p.cur, p.path = nt, path
	case map[string]any:
		p.cur, p.path = v, path
	default:
		return fmt.Errorf("[%s]: %s is already a value", name, name)
	}
	return nil
}

// descend returns table k of t, creating it; the last table of an array of
// tables stands for the array.
func (p *tomlParser) descend(t map[string]any, path []string, k string) (map[string]any, error) {
	switch v := t[k].(type) {
	case nil:
		nt := map[string]any{}
		t[k] = nt
		return nt, nil
	case map[string]any:
		if p.doc.inline[strings.Join(path, ".")] {
			return nil, fmt.Errorf("%s is an inline table and cannot be extended", strings.Join(path, "."))
		}
		return v, nil
	case []any:
		if len(v) > 0 {
			if m, ok := v[len(v)-1].(map[string]any); ok {
				return m, nil
			}
		}
	}
	return nil, fmt.Errorf("%s is not a table", strings.Join(path, "."))
}

// The TOML reader's regular expressions are compiled when init first
// reads a file, not at every start of the program.
var bareKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]+`) })

// key reads a dotted key.
func (p *tomlParser) key() ([]string, error) {
	var path []string
	for {
		p.space(false)
		switch c := p.peek(); {
		case c == '"' || c == '\'':
			s, err := p.str()
			if err != nil {
				return nil, err
			}
			path = append(path, s)
		default:
			m := bareKey().FindString(p.s[p.i:])
			if m == "" {
				return nil, fmt.Errorf("expected a key at %q", p.rest())
			}
			p.i += len(m)
			path = append(path, m)
		}
		p.space(false)
		if p.peek() != '.' {
			return path, nil
		}
		p.i++
	}
}

// keyValue reads "key = value" into t.
func (p *tomlParser) keyValue(t map[string]any, inline bool) error {
	path, err := p.key()
	if err != nil {
		return err
	}
	p.space(false)
	if p.peek() != '=' {
		return fmt.Errorf("expected = after key %s", strings.Join(path, "."))
	}
	p.i++
	p.space(false)
	v, err := p.value()
	if err != nil {
		return err
	}
	for i, k := range path[:len(path)-1] {
		if t, err = p.descend(t, path[:i+1], k); err != nil {
			return err
		}
	}
	last := path[len(path)-1]
	if _, dup := t[last]; dup {
		return fmt.Errorf("key %s is defined twice", strings.Join(path, "."))
	}
	t[last] = v
	if !inline {
		markInline(p.doc.inline, strings.Join(append(append([]string{}, p.path...), path...), "."), v)
	}
	return nil
}

// markInline records the inline tables in v, whose path is name.
func markInline(set map[string]bool, name string, v any) {
	if m, ok := v.(map[string]any); ok {
		set[name] = true
		for k, sub := range m {
			markInline(set, name+"."+k, sub)
		}
	}
}

var scalarToken = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(true|false|[+-]?(inf|nan)|\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}[0-9:.+\-Zz]*)?|[0-9+\-][0-9A-Za-z_.:+\-]*)`)
})

func (p *tomlParser) value() (any, error) {
	switch c := p.peek(); c {
	case '"', '\'':
		return p.str()
	case '[':
		p.i++
		var arr []any
		for {
			p.space(true)
			if p.peek() == ']' {
				p.i++
				return arr, nil
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
			p.space(true)
			switch p.peek() {
			case ',':
				p.i++
			case ']':
			default:
				return nil, fmt.Errorf("expected , or ] in an array at %q", p.rest())
			}
		}
	case '{':
		p.i++
		t := map[string]any{}
		for {
			p.space(true)
			if p.peek() == '}' {
				p.i++
				return t, nil
			}
			if err := p.keyValue(t, true); err != nil {
				return nil, err
			}
			p.space(true)
			switch p.peek() {
			case ',':
				p.i++
			case '}':
			default:
				return nil, fmt.Errorf("expected , or } in an inline table at %q", p.rest())
			}
		}
	}
	m := scalarToken().FindString(p.s[p.i:])
	if m == "" {
		return nil, fmt.Errorf("expected a value at %q", p.rest())
	}
	p.i += len(m)
	return tomlScalar(m), nil
}

// str reads a basic or literal string, single- or multi-line.
func (p *tomlParser) str() (string, error) {
	q := p.s[p.i]
	multi := strings.HasPrefix(p.s[p.i:], strings.Repeat(string(q), 3))
	if multi {
		p.i += 3
		end := strings.Index(p.s[p.i:], strings.Repeat(string(q), 3))
		if end < 0 {
			return "", errors.New("unterminated multi-line string")
		}
		// Up to two more quotes belong to the string.
		for k := 0; k < 2 && p.i+end+3 < len(p.s) && p.s[p.i+end+3] == q; k++ {
			end++
		}
		raw := p.s[p.i : p.i+end]
		p.line += strings.Count(raw, "\n")
		p.i += end + 3
		if q == '\'' {
			return strings.TrimPrefix(raw, "\n"), nil
		}
		return unescapeTOML(strings.TrimPrefix(raw, "\n"), true)
	}
	p.i++
	start := p.i
	for {
		if p.i >= len(p.s) || p.s[p.i] == '\n' {
			return "", errors.New("unterminated string")
		}
		c := p.s[p.i]
		if c == q {
			break
		}
		if c == '\\' && q == '"' {
			p.i++
		}
		p.i++
	}
	raw := p.s[start:p.i]
	p.i++
	if q == '\'' {
		return raw, nil
	}
	return unescapeTOML(raw, false)
}

func unescapeTOML(s string, multi bool) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			return "", errors.New("string ends in a backslash")
		}
		switch e := s[i]; e {
		case 'b':
			b.WriteByte('\b')
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'f':
			b.WriteByte('\f')
		case 'r':
			b.WriteByte('\r')
		case 'e':
			b.WriteByte(0x1b)
		case '"', '\\':
			b.WriteByte(e)
		case 'u', 'U':
			n := 4
			if e == 'U' {
				n = 8
			}
			if i+1+n > len(s) {
				return "", errors.New("short unicode escape")
			}
			r, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32)
			if err != nil {
				return "", fmt.Errorf("bad unicode escape \\%c%s", e, s[i+1:i+1+n])
			}
			b.WriteRune(rune(r))
			i += n
		default:
			if multi && (e == '\n' || e == ' ' || e == '\t' || e == '\r') {
				// A line-ending backslash trims the white space that follows.
				for i+1 < len(s) && strings.IndexByte(" \t\r\n", s[i+1]) >= 0 {
					i++
				}
				continue
			}
			return "", fmt.Errorf("bad escape \\%c", e)
		}
	}
	return b.String(), nil
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
