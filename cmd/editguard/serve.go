package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/mcpserver"
)

var serveCmd = &command{
	name:    "serve",
	args:    "[--http ADDR [--tokens FILE] [--tls-cert FILE --tls-key FILE] [--insecure] [--max-inflight N] [--rate N] [--burst N] [--max-sessions N] [--max-sessions-per-token N] [--session-timeout D]] [--approve auto|ask|read-only] [--deny GLOB]... [--no-merge] [--token TOKEN]",
	summary: "serve the file tools to MCP clients (stdio, or streamable HTTP)",
	help: `Serve offers every editguard tool (read_file, edit_file, write_file,
apply_patch, restore_file and the rest) to MCP clients. Each MCP session
has its own read baselines, so two agents on one workspace conflict exactly
as they should.

Without --http it speaks MCP on stdin/stdout (one session). With --http ADDR
it serves streamable HTTP at http://ADDR/mcp (https://ADDR/mcp with TLS).
SIGINT or SIGTERM stops the server gracefully.

Both protocol eras are served at once, on stdio and on HTTP: clients of
2025-11-25 and earlier open a session (initialize, Mcp-Session-Id);
clients of 2026-07-28 have none (server/discover, stateless HTTP). A
2026-07-28 call runs in the session of the agent its token names (one per
token; one for all without tokens), or in one of its own: the tool
begin_session returns a handle to pass as the "session" argument of any
tool. A handle answers only to the token that made it. A change sent
twice (the same "editguard/idempotency_key" in the call's _meta; before
2026-07-28 the same JSON-RPC id in one MCP session; in 2026-07-28 the same
request sent again right after itself) is made once; the
second call gets the first one's result while the files still hold what
it says, else STALE_FILE saying what they hold now.

On a loopback address (127.0.0.1:PORT, [::1]:PORT, localhost:PORT) any
local program may connect, unless tokens are set. Any other address (a LAN
address, 0.0.0.0, a host name) is a remote server, and serve refuses to
start unless:

  - --tokens FILE gives each agent its own bearer token, and
  - --tls-cert FILE and --tls-key FILE (PEM; both or neither) make it serve
    HTTPS (TLS 1.2 or later), or --insecure allows plain HTTP on a network
    that is already private (a VPN, a TLS proxy in front); a warning says so.

The tokens file has one agent per line, "AGENT TOKEN"; blank lines and
lines starting with # are ignored:

  # agent   token (openssl rand -hex 32)
  alice     6f1d0c...
  ci-bot    9a3e77...

An agent name is 1 to 32 letters, digits, '.', '_' or '-'. A token is 32 to
512 characters of A-Z a-z 0-9 - . _ ~ + / (then optional '=') with at least
8 different ones; each agent and each token appears once. Like ssh with a
key, serve refuses a tokens file that group or others may read or write
(chmod 600) or that another user owns. The file is read once, at start.

With tokens, every request must carry "Authorization: Bearer TOKEN"; any
other gets 401. The agent's name goes into the ledger: its sessions are
named AGENT/mcp-ID (see editguard log). A session answers only to the token
that opened it; another token gets 403. Each token may have --max-inflight
requests being handled at once (default 8; a session's event stream does not
count) and --rate requests per second with bursts of --burst (default 20,
bursts of twice the rate); more get 429 with Retry-After. 0 means no limit.

--token TOKEN (or EDITGUARD_TOKEN) sets one token for an unnamed agent
instead of a tokens file; it is for loopback addresses only.

The HTTP server allows 10 s for the TLS handshake and request headers
(at most 64 KiB), 60 s for a request body, and closes connections idle
for 2 minutes. A request (an HTTP body, or one message on stdio) may be
six times --max-file-size plus 4 MiB (room for JSON's escapes of a file at
the limit); a larger one is refused (HTTP 413, or a JSON-RPC error on
stdio) without being held in memory. Cross-origin browser
requests get 403, and so does a Host header that is not loopback on a
loopback address (DNS rebinding).

An MCP session that has had no request for --session-timeout (default 10m)
is closed and its reads are forgotten (the agent reads again); so is a
begin_session handle unused that long. At most --max-sessions sessions are
open at once (default 1024), at most --max-sessions-per-token of them with
one token (default 64); a request that would open one more gets a JSON-RPC
error naming the limit (429 for the token's, 503 for the server's) and
should close sessions it no longer uses (DELETE) or wait. Handles count
apart, against the same two limits: begin_session beyond them fails with
BUSY. 0 means no limit.

--approve ask puts the diff of every change to the person at the client
(MCP elicitation; for 2026-07-28 an input_required result, the call coming
back with the answer) and writes only what they accept, after checking the
file again; a client that cannot ask gets REJECTED. --approve read-only offers only the tools that never change
a file (read_file, read_multiple_files, list_directory, directory_tree,
find_files, search_text, file_info, file_history, file_diff,
list_allowed_directories).

--deny GLOB (repeatable) protects more paths from changes, in addition to
.git/**; "**" matches any number of path elements.

An edit_file whose file changed since the session's read merges over that
change when the text it replaces is untouched by it, and says so; --no-merge
refuses every such edit with STALE_FILE instead.

The server's Go garbage collector runs when its heap is three times what is
live (GOGC=200), with a soft memory limit of 1 GiB (GOMEMLIMIT); set either
variable to choose otherwise.`,
}

