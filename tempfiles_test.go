package editguard_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/editguard/editguard"
)

// TestListingsHideOurTemporaryFiles: the temporary files a killed change
// leaves (.NAME.<tag>.egtmp, the tag an HMAC under the workspace key) are
// left out of ReadDir, Walk and a command's checkpoints, and TempFiles
// lists them; a user's file that merely ends in .egtmp, one of the same
// pattern with a tag this workspace did not compute, and another
// workspace's temporary file stay visible.
func TestListingsHideOurTemporaryFiles(t *testing.T) {
	w, dir := newWorkspace(t)
	other, _ := newWorkspace(t)
	long := strings.Repeat("l", 240) + ".txt" // TempName shortens its temporary name
	writeFile(t, dir, "a.txt", "a\n")
	writeFile(t, dir, "sub/b.txt", "b\n")
	writeFile(t, dir, long, "long\n")
	ours := []string{
		editguard.TempName(w, "a.txt"),
		"sub/" + editguard.TempName(w, "b.txt"),
		editguard.TempName(w, "gone.txt"), // a new file whose creation was killed
		editguard.TempName(w, long),
	}
	if len(ours[3]) > 255 || strings.Contains(ours[3], long) {
		t.Fatalf("the long name's temporary name %q is not shortened", ours[3])
	}
	theirs := []string{
		"notes.egtmp",
		".c.txt.0123456789abcdef.egtmp",
		editguard.TempName(other, "a.txt"),
	}
	for _, p := range append(slices.Clone(ours), theirs...) {
		writeFile(t, dir, p, "left over\n")
	}

	ents, err := w.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, e := range ents {
		listed = append(listed, e.Name())
	}
	var walked []string
	if err := w.Walk(context.Background(), ".", func(f *editguard.WalkFile) bool {
		walked = append(walked, f.Path)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	subEnts, err := w.ReadDir("sub")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range subEnts {
		listed = append(listed, "sub/"+e.Name())
	}
	for _, p := range ours {
		if slices.Contains(listed, p) || slices.Contains(walked, p) {
			t.Errorf("our temporary file %s is listed: ReadDir %v, Walk %v", p, listed, walked)
		}
	}
	for _, p := range theirs {
		if !slices.Contains(listed, p) || !slices.Contains(walked, p) {
			t.Errorf("%s, not ours, is not listed: ReadDir %v, Walk %v", p, listed, walked)
		}
	}
	for _, p := range []string{"a.txt", "sub/b.txt", long} {
		if !slices.Contains(walked, p) {
			t.Errorf("%s is not walked: %v", p, walked)
		}
	}

	temps, err := w.TempFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(ours))
	slices.Sort(temps)
	if !slices.Equal(temps, want) {
		t.Errorf("TempFiles = %q, want %q", temps, want)
	}
	for p, target := range map[string]string{ours[0]: "a.txt", ours[1]: "sub/b.txt", ours[2]: "gone.txt"} {
		if got := editguard.TempTarget(p); got != target {
			t.Errorf("TempTarget(%q) = %q, want %q", p, got, target)
		}
	}

	// A command's checkpoints do not see a temporary file of ours appear
	// (a change in progress beside the command), but do see the user's.
	s := w.NewSession("cmd")
	c, err := s.BeginCommand(context.Background(), "make", nil)
	if err != nil {
		t.Fatal(err)
	}
	fresh := "sub/" + editguard.TempName(w, "new.txt")
	writeFile(t, dir, fresh, "in progress\n")
	writeFile(t, dir, "made.egtmp", "made\n")
	res, err := c.End(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var changed []string
	for _, ch := range res.Changes {
		changed = append(changed, ch.Path)
	}
	if slices.Contains(changed, fresh) || !slices.Contains(changed, "made.egtmp") {
		t.Errorf("the command's changes are %v: want made.egtmp and not %s", changed, fresh)
	}
	if _, err := os.Stat(filepath.Join(dir, fresh)); err != nil {
		t.Errorf("the temporary file was touched: %v", err)
	}
}
