package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/editguard/editguard/internal/statedir"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	os.Exit(m.Run())
}

// testRecord returns a record that exercises every field.
func testRecord(i int) *Record {
	return &Record{
		Session:      "s1",
		Tool:         "edit_file",
		Path:         fmt.Sprintf("src/f%d.go", i),
		Args:         json.RawMessage(fmt.Sprintf(`{"lg": "src/f%d.go", "old_string": "<a & b>", "new_string": "x"}`, i)),
		Precondition: json.RawMessage(`{"expected_sha256":"ab"}`),
		Baseline:     &FileState{Exists: true, SHA256: "ab", Size: 10, MtimeMS: 1730000000000},
		Observed:     &FileState{Exists: true, SHA256: "cd", Size: 12, MtimeMS: 1730000000123},
		Outcome:      "error",
		ErrorCode:    "STALE_FILE",
		ErrorReason:  "modified",
		SHA256Before: "cd",
		Strategy:     "exchange",
		Approval:     "auto",
		Result:       json.RawMessage(`{"code":"STALE_FILE","details":{"lg":"src/a.go"}}`),
		Timing:       &Timing{TotalMS: 30001.25, LockWaitMS: 30000.5, CheckMS: 0.125},
	}
}

// testName is the ledger's name in the state directory.
const testName = "ledger.jsonl"

// testLedger is a ledger in the state directory of a temporary root.
type testLedger struct {
	root string
	dir  *statedir.Dir // root/.editguard
	file string        // the ledger's path, for changes behind the Ledger's back
}

func newTestLedger(t testing.TB) testLedger {
	t.Helper()
	return ledgerAt(t, t.TempDir())
}

// ledgerAt opens the state directory of root.
func ledgerAt(t testing.TB, root string) testLedger {
	t.Helper()
	rf, err := os.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	d, err := statedir.Open(rf, "", ".editguard")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.Close()
		rf.Close()
	})
	return testLedger{root: root, dir: d, file: filepath.Join(root, ".editguard", testName)}
}

// in returns the path of name in the state directory.
func (lg testLedger) in(name string) string { return filepath.Join(lg.root, ".editguard", name) }

