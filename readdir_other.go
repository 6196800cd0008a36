//go:build !linux

package editguard

import "os"

// readDirTypes returns the names and types of the entries of the open
// directory f (see readdir_linux.go).
func readDirTypes(f *os.File) ([]dirent, error) {
	des, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	out := make([]dirent, len(des))
	for i, de := range des {
		out[i] = dirent{name: de.Name(), typ: de.Type()}
	}
	return out, nil
}
