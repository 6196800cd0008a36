package editguard_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/atomicfile"
	"golang.org/x/sys/unix"
)

func TestWriteCreateParents(t *testing.T) {
	ctx := context.Background()
	w, dir := newWorkspace(t)
	s := w.NewSession("agent")
	no := false
	for _, dry := range []bool{true, false} {
		_, err := s.Write(ctx, "a/b/c.txt", "x\n", &editguard.WriteOptions{CreateParents: &no, DryRun: dry})
		if errorCode(err) != editguard.CodeNotFound {
			t.Fatalf("create_parents false (dry run %v): %v, want NOT_FOUND", dry, err)
		}
		if d := err.(*editguard.Error).Details["directory"]; d != "a" || !strings.Contains(err.Error(), "a does not exist") {
			t.Errorf("the error names %v (%v), want the first missing directory a", d, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "a")); !os.IsNotExist(err) {
		t.Fatalf("a was made: %v", err)
	}
	writeFile(t, dir, "a/keep.txt", "k\n")
	_, err := s.Write(ctx, "a/b/c.txt", "x\n", &editguard.WriteOptions{CreateParents: &no})
	if d, _ := errorDetail(err, "directory"); d != "a/b" {
		t.Errorf("with a present: %v, want NOT_FOUND naming a/b", err)
	}
	// Into an existing directory, and with the default, it writes.
	if _, err := s.Write(ctx, "a/d.txt", "x\n", &editguard.WriteOptions{CreateParents: &no}); err != nil {
		t.Errorf("create_parents false into an existing directory: %v", err)
	}
	yes := true
	for _, o := range []*editguard.WriteOptions{nil, {CreateParents: &yes}} {
		if _, err := s.Write(ctx, "x/y/z.txt", "x\n", o); err != nil || readFile(t, dir, "x/y/z.txt") != "x\n" {
			t.Errorf("write with %+v: %v", o, err)
		}
	}
}

func errorDetail(err error, key string) (any, bool) {
	e, ok := err.(*editguard.Error)
	if !ok {
		return nil, false
	}
	v, ok := e.Details[key]
	return v, ok
}

func TestWriteFileMode(t *testing.T) {
	ctx := context.Background()
	w, dir := newWorkspace(t)
	s := w.NewSession("agent")
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	for _, m := range []uint32{0o600, 0o640, 0o755, 0o444} {
		p := "f" + octal(m)
		res, err := s.Write(ctx, p, "x\n", &editguard.WriteOptions{FileMode: &m})
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(filepath.Join(dir, p))
		if err != nil || uint32(st.Mode().Perm()) != m || res.Mode != octal(m) {
			t.Errorf("file_mode %s: file mode %v, result %q (%v)", octal(m), st.Mode(), res.Mode, err)
		}
	}
	// Without file_mode: 0666 less the umask.
	res, err := s.Write(ctx, "plain.txt", "x\n", nil)
	if err != nil || res.Mode != "0600" {
		t.Errorf("a new file without file_mode under umask 077: %+v, %v", res, err)
	}
	// An existing file keeps its mode.
	if err := os.Chmod(filepath.Join(dir, "plain.txt"), 0o640); err != nil {
		t.Fatal(err)
	}
	m := uint32(0o600)
	res, err = s.Write(ctx, "plain.txt", "y\n", &editguard.WriteOptions{FileMode: &m})
	if st, _ := os.Stat(filepath.Join(dir, "plain.txt")); err != nil || st.Mode().Perm() != 0o640 || res.Mode != "0640" {
		t.Errorf("write over a 0640 file with file_mode 0600: %+v, %v", res, err)
	}
	for _, bad := range []uint32{0o4755, 0o2755, 0o1777, 0o10000} {
		if _, err := s.Write(ctx, "bad.txt", "x\n", &editguard.WriteOptions{FileMode: &bad}); errorCode(err) != editguard.CodeInvalidArgument {
			t.Errorf("file_mode %o: %v, want INVALID_ARGUMENT", bad, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "bad.txt")); !os.IsNotExist(err) {
		t.Errorf("bad.txt was written: %v", err)
	}
}

func octal(m uint32) string {
	const digits = "01234567"
	return "0" + string([]byte{digits[m>>6&7], digits[m>>3&7], digits[m&7]})
}

// TestWriteFileModeBeforeRename: the temporary file has its mode before it
// is renamed into place, so the file never has another under its name.
func TestWriteFileModeBeforeRename(t *testing.T) {
	ctx := context.Background()
	w, _ := newWorkspace(t)
	s := w.NewSession("agent")
	var ops []string
	var atRename os.FileMode
	editguard.SetFaults(w, func(c *atomicfile.Call) error {
		ops = append(ops, c.Op)
		if (c.Op == "renameat2" || c.Op == "renameat") && c.To == "secret.txt" {
			var st unix.Stat_t
			if err := unix.Fstatat(c.FD, c.Name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
				atRename = os.FileMode(st.Mode & 0o7777)
			}
		}
		return nil
	}, nil, nil)
	defer editguard.SetFaults(w, nil, nil, nil)
	m := uint32(0o640)
	if _, err := s.Write(ctx, "secret.txt", "x\n", &editguard.WriteOptions{FileMode: &m}); err != nil {
		t.Fatal(err)
	}
	if atRename != 0o640 {
		t.Errorf("the temporary file had mode %o at its rename (calls %v), want 640", atRename, ops)
	}
}

// TestWriteResultFormat: the result names the mode, the encoding used and
// the line endings written, in its JSON too.
func TestWriteResultFormat(t *testing.T) {
	ctx := context.Background()
	w, dir := newWorkspace(t)
	writeFile(t, dir, "crlf.txt", "a\r\nb\r\n")
	s := w.NewSession("agent")
	if _, err := s.Read(ctx, "crlf.txt", nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p, content string
		o          *editguard.WriteOptions
		enc, le    string
	}{
		{"crlf.txt", "a\nc\n", nil, "utf-8", "crlf"},
		{"new.txt", "one\ntwo\n", nil, "utf-8", "lf"},
		{"one-line.txt", "no break", nil, "utf-8", "none"},
		{"latin.txt", "caf\u00e9\n", &editguard.WriteOptions{Encoding: "latin1", LineEnding: "crlf"}, "iso-8859-1", "crlf"},
	} {
		res, err := s.Write(ctx, tc.p, tc.content, tc.o)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(filepath.Join(dir, tc.p))
		if res.EncodingUsed != tc.enc || res.LineEnding != tc.le || res.Mode != octal(uint32(st.Mode().Perm())) {
			t.Errorf("write %s: encoding %q line ending %q mode %q; want %q %q %v", tc.p, res.EncodingUsed, res.LineEnding, res.Mode, tc.enc, tc.le, st.Mode())
		}
		var js map[string]any
		b, _ := json.Marshal(res)
		if json.Unmarshal(b, &js) != nil || js["mode"] != res.Mode || js["encoding_used"] != tc.enc || js["line_ending"] != tc.le {
			t.Errorf("write %s: JSON %s", tc.p, b)
		}
	}
}

// TestWriteOptionsInLedger: the new options are recorded under the tool's
// argument names, and a write without them records what it did before.
func TestWriteOptionsInLedger(t *testing.T) {
	ctx := context.Background()
	w, _ := newWorkspace(t)
	s := w.NewSession("agent")
	if _, err := s.Write(ctx, "plain.txt", "x\n", nil); err != nil {
		t.Fatal(err)
	}
	no, m := false, uint32(0o600)
	if _, err := s.Write(ctx, "opts.txt", "x\n", &editguard.WriteOptions{CreateParents: &no, FileMode: &m}); err != nil {
		t.Fatal(err)
	}
	recs := ledgerRecords(t, w)
	args := map[string]map[string]any{}
	for _, r := range recs {
		var a map[string]any
		if err := json.Unmarshal(r.Args, &a); err != nil {
			t.Fatal(err)
		}
		args[r.Path] = a
	}
	if a := args["opts.txt"]; a["create_parents"] != false || a["file_mode"] != float64(0o600) {
		t.Errorf("opts.txt's record args %v, want create_parents false and file_mode 384", a)
	}
	for _, k := range []string{"create_parents", "file_mode"} {
		if _, ok := args["plain.txt"][k]; ok {
			t.Errorf("plain.txt's record args %v hold %s", args["plain.txt"], k)
		}
	}
}
