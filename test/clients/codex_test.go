package clients

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/editguard/editguard/toolset"
)

// codexRunTimeout bounds one headless Codex CLI run: a run that hangs ends the
// test instead of waiting for the package's timeout, and a slow run on a
// busy machine is not taken for one (claudeRunTimeout).
const codexRunTimeout = 5 * time.Minute

// codexModel is the model the runs ask for. Codex CLI (0.169.0 and 0.171.0) has no
// metadata for it, says so ("Model metadata for `scripted` not found") and
// uses defaults, as for any model of a custom provider. For the models it
// knows (gpt-5.5, ...) it sends MCP tools not in the request but behind its
// tool_search tool, which the model calls to load them.
const codexModel = "scripted"

// codexCommand returns the command that starts Codex CLI (see nodePackage
// for when it skips or fails). The package's bin/codex.js starts a native
// executable from the platform package, an optional dependency; that
// executable is started directly when it is there, so that ending a run
// ends Codex itself.
func codexCommand(t testing.TB) (string, []string) {
	t.Helper()
	pkg := nodePackage(t, "@openai/codex")
	triple := map[string]string{
		"linux/amd64":  "x86_64-unknown-linux-musl",
		"linux/arm64":  "aarch64-unknown-linux-musl",
		"darwin/amd64": "x86_64-apple-darwin",
		"darwin/arm64": "aarch64-apple-darwin",
	}[runtime.GOOS+"/"+runtime.GOARCH]
	if triple != "" {
		for _, suffix := range platformSuffixes() {
			exe := filepath.Join(filepath.Dir(pkg), "codex-"+suffix, "vendor", triple, "bin", "codex")
			if fi, err := os.Stat(exe); err == nil && fi.Mode().IsRegular() {
				return exe, nil
			}
		}
	}
	node, _ := exec.LookPath("node")
	return node, []string{filepath.Join(pkg, "bin", "codex.js")}
}

// codexOptions say how a run is configured.
type codexOptions struct {
	// project runs Codex CLI on the workspace's own .codex/config.toml
	// alone: no MCP server in the user configuration, the workspace
	// trusted there as Codex records a trusted project, editguard on PATH
	// and no flag about approvals or the sandbox.
	project bool
	// builtin leaves editguard's server out of the user configuration,
	// so that the model has only Codex's own tools.
	builtin bool
	// model is the model the run asks for; "" is codexModel.
	model string
	// config is appended to the user configuration.
	config string
	// args are more arguments of codex exec, before the prompt.
	args []string
	// noEditguard leaves editguard and editguard-hook off the run's PATH.
	noEditguard bool
}

