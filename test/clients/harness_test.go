// Package clients drives real MCP clients end to end against editguard: the
// client runs headless, talks to a scripted model server on loopback instead
// of a model, and the tests read what the client handed back to the model as
// each tool result.
package clients

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/userkey"
	"github.com/editguard/editguard/toolset"
)

// claudeRunTimeout bounds one headless Claude Code run: a run that hangs
// ends the test instead of waiting for the package's timeout. A run takes
// seconds on an idle machine, and above a minute with hooks on 2 cores
// under a load average of 35: the bound is far above both.
const claudeRunTimeout = 5 * time.Minute

func TestMain(m *testing.M) {
	userCache, _ = os.UserCacheDir()
	// editguard verify remembers what it proved in the user's cache
	// directory: the tests' own, not the user's.
	cache, err := os.MkdirTemp("", "editguard-clients-cache-")
	if err != nil {
		panic(err)
	}
	// Go keeps its build cache in the user's cache directory too: it
	// stays where it is, or every run would build the standard library
	// again.
	if os.Getenv("GOCACHE") == "" && userCache != "" {
		os.Setenv("GOCACHE", filepath.Join(userCache, "go-build"))
	}
	os.Setenv("XDG_CACHE_HOME", cache)
	code := m.Run()
	os.RemoveAll(cache)
	if buildBin != "" {
		os.RemoveAll(filepath.Dir(buildBin))
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	buildBin  string
	buildErr  error
)

// editguardBin builds cmd/editguard once per test binary and returns its
// path. cmd/editguard-hook is built next to it, as go install ./cmd/...
// puts it, so init --hooks configures it.
func editguardBin(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "editguard-clients-")
		if err != nil {
			buildErr = err
			return
		}
		buildBin = filepath.Join(dir, "editguard")
		// go test puts its own GOROOT/bin first on PATH, so this is the same
		// toolchain that runs the test.
		cmd := exec.Command("go", "build", "-o", dir, "./cmd/editguard", "./cmd/editguard-hook")
		cmd.Dir = filepath.Join(packageDir(t), "..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildError{err: err, out: string(out)}
		}
	})
	if buildErr != nil {
		t.Fatalf("go build ./cmd/editguard: %v", buildErr)
	}
	return buildBin
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

func packageDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

var (
	npmOnce    sync.Once
	npmErr     string
	modulesDir string // the node_modules that holds the clients
	nodeNote   string // which node runs the clients, for the log
	userCache  string // os.UserCacheDir before TestMain replaced it
)

// pinnedPackages are the clients package.json pins, as node_modules holds
// them.
var pinnedPackages = []string{"@anthropic-ai/claude-code", "@google/gemini-cli", "@openai/codex"}

// clientSetEnv selects the set of pinned clients the suite runs: unset or
// empty, the newest (package.json here); "previous", the set pinned
// before them (previous/package.json), for users who stay on those.
const clientSetEnv = "EDITGUARD_TEST_CLIENTS"

// previousClients reports whether the run is of the previous pins.
func previousClients() bool { return os.Getenv(clientSetEnv) == "previous" }

// pinsDir returns the directory of the package.json and package-lock.json
// of the selected set of clients.
func pinsDir(t testing.TB) string {
	t.Helper()
	switch v := os.Getenv(clientSetEnv); v {
	case "":
		return packageDir(t)
	case "previous":
		return filepath.Join(packageDir(t), "previous")
	default:
		t.Fatalf("%s=%q: want empty or \"previous\"", clientSetEnv, v)
		return ""
	}
}

