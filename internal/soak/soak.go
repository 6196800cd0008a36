// Package soak runs editguard under sustained concurrent load from every
// kind of client at once and then checks, from the final files, the ledger
// and the history, that no guarantee the README makes was broken.
//
// A run has four kinds of writer, all appending unique marker lines to the
// same few files by replacing the file's last line "END." with
// "<marker>\nEND.":
//
//   - CLI workers: each loops "editguard read --json", then "editguard edit",
//     every call a fresh editguard process with a persistent --session of its
//     own, the way a shell-only agent works; on exit code 3 it reads again
//     and retries with a new marker.
//   - MCP sessions: each is one go-sdk client session over streamable HTTP
//     to a single "editguard serve --http" process, looping read_file and
//     edit_file, retrying on STALE_FILE.
//   - one unguarded writer: a plain os.ReadFile / os.WriteFile loop that
//     takes no lock, standing for an editor or formatter that knows nothing
//     of editguard. os.WriteFile truncates and rewrites the file in place, so
//     guarded readers can catch it half written.
//
// Every call is timed on one monotonic clock in this process (a CLI call
// from before its process starts to after it exits), and the verification
// uses those intervals to separate what the unguarded writer may
// legitimately cause from what only an editguard bug can explain; see
// verify for the rules and why they hold.
package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Mode selects what a run exercises.
type Mode string

const (
	// ModeSoak runs CLI workers, MCP sessions and the unguarded writer.
	ModeSoak Mode = "soak"
	// ModeLoad runs MCP sessions only, to measure the HTTP server under
	// many concurrent sessions.
	ModeLoad Mode = "load"
)

// Config describes a run.
type Config struct {
	Mode Mode
	// Editguard is the path of the editguard binary to run.
	Editguard string
	// Dir is an empty directory the run may fill; the workspace root is
	// Dir/ws. Anything else that appears in Dir counts as an escape.
	Dir      string
	Duration time.Duration
	// CLIWorkers (P) and MCPSessions (Q) are the numbers of concurrent
	// guarded writers of each kind.
	CLIWorkers  int
	MCPSessions int
	// Files is how many files are shared by all writers at any time.
	Files int
	// Own, if set, gives each guarded writer files of its own: writer i
	// changes only the files whose index is i modulo the number of
	// writers, so that no two writers ever change the same file. It needs
	// at least as many files as guarded writers and no unguarded writer.
	Own bool
	// Rotate, if positive, moves all writers to a fresh set of Files files
	// every Rotate, so that files stay small in long runs. Files of earlier
	// generations are verified like the others.
	Rotate time.Duration
	// UnguardedPause is the mean pause between the unguarded writer's
	// writes; zero means no unguarded writer.
	UnguardedPause time.Duration
	// UnguardedThink is the mean time the unguarded writer spends between
	// reading a file and writing it back, as an editor does between
	// opening and saving; the longer, the more guarded commits it
	// overwrites.
	UnguardedThink time.Duration
	// Pad is how many bytes of padding lines each file starts with, after
	// its header line: with 128 KiB or more, every change of a file
	// replaces a file large enough for editguard to hold and link into
	// history instead of copying it.
	Pad int
	// Progress, if not nil, receives a line every ProgressEvery.
	Progress      io.Writer
	ProgressEvery time.Duration
}

// WorkspaceDir returns the root of the workspace the run uses.
func (c *Config) WorkspaceDir() string { return filepath.Join(c.Dir, "ws") }

// outcome is how a guarded edit attempt ended, as its client saw it.
type outcome int

const (
	acked   outcome = iota // the client was told the edit was committed
	refused                // the client got a structured refusal (Code says which)
	failed                 // transport or process failure: the outcome is unknown
)

// attempt is one guarded edit attempt with its own marker.
type attempt struct {
	worker     string // session name as the ledger records it
	file       string // slash path relative to the root
	marker     string
	start, end time.Duration // the call's interval on the run's clock
	outcome    outcome
	code       string // error code when refused
	detail     string // error text when failed
}

