//go:build !linux

package mounts

import "errors"

// Below is not available here: the mount table is read on Linux only.
func Below(root string) ([]Mount, error) {
	return nil, errors.ErrUnsupported
}
