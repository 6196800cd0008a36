package editguard_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/editguard/editguard"
)

// openNames opens a workspace in a new directory under the name policy.
func openNames(t *testing.T, policy string) (*editguard.Workspace, string) {
	t.Helper()
	w, err := editguard.Open(t.TempDir(), &editguard.Options{Names: policy})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, w.Dir()
}

// nonPortable is one name of every kind that is not portable, and what the
// warning or the refusal says about it.
var nonPortable = []struct {
	name, why string
}{
	{"CON", "reserved device name"},
	{"con.txt", "reserved device name"},
	{"Aux.tar.gz", "reserved device name"},
	{"nul", "reserved device name"},
	{"PRN.md", "reserved device name"},
	{"com1", "reserved device name"},
	{"LPT9.log", "reserved device name"},
	{"a<b", "does not allow"},
	{"a>b", "does not allow"},
	{"a:b", "does not allow"},
	{`a"b`, "does not allow"},
	{"a|b", "does not allow"},
	{"a?b", "does not allow"},
	{"a*b", "does not allow"},
	{`a\b`, "does not allow"},
	{"tab\there", "control character"},
	{"bell\x07", "control character"},
	{"del\x7f", "control character"},
	{"dot.", "ends in a dot or a space"},
	{"space ", "ends in a dot or a space"},
}

func TestPortableNamesWarn(t *testing.T) {
	ctx := context.Background()
	w, dir := openNames(t, "")
	s := w.NewSession("agent")
	for _, tc := range nonPortable {
		res, err := s.Write(ctx, tc.name, "x\n", nil)
		if err != nil {
			t.Fatalf("write %q under warn: %v", tc.name, err)
		}
		if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], tc.why) || !strings.Contains(res.Warnings[0], "a portable name would be") {
			t.Errorf("write %q: warnings %q, want one saying %q", tc.name, res.Warnings, tc.why)
		}
		if got := readFile(t, dir, tc.name); got != "x\n" {
			t.Errorf("%q holds %q after a write with a warning", tc.name, got)
		}
	}
	// Portable names, and portable names in a new directory, get none.
	for _, p := range []string{"README.md", "con-fig.txt", "console", "COM0", "dir/sub/LPT10.txt", "café.txt"} {
		if res, err := s.Write(ctx, p, "x\n", nil); err != nil || len(res.Warnings) != 0 {
			t.Errorf("write %q = %v, %v; want no warning", p, res, err)
		}
	}
}

func TestPortableNamesRefuse(t *testing.T) {
	ctx := context.Background()
	w, dir := openNames(t, editguard.NamesRefuse)
	s := w.NewSession("agent")
	for _, tc := range nonPortable {
		_, err := s.Write(ctx, tc.name, "x\n", nil)
		var e *editguard.Error
		if errorCode(err) != editguard.CodeInvalidArgument || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("write %q under refuse: %v, want INVALID_ARGUMENT saying %q", tc.name, err, tc.why)
			continue
		}
		e = err.(*editguard.Error)
		sug, _ := e.Details["suggestion"].(string)
		if sug == "" || sug == tc.name || !strings.Contains(e.RecoveryHint, sug) {
			t.Errorf("write %q: suggestion %q, hint %q", tc.name, sug, e.RecoveryHint)
		}
		// The suggestion is portable: it is accepted.
		if _, err := s.Write(ctx, sug, "x\n", nil); err != nil {
			t.Errorf("the suggestion %q for %q is refused: %v", sug, tc.name, err)
		}
		if _, err := os.Lstat(filepath.Join(dir, tc.name)); !os.IsNotExist(err) {
			t.Errorf("%q exists after a refusal: %v", tc.name, err)
		}
	}
	// A parent directory created on the way is a new name too.
	if _, err := s.Write(ctx, "aux/file.txt", "x\n", nil); errorCode(err) != editguard.CodeInvalidArgument {
		t.Errorf("write under a new directory aux: %v, want INVALID_ARGUMENT", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "aux")); !os.IsNotExist(err) {
		t.Errorf("the refused directory aux was made: %v", err)
	}
	// A dry run is refused the same way.
	if _, err := s.Write(ctx, "nul.txt", "x\n", &editguard.WriteOptions{DryRun: true}); errorCode(err) != editguard.CodeInvalidArgument {
		t.Errorf("dry run of nul.txt: %v, want INVALID_ARGUMENT", err)
	}
}