// tornRead is a guarded read that did not see a whole file (no final "END"
// line): a view of the unguarded writer's in-place write in progress.
type tornRead struct {
	worker     string
	file       string
	start, end time.Duration
	size       int
}

// unguardedWrite is one read-modify-write of the unguarded writer.
type unguardedWrite struct {
	file       string
	marker     string
	readStart  time.Duration // before os.ReadFile
	writeStart time.Duration // before os.WriteFile (which truncates first)
	writeEnd   time.Duration // after os.WriteFile returned
}

// recorder collects the events of a run. It is safe for concurrent use.
type recorder struct {
	start time.Time

	mu       sync.Mutex
	attempts []attempt
	torn     []tornRead
	writes   []unguardedWrite
	errors   []string // failures of reads and of the harness itself
	lat      map[string][]time.Duration

	commits atomic.Int64
	refusal atomic.Int64
}

func newRecorder() *recorder {
	return &recorder{start: time.Now(), lat: make(map[string][]time.Duration)}
}

// now returns the run's clock: monotonic time since the start.
func (r *recorder) now() time.Duration { return time.Since(r.start) }

func (r *recorder) addAttempt(a attempt) {
	switch a.outcome {
	case acked:
		r.commits.Add(1)
	case refused:
		r.refusal.Add(1)
	}
	r.mu.Lock()
	r.attempts = append(r.attempts, a)
	r.mu.Unlock()
}

func (r *recorder) addTorn(t tornRead) {
	r.mu.Lock()
	r.torn = append(r.torn, t)
	r.mu.Unlock()
}

func (r *recorder) addWrite(w unguardedWrite) {
	r.mu.Lock()
	r.writes = append(r.writes, w)
	r.mu.Unlock()
}

func (r *recorder) addError(format string, args ...any) {
	r.mu.Lock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

func (r *recorder) addLatency(op string, d time.Duration) {
	r.mu.Lock()
	r.lat[op] = append(r.lat[op], d)
	r.mu.Unlock()
}

// fileSet names the shared files of each generation, or, when stride is
// set, one writer's own share of them: the indexes first, first+stride, ...
type fileSet struct {
	n      int
	rotate time.Duration
	gens   int
	first  int
	stride int
}

func newFileSet(c *Config) fileSet {
	gens := 1
	if c.Rotate > 0 {
		gens = max(int((c.Duration+c.Rotate-1)/c.Rotate), 1)
	}
	return fileSet{n: c.Files, rotate: c.Rotate, gens: gens}
}

func (fs fileSet) name(gen, i int) string { return fmt.Sprintf("g%02d/f%02d.txt", gen, i) }

// pick returns a random file of the generation current at t.
func (fs fileSet) pick(rng *rand.Rand, t time.Duration) string {
	gen := 0
	if fs.rotate > 0 {
		gen = min(int(t/fs.rotate), fs.gens-1)
	}
	if fs.stride > 0 {
		return fs.name(gen, fs.first+fs.stride*rng.IntN((fs.n-fs.first+fs.stride-1)/fs.stride))
	}
	return fs.name(gen, rng.IntN(fs.n))
}

// share returns writer i's own files among n writers.
func (fs fileSet) share(i, n int) fileSet {
	fs.first, fs.stride = i, n
	return fs
}

func (fs fileSet) all() []string {
	var out []string
	for g := range fs.gens {
		for i := range fs.n {
			out = append(out, fs.name(g, i))
		}
	}
	return out
}

// header is the first line of every file; END its last.
func header(name string) string { return "soak file " + name }

// padPrefix starts every padding line; no marker does (markers start with
// their worker's name).
const padPrefix = "pad "

// padding returns lines of padding of at least n bytes in all.
func padding(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%s%06d %s\n", padPrefix, i, strings.Repeat("x", 89))
	}
	return b.String()
}

// endLine is "END." rather than "END": markers carry session names, which
// may contain "END" (mcp-4DQENDVF), and the edit's anchor must occur once.
const endLine = "END."

// complete reports whether content is a whole file: it ends with the END line.
func complete(content string) bool {
	return strings.HasSuffix(content, "\n"+endLine+"\n")
}

