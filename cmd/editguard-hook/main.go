//go:build unix

// Command editguard-hook is "editguard hook" for agents that run a hook
// process per tool call: it answers the same events in the same protocols,
// and starts in a fraction of the time.
//
// Usage:
//
//	editguard-hook [--root DIR] [--client claude-code|gemini|codex] [--fail-open] < EVENT
//
// It reads the event and hands it to the hook server of the workspace, an
// "editguard hook --serve" process that keeps the workspace open, and prints
// its answer. When no server answers, it runs "editguard hook" with the same
// event itself, so the answer is the same either way, and starts a server
// for the events that follow; the server stops after some minutes without
// events. The editguard program is looked for next to this one, then on
// PATH. See "editguard help hook".
package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/editguard/editguard/internal/hookwire"
)

// This program imports neither fmt, os/exec nor net: each would make it
// larger and slower to start, which is all it is for.

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// options are the command line, as editguard hook takes it.
type options struct {
	root     string
	client   string
	failOpen bool
}

func parse(args []string) (*options, error) {
	o := &options{root: ".", client: "claude-code"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "hook" { // "editguard-hook hook" reads like "editguard hook"
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") {
			return nil, errors.New("unexpected argument " + strconv.Quote(a))
		}
		switch name {
		case "fail-open":
			o.failOpen = !hasVal || val == "true"
			continue
		case "root", "client":
		default:
			return nil, errors.New("unknown flag " + strconv.Quote(a))
		}
		if !hasVal {
			if i+1 == len(args) {
				return nil, errors.New("flag " + strconv.Quote(a) + " needs a value")
			}
			i++
			val = args[i]
		}
		if name == "root" {
			o.root = val
		} else {
			o.client = val
		}
	}
	return o, nil
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, err := parse(args)
	if err != nil {
		io.WriteString(stderr, "editguard-hook: "+err.Error()+"\nusage: editguard-hook [--root DIR] [--client claude-code|gemini|codex] [--fail-open] < EVENT\n")
		return 2
	}
	event, err := io.ReadAll(io.LimitReader(stdin, hookwire.MaxEvent+1))
	if err != nil {
		event = nil // editguard hook reports the unreadable event
	}
	sock, dir, real, sockErr := hookwire.Socket(o.root)
	if sockErr == nil && hookwire.NothingToEnd(real, event) {
		// After every batch of tool calls: answered here, without a
		// server, when no command is in progress.
		return 0
	}
	if sockErr == nil {
		if r, err := ask(sock, dir, real, o, event); err == nil {
			stdout.Write(r.Stdout)
			stderr.Write(r.Stderr)
			return r.Code
		}
	}
	// No server answered: run editguard hook, and start a server for the
	// next event.
	fail := func(msg string) int {
		io.WriteString(stderr, "editguard-hook: "+msg+"\n")
		if o.failOpen {
			return 0
		}
		return 2 // every client blocks the tool on exit code 2
	}
	prog, err := editguardProgram()
	if err != nil {
		return fail(err.Error())
	}
	if sockErr == nil && hookwire.MakeDir(dir) == nil {
		startServer(prog, real)
	}
	code, err := runEditguard(prog, hookArgs(o, false), event, stdout, stderr)
	if err != nil {
		return fail("running " + prog + ": " + err.Error())
	}
	return code
}

// runEditguard runs prog with args and the event on its standard input, and
// returns its exit code.
func runEditguard(prog string, args []string, event []byte, stdout, stderr io.Writer) (int, error) {
	in, err := os.CreateTemp("", "editguard-hook-event")
	if err != nil {
		return 0, err
	}
	defer in.Close()
	os.Remove(in.Name())
	if _, err := in.Write(event); err != nil {
		return 0, err
	}
	if _, err := in.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	outs := []*os.File{os.Stdout, os.Stderr}
	for i, w := range []io.Writer{stdout, stderr} {
		if f, ok := w.(*os.File); ok {
			outs[i] = f
		} else {
			return 0, errors.New("standard output and error must be files")
		}
	}
	p, err := os.StartProcess(prog, append([]string{prog}, args...), &os.ProcAttr{Files: []*os.File{in, outs[0], outs[1]}})
	if err != nil {
		return 0, err
	}
	st, err := p.Wait()
	if err != nil {
		return 0, err
	}
	if !st.Exited() {
		return 0, errors.New(st.String())
	}
	return st.ExitCode(), nil
}

// ask sends the event to the server at sock and returns its answer; an
// error means no answer, and that editguard hook should run instead.
//
// The socket is driven with plain system calls: the net package would
// make this program link the C library wherever cgo is on, and start
// slower.
func ask(sock, dir, root string, o *options, event []byte) (*hookwire.Response, error) {
	if err := hookwire.CheckDir(dir); err != nil {
		return nil, err
	}
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return nil, err
	}
	syscall.CloseOnExec(fd)
	c := &conn{fd: fd}
	defer syscall.Close(fd)
	// A server that stops answering (stopped, overloaded) must not hold
	// the agent for long: the clients' own hook timeouts are a minute or
	// more.
	tv := syscall.NsecToTimeval(int64(45 * time.Second))
	syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
	syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &tv)
	if err := syscall.Connect(fd, &syscall.SockaddrUnix{Name: sock}); err != nil {
		return nil, err
	}
	var req bytes.Buffer
	if err := hookwire.WriteRequest(&req, &hookwire.Request{Root: root, Client: o.client, FailOpen: o.failOpen, Event: event}); err != nil {
		return nil, err
	}
	if _, err := c.Write(req.Bytes()); err != nil {
		return nil, err
	}
	if err := syscall.Shutdown(fd, syscall.SHUT_WR); err != nil {
		return nil, err
	}
	r, err := hookwire.ReadResponse(c)
	if err != nil {
		return nil, err
	}
	if r.Retry {
		return nil, errors.New("the server asked for a retry")
	}
	return r, nil
}

// conn is a blocking socket.
type conn struct{ fd int }

func (c *conn) Read(p []byte) (int, error) {
	for {
		n, err := syscall.Read(c.fd, p)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (c *conn) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		n, err := syscall.Write(c.fd, p[done:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return done, err
		}
		done += n
	}
	return done, nil
}

// hookArgs is editguard's command line for the hook, or for its server.
func hookArgs(o *options, serve bool) []string {
	args := []string{"--root", o.root, "hook", "--client", o.client}
	if o.failOpen {
		args = append(args, "--fail-open")
	}
	if serve {
		args = []string{"--root", o.root, "hook", "--serve"}
	}
	return args
}

// startServer starts "editguard hook --serve" for root in a session of its
// own, so that it outlives this process and the client's process group. A
// server that finds another one running stops at once.
func startServer(prog, root string) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		return
	}
	defer null.Close()
	args := append([]string{prog}, hookArgs(&options{root: root}, true)...)
	p, err := os.StartProcess(prog, args, &os.ProcAttr{Files: []*os.File{null, null, null}, Sys: &syscall.SysProcAttr{Setsid: true}})
	if err == nil {
		p.Release()
	}
}

// editguardProgram finds the editguard program: next to this one (go
// install puts both in one directory), else on PATH.
func editguardProgram() (string, error) {
	var dirs []string
	if self, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(self))
	}
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if filepath.IsAbs(d) { // a relative PATH entry names no fixed program
			dirs = append(dirs, d)
		}
	}
	for _, d := range dirs {
		p := filepath.Join(d, "editguard")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New("cannot find the editguard program next to editguard-hook or on PATH; install both (go install ./cmd/editguard ./cmd/editguard-hook)")
}
