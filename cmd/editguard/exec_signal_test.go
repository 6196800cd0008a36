//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// editguardProcess returns a command that runs this test binary as the
// editguard program (TestMain dispatches on the name it is started by).
func editguardProcess(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "editguard")
	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	return exec.Command(bin, args...)
}

// TestExecSignals runs editguard exec as a real process over a shell
// script that changes a file, traps SIGINT, SIGTERM and SIGHUP, says it is
// ready, and waits. The signal sent to exec reaches the script (its trap
// writes a marker and then lets the signal kill it), exec exits 128 plus
// the signal as a shell would, and the change the script made before the
// signal is in the ledger. It runs isolated where exec can isolate a
// command (the script says it is ready in a file outside the tree, which
// an isolated command's changes reach only when it ends), and not.
func TestExecSignals(t *testing.T) {
	for _, mode := range []string{"auto", "off"} {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
			name := strings.TrimPrefix(unixSignalName(sig), "SIG")
			t.Run(mode+"/"+name, func(t *testing.T) { testExecSignal(t, mode, sig, name) })
		}
	}
}

func testExecSignal(t *testing.T, mode string, sig syscall.Signal, name string) {
	if signal.Ignored(sig) {
		// Started under nohup, or in the background of a shell without
		// job control: the command inherits the signal ignored, as from
		// a shell, and no trap can catch it.
		t.Skipf("%v is ignored in this process, and so in the command exec runs", sig)
	}
	dir, ready := t.TempDir(), filepath.Join(t.TempDir(), "ready")
	os.WriteFile(filepath.Join(dir, "f.txt"), []byte("before\n"), 0o644)
	// Short sleeps: a shell runs its trap only once the command
	// in the foreground ends, and one long sleep that does not
	// die of the signal (seen with SIGINT under some test
	// runners) would hold the trap back for all its length.
	script := fmt.Sprintf(`trap 'echo %[1]s > got; trap - %[1]s; kill -%[1]s $$' %[1]s
echo changed > f.txt
: > "$READY"
i=0
while [ $i -lt 3000 ]; do sleep 0.1; i=$((i+1)); done
echo "no signal came" > got`, name)
	cmd := editguardProcess(t, "--root", dir, "exec", "--", "sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "READY="+ready, isolateEnv+"="+mode)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-waited
		}
	})
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		select {
		case err := <-waited:
			t.Fatalf("exec ended before the script was ready: %v\n%s", err, out.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	err := <-waited
	var ee *exec.ExitError
	if want := 128 + int(sig); !errors.As(err, &ee) || ee.ExitCode() != want {
		t.Fatalf("exec after %v: %v, want exit status %d\n%s", sig, err, want, out.String())
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "got")); string(got) != name+"\n" {
		t.Errorf("the script's trap wrote %q, want %q\n%s", got, name+"\n", out.String())
	}
	code, logOut, errs := cliRun(t, dir, "log", "--json")
	if code != 0 {
		t.Fatalf("log: exit %d\n%s", code, errs)
	}
	recorded := false
	for _, line := range logLines(t, logOut) {
		var r struct{ Path, Tool, Outcome string }
		if json.Unmarshal([]byte(line), &r) == nil && r.Path == "f.txt" && r.Tool == "exec" && r.Outcome == "ok" {
			recorded = true
		}
	}
	if !recorded {
		t.Errorf("the change made before %v is not in the ledger:\n%s\nexec said:\n%s", sig, logOut, out.String())
	}
	if !strings.Contains(out.String(), "changed f.txt;") {
		t.Errorf("exec's summary does not name f.txt:\n%s", out.String())
	}
}

// TestExecOutsideRoot: exec run from a directory outside the root refuses
// before running the command, and says why.
func TestExecOutsideRoot(t *testing.T) {
	root, elsewhere := t.TempDir(), t.TempDir()
	t.Chdir(elsewhere)
	code, out, errs := cliRun(t, root, "exec", "--", "sh", "-c", ": > ran")
	if code != exitError || !strings.Contains(errs, "is outside the workspace root") || !strings.Contains(errs, "the command was not run") {
		t.Errorf("exec outside the root: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "ran")); err == nil {
		t.Error("the command ran")
	}
	// From a directory under the root it runs.
	os.Mkdir(filepath.Join(root, "sub"), 0o755)
	t.Chdir(filepath.Join(root, "sub"))
	if code, out, errs := cliRun(t, root, "exec", "--", "sh", "-c", ": > ran"); code != 0 {
		t.Errorf("exec under the root: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(root, "sub", "ran")); err != nil {
		t.Errorf("the command did not run under the root: %v", err)
	}
}

func unixSignalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return sig.String()
}
