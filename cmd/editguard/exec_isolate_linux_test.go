package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// needIsolation skips the test where exec cannot run a command isolated
// (no user namespaces, no overlayfs in them).
func needIsolation(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir)
	if code, out, errs := cliRun(t, dir, "exec", "--isolate=on", "--", "true"); code != 0 {
		t.Skipf("exec cannot isolate a command here: exit %d\n%s%s", code, out, errs)
	}
}

// execLedger returns the ledger's records as log --json prints them.
func execLedger(t *testing.T, dir string) []struct{ Path, Tool, Outcome string } {
	t.Helper()
	code, out, errs := cliRun(t, dir, "log", "--json")
	if code != 0 {
		t.Fatalf("log: exit %d\n%s%s", code, out, errs)
	}
	var recs []struct{ Path, Tool, Outcome string }
	for _, line := range logLines(t, out) {
		var r struct {
			Path, Tool, Outcome string
			PathHex             string `json:"path_hex"`
		}
		if json.Unmarshal([]byte(line), &r) != nil || r.Path == "" {
			continue
		}
		if r.PathHex != "" { // a name that is not UTF-8, exactly
			b, err := hex.DecodeString(r.PathHex)
			if err != nil {
				t.Fatalf("log: bad path_hex %q", r.PathHex)
			}
			r.Path = string(b)
		}
		recs = append(recs, struct{ Path, Tool, Outcome string }{r.Path, r.Tool, r.Outcome})
	}
	return recs
}

