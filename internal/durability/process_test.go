//go:build unix

package durability_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/editguard/editguard/internal/testutil"
)

var ctx = context.Background()

// Tests in this package start copies of the test binary as separate
// processes (testutil.StartWorker): the child runs TestWorkerProcess,
// which does the job named in EDITGUARD_TEST_WORKER until it is killed.

// TestWorkerProcess is the body of a child process; it does nothing in a
// normal test run.
func TestWorkerProcess(t *testing.T) {
	job := os.Getenv(testutil.WorkerEnv)
	if job == "" {
		t.Skip("runs only as a child process of another test")
	}
	dir, arg := os.Getenv(testutil.WorkerDirEnv), os.Getenv(testutil.WorkerArgEnv)
	var err error
	switch job {
	case "bigwrite":
		err = bigWriteWorker(dir, arg) // runs until killed
	case "move":
		err = moveWorker(dir) // runs until killed
	case "apply":
		err = applyWorker(dir) // runs until killed
	default:
		err = fmt.Errorf("unknown job %q", job)
	}
	if err != nil {
		t.Fatal(err)
	}
}
