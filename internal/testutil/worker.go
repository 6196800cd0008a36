package testutil

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
)

// A test starts a copy of its test binary as a separate process with
// StartWorker: the child runs the package's TestWorkerProcess, which does
// the job named in WorkerEnv, in the workspace WorkerDirEnv names, and
// writes what it did to WorkerOutEnv.
const (
	WorkerEnv    = "EDITGUARD_TEST_WORKER"
	WorkerDirEnv = "EDITGUARD_TEST_DIR"
	WorkerOutEnv = "EDITGUARD_TEST_OUT"
	WorkerArgEnv = "EDITGUARD_TEST_ARG"
)

// StartWorker starts a child process running job in dir. Its output,
// standard and error, is the returned command's Stdout; it is killed at
// the end of the test if it has not been waited for.
func StartWorker(t *testing.T, job, dir, arg, out string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWorkerProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), WorkerEnv+"="+job, WorkerDirEnv+"="+dir, WorkerArgEnv+"="+arg, WorkerOutEnv+"="+out)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd
}
