//go:build unix

package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/filelock"
	"github.com/editguard/editguard/internal/groupcommit"
	"github.com/editguard/editguard/internal/history"
	"github.com/editguard/editguard/internal/ledger"
	"github.com/editguard/editguard/internal/statedir"
)

// testEngine opens an Engine over a new root directory, with the given
// file size limit and lock timeout, closed when the test ends. It returns
// the root's path.
func testEngine(t *testing.T, key string, maxSize int64, lockTimeout time.Duration) (*Engine, string) {
	t.Helper()
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	rootDir, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	state, err := statedir.Open(rootDir, "", ".editguard")
	if err != nil {
		t.Fatal(err)
	}
	histDir, err := state.Sub("history", true)
	if err != nil {
		t.Fatal(err)
	}
	hist, err := history.Open(histDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	led, err := ledger.Open(state, "ledger.jsonl", nil)
	if err != nil {
		t.Fatal(err)
	}
	var bg sync.WaitGroup
	e, err := Open(Config{Root: root, RootDir: rootDir, State: state, HistDir: histDir, Hist: hist, Led: led, Key: []byte("workspace " + key),
		TempKey: []byte(key), MaxFileSize: maxSize, LockTimeout: lockTimeout, Background: &bg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		bg.Wait()
		e.Close()
		led.Close()
		hist.Close()
		histDir.Close()
		state.Close()
		rootDir.Close()
		root.Close()
	})
	return e, dir
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func openTarget(t *testing.T, e *Engine, p string) *Target {
	t.Helper()
	tg, err := e.OpenTarget(p, p, p)
	if err != nil {
		t.Fatalf("OpenTarget(%s) = %v", p, err)
	}
	t.Cleanup(tg.Close)
	return tg
}

// The temporary name of a target is fixed per key and name, hidden, and
// never longer than a name may be; another key gives another name.
func TestTempName(t *testing.T) {
	e, _ := testEngine(t, "key one", 1<<20, time.Second)
	other, _ := testEngine(t, "key two", 1<<20, time.Second)
	a := e.TempName("a.txt")
	if a != e.TempName("a.txt") {
		t.Errorf("TempName is not stable: %q, %q", a, e.TempName("a.txt"))
	}
	if !strings.HasPrefix(a, ".a.txt.") || !strings.HasSuffix(a, ".egtmp") {
		t.Errorf("TempName(a.txt) = %q, want .a.txt.<tag>.egtmp", a)
	}
	if b := other.TempName("a.txt"); b == a {
		t.Errorf("two keys give the same temporary name %q", a)
	}
	if long := e.TempName(strings.Repeat("x", 255)); len(long) > 255 {
		t.Errorf("TempName of a 255-byte name is %d bytes", len(long))
	}
}

// A file at the temporary name under the file's lock is a dead writer's:
// its bytes go to history once, and it is removed. An entry that is not a
// regular file is not ours: it stays, and no name is given.
func TestSweepTemp(t *testing.T) {
	e, dir := testEngine(t, "k", 1<<20, time.Second)
	write(t, filepath.Join(dir, "a.txt"), "current\n")
	tg := openTarget(t, e, "a.txt")
	leftover := filepath.Join(dir, e.TempName("a.txt"))
	for round := range 2 {
		write(t, leftover, "half a write\n")
		name, err := e.sweepTemp(tg, "s")
		if err != nil || name != e.TempName("a.txt") {
			t.Fatalf("round %d: SweepTemp = %q, %v", round, name, err)
		}
		if _, err := os.Lstat(leftover); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("round %d: the leftover is still there (%v)", round, err)
		}
		vs, err := e.cfg.Hist.List("a.txt")
		if err != nil {
			t.Fatal(err)
		}
		if len(vs) != 1 || vs[0].SHA256 != sum([]byte("half a write\n")) || vs[0].Op != opCrashedWrite {
			t.Fatalf("round %d: history = %+v, want the leftover once, op %s", round, vs, opCrashedWrite)
		}
	}
	if err := os.Mkdir(leftover, 0o755); err != nil {
		t.Fatal(err)
	}
	if name, err := e.sweepTemp(tg, "s"); err != nil || name != "" {
		t.Errorf("SweepTemp over a directory = %q, %v; want \"\", nil", name, err)
	}
	if fi, err := os.Lstat(leftover); err != nil || !fi.IsDir() {
		t.Errorf("the directory at the temporary name was touched: %v", err)
	}
}

// swapLock holds only while the name holds the file observed: the same
// inode, or still nothing.
func TestSwapLock(t *testing.T) {
	e, dir := testEngine(t, "k", 1<<20, time.Second)
	ctx := context.Background()
	p := filepath.Join(dir, "a.txt")
	write(t, p, "one\n")
	tg := openTarget(t, e, "a.txt")
	obs, err := e.Observe(tg)
	if err != nil || !obs.Stat.Exists || obs.Sum != sum([]byte("one\n")) {
		t.Fatalf("Observe = %+v, %v", obs, err)
	}
	l, err := e.swapLock(ctx, tg, obs)
	if err != nil {
		t.Fatalf("SwapLock over the observed file = %v", err)
	}
	l.Unlock()
	// Same bytes, another file: replaced.
	write(t, p+".new", "one\n")
	if err := os.Rename(p+".new", p); err != nil {
		t.Fatal(err)
	}
	if _, err := e.swapLock(ctx, tg, obs); !errors.Is(err, ErrReplaced) {
		t.Errorf("SwapLock after the file was replaced = %v, want ErrReplaced", err)
	}
	nt := openTarget(t, e, "b.txt")
	absent, err := e.Observe(nt)
	if err != nil || absent.Stat.Exists {
		t.Fatalf("Observe(b.txt) = %+v, %v", absent, err)
	}
	write(t, filepath.Join(dir, "b.txt"), "created\n")
	if _, err := e.swapLock(ctx, nt, absent); !errors.Is(err, ErrReplaced) {
		t.Errorf("SwapLock after the file was created = %v, want ErrReplaced", err)
	}
}

// LockFiles takes each stripe once, so two paths of one stripe or one path
// twice do not deadlock; a stripe held elsewhere is BUSY past the timeout.
func TestLockFiles(t *testing.T) {
	e, _ := testEngine(t, "k", 1<<20, 50*time.Millisecond)
	ctx := context.Background()
	var a, b string
	for i := 0; b == ""; i++ {
		p := fmt.Sprintf("f%d", i)
		switch {
		case a == "":
			a = p
		case fileStripe(p) == fileStripe(a):
			b = p
		}
	}
	locks, err := e.LockFiles(ctx, a, b, a)
	if err != nil || len(locks) != 1 {
		t.Fatalf("LockFiles(%s, %s, %s) = %d locks, %v; want 1", a, b, a, len(locks), err)
	}
	if _, err := e.LockFiles(ctx, b); !errors.Is(err, filelock.ErrBusy) {
		t.Errorf("LockFiles of a held stripe = %v, want ErrBusy", err)
	}
	UnlockAll(locks)
	again, err := e.LockFiles(ctx, b)
	if err != nil {
		t.Fatalf("LockFiles after UnlockAll = %v", err)
	}
	UnlockAll(again)
}

// A file over the size limit is not read: TooLargeError says its size and
// the limit. A target whose directory leaves the root is refused.
func TestObserveAndOpenTarget(t *testing.T) {
	e, dir := testEngine(t, "k", 8, time.Second)
	write(t, filepath.Join(dir, "big.txt"), "0123456789")
	_, err := e.Observe(openTarget(t, e, "big.txt"))
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Size != 10 || tl.Limit != 8 {
		t.Errorf("Observe of 10 bytes over a limit of 8 = %v, want TooLargeError{10, 8}", err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.OpenTarget("out/x", "out/x", "out/x"); !errors.Is(err, ErrOutsideRoot) {
		t.Errorf("OpenTarget through a link out of the root = %v, want ErrOutsideRoot", err)
	}
	nt := openTarget(t, e, "no/such/dir/x")
	if nt.Dir != nil {
		t.Errorf("a target in a missing directory has a directory")
	}
	if obs, err := e.Observe(nt); err != nil || obs.Stat.Exists {
		t.Errorf("Observe in a missing directory = %+v, %v; want absent", obs, err)
	}
}

// A parked file past the grace period is removed if it still hashes to its
// name, and moved to quarantine if something wrote into it.
func TestSweepParked(t *testing.T) {
	e, dir := testEngine(t, "k", 1<<20, time.Second)
	parked := filepath.Join(dir, ".editguard", "displaced")
	old := time.Now().Add(-2 * parkGrace).UnixNano()
	same := fmt.Sprintf("%s.%d.0000.a.txt", sum([]byte("kept\n")), old)
	changed := fmt.Sprintf("%s.%d.0001.b.txt", sum([]byte("before\n")), old)
	young := fmt.Sprintf("%s.%d.0002.c.txt", sum([]byte("young\n")), time.Now().UnixNano())
	write(t, filepath.Join(parked, same), "kept\n")
	write(t, filepath.Join(parked, changed), "before\nand a late append\n")
	write(t, filepath.Join(parked, young), "young\n")
	if err := e.SweepParked(true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(parked, same)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an unchanged parked file past its grace was kept (%v)", err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, ".editguard", "quarantine", changed)); err != nil || string(data) != "before\nand a late append\n" {
		t.Errorf("a parked file written into is not in quarantine: %q, %v", data, err)
	}
	if _, err := os.Lstat(filepath.Join(parked, young)); err != nil {
		t.Errorf("a parked file within its grace was swept: %v", err)
	}
}

// TestOneByOne checks when many files are made durable with one syncfs:
// past FsyncObjects, and only if every file system written to is one
// where a syncfs may stand in for their fsyncs (procfs never is).
func TestOneByOne(t *testing.T) {
	open := func(path string) int {
		f, err := os.Open(path)
		if err != nil {
			t.Skipf("open %s: %v", path, err)
		}
		t.Cleanup(func() { f.Close() })
		return int(f.Fd())
	}
	tmp, proc := open(t.TempDir()), open("/proc")
	if !OneByOne(FsyncObjects, tmp) || !OneByOne(100) || !OneByOne(100, tmp, proc) {
		t.Error("a syncfs stood in where it may not")
	}
	if want := !atomicfile.SyncFSStandsIn(tmp); OneByOne(100, tmp) != want {
		t.Errorf("OneByOne(100) on the temporary directory = %v, want %v", !want, want)
	}
}

// A journal is acted upon only if its MAC verifies under this workspace's
// key; a damaged one, another workspace's or one edited after it was
// written is returned as unsafe, and a dead writer's temporary file is
// removed.
func TestJournals(t *testing.T) {
	e, dir := testEngine(t, "k", 1<<20, time.Second)
	other, _ := testEngine(t, "other", 1<<20, time.Second)
	if found, err := e.journals(); err != nil || len(found) != 0 {
		t.Fatalf("journals without a journal directory = %v, %v", found, err)
	}
	j := &Journal{ID: "good", Op: "apply_patch", Files: []JournalFile{{Path: "a.txt", AfterExists: true, AfterSHA256: sum([]byte("x"))}}}
	if err := e.writeJournal(j); err != nil {
		t.Fatal(err)
	}
	foreign := &Journal{ID: "foreign", Op: "apply_patch"}
	foreign.MAC = other.JournalMAC(foreign)
	edited := *j
	edited.ID, edited.Files = "edited", []JournalFile{{Path: ".git/config", AfterExists: true}}
	edited.MAC = j.MAC
	txDir := filepath.Join(dir, ".editguard", JournalDir)
	for name, v := range map[string]*Journal{"foreign": foreign, "edited": &edited} {
		data, _ := json.Marshal(v)
		write(t, filepath.Join(txDir, name+".json"), string(data))
	}
	write(t, filepath.Join(txDir, "torn.json"), `{"tx": "torn", "files": [`)
	dead := filepath.Join(txDir, ".next.json.0123456789abcdef.egtmp")
	write(t, dead, "half a journal")
	found, err := e.journals()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range found {
		switch {
		case f.Journal != nil:
			got[f.Name] = "ok " + f.Journal.strategy()
		default:
			got[f.Name] = f.Unsafe
		}
	}
	if got["good.json"] != "ok transaction good" || len(got) != 4 ||
		!strings.Contains(got["foreign.json"], "MAC") || !strings.Contains(got["edited.json"], "MAC") || !strings.Contains(got["torn.json"], "parse") {
		t.Errorf("journals = %v", got)
	}
	if _, err := os.Lstat(dead); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a dead writer's temporary journal was kept (%v)", err)
	}
	if present, err := e.journalPresent("good.json"); err != nil || !present {
		t.Errorf("JournalPresent(good.json) = %v, %v", present, err)
	}
	if err := e.removeJournal("good"); err != nil {
		t.Fatal(err)
	}
	if present, _ := e.journalPresent("good.json"); present {
		t.Error("the journal is still there after removeJournal")
	}
}

// An intent its writer left without an outcome is judged from the file:
// ok if the file holds what the change would leave, not_applied if it
// holds what the change would have displaced, unknown otherwise; one
// already resolved is left alone.
func TestResolveIntent(t *testing.T) {
	e, dir := testEngine(t, "k", 1<<20, time.Second)
	before, after := "before\n", "after\n"
	for _, tc := range []struct{ file, outcome, reason string }{
		{after, "ok", ""},
		{before, ledger.OutcomeInterrupted, "not_applied"},
		{"someone else's\n", ledger.OutcomeInterrupted, "unknown"},
	} {
		p := fmt.Sprintf("f-%s.txt", tc.reason)
		write(t, filepath.Join(dir, p), tc.file)
		rec := ledger.Record{Session: "s", Tool: "write_file", Path: p, SHA256Before: sum([]byte(before)),
			Observed: &ledger.FileState{Exists: true, SHA256: sum([]byte(before)), Size: int64(len(before))}}
		in := e.SavedIntent(rec, sum([]byte(after)))
		if !in.Durable() {
			t.Fatalf("the intent is not durable: %v", in.Err())
		}
		tg := openTarget(t, e, p)
		e.resolveIntent(&in.Rec, tg)
		e.resolveIntent(&in.Rec, tg) // resolved already: no second outcome
		var outcomes []*ledger.Record
		ledger.Scan(e.cfg.State, "ledger.jsonl", func(r *ledger.Record) error {
			if r.Intent == in.Seq {
				outcomes = append(outcomes, r)
			}
			return nil
		})
		if len(outcomes) != 1 || outcomes[0].Outcome != tc.outcome || outcomes[0].ErrorReason != tc.reason || !outcomes[0].Recovered {
			t.Errorf("file %q: outcomes %+v, want one %s %q", tc.file, outcomes, tc.outcome, tc.reason)
		}
	}
}

// txCase is a file of a transaction a crash interrupted: what it held
// before, what the transaction puts there, and what it holds at Open
// ("-" for no file).
type txCase struct{ path, before, after, now string }

// crashedTx lays out the files of cases as a transaction's crash left
// them, with each before content in history, and writes its journal.
func crashedTx(t *testing.T, e *Engine, dir, id string, cases []txCase) *Journal {
	t.Helper()
	j := &Journal{ID: id, Op: "apply_patch", Session: "s"}
	for _, c := range cases {
		jf := JournalFile{Path: c.path, BeforeExists: c.before != "-", AfterExists: c.after != "-"}
		if jf.BeforeExists {
			jf.BeforeSHA256 = sum([]byte(c.before))
			v, err := e.cfg.Hist.Save(c.path, []byte(c.before), false, jf.BeforeSHA256, history.Meta{Op: "apply_patch", Session: "s"})
			if err != nil {
				t.Fatal(err)
			}
			jf.Version = v.ID
		}
		if jf.AfterExists {
			jf.AfterSHA256 = sum([]byte(c.after))
		}
		if c.now != "-" {
			write(t, filepath.Join(dir, c.path), c.now)
		}
		j.Files = append(j.Files, jf)
	}
	if err := e.writeJournal(j); err != nil {
		t.Fatal(err)
	}
	return j
}

// recoverTx opens the journal's files and recovers its transaction.
func recoverTx(t *testing.T, e *Engine, j *Journal) (bool, error) {
	t.Helper()
	var targets []*Target
	for _, jf := range j.Files {
		targets = append(targets, openTarget(t, e, jf.Path))
	}
	return e.recoverTx(j.ID+".json", j, targets, "recover")
}

// holds reports what the file at p holds ("-" for none).
func holds(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return "-"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// ledgerOf returns the ledger's records after seq.
func ledgerOf(t *testing.T, e *Engine, after uint64) []*ledger.Record {
	t.Helper()
	var recs []*ledger.Record
	if err := ledger.Scan(e.cfg.State, "ledger.jsonl", func(r *ledger.Record) error {
		if r.Seq > after {
			recs = append(recs, r)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return recs
}

// A transaction whose process died before any of its records is rolled
// back: a file it changed gets its before content again, one it created
// goes, one it removed comes back (its directory made again), one it had
// not reached is left alone; each put back is recorded, what it took away
// kept in history, and the journal removed.
func TestRecoverTxRollsBack(t *testing.T) {
	e, dir := testEngine(t, "k", 1<<20, time.Second)
	j := crashedTx(t, e, dir, "back", []txCase{
		{"a.txt", "A0", "A1", "A1"},
		{"sub/new.txt", "-", "N", "N"},
		{"gone/old.txt", "O", "-", "-"},
		{"c.txt", "C0", "C1", "C0"},
	})
	rolled, err := recoverTx(t, e, j)
	if err != nil || !rolled {
		t.Fatalf("RecoverTx = %v, %v; want a rollback", rolled, err)
	}
	for p, want := range map[string]string{"a.txt": "A0", "sub/new.txt": "-", "gone/old.txt": "O", "c.txt": "C0"} {
		if got := holds(t, filepath.Join(dir, p)); got != want {
			t.Errorf("%s holds %q after the rollback, want %q", p, got, want)
		}
	}
	var got []string
	for _, r := range ledgerOf(t, e, j.LedgerSeq) {
		got = append(got, fmt.Sprintf("%s %s %s %s %v", r.Tool, r.Path, r.Outcome, r.Strategy, r.Recovered))
		if r.Tool == "recover" {
			if _, data, err := e.cfg.Hist.Load(r.Path, r.HistoryVersion); err != nil || (r.Path == "a.txt" && string(data) != "A1") {
				t.Errorf("%s: history version %q = %q, %v; want what the rollback took away", r.Path, r.HistoryVersion, data, err)
			}
		}
	}
	want := []string{
		"recover a.txt ok rollback transaction back true",
		"recover sub/new.txt ok rollback transaction back true",
		"recover gone/old.txt ok rollback transaction back true",
		"apply_patch a.txt interrupted transaction back true",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if present, _ := e.journalPresent("back.json"); present {
		t.Error("the journal is kept after the rollback")
	}
}

// A transaction with one of its records written is rolled forward: the
// files stay, each without a record gets one, marked recovered.
func TestRecoverTxRollsForward(t *testing.T) {
	e, dir := testEngine(t, "k", 1<<20, time.Second)
	j := crashedTx(t, e, dir, "fwd", []txCase{{"a.txt", "A0", "A1", "A1"}, {"b.txt", "-", "B1", "B1"}})
	if err := e.cfg.Led.Append(&ledger.Record{Session: "s", Tool: "apply_patch", Path: "a.txt", Outcome: "ok", Strategy: j.strategy()}); err != nil {
		t.Fatal(err)
	}
	rolled, err := recoverTx(t, e, j)
	if err != nil || rolled {
		t.Fatalf("RecoverTx = %v, %v; want a roll forward", rolled, err)
	}
	if a, b := holds(t, filepath.Join(dir, "a.txt")), holds(t, filepath.Join(dir, "b.txt")); a != "A1" || b != "B1" {
		t.Errorf("files hold %q, %q after a roll forward", a, b)
	}
	recs := ledgerOf(t, e, j.LedgerSeq+1)
	if len(recs) != 1 || recs[0].Path != "b.txt" || !recs[0].Recovered || recs[0].SHA256After != sum([]byte("B1")) {
		t.Errorf("records after the roll forward: %+v; want b.txt's, recovered", recs)
	}
	if present, _ := e.journalPresent("fwd.json"); present {
		t.Error("the journal is kept after the roll forward")
	}
}

// A file that holds neither what the transaction found nor what it put
// there was changed since the crash: nothing is rolled back, and the
// journal is kept.
func TestRecoverTxChangedSince(t *testing.T) {
	e, dir := testEngine(t, "k", 1<<20, time.Second)
	j := crashedTx(t, e, dir, "odd", []txCase{{"a.txt", "A0", "A1", "A1"}, {"b.txt", "B0", "B1", "someone else's"}})
	rolled, err := recoverTx(t, e, j)
	var ue *unsafeJournalError
	if rolled || !errors.As(err, &ue) || !strings.Contains(ue.Why, "b.txt") {
		t.Fatalf("RecoverTx = %v, %v; want an unsafeJournalError naming b.txt", rolled, err)
	}
	if a := holds(t, filepath.Join(dir, "a.txt")); a != "A1" {
		t.Errorf("a.txt holds %q: it was rolled back", a)
	}
	if present, _ := e.journalPresent("odd.json"); !present {
		t.Error("the journal is gone")
	}
}

// A transaction whose second swap fails puts its first file back and
// removes its journal; the second file is unchanged, and what the
// rollback took away is in history.
func TestCommitTxSwapFails(t *testing.T) {
	e, dir := testEngine(t, "k", 1<<20, time.Second)
	e.SetHook(func(c *atomicfile.Call) error {
		if (c.Op == "renameat2" || c.Op == "renameat") && (c.To == "b.txt" || c.Name == "b.txt") {
			return errors.New("injected")
		}
		return nil
	})
	j := &Journal{ID: "swapfail", Op: "apply_patch", Session: "s"}
	var files []*txFile
	var paths []string
	for _, p := range []string{"a.txt", "b.txt"} {
		before, after := strings.ToUpper(p[:1])+"0", strings.ToUpper(p[:1])+"1"
		write(t, filepath.Join(dir, p), before)
		v, err := e.cfg.Hist.Save(p, []byte(before), false, sum([]byte(before)), history.Meta{Op: "apply_patch", Session: "s", Lazy: true})
		if err != nil {
			t.Fatal(err)
		}
		tg := openTarget(t, e, p)
		obs, err := e.Observe(tg)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, &txFile{T: tg, Obs: obs, Data: []byte(after)})
		paths = append(paths, p)
		j.Files = append(j.Files, JournalFile{Path: p, BeforeExists: true, BeforeSHA256: obs.Sum, Version: v.ID,
			AfterExists: true, AfterSHA256: sum([]byte(after))})
	}
	_, err := e.commitTx(files, j, paths, "s", "apply_patch_undone")
	var se *SwapError
	if !errors.As(err, &se) || se.I != 1 || se.RollBack != nil {
		t.Fatalf("commitTx = %v; want a SwapError at file 1, rolled back", err)
	}
	if a, b := holds(t, filepath.Join(dir, "a.txt")), holds(t, filepath.Join(dir, "b.txt")); a != "A0" || b != "B0" {
		t.Errorf("after the failed transaction a.txt holds %q, b.txt %q; want A0, B0", a, b)
	}
	vs, err := e.cfg.Hist.List("a.txt")
	if err != nil || len(vs) != 2 || vs[0].Op != "apply_patch_undone" || vs[0].SHA256 != sum([]byte("A1")) {
		t.Errorf("a.txt's history: %+v, %v; want the rollback's version, A1, newest", vs, err)
	}
	if present, _ := e.journalPresent("swapfail.json"); present {
		t.Error("the journal is kept after a rollback that succeeded")
	}
	for _, p := range paths {
		if left, _ := filepath.Glob(filepath.Join(dir, "."+p+"*")); len(left) != 0 {
			t.Errorf("temporary files left: %v", left)
		}
	}
}

// A single file's change: its snapshot writes the intent and keeps what
// it displaces in history, and its swap puts the new content in place;
// a file replaced by another program since it was observed is left as it
// is, and nothing is kept for the change.
func TestSingle(t *testing.T) {
	e, dir := testEngine(t, "k", 1<<20, time.Second)
	var gate groupcommit.Gate
	write(t, filepath.Join(dir, "a.txt"), "old")
	change := func(content string, meddle func()) (Swapped, *single, error) {
		tg := openTarget(t, e, "a.txt")
		obs, err := e.Observe(tg)
		if err != nil {
			t.Fatal(err)
		}
		meddle()
		pass := gate.Enter()
		defer pass.Leave()
		s := e.snapshot(tg, obs, &Change{Data: []byte(content)}, ledger.Record{Session: "s", Tool: "write_file", Path: "a.txt"},
			sum([]byte(content)), "write_file", "s", gate.Quiet)
		defer s.finish()
		sw, err := s.swap(context.Background(), "s", pass)
		return sw, s, err
	}
	sw, s, err := change("new", func() {})
	if err != nil || sw.Strategy == "" || sw.Version == "" || s.intent.Seq == 0 {
		t.Fatalf("Swap = %+v, %v (intent %d); want a swap, a version and an intent", sw, err, s.intent.Seq)
	}
	if got := holds(t, filepath.Join(dir, "a.txt")); got != "new" {
		t.Errorf("a.txt holds %q after the change", got)
	}
	if _, data, err := e.cfg.Hist.Load("a.txt", sw.Version); err != nil || string(data) != "old" {
		t.Errorf("history's %s = %q, %v; want the displaced content", sw.Version, data, err)
	}
	sw, _, err = change("mine", func() {
		other := filepath.Join(dir, "other")
		write(t, other, "theirs")
		if err := os.Rename(other, filepath.Join(dir, "a.txt")); err != nil {
			t.Fatal(err)
		}
	})
	if !errors.Is(err, ErrReplaced) || sw.Strategy != "" {
		t.Fatalf("Swap over a replaced file = %+v, %v; want ErrReplaced before any swap", sw, err)
	}
	if got := holds(t, filepath.Join(dir, "a.txt")); got != "theirs" {
		t.Errorf("a.txt holds %q: the other program's file was replaced", got)
	}
}