// runCodex runs "codex exec" on workspace with the model replaced by
// script. Without opts.project, editguard is the MCP server of the user
// configuration, and --dangerously-bypass-approvals-and-sandbox lets its
// tools run without asking (Codex's sandbox cannot be set up in every
// container, and root is no obstacle to it).
//
// Codex CLI (0.169.0 and 0.171.0) reads its configuration from $CODEX_HOME/config.toml:
// a model_providers table with base_url pointing at the model server and
// wire_api "responses" sends the conversation to BASE_URL/responses, with
// the key from the environment variable env_key.
func runCodex(t testing.TB, workspace string, script []Step, opts codexOptions) *ClientRun {
	t.Helper()
	exe, pre := codexCommand(t)
	bin := editguardBin(t)
	server := startFakeCodex(t, "editguard", script)

	home := t.TempDir()
	shareKey(t, home)
	codexHome := filepath.Join(home, ".codex")
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	var cfg strings.Builder
	model := opts.model
	if model == "" {
		model = codexModel
	}
	fmt.Fprintf(&cfg, "model = %q\nmodel_provider = \"scripted\"\ncheck_for_update_on_startup = false\n\n", model)
	fmt.Fprintf(&cfg, "[model_providers.scripted]\nname = \"scripted\"\nbase_url = %q\nwire_api = \"responses\"\nenv_key = \"SCRIPTED_MODEL_KEY\"\n\n", server.url+"/v1")
	if opts.project {
		fmt.Fprintf(&cfg, "[projects.%q]\ntrust_level = \"trusted\"\n", workspace)
	} else if !opts.builtin {
		fmt.Fprintf(&cfg, "[mcp_servers.editguard]\ncommand = %q\nargs = [\"--root\", %q, \"serve\"]\n", bin, workspace)
	}
	cfg.WriteString(opts.config)
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}

	args := append(pre, "exec", "--json", "--color", "never", "--skip-git-repo-check")
	if !opts.project {
		args = append(args, "--dangerously-bypass-approvals-and-sandbox")
	}
	args = append(args, opts.args...)
	args = append(args, "Work through the task with the tools you have.")
	path := os.Getenv("PATH")
	switch {
	case opts.noEditguard:
		path = pathWithoutEditguard()
	case opts.project:
		path = filepath.Dir(bin) + string(os.PathListSeparator) + path
	}
	ctx, cancel := context.WithTimeout(t.Context(), codexRunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Dir = workspace
	cmd.Env = []string{
		"HOME=" + home,
		keyHomeEnv(),
		"CODEX_HOME=" + codexHome,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"TMPDIR=" + home,
		"PATH=" + path,
		"LANG=C.UTF-8",
		"SCRIPTED_MODEL_KEY=test-key",
		"NO_COLOR=1",
	}
	killGroupOnCancel(cmd)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	run := &ClientRun{
		Results:  server.Results(),
		Offered:  server.Offered(),
		Requests: server.Requests(),
		Stdout:   stdout.String(),
		Stderr:   stderr.String(),
	}
	t.Logf("codex ran %v; %d requests to the model server", time.Since(start).Round(time.Millisecond), len(run.Requests))
	if err != nil || ctx.Err() != nil {
		dumpRun(t, run)
		t.Fatalf("codex: %v (context: %v)", err, ctx.Err())
	}
	if errs := server.Errors(); len(errs) > 0 {
		dumpRun(t, run)
		t.Fatalf("model server: %s", strings.Join(errs, "; "))
	}
	return run
}

// TestCodexCLISeesToolResults checks what Codex CLI hands the model for
// editguard's results: a 4 KiB file read as numbered lines of unescaped text,
// a STALE_FILE refusal after someone else changed the file, and a listing.
//
// Codex CLI (0.169.0 and 0.171.0) answers a call with a function_call_output whose output
// is two input_text items: "Wall time: SECONDS seconds\nOutput:" and the
// result's text content as it is. A result with isError set looks the same:
// nothing marks it as an error but its text. A result with structuredContent
// becomes one string, "Wall time: SECONDS seconds\nOutput:\n" and the
// structuredContent as JSON; its text content is dropped. So editguard
// sends structuredContent only for tools whose result a program acts on
// (begin_session's handle, ...): a listing arrives as its text.
func TestCodexCLISeesToolResults(t *testing.T) {
	ws := t.TempDir()
	small := smallGo(4096)
	if err := os.WriteFile(filepath.Join(ws, "small.go"), []byte(small), 0o644); err != nil {
		t.Fatal(err)
	}
	script := append(staleScript(ws), Step{Tool: "list_directory", Input: map[string]any{"path": "."}})
	run := runCodex(t, ws, script, codexOptions{})
	logRun(t, run)
	if len(run.Results) != len(script) {
		dumpRun(t, run)
		t.Fatalf("got %d tool results for %d steps", len(run.Results), len(script))
	}
	for _, name := range editguardTools(t) {
		if !slices.Contains(run.Offered, "mcp__editguard__"+name) {
			t.Errorf("mcp__editguard__%s is not offered", name)
		}
	}
	for i, r := range run.Results {
		if r.Count != 1 {
			t.Errorf("step %d: %d function_call_output items, want 1", i, r.Count)
		}
		if len(r.Parts) == 0 || !strings.HasPrefix(r.Parts[0], "Wall time: ") {
			t.Errorf("step %d (%s): output does not start with the wall time: %q", i, r.Tool, truncate(r.Content, 300))
		}
	}

	// The 4 KiB file arrives whole, as numbered lines of unescaped text, in
	// the second part.
	read := run.Results[0]
	if len(read.Parts) != 2 {
		t.Fatalf("read_file small.go: %d parts, want 2: %q", len(read.Parts), truncate(read.Content, 300))
	}
	if got, err := toolset.ReadText(read.Parts[1]); err != nil || got != small {
		t.Errorf("read_file small.go: the model did not see the file as it is (%v):\n%s", err, truncate(read.Parts[1], 600))
	}
	if !strings.Contains(read.Parts[1], "\n     6\t"+staleEditLine+"\n") {
		t.Errorf("read_file small.go: line 6 is not shown numbered and unescaped:\n%s", truncate(read.Parts[1], 600))
	}

	// STALE_FILE reaches the model as editguard's error text, with the change.
	stale := run.Results[1]
	if len(stale.Parts) != 2 || !strings.HasPrefix(stale.Parts[1], "STALE_FILE small.go") || !strings.Contains(stale.Parts[1], "\n+"+staleChange+"\n") {
		t.Errorf("edit_file after an external change: want STALE_FILE with the change; got %q", truncate(stale.Content, 800))
	}
	if !strings.Contains(run.Results[2].Content, "Edited small.go") {
		t.Errorf("edit_file redo: %s", truncate(run.Results[2].Content, 500))
	}
	after, err := os.ReadFile(filepath.Join(ws, "small.go"))
	if err != nil || !strings.Contains(string(after), "const Greeting = \"bye\\n\"") || !strings.HasSuffix(string(after), staleChange+"\n") {
		t.Errorf("small.go after the redo: want the edit and the other change both; got %q (%v)", truncate(string(after), 300), err)
	}

	// A listing: its text, one entry a line, not JSON (list_directory has
	// no structuredContent, which Codex would show in place of the text).
	ls := run.Results[3]
	if len(ls.Parts) != 2 || !regexp.MustCompile(`^small.go\t\d+ bytes\n$`).MatchString(ls.Parts[1]) || strings.Contains(ls.Content, "{") {
		t.Errorf("list_directory: want the listing as text; got %q", truncate(ls.Content, 300))
	}
}

