//go:build unix

package editguard_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/editguard/editguard"
)

// sandboxFixture is a workspace with symlinks that stay inside it, lead out
// of it or into its state directory, next to a directory outside it.
type sandboxFixture struct {
	base, root, outside string
	w                   *editguard.Workspace
}

func newSandboxFixture(t testing.TB) *sandboxFixture {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fx := &sandboxFixture{base: base, root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside")}
	// The state directory is editguard's own (stamped), with decoys put
	// in it after: a foreign one would be refused at Open.
	if err := os.MkdirAll(fx.root, 0o755); err != nil {
		t.Fatal(err)
	}
	if w, err := editguard.Open(fx.root, nil); err != nil {
		t.Fatal(err)
	} else {
		w.Close()
	}
	files := map[string]string{
		"outside/secret.txt":         "secret\n",
		"outside/dir/x.txt":          "x\n",
		"root/a.txt":                 "a\n",
		"root/sub/b.txt":             "b\n",
		"root/sub/deeper/c.txt":      "c\n",
		"root/.editguard/decoy.txt":  "decoy\n",
		"root/.editguard/config.txt": "config\n",
	}
	for name, content := range files {
		p := filepath.Join(base, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"link_in":           "a.txt",
		"sub/link_up":       "../a.txt",
		"link_out":          "../outside/secret.txt",
		"link_abs_out":      filepath.Join(fx.outside, "secret.txt"),
		"link_abs_in":       filepath.Join(fx.root, "a.txt"),
		"dirlink_in":        "sub",
		"dirlink_out":       "../outside",
		"dirlink_abs_out":   fx.outside,
		"sub/dirlink_root":  "..",
		"sub/dirlink_base":  "../..",
		"link_state":        ".editguard",
		"link_state_ledger": ".editguard/ledger.jsonl",
		"link_decoy":        ".editguard/decoy.txt",
		"link_dangling_out": "../outside/new.txt",
		"link_dangling_in":  "sub/new.txt",
		"loop":              "loop",
		"link_root":         ".",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(fx.root, filepath.FromSlash(name))); err != nil {
			t.Fatal(err)
		}
	}
	fx.w, err = editguard.Open(fx.root, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fx
}

// snapshot maps every file and symlink under the fixture's base (except
// the history, ledger, ledger anchor and lock files, which every write
// changes) to its
// content or link target.
func (fx *sandboxFixture) snapshot(t testing.TB) map[string]string {
	state := filepath.Join(fx.root, editguard.StateDir)
	// editguard's own record keeping: history, files taken off their names
	// (kept until swept), and what sweeping quarantines.
	skip := map[string]bool{
		filepath.Join(state, "history"):    true,
		filepath.Join(state, "displaced"):  true,
		filepath.Join(state, "quarantine"): true,
	}
	snap := map[string]string{}
	err := filepath.WalkDir(fx.base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if skip[p] {
			return filepath.SkipDir
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			snap[p] = "link:" + target
		case d.Type().IsRegular():
			if p == filepath.Join(state, "ledger.jsonl") || p == filepath.Join(state, "ledger.jsonl.head") || strings.HasSuffix(p, ".lock") {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			snap[p] = string(b)
		case d.IsDir():
			snap[p] = "dir"
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// inside reports whether the absolute path p is in the workspace and not
// in its state directory.
func (fx *sandboxFixture) inside(p string) bool {
	rel, err := filepath.Rel(fx.root, p)
	return err == nil && filepath.IsLocal(rel) && rel != editguard.StateDir &&
		!strings.HasPrefix(rel, editguard.StateDir+string(filepath.Separator))
}

// expand replaces $ROOT and $OUT, so that seeds can name absolute paths.
func (fx *sandboxFixture) expand(p string) string {
	return strings.NewReplacer("$ROOT", fx.root, "$OUT", fx.outside).Replace(p)
}

// checkResolved checks a path as the session resolved it: relative, clean,
// outside .editguard, and naming a real file inside the root with no
// symlink on the way.
func (fx *sandboxFixture) checkResolved(t *testing.T, p string, s *editguard.Session) {
	t.Helper()
	b, ok, err := editguard.SessionBaseline(s, p)
	if err != nil || !ok {
		t.Fatalf("Baseline(%q) = %v, %v after a successful call", p, ok, err)
	}
	abs := filepath.Join(fx.root, filepath.FromSlash(b.Path))
	if !filepath.IsLocal(filepath.FromSlash(b.Path)) || !fx.inside(abs) {
		t.Fatalf("%q resolved to %q, outside the workspace or inside its state", p, b.Path)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil || real != abs {
		t.Fatalf("%q resolved to %q, which is %q (%v), want a path with no symlink", p, b.Path, real, err)
	}
}

// fuzzOps is the number of operations FuzzSandboxPath tries on each path:
// read, read and write, create by edit, write without a read, delete, move
// away and back, move onto it, make a directory.
const fuzzOps = 8

func FuzzSandboxPath(f *testing.F) {
	for _, p := range []string{
		"a.txt", "sub/b.txt", "./a.txt", "sub/../a.txt", "sub//deeper/./c.txt",
		"../outside/secret.txt", "..", "../root/a.txt", "sub/../../outside/secret.txt",
		"$ROOT/a.txt", "$ROOT/../outside/secret.txt", "$OUT/secret.txt", "/etc/passwd", "/",
		"link_in", "sub/link_up", "link_out", "link_abs_out", "link_abs_in",
		"dirlink_in/b.txt", "dirlink_out/secret.txt", "dirlink_out/new.txt", "dirlink_abs_out/dir/x.txt",
		"sub/dirlink_root/a.txt", "sub/dirlink_base/outside/secret.txt", "sub/dirlink_root/../outside/secret.txt",
		"dirlink_in/../a.txt", "dirlink_in/../../outside/secret.txt",
		"link_state/ledger.jsonl", "link_state_ledger", "link_decoy", "link_state/new.txt",
		".editguard/decoy.txt", ".editguard/new.txt", ".editguard", "./.editguard/../.editguard/config.txt", "sub/../.editguard/decoy.txt",
		"link_root/.editguard/decoy.txt", "link_root/link_root/a.txt",
		"link_dangling_out", "link_dangling_in", "loop", "loop/x",
		"a.txt\x00", "a\x00/../../outside/secret.txt", "",
		strings.Repeat("n", 255), strings.Repeat("n", 256), strings.Repeat("d/", 300) + "f",
		"CON", "NUL", "AUX", "COM1", "LPT1", "con.txt", "a:b", "sub/a:b", "trailing.", "trailing ", "sub/...", "...",
		"C:\\Windows\\win.ini", "..\\outside\\secret.txt", "sub\\..\\..\\outside\\secret.txt",
		"new/dir/file.txt", "dirlink_in/new.txt",
	} {
		for op := byte(0); op < fuzzOps; op++ {
			f.Add(p, op)
		}
	}
	fx := newSandboxFixture(f)
	f.Cleanup(func() { fx.w.Close() })
	f.Fuzz(func(t *testing.T, p string, op byte) {
		p = fx.expand(p)
		s := fx.w.NewSession("fuzz")
		op %= fuzzOps
		if op == 6 {
			// A file to move onto p.
			if err := os.WriteFile(filepath.Join(fx.root, "src_fuzz.txt"), []byte("moved by the fuzzer\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		before := fx.snapshot(t)
		ledgerBefore, _ := os.ReadFile(editguard.LedgerPath(fx.w))
		var err error
		switch op {
		case 0: // read
			var r *editguard.ReadResult
			if r, err = s.Read(ctx, p, nil); err == nil {
				fx.checkResolved(t, p, s)
				b, _, _ := editguard.SessionBaseline(s, p)
				data, rerr := os.ReadFile(filepath.Join(fx.root, filepath.FromSlash(b.Path)))
				if rerr != nil || sha256hex(data) != r.SHA256 {
					t.Fatalf("Read(%q) returned sha256 %s, not that of %s inside the root", p, r.SHA256, b.Path)
				}
			}
		case 1: // read, then write over
			if _, err = s.Read(ctx, p, nil); err == nil {
				_, err = s.Write(ctx, p, "written by the fuzzer\n", nil)
			}
		case 2: // create with an edit
			_, err = s.Edit(ctx, p, []editguard.Edit{{OldString: "", NewString: "created by the fuzzer\n"}}, nil)
		case 3: // write without reading: creates, or NOT_READ
			_, err = s.Write(ctx, p, "fresh\n", nil)
		case 4: // read, then delete
			if _, err = s.Read(ctx, p, nil); err == nil {
				_, err = s.Delete(ctx, p, nil)
			}
		case 5: // read, move away and back
			if _, err = s.Read(ctx, p, nil); err == nil {
				if _, err = s.Move(ctx, p, "moved_fuzz/x.txt", nil); err == nil {
					_, err = s.Move(ctx, "moved_fuzz/x.txt", p, nil)
				}
			}
		case 6: // move a file onto p
			if _, err = s.Read(ctx, "src_fuzz.txt", nil); err == nil {
				_, err = s.Move(ctx, "src_fuzz.txt", p, nil)
			}
		case 7: // make a directory
			_, err = s.CreateDirectory(ctx, p)
		}
		var e *editguard.Error
		if err != nil && !errors.As(err, &e) {
			t.Fatalf("op %d on %q: error %v is not an *editguard.Error", op, p, err)
		}
		if err == nil && (op == 1 || op == 2 || op == 3 || op == 5 || op == 6) {
			fx.checkResolved(t, p, s)
		}
		after := fx.snapshot(t)
		changed := 0
		for name, v := range after {
			if before[name] != v {
				changed++
				// A directory may be created on the way to a new file.
				if !fx.inside(name) {
					t.Fatalf("op %d on %q (error %v) changed %s, outside the workspace or inside its state", op, p, err, name)
				}
			}
		}
		for name := range before {
			if _, ok := after[name]; !ok {
				changed++
				// Only a delete or a move takes a name away, inside.
				if (op != 4 && op != 5 && op != 6) || !fx.inside(name) {
					t.Fatalf("op %d on %q removed %s", op, p, name)
				}
			}
		}
		if err != nil && changed > 0 {
			t.Fatalf("op %d on %q failed (%v) but changed %d files", op, p, err, changed)
		}
		// The ledger only grows.
		ledgerAfter, _ := os.ReadFile(editguard.LedgerPath(fx.w))
		if !bytes.HasPrefix(ledgerAfter, ledgerBefore) {
			t.Fatalf("op %d on %q rewrote the ledger", op, p)
		}
	})
}
