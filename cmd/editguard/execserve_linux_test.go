package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/hookwire"
)

// execJSON is what exec --json prints.
type execJSON struct {
	ExitStatus    int                     `json:"exit_status"`
	CheckpointsBy string                  `json:"checkpoints_by"`
	Result        editguard.CommandResult `json:"result"`
}

func parseExecJSON(t *testing.T, out string) *execJSON {
	t.Helper()
	var r execJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("exec --json: %v\n%s", err, out)
	}
	return &r
}

// changeKeys lists a result's changes as op, path and contents.
func changeKeys(res *editguard.CommandResult) []string {
	var out []string
	for _, c := range res.Changes {
		out = append(out, c.Op+" "+c.Path+" "+c.SHA256Before+" "+c.SHA256After+" "+c.ChangedBy)
	}
	slices.Sort(out)
	return out
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// activeCommands lists the commands in progress in root.
func activeCommands(t *testing.T, root string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(root, editguard.StateDir, "checkpoints", "active"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// serveInProcess runs root's hook server in this process on w, until the
// test ends, and waits for its journal.
func serveInProcess(t *testing.T, root string, w *editguard.Workspace) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		var out, errb bytes.Buffer
		done <- serveHooks(ctx, &env{root: root, sessionName: defaultSession, stdin: strings.NewReader(""), stdout: &out, stderr: &errb, ws: w}, time.Hour)
	}()
	t.Cleanup(func() { cancel(); <-done })
	for deadline := time.Now().Add(20 * time.Second); hookServerJournal(root) == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the hook server's journal does not answer")
		}
	}
}

