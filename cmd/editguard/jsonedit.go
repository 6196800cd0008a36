package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/tailscale/hujson"
)

// jsonDoc edits a JSON document in place: it adds members to objects and
// elements to arrays and leaves every other byte of the text as it was, so
// that a configuration file keeps its layout, key order and formatting.
// For a file whose client reads JSON with comments and trailing commas
// (jsoncFiles), the text may have them, and they are kept too.
type jsonDoc struct {
	text  string
	jsonc bool
	// std is text as standard JSON (github.com/tailscale/hujson): its
	// comments and trailing commas blanked out byte for byte, so that
	// every offset of one is an offset of the other. Values are read
	// from it; edits go into text.
	std  string
	root *jnode
}

// A jnode is one value of the document and where it lies in the text.
type jnode struct {
	kind       byte // '{', '[', '"' or '0' (number, true, false, null)
	start, end int  // the value's bytes: text[start:end]
	keys       []string
	vals       []*jnode // members of an object (parallel to keys), elements of an array
	str        string   // the decoded string of a '"' node
}

// member returns the value of key in object n; the last one if the key is
// repeated, as JSON.parse reads it.
func (n *jnode) member(key string) *jnode {
	for i := len(n.keys) - 1; i >= 0; i-- {
		if n.keys[i] == key {
			return n.vals[i]
		}
	}
	return nil
}

// jsoncFiles are the configuration files whose client reads JSON with
// comments and trailing commas: Gemini CLI strips them from its settings.
// Claude Code and Cursor read strict JSON, so init refuses such a file of
// theirs as their client would.
var jsoncFiles = map[string]bool{".gemini/settings.json": true}

// parseJSONDoc parses text, which must be one JSON object; with jsonc,
// comments and trailing commas are allowed.
func parseJSONDoc(text string, jsonc bool) (*jsonDoc, error) {
	std := []byte(text)
	if jsonc {
		var err error
		if std, err = hujson.Standardize(std); err != nil { // blanks the copy in place
			return nil, err
		}
	}
	if err := json.Unmarshal(std, new(any)); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + strings.Count(text[:min(int(se.Offset), len(text))], "\n")
			return nil, fmt.Errorf("line %d: %v", line, err)
		}
		return nil, err
	}
	p := &jparser{s: string(std)}
	p.ws()
	n := p.value()
	if n.kind != '{' {
		return nil, errors.New("the top level is not an object")
	}
	return &jsonDoc{text: text, jsonc: jsonc, std: string(std), root: n}, nil
}

// jparser reads text already known to be valid JSON.
type jparser struct {
	s string
	i int
}

func (p *jparser) ws() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *jparser) value() *jnode {
	n := &jnode{start: p.i}
	switch c := p.s[p.i]; c {
	case '{', '[':
		n.kind = c
		p.i++
		p.ws()
		for p.s[p.i] != c+2 { // '}' is '{'+2, ']' is '['+2
			if c == '{' {
				k := p.value()
				n.keys = append(n.keys, k.str)
				p.ws()
				p.i++ // ':'
				p.ws()
			}
			n.vals = append(n.vals, p.value())
			p.ws()
			if p.s[p.i] == ',' {
				p.i++
				p.ws()
			}
		}
		p.i++
	case '"':
		n.kind = '"'
		p.i++
		for p.s[p.i] != '"' {
			if p.s[p.i] == '\\' {
				p.i++
			}
			p.i++
		}
		p.i++
		json.Unmarshal([]byte(p.s[n.start:p.i]), &n.str)
	default:
		n.kind = '0'
		for p.i < len(p.s) && strings.IndexByte(",]} \t\r\n", p.s[p.i]) < 0 {
			p.i++
		}
	}
	n.end = p.i
	return n
}

// lookup returns the node at path, or nil and the deepest object on the
// way with the number of path elements it covers. It fails if a value on
// the way is not an object.
func (d *jsonDoc) lookup(path []string) (n, parent *jnode, depth int, err error) {
	cur := d.root
	for i, k := range path {
		next := cur.member(k)
		if next == nil {
			return nil, cur, i, nil
		}
		if i < len(path)-1 && next.kind != '{' {
			return nil, nil, 0, fmt.Errorf("%s is not an object", strings.Join(path[:i+1], "."))
		}
		cur = next
	}
	return cur, nil, len(path), nil
}

// get returns the node at path, or nil.
func (d *jsonDoc) get(path ...string) *jnode {
	n, _, _, _ := d.lookup(path)
	return n
}

// decode returns the Go value of n.
func (d *jsonDoc) decode(n *jnode) any {
	var v any
	json.Unmarshal([]byte(d.std[n.start:n.end]), &v)
	return v
}

// lineIndent returns the white space that starts the line holding pos.
func (d *jsonDoc) lineIndent(pos int) string {
	start := strings.LastIndexByte(d.text[:pos], '\n') + 1
	end := start
	for end < len(d.text) && (d.text[end] == ' ' || d.text[end] == '\t') {
		end++
	}
	return d.text[start:end]
}

// indentUnit guesses one level of indentation of the document.
func (d *jsonDoc) indentUnit() string {
	for _, n := range d.root.vals {
		if ind := d.lineIndent(n.start); ind != "" && strings.Contains(d.text[d.root.start:n.start], "\n") {
			return ind
		}
	}
	return "  "
}

// splice replaces text[from:to] with s and parses the result again.
func (d *jsonDoc) splice(from, to int, s string) error {
	nd, err := parseJSONDoc(d.text[:from]+s+d.text[to:], d.jsonc)
	if err != nil {
		return fmt.Errorf("internal error: edit made invalid JSON: %v", err)
	}
	*d = *nd
	return nil
}

