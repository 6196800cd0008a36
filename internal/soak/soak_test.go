package soak

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/editguard/editguard"
)

const msec = time.Millisecond

// file builds a whole file of f holding markers.
func file(f string, markers ...string) string {
	return strings.Join(append(append([]string{header(f)}, markers...), endLine), "\n") + "\n"
}

func TestCheckMarkers(t *testing.T) {
	const f = "g00/f00.txt"
	ok := func(marker string, start, end time.Duration) attempt {
		return attempt{worker: "mcp-1", file: f, marker: marker, start: start, end: end, outcome: acked}
	}
	stale := func(marker string, start, end time.Duration) attempt {
		return attempt{worker: "mcp-1", file: f, marker: marker, start: start, end: end, outcome: refused, code: "STALE_FILE"}
	}
	tests := []struct {
		name  string
		ev    events
		final string
		want  Report // only the counters below are compared
		bad   int    // violations
	}{
		{
			name:  "acknowledged marker present",
			ev:    events{attempts: []attempt{ok("m1", 10*msec, 20*msec), stale("m2", 15*msec, 25*msec)}},
			final: file(f, "m1"),
			want:  Report{Attempts: 2},
		},
		{
			name:  "acknowledged marker missing, no unguarded writer",
			ev:    events{attempts: []attempt{ok("m1", 10*msec, 20*msec)}},
			final: file(f),
			want:  Report{Attempts: 1, LostUpdates: 1},
			bad:   1,
		},
		{
			name: "overwritten by an unguarded write that read before the commit",
			ev: events{
				attempts: []attempt{ok("m1", 10*msec, 20*msec)},
				writes:   []unguardedWrite{{file: f, marker: "u1", readStart: 5 * msec, writeStart: 25 * msec, writeEnd: 26 * msec}},
			},
			final: file(f, "u1"),
			want:  Report{Attempts: 1, LostToUnguarded: 1},
		},
		{
			name: "unguarded write read after the commit, so it saw the marker",
			ev: events{
				attempts: []attempt{ok("m1", 10*msec, 20*msec)},
				writes:   []unguardedWrite{{file: f, marker: "u1", readStart: 21 * msec, writeStart: 22 * msec, writeEnd: 23 * msec}},
			},
			final: file(f, "u1"),
			want:  Report{Attempts: 1, LostUpdates: 1},
			bad:   1,
		},
		{
			name: "unguarded write finished before the commit began",
			ev: events{
				attempts: []attempt{ok("m1", 10*msec, 20*msec)},
				writes:   []unguardedWrite{{file: f, marker: "u1", readStart: 1 * msec, writeStart: 2 * msec, writeEnd: 3 * msec}},
			},
			final: file(f, "u1"),
			want:  Report{Attempts: 1, LostUpdates: 1},
			bad:   1,
		},
		{
			name: "unguarded write to another file does not explain a loss",
			ev: events{
				attempts: []attempt{ok("m1", 10*msec, 20*msec)},
				writes:   []unguardedWrite{{file: "g00/f01.txt", marker: "u1", readStart: 5 * msec, writeStart: 25 * msec, writeEnd: 26 * msec}},
			},
			final: file(f),
			want:  Report{Attempts: 1, LostUpdates: 1},
			bad:   2, // and u1 is missing from its file, which is not in final
		},
		{
			name:  "refused marker written",
			ev:    events{attempts: []attempt{stale("m1", 10*msec, 20*msec)}},
			final: file(f, "m1"),
			want:  Report{Attempts: 1},
			bad:   1,
		},
		{
			name: "refused marker copied by an unguarded read during the commit",
			ev: events{
				attempts: []attempt{stale("m1", 10*msec, 20*msec)},
				writes:   []unguardedWrite{{file: f, marker: "u1", readStart: 15 * msec, writeStart: 30 * msec, writeEnd: 31 * msec}},
			},
			final: file(f, "m1", "u1"),
			want:  Report{Attempts: 1, Phantoms: 1},
		},
		{
			name: "refusal with a code other than STALE_FILE",
			ev: events{attempts: []attempt{{worker: "cli-0", file: f, marker: "m1", start: msec, end: 2 * msec,
				outcome: refused, code: "NO_MATCH"}}},
			final: file(f),
			want:  Report{Attempts: 1},
			bad:   1,
		},
		{
			name:  "failed call",
			ev:    events{attempts: []attempt{{worker: "mcp-1", file: f, marker: "m1", outcome: failed, detail: "EOF"}}},
			final: file(f),
			want:  Report{Attempts: 1, Failed: 1},
			bad:   1,
		},
		{
			name: "torn read during an in-place write",
			ev: events{
				torn:   []tornRead{{worker: "cli-0", file: f, start: 10 * msec, end: 20 * msec}},
				writes: []unguardedWrite{{file: f, marker: "u1", readStart: 1 * msec, writeStart: 15 * msec, writeEnd: 16 * msec}},
			},
			final: file(f, "u1"),
			want:  Report{TornReads: 1},
		},
		{
			name: "torn read with no in-place write in progress",
			ev: events{
				torn:   []tornRead{{worker: "cli-0", file: f, start: 10 * msec, end: 20 * msec}},
				writes: []unguardedWrite{{file: f, marker: "u1", readStart: 1 * msec, writeStart: 2 * msec, writeEnd: 3 * msec}},
			},
			final: file(f, "u1"),
			want:  Report{TornFiles: 1},
			bad:   1,
		},
		{
			name:  "final file without END",
			ev:    events{attempts: []attempt{ok("m1", 10*msec, 20*msec)}},
			final: header(f) + "\nm1\n",
			want:  Report{Attempts: 1, TornFiles: 1, LostUpdates: 1},
			bad:   2,
		},
		{
			name:  "duplicate and unknown lines",
			ev:    events{attempts: []attempt{ok("m1", 10*msec, 20*msec)}},
			final: file(f, "m1", "m1", "garbage"),
			want:  Report{Attempts: 1},
			bad:   2,
		},
		{
			name: "unguarded marker lost while a guarded commit was in flight",
			ev: events{
				attempts: []attempt{stale("m1", 10*msec, 20*msec)},
				writes:   []unguardedWrite{{file: f, marker: "u1", readStart: 11 * msec, writeStart: 12 * msec, writeEnd: 13 * msec}},
			},
			final: file(f),
			want:  Report{Attempts: 1, UnguardedLost: 1},
		},
		{
			name: "unguarded marker lost with no guarded attempt in flight",
			ev: events{
				attempts: []attempt{ok("m1", 10*msec, 20*msec)},
				writes:   []unguardedWrite{{file: f, marker: "u1", readStart: 21 * msec, writeStart: 22 * msec, writeEnd: 23 * msec}},
			},
			final: file(f, "m1"),
			want:  Report{Attempts: 1},
			bad:   1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := &Report{Committed: map[string]int{}, Refused: map[string]int{}}
			checkMarkers(got, &tt.ev, map[string]string{f: tt.final}, allowedRefusals[ModeSoak])
			counters := func(r *Report) [8]int {
				return [8]int{r.Attempts, r.Failed, r.TornReads, r.LostToUnguarded, r.Phantoms, r.UnguardedLost, r.LostUpdates, r.TornFiles}
			}
			if counters(got) != counters(&tt.want) {
				t.Errorf("counters (attempts, failed, torn reads, lost to unguarded, phantoms, unguarded lost, lost updates, torn files) = %v, want %v",
					counters(got), counters(&tt.want))
			}
			if len(got.Violations) != tt.bad {
				t.Errorf("%d violations, want %d: %q", len(got.Violations), tt.bad, got.Violations)
			}
		})
	}
}

