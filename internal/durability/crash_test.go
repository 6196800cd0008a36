//go:build unix

package durability_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/testutil"
)

// bigVersion returns version v of a large file: a header naming the version
// and then lines that name it too, so that any mix of two versions, a
// truncation or a zero-filled tail is recognisable.
func bigVersion(v, size int) []byte {
	var b bytes.Buffer
	b.Grow(size)
	fmt.Fprintf(&b, "version %d\n", v)
	line := fmt.Sprintf("v%08d %s\n", v, strings.Repeat(string(rune('a'+v%26)), 50))
	for b.Len()+len(line) <= size {
		b.WriteString(line)
	}
	for b.Len() < size-1 {
		b.WriteByte('.')
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// checkWholeVersion reports which version data is, or an error if it is not
// exactly one.
func checkWholeVersion(data []byte, size int) (int, error) {
	header, _, ok := bytes.Cut(data, []byte("\n"))
	if !ok {
		return 0, fmt.Errorf("no header line in %d bytes", len(data))
	}
	v, err := strconv.Atoi(strings.TrimPrefix(string(header), "version "))
	if err != nil {
		return 0, fmt.Errorf("bad header %q", header)
	}
	if !bytes.Equal(data, bigVersion(v, size)) {
		return v, fmt.Errorf("content is not exactly version %d (%d bytes)", v, len(data))
	}
	return v, nil
}

// headerVersion reads the version named on the first line of the file.
func headerVersion(p string) (int, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 32)
	n, _ := f.Read(buf)
	header, _, _ := bytes.Cut(buf[:n], []byte("\n"))
	return strconv.Atoi(strings.TrimPrefix(string(header), "version "))
}

// waitFor polls cond until it holds, for at most a minute.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for a worker")
		}
	}
}

// bigWriteWorker writes ever newer versions of big.txt through a session
// until it is killed. arg is "FIRST,SIZE".
func bigWriteWorker(dir, arg string) error {
	f := strings.Split(arg, ",")
	first, _ := strconv.Atoi(f[0])
	size, _ := strconv.Atoi(f[1])
	w, err := editguard.Open(dir, &editguard.Options{KeepVersions: 2})
	if err != nil {
		return err
	}
	s := w.NewSession("big")
	if _, err := s.Read(ctx, "big.txt", nil); err != nil {
		return err
	}
	// Tell the parent that writes begin now, so its kills land on them and
	// not on the process's start-up.
	if err := os.WriteFile(os.Getenv(testutil.WorkerOutEnv)+".ready", nil, 0o644); err != nil {
		return err
	}
	// Every line of a new version differs from the old one; the placeholder
	// check has nothing to find in this content and is not what is tested.
	opts := &editguard.WriteOptions{AllowPlaceholders: true}
	for v := first; ; v++ {
		if _, err := s.Write(ctx, "big.txt", string(bigVersion(v, size)), opts); err != nil {
			return err
		}
	}
}

// TestKill9DuringWrite kills a process writing large files with SIGKILL at
// random moments. After every kill the file must be exactly one whole
// version, and a later write must clean up the temporary file a killed
// writer may leave.
func TestKill9DuringWrite(t *testing.T) {
	const size = 4 << 20
	kills := 50
	if testing.Short() {
		kills = 20
	}
	w, dir := testutil.NewWorkspace(t)
	p := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(p, bigVersion(0, size), 0o644); err != nil {
		t.Fatal(err)
	}
	w.Close()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	deadline := time.Now().Add(20 * time.Second)
	seen := map[int]bool{}
	next, tempsSeen, linkedSeen, done := 1, 0, 0, 0
	// Calibrate: how long one write takes here (the race detector makes it
	// several times slower), so that kills spread over whole writes.
	start := func(first int) *exec.Cmd {
		out := filepath.Join(t.TempDir(), "out")
		cmd := testutil.StartWorker(t, "bigwrite", dir, fmt.Sprintf("%d,%d", first, size), out)
		waitFor(t, func() bool { _, err := os.Stat(out + ".ready"); return err == nil })
		return cmd
	}
	cmd := start(next)
	t0 := time.Now()
	waitFor(t, func() bool { v, _ := headerVersion(p); return v == next })
	perWrite := time.Since(t0)
	syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	next += 1000
	t.Logf("one %d MiB write takes about %v", size>>20, perWrite)
	// A kill at a random moment after the worker is ready may land in its
	// Open (recovering the last one's intent) or in any write; every
	// other kill waits for the worker's first write to land, so that it
	// hits a later one, however slow a busy machine makes the writes.
	for i := 0; i < kills && (time.Now().Before(deadline) || i < 4); i++ {
		done++
		cmd := start(next)
		if i%2 == 1 {
			waitFor(t, func() bool { v, _ := headerVersion(p); return v >= next })
		}
		time.Sleep(time.Duration(rng.Int64N(int64(3 * perWrite))))
		if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("worker ended before the kill: %v\n%s", err, cmd.Stdout)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("after kill %d: %v", i, err)
		}
		v, err := checkWholeVersion(data, size)
		if err != nil {
			t.Fatalf("after kill %d: %v", i, err)
		}
		seen[v] = true
		// A version a killed worker put in place is in the ledger: its
		// intent was written before the swap.
		if v != 0 && !ledgerNames(t, dir, testutil.SHA256Hex(data)) {
			t.Fatalf("after kill %d: big.txt holds version %d, which no ledger record names", i, v)
		}
		if m, _ := filepath.Glob(filepath.Join(dir, ".big.txt.*.egtmp")); len(m) > 0 {
			tempsSeen++
		}
		if len(testutil.SharedObjects(dir)) > 0 {
			linkedSeen++ // killed between the link into history and the swap
		}
		next += 1000 // versions of each worker are distinct
	}
	if len(seen) < 3 {
		t.Errorf("only versions %v were ever seen: the kills did not hit running writes", seen)
	}
	t.Logf("%d kills; %d distinct whole versions seen after them; a temporary file was left %d times, a history object linked to the file %d times", done, len(seen), tempsSeen, linkedSeen)

	w, err := editguard.Open(dir, &editguard.Options{KeepVersions: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// Every killed worker's intent has its outcome now: the next worker's
	// Open, or this one, appended it.
	outcomes := map[string]int{}
	for _, r := range testutil.LedgerRecords(t, w) {
		outcomes[r.Outcome+"/"+r.Strategy+r.ErrorReason]++
		if r.Outcome == "pending" {
			t.Errorf("ledger record %d: an intent without an outcome after Open", r.Seq)
		}
	}
	t.Logf("ledger outcomes: %v", outcomes)
	s := w.NewSession("after")
	if _, err := s.Read(ctx, "big.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, "big.txt", "small\n", nil); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ReadFile(t, dir, "big.txt"); got != "small\n" {
		t.Errorf("big.txt = %q, want %q", got, "small\n")
	}
	testutil.AssertNoTemp(t, dir)
	// Every object a killed worker linked into history was detached by
	// the next Open, and every version left loads.
	for _, e := range testutil.SharedObjects(dir) {
		t.Errorf("history object %s", e)
	}
	testutil.CheckHistoryRestorable(t, dir, "big.txt")
}

// ledgerNames reports whether a line of the workspace's ledger names sum as
// what a change leaves, read from the file as it is.
func ledgerNames(t *testing.T, dir, sum string) bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, editguard.StateDir, "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Contains(data, []byte(`"sha256_after":"`+sum+`"`))
}