// format renders v (marshalled to JSON) indented for a place whose line is
// indented by indent.
func (d *jsonDoc) format(v any, indent string) string {
	b, _ := json.Marshal(v)
	var out bytes.Buffer
	json.Indent(&out, b, indent, d.indentUnit())
	// Arrays of strings stay on one line: ["--root", ".", "serve"].
	return stringArray().ReplaceAllStringFunc(out.String(), func(a string) string {
		return "[" + strings.Join(jsonString().FindAllString(a, -1), ", ") + "]"
	})
}

// jsonString and stringArray are compiled when init first formats a value.
var (
	jsonString  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`"(?:[^"\\]|\\.)*"`) })
	stringArray = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\[\s*"(?:[^"\\]|\\.)*"(?:,\s*"(?:[^"\\]|\\.)*")*\s*\]`)
	})
)

// addMember adds "key": v to object obj, after its last member.
func (d *jsonDoc) addMember(obj *jnode, key string, v any) error {
	k, _ := json.Marshal(key)
	if len(obj.vals) == 0 {
		ind := d.lineIndent(obj.start)
		inner := ind + d.indentUnit()
		return d.splice(obj.start+1, obj.end-1, "\n"+inner+string(k)+": "+d.format(v, inner)+"\n"+ind)
	}
	last := obj.vals[len(obj.vals)-1]
	if !strings.Contains(d.text[obj.start:obj.end], "\n") {
		return d.splice(last.end, last.end, ", "+string(k)+": "+inlineJSON(v))
	}
	// The indentation of the object's first key.
	inner := d.lineIndent(d.keyStart(obj))
	return d.splice(last.end, last.end, ",\n"+inner+string(k)+": "+d.format(v, inner))
}

// keyStart returns where the first key of obj starts (after any comment).
func (d *jsonDoc) keyStart(obj *jnode) int {
	return obj.start + 1 + len(d.std[obj.start+1:]) - len(strings.TrimLeft(d.std[obj.start+1:], " \t\r\n"))
}

// ensure sets path to v unless something is there already, creating the
// objects on the way. It returns the node found, or nil if it added v.
func (d *jsonDoc) ensure(path []string, v any) (*jnode, error) {
	n, parent, depth, err := d.lookup(path)
	if err != nil || n != nil {
		return n, err
	}
	if parent.kind != '{' {
		return nil, fmt.Errorf("%s is not an object", strings.Join(path[:depth], "."))
	}
	// Wrap v in the objects that are missing below parent.
	for i := len(path) - 1; i > depth; i-- {
		v = orderedObject{{path[i], v}}
	}
	return nil, d.addMember(parent, path[depth], v)
}

// appendStrings adds the strings of vals that the array at path lacks, and
// returns those it added and those it had. A missing array is created.
func (d *jsonDoc) appendStrings(path []string, vals []string) (added, present []string, err error) {
	n, err := d.ensure(path, vals)
	if err != nil {
		return nil, nil, err
	}
	if n == nil {
		return vals, nil, nil
	}
	if n.kind != '[' {
		return nil, nil, fmt.Errorf("%s is not an array", strings.Join(path, "."))
	}
	for _, v := range vals {
		n := d.get(path...)
		if containsString(n, v) {
			present = append(present, v)
			continue
		}
		b, _ := json.Marshal(v)
		switch {
		case len(n.vals) == 0:
			err = d.splice(n.start+1, n.end-1, string(b))
		case strings.Contains(d.text[n.start:n.end], "\n"):
			last := n.vals[len(n.vals)-1]
			err = d.splice(last.end, last.end, ",\n"+d.lineIndent(n.vals[0].start)+string(b))
		default:
			last := n.vals[len(n.vals)-1]
			err = d.splice(last.end, last.end, ", "+string(b))
		}
		if err != nil {
			return nil, nil, err
		}
		added = append(added, v)
	}
	return added, present, nil
}

// appendValue adds v as the last element of the array at path, creating
// the array (and the objects on the way) if it is missing.
func (d *jsonDoc) appendValue(path []string, v any) error {
	n, err := d.ensure(path, []any{v})
	if err != nil || n == nil {
		return err
	}
	if n.kind != '[' {
		return fmt.Errorf("%s is not an array", strings.Join(path, "."))
	}
	switch {
	case len(n.vals) == 0:
		ind := d.lineIndent(n.start)
		inner := ind + d.indentUnit()
		return d.splice(n.start+1, n.end-1, "\n"+inner+d.format(v, inner)+"\n"+ind)
	case strings.Contains(d.text[n.start:n.end], "\n"):
		inner := d.lineIndent(n.vals[0].start)
		last := n.vals[len(n.vals)-1]
		return d.splice(last.end, last.end, ",\n"+inner+d.format(v, inner))
	default:
		last := n.vals[len(n.vals)-1]
		return d.splice(last.end, last.end, ", "+inlineJSON(v))
	}
}

func containsString(arr *jnode, s string) bool {
	for _, e := range arr.vals {
		if e.kind == '"' && e.str == s {
			return true
		}
	}
	return false
}

// inlineJSON renders v on one line, with a space after each comma and
// colon: {"a": ["b", "c"]}.
func inlineJSON(v any) string {
	b, _ := json.Marshal(v)
	var out strings.Builder
	in, esc := false, false
	for _, c := range string(b) {
		out.WriteRune(c)
		switch {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case !in && (c == ',' || c == ':'):
			out.WriteByte(' ')
		}
	}
	return out.String()
}

// orderedObject is a JSON object that keeps its keys in order.
type orderedObject []struct {
	k string
	v any
}

func (o orderedObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.k)
		v, err := json.Marshal(m.v)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
