package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/hookwire"
	"golang.org/x/sys/unix"
)

// defaultHookIdle is how long a hook server waits for an event before it
// stops.
const defaultHookIdle = 10 * time.Minute

// serveHooks runs the hook server of e.root: it answers the events that
// editguard-hook hands it, as "editguard hook" would, with the workspace
// opened once (see internal/hookwire). It returns when no event came for
// idle or ctx is done, or when serving on would be wrong: the program was replaced, or the
// root or its state directory is no longer the one opened. A server already
// running for the root makes it return at once.
func serveHooks(ctx context.Context, e *env, idle time.Duration) error {
	sock, dir, real, err := hookwire.Socket(e.root)
	if err != nil {
		return err
	}
	if err := hookwire.MakeDir(dir); err != nil {
		return err
	}
	// One server per root: the one holding the lock serves; the socket is
	// replaced only under it.
	lf, err := os.OpenFile(sock+".lock", os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil // another server has it
		}
		return err
	}
	// The lock file names the server, for "kill $(cat SOCKET.lock)".
	lf.Truncate(0)
	lf.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	defer lf.Truncate(0)
	ws, err := e.workspace()
	if err != nil {
		return err
	}
	same, err := sameWorkspace(e.root)
	if err != nil {
		return err
	}
	if fi, err := os.Lstat(sock); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return fmt.Errorf("%s exists and is not a socket", sock)
		}
		os.Remove(sock) // a server that died left it
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return err
	}
	ln.SetUnlinkOnClose(true)
	defer ln.Close()
	os.Chmod(sock, 0o600)

	hookServerGC(os.Getenv)
	srv := &hookServer{ws: ws, root: e.root, real: real, same: same, build: programBuild(), options: workspaceOptions(e)}
	// The change journal: checkpoints around shell tools, here and in an
	// exec that asks, read only what changed. Its watches are added while
	// the server already answers; until then, checkpoints scan in full.
	go func() {
		if j, err := ws.Watch(); err == nil {
			srv.mu.Lock()
			srv.journal = j
			srv.mu.Unlock()
		}
	}()
	// A cancelled context stops the server as its idle time would.
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	for {
		ln.SetDeadline(time.Now().Add(idle))
		c, err := ln.AcceptUnix()
		if err != nil && ctx.Err() != nil {
			srv.wg.Wait()
			return nil
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && srv.busy() {
				continue
			}
			if errors.As(err, &ne) && ne.Timeout() || srv.stopped() {
				srv.wg.Wait()
				return nil
			}
			return err
		}
		srv.wg.Add(1)
		go func() {
			defer srv.wg.Done()
			srv.serve(ctx, c)
			if srv.stopped() {
				ln.Close()
			}
		}()
	}
}

type hookServer struct {
	ws   *editguard.Workspace
	root string      // as given
	real string      // as hookwire.RealRoot names it
	same func() bool // the program, root and state directory are the ones the server started with
	// build is programBuild, options workspaceOptions: an exec's command
	// request is served only if its own are the same (execserve.go).
	build, options string
	// journal is the workspace's change journal, once started (nil
	// before, or if it could not be).
	journal editguard.ChangeJournal

	wg     sync.WaitGroup
	mu     sync.Mutex
	n      int  // requests being served
	closed bool // serving on would be wrong
}

func (s *hookServer) busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n > 0
}

func (s *hookServer) stopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// serve answers one connection.
func (s *hookServer) serve(ctx context.Context, c *net.UnixConn) {
	defer c.Close()
	if !peerIsUser(c) {
		return
	}
	s.mu.Lock()
	s.n++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.n--
		s.mu.Unlock()
	}()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	req, err := hookwire.ReadRequest(c)
	if err != nil {
		return
	}
	if req.Journal != nil {
		s.answerJournal(c, req)
		return
	}
	if req.Build != "" {
		s.answerCommand(ctx, c, req)
		return
	}
	if _, ok := hookClients[req.Client]; !ok || req.Root != s.real || s.stopped() || !s.same() {
		// The client runs editguard hook itself, which reports an
		// unknown client, or serves the request of another root (whose
		// socket name collides with this one's), or with the program and
		// workspace as they are now. The last one stops this server.
		s.mu.Lock()
		s.closed = s.closed || ok && req.Root == s.real
		s.mu.Unlock()
		hookwire.WriteResponse(c, &hookwire.Response{Retry: true})
		return
	}
	var stdout, stderr bytes.Buffer
	var later []func()
	e := &env{root: s.root, sessionName: defaultSession, stdin: bytes.NewReader(req.Event), stdout: &stdout, stderr: &stderr, ws: s.ws, answered: &later}
	args := []string{"--client", req.Client}
	if req.FailOpen {
		args = append(args, "--fail-open")
	}
	code := report(e, runHook(ctx, e, args))
	hookwire.WriteResponse(c, &hookwire.Response{Code: code, Stdout: stdout.Bytes(), Stderr: stderr.Bytes()})
	c.Close()
	// The ledger records of the changes the tools made become durable
	// here, after the answer; the request still counts as being served,
	// so the server does not stop before they are.
	for _, f := range later {
		f()
	}
}