// clientsDir returns the directory the clients are installed in, outside
// the source tree: $EDITGUARD_CLIENTS_DIR, else CACHE/editguard/
// test-clients/HASH, HASH naming the selected package-lock.json, so that
// new pins get a directory of their own.
func clientsDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("EDITGUARD_CLIENTS_DIR"); d != "" {
		return d
	}
	lock, err := os.ReadFile(filepath.Join(pinsDir(t), "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	cache := userCache
	if cache == "" {
		cache = os.TempDir()
	}
	sum := sha256.Sum256(lock)
	return filepath.Join(cache, "editguard", "test-clients", hex.EncodeToString(sum[:8]))
}

// nodePackage returns the directory of the pinned npm package pkg. The
// packages are those of node_modules beside the selected package.json
// when it holds every one (an install made there by hand), else those of
// clientsDir, which npm ci fills the first time from that package.json and
// its package-lock.json. It skips with -short and when node is not
// installed, and fails when the install fails: a broken install must not
// pass as a skip.
//
// Claude Code 2.1.332 needs Node 22. Where the system's node is older
// than a pinned client asks for, the install holds Node 22 for this
// platform (the optional dependency node-OS-ARCH), and its directory is
// put first on PATH: the clients and whatever they start run on it.
func nodePackage(t testing.TB, pkg string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts client and editguard processes; skipped with -short")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not on PATH")
	}
	installed := func(modules, p string) bool {
		_, err := os.Stat(filepath.Join(modules, p, "package.json"))
		return err == nil
	}
	all := func(modules string) bool {
		for _, p := range pinnedPackages {
			if !installed(modules, p) {
				return false
			}
		}
		return true
	}
	npmOnce.Do(func() {
		if local := filepath.Join(pinsDir(t), "node_modules"); all(local) {
			modulesDir = local
		} else {
			dir := clientsDir(t)
			modulesDir = filepath.Join(dir, "node_modules")
			if !all(modulesDir) {
				npmErr = installClients(pinsDir(t), dir)
			}
		}
		if npmErr == "" {
			nodeNote, npmErr = nodeForClients(modulesDir)
		}
	})
	if npmErr != "" {
		t.Fatal(npmErr)
	}
	if nodeNote != "" {
		t.Log(nodeNote)
	}
	if !installed(modulesDir, pkg) {
		t.Fatalf("%s is not installed in %s", pkg, modulesDir)
	}
	return filepath.Join(modulesDir, pkg)
}

// nodeMajor returns the major version of the node program at path.
func nodeMajor(path string) (int, error) {
	out, err := exec.Command(path, "-p", "process.versions.node.split('.')[0]").Output()
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(out)))
}

// nodeNeeded returns the newest major version of Node that the pinned
// packages in modules ask for with an engines.node of ">=MAJOR...", and
// the package that asks for it.
func nodeNeeded(modules string) (int, string) {
	need, by := 0, ""
	for _, p := range pinnedPackages {
		var pj struct {
			Engines struct {
				Node string `json:"node"`
			} `json:"engines"`
		}
		data, err := os.ReadFile(filepath.Join(modules, p, "package.json"))
		if err != nil || json.Unmarshal(data, &pj) != nil {
			continue
		}
		v, ok := strings.CutPrefix(strings.TrimSpace(pj.Engines.Node), ">=")
		if !ok {
			continue
		}
		major, _, _ := strings.Cut(strings.TrimSpace(v), ".")
		if n, err := strconv.Atoi(major); err == nil && n > need {
			need, by = n, p
		}
	}
	return need, by
}

// nodeForClients leaves PATH as it is when its node is as new as the pinned
// clients ask for, and otherwise puts first on it the bin directory of
// the Node package for this platform in modules (the optional dependency
// node-OS-ARCH). It returns a note on which node runs the clients, and
// what went wrong: an older node and no new enough Node package for this
// platform.
func nodeForClients(modules string) (note, problem string) {
	system, err := exec.LookPath("node")
	if err != nil {
		return "", err.Error()
	}
	need, by := nodeNeeded(modules)
	if major, err := nodeMajor(system); err == nil && major >= need {
		return "", ""
	}
	arch := runtime.GOARCH
	if arch == "amd64" {
		arch = "x64"
	}
	bin := filepath.Join(modules, "node-"+runtime.GOOS+"-"+arch, "bin")
	if major, err := nodeMajor(filepath.Join(bin, "node")); err != nil || major < need {
		return "", fmt.Sprintf("%s needs Node %d and %s is older; %s holds no Node %d for %s-%s (install Node %d)",
			by, need, system, modules, need, runtime.GOOS, arch, need)
	}
	os.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return fmt.Sprintf("the clients run on %s: %s needs Node %d, and %s is older", filepath.Join(bin, "node"), by, need, system), ""
}

// installClients copies package.json and package-lock.json from src to
// dir and runs npm ci there; it returns what went wrong, or "".
func installClients(src, dir string) string {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "node is installed but npm is not; cannot install the clients: " + err.Error()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err.Error()
	}
	for _, f := range []string{"package.json", "package-lock.json"} {
		data, err := os.ReadFile(filepath.Join(src, f))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, f), data, 0o644)
		}
		if err != nil {
			return err.Error()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "npm ci in " + dir + ": " + err.Error() + "\n" + string(out)
	}
	return ""
}

