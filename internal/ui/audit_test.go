package ui

import (
	"context"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/editguard/editguard"
)

// The page as a person auditing an agent's work reads it: what merged,
// what a command overwrote, what a rewind left as it was, and the
// summary of what each session did.

// readFile reads p as session s, so that its next change is checked
// against what it read.
func readFile(t *testing.T, s *editguard.Session, p string) {
	t.Helper()
	if _, err := s.Read(context.Background(), p, nil); err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
}

// staleWrite writes p as s over a file changed since s read it, and
// fails unless the write is refused with STALE_FILE.
func staleWrite(t *testing.T, s *editguard.Session, p, content string) {
	t.Helper()
	if _, err := s.Write(context.Background(), p, content, nil); !errors.Is(err, editguard.ErrStaleFile) {
		t.Fatalf("write %s over a changed file: %v, want STALE_FILE", p, err)
	}
}

// tenLines is a file whose first and last lines two writers change apart.
const tenLines = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n"

// mergedEdit makes s's edit of the last line of p merge over other's
// change of its first line, and returns the seq of other's change.
func mergedEdit(t *testing.T, s, other *editguard.Session, p string) uint64 {
	t.Helper()
	write(t, other, p, tenLines)
	readFile(t, s, p)
	write(t, other, p, strings.Replace(tenLines, "one\n", "ONE\n", 1))
	theirs := lastSeq(t, s.Workspace())
	res, err := s.Edit(context.Background(), p, []editguard.Edit{{OldString: "ten\n", NewString: "TEN\n"}}, nil)
	if err != nil {
		t.Fatalf("edit over another writer's change: %v", err)
	}
	if !res.Merged {
		t.Fatalf("the edit did not merge: %+v", res)
	}
	return theirs
}

// overwritingCommand runs a shell command of s that replaces other's
// change of p, made after s read it, and returns the seq of other's
// change.
func overwritingCommand(t *testing.T, s, other *editguard.Session, dir, p string) uint64 {
	t.Helper()
	write(t, other, p, "first\n")
	readFile(t, s, p)
	write(t, other, p, "the other writer's work\n")
	theirs := lastSeq(t, s.Workspace())
	c, err := s.BeginCommand(context.Background(), "echo mine > "+p, &editguard.CommandOptions{Tool: "Bash"})
	if err != nil {
		t.Fatal(err)
	}
	sh := exec.Command("sh", "-c", "echo mine > "+p)
	sh.Dir = dir
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	res, err := c.End(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Overwrites()) != 1 {
		t.Fatalf("the command's result names no overwrite: %+v", res)
	}
	return theirs
}

// cell returns the text of the summary's cell class of session's row.
func cell(t *testing.T, page, session, class string) string {
	t.Helper()
	row := regexp.MustCompile(`(?s)<tr data-session="` + regexp.QuoteMeta(session) + `">(.*?)</tr>`).FindStringSubmatch(page)
	if row == nil {
		t.Fatalf("the summary has no row of %s", session)
	}
	v := regexp.MustCompile(`<td class="n ` + class + `">([^<]*)</td>`).FindStringSubmatch(row[1])
	if v == nil {
		t.Fatalf("the summary's row of %s has no %s: %s", session, class, row[1])
	}
	return v[1]
}

