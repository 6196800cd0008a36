// Package mounts reads the system's mount table: the file systems mounted
// inside a directory, whose arrival or departure changes what is under it
// without a change a watcher of that directory reports.
package mounts

import (
	"strconv"
	"strings"
)

// A Mount is a file system mounted at Point, ID its mount's number (a
// mount made again at the same place has another).
type Mount struct {
	ID    int
	Point string
}

// parse returns the mounts of a mountinfo table strictly inside root, in
// the table's order.
func parse(table, root string) []Mount {
	prefix := strings.TrimSuffix(root, "/") + "/"
	var out []Mount
	for line := range strings.SplitSeq(table, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		id, err := strconv.Atoi(f[0])
		if err != nil {
			continue
		}
		if p := unescape(f[4]); strings.HasPrefix(p, prefix) {
			out = append(out, Mount{ID: id, Point: p})
		}
	}
	return out
}

// unescape undoes mountinfo's octal escapes (\040 for a space, \012 for a
// newline, \134 for a backslash).
func unescape(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b []byte
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b = append(b, byte(n))
				i += 3
				continue
			}
		}
		b = append(b, s[i])
	}
	return string(b)
}

// Signature is a string that changes whenever the mounts inside root do;
// "" if there are none.
func Signature(ms []Mount) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(strconv.Itoa(m.ID))
		b.WriteByte(' ')
		b.WriteString(m.Point)
		b.WriteByte(0)
	}
	return b.String()
}
