//go:build unix

// Package hookwire is what the two sides of a resident hook share: where the
// socket of a workspace's hook server is, and what goes over it.
//
// A client runs one hook process per tool call, and a Go program that opens
// a workspace spends most of its time starting: loading and initialising the
// packages linked into it. The editguard-hook program is small. It hands the
// event to a hook server that "editguard hook --serve" runs for one root,
// with the workspace already open, and prints what the server answers. When
// no server answers, it runs "editguard hook" itself, and starts a server
// for the next event.
//
// The socket lives outside the workspace, whose content is not trusted, in
// a directory of the user's own: $XDG_RUNTIME_DIR/editguard, or
// $TMPDIR/editguard-UID. The directory must be a real directory, owned by the
// user and closed to everyone else (0700); otherwise no server is used and
// every event runs "editguard hook" directly. Its name is a hash of the
// root's real path, so every way of naming one root finds one server.
//
// This package imports only small parts of the standard library (no fmt,
// no crypto, no net), so that the small program stays small and starts
// fast. The socket's name is an FNV hash: a collision cannot mislead, since
// the server checks the root named in each request against its own.
package hookwire

import (
	"bufio"
	"errors"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Protocol names this version of the exchange. A server that meets another
// refuses the request, and the client runs editguard hook itself.
const Protocol = "editguard-hook/1"

// MaxEvent is the largest event a hook reads, as editguard hook reads it.
const MaxEvent = 16 << 20

// RealRoot returns root made absolute, its symlinks resolved: the name of
// the root a request is for.
func RealRoot(root string) (string, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// Socket returns the socket path of the hook server of root, the directory
// that holds it, and the root's real path (see RealRoot).
func Socket(root string) (sock, dir, real string, err error) {
	real, err = RealRoot(root)
	if err != nil {
		return "", "", "", err
	}
	h := fnv.New128a()
	h.Write([]byte(real))
	const digits = "0123456789abcdef"
	var name []byte
	for _, b := range h.Sum(nil)[:12] {
		name = append(name, digits[b>>4], digits[b&15])
	}
	name = append(name, ".sock"...)
	for _, d := range socketDirs() {
		// A socket path must fit in sockaddr_un (108 bytes on Linux,
		// 104 on BSDs).
		if len(d)+1+len(name) < 100 {
			return filepath.Join(d, string(name)), d, real, nil
		}
	}
	return "", "", "", errors.New("hookwire: no socket directory with a short enough path")
}

func socketDirs() []string {
	var dirs []string
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		dirs = append(dirs, filepath.Join(d, "editguard"))
	}
	user := "editguard-" + strconv.Itoa(os.Getuid())
	dirs = append(dirs, filepath.Join(os.TempDir(), user), filepath.Join("/tmp", user))
	return dirs
}

// CheckDir reports whether dir is a directory the user owns and nobody else
// can enter: not a symlink, owned by the effective user, mode 0700 or
// stricter. A socket in any other directory could be someone else's.
func CheckDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return errors.New("hookwire: " + dir + " is not a directory")
	case !ok || int(st.Uid) != os.Geteuid():
		return errors.New("hookwire: " + dir + " is not owned by this user")
	case fi.Mode().Perm()&0o077 != 0:
		return errors.New("hookwire: " + dir + " is open to other users (mode " + fi.Mode().Perm().String() + ")")
	}
	return nil
}

// MakeDir creates dir (0700) if it is missing, then checks it.
func MakeDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return CheckDir(dir)
}

// Request is what the client sends: the hook's options, then the event;
// or, for a journal request, Journal (no client, no event); or, for a
// command request, Build and Command (no client, no event).
type Request struct {
	Root     string // as RealRoot returns it
	Client   string
	FailOpen bool
	Event    []byte
	Journal  *JournalQuery
	// Build names the asking program's build (a command request is
	// served only by a server of the same build), Command is the
	// request's body, which this package does not read.
	Build   string
	Command []byte
}