func TestPortableNamesOff(t *testing.T) {
	ctx := context.Background()
	w, dir := openNames(t, editguard.NamesOff)
	writeFile(t, dir, "README.md", "x\n")
	s := w.NewSession("agent")
	for _, tc := range append(nonPortable, struct{ name, why string }{"Readme.md", ""}) {
		res, err := s.Write(ctx, tc.name, "x\n", nil)
		if err != nil || len(res.Warnings) != 0 {
			t.Errorf("write %q under off = %+v, %v; want no check", tc.name, res, err)
		}
	}
	// An element over 255 bytes is refused under every policy: no file
	// system this runs on takes it.
	if _, err := s.Write(ctx, strings.Repeat("n", 256), "x\n", nil); errorCode(err) != editguard.CodeInvalidArgument {
		t.Errorf("write of a 256-byte name under off: %v, want INVALID_ARGUMENT", err)
	}
}

// TestPortableNameTwins: a name that differs from a sibling only in case,
// or only in Unicode normalization, is a twin; one in another directory is
// not.
func TestPortableNameTwins(t *testing.T) {
	ctx := context.Background()
	nfc, nfd := "caf\u00e9.txt", "cafe\u0301.txt"
	for _, policy := range []string{editguard.NamesWarn, editguard.NamesRefuse} {
		t.Run(policy, func(t *testing.T) {
			w, dir := openNames(t, policy)
			writeFile(t, dir, "docs/README.md", "x\n")
			writeFile(t, dir, "docs/"+nfc, "x\n")
			s := w.NewSession("agent")
			for _, tc := range []struct{ p, twin string }{{"docs/Readme.md", "README.md"}, {"docs/" + nfd, nfc}, {"Docs/x.txt", "docs"}} {
				res, err := s.Write(ctx, tc.p, "x\n", nil)
				if policy == editguard.NamesRefuse {
					if errorCode(err) != editguard.CodeInvalidArgument || !strings.Contains(err.Error(), tc.twin) ||
						err.(*editguard.Error).Details["suggestion"] != tc.twin {
						t.Errorf("write %q: %v, want INVALID_ARGUMENT naming its twin %q", tc.p, err, tc.twin)
					}
					continue
				}
				if err != nil || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "case or Unicode normalization") || !strings.Contains(res.Warnings[0], tc.twin) {
					t.Errorf("write %q = %+v, %v; want a warning naming %q", tc.p, res, err, tc.twin)
				}
			}
			if res, err := s.Write(ctx, "other/Readme.md", "x\n", nil); err != nil || len(res.Warnings) != 0 {
				t.Errorf("Readme.md in another directory = %+v, %v; want no warning", res, err)
			}
		})
	}
}

// TestPortableNameExistingEditable: only new names are checked; a file
// that exists under a name that is not portable is changed as any other.
func TestPortableNameExistingEditable(t *testing.T) {
	ctx := context.Background()
	w, dir := openNames(t, editguard.NamesRefuse)
	writeFile(t, dir, "CON", "old\n")
	writeFile(t, dir, "bad:dir/a.txt", "a\n")
	s := w.NewSession("agent")
	for _, p := range []string{"CON", "bad:dir/a.txt"} {
		if _, err := s.Read(ctx, p, nil); err != nil {
			t.Fatal(err)
		}
		res, err := s.Write(ctx, p, "new\n", nil)
		if err != nil || len(res.Warnings) != 0 || readFile(t, dir, p) != "new\n" {
			t.Errorf("write over the existing %q = %+v, %v", p, res, err)
		}
	}
	if _, err := s.Edit(ctx, "CON", []editguard.Edit{{OldString: "new", NewString: "newer"}}, nil); err != nil {
		t.Errorf("edit of the existing CON: %v", err)
	}
	// A new file in an existing directory with such a name: only its
	// own name is new.
	if _, err := s.Write(ctx, "bad:dir/b.txt", "b\n", nil); err != nil {
		t.Errorf("new file in the existing bad:dir: %v", err)
	}
}

