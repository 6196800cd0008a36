package gitobj

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// checkConfig fails with ErrUnsupported if the git config file data names
// an object format other than sha1, or a repository format version above 1.
func checkConfig(data []byte) error {
	vars, err := parseConfig(data, "core.repositoryformatversion", "extensions.objectformat")
	if err != nil {
		return err
	}
	if v := vars["core.repositoryformatversion"]; v != "" {
		if n, err := strconv.Atoi(v); err != nil || n < 0 || n > 1 {
			return fmt.Errorf("gitobj: repository format version %q: %w", v, ErrUnsupported)
		}
	}
	if f, ok := vars["extensions.objectformat"]; ok && f != "sha1" {
		return fmt.Errorf("gitobj: object format %q: %w", f, ErrUnsupported)
	}
	return nil
}

// parseConfig returns the last value of each of the given variables
// ("section.key", lowercase, without subsection) in the git config file
// data. It reads git's syntax: [section] and [section "subsection"]
// headers, comments, quoted values, escapes and continued lines; includes
// are not followed. A key without "=" has the value "true".
func parseConfig(data []byte, names ...string) (map[string]string, error) {
	vars := make(map[string]string)
	section := ""
	line := 1
	for len(data) > 0 {
		data = bytes.TrimLeft(data, " \t\r\f\v")
		if len(data) == 0 {
			break
		}
		switch c := data[0]; {
		case c == '\n':
			data = data[1:]
			line++
		case c == '#' || c == ';':
			data = skipLine(data)
		case c == '[':
			end := bytes.IndexByte(data, ']')
			if end < 0 || bytes.IndexByte(data[:end], '\n') >= 0 {
				return nil, fmt.Errorf("gitobj: config line %d: bad section header", line)
			}
			hdr := data[1:end]
			data = data[end+1:]
			// A section with a subsection, [name "sub"] or the old
			// [name.sub], holds none of the variables looked for.
			if bytes.ContainsAny(hdr, " \t\".") {
				section = "\x00"
			} else {
				section = strings.ToLower(string(hdr))
			}
		case isKeyByte(c):
			i := 0
			for i < len(data) && isKeyByte(data[i]) {
				i++
			}
			key := section + "." + strings.ToLower(string(data[:i]))
			data = bytes.TrimLeft(data[i:], " \t\r")
			value := "true"
			if len(data) > 0 && data[0] == '=' {
				var err error
				value, data, line, err = configValue(data[1:], line)
				if err != nil {
					return nil, err
				}
			} else if len(data) > 0 && data[0] != '\n' && data[0] != '#' && data[0] != ';' {
				return nil, fmt.Errorf("gitobj: config line %d: bad variable", line)
			}
			for _, name := range names {
				if key == name {
					vars[name] = value
				}
			}
		default:
			return nil, fmt.Errorf("gitobj: config line %d: bad syntax", line)
		}
	}
	return vars, nil
}

func isKeyByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-'
}

func skipLine(data []byte) []byte {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return data[i:]
	}
	return nil
}

// configValue parses a value up to the end of its line, as git does: it
// drops leading and trailing blanks outside quotes, the quotes themselves
// and comments, and resolves escapes and continued lines. It returns the
// rest of data from the newline that ends the value.
func configValue(data []byte, line int) (string, []byte, int, error) {
	var b []byte
	quoted := false
	trim := 0 // length of b without the blanks at its end, outside quotes
	for ; len(data) > 0; data = data[1:] {
		c := data[0]
		switch {
		case c == '\n':
			if quoted {
				return "", nil, line, fmt.Errorf("gitobj: config line %d: unterminated quote", line)
			}
			return string(b[:trim]), data, line, nil
		case !quoted && (c == ' ' || c == '\t' || c == '\r'):
			if len(b) > 0 {
				b = append(b, c)
			}
			continue
		case !quoted && (c == '#' || c == ';'):
			return string(b[:trim]), skipLine(data), line, nil
		case c == '"':
			quoted = !quoted
		case c == '\\':
			if len(data) < 2 {
				return "", nil, line, fmt.Errorf("gitobj: config line %d: bad escape", line)
			}
			data = data[1:]
			switch data[0] {
			case '\n':
				line++
				continue
			case 'n':
				b = append(b, '\n')
			case 't':
				b = append(b, '\t')
			case 'b':
				b = append(b, '\b')
			case '\\', '"':
				b = append(b, data[0])
			default:
				return "", nil, line, fmt.Errorf("gitobj: config line %d: bad escape", line)
			}
		default:
			b = append(b, c)
		}
		trim = len(b)
	}
	if quoted {
		return "", nil, line, fmt.Errorf("gitobj: config line %d: unterminated quote", line)
	}
	return string(b[:trim]), nil, line, nil
}