// WriteRequest writes r: two header lines (the protocol and options, then
// the root), then the event to the end.
func WriteRequest(w io.Writer, r *Request) error {
	if r.Client == "" || strings.ContainsAny(r.Client, " \n") || strings.Contains(r.Root, "\n") {
		return errors.New("hookwire: a client name with a space or a root with a newline")
	}
	open := " 0\n"
	if r.FailOpen {
		open = " 1\n"
	}
	if _, err := io.WriteString(w, Protocol+" "+r.Client+open+r.Root+"\n"); err != nil {
		return err
	}
	_, err := w.Write(r.Event)
	return err
}

// ReadRequest reads a request written by WriteRequest, whose writer has
// closed its side.
func ReadRequest(r io.Reader) (*Request, error) {
	br := bufio.NewReader(io.LimitReader(r, MaxEvent+512))
	line, err := br.ReadString('\n')
	if err != nil {
		return nil, errors.New("hookwire: reading the request: " + err.Error())
	}
	f := strings.Fields(line)
	if len(f) == 3 && f[0] == JournalProtocol {
		seq, err := strconv.ParseUint(f[2], 10, 64)
		root, err2 := br.ReadString('\n')
		if err != nil || err2 != nil {
			return nil, errors.New("hookwire: malformed journal request")
		}
		q := &JournalQuery{Seq: seq}
		if f[1] != "-" {
			q.ID = f[1]
		}
		return &Request{Root: strings.TrimSuffix(root, "\n"), Journal: q}, nil
	}
	if len(f) == 2 && f[0] == CommandProtocol {
		root, err := br.ReadString('\n')
		if err != nil {
			return nil, errors.New("hookwire: malformed command request")
		}
		body, err := io.ReadAll(br)
		if err != nil {
			return nil, err
		}
		if len(body) > MaxEvent {
			return nil, errors.New("hookwire: command request over " + strconv.Itoa(MaxEvent) + " bytes")
		}
		return &Request{Root: strings.TrimSuffix(root, "\n"), Build: f[1], Command: body}, nil
	}
	if len(f) != 3 || f[0] != Protocol || (f[2] != "0" && f[2] != "1") {
		return nil, errors.New("hookwire: not a " + Protocol + " request")
	}
	root, err := br.ReadString('\n')
	if err != nil {
		return nil, errors.New("hookwire: reading the request: " + err.Error())
	}
	ev, err := io.ReadAll(br)
	if err != nil {
		return nil, err
	}
	if len(ev) > MaxEvent {
		return nil, errors.New("hookwire: event over " + strconv.Itoa(MaxEvent) + " bytes")
	}
	return &Request{Root: strings.TrimSuffix(root, "\n"), Client: f[1], FailOpen: f[2] == "1", Event: ev}, nil
}

// Response is the server's answer: what editguard hook would have printed,
// and its exit code. Retry (code -1 on the wire) means the server would not
// serve this request (it is about to stop, or its program was replaced): the
// client runs editguard hook itself.
type Response struct {
	Retry          bool
	Code           int
	Stdout, Stderr []byte
}

// WriteResponse writes r: "CODE LEN\n", LEN bytes of standard output, then
// the standard error to the end.
func WriteResponse(w io.Writer, r *Response) error {
	code := r.Code
	if r.Retry {
		code = -1
	}
	if _, err := io.WriteString(w, strconv.Itoa(code)+" "+strconv.Itoa(len(r.Stdout))+"\n"); err != nil {
		return err
	}
	if _, err := w.Write(r.Stdout); err != nil {
		return err
	}
	_, err := w.Write(r.Stderr)
	return err
}

// ReadResponse reads a whole response written by WriteResponse.
func ReadResponse(r io.Reader) (*Response, error) {
	data, err := io.ReadAll(io.LimitReader(r, 2*MaxEvent))
	if err != nil {
		return nil, err
	}
	head, rest, ok := strings.Cut(string(data), "\n")
	f := strings.Fields(head)
	if !ok || len(f) != 2 {
		return nil, errors.New("hookwire: malformed response")
	}
	code, err1 := strconv.Atoi(f[0])
	n, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || n < 0 || n > len(rest) || code < -1 || code > 255 {
		return nil, errors.New("hookwire: malformed response")
	}
	if code == -1 {
		return &Response{Retry: true}, nil
	}
	return &Response{Code: code, Stdout: []byte(rest[:n]), Stderr: []byte(rest[n:])}, nil
}

