package main

import (
	"bufio"
	"bytes"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/safeopen"
	"github.com/editguard/editguard/toolset"
	"github.com/tailscale/hujson"
)

var doctorCmd = &command{
	name:    "doctor",
	args:    "[claude-code|gemini|codex|cursor] [--json]",
	summary: "check that a client's editguard setup works",
	help: `Doctor checks the editguard setup of one client in the workspace root
(--root), or of every client configured there, and prints each check as ok
or PROBLEM, with what to do about a problem:

  workspace  the state directory is trusted (written by editguard for this
             user on this machine) and recovery found no problems
  program    each program the configuration names (the MCP server's
             command, the hooks' program) exists and may be executed; a
             bare name is looked up on this PATH, which must be the
             client's too
  version    each is the same version as this editguard ("editguard
             version"; editguard-hook's is read from the program file)
  server     the MCP server starts as the client starts it (the command
             and arguments of the configuration, in the root) and answers
             an MCP initialize
  hook       each hook command answers a probe event, as the client runs
             it (with sh -c, in the root); the probe changes no file, and
             editguard-hook may start its hook server, as the first
             event of a client would
  settings   editguard's hooks run for every tool init guards, and the
             client's settings that init writes are in place:
               claude-code  permissions.deny of Claude Code's own file
                            tools, permissions.allow mcp__editguard,
                            enabledMcpjsonServers editguard,
                            env.ENABLE_TOOL_SEARCH "false"
               gemini       trust true; tools.exclude of Gemini CLI's own
                            file tools, and of none of editguard's names
               codex        tool_output_token_limit at least 40000,
                            default_tools_approval_mode "approve", and the
                            hooks for apply_patch and Bash

Doctor runs the programs but changes no configuration. It exits with
status 0 when every check is ok and 1 otherwise. With --json it prints
{root, ok, checks: [{client, check, ok, message, fix}]}.`,
}

// setupCheck is one check of a client's setup: what init runs after
// writing, and what doctor reports.
type setupCheck struct {
	Client  string `json:"client,omitempty"` // "" for the workspace
	Check   string `json:"check"`            // workspace, config, program, version, server, hook, settings
	OK      bool   `json:"ok"`
	Message string `json:"message"`
	Fix     string `json:"fix,omitempty"`
}

// doctorReport is doctor's result.
type doctorReport struct {
	Root   string        `json:"root"`
	OK     bool          `json:"ok"`
	Checks []*setupCheck `json:"checks"`
}

// setupCheckTimeout bounds each program doctor and init run.
const setupCheckTimeout = 30 * time.Second

// runDoctor checks the setup of the client named, or of every client
// configured in the workspace, prints what it found, and exits 1 if a
// check failed.
func runDoctor(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(doctorCmd.name)
	fs.BoolVar(&e.json, "json", e.json, "print the checks as JSON")
	pos, err := parseCommand(e, doctorCmd, fs, args)
	if err != nil {
		return err
	}
	names := initClientNames(initClients)
	client, err := doctorClient(pos, names)
	if err != nil {
		return err
	}
	if err := checkRoot(e.root); err != nil {
		return err
	}
	root, err := filepath.Abs(e.root)
	if err != nil {
		return err
	}
	rep := &doctorReport{Root: root}
	rep.Checks = append(rep.Checks, e.checkWorkspace(root)...)
	if ws := e.ws; ws != nil {
		rep.Root = ws.Dir()
	}
	setups, err := doctorSetups(rep.Root, client, names)
	if err != nil {
		return err
	}
	rep.Checks = append(rep.Checks, checkSetups(ctx, rep.Root, setups, names)...)
	rep.OK = len(failedChecks(rep.Checks)) == 0
	if err := printDoctor(e, rep); err != nil {
		return err
	}
	if !rep.OK {
		return exitStatus(exitError)
	}
	return nil
}

// doctorClient returns the client the command line names, one of names,
// or "" when it names none and doctor checks every client configured.
func doctorClient(pos, names []string) (string, error) {
	if len(pos) > 1 {
		return "", usagef(doctorCmd.name, "doctor takes at most one client: %s", strings.Join(names, ", "))
	}
	if len(pos) == 0 {
		return "", nil
	}
	if !slices.Contains(names, pos[0]) {
		return "", usagef(doctorCmd.name, "unknown client %q: use one of %s", pos[0], strings.Join(names, ", "))
	}
	return pos[0], nil
}