func TestPortableNamesMoveMkdirPatch(t *testing.T) {
	ctx := context.Background()
	for _, policy := range []string{editguard.NamesWarn, editguard.NamesRefuse, editguard.NamesOff} {
		t.Run(policy, func(t *testing.T) {
			w, dir := openNames(t, policy)
			writeFile(t, dir, "src.txt", "s\n")
			writeFile(t, dir, "p.txt", "p\n")
			s := w.NewSession("agent")
			for _, p := range []string{"src.txt", "p.txt"} {
				if _, err := s.Read(ctx, p, nil); err != nil {
					t.Fatal(err)
				}
			}
			mv, err := s.Move(ctx, "src.txt", "prn.txt", nil)
			checkPolicy(t, policy, "move to prn.txt", warningsOf(mv), err)
			dr, err := s.CreateDirectory(ctx, "new/what?")
			checkPolicy(t, policy, "create_directory new/what?", dirWarnings(dr), err)
			patch := "*** Begin Patch\n*** Add File: ok/trail.\n+x\n*** Update File: p.txt\n*** Move to: lpt1.txt\n@@\n-p\n+q\n*** End Patch\n"
			pr, err := s.ApplyPatch(ctx, patch, nil)
			var pw []string
			if pr != nil {
				pw = pr.Warnings
			}
			checkPolicy(t, policy, "apply_patch", pw, err)
			wantExist := policy != editguard.NamesRefuse
			for _, p := range []string{"prn.txt", "new/what?", "ok/trail.", "lpt1.txt"} {
				if _, err := os.Lstat(filepath.Join(dir, p)); (err == nil) != wantExist {
					t.Errorf("%s: exists %v, want %v", p, err == nil, wantExist)
				}
			}
			if policy == editguard.NamesWarn && len(pw) != 2 {
				t.Errorf("patch warnings %q, want one for each new name", pw)
			}
		})
	}
}

func warningsOf(r *editguard.Result) []string {
	if r == nil {
		return nil
	}
	return r.Warnings
}

func dirWarnings(r *editguard.DirResult) []string {
	if r == nil {
		return nil
	}
	return r.Warnings
}

// checkPolicy checks the outcome of a change that creates a name that is
// not portable under policy.
func checkPolicy(t *testing.T, policy, what string, warnings []string, err error) {
	t.Helper()
	switch policy {
	case editguard.NamesRefuse:
		if errorCode(err) != editguard.CodeInvalidArgument || !strings.Contains(err.Error(), "not portable") {
			t.Errorf("%s: %v, want INVALID_ARGUMENT", what, err)
		}
	case editguard.NamesWarn:
		if err != nil || len(warnings) == 0 || !strings.Contains(warnings[0], "not portable") {
			t.Errorf("%s: %q, %v; want a warning", what, warnings, err)
		}
	default:
		if err != nil || len(warnings) != 0 {
			t.Errorf("%s: %q, %v; want no check", what, warnings, err)
		}
	}
}