// guardedClient is one guarded writer's access to the workspace.
type guardedClient interface {
	// read returns the file's text, or a structured refusal, or fails.
	read(ctx context.Context, file string) (string, *toolError, error)
	// appendMarker replaces "END." by marker and "END.".
	appendMarker(ctx context.Context, file, marker string) (*toolError, error)
	close() error
}

// toolError is the §5 error object as clients receive it.
type toolError struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
}

func (e *toolError) Error() string { return e.Code + ": " + e.Message }

// callTimeout bounds one call; a call that takes longer is a failure
// (a hung lock or server), not a slow success.
const callTimeout = 2 * time.Minute

// runGuarded is the loop of one guarded writer until stop is closed: read,
// and if the file is whole, append a new marker; on a refusal read again.
func runGuarded(rec *recorder, c guardedClient, worker, kind string, files fileSet, seed uint64, stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(seed, 0x50a4))
	seq := 0
	for {
		select {
		case <-stop:
			return
		default:
		}
		file := files.pick(rng, rec.now())
		for {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			t0 := rec.now()
			content, terr, err := c.read(ctx, file)
			t1 := rec.now()
			cancel()
			rec.addLatency(kind+" read", t1-t0)
			if err != nil {
				rec.addError("%s: read %s at %v: %v", worker, file, t0, err)
				return
			}
			if terr != nil {
				rec.addError("%s: read %s at %v refused: %v", worker, file, t0, terr)
				return
			}
			if !complete(content) {
				// Editing now would be refused with NO_MATCH or, worse
				// for the test, succeed on a prefix; a careful agent
				// looks again.
				rec.addTorn(tornRead{worker: worker, file: file, start: t0, end: t1, size: len(content)})
				continue
			}
			seq++
			a := attempt{worker: worker, file: file, marker: fmt.Sprintf("%s-%06d", worker, seq)}
			ctx, cancel = context.WithTimeout(context.Background(), callTimeout)
			a.start = rec.now()
			terr, err = c.appendMarker(ctx, file, a.marker)
			a.end = rec.now()
			cancel()
			rec.addLatency(kind+" edit", a.end-a.start)
			switch {
			case err != nil:
				a.outcome, a.detail = failed, err.Error()
				rec.addAttempt(a)
				return
			case terr != nil:
				a.outcome, a.code = refused, terr.Code
				rec.addAttempt(a)
				continue // read again, retry with a new marker
			}
			a.outcome = acked
			rec.addAttempt(a)
			break
		}
	}
}

// runUnguarded is the non-cooperating writer: read, append a marker, write
// in place, no lock, no check.
func runUnguarded(rec *recorder, root string, files fileSet, pause, think time.Duration, stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(7, 0x0e9a))
	for seq := 1; ; seq++ {
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(rng.Int64N(int64(2*pause) + 1))):
		}
		file := files.pick(rng, rec.now())
		p := filepath.Join(root, filepath.FromSlash(file))
		w := unguardedWrite{file: file, marker: fmt.Sprintf("unguarded-%06d", seq)}
		w.readStart = rec.now()
		data, err := os.ReadFile(p)
		if err != nil {
			rec.addError("unguarded: read %s: %v", file, err)
			return
		}
		content := string(data)
		if !complete(content) {
			// Only this writer writes in place; editguard replaces
			// files whole, so this reader never sees a partial file.
			rec.addError("unguarded: read %s at %v: not a whole file (%d bytes): a torn file", file, w.readStart, len(data))
			return
		}
		content = strings.TrimSuffix(content, endLine+"\n") + w.marker + "\n" + endLine + "\n"
		if think > 0 {
			time.Sleep(time.Duration(rng.Int64N(int64(2*think) + 1)))
		}
		w.writeStart = rec.now()
		err = os.WriteFile(p, []byte(content), 0o644)
		w.writeEnd = rec.now()
		if err != nil {
			rec.addError("unguarded: write %s: %v", file, err)
			return
		}
		rec.addWrite(w)
	}
}

