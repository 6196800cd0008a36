//go:build linux

package editguard_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/editguard/editguard"
)

// Hostile and odd input around a command between two checkpoints. Each test
// checks that nothing outside the workspace root changed (or was read),
// that every content a command displaced from a covered file is in history
// byte for byte, that memory stays bounded and that the result says what
// happened.

// outside is a directory tree outside the workspace root, with a file
// whose access time shows whether anything read it.
type outside struct {
	dir   string
	snap  map[string]string
	atime bool // the file system updates the access time on a read
}

func newOutside(t *testing.T) *outside {
	t.Helper()
	o := &outside{dir: t.TempDir()}
	writeFile(t, o.dir, "secret.txt", "outside secret\n")
	writeFile(t, o.dir, "dir/inner.txt", "outside inner\n")
	// An access time older than the modification time is updated by the
	// next read under relatime and strictatime alike.
	old := time.Now().Add(-48 * time.Hour)
	for _, p := range []string{"secret.txt", "dir/inner.txt", "probe"} {
		if p == "probe" {
			writeFile(t, o.dir, p, "probe\n")
		}
		if err := os.Chtimes(filepath.Join(o.dir, p), old, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	before := atimeOf(t, filepath.Join(o.dir, "probe"))
	if _, err := os.ReadFile(filepath.Join(o.dir, "probe")); err != nil {
		t.Fatal(err)
	}
	o.atime = atimeOf(t, filepath.Join(o.dir, "probe")) != before
	os.Remove(filepath.Join(o.dir, "probe"))
	o.snap = o.snapshot(t)
	return o
}

func atimeOf(t *testing.T, p string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Atim.Nano()
}

// snapshot describes every entry of the tree: type, content, times.
func (o *outside) snapshot(t *testing.T) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(o.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		desc := fmt.Sprintf("mode %o size %d mtime %d", st.Mode, st.Size, st.Mtim.Nano())
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" content %q", b)
			// The read above changed the access time; put it back.
			os.Chtimes(p, time.Unix(0, st.Atim.Nano()), time.Unix(0, st.Mtim.Nano()))
			if !d.IsDir() && o.atime {
				desc += fmt.Sprintf(" atime %d", st.Atim.Nano())
			}
		}
		rel, _ := filepath.Rel(o.dir, p)
		m[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// check fails unless the tree is as it was, access times included.
func (o *outside) check(t *testing.T) {
	t.Helper()
	now := o.snapshot(t)
	for p, d := range o.snap {
		if now[p] != d {
			t.Errorf("outside the root, %s changed or was read: %s, was %s", p, now[p], d)
		}
	}
	for p := range now {
		if _, ok := o.snap[p]; !ok {
			t.Errorf("outside the root, %s appeared", p)
		}
	}
}

// commandRecords returns the ok ledger records of command id, by path.
func commandRecords(t *testing.T, w *editguard.Workspace, id string) map[string][]*editguard.LedgerRecord {
	t.Helper()
	out := map[string][]*editguard.LedgerRecord{}
	err := w.Log(editguard.LogFilter{}, func(r *editguard.LedgerRecord) error {
		var a struct {
			ID string `json:"id"`
		}
		if r.Outcome == "ok" && json.Unmarshal(r.Args, &a) == nil && a.ID == id {
			out[r.Path] = append(out[r.Path], r)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// okRecords returns every ok ledger record, by path.
func okRecords(t *testing.T, w *editguard.Workspace) map[string][]*editguard.LedgerRecord {
	t.Helper()
	out := map[string][]*editguard.LedgerRecord{}
	w.Log(editguard.LogFilter{}, func(r *editguard.LedgerRecord) error {
		if r.Outcome == "ok" {
			out[r.Path] = append(out[r.Path], r)
		}
		return nil
	})
	return out
}

// assertInHistory fails unless some history version of p holds want
// exactly.
func assertInHistory(t *testing.T, w *editguard.Workspace, p string, want []byte) {
	t.Helper()
	vs, err := w.History(p)
	if err != nil {
		t.Fatalf("history of %s: %v", p, err)
	}
	for _, v := range vs {
		if v.Absent {
			continue
		}
		if got, err := editguard.VersionContent(w, p, v.ID); err == nil && bytes.Equal(got, want) {
			return
		}
	}
	t.Errorf("no history version of %s holds %q (%d versions)", p, cut(want), len(vs))
}

func cut(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

func sum(b string) string {
	h := sha256.Sum256([]byte(b))
	return hex.EncodeToString(h[:])
}

// changesOf returns the result's listed changes of p.
func changesOf(res *editguard.CommandResult, p string) []editguard.CommandChange {
	var out []editguard.CommandChange
	for _, c := range res.Changes {
		if c.Path == p {
			out = append(out, c)
		}
	}
	return out
}

// within runs fn and fails the test if it has not returned after d (a
// blocked open of a FIFO would hang it).
func within(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(d):
		buf := make([]byte, 1<<20)
		t.Fatalf("%s did not return within %v:\n%s", what, d, buf[:runtime.Stack(buf, true)])
	}
}

// heapPeak samples the heap while fn runs and returns the heap in use
// before it (after a collection) and the most seen during it.
func heapPeak(fn func()) (base, peak uint64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	base, peak = m.HeapAlloc, m.HeapAlloc
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				peak = max(peak, m.HeapAlloc)
			}
		}
	}()
	fn()
	close(stop)
	wg.Wait()
	runtime.ReadMemStats(&m)
	return base, max(peak, m.HeapAlloc)
}

// TestCommandHostileManyFiles: a command creates 10,000 files (100,000
// with EDITGUARD_FULL=1, about 5 minutes under -race; 5,000 with -short),
// then another deletes every tenth. Every change is recorded (ledger and
// history), the result lists a bounded number with totals of all, and the
// heap stays bounded. The deleted contents are all in history.
func TestCommandHostileManyFiles(t *testing.T) {
	n := 10_000
	switch {
	case os.Getenv("EDITGUARD_FULL") != "":
		n = 100_000
	case testing.Short():
		n = 5_000
	}
	w, dir := newWorkspace(t)
	out := newOutside(t)
	writeFile(t, dir, "keep.txt", "kept\n")
	s := w.NewSession("gen")
	content := func(i int) string { return fmt.Sprintf("generated file %d\n", i) }
	name := func(i int) string { return fmt.Sprintf("gen/d%03d/f%06d.txt", i/1000, i) }

	start := time.Now()
	c, err := s.BeginCommand(ctx, "generate", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if i%1000 == 0 {
			if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name(i))), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name(i)), []byte(content(i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	generated := time.Since(start)
	var res *editguard.CommandResult
	start = time.Now()
	base, peak := heapPeak(func() { res, err = c.End(ctx) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d files: generated in %v; End in %v, heap %d MiB before, peak %d MiB (+%d bytes a file)",
		n, generated, time.Since(start), base>>20, peak>>20, (peak-base)/uint64(n))
	if res.Totals.Created != n || res.Totals.Recorded != n || res.Totals.Changed+res.Totals.Deleted != 0 {
		t.Fatalf("totals %+v, want %d created and recorded", res.Totals, n)
	}
	if len(res.Changes) > 200 || res.Unlisted != n-len(res.Changes) {
		t.Fatalf("result lists %d changes and leaves out %d; want at most 200, the rest counted", len(res.Changes), res.Unlisted)
	}
	js, _ := json.Marshal(res)
	if len(js) > 100<<10 {
		t.Errorf("the result is %d bytes of JSON", len(js))
	}
	// About a kilobyte a file: the checkpoints' manifests, the steps.
	if grew := peak - base; grew > uint64(n)*2048+32<<20 {
		t.Errorf("End's heap grew by %d MiB for %d files", grew>>20, n)
	}
	recs := commandRecords(t, w, c.ID())
	if len(recs) != n {
		t.Fatalf("the ledger holds records of %d paths for the command, want %d", len(recs), n)
	}
	for _, i := range []int{0, n / 2, n - 1} {
		rs := recs[name(i)]
		if len(rs) != 1 || rs[0].SHA256After != sum(content(i)) || rs[0].HistoryVersion == "" {
			t.Fatalf("records of %s: %+v", name(i), rs)
		}
		if vs, err := w.History(name(i)); err != nil || len(vs) != 1 || !vs[0].Absent {
			t.Fatalf("history of %s = %+v, %v; want one version saying it did not exist", name(i), vs, err)
		}
	}

	// Every tenth file deleted: every content to history.
	c, err = s.BeginCommand(ctx, "rm", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 10 {
		if err := os.Remove(filepath.Join(dir, name(i))); err != nil {
			t.Fatal(err)
		}
	}
	start = time.Now()
	base, peak = heapPeak(func() { res, err = c.End(ctx) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d files deleted: End in %v, heap %d MiB before, peak %d MiB", n/10, time.Since(start), base>>20, peak>>20)
	if grew := peak - base; grew > uint64(n)*2048+32<<20 {
		t.Errorf("End's heap grew by %d MiB for %d files", grew>>20, n)
	}
	if res.Totals.Deleted != n/10 || res.Totals.Recorded != n/10 || res.Totals.NotInHistory != 0 || res.Totals.Created+res.Totals.Changed != 0 {
		t.Fatalf("totals %+v, want %d deleted and recorded", res.Totals, n/10)
	}
	recs = commandRecords(t, w, c.ID())
	for i := 0; i < n; i += 10 {
		if rs := recs[name(i)]; len(rs) != 1 || rs[0].SHA256Before != sum(content(i)) || rs[0].HistoryVersion == "" {
			t.Fatalf("records of %s: %+v", name(i), rs)
		}
	}
	for i := 0; i < n; i += n / 50 {
		assertInHistory(t, w, name(i), []byte(content(i)))
	}
	out.check(t)
}

// TestCommandHostileHugeSparseFiles: 5 GB sparse files, one there before
// and one the command creates, are never read (the test would take minutes
// and 5 GB of memory) and are named as not checked; a covered file the
// command grows to 5 GB is recorded as changed to an unchecked content,
// with its bytes before in history.
func TestCommandHostileHugeSparseFiles(t *testing.T) {
	w, dir := newWorkspace(t)
	out := newOutside(t)
	const huge = 5 << 30
	writeFile(t, dir, "small.txt", "small before\n")
	writeFile(t, dir, "old-huge.bin", "")
	if err := os.Truncate(filepath.Join(dir, "old-huge.bin"), huge); err != nil {
		t.Skipf("no sparse files here: %v", err)
	}
	s := w.NewSession("s")
	var res *editguard.CommandResult
	var base, peak uint64
	var alloc runtime.MemStats
	within(t, 60*time.Second, "a command around 5 GB files", func() {
		var m0 runtime.MemStats
		runtime.ReadMemStats(&m0)
		c, err := s.BeginCommand(ctx, "truncate -s 5G", nil)
		if err != nil {
			t.Error(err)
			return
		}
		writeFile(t, dir, "new-huge.bin", "")
		for _, p := range []string{"new-huge.bin", "small.txt"} {
			if err := os.Truncate(filepath.Join(dir, p), huge); err != nil {
				t.Error(err)
				return
			}
		}
		base, peak = heapPeak(func() { res, err = c.End(ctx) })
		if err != nil {
			t.Error(err)
		}
		runtime.ReadMemStats(&alloc)
		alloc.TotalAlloc -= m0.TotalAlloc
	})
	if t.Failed() {
		return
	}
	t.Logf("heap %d MiB before End, peak %d MiB; %d MiB allocated in all", base>>20, peak>>20, alloc.TotalAlloc>>20)
	if alloc.TotalAlloc > 256<<20 {
		t.Errorf("%d MiB allocated around 5 GB files", alloc.TotalAlloc>>20)
	}
	nc := strings.Join(res.NotChecked, "\n")
	for _, p := range []string{"old-huge.bin", "new-huge.bin", "small.txt"} {
		if !strings.Contains(nc, p) {
			t.Errorf("NotChecked does not name %s: %q", p, res.NotChecked)
		}
	}
	if ch := changesOf(res, "old-huge.bin"); len(ch) != 0 {
		t.Errorf("old-huge.bin, unchanged and unchecked, has changes %+v", ch)
	}
	ch := changesOf(res, "small.txt")
	if len(ch) != 1 || ch[0].Op != "changed" || ch[0].SHA256After != "" || ch[0].Note == "" || ch[0].BackupVersion == "" {
		t.Fatalf("small.txt changes %+v, want one change to an unchecked content, noted, its bytes before in history", ch)
	}
	assertInHistory(t, w, "small.txt", []byte("small before\n"))
	if ch := changesOf(res, "new-huge.bin"); len(ch) != 1 || ch[0].Op != "created" || ch[0].SHA256After != "" || ch[0].Note == "" {
		t.Errorf("new-huge.bin changes %+v, want one creation of an unchecked content, noted", ch)
	}
	recs := okRecords(t, w)
	if len(recs["old-huge.bin"]) != 0 || len(recs["small.txt"]) != 1 || len(recs["new-huge.bin"]) != 1 {
		t.Errorf("records: old-huge %d, small %d, new-huge %d; want 0, 1, 1", len(recs["old-huge.bin"]), len(recs["small.txt"]), len(recs["new-huge.bin"]))
	}
	// The next command does not read them either, and sees no change.
	within(t, 60*time.Second, "a second command", func() {
		c, err := s.BeginCommand(ctx, "true", nil)
		if err != nil {
			t.Error(err)
			return
		}
		if res, err = c.End(ctx); err != nil {
			t.Error(err)
		}
	})
	if res != nil && len(res.Changes) != 0 {
		t.Errorf("a command that did nothing changed %+v", res.Changes)
	}
	out.check(t)
}

// TestCommandHostileFIFOs: FIFOs there before and made by the command (one
// in place of a covered file, one as a .gitignore) are never opened, so
// nothing blocks; none is recorded as a file. The file a FIFO replaced is
// deleted, its bytes in history.
func TestCommandHostileFIFOs(t *testing.T) {
	w, dir := newWorkspace(t)
	out := newOutside(t)
	writeFile(t, dir, "victim.txt", "replaced by a fifo\n")
	writeFile(t, dir, "sub/plain.txt", "plain\n")
	if err := syscall.Mkfifo(filepath.Join(dir, "old.fifo"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	s := w.NewSession("s")
	var res *editguard.CommandResult
	within(t, 30*time.Second, "a command around FIFOs", func() {
		c, err := s.BeginCommand(ctx, "mkfifo", nil)
		if err != nil {
			t.Error(err)
			return
		}
		os.Remove(filepath.Join(dir, "victim.txt"))
		for _, p := range []string{"new.fifo", "victim.txt", "sub/.gitignore"} {
			if err := syscall.Mkfifo(filepath.Join(dir, p), 0o644); err != nil {
				t.Error(err)
				return
			}
		}
		if res, err = c.End(ctx); err != nil {
			t.Error(err)
		}
	})
	if t.Failed() {
		return
	}
	if len(res.Changes) != 1 || res.Changes[0].Path != "victim.txt" || res.Changes[0].Op != "deleted" ||
		!strings.Contains(res.Changes[0].Note, "special file") {
		t.Fatalf("changes %+v, want victim.txt deleted, replaced by a special file", res.Changes)
	}
	assertInHistory(t, w, "victim.txt", []byte("replaced by a fifo\n"))
	recs := okRecords(t, w)
	for _, p := range []string{"old.fifo", "new.fifo", "sub/.gitignore", "sub/plain.txt"} {
		if len(recs[p]) != 0 {
			t.Errorf("%s has records %+v", p, recs[p])
		}
	}
	out.check(t)
}

// TestCommandHostileSymlinksOut: links out of the root, to a file and to a
// directory, made by the command are not followed, read or recorded; a
// covered file and a covered directory replaced by links out are deleted,
// their bytes in history. A rewind afterwards writes nothing outside.
func TestCommandHostileSymlinksOut(t *testing.T) {
	w, dir := newWorkspace(t)
	out := newOutside(t)
	writeFile(t, dir, "cov.txt", "covered, replaced by a link\n")
	writeFile(t, dir, "sub/a.txt", "in a directory replaced by a link\n")
	writeFile(t, dir, "stays.txt", "stays\n")
	s := w.NewSession("s")
	c, err := s.BeginCommand(ctx, "ln -s", nil)
	if err != nil {
		t.Fatal(err)
	}
	secret, inner := filepath.Join(out.dir, "secret.txt"), filepath.Join(out.dir, "dir")
	runShell(t, dir, fmt.Sprintf(`ln -s %[1]s link-file && ln -s %[2]s link-dir &&
rm cov.txt && ln -s %[1]s cov.txt && rm -r sub && ln -s %[2]s sub`, secret, inner))
	res, err := c.End(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, ch := range res.Changes {
		got[ch.Path] = ch.Op + ": " + ch.Note
	}
	want := map[string]string{
		"cov.txt":   "deleted: replaced by a symbolic link",
		"sub/a.txt": "deleted: a directory above it was replaced by something else",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("changes %v, want %v", got, want)
	}
	recs := okRecords(t, w)
	for p := range recs {
		if p != "cov.txt" && p != "sub/a.txt" {
			t.Errorf("unexpected record of %s", p)
		}
	}
	out.check(t)
	// Putting the files back must not write through the links.
	if rw, err := s.Rewind(ctx, "s", nil); err != nil {
		t.Logf("rewind: %v", err)
	} else {
		t.Logf("rewind: %d rewound, %d refused", len(rw.Rewound), len(rw.Refused))
	}
	out.check(t)
	// History is looked up by the path, resolved as it is now: through a
	// link out of the root it is refused, so the links go first.
	for _, p := range []string{"cov.txt", "sub"} {
		if st, err := os.Lstat(filepath.Join(dir, p)); err == nil && st.Mode()&fs.ModeSymlink != 0 {
			os.Remove(filepath.Join(dir, p))
		}
	}
	assertInHistory(t, w, "cov.txt", []byte("covered, replaced by a link\n"))
	assertInHistory(t, w, "sub/a.txt", []byte("in a directory replaced by a link\n"))
}

// TestCommandHostileFileBecomesDirectory: rm f; mkdir f; echo x > f/g. f is
// deleted (its bytes in history), f/g created, one record each.
func TestCommandHostileFileBecomesDirectory(t *testing.T) {
	w, dir := newWorkspace(t)
	out := newOutside(t)
	writeFile(t, dir, "f", "a file, then a directory\n")
	s := w.NewSession("s")
	c, err := s.BeginCommand(ctx, "rm f; mkdir f; echo x > f/g", nil)
	if err != nil {
		t.Fatal(err)
	}
	runShell(t, dir, "rm f; mkdir f; echo x > f/g")
	res, err := c.End(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 2 || res.Changes[0].Path != "f" || res.Changes[0].Op != "deleted" || res.Changes[0].Note != "replaced by a directory" ||
		res.Changes[1].Path != "f/g" || res.Changes[1].Op != "created" || res.Changes[1].SHA256After != sum("x\n") {
		t.Fatalf("changes %+v, want f deleted (a directory in its place) and f/g created", res.Changes)
	}
	assertInHistory(t, w, "f", []byte("a file, then a directory\n"))
	recs := commandRecords(t, w, c.ID())
	if len(recs) != 2 || len(recs["f"]) != 1 || len(recs["f/g"]) != 1 {
		t.Fatalf("records %v, want one for f and one for f/g", recs)
	}
	out.check(t)
}

// TestCommandHostileModeOnly: chmod +x and touch change no content, so the
// command changed nothing: no record, no false content change.
func TestCommandHostileModeOnly(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "run.sh", "echo hi\n")
	writeFile(t, dir, "touched.txt", "same\n")
	s := w.NewSession("s")
	// Twice: once with the stat cache fresh (racy, read again), once
	// after the racy window, when the changed stat alone sends it to be read.
	for i, wait := range []time.Duration{0, 2100 * time.Millisecond} {
		time.Sleep(wait)
		c, err := s.BeginCommand(ctx, "chmod +x run.sh", nil)
		if err != nil {
			t.Fatal(err)
		}
		mode := "+x"
		if i == 1 {
			mode = "-x"
		}
		runShell(t, dir, "chmod "+mode+" run.sh && touch touched.txt")
		res, err := c.End(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Changes) != 0 || res.Totals != (editguard.CommandTotals{}) {
			t.Fatalf("round %d: a mode change alone gave changes %+v, totals %+v", i, res.Changes, res.Totals)
		}
		if recs := commandRecords(t, w, c.ID()); len(recs) != 0 {
			t.Fatalf("round %d: records %v", i, recs)
		}
	}
}

// TestCommandHostileOverlapping: two sessions' commands overlap in time;
// each changes its own file, both change a shared one. Every change a
// checkpoint saw is recorded exactly once, the ones made while both were in
// progress are marked as such by both, and history keeps every content a
// checkpoint saw.
func TestCommandHostileOverlapping(t *testing.T) {
	type order struct {
		name string
		// steps: "A<" begins A, "B<" begins B, "a" and "b" run A's and B's
		// command, "A>" and "B>" end them.
		steps []string
		// records each file must have, as "session:n" in ledger order,
		// n being how many other commands the record names.
		want map[string][]string
	}
	for _, o := range []order{
		{"both begin, then both run", []string{"A<", "B<", "a", "b", "A>", "B>"},
			map[string][]string{"a.txt": {"A:1"}, "b.txt": {"A:1"}, "shared.txt": {"A:1"}}},
		{"A runs, then B begins", []string{"A<", "a", "B<", "b", "A>", "B>"},
			map[string][]string{"a.txt": {"A:0"}, "b.txt": {"A:1"}, "shared.txt": {"A:0", "A:1"}}},
		{"A runs, B begins, B ends first", []string{"A<", "a", "B<", "b", "B>", "A>"},
			map[string][]string{"a.txt": {"A:1"}, "b.txt": {"B:1"}, "shared.txt": {"B:1", "A:1"}}},
	} {
		t.Run(o.name, func(t *testing.T) {
			w, dir := newWorkspace(t)
			writeFile(t, dir, "a.txt", "a0\n")
			writeFile(t, dir, "b.txt", "b0\n")
			writeFile(t, dir, "shared.txt", "s0\n")
			seen := map[string][]string{"a.txt": {"a0\n"}, "b.txt": {"b0\n"}, "shared.txt": {"s0\n"}}
			sa, sb := w.NewSession("A"), w.NewSession("B")
			cmds := map[string]*editguard.Command{}
			results := map[string]*editguard.CommandResult{}
			for _, st := range o.steps {
				var err error
				switch st {
				case "A<":
					cmds["A"], err = sa.BeginCommand(ctx, "A's script", nil)
				case "B<":
					cmds["B"], err = sb.BeginCommand(ctx, "B's script", nil)
				case "a":
					runShell(t, dir, "echo a1 > a.txt; echo sA > shared.txt")
				case "b":
					runShell(t, dir, "echo b1 > b.txt; echo sB > shared.txt")
				case "A>":
					results["A"], err = cmds["A"].End(ctx)
				case "B>":
					results["B"], err = cmds["B"].End(ctx)
				}
				if err != nil {
					t.Fatalf("%s: %v", st, err)
				}
				if st == "A<" || st == "B<" {
					// What the checkpoint saw.
					for p := range seen {
						if c := readFile(t, dir, p); c != seen[p][len(seen[p])-1] {
							seen[p] = append(seen[p], c)
						}
					}
				}
			}
			got := map[string][]string{}
			for p, rs := range okRecords(t, w) {
				for _, r := range rs {
					var a struct {
						Concurrent []string `json:"concurrent_with"`
					}
					json.Unmarshal(r.Args, &a)
					got[p] = append(got[p], fmt.Sprintf("%s:%d", r.Session, len(a.Concurrent)))
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(o.want) {
				t.Errorf("records %v, want %v", got, o.want)
			}
			// Both results account for every change in their time, and
			// say which were made while the other was in progress.
			for who, res := range results {
				other := map[string]string{"A": "B", "B": "A"}[who]
				for _, ch := range res.Changes {
					if len(ch.ConcurrentWith) > 0 && !strings.HasPrefix(ch.ConcurrentWith[0], other+" exec") {
						t.Errorf("%s's change %+v names %v as concurrent", who, ch, ch.ConcurrentWith)
					}
					if ch.ChangedBy != "" && len(ch.ConcurrentWith) == 0 {
						t.Errorf("%s's change %+v, recorded by the other command, is not marked concurrent", who, ch)
					}
				}
				if res.Totals.Recorded+res.Totals.ChangedBy != len(res.Changes) {
					t.Errorf("%s: totals %+v for %d changes", who, res.Totals, len(res.Changes))
				}
			}
			for p, cs := range seen {
				for _, c := range cs[:len(cs)] {
					if c != readFile(t, dir, p) {
						assertInHistory(t, w, p, []byte(c))
					}
				}
			}
			if _, err := w.VerifyLedger(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Crash recovery: a command whose process is killed between its two
// checkpoints is ended by the next BeginCommand, as unended.

const (
	crashEnv = "EDITGUARD_TEST_CRASH_COMMAND"
	crashDir = "EDITGUARD_TEST_CRASH_DIR"
)

// TestCommandCrashWorker is the child process of TestCommandHostileKilled:
// it begins a command, changes files as the command would, says so, and
// waits to be killed.
func TestCommandCrashWorker(t *testing.T) {
	ready := os.Getenv(crashEnv)
	if ready == "" {
		t.Skip("runs only as a child process of TestCommandHostileKilled")
	}
	dir := os.Getenv(crashDir)
	w, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := w.NewSession("crashed").BeginCommand(ctx, "the killed command", nil)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "m.txt"), []byte("m changed by the killed command\n"), 0o644)
	os.Remove(filepath.Join(dir, "d.txt"))
	os.WriteFile(filepath.Join(dir, "n.txt"), []byte("n created by the killed command\n"), 0o644)
	if err := os.WriteFile(ready, []byte(c.ID()), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Minute)
	t.Fatal("not killed")
}

func TestCommandHostileKilled(t *testing.T) {
	w, dir := newWorkspace(t)
	out := newOutside(t)
	writeFile(t, dir, "m.txt", "m before\n")
	writeFile(t, dir, "d.txt", "d before\n")
	writeFile(t, dir, "u.txt", "untouched\n")
	ready := filepath.Join(t.TempDir(), "ready")
	child := exec.Command(os.Args[0], "-test.run=^TestCommandCrashWorker$", "-test.count=1")
	child.Env = append(os.Environ(), crashEnv+"="+ready, crashDir+"="+dir)
	var stderr bytes.Buffer
	child.Stdout, child.Stderr = &stderr, &stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if child.ProcessState == nil {
			child.Process.Kill()
			child.Wait()
		}
	})
	var id []byte
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(10 * time.Millisecond) {
		var err error
		if id, err = os.ReadFile(ready); err == nil && len(id) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child never began its command:\n%s", stderr.String())
		}
	}
	child.Process.Signal(syscall.SIGKILL)
	child.Wait()
	if _, err := os.Stat(filepath.Join(dir, ".editguard/checkpoints/active", string(id)+".json")); err != nil {
		t.Fatalf("the killed command's checkpoint: %v", err)
	}

	// A new handle and session; its command ends the killed one first.
	w.Close()
	w2, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	c, err := w2.NewSession("next").BeginCommand(ctx, "true", nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := c.Recovered()
	if len(rec) != 1 || rec[0].ID != string(id) || !rec[0].Unended || rec[0].Session != "crashed" || rec[0].Totals.Recorded != 3 {
		t.Fatalf("recovered %+v, want the killed command, unended, with 3 changes", rec)
	}
	recs := okRecords(t, w2)
	for _, p := range []string{"m.txt", "d.txt", "n.txt"} {
		if len(recs[p]) != 1 || recs[p][0].Session != "crashed" || recs[p][0].Strategy != "command_unended" {
			t.Errorf("records of %s: %+v, want one, unended, of the crashed session", p, recs[p])
		}
	}
	if len(recs["u.txt"]) != 0 {
		t.Errorf("untouched u.txt has records")
	}
	assertInHistory(t, w2, "m.txt", []byte("m before\n"))
	assertInHistory(t, w2, "d.txt", []byte("d before\n"))
	ents, _ := os.ReadDir(filepath.Join(dir, ".editguard/checkpoints/active"))
	if len(ents) != 1 || ents[0].Name() != c.ID()+".json" {
		t.Errorf("active checkpoints %v, want the new command's alone", ents)
	}
	res, err := c.End(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 0 {
		t.Errorf("the next command recorded %+v again", res.Changes)
	}
	// The crashed session's changes rewind like any other.
	rw, err := w2.NewSession("person").Rewind(ctx, "crashed", nil)
	if err != nil || len(rw.Refused) != 0 {
		t.Fatalf("rewind: %+v, %v", rw, err)
	}
	for p, want := range map[string]string{"m.txt": "m before\n", "d.txt": "d before\n"} {
		if got := readFile(t, dir, p); got != want {
			t.Errorf("%s after rewind = %q", p, got)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "n.txt")); !os.IsNotExist(err) {
		t.Errorf("n.txt after rewind: %v", err)
	}
	out.check(t)
}

// TestCommandHostileAgeBound: a command begun with an ID (its end expected
// from another process) is not ended while its MaxAge runs, whatever
// process began it, and is ended as unended once it has passed.
func TestCommandHostileAgeBound(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "f.txt", "before\n")
	hook := w.NewSession("hook")
	if _, err := hook.BeginCommand(ctx, "long", &editguard.CommandOptions{ID: "h-long", MaxAge: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := hook.BeginCommand(ctx, "short", &editguard.CommandOptions{ID: "h-short", MaxAge: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "f.txt", "after\n")
	time.Sleep(100 * time.Millisecond)
	c, err := w.NewSession("other").BeginCommand(ctx, "true", nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := c.Recovered()
	if len(rec) != 1 || rec[0].ID != "h-short" || !rec[0].Unended {
		t.Fatalf("recovered %+v, want h-short alone", rec)
	}
	if len(rec[0].Changes) != 1 || rec[0].Changes[0].ConcurrentWith == nil {
		t.Errorf("h-short's change %+v, want f.txt, concurrent with h-long", rec[0].Changes)
	}
	// h-long's after-hook comes, in a new handle as from another process.
	if _, err := c.End(ctx); err != nil {
		t.Fatal(err)
	}
	long, err := hook.ResumeCommand("h-long")
	if err != nil {
		t.Fatal(err)
	}
	res, err := long.End(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 1 || !strings.Contains(res.Changes[0].ChangedBy, "hook exec") {
		t.Errorf("h-long's changes %+v, want f.txt named as recorded by h-short", res.Changes)
	}
	if n := len(okRecords(t, w)["f.txt"]); n != 1 {
		t.Errorf("f.txt has %d records, want 1", n)
	}
	assertInHistory(t, w, "f.txt", []byte("before\n"))
}

// TestCommandHostileLongWithToolWrite: while a command runs (a second and a
// half), another session reads and writes, through editguard, a file the
// command wrote and one it does not touch. Each change is recorded once:
// the command's own, then the tool's (named, not recorded again); history
// keeps every content displaced.
func TestCommandHostileLongWithToolWrite(t *testing.T) {
	w, dir := newWorkspace(t)
	out := newOutside(t)
	writeFile(t, dir, "shared.txt", "s0\n")
	writeFile(t, dir, "theirs.txt", "t0\n")
	writeFile(t, dir, "mine.txt", "m0\n")
	a, b := w.NewSession("A"), w.NewSession("B")
	c, err := a.BeginCommand(ctx, "long", &editguard.CommandOptions{Tool: "Bash"})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "echo A > shared.txt; sleep 1.5; echo m1 > mine.txt")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); readFile(t, dir, "shared.txt") != "A\n"; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the command never wrote shared.txt")
		}
	}
	for _, p := range []string{"shared.txt", "theirs.txt"} {
		if _, err := b.Read(ctx, p, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Write(ctx, p, "B\n", nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	res, err := c.End(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ch := range res.Changes {
		by := "recorded"
		if ch.ChangedBy != "" {
			by = "by " + strings.Fields(ch.ChangedBy)[0] + " " + strings.Fields(ch.ChangedBy)[1]
		}
		got = append(got, fmt.Sprintf("%s %s %s", ch.Path, ch.Op, by))
		if len(ch.ConcurrentWith) > 0 || ch.NotInHistory || ch.Overwrote {
			t.Errorf("change %+v: no other command ran, nothing was overwritten", ch)
		}
	}
	want := []string{"mine.txt changed recorded", "shared.txt changed recorded", "shared.txt changed by B write_file", "theirs.txt changed by B write_file"}
	if !slices.Equal(got, want) {
		t.Fatalf("changes %q, want %q", got, want)
	}
	recs := okRecords(t, w)
	if len(recs["shared.txt"]) != 2 || len(recs["theirs.txt"]) != 1 || len(recs["mine.txt"]) != 1 {
		t.Errorf("records: shared %d, theirs %d, mine %d; want 2, 1, 1", len(recs["shared.txt"]), len(recs["theirs.txt"]), len(recs["mine.txt"]))
	}
	assertInHistory(t, w, "shared.txt", []byte("s0\n"))
	assertInHistory(t, w, "shared.txt", []byte("A\n"))
	assertInHistory(t, w, "theirs.txt", []byte("t0\n"))
	assertInHistory(t, w, "mine.txt", []byte("m0\n"))
	out.check(t)
}

// TestCommandHostileOverwritesUnseenToolWrite: another session writes a
// file through editguard while a command runs, and the command then
// overwrites it before it ends. No checkpoint saw that write's content, so
// history cannot have it: the result says so, and the overwrite.
func TestCommandHostileOverwritesUnseenToolWrite(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "f.txt", "f0\n")
	a, b := w.NewSession("A"), w.NewSession("B")
	c, err := a.BeginCommand(ctx, "late overwrite", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Read(ctx, "f.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Write(ctx, "f.txt", "B's work\n", nil); err != nil {
		t.Fatal(err)
	}
	runShell(t, dir, "echo A > f.txt")
	res, err := c.End(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 2 || res.Changes[0].ChangedBy == "" || !res.Changes[1].NotInHistory || !res.Changes[1].Overwrote ||
		res.Changes[1].SHA256Before != sum("B's work\n") || res.Totals.NotInHistory != 1 || len(res.Warnings) == 0 {
		t.Fatalf("result %+v: want B's change named, then the command's overwrite of it, not in history, said", res)
	}
	assertInHistory(t, w, "f.txt", []byte("f0\n"))
}

// TestCommandHostileTamperedCheckpoint: the command runs as the same user
// and can reach editguard's own state. One that empties the checkpoint
// store, or corrupts an object in it, makes End say that history lacks the
// content, never store wrong bytes; one that puts a link out of the root in
// place of the store's directory makes End refuse, writing nothing outside.
func TestCommandHostileTamperedCheckpoint(t *testing.T) {
	t.Run("objects removed or corrupted", func(t *testing.T) {
		w, dir := newWorkspace(t)
		out := newOutside(t)
		writeFile(t, dir, "f.txt", "f before\n")
		writeFile(t, dir, "g.txt", "g before\n")
		s := w.NewSession("s")
		c, err := s.BeginCommand(ctx, "tamper", nil)
		if err != nil {
			t.Fatal(err)
		}
		objs := filepath.Join(dir, ".editguard/checkpoints/objects")
		os.Remove(filepath.Join(objs, sum("f before\n")))
		if err := os.WriteFile(filepath.Join(objs, sum("g before\n")), []byte("forged\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		runShell(t, dir, "echo f after > f.txt; echo g after > g.txt")
		res, err := c.End(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Changes) != 2 || !res.Changes[0].NotInHistory || !res.Changes[1].NotInHistory || res.Totals.NotInHistory != 2 || len(res.Warnings) != 2 {
			t.Fatalf("result %+v, want both changes said not to be in history", res)
		}
		for _, p := range []string{"f.txt", "g.txt"} {
			vs, _ := w.History(p)
			for _, v := range vs {
				if b, _ := editguard.VersionContent(w, p, v.ID); string(b) == "forged\n" {
					t.Errorf("history of %s holds the forged bytes", p)
				}
			}
		}
		out.check(t)
	})
	t.Run("object replaced by a 5 GB sparse file", func(t *testing.T) {
		w, dir := newWorkspace(t)
		writeFile(t, dir, "f.txt", "f before\n")
		s := w.NewSession("s")
		c, err := s.BeginCommand(ctx, "tamper", nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(filepath.Join(dir, ".editguard/checkpoints/objects", sum("f before\n")), 5<<30); err != nil {
			t.Skipf("no sparse files here: %v", err)
		}
		runShell(t, dir, "echo f after > f.txt")
		var res *editguard.CommandResult
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		within(t, 60*time.Second, "End after a huge object", func() { res, err = c.End(ctx) })
		runtime.ReadMemStats(&m1)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Changes) != 1 || !res.Changes[0].NotInHistory || m1.TotalAlloc-m0.TotalAlloc > 64<<20 {
			t.Fatalf("result %+v, %d MiB allocated: want the change said not to be in history, no huge read", res, (m1.TotalAlloc-m0.TotalAlloc)>>20)
		}
	})
	t.Run("active record or manifest not editguard's", func(t *testing.T) {
		// A repository can carry a copy of the user's own state, stamp
		// and all: a record it changed is not acted on, by End or by the
		// next BeginCommand, and stays for a person to remove.
		for _, tamper := range []string{"record", "manifest", "unsealed", "before"} {
			w, dir := newWorkspace(t)
			writeFile(t, dir, "f.txt", "f before\n")
			// Already past its age when it begins, so that the next
			// BeginCommand ends it, with no change to its record.
			c, err := w.NewSession("s").BeginCommand(ctx, "tamper", &editguard.CommandOptions{MaxAge: time.Nanosecond})
			if err != nil {
				t.Fatal(err)
			}
			rec := filepath.Join(dir, ".editguard/checkpoints/active", c.ID()+".json")
			var act map[string]any
			b, err := os.ReadFile(rec)
			if err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.UseNumber() // the record's numbers as written
			if err := dec.Decode(&act); err != nil {
				t.Fatalf("active record: %v", err)
			}
			switch tamper {
			case "record":
				act["session"] = "forged"
			case "unsealed": // as an earlier version wrote it
				delete(act, "seal")
				delete(act, "manifest_sha256")
			case "before": // a checkpoint of its own, which the seal does not cover
				act["before"] = map[string]any{"start_ns": act["start_ns"], "files": map[string]any{}}
			case "manifest":
				// Another manifest, well formed, of the same start: one
				// that lists no file, so that f.txt would read as created.
				m := filepath.Join(dir, ".editguard/checkpoints/manifests", act["manifest"].(string))
				old, err := os.ReadFile(m)
				if err != nil {
					t.Fatal(err)
				}
				body := append(append([]byte(nil), old[:16]...), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) // magic and start, no files, no names
				body = binary.LittleEndian.AppendUint32(body, crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
				if err := os.WriteFile(m, body, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tamper != "manifest" {
				b, _ := json.Marshal(act)
				if err := os.WriteFile(rec, b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			runShell(t, dir, "echo f after > f.txt")
			if _, err := w.NewSession("s").ResumeCommand(c.ID()); errorCode(err) != editguard.CodeUnsafeState {
				t.Errorf("%s: ResumeCommand = %v, want UNSAFE_STATE", tamper, err)
			}
			next, err := w.NewSession("t").BeginCommand(ctx, "next", nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(next.Recovered()) != 0 {
				t.Errorf("%s: the next BeginCommand ended the record: %+v", tamper, next.Recovered()[0])
			}
			if _, err := os.Stat(rec); err != nil {
				t.Errorf("%s: the record is gone: %v", tamper, err)
			}
			n := 0
			w.Log(editguard.LogFilter{Path: "f.txt"}, func(*editguard.LedgerRecord) error { n++; return nil })
			if n != 0 {
				t.Errorf("%s: %d ledger records of f.txt, want none", tamper, n)
			}
		}
	})
	t.Run("store replaced by a link out", func(t *testing.T) {
		w, dir := newWorkspace(t)
		out := newOutside(t)
		writeFile(t, dir, "f.txt", "f before\n")
		c, err := w.NewSession("s").BeginCommand(ctx, "tamper", nil)
		if err != nil {
			t.Fatal(err)
		}
		active := filepath.Join(dir, ".editguard/checkpoints/active")
		if err := os.Rename(active, filepath.Join(dir, "moved-active")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(out.dir, "dir"), active); err != nil {
			t.Fatal(err)
		}
		runShell(t, dir, "echo f after > f.txt")
		if _, err := c.End(ctx); err == nil {
			t.Fatal("End through a link out of the root succeeded")
		} else {
			t.Logf("End: %v", err)
		}
		out.check(t)
	})
}

// TestCommandHostileIgnoreRulesChange: a command that rewrites .gitignore
// uncovers ignored files and covers others. A file ignored before and left
// as it was is not reported as created; one the command changed is, noted;
// a covered file now ignored is still there, not deleted: changed to a
// content not checked, its bytes before in history.
func TestCommandHostileIgnoreRulesChange(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, ".gitignore", "*.env\n")
	writeFile(t, dir, "kept.env", "ignored, untouched\n")
	writeFile(t, dir, "edited.env", "ignored, then edited\n")
	writeFile(t, dir, "a.txt", "covered, then ignored\n")
	// Older than the racy window: the files were there before the command.
	time.Sleep(2100 * time.Millisecond)
	s := w.NewSession("s")
	c, err := s.BeginCommand(ctx, "rewrite .gitignore", nil)
	if err != nil {
		t.Fatal(err)
	}
	runShell(t, dir, "echo a.txt > .gitignore; echo edited > edited.env")
	res, err := c.End(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, ch := range res.Changes {
		got[ch.Path] = ch.Op
		if ch.Path == "edited.env" && !strings.Contains(ch.Note, "ignore rules changed") {
			t.Errorf("edited.env: %+v, want a note that it may have been there, ignored", ch)
		}
		if ch.Path == "a.txt" && (ch.SHA256After != "" || !strings.Contains(ch.Note, "no longer covered")) {
			t.Errorf("a.txt: %+v, want a change to a content not checked", ch)
		}
	}
	want := map[string]string{".gitignore": "changed", "edited.env": "created", "a.txt": "changed"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("changes %v, want %v", got, want)
	}
	assertInHistory(t, w, ".gitignore", []byte("*.env\n"))
	assertInHistory(t, w, "a.txt", []byte("covered, then ignored\n"))
	if got := readFile(t, dir, "a.txt"); got != "covered, then ignored\n" {
		t.Errorf("a.txt = %q", got)
	}
}

// TestCommandOwnedByAnother: a command begun with an ID on behalf of
// another process (Owner, as a hook server begins an exec's) ends with
// that process: while it runs, a later BeginCommand leaves the command in
// progress; once it is gone, the next one ends it as unended and records
// its change. Without Owner, the same ID is bound only by MaxAge.
func TestCommandOwnedByAnother(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "f.txt", "before\n")
	owner := exec.Command("sleep", "3600")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if owner.ProcessState == nil {
			owner.Process.Kill()
			owner.Wait()
		}
	})
	s := w.NewSession("owned")
	if _, err := s.BeginCommand(ctx, "for another", &editguard.CommandOptions{ID: "x-owned", Owner: owner.Process.Pid}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.BeginCommand(ctx, "by id", &editguard.CommandOptions{ID: "x-free"}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "f.txt", "after\n")
	c, err := w.NewSession("other").BeginCommand(ctx, "true", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rec := c.Recovered(); len(rec) != 0 {
		t.Fatalf("recovered %+v while the owner runs", rec)
	}
	if _, err := c.End(ctx); err != nil {
		t.Fatal(err)
	}
	owner.Process.Kill()
	owner.Wait()
	c, err = w.NewSession("other").BeginCommand(ctx, "true", nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := c.Recovered()
	if len(rec) != 1 || rec[0].ID != "x-owned" || !rec[0].Unended || rec[0].Totals.Recorded != 1 {
		t.Fatalf("recovered %+v, want x-owned alone, unended, with f.txt's change", rec)
	}
	if _, err := c.End(ctx); err != nil {
		t.Fatal(err)
	}
}