// TestPortableNamesConfig: .editguard/names sets the policy, Options.Names
// overrides it, and an unknown word fails Open.
func TestPortableNamesConfig(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	conf := filepath.Join(dir, editguard.StateDir, "names")
	if err := os.WriteFile(conf, []byte("refuse\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	open := func(o *editguard.Options) *editguard.Workspace {
		t.Helper()
		w, err := editguard.Open(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		return w
	}
	if _, err := open(nil).NewSession("a").Write(ctx, "con.txt", "x\n", nil); errorCode(err) != editguard.CodeInvalidArgument {
		t.Errorf("with names = refuse in the file: %v, want INVALID_ARGUMENT", err)
	}
	res, err := open(&editguard.Options{Names: editguard.NamesWarn}).NewSession("a").Write(ctx, "con.txt", "x\n", nil)
	if err != nil || len(res.Warnings) != 1 {
		t.Errorf("Options.Names warn over the file's refuse = %+v, %v; want a warning", res, err)
	}
	if err := os.WriteFile(conf, []byte("sometimes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if w, err := editguard.Open(dir, nil); err == nil || !strings.Contains(err.Error(), "sometimes") {
		if w != nil {
			w.Close()
		}
		t.Errorf("Open with an unknown word in .editguard/names = %v, want an error naming it", err)
	}
	if w, err := editguard.Open(t.TempDir(), &editguard.Options{Names: "loud"}); err == nil {
		w.Close()
		t.Error("Open with Options.Names loud succeeded")
	}
}

// TestPortableNameCaseRename: renaming a file to its own name in another
// case leaves no twin, and is not refused.
func TestPortableNameCaseRename(t *testing.T) {
	ctx := context.Background()
	w, dir := openNames(t, editguard.NamesRefuse)
	writeFile(t, dir, "readme.md", "r\n")
	writeFile(t, dir, "notes.txt", "n\n")
	writeFile(t, dir, "Notes.md", "other\n")
	s := w.NewSession("agent")
	for _, p := range []string{"readme.md", "notes.txt"} {
		if _, err := s.Read(ctx, p, nil); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := s.Move(ctx, "readme.md", "README.md", nil); err != nil || len(res.Warnings) != 0 {
		t.Errorf("case-only move = %+v, %v", res, err)
	}
	patch := "*** Begin Patch\n*** Update File: notes.txt\n*** Move to: NOTES.txt\n@@\n-n\n+N\n*** End Patch\n"
	if _, err := s.ApplyPatch(ctx, patch, nil); err != nil {
		t.Errorf("case-only move in a patch: %v", err)
	}
	// A twin that stays is still one.
	if _, err := s.Move(ctx, "README.md", "notes.md", nil); errorCode(err) != editguard.CodeInvalidArgument {
		t.Errorf("move beside Notes.md: %v, want INVALID_ARGUMENT", err)
	}
	if got := tree(t, dir); got["README.md"] != "r\n" || got["NOTES.txt"] != "N\n" {
		t.Errorf("tree after the renames: %q", got)
	}
}

// TestPortableNameTwinsInOnePatch: two new names of one patch that differ
// only in case are twins of each other.
func TestPortableNameTwinsInOnePatch(t *testing.T) {
	ctx := context.Background()
	patch := "*** Begin Patch\n*** Add File: Docs/a.txt\n+a\n*** Add File: docs/b.txt\n+b\n*** Add File: docs/c.txt\n+c\n*** Add File: ok/d.txt\n+d\n*** End Patch\n"
	w, dir := openNames(t, editguard.NamesRefuse)
	if _, err := w.NewSession("agent").ApplyPatch(ctx, patch, nil); errorCode(err) != editguard.CodeInvalidArgument || !strings.Contains(err.Error(), `"Docs"`) {
		t.Errorf("twins in one patch under refuse: %v, want INVALID_ARGUMENT naming Docs", err)
	}
	if got := tree(t, dir); len(got) != 0 {
		t.Errorf("a refused patch left %q", got)
	}
	w, _ = openNames(t, editguard.NamesWarn)
	res, err := w.NewSession("agent").ApplyPatch(ctx, patch, nil)
	if err != nil || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], `"docs"`) {
		t.Errorf("twins in one patch under warn = %+v, %v; want one warning", res, err)
	}
}