// claudeCommand returns the command that starts Claude Code (see
// nodePackage for when it skips or fails).
//
// The package ships a native executable per platform (an optional
// dependency); its postinstall links it over bin/claude.exe. The executable
// is started directly, so that ending a run ends Claude Code itself; when the
// platform package is missing, node runs the package's cli-wrapper.cjs,
// which finds it the same way.
func claudeCommand(t testing.TB) (string, []string) {
	t.Helper()
	pkg := nodePackage(t, "@anthropic-ai/claude-code")
	node, _ := exec.LookPath("node")
	for _, suffix := range platformSuffixes() {
		exe := filepath.Join(modulesDir, "@anthropic-ai", "claude-code-"+suffix, "claude")
		if fi, err := os.Stat(exe); err == nil && fi.Mode().IsRegular() {
			return exe, nil
		}
	}
	return node, []string{filepath.Join(pkg, "cli-wrapper.cjs")}
}

// platformSuffixes names the platform packages that may hold the native
// executable for this machine, most specific first.
func platformSuffixes() []string {
	arch := runtime.GOARCH
	if arch == "amd64" {
		arch = "x64"
	}
	base := runtime.GOOS + "-" + arch
	if runtime.GOOS == "linux" {
		return []string{base, base + "-musl"}
	}
	return []string{base}
}

// ClientRun is everything one headless client run produced.
type ClientRun struct {
	Results  []ToolResult // one per scripted step that got an answer, in order
	Offered  []string     // tool names the client offered the model
	Requests []Request    // every request the model server saw
	Stdout   string       // the client's output (a JSON transcript)
	Stderr   string
}

// runClaude runs Claude Code on workspace with editguard as its only MCP
// server and the model replaced by script, and returns what Claude Code sent
// back for each step. It fails the test unless every step got a result.
func runClaude(t testing.TB, workspace string, script []Step) []ToolResult {
	t.Helper()
	run := runClaudeFull(t, workspace, script)
	if len(run.Results) != len(script) {
		dumpRun(t, run)
		t.Fatalf("got %d tool results for %d steps", len(run.Results), len(script))
	}
	return run.Results
}

// runClaudeFull is runClaude without the check that every step was
// answered; it returns the whole run.
//
// Claude Code may hold MCP tools back behind its ToolSearch tool and load
// their definitions only when the model searches for them. Version 2.1.197
// decides this in one place: CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS, or
// ENABLE_TOOL_SEARCH set to a false value ("false", "0", ...) or "auto:100",
// gives the "standard" mode in which every tool is sent in full with each
// request; with ENABLE_TOOL_SEARCH unset, a base URL that is not a
// first-party Anthropic host also turns deferral off. The run sets
// ENABLE_TOOL_SEARCH=false so that does not depend on the address; 2.1.332
// too then offers every editguard tool in full.
//
// Claude Code refuses --dangerously-skip-permissions (bypassPermissions)
// for root, so the run allows the server's tools with --allowedTools
// mcp__editguard, which covers every tool of that server.
func runClaudeFull(t testing.TB, workspace string, script []Step) *ClientRun {
	t.Helper()
	exe, pre := claudeCommand(t)
	bin := editguardBin(t)
	model := startFakeModel(t, "editguard", script)

	home := t.TempDir()
	shareKey(t, home)
	cfg := map[string]any{"mcpServers": map[string]any{
		"editguard": map[string]any{
			"type":    "stdio",
			"command": bin,
			"args":    []string{"--root", workspace, "serve"},
		},
	}}
	cfgPath := filepath.Join(home, "mcp.json")
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}

	args := append(pre,
		"-p", "Work through the task with the editguard tools.",
		"--output-format", "stream-json", "--verbose",
		"--mcp-config", cfgPath, "--strict-mcp-config",
		"--allowedTools", "mcp__editguard",
		"--max-turns", "50",
	)
	ctx, cancel := context.WithTimeout(t.Context(), claudeRunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Dir = workspace
	cmd.Env = claudeEnv(home, model.url)
	cmd.Stdin = nil
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
	for i := range run.Results {
		run.Results[i].Persisted = persistedOutput(run.Results[i].Content)
	}
	t.Logf("claude ran %v; %d requests to the model server", time.Since(start).Round(time.Millisecond), len(run.Requests))
	if err != nil || ctx.Err() != nil {
		dumpRun(t, run)
		t.Fatalf("claude: %v (context: %v)", err, ctx.Err())
	}
	if errs := model.Errors(); len(errs) > 0 {
		dumpRun(t, run)
		t.Fatalf("model server: %s", strings.Join(errs, "; "))
	}
	return run
}

