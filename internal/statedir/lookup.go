//go:build unix

package statedir

import (
	"os"

	"github.com/editguard/editguard/internal/atomicfile"
)

// Lookup is like Open but never creates the directory: a missing directory
// is an error wrapping fs.ErrNotExist. Readers that must change nothing,
// such as a verification, open the state directory with it.
func Lookup(parent *os.File, parentName, name string) (*Dir, error) {
	p := &Dir{f: parent, d: atomicfile.NewDir(parent), name: parentName}
	return p.open(name, false)
}
