//go:build unix

package editguard_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/hookwire"
)

// runShell runs script with sh in dir, as an agent's shell tool would.
func runShell(t *testing.T, dir, script string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sh -c %q: %v\n%s", script, err, out)
	}
}

// runCommand runs script with sh in dir between two checkpoints of s and
// returns what End recorded.
func runCommand(t *testing.T, s *editguard.Session, dir, script string) *editguard.CommandResult {
	t.Helper()
	return runCommandOpts(t, s, dir, script, nil)
}

// runCommandOpts is runCommand with the command's options.
func runCommandOpts(t *testing.T, s *editguard.Session, dir, script string, opts *editguard.CommandOptions) *editguard.CommandResult {
	t.Helper()
	c, err := s.BeginCommand(ctx, script, opts)
	if err != nil {
		t.Fatal(err)
	}
	runShell(t, dir, script)
	res, err := c.End(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestCommandRecordsEveryChange runs a real shell script between two
// checkpoints that rewrites 100 files (CRLF, UTF-16 and binary ones among
// them), deletes 10, creates 5 and moves one: every change is in the
// result and the ledger with the command, history keeps every displaced
// content byte for byte, and a rewind of the session puts every file back
// exactly.
func TestCommandRecordsEveryChange(t *testing.T) {
	w, dir := newWorkspace(t)
	orig := map[string][]byte{}
	for i := range 110 {
		orig[fmt.Sprintf("src/f%03d.txt", i)] = []byte(fmt.Sprintf("line %d\nsecond line\n", i))
	}
	orig["crlf.txt"] = []byte("one\r\ntwo\r\n")
	orig["utf16.txt"] = []byte{0xff, 0xfe, 'h', 0, 'i', 0, '\n', 0}
	orig["blob.bin"] = []byte{0, 1, 2, 3, 0xff, 0xfe, 0, 'x'}
	orig["moved.txt"] = []byte("I move\n")
	for p, b := range orig {
		writeFile(t, dir, p, string(b))
	}
	s := w.NewSession("agent")
	c, err := s.BeginCommand(ctx, "the script", nil)
	if err != nil {
		t.Fatal(err)
	}
	runShell(t, dir, `
for i in $(seq -w 0 96); do sed -i 's/second/2nd/' src/f0$i.txt 2>/dev/null || sed -i 's/second/2nd/' src/f$i.txt; done
for i in 100 101 102 103 104 105 106 107 108 109; do rm src/f$i.txt; done
sed -i 's/second/2nd/' src/f097.txt src/f098.txt src/f099.txt
printf 'one\r\nTWO\r\n' > crlf.txt
printf '\377\376b\000y\000\n\000' > utf16.txt
printf '\000\001\002\003' > blob.bin
mkdir -p new/dir && for i in 1 2 3 4; do echo "new $i" > new/dir/n$i.txt; done
mv moved.txt new/moved.txt
`)
	res, err := c.End(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]int{}
	for _, ch := range res.Changes {
		ops[ch.Op]++
	}
	// 100 rewritten + crlf, utf16, blob; 10 deleted + the move's source;
	// 4 created + the move's destination.
	if ops["changed"] != 103 || ops["deleted"] != 11 || ops["created"] != 5 {
		t.Fatalf("changes by kind = %v, want 103 changed, 11 deleted, 5 created", ops)
	}
	recorded := map[string]bool{}
	w.Log(editguard.LogFilter{Tool: "exec"}, func(r *editguard.LedgerRecord) error {
		if r.Outcome == "ok" && strings.Contains(string(r.Args), "the script") {
			recorded[r.Path] = true
		}
		return nil
	})
	if len(recorded) != len(res.Changes) {
		t.Errorf("ledger holds %d exec records with the command, want %d", len(recorded), len(res.Changes))
	}
	for _, ch := range res.Changes {
		if ch.Op == "created" {
			continue
		}
		got, err := editguard.VersionContent(w, ch.Path, ch.BackupVersion)
		if err != nil || !bytes.Equal(got, orig[ch.Path]) {
			t.Errorf("history %s of %s = %q, %v; want %q", ch.BackupVersion, ch.Path, got, err, orig[ch.Path])
		}
	}
	rw, err := s.Rewind(ctx, "agent", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rw.Refused) != 0 {
		t.Fatalf("rewind refused %v", rw.Refused)
	}
	for p, want := range orig {
		if got, err := os.ReadFile(filepath.Join(dir, p)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("after rewind %s = %q, %v; want %q", p, got, err, want)
		}
	}
	for i := 1; i <= 4; i++ {
		if _, err := os.Stat(filepath.Join(dir, "new/dir", fmt.Sprintf("n%d.txt", i))); !os.IsNotExist(err) {
			t.Errorf("created file n%d.txt is still there after rewind: %v", i, err)
		}
	}
	if _, err := w.VerifyLedger(); err != nil {
		t.Fatal(err)
	}
}

// TestCommandCatchesLostUpdate: session A reads f, a person changes f, and
// A's shell command overwrites it. The result says so, history keeps the
// person's version, and a restore brings it back.
func TestCommandCatchesLostUpdate(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "f.txt", "as A read it\n")
	writeFile(t, dir, "g.txt", "untouched by the person\n")
	a := w.NewSession("A")
	for _, p := range []string{"f.txt", "g.txt"} {
		if _, err := a.Read(ctx, p, nil); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, dir, "f.txt", "the person's work\n")
	c, err := a.BeginCommand(ctx, "cat > f.txt", &editguard.CommandOptions{Tool: "Bash"})
	if err != nil {
		t.Fatal(err)
	}
	runShell(t, dir, "echo 'A overwrites' > f.txt; echo 'A edits' > g.txt")
	res, err := c.End(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ow := res.Overwrites()
	if len(ow) != 1 || ow[0].Path != "f.txt" {
		t.Fatalf("Overwrites() = %+v, want f.txt alone", ow)
	}
	got, err := editguard.VersionContent(w, "f.txt", ow[0].BackupVersion)
	if err != nil || string(got) != "the person's work\n" {
		t.Fatalf("history %s = %q, %v; want the person's version", ow[0].BackupVersion, got, err)
	}
	// The ledger says which of the command's records overwrote, so that
	// a reader of the ledger alone sees it.
	overwrote := map[string]bool{}
	if err := w.Log(editguard.LogFilter{Session: "A"}, func(r *editguard.LedgerRecord) error {
		var args struct {
			Overwrote bool `json:"overwrote"`
		}
		if err := json.Unmarshal(r.Args, &args); err != nil {
			return err
		}
		overwrote[r.Path] = args.Overwrote
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(overwrote) != 2 || !overwrote["f.txt"] || overwrote["g.txt"] {
		t.Fatalf("the command's records say overwrote %v, want f.txt only", overwrote)
	}
	// A's session knows the file as its command left it: the restore is
	// a guarded change like any other.
	if _, err := a.Restore(ctx, "f.txt", ow[0].BackupVersion, nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f.txt")); string(b) != "the person's work\n" {
		t.Fatalf("f.txt after restore = %q", b)
	}
}

// TestCommandConcurrentToolChange: a change another session makes through
// editguard while the command runs is already in the ledger; End names it
// and does not record it twice.
func TestCommandConcurrentToolChange(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "mine.txt", "mine\n")
	writeFile(t, dir, "theirs.txt", "theirs\n")
	a, b := w.NewSession("A"), w.NewSession("B")
	c, err := a.BeginCommand(ctx, "echo >> mine.txt", nil)
	if err != nil {
		t.Fatal(err)
	}
	runShell(t, dir, "echo more >> mine.txt")
	if _, err := b.Read(ctx, "theirs.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Write(ctx, "theirs.txt", "B's change\n", nil); err != nil {
		t.Fatal(err)
	}
	res, err := c.End(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var theirs *editguard.CommandChange
	for i := range res.Changes {
		if res.Changes[i].Path == "theirs.txt" {
			theirs = &res.Changes[i]
		}
	}
	if theirs == nil || !strings.Contains(theirs.ChangedBy, "B write_file") {
		t.Fatalf("theirs.txt change = %+v, want it named as B's write_file", theirs)
	}
	n := 0
	w.Log(editguard.LogFilter{Path: "theirs.txt"}, func(r *editguard.LedgerRecord) error {
		if r.Outcome == "ok" {
			n++
		}
		return nil
	})
	if n != 1 {
		t.Errorf("theirs.txt has %d ok records, want B's alone", n)
	}
}

// TestCommandIncrementalCheckpoint: a second command's checkpoints read
// only what changed since; a file changed between two commands (by anyone)
// is stored before the next command runs, so what that command displaces
// is kept.
func TestCommandIncrementalCheckpoint(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "f.txt", "v1\n")
	s := w.NewSession("s")
	for _, script := range []string{"echo v2 > f.txt", "echo v4 > f.txt"} {
		res := runCommand(t, s, dir, script)
		if len(res.Changes) != 1 {
			t.Fatalf("%s: changes %+v", script, res.Changes)
		}
		// Between the commands, someone else writes v3.
		writeFile(t, dir, "f.txt", "v3\n")
	}
	vs, err := w.History("f.txt")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range vs {
		b, _ := editguard.VersionContent(w, "f.txt", v.ID)
		got = append(got, string(b))
	}
	if strings.Join(got, "") != "v3\nv1\n" {
		t.Errorf("history of f.txt, newest first = %q; want v3 then v1", got)
	}
	objs, _ := os.ReadDir(filepath.Join(dir, ".editguard", "checkpoints", "objects"))
	if len(objs) != 1 {
		t.Errorf("the checkpoint store holds %d objects after the commands, want the current content alone", len(objs))
	}
}

// TestRewindKeepsAFileWhoseContentWasNotKept: a command shrinks a file that
// was over the size limit, so its content before was never checkpointed; a
// rewind of the session must refuse that file, not delete it.
func TestRewindKeepsAFileWhoseContentWasNotKept(t *testing.T) {
	dir := t.TempDir()
	w, err := editguard.Open(dir, &editguard.Options{MaxFileSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	writeFile(t, dir, "big.txt", strings.Repeat("x", 2700))
	s := w.NewSession("s")
	c, err := s.BeginCommand(ctx, "shrink", nil)
	if err != nil {
		t.Fatal(err)
	}
	runShell(t, dir, "echo small > big.txt")
	if _, err := c.End(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := s.Rewind(ctx, "s", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Refused) != 1 || len(res.Rewound) != 0 {
		t.Errorf("rewind: rewound %v, refused %v; want big.txt refused", res.Rewound, res.Refused)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "big.txt")); err != nil || string(b) != "small\n" {
		t.Fatalf("big.txt after the rewind = %q, %v; want it kept as the command left it", b, err)
	}
}

// TestActiveCommandsWhereHooksLook: a command in progress has its record
// where a hook looks for one (hookwire.ActiveCommands) to answer the event
// after a batch of tool calls without a server, and none is left there
// once it ends.
func TestActiveCommandsWhereHooksLook(t *testing.T) {
	w, dir := newWorkspace(t)
	s, err := w.OpenSession("agent")
	if err != nil {
		t.Fatal(err)
	}
	batch := []byte(`{"session_id":"s","hook_event_name":"PostToolBatch"}`)
	c, err := s.BeginCommand(ctx, "true", &editguard.CommandOptions{ID: "h-1"})
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(filepath.Join(dir, hookwire.ActiveCommands))
	if err != nil || len(ents) != 1 {
		t.Fatalf("%s holds %v (%v), want the command's record", hookwire.ActiveCommands, ents, err)
	}
	if hookwire.NothingToEnd(dir, batch) {
		t.Error("a command in progress, and NothingToEnd")
	}
	if _, err := c.End(ctx); err != nil {
		t.Fatal(err)
	}
	if !hookwire.NothingToEnd(dir, batch) {
		t.Error("no command in progress, and something to end")
	}
}
