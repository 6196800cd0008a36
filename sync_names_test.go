package editguard_test

import (
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/remote"
)

// internal/remote, which does not import this package, keeps its own copy
// of the state directory's name: pull refuses to write under it. The two
// must agree.
func TestRemoteNamesTheStateDirectory(t *testing.T) {
	if remote.StateDir != editguard.StateDir {
		t.Errorf("remote.StateDir = %q, editguard.StateDir = %q; they must agree", remote.StateDir, editguard.StateDir)
	}
}