// globList is a repeatable string flag.
type globList []string

func (g *globList) String() string     { return strings.Join(*g, ",") }
func (g *globList) Set(s string) error { *g = append(*g, s); return nil }

// httpFlags are the flags that apply only with --http.
var httpFlags = []string{"token", "tokens", "tls-cert", "tls-key", "insecure", "max-inflight", "rate", "burst", "max-sessions", "max-sessions-per-token", "session-timeout"}

func runServe(ctx context.Context, e *env, args []string) error {
	fs, v := newServeFlags()
	h := &v.http
	pos, err := parseCommand(e, serveCmd, fs, args)
	if err != nil {
		return err
	}
	if err := checkServeArgs(fs, pos, h.addr); err != nil {
		return err
	}
	if h.token == "" {
		h.token = os.Getenv("EDITGUARD_TOKEN")
	}
	var opts *mcpserver.HTTPOptions
	if h.addr != "" {
		if opts, err = h.options(fs); err != nil {
			return err
		}
	}
	addr := h.addr
	if err := checkRoot(e.root); err != nil {
		return err
	}
	ws, err := editguard.Open(e.root, e.options(&editguard.Options{Deny: append(append([]string{}, editguard.DefaultDeny...), v.deny...), NoMerge: v.noMerge}))
	if err != nil {
		return err
	}
	defer ws.Close()
	// Shell commands whose end will not come (an exec killed while its
	// command ran isolated) are ended before serving.
	if recovered, err := ws.RecoverCommands(ctx); err == nil {
		for _, r := range recovered {
			for _, m := range recoveredCommandNote(r) {
				fmt.Fprintf(e.stderr, "editguard: %s\n", m)
			}
		}
	}
	serverGC(os.Getenv)
	srv, err := mcpserver.New(ws, &mcpserver.Options{
		Approve: v.approve,
		Version: version(),
		Logger:  slog.New(quietStop{slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})}),
	})
	if err != nil {
		return usagef(serveCmd.name, "%v", err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if addr == "" {
		if isTerminal(e.stdin) {
			fmt.Fprint(e.stderr, terminalNote)
		}
		return srv.Run(ctx, srv.Stdio(e.stdin, e.stdout))
	}
	if opts.Insecure && opts.TLS == nil && !mcpserver.IsLoopbackAddr(addr) {
		fmt.Fprintf(e.stderr, "editguard: warning: serving plain HTTP on %s (--insecure): bearer tokens and file contents cross the network unencrypted\n", addr)
	}
	return srv.ListenAndServe(ctx, addr, opts, func(a net.Addr) {
		printServing(e, a, opts, ws.Dir(), v.approve)
	})
}

// serveFlagValues are the values of serve's flags.
type serveFlagValues struct {
	approve string
	deny    globList
	noMerge bool
	http    httpFlagValues
}

// newServeFlags declares serve's flags, so that runServe parses them into
// the values it returns.
func newServeFlags() (*flag.FlagSet, *serveFlagValues) {
	fs := newFlagSet(serveCmd.name)
	v := new(serveFlagValues)
	h := &v.http
	fs.StringVar(&h.addr, "http", "", "serve streamable HTTP on `ADDR` (host:port) instead of stdio")
	fs.StringVar(&v.approve, "approve", mcpserver.ApproveAuto, "approval of changes: auto, ask or read-only")
	fs.Var(&v.deny, "deny", "protect paths matching `GLOB` from changes (repeatable)")
	fs.BoolVar(&v.noMerge, "no-merge", false, "refuse an edit whose file changed since the read, even where it could merge")
	fs.StringVar(&h.tokensFile, "tokens", "", "require a bearer token from `FILE` (lines \"AGENT TOKEN\", mode 600)")
	fs.StringVar(&h.tlsCert, "tls-cert", "", "serve HTTPS with the PEM certificate (chain) in `FILE`")
	fs.StringVar(&h.tlsKey, "tls-key", "", "private key of --tls-cert, PEM, in `FILE`")
	fs.BoolVar(&h.insecure, "insecure", false, "allow plain HTTP on an address that is not loopback")
	fs.IntVar(&h.maxInFlight, "max-inflight", mcpserver.DefaultMaxInFlight, "requests of one token handled at once, at most `N` (0: no limit)")
	fs.Float64Var(&h.rate, "rate", mcpserver.DefaultRate, "requests per second of one token, at most `N` (0: no limit)")
	fs.IntVar(&h.burst, "burst", 0, "largest burst of requests of one token, `N` requests (default twice --rate)")
	fs.IntVar(&h.maxSessions, "max-sessions", mcpserver.DefaultMaxSessions, "MCP sessions (and, apart, begin_session handles) open at once, at most `N` (0: no limit)")
	fs.IntVar(&h.maxSessionsPerToken, "max-sessions-per-token", mcpserver.DefaultMaxSessionsPerToken, "MCP sessions (and, apart, handles) open at once with one token, at most `N` (0: no limit)")
	fs.DurationVar(&h.sessionTimeout, "session-timeout", mcpserver.DefaultSessionTimeout, "close MCP sessions and handles without a request for `D` (0: never)")
	fs.StringVar(&h.token, "token", "", "one bearer `TOKEN` required from HTTP clients on loopback (default $EDITGUARD_TOKEN)")
	return fs, v
}

// checkServeArgs refuses positional arguments, which serve takes none of,
// and, without --http (addr empty), the flags that apply only with it.
func checkServeArgs(fs *flag.FlagSet, pos []string, addr string) error {
	if len(pos) != 0 {
		return usagef(serveCmd.name, "serve takes no arguments, got %q", pos)
	}
	if addr == "" {
		for _, name := range httpFlags {
			if flagWasSet(fs, name) {
				return usagef(serveCmd.name, "--%s applies only with --http", name)
			}
		}
	}
	return nil
}

// printServing tells the person who started serve --http where it listens
// (a, the address it got), on which workspace, and how clients are let in.
func printServing(e *env, a net.Addr, opts *mcpserver.HTTPOptions, dir, approve string) {
	scheme, who := "http", ""
	if opts.TLS != nil {
		scheme = "https"
	}
	switch {
	case opts.Tokens != nil:
		who = fmt.Sprintf(", %d agents with tokens", len(opts.Tokens.Agents()))
	case opts.Token != "":
		who = ", token required"
	}
	fmt.Fprintf(e.stderr, "editguard: serving MCP on %s://%s%s (workspace %s, approve %s%s)\n", scheme, a, mcpserver.Endpoint, dir, approve, who)
}

// httpFlagValues are the values of serve's HTTP flags.
type httpFlagValues struct {
	addr, token, tokensFile, tlsCert, tlsKey string
	insecure                                 bool
	maxInFlight, burst                       int
	rate                                     float64
	maxSessions, maxSessionsPerToken         int
	sessionTimeout                           time.Duration
}

// options checks the flags of serve --http, loads the tokens file and the
// TLS certificate, and refuses an address that is not loopback unless it
// has tokens and TLS or --insecure.
func (h *httpFlagValues) options(fs *flag.FlagSet) (*mcpserver.HTTPOptions, error) {
	if h.tokensFile != "" && h.token != "" {
		return nil, usagef(serveCmd.name, "--tokens and --token (or EDITGUARD_TOKEN) both set; use one")
	}
	if (h.tlsCert == "") != (h.tlsKey == "") {
		return nil, usagef(serveCmd.name, "--tls-cert and --tls-key go together; give both or neither")
	}
	if h.maxInFlight < 0 || h.rate < 0 || h.burst < 0 || math.IsNaN(h.rate) || math.IsInf(h.rate, 0) {
		return nil, usagef(serveCmd.name, "--max-inflight, --rate and --burst take a number of 0 or more")
	}
	if h.maxSessions < 0 || h.maxSessionsPerToken < 0 || h.sessionTimeout < 0 {
		return nil, usagef(serveCmd.name, "--max-sessions, --max-sessions-per-token and --session-timeout take 0 or more")
	}
	if h.tokensFile == "" && h.token == "" {
		for _, name := range []string{"max-inflight", "rate", "burst", "max-sessions-per-token"} {
			if flagWasSet(fs, name) {
				return nil, usagef(serveCmd.name, "--%s is a limit per token; it needs --tokens FILE (or --token)", name)
			}
		}
	}
	o := &mcpserver.HTTPOptions{Token: h.token, Insecure: h.insecure, MaxInFlight: h.maxInFlight, Rate: h.rate, Burst: h.burst}
	if h.maxInFlight == 0 {
		o.MaxInFlight = -1
	}
	if h.rate == 0 {
		o.Rate = -1
	}
	o.MaxSessions, o.MaxSessionsPerToken, o.SessionTimeout = h.maxSessions, h.maxSessionsPerToken, h.sessionTimeout
	if h.maxSessions == 0 {
		o.MaxSessions = -1
	}
	if h.maxSessionsPerToken == 0 {
		o.MaxSessionsPerToken = -1
	}
	if h.sessionTimeout == 0 {
		o.SessionTimeout = -1
	}
	if !mcpserver.IsLoopbackAddr(h.addr) && h.token != "" {
		return nil, usagef(serveCmd.name, "--token (or EDITGUARD_TOKEN) is for loopback addresses; on %s give each agent a token with --tokens FILE", h.addr)
	}
	if h.tokensFile != "" {
		t, err := mcpserver.LoadTokens(h.tokensFile)
		if err != nil {
			return nil, err
		}
		o.Tokens = t
	}
	if h.tlsCert != "" {
		c, err := mcpserver.TLSConfig(h.tlsCert, h.tlsKey)
		if err != nil {
			return nil, err
		}
		o.TLS = c
	}
	if err := mcpserver.CheckListenAddr(h.addr, o); err != nil {
		return nil, usagef(serveCmd.name, "%v", err)
	}
	return o, nil
}

// terminalNote is printed when serve is started by hand at a terminal,
// where it would otherwise wait silently for MCP messages.
const terminalNote = `editguard: serving MCP on stdin/stdout; this is meant to be started by an MCP
client, not typed at. To add editguard to a client, run in the project:
  editguard init claude-code    (or gemini, codex, cursor)
or see 'editguard help serve'. Press Ctrl-D or Ctrl-C to stop.
`

// quietStop drops the SDK's report that the server stopped because its
// context ended: that is Ctrl-C or SIGTERM, a normal stop, not an error.
type quietStop struct{ slog.Handler }

func (q quietStop) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "server run cancelled" {
		return nil
	}
	return q.Handler.Handle(ctx, r)
}

func (q quietStop) WithAttrs(as []slog.Attr) slog.Handler { return quietStop{q.Handler.WithAttrs(as)} }

func (q quietStop) WithGroup(name string) slog.Handler { return quietStop{q.Handler.WithGroup(name)} }