// doctorSetups reads the setup in root of client or, with client "", of
// each client in names whose configuration uses editguard or cannot be
// read: the ones there are to check.
func doctorSetups(root, client string, names []string) ([]*clientSetup, error) {
	var setups []*clientSetup
	for _, name := range names {
		if client != "" && name != client {
			continue
		}
		s, err := readClientSetup(root, name)
		if err != nil {
			return nil, err
		}
		if client == "" && !s.configured() && len(s.broken) == 0 {
			continue
		}
		setups = append(setups, s)
	}
	return setups, nil
}

// checkSetups runs the checks of each setup in root, in turn. A setup
// whose files cannot be read, or that does not use editguard, gets config
// checks saying so instead; with no setup at all, one config check says
// that no client is configured, naming the clients in names.
func checkSetups(ctx context.Context, root string, setups []*clientSetup, names []string) []*setupCheck {
	var checks []*setupCheck
	if len(setups) == 0 {
		checks = append(checks, &setupCheck{
			Check:   "config",
			Message: "no client is configured to use editguard in " + root,
			Fix:     "run editguard init CLIENT (" + strings.Join(names, ", ") + ") in the workspace",
		})
	}
	for _, s := range setups {
		checks = append(checks, s.broken...)
		switch {
		case len(s.broken) > 0:
			continue
		case !s.configured():
			checks = append(checks, &setupCheck{
				Client:  s.client,
				Check:   "config",
				Message: fmt.Sprintf("%s is not configured to use editguard in %s", clientTitle(s.client), root),
				Fix:     fmt.Sprintf("run editguard init %s (or init %s --hooks)", s.client, s.client),
			})
			continue
		}
		checks = append(checks, runSetupChecks(ctx, s, true, true, nil)...)
		checks = append(checks, s.settingsChecks()...)
	}
	return checks
}

// printDoctor prints doctor's report: as JSON with --json, otherwise one
// check after another and a last line that counts the problems, or says
// there are none.
func printDoctor(e *env, rep *doctorReport) error {
	if e.json {
		return e.printJSON(rep)
	}
	fmt.Fprintf(e.stdout, "editguard doctor: %s\n", rep.Root)
	for _, c := range rep.Checks {
		printCheck(e.stdout, "", c)
	}
	if n := len(failedChecks(rep.Checks)); n > 0 {
		fmt.Fprintf(e.stdout, "%d of %d checks found a problem: editguard does not guard this setup as configured until they are fixed\n", n, len(rep.Checks))
	} else {
		fmt.Fprintf(e.stdout, "all %d checks ok\n", len(rep.Checks))
	}
	return nil
}

// checkWorkspace opens the workspace, as every editguard program does, and
// reports whether its state is trusted and recovery found problems. The
// workspace stays open in e.
func (e *env) checkWorkspace(root string) []*setupCheck {
	ws, err := editguard.Open(root, nil)
	if err != nil {
		c := &setupCheck{Check: "workspace", Message: "the workspace does not open: " + err.Error()}
		var ge *editguard.Error
		if errors.As(err, &ge) {
			c.Message, c.Fix = "the workspace does not open: "+ge.Message, cliHint(ge)
		}
		if errors.Is(err, editguard.ErrForeignState) {
			c.Message = "the state directory is not trusted, so every editguard program refuses to work here: " + strings.TrimPrefix(c.Message, "the workspace does not open: ")
		}
		return []*setupCheck{c}
	}
	e.ws = ws
	rec := ws.Recovery()
	var checks []*setupCheck
	for _, p := range rec.Problems {
		checks = append(checks, &setupCheck{
			Check:   "workspace",
			Message: "recovery: " + p.Message,
			Fix:     "look at what it names; editguard state shows the state directory, and the next editguard program to open the workspace tries again",
		})
	}
	if len(checks) > 0 {
		return checks
	}
	msg := "the state directory is trusted, and recovery found no problems"
	for _, w := range rec.Warnings {
		msg += "; warning: " + w.Message
	}
	return []*setupCheck{{Check: "workspace", OK: true, Message: msg}}
}

// failedChecks returns the checks that found a problem.
func failedChecks(checks []*setupCheck) []*setupCheck {
	var failed []*setupCheck
	for _, c := range checks {
		if !c.OK {
			failed = append(failed, c)
		}
	}
	return failed
}

// printCheck prints one check, after prefix.
func printCheck(w io.Writer, prefix string, c *setupCheck) {
	status, what := "ok", c.Check
	if !c.OK {
		status = "PROBLEM"
	}
	if c.Client != "" {
		what = c.Client + " " + c.Check
	}
	fmt.Fprintf(w, "%s%-7s %s: %s\n", prefix, status, what, c.Message)
	if !c.OK && c.Fix != "" {
		fmt.Fprintf(w, "%s        fix: %s\n", strings.Repeat(" ", len(prefix)), c.Fix)
	}
}

