package ledger

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The test binary re-executes itself as a child appender when childEnv is
// set; TestMain dispatches to runChild.
const (
	childEnv     = "EDITGUARD_LEDGER_TEST_CHILD"
	childPath    = "EDITGUARD_LEDGER_TEST_PATH"
	childID      = "EDITGUARD_LEDGER_TEST_ID"
	childRecords = "EDITGUARD_LEDGER_TEST_N"
)

func runChild(mode string) int {
	path, id := os.Getenv(childPath), os.Getenv(childID)
	l, err := Open(path, nil)
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

func childCommand(mode, path, id string, extra ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		childEnv+"="+mode, childPath+"="+path, childID+"="+id)
	cmd.Env = append(cmd.Env, extra...)
	return cmd
}

func TestAppendConcurrentProcesses(t *testing.T) {
	const procs, each = 4, 500
	path := filepath.Join(t.TempDir(), ".editguard", "ledger.jsonl")
	var cmds []*exec.Cmd
	for p := range procs {
		cmd := childCommand("append", path, fmt.Sprintf("p%d", p), fmt.Sprintf("%s=%d", childRecords, each))
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
	mustVerify(t, path, procs*each)

	recs := readAll(t, path)
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

// TestKillDuringAppend kills appending processes with SIGKILL at random
// moments, one fresh child at a time on the same file. After every kill
// Open must repair any torn tail, the chain must verify, and every record a
// child reported as appended must be in the file.
func TestKillDuringAppend(t *testing.T) {
	kills := 20
	if s := os.Getenv("EDITGUARD_LEDGER_KILLS"); s != "" {
		// A longer soak: EDITGUARD_LEDGER_KILLS=500 go test -run Kill
		kills, _ = strconv.Atoi(s)
	}
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	total, torn := 0, 0
	for k := range kills {
		id := fmt.Sprintf("k%d", k)
		cmd := childCommand("loop", path, id)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		first := make(chan struct{})
		done := make(chan []uint64)
		go func() {
			var seqs []uint64
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				seq, err := strconv.ParseUint(sc.Text(), 10, 64)
				if err != nil {
					continue // a line cut by the kill
				}
				if len(seqs) == 0 {
					close(first)
				}
				seqs = append(seqs, seq)
			}
			done <- seqs
		}()
		select {
		case <-first:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("child %s reported nothing: %s", id, stderr.String())
		}
		time.Sleep(time.Duration(rand.IntN(25000)) * time.Microsecond)
		if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		reported := <-done
		if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("child %s ended with %v, not SIGKILL: %s", id, cmd.ProcessState, stderr.String())
		}

		l, err := Open(path, nil)
		if err != nil {
			t.Fatalf("kill %d: Open error: %v", k, err)
		}
		if l.Recovered() != nil {
			torn++
		}
		l.Close()
		n, err := Verify(path)
		if err != nil {
			t.Fatalf("kill %d: Verify() = %d, %v", k, n, err)
		}

		bySeq := map[uint64]string{}
		mine := 0
		for _, r := range readAll(t, path) {
			bySeq[r.Seq] = r.Session
			if r.Session == id {
				mine++
			}
		}
		for _, seq := range reported {
			if bySeq[seq] != id {
				t.Errorf("kill %d: reported record %d is missing (found session %q)", k, seq, bySeq[seq])
			}
		}
		if mine < len(reported) {
			t.Errorf("kill %d: %d records of %s in the file, fewer than the %d reported", k, mine, id, len(reported))
		}
		total = n
	}
	t.Logf("%d kills, %d torn tails repaired, %d records", kills, torn, total)
}
