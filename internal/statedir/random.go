package statedir

import (
	"crypto/rand"
	"encoding/hex"
)

func randomSuffix() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
