//go:build !unix

package gitobj

import (
	"fmt"
	"io"
	"os"
)

const oNonblock = 0

// maxMapped bounds the pack indexes read into memory where they cannot be
// mapped: 1 GiB holds the index of some 38 million objects.
const maxMapped = 1 << 30

// mapFile reads the first size bytes of f.
func mapFile(f *os.File, size int64) ([]byte, error) {
	if size <= 0 || size > maxMapped {
		return nil, fmt.Errorf("gitobj: %s: %d bytes: %w", f.Name(), size, ErrTooLarge)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, err
	}
	return b, nil
}

// unmapFile undoes mapFile.
func unmapFile(b []byte) error { return nil }

// dropPages does nothing where mapFile reads.
func dropPages(b []byte) {}