// clientTitle is a client's name as its makers write it.
func clientTitle(client string) string {
	switch client {
	case "claude-code":
		return "Claude Code"
	case "gemini":
		return "Gemini CLI"
	case "codex":
		return "Codex"
	case "cursor":
		return "Cursor"
	}
	return client
}

// clientSetup is what a client's configuration files in a workspace say
// about editguard.
type clientSetup struct {
	root, client string
	broken       []*setupCheck // files that could not be read
	server       *serverEntry  // mcpServers.editguard, or nil
	hookServer   *serverEntry  // mcpServers.editguard-hooks (init --hooks --via mcp), or nil
	hooks        []hookEntry   // the hook handlers that run editguard
	json         map[string]map[string]any
	toml         *tomlDoc
}

// serverEntry is editguard's MCP server in a configuration.
type serverEntry struct {
	file    string
	command string
	args    []string
}

// hookEntry is one hook handler that runs editguard.
type hookEntry struct {
	file, event, matcher, command string
}

func (s *clientSetup) configured() bool {
	return s.server != nil || s.hookServer != nil || len(s.hooks) > 0
}

// clientFiles are the configuration files of each client that init
// writes, MCP server first.
var clientFiles = map[string][]string{
	"claude-code": {".mcp.json", claudeLocalSettings, claudeSharedSettings},
	"gemini":      {".gemini/settings.json"},
	"codex":       {".codex/config.toml"},
	"cursor":      {".cursor/mcp.json"},
}

// maxClientConfig bounds the size of a client's configuration file that
// doctor reads: the workspace's default limit on a file read whole.
const maxClientConfig = 64 << 20

// readClientSetup reads client's configuration files in root.
func readClientSetup(root, client string) (*clientSetup, error) {
	s := &clientSetup{root: root, client: client, json: map[string]map[string]any{}}
	for _, name := range clientFiles[client] {
		// Not os.ReadFile: a FIFO at the name would block it for ever.
		data, err := safeopen.ReadFile(filepath.Join(root, filepath.FromSlash(name)), maxClientConfig)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			s.broken = append(s.broken, &setupCheck{Client: client, Check: "config", Message: "cannot read " + name + ": " + err.Error()})
			continue
		}
		if strings.HasSuffix(name, ".toml") {
			doc, err := parseTOML(string(data))
			if err != nil {
				s.broken = append(s.broken, &setupCheck{Client: client, Check: "config", Message: name + " is not valid TOML: " + err.Error(), Fix: "fix it, then run editguard init " + client + " again"})
				continue
			}
			s.toml = doc
			s.readTOML(name, doc)
			continue
		}
		var m map[string]any
		if jsoncFiles[name] {
			// Comments and trailing commas blanked out, as the client reads it.
			if std, err := hujson.Standardize(data); err == nil {
				data = std
			}
		}
		if strings.TrimSpace(string(data)) != "" {
			if err := json.Unmarshal(data, &m); err != nil {
				s.broken = append(s.broken, &setupCheck{Client: client, Check: "config", Message: name + " is not valid JSON: " + err.Error(), Fix: "fix it, then run editguard init " + client + " again"})
				continue
			}
		}
		s.json[name] = m
		s.readJSON(name, m)
	}
	return s, nil
}

func (s *clientSetup) readJSON(file string, m map[string]any) {
	if srv, ok := jsonGet(m, "mcpServers", "editguard").(map[string]any); ok && s.server == nil {
		s.server = newServerEntry(file, srv)
	}
	if srv, ok := jsonGet(m, "mcpServers", hookMCPServer).(map[string]any); ok && s.hookServer == nil {
		s.hookServer = newServerEntry(file, srv)
	}
	events, _ := jsonGet(m, "hooks").(map[string]any)
	s.readHooks(file, events)
}

func (s *clientSetup) readTOML(file string, doc *tomlDoc) {
	if srv, ok := doc.get("mcp_servers", "editguard").(map[string]any); ok {
		s.server = newServerEntry(file, srv)
	}
	events, _ := doc.get("hooks").(map[string]any)
	s.readHooks(file, events)
}

func newServerEntry(file string, srv map[string]any) *serverEntry {
	e := &serverEntry{file: file}
	e.command, _ = srv["command"].(string)
	args, _ := srv["args"].([]any)
	for _, a := range args {
		str, _ := a.(string)
		e.args = append(e.args, str)
	}
	return e
}

