package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var serveCmd = &command{
	name:    "serve",
	args:    "[--http ADDR] [--approve auto|ask|read-only] [--deny GLOB]... [--token TOKEN]",
	summary: "serve the file tools to MCP clients (stdio, or streamable HTTP)",
	help: `Serve offers read_file, write_file, edit_file, list_directory, file_info,
file_history, restore_file and begin_turn to MCP clients. Each MCP session
has its own read baselines, so two agents on one workspace conflict exactly
as they should.

Without --http it speaks MCP on stdin/stdout (one session). With --http ADDR
it serves streamable HTTP at http://ADDR/mcp. ADDR must be a loopback address
(127.0.0.1:PORT, [::1]:PORT, localhost:PORT) unless a token is set with
--token or EDITGUARD_TOKEN; requests must then carry
"Authorization: Bearer TOKEN". SIGINT or SIGTERM stops the server gracefully.

--approve ask puts the diff of every change to the person at the client
(MCP elicitation) and writes only what they accept; a client that cannot ask
gets REJECTED. --approve read-only offers only read_file, list_directory,
file_info and file_history.

--deny GLOB (repeatable) protects more paths from changes, in addition to
.git/**; "**" matches any number of path elements.`,
}

func init() {
	serveCmd.run = runServe
	register(serveCmd)
}

// globList is a repeatable string flag.
type globList []string

func (g *globList) String() string     { return strings.Join(*g, ",") }
func (g *globList) Set(s string) error { *g = append(*g, s); return nil }

func runServe(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(serveCmd.name)
	var (
		addr, approve, token string
		deny                 globList
	)
	fs.StringVar(&addr, "http", "", "serve streamable HTTP on `ADDR` (host:port) instead of stdio")
	fs.StringVar(&approve, "approve", mcpserver.ApproveAuto, "approval of changes: auto, ask or read-only")
	fs.Var(&deny, "deny", "protect paths matching `GLOB` from changes (repeatable)")
	fs.StringVar(&token, "token", "", "bearer `TOKEN` required from HTTP clients (default $EDITGUARD_TOKEN)")
	pos, err := parseCommand(e, serveCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef(serveCmd.name, "serve takes no arguments, got %q", pos)
	}
	if token == "" {
		token = os.Getenv("EDITGUARD_TOKEN")
	}
	if addr == "" && flagWasSet(fs, "token") {
		return usagef(serveCmd.name, "--token applies only with --http")
	}
	if addr != "" {
		if err := mcpserver.CheckListenAddr(addr, token); err != nil {
			return usagef(serveCmd.name, "%v", err)
		}
	}
	if err := checkRoot(e.root); err != nil {
		return err
	}
	ws, err := editguard.Open(e.root, &editguard.Options{Deny: append(append([]string{}, editguard.DefaultDeny...), deny...)})
	if err != nil {
		return err
	}
	defer ws.Close()
	srv, err := mcpserver.New(ws, &mcpserver.Options{
		Approve: approve,
		Version: version(),
		Logger:  slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
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
		return srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(e.stdin), Writer: nopCloser{e.stdout}})
	}
	return srv.ListenAndServe(ctx, addr, &mcpserver.HTTPOptions{Token: token}, func(a net.Addr) {
		fmt.Fprintf(e.stderr, "editguard: serving MCP on http://%s%s (workspace %s, approve %s)\n", a, mcpserver.Endpoint, ws.Dir(), approve)
	})
}

// terminalNote is printed when serve is started by hand at a terminal,
// where it would otherwise wait silently for MCP messages.
const terminalNote = `editguard: serving MCP on stdin/stdout; this is meant to be started by an MCP
client, not typed at. To add editguard to a client, run in the project:
  editguard init claude-code    (or gemini, codex, cursor)
or see 'editguard help serve'. Press Ctrl-D or Ctrl-C to stop.
`

// nopCloser leaves stdout open when the transport closes.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
