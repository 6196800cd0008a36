package mounts

import "github.com/editguard/editguard/internal/safeopen"

// Below returns the mounts strictly inside root (an absolute path, as the
// mount table names it), in the table's order; an error if the table
// cannot be read.
func Below(root string) ([]Mount, error) {
	data, err := safeopen.ReadFile("/proc/self/mountinfo", 64<<20)
	if err != nil {
		return nil, err
	}
	return parse(string(data), root), nil
}
