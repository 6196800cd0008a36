package clients

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/editguard/editguard/toolset"
)

// geminiRunTimeout bounds one headless Gemini CLI run: a run that hangs ends the
// test instead of waiting for the package's timeout, and a slow run on a
// busy machine is not taken for one (claudeRunTimeout).
const geminiRunTimeout = 5 * time.Minute

// geminiModel is the model the runs ask for. Naming one on the command line
// keeps Gemini CLI from first asking a small model to pick one.
const geminiModel = "gemini-2.5-pro"

// geminiOptions say how a run is configured.
type geminiOptions struct {
	// project runs Gemini CLI on the workspace's own .gemini/settings.json
	// alone: no MCP server in the user settings, the workspace trusted in
	// ~/.gemini/trustedFolders.json as the trust dialog of an interactive
	// run records it, and editguard on PATH.
	project bool
	// approval is the --approval-mode; "" leaves the flag out. Without
	// project, the run uses yolo when it is empty.
	approval string
	// builtin leaves editguard's server out of the user settings, so that
	// the model gets Gemini CLI's own read_file, write_file and replace.
	builtin bool
	// settings are more user settings.
	settings map[string]any
	// noEditguard leaves editguard and editguard-hook off the run's PATH.
	noEditguard bool
}

// runGemini runs Gemini CLI headless on workspace with the model replaced by
// script. Without opts.project, editguard is the MCP server of the user
// settings and --approval-mode yolo runs its tools without asking.
//
// Gemini CLI 0.61.0, configured from the environment alone:
//   - GOOGLE_GEMINI_BASE_URL points the Gemini API client at the model
//     server; GEMINI_API_KEY is sent as x-goog-api-key.
//   - security.auth.selectedType "gemini-api-key" in the user settings:
//     without it a base URL in the environment selects the "gateway" auth
//     type, which the headless start refuses ("Invalid auth method
//     selected.").
//   - A headless run in an untrusted folder stops with "Gemini CLI is not
//     running in a trusted directory". GEMINI_CLI_TRUST_WORKSPACE=true
//     trusts it; --skip-trust does too, but only after the settings were
//     loaded, so the workspace's .gemini/settings.json is then ignored.
//   - GEMINI_CLI_NO_RELAUNCH keeps it from starting itself again in a child
//     node process with a larger heap.
func runGemini(t testing.TB, workspace string, script []Step, opts geminiOptions) *ClientRun {
	t.Helper()
	pkg := nodePackage(t, "@google/gemini-cli")
	node, _ := exec.LookPath("node")
	bin := editguardBin(t)
	model := startFakeGemini(t, "editguard", script)

	home := t.TempDir()
	shareKey(t, home)
	settings := map[string]any{
		"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"privacy":  map[string]any{"usageStatisticsEnabled": false},
		"general":  map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
	}
	maps.Copy(settings, opts.settings)
	if !opts.project && !opts.builtin {
		settings["mcpServers"] = map[string]any{"editguard": map[string]any{
			"command": bin,
			"args":    []string{"--root", workspace, "serve"},
		}}
	}
	writeJSONFile(t, filepath.Join(home, ".gemini", "settings.json"), settings)
	if opts.project {
		writeJSONFile(t, filepath.Join(home, ".gemini", "trustedFolders.json"), map[string]any{workspace: "TRUST_FOLDER"})
	}

	args := []string{filepath.Join(pkg, "bundle", "gemini.js"),
		"-p", "Work through the task with the tools you have.",
		"-m", geminiModel,
		"--output-format", "json",
	}
	if opts.approval == "" && !opts.project {
		opts.approval = "yolo"
	}
	if opts.approval != "" {
		args = append(args, "--approval-mode", opts.approval)
	}
	path := os.Getenv("PATH")
	switch {
	case opts.noEditguard:
		path = pathWithoutEditguard()
	case opts.project:
		path = filepath.Dir(bin) + string(os.PathListSeparator) + path
	}
	env := []string{
		"HOME=" + home,
		keyHomeEnv(),
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"TMPDIR=" + home,
		"PATH=" + path,
		"LANG=C.UTF-8",
		"GOOGLE_GEMINI_BASE_URL=" + model.url,
		"GEMINI_API_KEY=test-key",
		"GEMINI_CLI_NO_RELAUNCH=true",
		"GEMINI_TELEMETRY_ENABLED=false",
		"NO_COLOR=1",
	}
	if !opts.project {
		env = append(env, "GEMINI_CLI_TRUST_WORKSPACE=true")
	}

	ctx, cancel := context.WithTimeout(t.Context(), geminiRunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = workspace
	cmd.Env = env
	killGroupOnCancel(cmd)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	run := &ClientRun{
		Results:  model.Results(),
		Offered:  model.Offered(),
		Requests: model.Requests(),
		Stdout:   stdout.String(),
		Stderr:   stderr.String(),
	}
	t.Logf("gemini ran %v; %d requests to the model server", time.Since(start).Round(time.Millisecond), len(run.Requests))
	if err != nil || ctx.Err() != nil {
		dumpRun(t, run)
		t.Fatalf("gemini: %v (context: %v)", err, ctx.Err())
	}
	if errs := model.Errors(); len(errs) > 0 {
		dumpRun(t, run)
		t.Fatalf("model server: %s", strings.Join(errs, "; "))
	}
	return run
}

func writeJSONFile(t testing.TB, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestGeminiCLISeesToolResults checks what Gemini CLI hands the model for
// editguard's results: a 4 KiB file read as numbered lines of unescaped text,
// and a STALE_FILE refusal after someone else changed the file.
//
// Gemini CLI 0.61.0 sends a result's text content as the functionResponse's
// response.output, between "<untrusted_context>\n" and
// "\n</untrusted_context>". A result with isError set arrives as
// response.error instead: "MCP tool 'edit_file' reported tool error for
// function call: CALL with response: PARTS", where CALL is the call as JSON
// and PARTS the whole MCP result as JSON, _meta included; the text is in
// there JSON-escaped.
func TestGeminiCLISeesToolResults(t *testing.T) {
	ws := t.TempDir()
	small := smallGo(4096)
	if err := os.WriteFile(filepath.Join(ws, "small.go"), []byte(small), 0o644); err != nil {
		t.Fatal(err)
	}
	script := staleScript(ws)
	run := runGemini(t, ws, script, geminiOptions{})
	logRun(t, run)
	if len(run.Results) != len(script) {
		dumpRun(t, run)
		t.Fatalf("got %d tool results for %d steps", len(run.Results), len(script))
	}
	for _, name := range editguardTools(t) {
		if !slices.Contains(run.Offered, "mcp_editguard_"+name) {
			t.Errorf("mcp_editguard_%s is not offered", name)
		}
	}
	for i, r := range run.Results {
		if r.Count != 1 {
			t.Errorf("step %d: %d functionResponse parts, want 1", i, r.Count)
		}
		if r.IsError != (i == 1) {
			t.Errorf("step %d (%s): error=%v: %s", i, r.Tool, r.IsError, truncate(r.Content, 500))
		}
	}

	// The 4 KiB file arrives whole, as numbered lines of unescaped text.
	read, ok := untrustedContext(run.Results[0].Content)
	if !ok {
		t.Errorf("read_file small.go: not wrapped in <untrusted_context> as expected: %q", truncate(run.Results[0].Content, 300))
	}
	if got, err := toolset.ReadText(read); err != nil || got != small {
		t.Errorf("read_file small.go: the model did not see the file as it is (%v):\n%s", err, truncate(read, 600))
	}
	if !strings.Contains(run.Results[0].Content, "\n     6\t"+staleEditLine+"\n") {
		t.Errorf("read_file small.go: line 6 is not shown numbered and unescaped:\n%s", truncate(run.Results[0].Content, 600))
	}

	// STALE_FILE reaches the model as an error that carries the change.
	stale := run.Results[1].Content
	if !strings.Contains(stale, "STALE_FILE small.go") || !strings.Contains(stale, "+"+staleChange) {
		t.Errorf("edit_file after an external change: want STALE_FILE with the change; got %s", truncate(stale, 800))
	}
	text, err := geminiErrorText(stale)
	if err != nil || !strings.HasPrefix(text, "STALE_FILE small.go") || !strings.Contains(text, "\n+"+staleChange+"\n") {
		t.Errorf("edit_file after an external change: the text content is not recoverable from the error (%v): %q", err, truncate(text, 800))
	}
	// Gemini CLI shows the whole result, _meta included: the error object
	// there keeps only its code, so the message is said once.
	t.Logf("the model reads %d characters of the STALE_FILE error", len(stale))
	if n := strings.Count(stale, "changed since your last read"); n != 1 {
		t.Errorf("the STALE_FILE message reaches the model %d times, want once: %s", n, truncate(stale, 1500))
	}
	if !strings.Contains(run.Results[2].Content, "Edited small.go") {
		t.Errorf("edit_file redo: %s", truncate(run.Results[2].Content, 500))
	}
	after, err := os.ReadFile(filepath.Join(ws, "small.go"))
	if err != nil || !strings.Contains(string(after), "const Greeting = \"bye\\n\"") || !strings.HasSuffix(string(after), staleChange+"\n") {
		t.Errorf("small.go after the redo: want the edit and the other change both; got %q (%v)", truncate(string(after), 300), err)
	}
}

// untrustedContext returns what Gemini CLI put between
// "<untrusted_context>\n" and "\n</untrusted_context>".
func untrustedContext(s string) (string, bool) {
	const open, end = "<untrusted_context>\n", "\n</untrusted_context>"
	if !strings.HasPrefix(s, open) || !strings.HasSuffix(s, end) {
		return s, false
	}
	return s[len(open) : len(s)-len(end)], true
}

// geminiErrorText returns the text content of the MCP result that Gemini
// CLI's error message for a failed tool call holds as JSON.
func geminiErrorText(msg string) (string, error) {
	const marker = " with response: "
	i := strings.Index(msg, marker)
	if i < 0 {
		return "", fmt.Errorf("no %q in the error", marker)
	}
	var parts []struct {
		FunctionResponse struct {
			Response struct {
				Content []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
			} `json:"response"`
		} `json:"functionResponse"`
	}
	if err := json.Unmarshal([]byte(msg[i+len(marker):]), &parts); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range parts {
		for _, c := range p.FunctionResponse.Response.Content {
			if c.Type == "text" {
				b.WriteString(c.Text)
			}
		}
	}
	return b.String(), nil
}

// TestInitGemini configures a workspace with "editguard init gemini" alone
// and checks that Gemini CLI, once the workspace is trusted, starts
// editguard, offers the model its tools and not its own read_file,
// write_file and replace, and runs editguard's tools without asking.
//
// A headless run in the default approval mode denies Gemini CLI's own
// write_file, replace and run_shell_command, and version 0.61.0 applies an
// exclusion to an MCP tool whose name without the mcp_SERVER_ prefix is the
// same: editguard's write_file is then not offered either. With
// --approval-mode auto_edit every editguard tool is.
func TestInitGemini(t *testing.T) {
	for _, approval := range []string{"", "auto_edit"} {
		name := approval
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) { testInitGemini(t, approval) })
	}
}