// killGroupOnCancel puts cmd in a process group of its own and ends the
// whole group when cmd's context ends: the client starts editguard, and maybe
// more, and a timeout must end them all.
func killGroupOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
}

// persistedOutput reads the file a "<persisted-output>" preview points to:
// Claude Code saves an MCP result larger than its limit (MAX_MCP_OUTPUT_TOKENS,
// 25000 tokens by default) under its configuration directory and sends the
// model "Output too large (SIZE). Full output saved to: PATH", then the
// first 2 KB.
func persistedOutput(content string) string {
	if !strings.HasPrefix(content, "<persisted-output>") {
		return ""
	}
	const marker = "Full output saved to: "
	i := strings.Index(content, marker)
	if i < 0 {
		return ""
	}
	path, _, _ := strings.Cut(content[i+len(marker):], "\n")
	b, err := os.ReadFile(strings.TrimSpace(path))
	if err != nil {
		return ""
	}
	return string(b)
}

// claudeEnv is the whole environment of a run: nothing from the user's own
// Claude Code configuration or account leaks in, and nothing goes out but
// requests to the model server.
func claudeEnv(home, baseURL string) []string {
	env := []string{
		"HOME=" + home,
		keyHomeEnv(),
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		"TMPDIR=" + home,
		"PATH=" + os.Getenv("PATH"),
		"LANG=C.UTF-8",
		"ANTHROPIC_BASE_URL=" + baseURL,
		"ANTHROPIC_API_KEY=test-key",
		"ENABLE_TOOL_SEARCH=false",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"CLAUDE_CODE_DISABLE_TERMINAL_TITLE=1",
	}
	return env
}

// shareKey gives a client's HOME this test process's editguard key, for
// the editguard processes a client starts with an environment of its own
// choosing (Codex passes MCP servers a few variables, HOME among them):
// the workspace the test set up, or "editguard init" opened, is then theirs
// too, as it is for a user whose client runs with their own HOME.
func shareKey(t testing.TB, home string) {
	t.Helper()
	key, err := userkey.Load()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, ".local", "state", "editguard")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
}

// keyHomeEnv points the editguard processes a client starts at this test
// process's key: the client runs with a HOME of its own, and a workspace
// the test set up (or "editguard init" opened) would otherwise be another
// user's state to them, refused as foreign.
func keyHomeEnv() string {
	d, err := userkey.Dir()
	if err != nil {
		panic(err)
	}
	return "EDITGUARD_STATE_HOME=" + d
}

// dumpRun logs a run for a failure report.
func dumpRun(t testing.TB, run *ClientRun) {
	t.Helper()
	t.Logf("stderr:\n%s", run.Stderr)
	t.Logf("output:\n%s", truncate(run.Stdout, 20000))
	for i, r := range run.Requests {
		t.Logf("request %d: %s", i, r)
	}
	t.Logf("offered tools: %v", run.Offered)
	for _, r := range run.Results {
		t.Logf("result of step %d (%s): is_error=%v count=%d len=%d: %s", r.Step, r.Tool, r.IsError, r.Count, len(r.Content), truncate(r.Content, 300))
	}
}

// logRun logs what the model saw of a run: the tools offered and, for each
// step, the result's flag, length and first 300 characters.
func logRun(t testing.TB, run *ClientRun) {
	t.Helper()
	t.Logf("offered tools: %v", run.Offered)
	for i, r := range run.Requests {
		t.Logf("request %d: %s", i, r)
	}
	for _, r := range run.Results {
		t.Logf("step %d %s: error=%v count=%d len=%d first 300: %q", r.Step, r.Tool, r.IsError, r.Count, len(r.Content), truncate(r.Content, 300))
		if r.Along != "" {
			t.Logf("step %d along with the result: %q", r.Step, truncate(r.Along, 600))
		}
		for i, p := range r.Parts {
			t.Logf("step %d part %d: len=%d first 300: %q", r.Step, i, len(p), truncate(p, 300))
		}
	}
}

// editguardTools returns the names of editguard's tools.
func editguardTools(t testing.TB) []string {
	t.Helper()
	ws, err := editguard.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	var names []string
	for _, tl := range toolset.New(ws.NewSession("names"), nil).Tools() {
		names = append(names, tl.Name)
	}
	return names
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
