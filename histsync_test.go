package editguard_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/ledger"
)

// rawLedger returns every record of the ledger file, intents included.
func rawLedger(t *testing.T, dir string) []*ledger.Record {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, editguard.StateDir, "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []*ledger.Record
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		r := new(ledger.Record)
		if err := json.Unmarshal(sc.Bytes(), r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func historyIndex(dir, p string) string {
	h := sha256.Sum256([]byte(p))
	return filepath.Join(dir, editguard.StateDir, "history", "index", hex.EncodeToString(h[:])[:32]+".jsonl")
}

// indexIntents returns the intent seq of every version line of p's index.
func indexIntents(t *testing.T, dir, p string) []uint64 {
	t.Helper()
	b, err := os.ReadFile(historyIndex(dir, p))
	if err != nil {
		t.Fatal(err)
	}
	var out []uint64
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var v struct {
			Kind   string `json:"kind"`
			Intent uint64 `json:"intent"`
		}
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatal(err)
		}
		if v.Kind == "" {
			out = append(out, v.Intent)
		}
	}
	return out
}

// syncedMark returns the seq the history's mark names (0 for none).
func syncedMark(t *testing.T, dir string) uint64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, editguard.StateDir, "history", "synced"))
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	var seq uint64
	fmt.Sscanf(string(b), "%d", &seq)
	return seq
}