// check refuses a Config that describes no run.
func (c *Config) check() error {
	switch {
	case c.Files <= 0 || c.Duration <= 0:
		return errors.New("soak: Files and Duration must be positive")
	case c.CLIWorkers+c.MCPSessions == 0:
		return errors.New("soak: no guarded writers")
	case c.Own && (c.Files < c.CLIWorkers+c.MCPSessions || c.UnguardedPause > 0):
		return errors.New("soak: Own needs at least as many files as guarded writers, and no unguarded writer")
	}
	return nil
}

// writeFiles writes every file of files in root, whole: its header, pad
// bytes of padding and the END line.
func writeFiles(root string, files fileSet, pad int) error {
	for _, f := range files.all() {
		p := filepath.Join(root, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(header(f)+"\n"+padding(pad)+endLine+"\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Run performs a run as c describes and verifies it. The error is for a
// run that could not be carried out (the server did not start, the
// workspace could not be opened); broken guarantees are reported in
// Report.Violations.
func Run(ctx context.Context, c Config) (*Report, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if c.Mode == "" {
		c.Mode = ModeSoak
	}
	root := c.WorkspaceDir()
	files := newFileSet(&c)
	if err := writeFiles(root, files, c.Pad); err != nil {
		return nil, err
	}
	rec := newRecorder()
	var srv *server
	if c.MCPSessions > 0 {
		var err error
		if srv, err = startServer(ctx, c.Editguard, root); err != nil {
			return nil, err
		}
		defer srv.kill()
	}
	var clients []guardedClient
	defer func() {
		for _, cl := range clients {
			cl.close()
		}
	}()
	type worker struct {
		c          guardedClient
		name, kind string
	}
	var workers []worker
	for i := range c.CLIWorkers {
		name := fmt.Sprintf("cli-%d", i)
		cl := &cliClient{bin: c.Editguard, root: root, session: name}
		workers = append(workers, worker{cl, name, "cli"})
	}
	for range c.MCPSessions {
		cl, err := dialMCP(ctx, srv.url)
		if err != nil {
			return nil, err
		}
		clients = append(clients, cl)
		workers = append(workers, worker{cl, cl.ledgerName(), "mcp"})
	}

	flushes0, flushesKnown := DeviceFlushes("/sys", root)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, w := range workers {
		mine := files
		if c.Own {
			mine = files.share(i, len(workers))
		}
		wg.Go(func() { runGuarded(rec, w.c, w.name, w.kind, mine, uint64(i+1), stop) })
	}
	if c.UnguardedPause > 0 {
		wg.Go(func() { runUnguarded(rec, root, files, c.UnguardedPause, c.UnguardedThink, stop) })
	}
	progress(ctx, rec, &c)
	close(stop)
	wg.Wait()
	elapsed := rec.now()

	for _, cl := range clients {
		cl.close()
	}
	clients = nil
	var serverLog string
	if srv != nil {
		var err error
		if serverLog, err = srv.stop(); err != nil {
			rec.addError("server: %v", err)
		}
	}
	flushes1, ok := DeviceFlushes("/sys", root)
	flushesKnown = flushesKnown && ok && flushes1 >= flushes0
	rep, err := verify(&c, rec, files)
	if err != nil {
		return nil, err
	}
	rep.DeviceFlushes, rep.FlushesKnown = flushes1-flushes0, flushesKnown
	rep.Elapsed = elapsed
	rep.ServerLog = serverLog
	return rep, nil
}

// progress waits for the run's duration, printing a line now and then.
func progress(ctx context.Context, rec *recorder, c *Config) {
	deadline := time.NewTimer(c.Duration)
	defer deadline.Stop()
	var tick <-chan time.Time
	if c.Progress != nil && c.ProgressEvery > 0 {
		t := time.NewTicker(c.ProgressEvery)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			return
		case <-tick:
			fmt.Fprintf(c.Progress, "%8s  commits %d  refusals %d\n",
				rec.now().Round(time.Second), rec.commits.Load(), rec.refusal.Load())
		}
	}
}
