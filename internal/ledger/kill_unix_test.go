//go:build unix

package ledger

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

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
	lg := newTestLedger(t)
	total, torn := 0, 0
	for k := range kills {
		id := fmt.Sprintf("k%d", k)
		cmd := childCommand("loop", lg.root, id)
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

		l, err := Open(lg.dir, testName, nil)
		if err != nil {
			t.Fatalf("kill %d: Open error: %v", k, err)
		}
		if l.Recovered() != nil {
			torn++
		}
		l.Close()
		n, err := Verify(lg.dir, testName)
		if err != nil {
			t.Fatalf("kill %d: Verify() = %d, %v", k, n, err)
		}

		bySeq := map[uint64]string{}
		mine := 0
		for _, r := range readAll(t, lg) {
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