// answerJournal answers a journal request: the changes the server's
// journal saw since the request's mark, and the mark of now. A request of
// another root, or one the server has no journal for, gets Retry: the
// asker keeps a journal of its own.
func (s *hookServer) answerJournal(c *net.UnixConn, req *hookwire.Request) {
	s.mu.Lock()
	j := s.journal
	s.mu.Unlock()
	if j == nil || req.Root != s.real || s.stopped() || !s.same() {
		hookwire.WriteResponse(c, &hookwire.Response{Retry: true})
		return
	}
	changes, now, ok := j.Since(editguard.JournalMark{ID: req.Journal.ID, Seq: req.Journal.Seq})
	wire := make([]hookwire.JournalChange, len(changes))
	for i, ch := range changes {
		wire[i] = hookwire.JournalChange{Path: ch.Path, Created: ch.Created}
	}
	out := hookwire.AppendJournal(nil, hookwire.JournalQuery{ID: now.ID, Seq: now.Seq}, ok, wire)
	hookwire.WriteResponse(c, &hookwire.Response{Stdout: out})
}

// serverJournal is the change journal of the hook server of a root, asked
// over its socket (a journal request per checkpoint).
type serverJournal struct {
	sock, dir, real string
}

// hookServerJournal returns the journal of the hook server serving root,
// nil if none answers with one.
func hookServerJournal(root string) *serverJournal {
	sock, dir, real, err := hookwire.Socket(root)
	if err != nil {
		return nil
	}
	j := &serverJournal{sock: sock, dir: dir, real: real}
	if _, now, _ := j.Since(editguard.JournalMark{}); now.ID == "" {
		return nil
	}
	return j
}

// Since implements editguard.ChangeJournal; a server that does not answer
// vouches for nothing and gives no mark.
func (j *serverJournal) Since(m editguard.JournalMark) ([]editguard.JournalChange, editguard.JournalMark, bool) {
	if hookwire.CheckDir(j.dir) != nil {
		return nil, editguard.JournalMark{}, false
	}
	c, err := net.DialTimeout("unix", j.sock, 2*time.Second)
	if err != nil {
		return nil, editguard.JournalMark{}, false
	}
	defer c.Close()
	// The server's journal may have to be made again (a walk of the
	// tree's directories) before it answers.
	c.SetDeadline(time.Now().Add(45 * time.Second))
	if hookwire.WriteJournalRequest(c, j.real, hookwire.JournalQuery{ID: m.ID, Seq: m.Seq}) != nil {
		return nil, editguard.JournalMark{}, false
	}
	c.(*net.UnixConn).CloseWrite()
	r, err := hookwire.ReadResponse(c)
	if err != nil || r.Retry {
		return nil, editguard.JournalMark{}, false
	}
	now, ok, wire, err := hookwire.ParseJournal(r.Stdout)
	if err != nil {
		return nil, editguard.JournalMark{}, false
	}
	changes := make([]editguard.JournalChange, len(wire))
	for i, ch := range wire {
		changes[i] = editguard.JournalChange{Path: ch.Path, Created: ch.Created}
	}
	return changes, editguard.JournalMark{ID: now.ID, Seq: now.Seq}, ok
}

// sameWorkspace returns a function that reports whether this program, the
// root and its state directory are still the files they are now. A server
// that answered after one was replaced would answer with an old program,
// or write to a state directory that is no longer the workspace's.
func sameWorkspace(root string) (func() bool, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	paths := []string{self, root, filepath.Join(root, editguard.StateDir)}
	ids := make([]fileID, len(paths))
	for i, p := range paths {
		if ids[i], err = idOf(p); err != nil {
			return nil, err
		}
	}
	return func() bool {
		for i, p := range paths {
			if id, err := idOf(p); err != nil || id != ids[i] {
				return false
			}
		}
		return true
	}, nil
}

type fileID struct {
	dev, ino uint64
	size     int64
	mtime    int64
}

func idOf(p string) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return fileID{}, err
	}
	id := fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}
	if st.Mode&unix.S_IFMT == unix.S_IFREG {
		id.size, id.mtime = st.Size, st.Mtim.Nano()
	}
	return id, nil
}
