//go:build unix

package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
)

// emptyHash is how the canonical encoding of a record ends: Hash is the
// last field, never omitted, and empty while hashing.
var emptyHash = []byte(`,"hash":""}`)

// seal computes r.Hash over r's canonical encoding and returns the line to
// write, newline included.
func seal(r *Record) ([]byte, error) {
	r.Hash = ""
	canon, err := marshalRecord(r)
	if err != nil {
		return nil, err
	}
	h, err := hashOf(canon)
	if err != nil {
		return nil, err
	}
	r.Hash = h
	line := splice(canon, h)
	return append(line, '\n'), nil
}

// hashOf returns the hash of a canonical encoding.
func hashOf(canon []byte) (string, error) {
	if !bytes.HasSuffix(canon, emptyHash) {
		// Only a change to Record's declaration can cause this.
		return "", errors.New("canonical encoding does not end with an empty hash field")
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}

// splice writes h between the quotes of the empty hash field at the end of
// canon, giving the line as stored (without newline).
func splice(canon []byte, h string) []byte {
	head := canon[:len(canon)-len(`"}`)]
	line := make([]byte, 0, len(canon)+len(h)+1)
	line = append(line, head...)
	line = append(line, h...)
	return append(line, `"}`...)
}

// decodeLine decodes one stored line (without newline) and checks it on its
// own: that it is well-formed, that its hash recomputes, and that it is the
// canonical encoding of what it decodes to. On failure it returns the
// partly decoded record (nil if the JSON is malformed) and the reason.
func decodeLine(line []byte) (*Record, string, error) {
	r := new(Record)
	if err := unmarshalRecord(line, r); err != nil {
		return nil, ReasonMalformed, err
	}
	h := r.Hash
	r.Hash = ""
	canon, err := marshalRecord(r)
	r.Hash = h
	if err != nil {
		return r, ReasonMalformed, err
	}
	want, err := hashOf(canon)
	if err != nil {
		return r, ReasonMalformed, err
	}
	if h != want {
		return r, ReasonHash, nil
	}
	if !bytes.Equal(line, splice(canon, h)) {
		return r, ReasonNotCanonical, nil
	}
	return r, "", nil
}

// isHash reports whether s has the form of a record hash.
func isHash(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
