package editguard

import (
	"crypto/sha256"
	"encoding/hex"
	"unsafe"
)

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// sha256String is sha256Hex of a string's bytes, without copying them:
// []byte(s) would copy a whole file's content only to hash it.
func sha256String(s string) string {
	return sha256Hex(stringBytes(s))
}

// stringBytes returns s's bytes without copying them. The caller must never
// write to them.
func stringBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
