package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/hookwire"
)

// Checkpoints an exec asks the hook server for.
//
// An exec in its own process checkpoints from the manifest under the last
// checkpoint, which it reads from disk (the whole chain of deltas down to
// a full manifest: 18 MB at 100,000 files) and turns into a base of its
// own. The hook server serving the root holds that manifest in memory and
// keeps the change journal. So exec asks it to take the command's two
// checkpoints (Session.BeginCommand and Command.End or EndIsolated, with
// the same session, tool and command line as exec's own), and runs the
// command itself, isolated or not, in between: the command and its
// overlay are exec's, only the checkpoints are the server's.
//
// The command belongs to exec's process all the same
// (CommandOptions.Owner): if exec dies, the next checkpoint ends it as
// unended, as one exec began itself. The server answers a request only
// when it runs the very program file exec runs (programBuild), for the
// same root, with the same options that shape a workspace
// (workspaceOptions), and with a change journal; otherwise (Retry), or
// when no server answers, exec takes the checkpoints itself as before.
// When the server's journal cannot vouch for the time since its last
// checkpoint, the server's checkpoint is a full scan, as exec's own would
// be.
//
// Durability: the server answers the request before the command only
// once BeginCommand returned (every covered content durable), and the one
// after it once End returned (history versions, the checkpoint's objects
// and the ledger records durable, each fsynced by the server); exec runs
// the command only after the first answer and reports only after the
// second. The active record, as always, need not be durable.
//
// A server that dies between the two (kill -9, or stopped idle) leaves
// the active record and its manifest on disk: exec ends the command itself
// (Session.ResumeCommand), which records the same. A begin request sent
// whose answer did not come may still have begun the command: exec then
// begins its own under the same id, which ends that one first (it changed
// nothing yet, so nothing is recorded). A server that dies while it puts
// an isolated command's files into the tree leaves the rest in the upper
// layer; exec's own EndIsolated puts those, and the files the server had
// put are then changes it cannot tell from someone else's.

// commandEnder ends a command: *editguard.Command in exec's process, or
// serverCommand through the hook server.
type commandEnder interface {
	End(ctx context.Context) (*editguard.CommandResult, error)
	EndIsolated(ctx context.Context, upper string) (*editguard.CommandResult, error)
	// Isolate records, in the command's sealed record, the overlay an
	// isolated command runs in, before it runs (Command.Isolate).
	Isolate(ctx context.Context, dir string, pid int, mntNS string) error
}

// execCall is a command request's body.
type execCall struct {
	Op      string // "begin" or "end"
	Session string
	// Options is exec's workspaceOptions: the server's must be the same.
	Options string
	// Begin: the command line, the ledger's tool, and the process it
	// belongs to (exec's).
	Command, Tool string
	Owner         int
	ID            string
	// End: the isolated command's upper layer ("" for End).
	Upper    string
	Isolated bool
}

// execReply is the server's answer to an execCall: the result of End, or
// the error BeginCommand or End returned.
type execReply struct {
	Result              *editguard.CommandResult
	Code, Message, Hint string
	// Recovered are the commands a begin found unended and ended.
	Recovered []*editguard.CommandResult `json:",omitempty"`
}

// programBuild names the program file this process runs (its device,
// inode, size and mtime): a server answers the command requests of the
// same file only, so that both sides are one build. "" if it cannot be
// told.
var programBuild = sync.OnceValue(func() string {
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	id, err := idOf(self)
	if err != nil || id.size == 0 {
		return ""
	}
	return fmt.Sprintf("%x-%x-%x-%x", id.dev, id.ino, id.size, id.mtime)
})

// workspaceOptions are the global flags that shape e's workspace (what a
// checkpoint covers, how long history is kept).
func workspaceOptions(e *env) string {
	return fmt.Sprintf("%d %q %d", e.maxFileSize, e.names, e.historyAge)
}