func openTest(t testing.TB, lg testLedger, opts *Options) *Ledger {
	t.Helper()
	l, err := Open(lg.dir, testName, opts)
	if err != nil {
		t.Fatalf("Open(%q) error: %v", lg.file, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func readAll(t testing.TB, lg testLedger) []*Record {
	t.Helper()
	var recs []*Record
	if err := Scan(lg.dir, testName, func(r *Record) error {
		recs = append(recs, r)
		return nil
	}); err != nil {
		t.Fatalf("Scan(%q) error: %v", lg.file, err)
	}
	return recs
}

func mustVerify(t testing.TB, lg testLedger, want int) {
	t.Helper()
	n, err := Verify(lg.dir, testName)
	if err != nil || n != want {
		t.Fatalf("Verify() = %d, %v; want %d, nil", n, err, want)
	}
}

func TestAppendScanRoundTrip(t *testing.T) {
	lg := newTestLedger(t)
	l := openTest(t, lg, nil)
	if r := l.Recovered(); r != nil {
		t.Errorf("Recovered() on a new ledger = %+v, want nil", r)
	}

	fixed := time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.FixedZone("CET", 3600))
	var appended []*Record
	for i := range 5 {
		r := testRecord(i)
		if i == 2 {
			r.Time = fixed
		}
		if i == 3 {
			r.Args = nil // optional fields absent
			r.Baseline = nil
			r.Result = nil
		}
		if err := l.Append(r); err != nil {
			t.Fatalf("Append(%d) error: %v", i, err)
		}
		appended = append(appended, r)
	}

	for i, r := range appended {
		if r.Seq != uint64(i+1) {
			t.Errorf("record %d: Seq = %d, want %d", i, r.Seq, i+1)
		}
		if r.Time.IsZero() {
			t.Errorf("record %d: Time not filled", i)
		}
		if !isHash(r.Hash) {
			t.Errorf("record %d: Hash = %q, not a hash", i, r.Hash)
		}
		wantPrev := ""
		if i > 0 {
			wantPrev = appended[i-1].Hash
		}
		if r.Prev != wantPrev {
			t.Errorf("record %d: Prev = %q, want %q", i, r.Prev, wantPrev)
		}
	}
	if !appended[2].Time.Equal(fixed) || appended[2].Time.Location() != time.UTC {
		t.Errorf("given Time = %v, want %v in UTC", appended[2].Time, fixed)
	}

	got := readAll(t, lg)
	if len(got) != len(appended) {
		t.Fatalf("Scan returned %d records, want %d", len(got), len(appended))
	}
	for i := range got {
		want := *appended[i]
		// Args are stored compacted, as json.Marshal writes RawMessage.
		if want.Args != nil {
			want.Args = compactForTest(t, want.Args)
		}
		if !reflect.DeepEqual(got[i], &want) {
			t.Errorf("record %d:\n got %+v\nwant %+v", i, got[i], &want)
		}
	}
	mustVerify(t, lg, 5)

	// A second Ledger on the same file continues the chain.
	if err := l.Close(); err != nil {
		t.Fatalf("Close() error: %v", err)
	}
	if err := l.Append(testRecord(9)); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Append after Close error = %v, want os.ErrClosed", err)
	}
	l2 := openTest(t, lg, nil)
	r := testRecord(5)
	if err := l2.Append(r); err != nil {
		t.Fatalf("Append after reopen error: %v", err)
	}
	if r.Seq != 6 || r.Prev != appended[4].Hash {
		t.Errorf("after reopen Seq, Prev = %d, %q; want 6, %q", r.Seq, r.Prev, appended[4].Hash)
	}
	mustVerify(t, lg, 6)
}

func compactForTest(t *testing.T, raw json.RawMessage) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(raw)
	if err != nil {
		t.Fatalf("compact %s: %v", raw, err)
	}
	return b
}

func TestAppendRejectsInvalidJSON(t *testing.T) {
	lg := newTestLedger(t)
	l := openTest(t, lg, nil)
	if err := l.Append(testRecord(1)); err != nil {
		t.Fatal(err)
	}
	bad := testRecord(2)
	bad.Args = json.RawMessage(`{"unterminated`)
	if err := l.Append(bad); err == nil {
		t.Fatalf("Append with invalid Args succeeded, want error")
	}
	if bad.Seq != 0 || bad.Hash != "" {
		t.Errorf("failed record has Seq, Hash = %d, %q; want cleared", bad.Seq, bad.Hash)
	}
	r := testRecord(3)
	if err := l.Append(r); err != nil {
		t.Fatal(err)
	}
	if r.Seq != 2 {
		t.Errorf("Seq after a failed Append = %d, want 2", r.Seq)
	}
	mustVerify(t, lg, 2)
}

