// Package rawpath carries file names that are not valid UTF-8 through JSON
// without loss.
//
// A file name is any byte string the file system allows; JSON strings are
// Unicode, and encoding/json turns each invalid byte into U+FFFD, so a name
// such as "caf\xe9.txt" would come back as another name. Every JSON form
// that holds a path therefore holds two fields: the readable form, in which
// each invalid byte shows as U+FFFD, and, only when the name is not valid
// UTF-8, the exact bytes in hex beside it ("path" and "path_hex"). A name
// that is valid UTF-8 is stored as it always was, so records written
// before the hex field existed decode to the same names.
package rawpath

import (
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Display returns p with each byte that is not part of valid UTF-8 shown as
// U+FFFD, as encoding/json would store it. A valid p is returned as it is.
func Display(p string) string {
	if utf8.ValidString(p) {
		return p
	}
	var b strings.Builder
	b.Grow(len(p) + 8)
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRuneInString(p[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(p[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Split returns the two stored forms of p: its readable form, and its bytes
// in hex when p is not valid UTF-8 ("" when it is).
func Split(p string) (display, hexBytes string) {
	if utf8.ValidString(p) {
		return p, ""
	}
	return Display(p), hex.EncodeToString([]byte(p))
}

// Join is the inverse of Split: it returns the exact name that display and
// hexBytes stand for. The two must agree: hex that does not decode, that
// decodes to valid UTF-8 (Split never writes such hex), or whose readable
// form is not display, is an error, so a tampered or mangled pair is never
// taken for a name.
func Join(display, hexBytes string) (string, error) {
	if hexBytes == "" {
		return display, nil
	}
	raw, err := hex.DecodeString(hexBytes)
	if err != nil {
		return "", fmt.Errorf("path %q: its hex form does not decode: %v", display, err)
	}
	p := string(raw)
	if utf8.ValidString(p) || Display(p) != display {
		return "", fmt.Errorf("path %q: its hex form names another path", display)
	}
	return p, nil
}