// TestUISummary: the summary on top of the timeline counts, per session,
// the files it changed, its stale writes refused, the changes it made
// over another writer's without losing it (a merge, a command's
// overwrite), and its commands, from a ledger holding each kind.
func TestUISummary(t *testing.T) {
	f := newFixture(t)
	agent, other := f.w.NewSession("agent"), f.w.NewSession("other")
	mergedEdit(t, agent, other, "m.txt")
	overwritingCommand(t, agent, other, f.dir, "c.txt")
	// Two refused stale writes.
	conflict := func(p string) {
		write(t, other, p, "theirs before\n")
		readFile(t, agent, p)
		write(t, other, p, "theirs after\n")
		staleWrite(t, agent, p, "agent's\n")
	}
	conflict("s1.txt")
	conflict("s2.txt")
	// A second command, which changes two files and overwrites nothing.
	c, err := agent.BeginCommand(context.Background(), "touch", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"n1.txt", "n2.txt"} {
		if err := os.WriteFile(f.dir+"/"+p, []byte("new\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.End(context.Background()); err != nil {
		t.Fatal(err)
	}
	write(t, agent, "plain.txt", "plain\n")

	cl := f.client(t)
	_, page := get(t, cl, f.hs.URL, "/")
	if i, j := strings.Index(page, `id="summary"`), strings.Index(page, `id="timeline"`); i < 0 || j < 0 || i > j {
		t.Fatalf("the summary is not above the timeline (%d, %d)", i, j)
	}
	// agent changed m.txt, c.txt, n1.txt, n2.txt and plain.txt.
	for class, want := range map[string]string{"files": "5", "conflicts": "2", "caught": "2", "commands": "2"} {
		if got := cell(t, page, "agent", class); got != want {
			t.Errorf("agent's %s: %s, want %s", class, got, want)
		}
	}
	// other wrote m.txt, c.txt, s1.txt and s2.txt, twice each.
	for class, want := range map[string]string{"files": "4", "conflicts": "0", "caught": "0", "commands": "0"} {
		if got := cell(t, page, "other", class); got != want {
			t.Errorf("other's %s: %s, want %s", class, got, want)
		}
	}
	if !strings.Contains(page, `<tr class="total"><th>all 2 sessions</th><td class="n files">9</td><td class="n conflicts">2</td><td class="n caught">2</td><td class="n commands">2</td>`) {
		t.Errorf("no totals of both sessions in the summary")
	}
	// Counted again from where it stopped: a new refusal adds one.
	conflict("s3.txt")
	_, page = get(t, cl, f.hs.URL, "/")
	if got := cell(t, page, "agent", "conflicts"); got != "3" {
		t.Errorf("after another refusal agent's conflicts: %s, want 3", got)
	}
	// The session's own page shows its counts.
	_, page = get(t, cl, f.hs.URL, "/session?name=agent")
	if got := cell(t, page, "agent", "caught"); got != "2" || strings.Contains(page, `data-session="other"`) {
		t.Errorf("the session page's summary: caught %s, want 2, and no other session", got)
	}
	// With a session filter, that session alone.
	_, page = get(t, cl, f.hs.URL, "/?session=other")
	if strings.Contains(page, `data-session="agent"`) || !strings.Contains(page, `data-session="other"`) {
		t.Error("the summary of /?session=other shows other sessions, or not other")
	}
}

// TestUIMergedShown: a merged edit shows as merged, not as plain ok, on
// the timeline and in its change view, with the record of the other
// writer's change it merged over; so does a command's overwrite.
func TestUIMergedShown(t *testing.T) {
	f := newFixture(t)
	agent, other := f.w.NewSession("agent"), f.w.NewSession("other")
	theirs := mergedEdit(t, agent, other, "m.txt")
	merged := lastSeq(t, f.w)
	cl := f.client(t)
	_, page := get(t, cl, f.hs.URL, "/")
	row := regexp.MustCompile(`(?s)<tr class="row" data-seq="` + strconv.FormatUint(merged, 10) + `".*?</tr>`).FindString(page)
	if !strings.Contains(row, `>merged</span>`) || !strings.Contains(row, `over <a href="/change/`+strconv.FormatUint(theirs, 10)+`">record `+strconv.FormatUint(theirs, 10)+`</a> (other)`) {
		t.Fatalf("the merged edit's row does not say it merged over record %d:\n%s", theirs, row)
	}
	_, page = get(t, cl, f.hs.URL, "/change/"+strconv.FormatUint(merged, 10))
	over := regexp.MustCompile(`(?s)<tr id="over">.*?</tr>`).FindString(page)
	if !strings.Contains(over, "merged over") || !strings.Contains(over, `record `+strconv.FormatUint(theirs, 10)) ||
		!strings.Contains(over, sum(strings.Replace(tenLines, "one\n", "ONE\n", 1))) {
		t.Fatalf("the change view does not name what it merged over:\n%s", over)
	}
	if !strings.Contains(page, "the session had read") || !strings.Contains(page, sum(tenLines)) {
		t.Error("the change view does not say what the session had read")
	}

	// Over a change made outside editguard: no record left it.
	write(t, other, "x.txt", tenLines)
	readFile(t, agent, "x.txt")
	if err := os.WriteFile(f.dir+"/x.txt", []byte(strings.Replace(tenLines, "one\n", "1\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if res, err := agent.Edit(context.Background(), "x.txt", []editguard.Edit{{OldString: "ten\n", NewString: "10\n"}}, nil); err != nil || !res.Merged {
		t.Fatalf("the edit over a change outside editguard: %v, want merged", err)
	}
	_, page = get(t, cl, f.hs.URL, "/change/"+strconv.FormatUint(lastSeq(t, f.w), 10))
	over = regexp.MustCompile(`(?s)<tr id="over">.*?</tr>`).FindString(page)
	if !strings.Contains(over, "none of this file's 64 records before this one left") || strings.Contains(over, "record ") {
		t.Errorf("the change view of a merge over a change outside editguard:\n%s", over)
	}

	theirs = overwritingCommand(t, agent, other, f.dir, "c.txt")
	overwrote := seqOf(t, f.w, "c.txt")
	_, page = get(t, cl, f.hs.URL, "/change/"+strconv.FormatUint(overwrote, 10))
	over = regexp.MustCompile(`(?s)<tr id="over">.*?</tr>`).FindString(page)
	if !strings.Contains(over, "overwrote") || !strings.Contains(over, `record `+strconv.FormatUint(theirs, 10)) {
		t.Fatalf("the command's change view does not name the change it overwrote (record %d):\n%s", theirs, over)
	}
	// A patch's records keep their transaction's strategy: its merge
	// shows by the content it changed not being what the session read.
	write(t, other, "p.txt", tenLines)
	readFile(t, agent, "p.txt")
	write(t, other, "p.txt", strings.Replace(tenLines, "one\n", "ONE\n", 1))
	theirs = lastSeq(t, f.w)
	pres, err := agent.ApplyPatch(context.Background(), "*** Begin Patch\n*** Update File: p.txt\n@@\n eight\n nine\n-ten\n+TEN\n*** End Patch\n", nil)
	if err != nil || len(pres.Files) != 1 || !pres.Files[0].Merged {
		t.Fatalf("the patch over another writer's change: %+v, %v; want merged", pres, err)
	}
	patched := lastSeq(t, f.w)
	_, page = get(t, cl, f.hs.URL, "/?path=p.txt")
	row = regexp.MustCompile(`(?s)<tr class="row" data-seq="` + strconv.FormatUint(patched, 10) + `".*?</tr>`).FindString(page)
	if !strings.Contains(row, `>merged</span>`) || !strings.Contains(row, `record `+strconv.FormatUint(theirs, 10)) {
		t.Errorf("the merged patch's row does not say it merged over record %d:\n%s", theirs, row)
	}
	// A patch that did not merge is plain ok.
	readFile(t, agent, "p.txt")
	if _, err := agent.ApplyPatch(context.Background(), "*** Begin Patch\n*** Update File: p.txt\n@@\n eight\n nine\n-TEN\n+ten!\n*** End Patch\n", nil); err != nil {
		t.Fatal(err)
	}
	_, page = get(t, cl, f.hs.URL, "/?path=p.txt")
	row = regexp.MustCompile(`(?s)<tr class="row" data-seq="` + strconv.FormatUint(lastSeq(t, f.w), 10) + `".*?</tr>`).FindString(page)
	if !strings.Contains(row, `<span class="outcome ok">ok</span>`) {
		t.Errorf("a patch that did not merge is not plain ok:\n%s", row)
	}
	// Nor does one whose precondition, given in place of a read, names the
	// file as another writer left it.
	write(t, other, "p.txt", "theirs\n")
	pre := map[string]*editguard.Precondition{"p.txt": {ExpectedSHA256: sum("theirs\n")}}
	if _, err := agent.ApplyPatch(context.Background(), "*** Begin Patch\n*** Update File: p.txt\n@@\n-theirs\n+mine\n*** End Patch\n", &editguard.PatchOptions{Preconditions: pre}); err != nil {
		t.Fatal(err)
	}
	_, page = get(t, cl, f.hs.URL, "/?path=p.txt")
	row = regexp.MustCompile(`(?s)<tr class="row" data-seq="` + strconv.FormatUint(lastSeq(t, f.w), 10) + `".*?</tr>`).FindString(page)
	if !strings.Contains(row, `<span class="outcome ok">ok</span>`) {
		t.Errorf("a patch under a precondition is not plain ok:\n%s", row)
	}

	// The outcome filter finds each, and ok still lists both.
	for _, q := range []struct {
		outcome string
		seq     uint64
	}{{"merged", merged}, {"overwrote", overwrote}, {"ok", merged}, {"ok", overwrote}} {
		if _, page := get(t, cl, f.hs.URL, "/?outcome="+q.outcome); !strings.Contains(page, `data-seq="`+strconv.FormatUint(q.seq, 10)+`"`) {
			t.Errorf("/?outcome=%s does not list record %d", q.outcome, q.seq)
		}
	}
}

// TestUIRewindUnchangedNeutral: a rewind's files that already held what
// they held before are not refusals: the timeline folds them under a
// count, shown neutral, and the refused filter leaves them out.
func TestUIRewindUnchangedNeutral(t *testing.T) {
	f := newFixture(t)
	agent, setup := f.w.NewSession("agent"), f.w.NewSession("setup")
	write(t, setup, "c.txt", "before\n")
	write(t, agent, "c.txt", "after\n")
	// The session changes u1 and u2 and then puts them back as they were.
	for _, p := range []string{"u1.txt", "u2.txt"} {
		write(t, setup, p, "x\n")
		write(t, agent, p, "y\n")
		write(t, agent, p, "x\n")
	}
	res, err := f.ui.Rewind(context.Background(), "agent", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Unchanged) != 2 || len(res.Rewound) != 1 {
		t.Fatalf("the rewind: %+v, want c.txt rewound and two files unchanged", res)
	}
	cl := f.client(t)
	_, page := get(t, cl, f.hs.URL, "/?session=ui-test")
	if strings.Contains(page, `class="outcome refused"`) {
		t.Errorf("the rewind shows a refusal:\n%s", page)
	}
	fold := regexp.MustCompile(`<details class="unchanged"><summary>(\d+) unchanged</summary>`).FindStringSubmatch(page)
	if fold == nil || fold[1] != strconv.Itoa(len(res.Unchanged)) {
		t.Fatalf("the rewind's unchanged files are not folded under their count %d: %v\n%s", len(res.Unchanged), fold, page)
	}
	if !strings.Contains(page, `<span class="outcome other" title="the file already held what it held before the rewound session's changes">unchanged</span>`) {
		t.Error("an unchanged file is not shown neutral")
	}
	if _, page := get(t, cl, f.hs.URL, "/?outcome=refused&session=ui-test"); strings.Contains(page, "u1.txt") {
		t.Error("the refused filter lists a rewind's unchanged file")
	}
	// Each of its records opens to the rewind's files.
	_, page = get(t, cl, f.hs.URL, "/change/"+strconv.FormatUint(lastSeq(t, f.w), 10))
	if !strings.Contains(page, `<h2 id="group">the 3 files of this rewind</h2>`) {
		t.Errorf("the change view of a rewind's record does not name the rewind's files:\n%s", page)
	}
}

// TestUIRefusalHintWords: a refusal's hint is said in command-line words
// for a change made at the command line, in the model's words for one an
// MCP session made.
func TestUIRefusalHintWords(t *testing.T) {
	f := newFixture(t)
	other := f.w.NewSession("other")
	cl := f.client(t)
	for _, tc := range []struct {
		session, want, not string
	}{
		{"cli-uid1000", "run editguard read f-cli.txt", "read_file"},
		{"mcp-1b2c3d4e", "call read_file on f-mcp.txt", "editguard read"},
		{"claude-7f3a21", "call read_file on f-claude.txt", "editguard read"},
	} {
		s := f.w.NewSession(tc.session)
		p := "f-" + tc.session[:strings.Index(tc.session, "-")] + ".txt"
		write(t, other, p, "first\n")
		readFile(t, s, p)
		write(t, other, p, "second\n")
		staleWrite(t, s, p, "mine\n")
		_, page := get(t, cl, f.hs.URL, "/change/"+strconv.FormatUint(lastSeq(t, f.w), 10))
		hint := regexp.MustCompile(`<p class="hint">([^<]*)</p>`).FindStringSubmatch(page)
		if hint == nil || !strings.Contains(hint[1], tc.want) || strings.Contains(hint[1], tc.not) {
			t.Errorf("%s's refusal hint: %q, want %q and no %q", tc.session, hint, tc.want, tc.not)
		}
	}
	if got := shellWord("it's -x"); got != `'it'\''s -x'` {
		t.Errorf("shellWord: %s", got)
	}
	if got := shellWord("-x"); got != "./-x" {
		t.Errorf("shellWord(-x): %s", got)
	}
}

// TestUISnapshotStatus: the timeline's status says what the page is: a
// snapshot of when it was made until the live updates answer, and with
// ?snapshot=1 a snapshot that does not ask for them.
func TestUISnapshotStatus(t *testing.T) {
	f := newFixture(t)
	write(t, f.w.NewSession("agent"), "a.txt", "a\n")
	cl := f.client(t)
	_, page := get(t, cl, f.hs.URL, "/")
	status := regexp.MustCompile(`<span id="live"[^>]*data-state="snapshot"[^>]*>snapshot of \d{4}-\d\d-\d\d \d\d:\d\d:\d\d</span>`)
	if !status.MatchString(page) || !strings.Contains(page, `data-updates="/updates"`) {
		t.Fatalf("the timeline's status or its updates' address is missing:\n%s", page)
	}
	if strings.Contains(page, "connecting") {
		t.Error("the status still says connecting")
	}
	_, page = get(t, cl, f.hs.URL, "/?snapshot=1&"+url.Values{"session": {"agent"}}.Encode())
	if !status.MatchString(page) || strings.Contains(page, "data-updates") {
		t.Fatalf("a snapshot asks for live updates, or does not say it is one:\n%s", page)
	}
}

// TestUIWriterUnknownShown: a shell command's change whose writer nothing
// told (a command begun with WriterUnknown) shows as writer_unknown,
// neutral, with its meaning in the title; the outcome filter finds it,
// and ok lists it too.
func TestUIWriterUnknownShown(t *testing.T) {
	f := newFixture(t)
	agent := f.w.NewSession("agent")
	c, err := agent.BeginCommand(context.Background(), "echo new > u.txt", &editguard.CommandOptions{Tool: "Bash", WriterUnknown: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.dir+"/u.txt", []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.End(context.Background()); err != nil {
		t.Fatal(err)
	}
	seq := seqOf(t, f.w, "u.txt")
	cl := f.client(t)
	_, page := get(t, cl, f.hs.URL, "/")
	row := regexp.MustCompile(`(?s)<tr class="row" data-seq="` + strconv.FormatUint(seq, 10) + `".*?</tr>`).FindString(page)
	if !strings.Contains(row, `<span class="outcome other" title="made while a shell command ran, by the command or by someone else`) || !strings.Contains(row, `>writer_unknown</span>`) {
		t.Fatalf("the command's change by a writer unknown is not shown so:\n%s", row)
	}
	for _, q := range []string{"writer_unknown", "ok"} {
		if _, page := get(t, cl, f.hs.URL, "/?outcome="+q); !strings.Contains(page, `data-seq="`+strconv.FormatUint(seq, 10)+`"`) {
			t.Errorf("/?outcome=%s does not list record %d", q, seq)
		}
	}
}