// serverCommand is a command begun by the hook server for this exec.
type serverCommand struct {
	e                      *env
	sock, dir, real, build string
	session, id            string
	// endedHere says the server did not answer the end, which exec then
	// made itself.
	endedHere bool
}

// newCommandID is a command id as BeginCommand makes one.
func newCommandID() string { return strings.ToLower(rand.Text()[:12]) }

// beginOnServer asks the hook server of e.root to begin the command line
// with tool. It returns the command when the server began it; else nil,
// and the id exec must begin its own command under ("" for any: the
// server did nothing).
func beginOnServer(ctx context.Context, e *env, line, tool string) (*serverCommand, string) {
	if os.Getenv(editguard.NoWatchEnv) == "1" {
		return nil, ""
	}
	build := programBuild()
	sock, dir, real, err := hookwire.Socket(e.root)
	if err != nil || build == "" || hookwire.CheckDir(dir) != nil {
		return nil, ""
	}
	sc := &serverCommand{e: e, sock: sock, dir: dir, real: real, build: build, session: e.sessionName, id: newCommandID()}
	// A scan in full, should the server's journal not vouch, takes what
	// it takes; an answer that does not come in two minutes is given up
	// (the command is then begun here, under the same id).
	reply, sent, err := sc.call(&execCall{Op: "begin", Command: line, Tool: tool, Owner: os.Getpid()}, 2*time.Minute)
	switch {
	case err == nil && reply.Code == "":
		tellRecovered(e, reply.Recovered)
		return sc, ""
	case sent:
		return nil, sc.id
	}
	return nil, ""
}

// End implements commandEnder.
func (sc *serverCommand) End(ctx context.Context) (*editguard.CommandResult, error) {
	return sc.end(ctx, &execCall{Op: "end"}, func(c *editguard.Command) (*editguard.CommandResult, error) { return c.End(ctx) })
}

// EndIsolated implements commandEnder.
func (sc *serverCommand) EndIsolated(ctx context.Context, upper string) (*editguard.CommandResult, error) {
	return sc.end(ctx, &execCall{Op: "end", Upper: upper, Isolated: true}, func(c *editguard.Command) (*editguard.CommandResult, error) { return c.EndIsolated(ctx, upper) })
}

// Isolate implements commandEnder. The record is on disk, and the
// server's end checks only the command's identity in it, so exec writes
// the isolation into it itself: a server killed while the command runs
// leaves what recovery needs, as a command begun here does.
func (sc *serverCommand) Isolate(ctx context.Context, dir string, pid int, mntNS string) error {
	s, err := sc.e.session()
	if err != nil {
		return err
	}
	c, err := s.ResumeCommand(sc.id)
	if err != nil {
		return err
	}
	return c.Isolate(ctx, dir, pid, mntNS)
}

// end asks the server to end the command; where it does not answer, the
// command is ended here, by local.
func (sc *serverCommand) end(ctx context.Context, call *execCall, local func(*editguard.Command) (*editguard.CommandResult, error)) (*editguard.CommandResult, error) {
	// No deadline: the server holds the checkpoint lock while it records,
	// and an end here would wait for it.
	reply, _, err := sc.call(call, 0)
	if err == nil {
		if reply.Code != "" {
			return nil, &editguard.Error{Code: editguard.Code(reply.Code), Message: reply.Message, RecoveryHint: reply.Hint}
		}
		if reply.Result == nil {
			return nil, errors.New("the hook server answered without a result")
		}
		return reply.Result, nil
	}
	sc.endedHere = true
	s, err := sc.e.session()
	if err != nil {
		return nil, err
	}
	c, err := s.ResumeCommand(sc.id)
	if err != nil {
		return nil, err
	}
	return local(c)
}