// waitFile waits for the file name to exist, or for done to be closed.
func waitFile(t *testing.T, name string, done <-chan struct{}) bool {
	t.Helper()
	for {
		if _, err := os.Lstat(name); err == nil {
			return true
		}
		select {
		case <-done:
			return false
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestExecIsolatedAttribution: while an isolated command waits, a separate
// process (a person's editor) saves two files, one in place and one by
// writing a temporary file and renaming it over, and a third that the
// command then changes too. The command changes, deletes and creates
// files (in a new directory, a symbolic link, a name that is not UTF-8).
// Its own changes are in the tree and the ledger, and the session's reads
// follow them; the person's saves are in the tree, not in the ledger, the
// session's reads do not move to them and rewind of the session leaves
// them; the file both changed keeps the person's version, and exec names
// the conflict and where the command's version is (exit 3).
func TestExecIsolatedAttribution(t *testing.T) {
	needIsolation(t)
	dir, sync := t.TempDir(), t.TempDir()
	t.Chdir(dir)
	for name, data := range map[string]string{"f.txt": "v1\n", "g.txt": "g1\n", "h.txt": "h1\n", "c.txt": "c1\n", "del.txt": "gone\n", "old/a": "a\n", "old/b": "b\n"} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644)
	}
	for _, f := range []string{"f.txt", "g.txt", "h.txt", "c.txt"} {
		if code, out, errs := cliRun(t, dir, "read", f); code != 0 {
			t.Fatalf("read %s: exit %d\n%s%s", f, code, out, errs)
		}
	}
	started, saved := filepath.Join(sync, "started"), filepath.Join(sync, "saved")
	t.Setenv("STARTED", started)
	t.Setenv("SAVED", saved)
	bad := "bad\xffname"
	script := `: > "$STARTED"
while [ ! -e "$SAVED" ]; do sleep 0.02; done
echo cmd-f > f.txt
rm del.txt
echo cmd-c > c.txt
rm -r old && mkdir -p old nd/sub && echo new-a > old/a
echo n > nd/sub/n
ln -s f.txt link
printf x > "$(printf 'bad\377name')"`
	var out bytes.Buffer
	var code int
	done := make(chan struct{})
	go func() {
		defer close(done)
		code = cli(t, dir, &out, "exec", "--isolate=on", "--", "sh", "-c", script)
	}()
	if !waitFile(t, started, done) {
		t.Fatalf("exec ended before the command started: exit %d\n%s", code, out.String())
	}
	person := exec.Command("sh", "-c", `echo person-g > g.txt
printf 'person-h\n' > .h.txt.swp && mv .h.txt.swp h.txt
echo person-c > c.txt`)
	person.Dir = dir
	if b, err := person.CombinedOutput(); err != nil {
		t.Fatalf("the person's saves: %v\n%s", err, b)
	}
	os.WriteFile(saved, nil, 0o644)
	<-done
	if code != exitConflict {
		t.Fatalf("exec: exit %d, want %d (a conflict)\n%s", code, exitConflict, out.String())
	}
	want := map[string]string{"f.txt": "cmd-f\n", "g.txt": "person-g\n", "h.txt": "person-h\n", "c.txt": "person-c\n",
		"old/a": "new-a\n", "nd/sub/n": "n\n", bad: "x"}
	for name, data := range want {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != data {
			t.Errorf("%q after exec: %q, %v; want %q", name, got, err, data)
		}
	}
	for _, gone := range []string{"del.txt", "old/b"} {
		if _, err := os.Lstat(filepath.Join(dir, gone)); err == nil {
			t.Errorf("%s is still there after the command removed it", gone)
		}
	}
	if target, err := os.Readlink(filepath.Join(dir, "link")); err != nil || target != "f.txt" {
		t.Errorf("link after exec: %q, %v", target, err)
	}
	// A copied-up file leaves the overlay's attributes behind.
	buf := make([]byte, 1024)
	if n, err := syscall.Listxattr(filepath.Join(dir, "f.txt"), buf); err == nil && strings.Contains(string(buf[:n]), "overlay.") {
		t.Errorf("f.txt carries the overlay's attributes into the tree: %q", buf[:n])
	}
	// The conflict names where the command's version is.
	i := strings.Index(out.String(), "editguard: conflict: the command changed c.txt")
	if i < 0 {
		t.Fatalf("exec does not report the conflict on c.txt:\n%s", out.String())
	}
	line := out.String()[i:]
	line = line[:strings.IndexByte(line, '\n')]
	k := strings.Index(line, "kept at ")
	if k < 0 {
		t.Fatalf("the conflict does not say where the command's version is: %s", line)
	}
	if got, err := os.ReadFile(line[k+len("kept at "):]); err != nil || string(got) != "cmd-c\n" {
		t.Errorf("the command's kept version: %q, %v", got, err)
	}
	if !strings.Contains(out.String(), "3 file(s) changed in the tree by someone else") {
		t.Errorf("exec does not say that others changed three files:\n%s", out.String())
	}

	recorded := map[string]bool{}
	for _, r := range execLedger(t, dir) {
		if r.Tool == "exec" && r.Outcome == "ok" {
			recorded[r.Path] = true
		}
	}
	for _, p := range []string{"f.txt", "del.txt", "old/a", "old/b", "nd/sub/n", bad} {
		if !recorded[p] {
			t.Errorf("the command's change of %q is not in the ledger: %v", p, recorded)
		}
	}
	for _, p := range []string{"g.txt", "h.txt", "c.txt"} {
		if recorded[p] {
			t.Errorf("the person's save of %s is in the ledger as the command's", p)
		}
	}
	// The session's read follows the command's file, not the person's.
	if code, out, errs := cliRun(t, dir, "write", "g.txt"); code != exitConflict {
		t.Errorf("write of g.txt, which the session read before the person's save: exit %d, want %d\n%s%s", code, exitConflict, out, errs)
	}
	if code, out, errs := cliRun(t, dir, "write", "f.txt"); code != 0 {
		t.Errorf("write of f.txt, which the command changed: exit %d, want 0 (the session's read follows the command's change)\n%s%s", code, out, errs)
	}
	// rewind of the session undoes the command's changes, not the person's.
	if code, out, errs := cliRun(t, dir, "rewind", "--session", defaultSession, "--yes"); code != 0 {
		t.Fatalf("rewind: exit %d\n%s%s", code, out, errs)
	}
	for name, data := range map[string]string{"f.txt": "v1\n", "del.txt": "gone\n", "old/b": "b\n", "g.txt": "person-g\n", "h.txt": "person-h\n", "c.txt": "person-c\n"} {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != data {
			t.Errorf("%s after rewind: %q, %v; want %q", name, got, err, data)
		}
	}
}

// TestExecIsolateModes: --isolate takes auto, on or off and nothing else;
// while a command run with isolation on has written a file, the tree does
// not have it yet (it does once the command ends), and with isolation off
// it does at once.
func TestExecIsolateModes(t *testing.T) {
	needIsolation(t)
	dir, sync := t.TempDir(), t.TempDir()
	t.Chdir(dir)
	if code, out, errs := cliRun(t, dir, "exec", "--isolate=maybe", "--", "true"); code != exitUsage {
		t.Errorf("--isolate=maybe: exit %d\n%s%s", code, out, errs)
	}
	started, checked := filepath.Join(sync, "started"), filepath.Join(sync, "checked")
	t.Setenv("STARTED", started)
	t.Setenv("CHECKED", checked)
	script := `echo x > new.txt; : > "$STARTED"; while [ ! -e "$CHECKED" ]; do sleep 0.02; done`
	for _, mode := range []string{"on", "off"} {
		os.Remove(filepath.Join(dir, "new.txt"))
		os.Remove(started)
		os.Remove(checked)
		var out bytes.Buffer
		var code int
		done := make(chan struct{})
		go func() {
			defer close(done)
			code = cli(t, dir, &out, "exec", "--isolate="+mode, "--", "sh", "-c", script)
		}()
		if !waitFile(t, started, done) {
			t.Fatalf("--isolate=%s: exec ended before the command wrote: exit %d\n%s", mode, code, out.String())
		}
		_, err := os.Stat(filepath.Join(dir, "new.txt"))
		os.WriteFile(checked, nil, 0o644)
		<-done
		if seen := err == nil; seen != (mode == "off") {
			t.Errorf("--isolate=%s: the tree had the command's file while it ran: %v", mode, seen)
		}
		if code != 0 {
			t.Fatalf("exec --isolate=%s: exit %d\n%s", mode, code, out.String())
		}
		if got, err := os.ReadFile(filepath.Join(dir, "new.txt")); err != nil || string(got) != "x\n" {
			t.Errorf("--isolate=%s: new.txt after exec: %q, %v", mode, got, err)
		}
	}
}

// TestExecIsolatedNotBegun: the helper starts before the command is
// begun; when the command is not begun (here a bad session name), the
// helper never runs it, and its overlay's directories are removed.
func TestExecIsolatedNotBegun(t *testing.T) {
	needIsolation(t)
	dir, isoBase := t.TempDir(), t.TempDir()
	t.Chdir(dir)
	t.Setenv("EDITGUARD_ISOLATE_DIR", isoBase)
	if code, out, errs := cliRun(t, dir, "exec", "--isolate=on", "--", "true"); code != 0 {
		t.Fatalf("exec: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := cliRun(t, dir, "--session", "bad/../name", "exec", "--isolate=on", "--", "sh", "-c", "echo ran > ran.txt")
	if code == 0 {
		t.Fatalf("exec with a bad session name: exit 0\n%s%s", out, errs)
	}
	if _, err := os.Lstat(filepath.Join(dir, "ran.txt")); err == nil {
		t.Error("the command ran, though it was not begun")
	}
	if ents, _ := os.ReadDir(isoBase); len(ents) != 0 {
		t.Errorf("the overlay's directories were left: %v", ents)
	}
}

// TestExecIsolatedUnprivileged runs exec as a user other than root (when
// the tests run as root): the command runs isolated with the user's own
// uid and no capability, a save by another process while it runs stays
// that process's, and the command's change is recorded.
func TestExecIsolatedUnprivileged(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run exec as another user")
	}
	const nobody = 65534
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Directories the user can reach: t.TempDir's are root's alone.
	shared := func(owner int) string {
		d, err := os.MkdirTemp("", "egiso")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		os.Chmod(d, 0o755)
		os.Chown(d, owner, owner)
		return d
	}
	bin := filepath.Join(shared(0), "editguard")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	ws, home, sync := shared(nobody), shared(nobody), shared(nobody)
	for name, text := range map[string]string{"f.txt": "f1\n", "p.txt": "p1\n"} {
		os.WriteFile(filepath.Join(ws, name), []byte(text), 0o644)
		os.Chown(filepath.Join(ws, name), nobody, nobody)
	}
	started, saved := filepath.Join(sync, "started"), filepath.Join(sync, "saved")
	as := func(args ...string) *exec.Cmd {
		cmd := exec.Command(bin, append([]string{"--root", ws}, args...)...)
		cmd.Dir = ws
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
			"EDITGUARD_TEST_CACHE=" + filepath.Join(home, ".cache"), "STARTED=" + started, "SAVED=" + saved}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		return cmd
	}
	if out, err := as("read", "p.txt").CombinedOutput(); err != nil {
		t.Skipf("editguard cannot run as uid %d here: %v\n%s", nobody, err, out)
	}
	cmd := as("exec", "--isolate=on", "--", "sh", "-c", `: > "$STARTED"
while [ ! -e "$SAVED" ]; do sleep 0.02; done
echo f-cmd > f.txt
id -u > uid
grep CapEff /proc/self/status > caps`)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var werr error
	go func() { werr = cmd.Wait(); close(done) }()
	if !waitFile(t, started, done) {
		if strings.Contains(out.String(), "cannot run isolated") {
			t.Skipf("exec cannot isolate a command for uid %d here:\n%s", nobody, out.String())
		}
		t.Fatalf("exec ended before the command started: %v\n%s", werr, out.String())
	}
	if err := os.WriteFile(filepath.Join(ws, "p.txt"), []byte("p-person\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(saved, nil, 0o644)
	<-done
	if werr != nil {
		t.Fatalf("exec as uid %d: %v\n%s", nobody, werr, out.String())
	}
	for name, want := range map[string]string{"f.txt": "f-cmd\n", "p.txt": "p-person\n", "uid": "65534\n", "caps": "CapEff:\t0000000000000000\n"} {
		if got, err := os.ReadFile(filepath.Join(ws, name)); err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
	log, err := as("log", "--json").Output()
	if err != nil {
		t.Fatalf("log: %v", err)
	}
	if !bytes.Contains(log, []byte(`"path":"f.txt"`)) || bytes.Contains(log, []byte(`"path":"p.txt"`)) {
		t.Errorf("the ledger should have the command's f.txt and not the other process's p.txt:\n%s", log)
	}
}

// TestExecIsolatedBackground: a process the command leaves running in the
// background still sees its isolated view; exec says so, with where what
// it writes from then on goes.
func TestExecIsolatedBackground(t *testing.T) {
	needIsolation(t)
	dir, sync := t.TempDir(), t.TempDir()
	t.Chdir(dir)
	stop := filepath.Join(sync, "stop")
	t.Setenv("STOP", stop)
	defer os.WriteFile(stop, nil, 0o644)
	var out bytes.Buffer
	code := cli(t, dir, &out, "exec", "--isolate=on", "--", "sh", "-c",
		`echo x > f.txt; (while [ ! -e "$STOP" ]; do sleep 0.02; done) >/dev/null 2>&1 &`)
	if code != 0 {
		t.Fatalf("exec: exit %d\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "process(es) the command left running still see its isolated view") {
		t.Errorf("exec does not tell of the process left running:\n%s", out.String())
	}
	if got, err := os.ReadFile(filepath.Join(dir, "f.txt")); err != nil || string(got) != "x\n" {
		t.Errorf("f.txt after exec: %q, %v", got, err)
	}
}

// TestExecNotIsolatedOverAMount: a file system mounted inside the tree
// would be hidden from an isolated command (the overlay covers the root's
// own file system), so exec does not isolate it: with auto it says so and
// runs the command in the tree; with on it refuses.
func TestExecNotIsolatedOverAMount(t *testing.T) {
	needIsolation(t)
	if os.Getuid() != 0 {
		t.Skip("needs root to mount inside the tree")
	}
	dir := t.TempDir()
	t.Chdir(dir)
	mnt := filepath.Join(dir, "m nt")
	os.Mkdir(mnt, 0o755)
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, ""); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	defer syscall.Unmount(mnt, syscall.MNT_DETACH)
	os.WriteFile(filepath.Join(mnt, "in.txt"), []byte("on the mount\n"), 0o644)
	code, out, errs := cliRun(t, dir, "exec", "--isolate=on", "--", "sh", "-c", "echo x > ran")
	if code == 0 || !strings.Contains(errs, "mounted inside the workspace") {
		t.Errorf("exec --isolate=on over a mount: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("exec --isolate=on ran the command")
	}
	code, out, errs = cliRun(t, dir, "exec", "--", "sh", "-c", `cat "m nt/in.txt" > seen`)
	if code != 0 || !strings.Contains(errs, "not isolated (a file system is mounted inside the workspace") {
		t.Errorf("exec over a mount: exit %d\n%s%s", code, out, errs)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "seen")); err != nil || string(got) != "on the mount\n" {
		t.Errorf("the command saw %q, %v in the mount", got, err)
	}
}

// TestExecIsolatedGitCommit: a git commit the isolated command makes
// reaches the tree's .git (its objects, index and branch), and the file it
// changed is recorded.
func TestExecIsolatedGitCommit(t *testing.T) {
	needIsolation(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git:", err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, b)
		}
		return string(b)
	}
	git("init", "-q")
	git("config", "user.email", "t@example.com")
	git("config", "user.name", "t")
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("1\n"), 0o644)
	git("add", "a.txt")
	git("commit", "-qm", "one")
	if code, out, errs := cliRun(t, dir, "exec", "--isolate=on", "--", "sh", "-c", "echo 2 > a.txt && git commit -qam two"); code != 0 {
		t.Fatalf("exec of a git commit: exit %d\n%s%s", code, out, errs)
	}
	if log := git("log", "--format=%s"); log != "two\none\n" {
		t.Errorf("git log after the isolated commit: %q", log)
	}
	if st := git("status", "--porcelain"); st != "" {
		t.Errorf("git status after the isolated commit: %q", st)
	}
	git("fsck", "--no-progress")
	recorded := false
	for _, r := range execLedger(t, dir) {
		recorded = recorded || r.Path == "a.txt" && r.Tool == "exec"
	}
	if !recorded {
		t.Error("the command's change of a.txt is not in the ledger")
	}
}