func testInitGemini(t testing.TB, approval string) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello from a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := editguardBin(t)
	out, err := exec.Command(bin, "--root", ws, "init", "gemini").CombinedOutput()
	if err != nil {
		t.Fatalf("editguard init gemini: %v\n%s", err, out)
	}
	t.Logf("editguard init gemini:\n%s", out)
	settings, _ := os.ReadFile(filepath.Join(ws, ".gemini", "settings.json"))
	t.Logf(".gemini/settings.json:\n%s", settings)

	script := []Step{
		{Tool: "read_file", Input: map[string]any{"path": "a.txt"}},
		{Tool: "edit_file", Input: map[string]any{"path": "a.txt", "old_string": "hello", "new_string": "bye"}},
	}
	if approval != "" {
		script = append(script, Step{Tool: "write_file", Input: map[string]any{"path": "b.txt", "content": "new b\n"}})
	}
	run := runGemini(t, ws, script, geminiOptions{project: true, approval: approval})
	logRun(t, run)
	for _, name := range editguardTools(t) {
		offered := slices.Contains(run.Offered, "mcp_editguard_"+name)
		switch {
		case name == "write_file" && approval == "":
			t.Logf("mcp_editguard_write_file offered: %v", offered)
		case !offered:
			t.Errorf("mcp_editguard_%s is not offered", name)
		}
	}
	for _, name := range []string{"read_file", "write_file", "replace"} {
		if slices.Contains(run.Offered, name) {
			t.Errorf("the built-in %s is offered although init excluded it", name)
		}
	}
	if len(run.Results) != len(script) {
		dumpRun(t, run)
		t.Fatalf("got %d tool results for %d steps", len(run.Results), len(script))
	}
	for i, r := range run.Results {
		if r.IsError {
			t.Errorf("step %d (%s): error: %s", i, r.Tool, truncate(r.Content, 500))
		}
	}
	if !strings.Contains(run.Results[0].Content, "     1\thello from a\n") {
		t.Errorf("read_file did not return the file: %s", truncate(run.Results[0].Content, 500))
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(got) != "bye from a\n" {
		t.Errorf("a.txt = %q after edit_file", got)
	}
	if approval != "" {
		if got, _ := os.ReadFile(filepath.Join(ws, "b.txt")); string(got) != "new b\n" {
			t.Errorf("b.txt = %q after write_file", got)
		}
	}
}