// readHooks reads the hook handlers that run editguard, in the format the
// three clients share: {EVENT: [{"matcher": M, "hooks": [{"command": C}]}]}.
func (s *clientSetup) readHooks(file string, events map[string]any) {
	names := make([]string, 0, len(events))
	for ev := range events {
		names = append(names, ev)
	}
	slices.Sort(names)
	for _, ev := range names {
		groups, _ := events[ev].([]any)
		for _, g := range groups {
			matcher, _ := jsonGet(g, "matcher").(string)
			handlers, _ := jsonGet(g, "hooks").([]any)
			for _, h := range handlers {
				if c, _ := jsonGet(h, "command").(string); isHookCommand(c) {
					s.hooks = append(s.hooks, hookEntry{file: file, event: ev, matcher: matcher, command: c})
				}
			}
		}
	}
}

// jsonGet walks v, a decoded JSON value, along path.
func jsonGet(v any, path ...string) any {
	for _, k := range path {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

// runSetupChecks runs what s names, as the client would: with mcp, the MCP
// server's program and the server itself; with hooks, each hook command's
// program and the command itself. With only set, just the entries that
// name those programs as init writes them are run.
func runSetupChecks(ctx context.Context, s *clientSetup, mcp, hooks bool, only *initPrograms) []*setupCheck {
	var checks []*setupCheck
	if mcp && s.server != nil && (only == nil || s.server.command == only.editguard) {
		srv := s.server
		prog, pc := s.checkProgram(srv.file, srv.command)
		checks = append(checks, pc...)
		if prog != "" {
			checks = append(checks, s.checkServer(ctx, srv))
		}
	}
	if hooks && s.hookServer != nil && only == nil {
		prog, pc := s.checkProgram(s.hookServer.file, s.hookServer.command)
		checks = append(checks, pc...)
		if prog != "" {
			checks = append(checks, checkHookMCP(ctx, s.root, prog))
		}
	}
	if hooks {
		var seen []string
		for _, h := range s.hooks {
			if slices.Contains(seen, h.command) || only != nil && h.command != hookCommand(s.client, only.hook) {
				continue
			}
			seen = append(seen, h.command)
			words, _ := commandWords(h.command)
			prog, pc := s.checkProgram(h.file, words[0])
			checks = append(checks, pc...)
			if prog != "" {
				checks = append(checks, s.checkHook(ctx, h))
			}
		}
	}
	return checks
}

// checkProgram checks the program named in file: that it exists and may be
// executed, and its version. It returns its path, "" if it cannot be run.
func (s *clientSetup) checkProgram(file, name string) (string, []*setupCheck) {
	c := &setupCheck{Client: s.client, Check: "program"}
	fixInit := fmt.Sprintf("%s, then run editguard init %s again", installHint, s.client)
	path := name
	switch {
	case name == "":
		c.Message = file + " names no command for editguard"
		c.Fix = "run editguard init " + s.client + " again"
		return "", []*setupCheck{c}
	case !strings.Contains(name, "/"):
		found, err := lookPath(name)
		if err != nil {
			c.Message = fmt.Sprintf("%s names %s by its name alone, and it is not on this PATH (%v): a client with this PATH cannot start it, and is not guarded", file, name, err)
			c.Fix = fmt.Sprintf("run editguard init %s without --bare-names to write the absolute path, or put %s on the PATH the client runs with (%s)", s.client, name, installHint)
			return "", []*setupCheck{c}
		}
		path = found
	case !filepath.IsAbs(name):
		path = filepath.Join(s.root, name)
	}
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		why := "does not exist"
		switch {
		case err != nil && !errors.Is(err, os.ErrNotExist):
			why = "cannot be read: " + err.Error()
		case err == nil:
			why = "is not an executable file"
		}
		c.Message = fmt.Sprintf("%s names %s, which %s: the client cannot start it, and is not guarded", file, name, why)
		c.Fix = fixInit
		return "", []*setupCheck{c}
	}
	c.OK = true
	c.Message = fmt.Sprintf("%s names %s", file, name)
	if path != name {
		c.Message += ", found on PATH at " + path + " (the client's PATH must have it too)"
	}
	v := &setupCheck{Client: s.client, Check: "version"}
	got, err := programVersion(path)
	switch {
	case err != nil:
		v.Message = fmt.Sprintf("cannot tell the version of %s: %v", path, err)
		v.Fix = fixInit
	case got != version():
		v.Message = fmt.Sprintf("%s is editguard %s, and this editguard is %s", path, got, version())
		v.Fix = fmt.Sprintf("%s, both from one build, then run editguard init %s with them", installHint, s.client)
	default:
		v.OK = true
		v.Message = fmt.Sprintf("%s is editguard %s, as this one", path, got)
	}
	return path, []*setupCheck{c, v}
}

// programVersion returns the version of the editguard program at path:
// what "editguard version" prints, or for editguard-hook, which has no
// such command, the version recorded in the program file.
func programVersion(path string) (string, error) {
	if filepath.Base(path) == hookName {
		bi, err := buildinfo.ReadFile(path)
		if err != nil {
			return "", err
		}
		return versionOf(bi), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupCheckTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "version").Output()
	if err != nil {
		return "", fmt.Errorf("%s version: %v", path, err)
	}
	// "editguard VERSION (GO OS/ARCH)"
	v, ok := strings.CutPrefix(string(out), "editguard ")
	v, _, ok2 := strings.Cut(v, " (")
	if !ok || !ok2 || v == "" || strings.ContainsAny(v, " \n") {
		return "", fmt.Errorf("%s version printed %q, not editguard's version", path, firstLine(string(out)))
	}
	return v, nil
}

// checkServer starts the MCP server as the client does and sends it an
// MCP initialize.
func (s *clientSetup) checkServer(ctx context.Context, srv *serverEntry) *setupCheck {
	args := make([]string, len(srv.args))
	for i, a := range srv.args {
		args[i] = strings.ReplaceAll(a, "${workspaceFolder}", s.root)
	}
	line := strings.Join(append([]string{shellQuote(srv.command)}, quoteAll(args)...), " ")
	c := &setupCheck{Client: s.client, Check: "server"}
	info, err := mcpInitialize(ctx, s.root, srv.command, args)
	if err != nil {
		c.Message = fmt.Sprintf("the MCP server in %s (%s, in %s) does not answer an MCP initialize: %v; %s cannot use editguard's tools", srv.file, line, s.root, err, clientTitle(s.client))
		c.Fix = fmt.Sprintf("run %s in %s to see why, fix it (or run editguard init %s again)", line, s.root, s.client)
		return c
	}
	c.OK = true
	c.Message = fmt.Sprintf("the MCP server in %s (%s) answered initialize: %s %s", srv.file, line, info.Name, info.Version)
	return c
}

func quoteAll(args []string) []string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return q
}