// TestAppendConcurrentGoroutines appends from many goroutines through one
// Ledger and through two Ledgers on the same file, with and without group
// commit.
func TestAppendConcurrentGoroutines(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts *Options
	}{
		{"group", nil},
		{"single", &Options{DisableGroupCommit: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lg := newTestLedger(t)
			ls := []*Ledger{openTest(t, lg, tc.opts), openTest(t, lg, tc.opts)}
			const goroutines, each = 8, 25
			var wg sync.WaitGroup
			errs := make(chan error, goroutines*each)
			for g := range goroutines {
				wg.Go(func() {
					for i := range each {
						r := testRecord(i)
						r.Session = fmt.Sprintf("g%d", g)
						if err := ls[g%2].Append(r); err != nil {
							errs <- err
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Errorf("Append error: %v", err)
			}
			mustVerify(t, lg, goroutines*each)
			perSession := map[string]int{}
			for _, r := range readAll(t, lg) {
				perSession[r.Session]++
			}
			for g := range goroutines {
				if got := perSession[fmt.Sprintf("g%d", g)]; got != each {
					t.Errorf("session g%d has %d records, want %d", g, got, each)
				}
			}
		})
	}
}

func TestOpenRepairsTornTail(t *testing.T) {
	lg := newTestLedger(t)
	l := openTest(t, lg, nil)
	for i := range 3 {
		if err := l.Append(testRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	fi, _ := os.Stat(lg.file)
	good := fi.Size()

	// A second Ledger opened before the tear repairs it in Append.
	early := openTest(t, lg, nil)

	partial := []byte(`{"seq":4,"time":"2025-01-01T00:00:00Z","tool":"write_fi`)
	appendBytes(t, lg.file, partial)

	before, _ := os.ReadFile(lg.file)
	n, err := Verify(lg.dir, testName)
	var ve *VerifyError
	if !errors.As(err, &ve) || ve.Reason != ReasonTornTail || ve.Seq != 4 || ve.Line != 4 || n != 3 {
		t.Fatalf("Verify() = %d, %v; want 3, torn tail at record 4 line 4", n, err)
	}
	if got := len(readAll(t, lg)); got != 3 {
		t.Errorf("Scan of a torn ledger returned %d records, want 3", got)
	}
	if after, _ := os.ReadFile(lg.file); !bytes.Equal(after, before) {
		t.Errorf("Verify and Scan changed the torn ledger: %d bytes before, %d after", len(before), len(after))
	}
	if _, err := os.Lstat(lg.in("quarantine")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Verify made a quarantine: Lstat = %v", err)
	}

	l2 := openTest(t, lg, nil)
	checkRecovery(t, lg, l2.Recovered(), good, partial)
	mustVerify(t, lg, 3)

	// The tear again, this time met by an Append of a Ledger that was open
	// before it happened.
	appendBytes(t, lg.file, partial)
	r := testRecord(4)
	if err := early.Append(r); err != nil {
		t.Fatalf("Append over a torn tail error: %v", err)
	}
	if r.Seq != 4 {
		t.Errorf("Seq after repair = %d, want 4", r.Seq)
	}
	checkRecovery(t, lg, early.Recovered(), good, partial)
	if early.Recovered().Quarantine == l2.Recovered().Quarantine {
		t.Errorf("two cuts saved to one quarantine file %s", l2.Recovered().Quarantine)
	}
	mustVerify(t, lg, 4)
}

// checkRecovery checks that got reports the cut of the bytes torn at off,
// and that its quarantine file holds exactly those bytes.
func checkRecovery(t *testing.T, lg testLedger, got *Recovery, off int64, torn []byte) {
	t.Helper()
	if got == nil || got.Offset != off || got.Bytes != int64(len(torn)) {
		t.Fatalf("Recovered() = %+v, want offset %d, %d bytes", got, off, len(torn))
	}
	if !regexp.MustCompile(fmt.Sprintf(`^\.editguard/quarantine/ledger-%d-[0-9]+\.torn$`, off)).MatchString(got.Quarantine) {
		t.Errorf("Recovered().Quarantine = %q, want .editguard/quarantine/ledger-%d-<time>.torn", got.Quarantine, off)
	}
	saved, err := os.ReadFile(filepath.Join(lg.root, got.Quarantine))
	if err != nil || !bytes.Equal(saved, torn) {
		t.Errorf("quarantine holds %q, %v; want the torn bytes %q", saved, err, torn)
	}
}

func TestOpenTornOnlyLine(t *testing.T) {
	lg := newTestLedger(t)
	appendBytes(t, lg.file, []byte(`{"seq":1,"ti`))
	l := openTest(t, lg, nil)
	checkRecovery(t, lg, l.Recovered(), 0, []byte(`{"seq":1,"ti`))
	r := testRecord(1)
	if err := l.Append(r); err != nil || r.Seq != 1 || r.Prev != "" {
		t.Fatalf("Append() = %v with Seq %d Prev %q; want nil, 1, empty", err, r.Seq, r.Prev)
	}
	mustVerify(t, lg, 1)
}

func TestOpenCorruptLastRecord(t *testing.T) {
	lg := newTestLedger(t)
	appendBytes(t, lg.file, []byte("not json\n"))
	_, err := Open(lg.dir, testName, nil)
	var ve *VerifyError
	if !errors.As(err, &ve) || ve.Reason != ReasonMalformed {
		t.Fatalf("Open() on a corrupt last line error = %v, want malformed *VerifyError", err)
	}
}

// TestAppendAfterReplace checks that a Ledger follows its name when the
// ledger and its anchor are moved away, instead of appending to the moved
// file, and that it refuses to start a new chain when only the ledger was
// moved: its anchor then shows records missing.
func TestAppendAfterReplace(t *testing.T) {
	lg := newTestLedger(t)
	l := openTest(t, lg, &Options{AnchorEvery: -1})
	if err := l.Append(testRecord(1)); err != nil {
		t.Fatal(err)
	}
	for _, ext := range []string{"", headSuffix} {
		if err := os.Rename(lg.in(testName+ext), lg.in("old.jsonl"+ext)); err != nil {
			t.Fatal(err)
		}
	}
	r := testRecord(2)
	if err := l.Append(r); err != nil {
		t.Fatal(err)
	}
	if r.Seq != 1 {
		t.Errorf("Seq in a new file = %d, want 1", r.Seq)
	}
	mustVerify(t, lg, 1)
	if n, err := Verify(lg.dir, "old.jsonl"); err != nil || n != 1 {
		t.Errorf("Verify(old.jsonl) = %d, %v; want 1, nil", n, err)
	}

	// Only the ledger moves: the anchor stays, naming record 1.
	if err := os.Rename(lg.file, lg.in("older.jsonl")); err != nil {
		t.Fatal(err)
	}
	var ve *VerifyError
	if err := l.Append(testRecord(3)); !errors.As(err, &ve) || ve.Reason != ReasonTruncated {
		t.Errorf("Append with the ledger gone and its anchor kept = %v, want %q", err, ReasonTruncated)
	}
	if n, err := Verify(lg.dir, testName); !errors.As(err, &ve) || ve.Reason != ReasonTruncated || n != 0 {
		t.Errorf("Verify() = %d, %v; want 0, %q", n, err, ReasonTruncated)
	}
}

func TestFilter(t *testing.T) {
	lg := newTestLedger(t)
	l := openTest(t, lg, nil)
	for _, c := range []struct{ session, tool, lg string }{
		{"a", "write_file", "x.go"},
		{"b", "edit_file", "x.go"},
		{"a", "edit_file", "y.go"},
		{"b", "restore_file", "y.go"},
	} {
		if err := l.Append(&Record{Session: c.session, Tool: c.tool, Path: c.lg, Outcome: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		m    Match
		want []uint64
	}{
		{Match{}, []uint64{1, 2, 3, 4}},
		{Match{Path: "x.go"}, []uint64{1, 2}},
		{Match{Session: "a"}, []uint64{1, 3}},
		{Match{Session: "b", Path: "y.go"}, []uint64{4}},
		{Match{Tool: "edit_file"}, []uint64{2, 3}},
		{Match{Path: "z.go"}, nil},
	} {
		var got []uint64
		if err := Filter(lg.dir, testName, tc.m, func(r *Record) error {
			got = append(got, r.Seq)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Filter(%+v) seqs = %v, want %v", tc.m, got, tc.want)
		}
	}
	stop := errors.New("stop")
	calls := 0
	err := Scan(lg.dir, testName, func(*Record) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Errorf("Scan with a failing fn = %v after %d calls, want stop after 1", err, calls)
	}
}

func appendBytes(t testing.TB, lg string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(lg, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}