// call sends call to the server and reads its reply, waiting at most wait
// for it (0: as long as the connection lasts). sent says the request
// reached the server, which may have acted on it even if err is set; a
// Retry is an error with sent false.
func (sc *serverCommand) call(call *execCall, wait time.Duration) (reply *execReply, sent bool, err error) {
	call.Session, call.Options, call.ID = sc.session, workspaceOptions(sc.e), sc.id
	var body bytes.Buffer
	if err := gob.NewEncoder(&body).Encode(call); err != nil {
		return nil, false, err
	}
	if err := hookwire.CheckDir(sc.dir); err != nil {
		return nil, false, err
	}
	c, err := net.DialTimeout("unix", sc.sock, 2*time.Second)
	if err != nil {
		return nil, false, err
	}
	defer c.Close()
	c.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if err := hookwire.WriteCommandRequest(c, sc.real, sc.build, body.Bytes()); err != nil {
		return nil, false, err
	}
	if err := c.(*net.UnixConn).CloseWrite(); err != nil {
		return nil, false, err
	}
	if wait > 0 {
		c.SetReadDeadline(time.Now().Add(wait))
	}
	r, err := hookwire.ReadResponse(c)
	if err != nil {
		return nil, true, err
	}
	if r.Retry {
		return nil, false, errors.New("the hook server would not serve the request")
	}
	reply = &execReply{}
	if err := gob.NewDecoder(bytes.NewReader(r.Stdout)).Decode(reply); err != nil {
		return nil, true, err
	}
	return reply, true, nil
}

// answerCommand answers an exec's command request (see the section
// comment); a request the server would not serve gets Retry.
func (s *hookServer) answerCommand(ctx context.Context, c *net.UnixConn, req *hookwire.Request) {
	s.mu.Lock()
	j := s.journal
	s.mu.Unlock()
	var call execCall
	if j == nil || req.Root != s.real || req.Build == "" || req.Build != s.build || s.stopped() || !s.same() ||
		gob.NewDecoder(bytes.NewReader(req.Command)).Decode(&call) != nil || call.Options != s.options || call.Owner < 0 {
		hookwire.WriteResponse(c, &hookwire.Response{Retry: true})
		return
	}
	// A checkpoint takes what it takes; the asker waits.
	c.SetDeadline(time.Time{})
	reply := s.command(context.WithoutCancel(ctx), &call)
	var out bytes.Buffer
	if err := gob.NewEncoder(&out).Encode(reply); err != nil {
		hookwire.WriteResponse(c, &hookwire.Response{Retry: true})
		return
	}
	hookwire.WriteResponse(c, &hookwire.Response{Stdout: out.Bytes()})
}

// command begins or ends the command of call.
func (s *hookServer) command(ctx context.Context, call *execCall) *execReply {
	e := &env{root: s.root, sessionName: call.Session, stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard, ws: s.ws}
	fail := func(err error) *execReply {
		var ge *editguard.Error
		if errors.As(err, &ge) {
			return &execReply{Code: string(ge.Code), Message: ge.Message, Hint: ge.RecoveryHint}
		}
		return &execReply{Code: string(editguard.CodeIO), Message: err.Error()}
	}
	sess, err := e.session()
	if err != nil {
		return fail(err)
	}
	switch call.Op {
	case "begin":
		if call.Owner == 0 {
			return fail(errors.New("a command request without its owner"))
		}
		// WriterUnknown as exec's own BeginCommand (exec.go).
		opts := &editguard.CommandOptions{Tool: call.Tool, ID: call.ID, Owner: call.Owner, WriterUnknown: true}
		cmd, err := sess.BeginCommand(ctx, call.Command, opts)
		if err != nil {
			return fail(err)
		}
		return &execReply{Recovered: cmd.Recovered()}
	case "end":
		cmd, err := sess.ResumeCommand(call.ID)
		if err != nil {
			return fail(err)
		}
		var res *editguard.CommandResult
		if call.Isolated {
			res, err = cmd.EndIsolated(ctx, call.Upper)
		} else {
			res, err = cmd.End(ctx)
		}
		if err != nil {
			return fail(err)
		}
		return &execReply{Result: res}
	}
	return fail(fmt.Errorf("unknown command request %q", call.Op))
}