// mcpServerInfo is the serverInfo of an initialize result.
type mcpServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// mcpInitialize starts command with args in dir, sends an MCP initialize
// request over its standard input, and returns the serverInfo of the
// result; then it closes the server's input, which ends it.
func mcpInitialize(ctx context.Context, dir, command string, args []string) (*mcpServerInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, setupCheckTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, command, args...)
	cmd.Dir = dir
	cmd.WaitDelay = 2 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr := &tailBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	waited := false
	wait := func() error {
		waited = true
		stdin.Close()
		return cmd.Wait()
	}
	defer func() {
		if !waited {
			wait()
		}
	}()
	req, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": 1, "method": "initialize",
		"params": map[string]any{
			"protocolVersion": "2025-06-18",
			"capabilities":    map[string]any{},
			"clientInfo":      map[string]any{"name": "editguard-doctor", "version": version()},
		},
	})
	if _, err := stdin.Write(append(req, '\n')); err != nil {
		// The program closed its input, almost always by exiting
		// before it read anything: say so, with its status and what
		// it printed, not the pipe's error.
		return nil, fmt.Errorf("it ended before answering%s", exited(wait(), stderr))
	}
	r := bufio.NewReaderSize(stdout, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("no answer within %v%s", setupCheckTimeout, exited(nil, stderr))
			}
			return nil, fmt.Errorf("it ended before answering%s", exited(wait(), stderr))
		}
		var resp struct {
			ID     json.RawMessage `json:"id"`
			Result *struct {
				ServerInfo mcpServerInfo `json:"serverInfo"`
			} `json:"result"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(line, &resp) != nil || string(resp.ID) != "1" {
			continue // a notification, or not JSON-RPC at all
		}
		switch {
		case resp.Error != nil:
			return nil, fmt.Errorf("it answered with an error: %s", resp.Error.Message)
		case resp.Result == nil:
			return nil, errors.New("it answered without a result")
		}
		return &resp.Result.ServerInfo, nil
	}
}

// exited describes how a program that stopped answering ended.
func exited(err error, stderr *tailBuffer) string {
	var b strings.Builder
	if err != nil {
		b.WriteString(" (" + err.Error() + ")")
	}
	if t := strings.Join(strings.Fields(stderr.String()), " "); t != "" {
		if len(t) > 600 {
			t = "..." + t[len(t)-600:]
		}
		b.WriteString("; it printed: " + t)
	}
	return b.String()
}

// tailBuffer keeps the last 2 KiB written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if over := len(t.b) - 2048; over > 0 {
		t.b = t.b[over:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }

// hookProbeReply is editguard hook's answer to the probe event.
type hookProbeReply struct {
	Version string `json:"version"`
	Root    string `json:"root"`
}

// answerHookProbe answers the probe event: the workspace opens, and the
// answer names the version that answered and the workspace's root.
func answerHookProbe(e *env) error {
	ws, err := e.workspace()
	if err != nil {
		return err
	}
	return json.NewEncoder(e.stdout).Encode(map[string]any{"editguard_probe": hookProbeReply{Version: version(), Root: ws.Dir()}})
}

// checkHook runs a hook command as the client runs it, with sh -c in the
// root, on the probe event.
func (s *clientSetup) checkHook(ctx context.Context, h hookEntry) *setupCheck {
	c := &setupCheck{Client: s.client, Check: "hook"}
	reply, err := hookProbe(ctx, s.root, h.command)
	again := "editguard init " + s.client + " --hooks"
	if s.server != nil && s.client == "codex" {
		again = "editguard init codex"
	}
	fix := fmt.Sprintf("fix what it printed; if a program is missing or older than this editguard, %s, then run %s again", installHint, again)
	switch {
	case err != nil:
		c.Message = fmt.Sprintf("the hook command in %s (%s) does not work: %v; %s's own tools run unguarded, or are blocked", h.file, h.command, err, clientTitle(s.client))
		c.Fix = fix
	case reply.Version != version():
		c.Message = fmt.Sprintf("the hook command in %s (%s) ran editguard %s, and this editguard is %s", h.file, h.command, reply.Version, version())
		c.Fix = fmt.Sprintf("%s, both from one build, then run %s with them", installHint, again)
	case !sameDir(reply.Root, s.root):
		c.Message = fmt.Sprintf("the hook command in %s (%s) guards %s, not this workspace", h.file, h.command, reply.Root)
		c.Fix = fix
	default:
		c.OK = true
		c.Message = fmt.Sprintf("the hook command in %s (%s) answered a probe: editguard %s", h.file, h.command, reply.Version)
	}
	return c
}

// hookProbeEvent names the event init and doctor send a hook command to
// see that it runs; no client sends it.
const hookProbeEvent = "EditguardProbe"

// hookProbe runs a hook command in root, as a client does (with sh -c,
// the project's directory in CLAUDE_PROJECT_DIR and GEMINI_PROJECT_DIR),
// on the probe event, and returns the answer.
func hookProbe(ctx context.Context, root, command string) (*hookProbeReply, error) {
	ctx, cancel := context.WithTimeout(ctx, setupCheckTimeout)
	defer cancel()
	event, _ := json.Marshal(map[string]any{"session_id": "editguard-probe", "hook_event_name": hookProbeEvent, "cwd": root})
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CLAUDE_PROJECT_DIR="+root, "GEMINI_PROJECT_DIR="+root)
	cmd.Stdin = bytes.NewReader(event)
	cmd.WaitDelay = 2 * time.Second
	var stdout bytes.Buffer
	stderr := &tailBuffer{}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("no answer within %v%s", setupCheckTimeout, exited(nil, stderr))
	case errors.As(err, &ee):
		return nil, fmt.Errorf("exit status %d%s", ee.ExitCode(), exited(nil, stderr))
	case err != nil:
		return nil, err
	}
	var answer struct {
		Probe *hookProbeReply `json:"editguard_probe"`
	}
	if json.Unmarshal(stdout.Bytes(), &answer) != nil || answer.Probe == nil {
		out := strings.TrimSpace(stdout.String())
		if out == "" {
			out = "nothing"
		}
		return nil, fmt.Errorf("it answered %s, not editguard's answer to a probe (an editguard older than this one, or not editguard)%s", strconv.Quote(firstLine(out)), exited(nil, stderr))
	}
	return answer.Probe, nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	if len(l) > 200 {
		l = l[:200] + "..."
	}
	return l
}

// sameDir reports whether a and b name one directory.
func sameDir(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// settingsChecks checks the client's settings that init writes.
func (s *clientSetup) settingsChecks() []*setupCheck {
	var problems []*setupCheck
	problem := func(msg, fix string) {
		problems = append(problems, &setupCheck{Client: s.client, Check: "settings", Message: msg, Fix: fix})
	}
	initFix := "run editguard init " + s.client + " again"
	hookFix := "run editguard init " + s.client + " --hooks again"
	switch s.client {
	case "claude-code":
		s.claudeSettings(problem, initFix, hookFix)
	case "gemini":
		s.geminiSettings(problem, initFix, hookFix)
	case "codex":
		s.codexSettings(problem, initFix, hookFix)
	}
	if len(problems) > 0 {
		return problems
	}
	if s.client == "cursor" {
		return nil
	}
	return []*setupCheck{{Client: s.client, Check: "settings", OK: true, Message: "the settings init writes are in place"}}
}

// claudeSettings checks Claude Code's project settings, the local and
// the shared file taken together as Claude Code merges them: with the MCP
// server, that Claude Code's own file tools are denied, and that it starts
// editguard's server and offers and runs its tools without asking; with
// hooks, that editguard's run for every tool init's name (matcherChecks).
// Each problem goes to problem, with initFix or hookFix as its fix.
func (s *clientSetup) claudeSettings(problem func(msg, fix string), initFix, hookFix string) {
	files := []string{claudeLocalSettings, claudeSharedSettings}
	st := mergeSettings(s.json[claudeLocalSettings], s.json[claudeSharedSettings])
	file := claudeLocalSettings
	if s.json[claudeLocalSettings] == nil && s.json[claudeSharedSettings] != nil {
		file = claudeSharedSettings
	} else if s.json[claudeSharedSettings] != nil {
		file = claudeLocalSettings + " and " + claudeSharedSettings
	}
	if s.server != nil {
		deny := jsonGet(st, "permissions", "deny")
		var missing []string
		for _, t := range claudeDenied {
			if !jsonHas(deny, t) {
				missing = append(missing, t)
			}
		}
		if len(missing) > 0 {
			problem(fmt.Sprintf("%s: permissions.deny lacks %s, so the model can change files with Claude Code's own tools, unguarded", file, strings.Join(missing, ", ")), initFix)
		}
		if !jsonHas(jsonGet(st, "permissions", "allow"), "mcp__editguard") {
			problem(file+": permissions.allow lacks mcp__editguard, so Claude Code asks before each editguard tool call, and a headless run (-p) refuses them", initFix)
		}
		if !jsonHas(jsonGet(st, "enabledMcpjsonServers"), "editguard") && jsonGet(st, "enableAllProjectMcpServers") != true {
			problem(file+": enabledMcpjsonServers lacks editguard, so Claude Code asks before it starts the server of .mcp.json, and a headless run does not start it", initFix)
		}
		if jsonHas(jsonGet(st, "disabledMcpjsonServers"), "editguard") {
			problem(file+": disabledMcpjsonServers lists editguard, so Claude Code does not start it", "remove editguard from disabledMcpjsonServers")
		}
		if v := jsonGet(st, "env", "ENABLE_TOOL_SEARCH"); v != "false" {
			problem(fmt.Sprintf("%s: env.ENABLE_TOOL_SEARCH is %v, not \"false\": Claude Code may put editguard's tools behind its tool search", file, jsonText(v)), initFix)
		}
	}
	if s.hasHooks(files...) {
		s.matcherChecks(files, claudeHooks, problem, hookFix)
	}
}

// mergeSettings merges Claude Code settings objects the way it does across
// its files: arrays are joined, objects merged key by key, and for any
// other value the first file that sets it wins.
func mergeSettings(first, second map[string]any) map[string]any {
	out := make(map[string]any, len(first)+len(second))
	for k, v := range second {
		out[k] = v
	}
	for k, v := range first {
		switch a := v.(type) {
		case []any:
			if b, ok := out[k].([]any); ok {
				v = append(append([]any{}, a...), b...)
			}
		case map[string]any:
			if b, ok := out[k].(map[string]any); ok {
				v = mergeSettings(a, b)
			}
		}
		out[k] = v
	}
	return out
}

// geminiSettings checks .gemini/settings.json: with the MCP server, that
// editguard's server is trusted and Gemini CLI's own file tools, and no
// tool of editguard's names, are excluded; with hooks, that editguard's
// run for every tool init's name (matcherChecks). Each problem goes to
// problem, with initFix or hookFix as its fix.
func (s *clientSetup) geminiSettings(problem func(msg, fix string), initFix, hookFix string) {
	const file = ".gemini/settings.json"
	st := s.json[file]
	ex := jsonGet(st, "tools", "exclude")
	exName := "tools.exclude"
	if jsonGet(st, "excludeTools") != nil {
		ex, exName = jsonGet(st, "excludeTools"), "excludeTools"
	}
	if s.server != nil {
		if jsonGet(st, "mcpServers", "editguard", "trust") != true {
			problem(file+": mcpServers.editguard.trust is not true, so Gemini CLI asks before each editguard tool call", initFix)
		}
		var missing, hidden []string
		for _, t := range geminiExcluded {
			if !jsonHas(ex, t) {
				missing = append(missing, t)
			}
		}
		for _, t := range toolset.Names(false) {
			if jsonHas(ex, t) {
				hidden = append(hidden, t)
			}
		}
		if len(missing) > 0 {
			problem(fmt.Sprintf("%s: %s lacks %s, so the model can change files with Gemini CLI's own tools, unguarded", file, exName, strings.Join(missing, ", ")), initFix)
		}
		if len(hidden) > 0 {
			problem(fmt.Sprintf("%s: %s lists %s, which hides editguard's tool of that name too", file, exName, strings.Join(hidden, ", ")), "remove "+strings.Join(hidden, ", ")+" from "+exName)
		}
	}
	if s.hasHooks(file) {
		s.matcherChecks([]string{file}, geminiHooks, problem, hookFix)
	}
}

// codexSettings checks .codex/config.toml: with the MCP server, that
// Codex keeps editguard's longer pages whole, runs its tools without
// asking, and has the hooks for its own file tools, which cannot be turned
// off; with hooks, that editguard's run for every tool init's name
// (matcherChecks). Each problem goes to problem, with initFix or hookFix
// as its fix (initFix for the hooks too with the MCP server: init writes
// them along with it).
func (s *clientSetup) codexSettings(problem func(msg, fix string), initFix, hookFix string) {
	const file = ".codex/config.toml"
	mcp := s.server != nil
	if mcp {
		lim, _ := s.toml.get("tool_output_token_limit").(tomlScalar)
		n, err := strconv.Atoi(strings.ReplaceAll(string(lim), "_", ""))
		switch {
		case lim == "":
			problem(fmt.Sprintf("%s: tool_output_token_limit is not set: Codex cuts editguard's longer pages in the middle", file), initFix)
		case err != nil || n < codexOutputLimit:
			problem(fmt.Sprintf("%s: tool_output_token_limit is %s, less than %d: Codex cuts editguard's longer pages in the middle", file, lim, codexOutputLimit), fmt.Sprintf("set tool_output_token_limit = %d at the top of %s", codexOutputLimit, file))
		}
		if m := s.toml.get("mcp_servers", "editguard", "default_tools_approval_mode"); m != "approve" {
			problem(fmt.Sprintf("%s: mcp_servers.editguard.default_tools_approval_mode is %v, not \"approve\": Codex asks before each editguard tool that changes files, and codex exec refuses them", file, jsonText(m)), initFix)
		}
		if !s.hasHooks(file) {
			problem(file+": no editguard hooks for Codex's own apply_patch and exec_command, which cannot be turned off: their changes are unguarded", initFix)
		}
	}
	if s.hasHooks(file) {
		fix := hookFix
		if mcp {
			fix = initFix
		}
		s.matcherChecks([]string{file}, codexHooks, problem, fix)
	}
}

func (s *clientSetup) hasHooks(files ...string) bool {
	return slices.ContainsFunc(s.hooks, func(h hookEntry) bool { return slices.Contains(files, h.file) })
}

// matcherChecks checks that for each of init's hooks, editguard's hooks in
// files (which the client merges) run for every tool it names.
func (s *clientSetup) matcherChecks(files []string, want []initHook, problem func(msg, fix string), fix string) {
	for _, h := range want {
		if h.matcher == "" { // an event of no tool: any hook of editguard's on it runs
			if !slices.ContainsFunc(s.hooks, func(e hookEntry) bool { return slices.Contains(files, e.file) && e.event == h.event }) {
				problem(fmt.Sprintf("%s: no editguard hook on hooks.%s, which runs %s: those commands are not guarded", strings.Join(files, " and "), h.event, h.what), fix)
			}
			continue
		}
		tools := strings.Split(strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(h.matcher, "^"), "("), ")$"), "|")
		var missing []string
		for _, tool := range tools {
			covered := false
			for _, e := range s.hooks {
				if !slices.Contains(files, e.file) || e.event != h.event {
					continue
				}
				re, err := regexp.Compile(e.matcher)
				if e.matcher == "" || e.matcher == "*" || err == nil && re.MatchString(tool) {
					covered = true
				}
			}
			if !covered {
				missing = append(missing, tool)
			}
		}
		if len(missing) > 0 {
			problem(fmt.Sprintf("%s: no editguard hook on hooks.%s runs for %s: those tools are not guarded", strings.Join(files, " and "), h.event, strings.Join(missing, ", ")), fix)
		}
	}
}

// jsonHas reports whether arr, a decoded JSON array, holds the string s.
func jsonHas(arr any, s string) bool {
	a, _ := arr.([]any)
	return slices.Contains(a, any(s))
}

// jsonText renders a decoded value for a message: "not set" for nothing.
func jsonText(v any) string {
	if v == nil {
		return "not set"
	}
	if sc, ok := v.(tomlScalar); ok {
		return string(sc)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