// commitSome makes a workspace in dir/ws with n guarded commits to one
// file by session "cli-0", and returns the attempts a client would have
// recorded.
func commitSome(t *testing.T, dir string, n int) []attempt {
	t.Helper()
	root := filepath.Join(dir, "ws")
	const f = "g00/f00.txt"
	if err := os.MkdirAll(filepath.Join(root, "g00"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, f), []byte(file(f)), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := editguard.Open(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	s := w.NewSession("cli-0")
	ctx := context.Background()
	var out []attempt
	for i := range n {
		if _, err := s.Read(ctx, f, nil); err != nil {
			t.Fatal(err)
		}
		m := "cli-0-" + string(rune('a'+i))
		if _, err := s.Edit(ctx, f, []editguard.Edit{{OldString: endLine, NewString: m + "\n" + endLine}}, nil); err != nil {
			t.Fatal(err)
		}
		out = append(out, attempt{worker: "cli-0", file: f, marker: m, outcome: acked})
	}
	return out
}

// TestCheckWorkspace damages a workspace in the ways the verification must
// notice, one at a time.
func TestCheckWorkspace(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, root string, attempts []attempt) []attempt
		want   string // a substring of a violation; "" for none
	}{
		{name: "intact", damage: func(t *testing.T, root string, a []attempt) []attempt { return a }},
		{
			name: "ledger record edited",
			damage: func(t *testing.T, root string, a []attempt) []attempt {
				p := filepath.Join(root, editguard.StateDir, "ledger.jsonl")
				data, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				data = []byte(strings.Replace(string(data), `"outcome":"ok"`, `"outcome":"OK"`, 1))
				if err := os.WriteFile(p, data, 0o644); err != nil {
					t.Fatal(err)
				}
				return a
			},
			want: "ledger does not verify",
		},
		{
			name: "client told of a commit the ledger lacks",
			damage: func(t *testing.T, root string, a []attempt) []attempt {
				return append(a, attempt{worker: "cli-0", file: a[0].file, marker: "extra", outcome: acked})
			},
			want: "ledger has 3 ok records, the client was told of 4",
		},
		{
			name: "history content removed",
			damage: func(t *testing.T, root string, a []attempt) []attempt {
				// Small contents live in their index line ("data").
				idx, err := filepath.Glob(filepath.Join(root, editguard.StateDir, "history", "index", "*.jsonl"))
				if err != nil || len(idx) == 0 {
					t.Fatalf("no history index: %v", err)
				}
				data, err := os.ReadFile(idx[0])
				if err != nil || !strings.Contains(string(data), `"data":"`) {
					t.Fatalf("history index %s holds no inline content: %v", idx[0], err)
				}
				data = []byte(strings.Replace(string(data), `"data":"`, `"lost":"`, 1))
				if err := os.WriteFile(idx[0], data, 0o644); err != nil {
					t.Fatal(err)
				}
				return a
			},
			want: "load g00/f00.txt",
		},
		{
			name: "history index truncated",
			damage: func(t *testing.T, root string, a []attempt) []attempt {
				idx, err := filepath.Glob(filepath.Join(root, editguard.StateDir, "history", "index", "*.jsonl"))
				if err != nil || len(idx) != 1 {
					t.Fatalf("history index files %q: %v", idx, err)
				}
				if err := os.WriteFile(idx[0], nil, 0o644); err != nil {
					t.Fatal(err)
				}
				return a
			},
			want: "is not in history",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			attempts := tt.damage(t, filepath.Join(dir, "ws"), commitSome(t, dir, 3))
			rep := &Report{}
			if err := checkWorkspace(rep, filepath.Join(dir, "ws"), attempts); err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				if len(rep.Violations) != 0 || rep.HistoryVersions != 3 {
					t.Errorf("intact workspace: violations %q, %d history versions; want none and 3", rep.Violations, rep.HistoryVersions)
				}
				return
			}
			found := false
			for _, v := range rep.Violations {
				found = found || strings.Contains(v, tt.want)
			}
			if !found {
				t.Errorf("violations = %q, want one containing %q", rep.Violations, tt.want)
			}
		})
	}
}

func TestCheckTempsAndEscapes(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "ws")
	for _, p := range []string{
		filepath.Join(root, "a", ".f.txt.123.egtmp"),
		filepath.Join(root, editguard.StateDir, "history", "objects", ".tmp-42"),
		filepath.Join(root, "a", "ok.egtmp"), // not a temp: no leading dot
		filepath.Join(dir, "stray.txt"),
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep := &Report{}
	checkTemps(rep, root)
	checkEscapes(rep, dir)
	if rep.LeakedTemps != 2 || rep.Escapes != 1 {
		t.Errorf("leaked temps %d, escapes %d; want 2 and 1 (violations %q)", rep.LeakedTemps, rep.Escapes, rep.Violations)
	}
}

func TestLatencies(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*msec)
	}
	got := latencies(map[string][]time.Duration{"mcp read": d})
	want := []Latency{{Op: "mcp read", N: 100, P50: 50 * msec, P99: 99 * msec, Max: 100 * msec}}
	if len(got) != 1 || got[0] != want[0] {
		t.Errorf("latencies() = %+v, want %+v", got, want)
	}
}
