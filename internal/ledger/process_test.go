package ledger

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/editguard/editguard/internal/statedir"
)

// The test binary re-executes itself as a child appender when childEnv is
// set; TestMain dispatches to runChild.
const (
	childEnv     = "EDITGUARD_LEDGER_TEST_CHILD"
	childPath    = "EDITGUARD_LEDGER_TEST_ROOT"
	childID      = "EDITGUARD_LEDGER_TEST_ID"
	childRecords = "EDITGUARD_LEDGER_TEST_N"
)

func runChild(mode string) int {
	root, id := os.Getenv(childPath), os.Getenv(childID)
	rf, err := os.Open(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		return 1
	}
	d, err := statedir.Open(rf, "", ".editguard")
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		return 1
	}
	l, err := Open(d, testName, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		return 1
	}
	switch mode {
	case "append":
		// Append a fixed number of records, then exit.
		n, _ := strconv.Atoi(os.Getenv(childRecords))
		for i := range n {
			r := testRecord(i)
			r.Session = id
			if err := l.Append(r); err != nil {
				fmt.Fprintln(os.Stderr, "child append:", err)
				return 1
			}
		}
	case "loop":
		// Append until killed, from two goroutines so that group commit
		// batches are in flight too, and report each acknowledged seq on
		// stdout. Some records are large, so that a kill can land inside
		// the write of a line.
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				for {
					r := testRecord(0)
					r.Session = id
					size := []int{64, 4 << 10, 64 << 10}[rand.IntN(3)]
					r.Result, _ = json.Marshal(map[string]string{"diff": strings.Repeat("x", size)})
					if err := l.Append(r); err != nil {
						fmt.Fprintln(os.Stderr, "child append:", err)
						os.Exit(1)
					}
					mu.Lock()
					fmt.Fprintf(os.Stdout, "%d\n", r.Seq)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	default:
		fmt.Fprintln(os.Stderr, "unknown child mode", mode)
		return 2
	}
	if err := l.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "child close:", err)
		return 1
	}
	return 0
}

func childCommand(mode, root, id string, extra ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		childEnv+"="+mode, childPath+"="+root, childID+"="+id)
	cmd.Env = append(cmd.Env, extra...)
	return cmd
}

func TestAppendConcurrentProcesses(t *testing.T) {
	const procs, each = 4, 500
	lg := newTestLedger(t)
	var cmds []*exec.Cmd
	for p := range procs {
		cmd := childCommand("append", lg.root, fmt.Sprintf("p%d", p), fmt.Sprintf("%s=%d", childRecords, each))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for p, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("child p%d: %v", p, err)
		}
	}
	mustVerify(t, lg, procs*each)

	recs := readAll(t, lg)
	perProc := map[string]int{}
	for i, r := range recs {
		if r.Seq != uint64(i+1) {
			t.Fatalf("record %d has Seq %d", i+1, r.Seq)
		}
		perProc[r.Session]++
	}
	for p := range procs {
		if got := perProc[fmt.Sprintf("p%d", p)]; got != each {
			t.Errorf("process p%d has %d records, want %d", p, got, each)
		}
	}
}
