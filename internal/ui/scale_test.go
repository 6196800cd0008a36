package ui

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/ledger"
	"github.com/editguard/editguard/internal/statedir"
)

// manyRecords is the length of the ledger the paging test reads.
const manyRecords = 30_000

// fillLedger appends n records to the ledger of the workspace at dir,
// which no Workspace has open: every seventh a STALE_FILE refusal, the
// sessions taking turns.
func fillLedger(t *testing.T, dir string, n int) {
	t.Helper()
	root, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	state, err := statedir.Lookup(root, "", editguard.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	defer state.Close()
	l, err := ledger.Open(state, "ledger.jsonl", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var last *ledger.Pending
	for i := range n {
		r := &ledger.Record{Session: fmt.Sprintf("s-%d", i%3), Tool: "write_file", Path: fmt.Sprintf("f%03d.txt", i%500),
			Outcome: "ok", SHA256After: sum(strconv.Itoa(i))}
		if i%7 == 0 {
			r.Outcome, r.ErrorCode, r.ErrorReason, r.SHA256After = "error", "STALE_FILE", "modified", ""
		}
		if last, err = l.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := last.Wait(); err != nil {
		t.Fatal(err)
	}
}

// newestOf returns the seq of the newest record fillLedger wrote whose
// index is.
func newestOf(is func(int) bool) int {
	for i := manyRecords - 1; i >= 0; i-- {
		if is(i) {
			return i + 1
		}
	}
	return 0
}

var rowSeq = regexp.MustCompile(`<tr class="row" data-seq="(\d+)"`)

// seqs returns the seq of each timeline row of a page.
func seqs(page string) []int {
	var out []int
	for _, m := range rowSeq.FindAllStringSubmatch(page, -1) {
		n, _ := strconv.Atoi(m[1])
		out = append(out, n)
	}
	return out
}

func TestUIPagesFromTheTail(t *testing.T) {
	dir := t.TempDir()
	w, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	start := time.Now()
	fillLedger(t, dir, manyRecords)
	t.Logf("%d records written in %v", manyRecords, time.Since(start))
	if w, err = editguard.Open(dir, nil); err != nil {
		t.Fatal(err)
	}
	f := serveFixture(t, dir, w)
	c := f.client(t)
	pages := []struct {
		query string
		first int
		check func(page string) string
	}{
		{"/", manyRecords, nil},
		{fmt.Sprintf("/?before=%d", manyRecords-99), manyRecords - 100, nil},
		{fmt.Sprintf("/?before=%d", manyRecords-299), manyRecords - 300, nil},
		// Deep in the ledger: found by bisecting the file, not by reading
		// back from its end.
		{fmt.Sprintf("/?before=%d", 1001), 1000, nil},
		{"/?session=s-1", newestOf(func(i int) bool { return i%3 == 1 }), func(p string) string {
			if strings.Contains(p, ">s-0<") || strings.Contains(p, ">s-2<") {
				return "another session's record"
			}
			return ""
		}},
		{"/?outcome=refused", newestOf(func(i int) bool { return i%7 == 0 }), func(p string) string {
			if strings.Contains(p, `<span class="outcome ok">`) {
				return "a committed record"
			}
			return ""
		}},
	}
	for _, pg := range pages {
		start := time.Now()
		code, body := get(t, c, f.hs.URL, pg.query)
		took := time.Since(start)
		t.Logf("GET %s: %v", pg.query, took)
		got := seqs(body)
		if code != 200 || len(got) != 100 {
			t.Fatalf("GET %s: %d, %d rows, want 100", pg.query, code, len(got))
		}
		if got[0] != pg.first {
			t.Errorf("GET %s: first row is record %d, want %d", pg.query, got[0], pg.first)
		}
		for i := 1; i < len(got); i++ {
			if got[i] >= got[i-1] {
				t.Fatalf("GET %s: rows not newest first: %v", pg.query, got[i-1:i+1])
			}
		}
		if older := regexp.MustCompile(`id="older" href="([^"]+)"`).FindStringSubmatch(body); older == nil {
			t.Errorf("GET %s: no link to older records", pg.query)
		} else if _, next := get(t, c, f.hs.URL, strings.ReplaceAll(older[1], "&amp;", "&")); len(seqs(next)) != 100 || seqs(next)[0] >= got[len(got)-1] {
			t.Errorf("GET %s: the older page (%s) does not follow on", pg.query, older[1])
		} else if pg.check != nil {
			if bad := pg.check(next); bad != "" {
				t.Errorf("GET %s: the older page holds %s", older[1], bad)
			}
		}
		if pg.check != nil {
			if bad := pg.check(body); bad != "" {
				t.Errorf("GET %s: the page holds %s", pg.query, bad)
			}
		}
		if took > 10*time.Second {
			t.Errorf("GET %s took %v on a ledger of %d records", pg.query, took, manyRecords)
		}
	}
	// The header's chain status comes from a verification of the whole
	// ledger, in the background.
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := f.srv.trust.get()
		if st.Checked {
			if !st.OK || st.Records != manyRecords {
				t.Fatalf("trust status %+v, want ok with %d records", st, manyRecords)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the ledger was not verified within 20 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, body := get(t, c, f.hs.URL, "/"); !strings.Contains(body, fmt.Sprintf("ledger ok: %d records, hash chain intact", manyRecords)) {
		t.Error("the header does not show the verified chain")
	}
}

func TestUIShowsABrokenChain(t *testing.T) {
	dir := t.TempDir()
	w, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	fillLedger(t, dir, 20)
	p := dir + "/" + editguard.StateDir + "/ledger.jsonl"
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	lines[11] = strings.Replace(lines[11], `"f011.txt"`, `"f999.txt"`, 1) // record 12
	if err := os.WriteFile(p, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if w, err = editguard.Open(dir, nil); err != nil {
		t.Fatal(err)
	}
	f := serveFixture(t, dir, w)
	c := f.client(t)
	deadline := time.Now().Add(20 * time.Second)
	for !f.srv.trust.get().Checked {
		if time.Now().After(deadline) {
			t.Fatal("the ledger was not verified within 20 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, body := get(t, c, f.hs.URL, "/")
	if !strings.Contains(body, `ledger BROKEN at <a href="/change/12">record 12</a>`) {
		t.Errorf("the header does not name record 12 as where the chain breaks:\n%s", body)
	}
}