// TestInitCodex configures a workspace with "editguard init codex" alone
// and checks that Codex CLI, once the project is trusted, starts editguard
// from the project's .codex/config.toml, offers the model its tools and runs
// them, with no flag about approvals or the sandbox.
func TestInitCodex(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello from a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := editguardBin(t)
	out, err := exec.Command(bin, "--root", ws, "init", "codex").CombinedOutput()
	// init ran the hooks it added for Codex's own tools once, which
	// started a hook server.
	t.Cleanup(func() { stopHookServers(t, ws) })
	if err != nil {
		t.Fatalf("editguard init codex: %v\n%s", err, out)
	}
	t.Logf("editguard init codex:\n%s", out)
	cfg, _ := os.ReadFile(filepath.Join(ws, ".codex", "config.toml"))
	t.Logf(".codex/config.toml:\n%s", cfg)

	script := []Step{
		{Tool: "read_file", Input: map[string]any{"path": "a.txt"}},
		{Tool: "edit_file", Input: map[string]any{"path": "a.txt", "old_string": "hello", "new_string": "bye"}},
		{Tool: "write_file", Input: map[string]any{"path": "b.txt", "content": "new b\n"}},
	}
	run := runCodex(t, ws, script, codexOptions{project: true})
	logRun(t, run)
	for _, name := range editguardTools(t) {
		if !slices.Contains(run.Offered, "mcp__editguard__"+name) {
			t.Errorf("mcp__editguard__%s is not offered", name)
		}
	}
	if len(run.Results) != len(script) {
		dumpRun(t, run)
		t.Fatalf("got %d tool results for %d steps", len(run.Results), len(script))
	}
	if !strings.Contains(run.Results[0].Content, "     1\thello from a\n") {
		t.Errorf("read_file did not return the file: %s", truncate(run.Results[0].Content, 500))
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(got) != "bye from a\n" {
		t.Errorf("a.txt = %q after edit_file: %s", got, truncate(run.Results[1].Content, 500))
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "b.txt")); string(got) != "new b\n" {
		t.Errorf("b.txt = %q after write_file: %s", got, truncate(run.Results[2].Content, 500))
	}
}
