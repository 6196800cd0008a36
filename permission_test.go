//go:build linux

package editguard_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestNonRootCannotWriteMore runs the CLI as an unprivileged user (nobody)
// against a file owned by another user (0644) and one of its own that is
// read-only (0444): neither may be changed, although the directory is
// writable and a rename would succeed. Needs root to switch users.
func TestNonRootCannotWriteMore(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the CLI as another user")
	}
	const nobody = 65534
	base := t.TempDir()
	bin := filepath.Join(base, "editguard")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/editguard").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := filepath.Join(base, "ws")
	os.Mkdir(dir, 0o777)
	for _, d := range []string{filepath.Dir(base), base, dir} {
		os.Chmod(d, 0o777)
	}
	os.WriteFile(filepath.Join(dir, "root.txt"), []byte("root's\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "ro.txt"), []byte("read-only\n"), 0o444)
	os.Chown(filepath.Join(dir, "ro.txt"), nobody, nobody)
	os.Chmod(filepath.Join(dir, "ro.txt"), 0o444)

	// nobody's own directory for editguard's key (its HOME does not exist).
	keys := filepath.Join(base, "nobody-state")
	os.Mkdir(keys, 0o700)
	os.Chown(keys, nobody, nobody)
	run := func(args ...string) (string, error) {
		cmd := exec.Command(bin, append([]string{"--root", dir}, args...)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		cmd.Env = []string{"HOME=/nonexistent", "PATH=/usr/bin:/bin", "EDITGUARD_STATE_HOME=" + keys}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, f := range []string{"root.txt", "ro.txt"} {
		if out, err := run("read", f); err != nil {
			t.Fatalf("read %s as nobody: %v\n%s", f, err, out)
		}
		out, err := run("edit", f, "--old", "\n", "--new", " changed\n", "--json")
		if err == nil || !strings.Contains(out, "PERMISSION_DENIED") {
			t.Errorf("edit %s as nobody = %v\n%s\nwant PERMISSION_DENIED", f, err, out)
		}
	}
	if got := readFile(t, dir, "root.txt"); got != "root's\n" {
		t.Errorf("root.txt = %q, want it unchanged", got)
	}
	if got := readFile(t, dir, "ro.txt"); got != "read-only\n" {
		t.Errorf("ro.txt = %q, want it unchanged", got)
	}
	var st syscall.Stat_t
	syscall.Stat(filepath.Join(dir, "root.txt"), &st)
	if st.Uid != 0 {
		t.Errorf("root.txt now belongs to uid %d, want 0", st.Uid)
	}
}