// CommandProtocol names a request that an editguard exec makes of the
// server: to take a command's checkpoint before or after it. Its header is
// "editguard-command/1 BUILD", then the root, then the body to the end;
// the answer's standard output is the server's reply, or Retry.
const CommandProtocol = "editguard-command/1"

// WriteCommandRequest writes a command request for root from a program of
// build build.
func WriteCommandRequest(w io.Writer, root, build string, body []byte) error {
	if build == "" || strings.ContainsAny(build, " \n") || strings.Contains(root, "\n") {
		return errors.New("hookwire: an empty build, one with a space, or a root with a newline")
	}
	if _, err := io.WriteString(w, CommandProtocol+" "+build+"\n"+root+"\n"); err != nil {
		return err
	}
	_, err := w.Write(body)
	return err
}

// JournalProtocol names a request for the changes the server's change
// journal saw since a mark (an exec in another process checkpoints from
// it). Its header is "editguard-journal/1 ID SEQ" ("-" for no ID), then the
// root; the answer's standard output is the mark of now and the changes
// (AppendJournal).
const JournalProtocol = "editguard-journal/1"

// JournalQuery is the mark a journal request asks about.
type JournalQuery struct {
	ID  string
	Seq uint64
}

// WriteJournalRequest writes a journal request for root.
func WriteJournalRequest(w io.Writer, root string, q JournalQuery) error {
	id := q.ID
	if id == "" {
		id = "-"
	}
	if strings.ContainsAny(id, " \n") || strings.Contains(root, "\n") {
		return errors.New("hookwire: a mark with a space or a root with a newline")
	}
	_, err := io.WriteString(w, JournalProtocol+" "+id+" "+strconv.FormatUint(q.Seq, 10)+"\n"+root+"\n")
	return err
}

// JournalChange is one changed path in a journal answer.
type JournalChange struct {
	Path    string
	Created bool
}

// AppendJournal encodes a journal answer: "ID SEQ OK\n" (ID "-" for none,
// OK 0 or 1), then per change a flag byte ('c' created, 'm' other) and
// the path, each ended by NUL (a path has no NUL; it may have newlines).
func AppendJournal(b []byte, now JournalQuery, ok bool, changes []JournalChange) []byte {
	id := now.ID
	if id == "" {
		id = "-"
	}
	okb := "0"
	if ok {
		okb = "1"
	}
	b = append(b, id+" "+strconv.FormatUint(now.Seq, 10)+" "+okb+"\n"...)
	for _, c := range changes {
		flag := byte('m')
		if c.Created {
			flag = 'c'
		}
		b = append(append(append(b, flag), c.Path...), 0)
	}
	return b
}

// ParseJournal decodes what AppendJournal encoded.
func ParseJournal(data []byte) (now JournalQuery, ok bool, changes []JournalChange, err error) {
	head, rest, found := strings.Cut(string(data), "\n")
	f := strings.Fields(head)
	if !found || len(f) != 3 || (f[2] != "0" && f[2] != "1") {
		return now, false, nil, errors.New("hookwire: malformed journal answer")
	}
	seq, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return now, false, nil, errors.New("hookwire: malformed journal answer")
	}
	if f[0] != "-" {
		now.ID = f[0]
	}
	now.Seq = seq
	for rest != "" {
		entry, tail, found := strings.Cut(rest, "\x00")
		if !found || len(entry) < 2 || (entry[0] != 'c' && entry[0] != 'm') {
			return JournalQuery{}, false, nil, errors.New("hookwire: malformed journal answer")
		}
		changes = append(changes, JournalChange{Path: entry[1:], Created: entry[0] == 'c'})
		rest = tail
	}
	return now, f[2] == "1", changes, nil
}