func setSyncedMark(t *testing.T, dir string, seq uint64, hash string) {
	t.Helper()
	body := fmt.Sprintf("%020d %s", seq, hash)
	line := fmt.Sprintf("%s crc=%08x\n", body, crc32.ChecksumIEEE([]byte(body)))
	if err := os.WriteFile(filepath.Join(dir, editguard.StateDir, "history", "synced"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
}

// lastIntent returns the ledger's last intent record, or nil.
func lastIntent(t *testing.T, dir string) *ledger.Record {
	t.Helper()
	var in *ledger.Record
	for _, r := range rawLedger(t, dir) {
		if r.Outcome == ledger.OutcomePending {
			in = r
		}
	}
	return in
}

// loseVersionLines leaves p's history as a power cut may after the
// change of intent in: p's index lines gone, the mark just before in.
func loseVersionLines(t *testing.T, dir, p string, in *ledger.Record) {
	t.Helper()
	if err := os.WriteFile(historyIndex(dir, p), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	setSyncedMark(t, dir, in.Seq-1, in.Prev)
}

// TestLazyVersionsCaughtUp checks that small changes carry what they
// displace in their intents, that each version names its intent, and that
// the history's mark reaches the ledger's end once the workspace closes.
func TestLazyVersionsCaughtUp(t *testing.T) {
	dir := t.TempDir()
	w, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, w.Dir(), "a.txt", "v0\n")
	s := w.NewSession("agent")
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		if _, err := s.Write(ctx, "a.txt", fmt.Sprintf("v%d\n", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	dir = w.Dir()
	recs := rawLedger(t, dir)
	var intents []uint64
	for _, r := range recs {
		if r.Outcome == ledger.OutcomePending {
			intents = append(intents, r.Seq)
			if want := fmt.Sprintf("v%d\n", len(intents)-1); string(r.Displaced) != want {
				t.Errorf("intent %d carries %q, want %q", r.Seq, r.Displaced, want)
			}
		}
	}
	if got := indexIntents(t, dir, "a.txt"); fmt.Sprint(got) != fmt.Sprint(intents) {
		t.Errorf("versions name intents %v, want %v", got, intents)
	}
	if got, want := syncedMark(t, dir), recs[len(recs)-1].Seq; got != want {
		t.Errorf("history's mark at %d, want the ledger's last record, %d", got, want)
	}
}

// TestLostVersionLineResaved leaves the history as a power cut may: the
// last version's index line gone, the mark before its intent. Open saves
// the intent's bytes again.
func TestLostVersionLineResaved(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "old\n")
	s := w.NewSession("agent")
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, "a.txt", "new\n", nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	in := lastIntent(t, dir)
	if in == nil {
		t.Fatal("no intent in the ledger")
	}
	// The index held one line, the version of "old\n".
	loseVersionLines(t, dir, "a.txt", in)
	w2, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	vs, err := w2.History("a.txt")
	if err != nil || len(vs) != 1 {
		t.Fatalf("History = %+v, %v; want the resaved version", vs, err)
	}
	if got, err := editguard.VersionContent(w2, "a.txt", vs[0].ID); err != nil || string(got) != "old\n" {
		t.Errorf("version %s holds %q (%v), want %q", vs[0].ID, got, err, "old\n")
	}
	if got := indexIntents(t, dir, "a.txt"); len(got) != 1 || got[0] != in.Seq {
		t.Errorf("versions name intents %v, want [%d]", got, in.Seq)
	}
	// Open saves again; it leaves the mark to a catch-up that fsyncs.
	if got := syncedMark(t, dir); got != in.Seq-1 {
		t.Errorf("history's mark at %d after Open, want it left at %d", got, in.Seq-1)
	}
	// A second Open finds the version and saves nothing.
	w3, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	w3.Close()
	if got := indexIntents(t, dir, "a.txt"); len(got) != 1 {
		t.Errorf("after another Open, versions name intents %v, want [%d]", got, in.Seq)
	}
}

// TestLostObjectLineResaved is TestLostVersionLineResaved for a content
// over the inline limit, whose version is an object the intent names: Open
// finds the object and saves the version again; an intent whose object is
// gone (its change was not made) is passed over.
func TestLostObjectLineResaved(t *testing.T) {
	for _, size := range []int{64 << 10, 1 << 20} { // copied; linked
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			w, dir := newWorkspace(t)
			old := strings.Repeat("old line\n", size/9)
			writeFile(t, dir, "a.txt", old)
			s := w.NewSession("agent")
			if _, err := s.Read(ctx, "a.txt", nil); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Write(ctx, "a.txt", "new\n", nil); err != nil {
				t.Fatal(err)
			}
			w.Close()
			in := lastIntent(t, dir)
			if in == nil || !in.DisplacedObject {
				t.Fatalf("intent %+v, want one that names its object", in)
			}
			loseVersionLines(t, dir, "a.txt", in)
			w2, err := editguard.Open(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			vs, err := w2.History("a.txt")
			w2.Close()
			if err != nil || len(vs) != 1 {
				t.Fatalf("History = %+v, %v; want the version saved again", vs, err)
			}
			w3, err := editguard.Open(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := editguard.VersionContent(w3, "a.txt", vs[0].ID)
			w3.Close()
			if err != nil || string(got) != old {
				t.Errorf("version %s holds %d bytes (%v), want the %d displaced", vs[0].ID, len(got), err, len(old))
			}
			if got := indexIntents(t, dir, "a.txt"); len(got) != 1 || got[0] != in.Seq {
				t.Errorf("versions name intents %v, want [%d]", got, in.Seq)
			}
			// Without its object, the intent's version is not saved.
			objs, err := filepath.Glob(filepath.Join(dir, editguard.StateDir, "history", "objects", "*", in.SHA256Before))
			if err != nil || len(objs) != 1 {
				t.Fatalf("objects %v, %v; want the version's", objs, err)
			}
			os.Remove(objs[0])
			loseVersionLines(t, dir, "a.txt", in)
			w4, err := editguard.Open(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			vs, err = w4.History("a.txt")
			w4.Close()
			if err != nil || len(vs) != 0 {
				t.Errorf("History without the object = %+v, %v; want no version", vs, err)
			}
		})
	}
}

// TestLostCreationLineResaved is TestLostVersionLineResaved for a change
// that created the file: its intent says the file did not exist, and Open
// saves the absent version again.
func TestLostCreationLineResaved(t *testing.T) {
	w, dir := newWorkspace(t)
	s := w.NewSession("agent")
	if _, err := s.Write(ctx, "a.txt", "new\n", nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	in := lastIntent(t, dir)
	if in == nil || in.Observed == nil || in.Observed.Exists {
		t.Fatalf("intent %+v, want one that observed no file", in)
	}
	loseVersionLines(t, dir, "a.txt", in)
	w2, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := w2.History("a.txt")
	w2.Close()
	if err != nil || len(vs) != 1 || !vs[0].Absent {
		t.Fatalf("History = %+v, %v; want the absent version saved again", vs, err)
	}
	if got := indexIntents(t, dir, "a.txt"); len(got) != 1 || got[0] != in.Seq {
		t.Errorf("versions name intents %v, want [%d]", got, in.Seq)
	}
}

// TestCatchUpLeavesLiveWriter opens a second workspace while a change has
// written its intent but not yet its version: the second Open must neither
// save the version itself nor move the mark past the intent.
func TestCatchUpLeavesLiveWriter(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "old\n")
	s := w.NewSession("agent")
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	stopped, release := make(chan struct{}), make(chan struct{})
	var once atomic.Bool
	editguard.SetFaults(w, nil, func(op, name string) error {
		if op == "write" && strings.Contains(name, "/index/") && once.CompareAndSwap(false, true) {
			close(stopped)
			<-release
		}
		return nil
	}, nil)
	done := make(chan error, 1)
	go func() {
		_, err := s.Write(ctx, "a.txt", "new\n", nil)
		done <- err
	}()
	<-stopped
	w2, err := editguard.Open(dir, nil)
	if err != nil {
		close(release)
		t.Fatal(err)
	}
	mark := syncedMark(t, dir)
	w2.Close()
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	in := lastIntent(t, dir)
	if in == nil || mark >= in.Seq {
		t.Fatalf("while the writer was at work the mark moved to %d, past its intent %+v", mark, in)
	}
	w.Close()
	if got := indexIntents(t, dir, "a.txt"); len(got) != 1 || got[0] != in.Seq {
		t.Errorf("versions name intents %v, want the writer's alone, [%d]", got, in.Seq)
	}
	recs := rawLedger(t, dir)
	if got, want := syncedMark(t, dir), recs[len(recs)-1].Seq; got != want {
		t.Errorf("after Close the history's mark is at %d, want %d", got, want)
	}
}

// TestPlantedMark plants a symlink to a file outside the root where the
// history's mark goes: nothing outside changes, every version is kept, and
// the workspace goes on without the mark.
func TestPlantedMark(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "outside.txt")
	if err := os.WriteFile(outside, []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Planted in editguard's own state directory: a foreign one is
	// refused whole at Open (TestClonedStateIsNeverActedUpon).
	if w, err := editguard.Open(dir, nil); err != nil {
		t.Fatal(err)
	} else {
		w.Close()
	}
	os.Remove(filepath.Join(dir, editguard.StateDir, "history", "synced"))
	if err := os.Symlink(outside, filepath.Join(dir, editguard.StateDir, "history", "synced")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a.txt", "v0\n")
	for round := range 2 {
		w, err := editguard.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		s := w.NewSession("agent")
		if _, err := s.Read(ctx, "a.txt", nil); err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 3; i++ {
			if _, err := s.Write(ctx, "a.txt", fmt.Sprintf("v%d-%d\n", round, i), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "outside\n" {
		t.Errorf("the file outside the root holds %q", b)
	}
	w, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if vs, err := w.History("a.txt"); err != nil || len(vs) != 6 {
		t.Errorf("History = %d versions, %v; want 6", len(vs), err)
	}
	if _, err := w.VerifyLedger(); err != nil {
		t.Errorf("Verify: %v", err)
	}
}

// TestDamagedMarkRewritten damages the history's mark, as a torn write
// would: Open reads the ledger's end, rewrites the mark, and changes go on
// being saved lazily.
func TestDamagedMarkRewritten(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "v0\n")
	s := w.NewSession("agent")
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, "a.txt", "v1\n", nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	mark := filepath.Join(dir, editguard.StateDir, "history", "synced")
	if err := os.WriteFile(mark, []byte("00000000000000000002 torn"), 0o644); err != nil {
		t.Fatal(err)
	}
	w2, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	recs := rawLedger(t, dir)
	if got, want := syncedMark(t, dir), recs[len(recs)-1].Seq; got != want {
		t.Errorf("after Open the mark is at %d, want %d", got, want)
	}
	s2 := w2.NewSession("agent")
	if _, err := s2.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Write(ctx, "a.txt", "v2\n", nil); err != nil {
		t.Fatal(err)
	}
	w2.Close()
	recs = rawLedger(t, dir)
	if got := indexIntents(t, dir, "a.txt"); len(got) != 2 || got[1] != recs[len(recs)-2].Seq || string(recs[len(recs)-2].Displaced) != "v1\n" {
		t.Errorf("versions name intents %v; want the second change's intent %d, carrying v1", got, recs[len(recs)-2].Seq)
	}
	if got, want := syncedMark(t, dir), recs[len(recs)-1].Seq; got != want {
		t.Errorf("after Close the mark is at %d, want %d", got, want)
	}
}