// TestExecThroughHookServer: with a hook server on the root, exec has it
// take both checkpoints, isolated or not, and the result is the one exec
// gets on a copy of the tree with no server, where it takes them itself:
// the same changes, the command's alone when isolated (a file someone
// else writes while it runs is not its change). When the server's journal
// cannot vouch (the command wrote a .gitignore), the server's checkpoint
// is a full scan, and the result is again the same.
func TestExecThroughHookServer(t *testing.T) {
	if os.Getenv(editguard.NoWatchEnv) == "1" {
		t.Skip(editguard.NoWatchEnv + "=1: no journal, no server checkpoints")
	}
	hookSocketDir(t)
	base := t.TempDir()
	served, alone := filepath.Join(base, "served"), filepath.Join(base, "alone")
	for _, root := range []string{served, alone} {
		writeFile(t, root, "a.txt", "a\n")
		writeFile(t, root, "d/b.txt", "b\n")
		writeFile(t, root, "gone.txt", "gone\n")
	}
	w, err := editguard.Open(served, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	serveInProcess(t, served, w)

	isolated := true
	t.Chdir(alone)
	if code, _, errs := cliRun(t, alone, "exec", "--isolate=on", "--", "true"); code != 0 {
		t.Log(errs)
		isolated = false // no user namespaces here: the isolated cells are left out
		t.Log("exec cannot isolate a command here: only --isolate=off is compared")
	}
	// The command waits while someone else writes other.txt in the tree.
	fifos := t.TempDir()
	started, proceed := filepath.Join(fifos, "started"), filepath.Join(fifos, "proceed")
	for _, f := range []string{started, proceed} {
		if err := syscall.Mkfifo(f, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	exec := func(root, mode, script string) *execJSON {
		t.Helper()
		t.Chdir(root)
		type ran struct {
			code      int
			out, errs string
		}
		done := make(chan ran, 1)
		go func() {
			code, out, errs := cliRun(t, root, "exec", "--json", "--isolate="+mode, "--", "sh", "-c", "echo > "+started+"; read x < "+proceed+"; "+script)
			done <- ran{code, out, errs}
		}()
		sf, err := os.Open(started)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(sf)
		sf.Close()
		writeFile(t, root, "other.txt", "someone else's "+script+"\n")
		pf, err := os.OpenFile(proceed, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		pf.WriteString("go\n")
		pf.Close()
		r := <-done
		if r.code != 0 && r.code != exitOverwrote {
			t.Fatalf("exec %s in %s: exit %d\n%s%s", script, root, r.code, r.out, r.errs)
		}
		res := parseExecJSON(t, r.out)
		// Someone else's change of other.txt made while an isolated
		// command ran is replaced in the tree while a later one runs:
		// were it that command's write, it would overwrite it (exit 5).
		if r.code == exitOverwrote {
			for _, c := range res.Result.Overwrites() {
				if c.Path != "other.txt" || !c.WriterUnknown {
					t.Fatalf("exec %s in %s: overwrote %s\n%s%s", script, root, c.Path, r.out, r.errs)
				}
			}
		}
		return res
	}
	// The server's first checkpoint is a full scan: it has none before.
	exec(served, "off", "true")
	exec(alone, "off", "true")
	modes := []string{"off"}
	if isolated {
		modes = append(modes, "on")
	}
	for i, mode := range modes {
		script := "echo " + mode + " >> a.txt; rm -f gone.txt; mkdir -p n; echo new > n/" + mode + ".txt"
		if i > 0 {
			script = "echo " + mode + " >> a.txt; echo back > gone.txt; mkdir -p n; echo new > n/" + mode + ".txt"
		}
		full0, j0 := w.CheckpointScans()
		got := exec(served, mode, script)
		full, j := w.CheckpointScans()
		want := exec(alone, mode, script)
		if got.CheckpointsBy != "hook server" || want.CheckpointsBy != "exec" {
			t.Fatalf("--isolate=%s: checkpoints by %q with the server, %q without; want hook server and exec", mode, got.CheckpointsBy, want.CheckpointsBy)
		}
		if full != full0 || j != j0+2 {
			t.Fatalf("--isolate=%s: the server took %d full scans and %d from its journal; want 0 and 2", mode, full-full0, j-j0)
		}
		g, wk := changeKeys(&got.Result), changeKeys(&want.Result)
		if !slices.Equal(g, wk) || len(g) != 4 {
			t.Fatalf("--isolate=%s: the server's checkpoints recorded\n%q\nexec's own\n%q", mode, g, wk)
		}
		// In the tree, nothing tells the command's changes from
		// other.txt's writer: each is recorded as made by a writer
		// unknown. Isolated, the command's are its own and other.txt is
		// someone else's.
		for _, r := range []*execJSON{got, want} {
			for _, c := range r.Result.Changes {
				if c.Path == "other.txt" && (c.ChangedBy == editguard.OutsideChange) != (mode == "on") {
					t.Fatalf("--isolate=%s: other.txt changed by %q", mode, c.ChangedBy)
				}
				if c.ChangedBy == "" && c.WriterUnknown != (mode == "off") {
					t.Fatalf("--isolate=%s (checkpoints by %s): %s %s recorded with writer unknown %v", mode, r.CheckpointsBy, c.Op, c.Path, c.WriterUnknown)
				}
			}
		}
	}
	// The journal cannot vouch past a changed .gitignore: a full scan.
	full0, _ := w.CheckpointScans()
	got := exec(served, "off", "echo '*.log' > .gitignore; echo z >> d/b.txt")
	full, _ := w.CheckpointScans()
	want := exec(alone, "off", "echo '*.log' > .gitignore; echo z >> d/b.txt")
	if got.CheckpointsBy != "hook server" || full != full0+1 {
		t.Fatalf("a .gitignore written: checkpoints by %q, %d full scans by the server; want hook server, 1", got.CheckpointsBy, full-full0)
	}
	if g, wk := changeKeys(&got.Result), changeKeys(&want.Result); !slices.Equal(g, wk) || len(g) != 3 {
		t.Fatalf("a .gitignore written: the server's checkpoints recorded\n%q\nexec's own\n%q", g, wk)
	}
	for _, root := range []string{served, alone} {
		if a := activeCommands(t, root); len(a) != 0 {
			t.Fatalf("%s: commands left in progress: %q", root, a)
		}
	}
}

// TestExecHookServerUnanswered: a server that takes exec's request to
// begin and answers nothing (it died, or hung, after reading it) may have
// begun the command; exec begins it itself under the same id, and records
// the command's changes.
func TestExecHookServerUnanswered(t *testing.T) {
	if os.Getenv(editguard.NoWatchEnv) == "1" {
		t.Skip(editguard.NoWatchEnv + "=1: exec asks no server")
	}
	hookSocketDir(t)
	root := t.TempDir()
	writeFile(t, root, "a.txt", "a\n")
	sock, dir, _, err := hookwire.Socket(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := hookwire.MakeDir(dir); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan *hookwire.Request, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if r, err := hookwire.ReadRequest(c); err == nil {
				got <- r
			}
			c.Close()
		}
	}()
	t.Chdir(root)
	code, out, errs := cliRun(t, root, "exec", "--json", "--isolate=off", "--", "sh", "-c", "echo b > a.txt")
	if code != 0 {
		t.Fatalf("exec: exit %d\n%s%s", code, out, errs)
	}
	r := parseExecJSON(t, out)
	if r.CheckpointsBy != "exec" || !slices.Equal(changeKeys(&r.Result), []string{"changed a.txt " + sha256Hex("a\n") + " " + sha256Hex("b\n") + " "}) {
		t.Fatalf("checkpoints by %q, changes %q", r.CheckpointsBy, changeKeys(&r.Result))
	}
	first := <-got
	if first.Build == "" || len(first.Command) == 0 {
		t.Fatalf("the server's first request is not a command request: %+v", first)
	}
	if a := activeCommands(t, root); len(a) != 0 {
		t.Fatalf("commands left in progress: %q", a)
	}
}

// TestExecHookServerProcesses runs editguard's processes: a hook server of one
// editguard program file takes the checkpoints of that program's exec,
// not those of a copy of it (another build, as far as it can tell); killed
// with SIGKILL while the command runs, it leaves exec to end the command
// itself, which records its change; and with none running, exec takes
// both checkpoints itself.
func TestExecHookServerProcesses(t *testing.T) {
	if os.Getenv(editguard.NoWatchEnv) == "1" {
		t.Skip(editguard.NoWatchEnv + "=1: exec asks no server")
	}
	// The test binary runs as editguard under that name (TestMain).
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	egBin := filepath.Join(t.TempDir(), "editguard")
	if err := os.Symlink(self, egBin); err != nil {
		t.Fatal(err)
	}
	hookSocketDir(t)
	root, fifos := t.TempDir(), t.TempDir()
	writeFile(t, root, "a.txt", "a\n")
	other := filepath.Join(t.TempDir(), "editguard")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, data, 0o755); err != nil {
		t.Fatal(err)
	}
	srv := exec.Command(egBin, "hook", "--serve", "--root", root, "--idle", "5m")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Process.Kill()
	waited := make(chan struct{})
	go func() { srv.Wait(); close(waited) }()
	for deadline := time.Now().Add(60 * time.Second); hookServerJournal(root) == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the hook server's journal does not answer")
		}
	}
	run := func(bin string, stdin io.Reader, args ...string) *execJSON {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"exec", "--json", "--"}, args...)...)
		cmd.Dir, cmd.Stdin = root, stdin
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s exec %q: %v\n%s%s", bin, args, err, out.String(), errb.String())
		}
		return parseExecJSON(t, out.String())
	}
	if r := run(egBin, nil, "sh", "-c", "echo 1 > a.txt"); r.CheckpointsBy != "hook server" || len(r.Result.Changes) != 1 {
		t.Fatalf("exec of the server's program: checkpoints by %q, %d changes", r.CheckpointsBy, len(r.Result.Changes))
	}
	if r := run(other, nil, "sh", "-c", "echo 2 > a.txt"); r.CheckpointsBy != "exec" || len(r.Result.Changes) != 1 {
		t.Fatalf("exec of another program file: checkpoints by %q, %d changes", r.CheckpointsBy, len(r.Result.Changes))
	}

	// Killed while the command runs: the command says it started (the
	// first checkpoint is taken), waits for the test, then writes.
	started, proceed := filepath.Join(fifos, "started"), filepath.Join(fifos, "proceed")
	for _, f := range []string{started, proceed} {
		if err := syscall.Mkfifo(f, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	res := make(chan *execJSON, 1)
	go func() {
		defer close(res)
		res <- run(egBin, nil, "sh", "-c", "echo > "+started+"; read x < "+proceed+"; echo 3 > a.txt")
	}()
	sf, err := os.Open(started) // until the command opens it to write
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(sf)
	sf.Close()
	srv.Process.Signal(syscall.SIGKILL)
	<-waited
	pf, err := os.OpenFile(proceed, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	pf.WriteString("go\n")
	pf.Close()
	r := <-res
	if r == nil {
		t.FailNow()
	}
	if r.CheckpointsBy != "hook server, then exec" || !slices.Equal(changeKeys(&r.Result), []string{"changed a.txt " + sha256Hex("2\n") + " " + sha256Hex("3\n") + " "}) {
		t.Fatalf("server killed mid-command: checkpoints by %q, changes %q", r.CheckpointsBy, changeKeys(&r.Result))
	}
	if r.Result.Unended {
		t.Fatal("the command's result says it never ended")
	}
	if r := run(egBin, nil, "sh", "-c", "echo 4 > a.txt"); r.CheckpointsBy != "exec" || len(r.Result.Changes) != 1 {
		t.Fatalf("no server: checkpoints by %q, %d changes", r.CheckpointsBy, len(r.Result.Changes))
	}
	if a := activeCommands(t, root); len(a) != 0 {
		t.Fatalf("commands left in progress: %q", a)
	}
	var n int
	for _, rec := range execLedger(t, root) {
		if rec.Path == "a.txt" && rec.Tool == "exec" {
			n++
		}
	}
	if n != 4 {
		t.Fatalf("the ledger has %d records of exec's changes to a.txt; want 4", n)
	}
}
