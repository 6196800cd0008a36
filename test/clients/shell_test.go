package clients

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// treeSums maps every file under ws (but .editguard and .claude) to its
// SHA-256.
func treeSums(t testing.TB, ws string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(ws, p)
		if d.IsDir() && (rel == ".editguard" || rel == ".claude" || rel == ".gemini" || rel == ".codex") {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s := sha256.Sum256(b)
			out[rel] = hex.EncodeToString(s[:])
		}
		return nil
	})
	return out
}

// TestClaudeCodeBashHooks runs Claude Code, its model changing files only
// through Bash (sed -i, a heredoc, python3 writing two files, mv, rm,
// mkdir -p), with a CRLF, a UTF-16 and a binary file among the targets,
// under the hooks init --hooks writes. Afterwards the ledger lists each
// change with its command, a rewind of the session puts every file back
// exactly (by SHA-256), and verify passes. Then a lost update: the session
// reads a file, a person changes it, and a Bash heredoc overwrites it; the
// model is told, and the person's version is in history.
func TestClaudeCodeBashHooks(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"crlf.txt":  []byte("one\r\ntwo\r\n"),
		"utf16.txt": {0xff, 0xfe, 'h', 0, 'i', 0, '\n', 0},
		"blob.bin":  {0, 1, 2, 3, 0xff, 0xfe, 0, 'x'},
		"notes.md":  []byte("# notes\nold\n"),
		"a.py":      []byte("print(1)\n"),
		"gone.txt":  []byte("to be removed\n"),
		"shared.md": []byte("as the session read it\n"),
	}
	for p, b := range files {
		if err := os.WriteFile(filepath.Join(ws, p), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	settings, _ := json.MarshalIndent(map[string]any{
		"permissions": map[string]any{"allow": []string{"Read", "Edit", "Write", "Bash"}},
	}, "", "  ")
	os.MkdirAll(filepath.Join(ws, ".claude"), 0o755)
	if err := os.WriteFile(filepath.Join(ws, ".claude", "settings.json"), settings, 0o644); err != nil {
		t.Fatal(err)
	}
	initHooks(t, ws, "claude-code")
	before := treeSums(t, ws)
	bash := func(cmd string) Step {
		return Step{Tool: "Bash", Input: map[string]any{"command": cmd, "description": "change files"}}
	}
	script := []Step{
		bash("sed -i 's/one/ONE/' crlf.txt"),
		bash("cat > notes.md <<'EOF'\n# notes\nrewritten\nEOF"),
		bash(`python3 -c "open('a.py','w').write('print(2)\n'); open('gen.txt','w').write('generated\n')"`),
		bash("mv blob.bin moved.bin"),
		bash(`printf '\377\376b\000y\000\n\000' > utf16.txt && rm gone.txt`),
		bash("mkdir -p d && echo x > d/e"),
	}
	run := runClaudeProject(t, ws, true, script)
	logRun(t, run)
	if len(run.Results) != len(script) {
		dumpRun(t, run)
		t.Fatalf("got %d tool results for %d steps", len(run.Results), len(script))
	}
	bin := editguardBin(t)
	eg := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append([]string{"--root", ws}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("editguard %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	log := eg("log")
	t.Logf("editguard log:\n%s", log)
	want := map[string]string{"crlf.txt": "sed -i", "notes.md": "cat > notes.md", "a.py": "python3 -c", "gen.txt": "python3 -c",
		"blob.bin": "mv blob.bin", "moved.bin": "mv blob.bin", "utf16.txt": "printf", "gone.txt": "rm gone.txt", "d/e": "mkdir -p d"}
	var recs []struct {
		Session string          `json:"session"`
		Tool    string          `json:"tool"`
		Path    string          `json:"path"`
		Args    json.RawMessage `json:"args"`
	}
	for _, line := range ledgerRecords(t, []byte(eg("log", "--json"))) {
		var r struct {
			Session string          `json:"session"`
			Tool    string          `json:"tool"`
			Path    string          `json:"path"`
			Args    json.RawMessage `json:"args"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	session := ""
	for p, cmd := range want {
		found := false
		for _, r := range recs {
			var a struct {
				Command string `json:"command"`
			}
			json.Unmarshal(r.Args, &a)
			if r.Path == p && r.Tool == "Bash" && strings.Contains(a.Command, cmd) {
				found, session = true, r.Session
			}
		}
		if !found {
			t.Errorf("the ledger has no Bash record of %s with its command (%q)", p, cmd)
		}
	}
	if session == "" {
		t.Fatal("no session recorded")
	}
	eg("verify")
	// Nothing told the commands' writes from anyone else's: rewind
	// leaves them unless forced.
	if out, err := exec.Command(bin, "--root", ws, "rewind", "--session", session).CombinedOutput(); err == nil || !strings.Contains(string(out), "by the command or by someone else") {
		t.Errorf("rewind --session %s without --force: %v, want it refused (writer unknown)\n%s", session, err, out)
	}
	eg("rewind", "--session", session, "--force")
	if got := treeSums(t, ws); !equalSums(got, before) {
		t.Errorf("after rewind --session %s the tree is not as before:\n got %v\nwant %v", session, got, before)
	}

	// A lost update through the shell.
	shared := filepath.Join(ws, "shared.md")
	script = []Step{
		{Tool: "Read", Input: map[string]any{"file_path": shared}},
		{Tool: "Bash", Input: map[string]any{"command": "cat > shared.md <<'EOF'\nthe model's version\nEOF", "description": "rewrite"},
			Before: personChange(shared, "a person's change\n")},
	}
	run = runClaudeProject(t, ws, true, script)
	logRun(t, run)
	if len(run.Results) != len(script) {
		dumpRun(t, run)
		t.Fatalf("got %d tool results for %d steps", len(run.Results), len(script))
	}
	told := false
	for _, r := range run.Results {
		text := r.Content + strings.Join(r.Parts, "") + r.Along
		if strings.Contains(text, "overwrote changes someone else made") && strings.Contains(text, "shared.md") {
			told = true
		}
	}
	if !told {
		t.Errorf("the model was not told that the command overwrote a person's change to shared.md")
	}
	hist := eg("history", "shared.md", "--json")
	var h struct {
		Versions []struct {
			ID string `json:"version"`
		} `json:"versions"`
	}
	json.Unmarshal([]byte(hist), &h)
	found := false
	for _, v := range h.Versions {
		if out := eg("diff", "shared.md", v.ID); strings.Contains(out, "a person's change") {
			found = true
		}
	}
	if !found {
		t.Errorf("the person's version of shared.md is not in history:\n%s", hist)
	}
}

// TestClaudeCodeBashPersonSaves runs Claude Code under the hooks init
// --hooks writes. The model reads a.txt and c.txt, then runs a Bash
// command that waits while a person saves a.txt as most editors do (a new
// file renamed over it) and c.txt in place, and then changes b.txt; then
// it edits a.txt. Nothing tells the
// command's writes from the person's: the ledger records both changes as
// made by a writer unknown, the tool's result tells the model that a.txt
// changed while the command ran, the session's read does not move to the
// person's version (the model's Edit is refused as not read), and a
// rewind of the session leaves the person's save unless forced.
func TestClaudeCodeBashPersonSaves(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(ws, "a.txt"), filepath.Join(ws, "b.txt")
	os.WriteFile(a, []byte("as the model read it\n"), 0o644)
	os.WriteFile(b, []byte("b one\n"), 0o644)
	c := filepath.Join(ws, "c.txt")
	os.WriteFile(c, []byte("c as the model read it\n"), 0o644)
	settings, _ := json.MarshalIndent(map[string]any{
		"permissions": map[string]any{"allow": []string{"Read", "Edit", "Write", "Bash"}},
	}, "", "  ")
	os.MkdirAll(filepath.Join(ws, ".claude"), 0o755)
	if err := os.WriteFile(filepath.Join(ws, ".claude", "settings.json"), settings, 0o644); err != nil {
		t.Fatal(err)
	}
	initHooks(t, ws, "claude-code")
	// The command waits on a FIFO for the person's save.
	fifos := t.TempDir()
	started, proceed := filepath.Join(fifos, "started"), filepath.Join(fifos, "proceed")
	for _, f := range []string{started, proceed} {
		if err := syscall.Mkfifo(f, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	person := make(chan error, 1)
	go func() {
		person <- func() error {
			sf, err := os.Open(started) // the command is running
			if err != nil {
				return err
			}
			io.ReadAll(sf)
			sf.Close()
			tmp := filepath.Join(ws, ".a.txt.swp")
			if err := os.WriteFile(tmp, []byte("a person's save\n"), 0o644); err != nil {
				return err
			}
			if err := os.Rename(tmp, a); err != nil {
				return err
			}
			if err := os.WriteFile(c, []byte("c saved in place\n"), 0o644); err != nil {
				return err
			}
			pf, err := os.OpenFile(proceed, os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer pf.Close()
			_, err = pf.WriteString("go\n")
			return err
		}()
	}()
	command := "echo > " + started + "; read x < " + proceed + "; sed -i 's/one/two/' b.txt"
	script := []Step{
		{Tool: "Read", Input: map[string]any{"file_path": a}},
		{Tool: "Read", Input: map[string]any{"file_path": c}},
		{Tool: "Bash", Input: map[string]any{"command": command, "description": "change b.txt"}},
		{Tool: "Edit", Input: map[string]any{"file_path": a, "old_string": "a person's save", "new_string": "the model's line"}},
	}
	run := runClaudeProject(t, ws, true, script)
	logRun(t, run)
	if err := <-person; err != nil {
		t.Fatalf("the person's save: %v", err)
	}
	if len(run.Results) != len(script) {
		dumpRun(t, run)
		t.Fatalf("got %d tool results for %d steps", len(run.Results), len(script))
	}
	text := func(i int) string { r := run.Results[i]; return r.Content + strings.Join(r.Parts, "") + r.Along }
	if bash := text(2); !strings.Contains(bash, "changed while the command ran") || !strings.Contains(bash, "- a.txt") || !strings.Contains(bash, "- c.txt") {
		dumpRun(t, run)
		t.Errorf("the Bash result does not tell the model that a.txt and c.txt changed while the command ran:\n%s", bash)
	}
	if edit := text(3); !strings.Contains(edit, "by the command or by someone else") {
		dumpRun(t, run)
		t.Errorf("the Edit of a.txt after the command was not refused as not read:\n%s", edit)
	}
	if got, _ := os.ReadFile(a); string(got) != "a person's save\n" {
		t.Fatalf("a.txt = %q, want the person's save", got)
	}
	bin := editguardBin(t)
	eg := func(args ...string) (string, error) {
		out, err := exec.Command(bin, append([]string{"--root", ws}, args...)...).CombinedOutput()
		return string(out), err
	}
	out, err := eg("log", "--json")
	if err != nil {
		t.Fatalf("log: %v\n%s", err, out)
	}
	session, unknown := "", map[string]bool{}
	for _, line := range ledgerRecords(t, []byte(out)) {
		var r struct {
			Session string `json:"session"`
			Tool    string `json:"tool"`
			Path    string `json:"path"`
			Args    struct {
				WriterUnknown bool `json:"writer_unknown"`
			} `json:"args"`
		}
		json.Unmarshal(line, &r)
		if r.Tool == "Bash" {
			session, unknown[r.Path] = r.Session, r.Args.WriterUnknown
		}
	}
	if !unknown["a.txt"] || !unknown["b.txt"] || !unknown["c.txt"] {
		t.Fatalf("the ledger's Bash records, writer_unknown by path: %v (want a.txt, b.txt and c.txt)\n%s", unknown, out)
	}
	out, err = eg("rewind", "--session", session)
	if err == nil || !strings.Contains(out, "by the command or by someone else") {
		t.Errorf("rewind --session %s: %v, want the command's changes refused\n%s", session, err, out)
	}
	if got, _ := os.ReadFile(a); string(got) != "a person's save\n" {
		t.Errorf("a.txt after the rewind = %q, want the person's save", got)
	}
	if got, _ := os.ReadFile(c); string(got) != "c saved in place\n" {
		t.Errorf("c.txt after the rewind = %q, want the person's save", got)
	}
}

func equalSums(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// shellRecords returns, per path, the commands of the ledger's records of
// tool for ws.
func shellRecords(t testing.TB, ws, tool string) (map[string]string, string) {
	t.Helper()
	out, err := exec.Command(editguardBin(t), "--root", ws, "log", "--reverse", "--json").Output()
	if err != nil {
		t.Fatalf("editguard log: %v", err)
	}
	got, session := map[string]string{}, ""
	for _, line := range ledgerRecords(t, out) {
		var r struct {
			Session string          `json:"session"`
			Tool    string          `json:"tool"`
			Path    string          `json:"path"`
			Outcome string          `json:"outcome"`
			Args    json.RawMessage `json:"args"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		var a struct {
			Command string `json:"command"`
		}
		json.Unmarshal(r.Args, &a)
		if r.Tool == tool && r.Outcome == "ok" {
			got[r.Path], session = a.Command, r.Session
		}
	}
	return got, session
}

// TestGeminiAndCodexShellHooks: the shell tools of Gemini CLI
// (run_shell_command) and Codex (exec_command, whose hook events Codex
// names Bash) under the hooks init --hooks writes: each file a command
// changes is recorded with the command, a rewind of the session puts the
// tree back exactly, and a command that overwrites a person's change to a
// file the session had written is told to the model.
func TestGeminiAndCodexShellHooks(t *testing.T) {
	for _, client := range []string{"gemini", "codex"} {
		t.Run(client, func(t *testing.T) {
			ws, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			for p, b := range map[string]string{"crlf.txt": "one\r\ntwo\r\n", "gone.txt": "bye\n", "shared.md": "v1\n"} {
				os.WriteFile(filepath.Join(ws, p), []byte(b), 0o644)
			}
			initHooks(t, ws, client)
			before := treeSums(t, ws)
			tool, input := "run_shell_command", func(cmd string) any { return map[string]any{"command": cmd} }
			if client == "codex" {
				tool, input = "exec_command", func(cmd string) any { return map[string]any{"cmd": cmd} }
			}
			shared := filepath.Join(ws, "shared.md")
			script := []Step{
				{Tool: tool, Input: input("sed -i 's/one/ONE/' crlf.txt && rm gone.txt && mkdir -p d && echo x > d/e")},
				{Tool: tool, Input: input("echo 'the model wrote this' > shared.md")},
				{Tool: tool, Input: input("echo 'the model again' > shared.md"), Before: personChange(shared, "a person's change\n")},
			}
			run := runShellClient(t, client, ws, script)
			hookTool := map[string]string{"gemini": "run_shell_command", "codex": "Bash"}[client]
			recs, session := shellRecords(t, ws, hookTool)
			for _, p := range []string{"crlf.txt", "gone.txt", "d/e", "shared.md"} {
				if recs[p] == "" {
					t.Errorf("no %s record of %s with its command: %v", hookTool, p, recs)
				}
			}
			last := run.Results[2]
			text := last.Content + strings.Join(last.Parts, "") + last.Along
			if !strings.Contains(text, "overwrote changes someone else made") || !strings.Contains(text, "shared.md") {
				t.Errorf("the model was not told of the overwritten change: %q", truncate(text, 800))
			}
			// Nothing told the commands' writes from anyone else's: the
			// rewind refuses them unless forced.
			out, err := exec.Command(editguardBin(t), "--root", ws, "rewind", "--session", session).CombinedOutput()
			if err == nil || !strings.Contains(string(out), "by the command or by someone else") {
				t.Errorf("rewind without --force: %v, want the commands' changes refused\n%s", err, out)
			}
			out, err = exec.Command(editguardBin(t), "--root", ws, "rewind", "--session", session, "--force").CombinedOutput()
			t.Logf("rewind --force:\n%s", out)
			// shared.md was changed by the person in between: the rewind
			// keeps it (refused, exit 3); every other file goes back.
			got := treeSums(t, ws)
			for p, sum := range before {
				if p == "shared.md" {
					continue
				}
				if got[p] != sum {
					t.Errorf("after rewind %s is not as before", p)
				}
			}
			if _, ok := got["d/e"]; ok {
				t.Errorf("d/e, which the session created, is still there after the rewind")
			}
		})
	}
}

// ledgerRecords returns the records that editguard log --json printed in
// out, in its order.
func ledgerRecords(t testing.TB, out []byte) []json.RawMessage {
	t.Helper()
	var v struct {
		Status  string            `json:"status"`
		Records []json.RawMessage `json:"records"`
	}
	if err := json.Unmarshal(out, &v); err != nil || v.Status != "ok" {
		t.Fatalf("editguard log --json printed no {\"status\": \"ok\", \"records\": [...]} (%v):\n%s", err, out)
	}
	return v.Records
}

// runShellClient runs client on ws with script, as the shell tests do:
// in the project, every tool allowed (Claude Code by the project's
// settings), and fails unless every step got its result.
func runShellClient(t *testing.T, client, ws string, script []Step) *ClientRun {
	t.Helper()
	var run *ClientRun
	switch client {
	case "claude-code":
		run = runClaudeProject(t, ws, true, script)
	case "gemini":
		run = runGemini(t, ws, script, geminiOptions{project: true, approval: "yolo"})
	default:
		run = runCodex(t, ws, script, codexOptions{project: true, model: "gpt-5.5",
			args: []string{"--dangerously-bypass-hook-trust", "--dangerously-bypass-approvals-and-sandbox"}})
	}
	logRun(t, run)
	if len(run.Results) != len(script) {
		dumpRun(t, run)
		t.Fatalf("got %d tool results for %d steps", len(run.Results), len(script))
	}
	return run
}
