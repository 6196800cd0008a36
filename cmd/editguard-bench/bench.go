package main

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/editguard/editguard/toolset"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// defaultFSServer is where `npm ci` in cmd/editguard-bench puts the pinned
// server-filesystem, relative to the repository root.
const defaultFSServer = "cmd/editguard-bench/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"

type config struct {
	editguard string // editguard binary
	node      string // node binary
	fsServer  string // server-filesystem's dist/index.js
	goPeer    string // mcp-filesystem-server binary; empty: not measured
	dir       string // parent of the workspace; empty: a new temp dir
	n         int    // timed calls per server and cell
	warmup    int    // untimed calls per server and cell
	ops       []string
	sizes     []int
	// gap is an untimed pause before every call (-lib only): the time an
	// agent spends between two changes, in which work a call left to run
	// after its answer (an fsync, a trim) finishes.
	gap time.Duration
	// readPage is how editguard's whole-file reads ask for their pages:
	// "limit" (a limit above the file's line count: pages of 256 KiB),
	// "default" (neither limit nor max_chars: pages of about 25,000
	// characters, as a model reads a file on), or max_chars as a number.
	readPage string
	// entries is the size of the directory the list cells list.
	entries int
	// sfsSizes lists with server-filesystem's list_directory_with_sizes
	// (stat'ed and sorted by name, as editguard lists) instead of
	// list_directory (names and types as the directory gives them).
	sfsSizes bool
}

// The markers that every edit toggles, so that each edit changes the file.
const (
	markerA = "MARKER_AAAA"
	markerB = "MARKER_BBBB"
)

// A server is one MCP server under test and how its tools are called.
type server struct {
	name string
	// version is the server's version for the report's header line.
	version string
	// readTool and editTool name the tools called, for the table.
	readTool, editTool string
	cs                 *mcp.ClientSession
	// read returns the call that reads the whole file named rel.
	read func(rel string) *mcp.CallToolParams
	// text extracts the file's text from a read result, and whether the
	// file goes on after it.
	text func(*mcp.CallToolResult) (string, bool, error)
	// edit returns the call that replaces old by new in rel.
	edit func(rel, old, new string) *mcp.CallToolParams
	// ws is the workspace's directory.
	ws string
	// create returns the call that writes content to rel, a new file.
	create func(rel, content string) *mcp.CallToolParams
	// edited, when set, checks an edit's result: a server that reports
	// success when nothing matched says how many replacements it made.
	edited func(*mcp.CallToolResult) error
	// editNeedsRead is set when the server refuses an edit of a file the
	// session has not read in its current state.
	editNeedsRead bool
	// paged is set when a whole file may take several reads: each asks
	// for the lines after the last one returned until one is not
	// truncated.
	paged bool
	// list returns the call that lists the directory rel from offset
	// (1-based; a server without pages is always asked for all of it),
	// and listed reads its result: the entries it holds and the offset
	// of the next page, 0 when there is none.
	list   func(rel string, offset int) *mcp.CallToolParams
	listed func(*mcp.CallToolResult) (entries, next int, err error)
}

// listAll lists the directory rel whole, page after page while the server
// says more follow (all of them with pages, only the first with first),
// and returns the entries listed, the calls and the time they took.
func (s *server) listAll(ctx context.Context, rel string, first bool) (int, int, time.Duration, error) {
	var (
		total time.Duration
		n     int
		calls int
	)
	for offset := 1; ; {
		res, d, err := s.call(ctx, s.list(rel, offset))
		total += d
		calls++
		if err != nil {
			return n, calls, total, err
		}
		got, next, err := s.listed(res)
		if err != nil {
			return n, calls, total, err
		}
		n += got
		if next == 0 || first {
			return n, calls, total, nil
		}
		if next != offset+got {
			return n, calls, total, fmt.Errorf("%s list %s: %d entries from offset %d, and the next page at %d", s.name, rel, got, offset, next)
		}
		offset = next
	}
}

// readWhole reads the whole file rel, in as many calls as the server
// needs, and returns its text and the time all the calls took.
func (s *server) readWhole(ctx context.Context, rel string) (string, time.Duration, int, error) {
	var (
		text  strings.Builder
		total time.Duration
		calls int
	)
	offset := 1
	for {
		p := s.read(rel)
		if s.paged {
			p.Arguments.(map[string]any)["offset"] = offset
		}
		res, d, err := s.call(ctx, p)
		total += d
		calls++
		if err != nil {
			return "", total, calls, err
		}
		got, more, err := s.text(res)
		if err != nil {
			return "", total, calls, err
		}
		text.WriteString(got)
		if !s.paged || !more {
			return text.String(), total, calls, nil
		}
		if n := strings.Count(got, "\n"); n > 0 {
			offset += n
		} else {
			return "", total, calls, fmt.Errorf("%s read %s: a truncated read returned no line", s.name, rel)
		}
	}
}

// call makes one tool call and reports how long it took. A protocol error
// or a tool error (isError) is an error.
func (s *server) call(ctx context.Context, p *mcp.CallToolParams) (*mcp.CallToolResult, time.Duration, error) {
	start := time.Now()
	res, err := s.cs.CallTool(ctx, p)
	d := time.Since(start)
	if err != nil {
		return nil, d, fmt.Errorf("%s %s: %w", s.name, p.Name, err)
	}
	if res.IsError {
		return nil, d, fmt.Errorf("%s %s failed: %s", s.name, p.Name, resultText(res))
	}
	return res, d, nil
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// A cell is one row of the table: an operation on a file of one size.
type cell struct {
	op   string // "ping", "read", "edit", "create", "list" (all pages) or "list1" (the first page)
	file string // name inside the workspace; none for ping, a prefix for create
	size int
}

// benchParent returns the absolute directory a run's workspace goes in:
// -dir, or a temporary one that cleanup removes.
func benchParent(cfg *config) (parent string, cleanup func(), err error) {
	cleanup = func() {}
	parent = cfg.dir
	if parent == "" {
		if parent, err = os.MkdirTemp("", "editguard-bench-"); err != nil {
			return "", nil, err
		}
		d := parent
		cleanup = func() { os.RemoveAll(d) }
	}
	if parent, err = filepath.Abs(parent); err != nil {
		cleanup()
		return "", nil, err
	}
	return parent, cleanup, nil
}

func benchmark(ctx context.Context, cfg *config, stdout, stderr io.Writer) error {
	parent, cleanup, err := benchParent(cfg)
	if err != nil {
		return err
	}
	defer cleanup()
	ws := filepath.Join(parent, "ws")
	cells, err := benchFiles(cfg, ws)
	if err != nil {
		return err
	}
	servers, stop, err := startServers(ctx, cfg, ws, parent)
	if err != nil {
		return err
	}
	defer stop()
	if err := checkWholeReads(ctx, cfg, ws, servers, stderr); err != nil {
		return err
	}
	loadBefore := loadAverage()
	results := make([][][]time.Duration, len(cells))
	for i, c := range cells {
		if results[i], err = runCell(ctx, cfg, ws, servers, c, stderr); err != nil {
			return err
		}
	}
	disk, err := diskProbe(parent)
	if err != nil {
		return err
	}
	load := fmt.Sprintf("1-minute load average %s before, %s after", loadBefore, loadAverage())
	return writeReport(stdout, cfg, disk, load, servers, cells, results)
}

// benchFiles makes the workspace ws with a file of each size, and the
// directory new files are created in, and returns the cells to measure.
func benchFiles(cfg *config, ws string) ([]cell, error) {
	if err := os.MkdirAll(filepath.Join(ws, "new"), 0o755); err != nil {
		return nil, err
	}
	var cells []cell
	for _, op := range cfg.ops {
		if op == "ping" {
			cells = append(cells, cell{op: op})
			continue
		}
		if op == "list" || op == "list1" {
			cells = append(cells, cell{op: op, file: listDir, size: cfg.entries})
			continue
		}
		for _, size := range cfg.sizes {
			name := fmt.Sprintf("bench-%d.txt", size)
			if op == "create" {
				name = fmt.Sprintf("new/created-%d", size)
			}
			cells = append(cells, cell{op: op, file: name, size: size})
		}
	}
	for _, size := range cfg.sizes {
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("bench-%d.txt", size)), benchContent(size), 0o644); err != nil {
			return nil, err
		}
	}
	if slices.Contains(cfg.ops, "list") || slices.Contains(cfg.ops, "list1") {
		if err := makeListDir(filepath.Join(ws, listDir), cfg.entries); err != nil {
			return nil, err
		}
	}
	return cells, nil
}

// listDir is the directory the list cells list.
const listDir = "listing"

// makeListDir makes dir with n small files, in no particular order of
// their names, and waits until the directory is older than editguard's
// racy window (2 s), as a directory an agent lists usually is: editguard
// keeps no listing of a directory changed within it.
func makeListDir(dir string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := range n {
		name := fmt.Sprintf("file-%06d.go", (i*7919)%n)
		if err := os.WriteFile(filepath.Join(dir, name), []byte("package x\n"), 0o644); err != nil {
			return err
		}
	}
	time.Sleep(2100 * time.Millisecond)
	return nil
}

// startServers starts editguard, server-filesystem and, if asked for, the
// Go peer on ws, and returns them with the function that stops them.
func startServers(ctx context.Context, cfg *config, ws, parent string) ([]*server, func(), error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "editguard-bench", Version: "1.0.0"}, nil)
	client.AddRoots(&mcp.Root{URI: (&url.URL{Scheme: "file", Path: ws}).String(), Name: "bench"})
	var servers []*server
	stop := func() {
		for _, s := range servers {
			s.cs.Close()
		}
	}
	starts := []func(context.Context, *mcp.Client, *config, string, string) (*server, error){startEditguard, startFilesystem}
	if cfg.goPeer != "" {
		starts = append(starts, startGoPeer)
	}
	for _, start := range starts {
		s, err := start(ctx, client, cfg, ws, parent)
		if err != nil {
			stop()
			return nil, nil, err
		}
		servers = append(servers, s)
	}
	return servers, stop, nil
}

// checkWholeReads checks that every server returns each file whole: the
// read times would otherwise compare different work.
func checkWholeReads(ctx context.Context, cfg *config, ws string, servers []*server, stderr io.Writer) error {
	for _, size := range cfg.sizes {
		c := cell{op: "read", file: fmt.Sprintf("bench-%d.txt", size), size: size}
		want, err := os.ReadFile(filepath.Join(ws, c.file))
		if err != nil {
			return err
		}
		for _, s := range servers {
			got, _, calls, err := s.readWhole(ctx, c.file)
			if err != nil {
				return fmt.Errorf("%s read %s: %v", s.name, c.file, err)
			}
			fmt.Fprintf(stderr, "%s reads %s whole in %d call(s)\n", s.name, c.file, calls)
			if got != string(want) {
				return fmt.Errorf("%s read %s: got %d bytes of text, want the file's %d", s.name, c.file, len(got), len(want))
			}
		}
	}
	if slices.Contains(cfg.ops, "list") || slices.Contains(cfg.ops, "list1") {
		for _, s := range servers {
			if s.list == nil {
				return fmt.Errorf("%s: the list cells are not measured on it", s.name)
			}
			n, calls, _, err := s.listAll(ctx, listDir, false)
			if err != nil {
				return err
			}
			fmt.Fprintf(stderr, "%s lists %s whole in %d call(s)\n", s.name, listDir, calls)
			if n != cfg.entries {
				return fmt.Errorf("%s lists %d entries of %s, want %d", s.name, n, listDir, cfg.entries)
			}
		}
	}
	return nil
}

// runCell times cell c on every server, the servers taking turns, and
// checks that the changes it timed landed. It returns each server's
// timed calls.
func runCell(ctx context.Context, cfg *config, ws string, servers []*server, c cell, stderr io.Writer) ([][]time.Duration, error) {
	fmt.Fprintf(stderr, "%s %s: %d warm-up + %d timed calls per server\n", c.op, c.file, cfg.warmup, cfg.n)
	m := &markerState{on: false}
	results := make([][]time.Duration, len(servers))
	for k := 0; k < cfg.warmup+cfg.n; k++ {
		// Rotate which server goes first, so that none always finds
		// the page cache or the CPU in the state another left.
		for r := range servers {
			j := (k + r) % len(servers)
			d, err := once(ctx, servers[j], c, m, k)
			if err != nil {
				return nil, err
			}
			if k >= cfg.warmup {
				results[j] = append(results[j], d)
			}
		}
	}
	return results, checkLanded(cfg, ws, servers, c, m)
}

// checkLanded checks that the timed changes of cell c landed: the last
// file each server created holds what was written, and the edited file
// holds the marker of the last edit.
func checkLanded(cfg *config, ws string, servers []*server, c cell, m *markerState) error {
	switch c.op {
	case "create":
		for _, s := range servers {
			name := createdName(c, s, cfg.warmup+cfg.n-1)
			b, err := os.ReadFile(filepath.Join(ws, name))
			if err != nil || !bytes.Equal(b, benchContent(c.size)) {
				return fmt.Errorf("%s did not create %s with the content written (%d bytes read, %v)", s.name, name, len(b), err)
			}
		}
	case "edit":
		b, err := os.ReadFile(filepath.Join(ws, c.file))
		if err != nil {
			return err
		}
		if want := m.current(); !bytes.Contains(b, []byte(want)) {
			return fmt.Errorf("after the edits %s does not contain %s", c.file, want)
		}
	}
	return nil
}

// markerState tracks which marker the file holds.
type markerState struct{ on bool }

func (m *markerState) current() string {
	if m.on {
		return markerB
	}
	return markerA
}

// createdName is the new file that call k of cell c creates on s.
func createdName(c cell, s *server, k int) string {
	return fmt.Sprintf("%s-%s-%d.txt", c.file, s.name, k)
}

// once makes one timed call, the k-th, of c's operation on s. For an edit
// on a server that needs it, the file is read first, untimed. A creation
// writes a new file, and the file the previous call created is removed,
// untimed, so that the directory stays the same size.
func once(ctx context.Context, s *server, c cell, m *markerState, k int) (time.Duration, error) {
	switch c.op {
	case "ping":
		start := time.Now()
		err := s.cs.Ping(ctx, nil)
		return time.Since(start), err
	case "read":
		_, d, _, err := s.readWhole(ctx, c.file)
		return d, err
	case "list", "list1":
		_, _, d, err := s.listAll(ctx, c.file, c.op == "list1")
		return d, err
	case "create":
		if k > 0 {
			os.Remove(filepath.Join(s.ws, createdName(c, s, k-1)))
		}
		_, d, err := s.call(ctx, s.create(createdName(c, s, k), string(benchContent(c.size))))
		return d, err
	case "edit":
		if s.editNeedsRead {
			if _, _, err := s.call(ctx, s.read(c.file)); err != nil {
				return 0, err
			}
		}
		old := m.current()
		m.on = !m.on
		res, d, err := s.call(ctx, s.edit(c.file, old, m.current()))
		if err == nil && s.edited != nil {
			err = s.edited(res)
		}
		return d, err
	}
	return 0, fmt.Errorf("unknown operation %q", c.op)
}

// benchContent returns size bytes of LF-terminated ASCII lines with markerA
// on one line in the middle.
func benchContent(size int) []byte {
	var b bytes.Buffer
	b.Grow(size + 128)
	for i := 0; b.Len() < size; i++ {
		if b.Len() >= size/2 && !bytes.Contains(b.Bytes(), []byte(markerA)) {
			fmt.Fprintf(&b, "\t%s: the line every edit changes\n", markerA)
			continue
		}
		fmt.Fprintf(&b, "%06d the quick brown fox jumps over the lazy dog; pack my box with five dozen jugs\n", i)
	}
	out := b.Bytes()[:size]
	out[size-1] = '\n'
	return out
}

func startEditguard(ctx context.Context, client *mcp.Client, cfg *config, ws, logDir string) (*server, error) {
	cmd := exec.Command(cfg.editguard, "--root", ws, "serve")
	if os.Getenv(cpuProfileEnv) != "" {
		var err error
		if cmd, err = profiledServerCommand(ws); err != nil {
			return nil, err
		}
	}
	cs, err := connect(ctx, client, cmd, filepath.Join(logDir, "editguard.log"))
	if err != nil {
		return nil, fmt.Errorf("start editguard: %w", err)
	}
	return &server{
		ws:       ws,
		name:     "editguard",
		readTool: "read_file",
		editTool: "edit_file",
		cs:       cs,
		read: func(rel string) *mcp.CallToolParams {
			args := map[string]any{"path": rel}
			switch cfg.readPage {
			case "limit":
				// A limit above the file's line count: the whole file,
				// as server-filesystem returns it, in pages of 256 KiB.
				args["limit"] = 1 << 30
			case "default":
			default:
				n, _ := strconv.Atoi(cfg.readPage)
				args["max_chars"] = n
			}
			return &mcp.CallToolParams{Name: "read_file", Arguments: args}
		},
		list: func(rel string, offset int) *mcp.CallToolParams {
			return &mcp.CallToolParams{Name: "list_directory", Arguments: map[string]any{"path": rel, "offset": offset}}
		},
		listed: func(res *mcp.CallToolResult) (int, int, error) {
			m, ok := res.Meta["editguard/result"].(map[string]any)
			if !ok {
				return 0, 0, fmt.Errorf("_meta result is %T", res.Meta["editguard/result"])
			}
			entries, _ := m["entries"].([]any)
			next, _ := m["next_offset"].(float64)
			return len(entries), int(next), nil
		},
		text: func(res *mcp.CallToolResult) (string, bool, error) {
			// The model reads a header line and numbered lines; the
			// file's text is the lines without their number columns.
			m, ok := res.Meta["editguard/result"].(map[string]any)
			if !ok {
				return "", false, fmt.Errorf("_meta result is %T", res.Meta["editguard/result"])
			}
			// The lines asked for go on where this read stopped.
			next, _ := m["next_offset"].(float64)
			more := next > 0
			tc, ok := res.Content[0].(*mcp.TextContent)
			if !ok {
				return "", false, fmt.Errorf("content is %T", res.Content[0])
			}
			text, err := toolset.ReadText(tc.Text)
			return text, more, err
		},
		edit: func(rel, old, new string) *mcp.CallToolParams {
			return &mcp.CallToolParams{Name: "edit_file", Arguments: map[string]any{"path": rel, "old_string": old, "new_string": new}}
		},
		create: func(rel, content string) *mcp.CallToolParams {
			return &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": rel, "content": content}}
		},
		editNeedsRead: true,
		paged:         true,
	}, nil
}

func startFilesystem(ctx context.Context, client *mcp.Client, cfg *config, ws, logDir string) (*server, error) {
	cmd := exec.Command(cfg.node, cfg.fsServer, ws)
	cs, err := connect(ctx, client, cmd, filepath.Join(logDir, "server-filesystem.log"))
	if err != nil {
		return nil, fmt.Errorf("start server-filesystem (%s; run npm ci in cmd/editguard-bench): %w", cfg.fsServer, err)
	}
	abs := func(rel string) string { return filepath.Join(ws, rel) }
	return &server{
		ws:       ws,
		name:     "server-filesystem",
		version:  fsServerVersion(cfg.fsServer),
		readTool: "read_text_file",
		editTool: "edit_file",
		cs:       cs,
		read: func(rel string) *mcp.CallToolParams {
			return &mcp.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": abs(rel)}}
		},
		text: func(res *mcp.CallToolResult) (string, bool, error) { return resultText(res), false, nil },
		// The whole directory in one call: list_directory gives names and
		// types in the directory's order, list_directory_with_sizes
		// stats every entry and sorts them by name.
		list: func(rel string, _ int) *mcp.CallToolParams {
			name := "list_directory"
			if cfg.sfsSizes {
				name = "list_directory_with_sizes"
			}
			return &mcp.CallToolParams{Name: name, Arguments: map[string]any{"path": abs(rel)}}
		},
		listed: func(res *mcp.CallToolResult) (int, int, error) {
			n := 0
			for line := range strings.Lines(resultText(res)) {
				if strings.HasPrefix(line, "[FILE] ") || strings.HasPrefix(line, "[DIR] ") {
					n++
				}
			}
			return n, 0, nil
		},
		edit: func(rel, old, new string) *mcp.CallToolParams {
			return &mcp.CallToolParams{Name: "edit_file", Arguments: map[string]any{
				"path":  abs(rel),
				"edits": []map[string]any{{"oldText": old, "newText": new}},
			}}
		},
		create: func(rel, content string) *mcp.CallToolParams {
			return &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": abs(rel), "content": content}}
		},
	}, nil
}

// startGoPeer starts mcp-filesystem-server, the Go filesystem server of
// github.com/mark3labs/mcp-filesystem-server, allowed the workspace. It
// reads a text file whole with read_file and replaces the first occurrence
// of a string with modify_file (all_occurrences false), which writes the
// file in place without fsync.
func startGoPeer(ctx context.Context, client *mcp.Client, cfg *config, ws, logDir string) (*server, error) {
	cmd := exec.Command(cfg.goPeer, ws)
	cs, err := connect(ctx, client, cmd, filepath.Join(logDir, "mcp-filesystem-server.log"))
	if err != nil {
		return nil, fmt.Errorf("start mcp-filesystem-server (%s): %w", cfg.goPeer, err)
	}
	abs := func(rel string) string { return filepath.Join(ws, rel) }
	return &server{
		ws:       ws,
		name:     "mcp-filesystem-server",
		version:  goPeerVersion(cfg.goPeer, cs),
		readTool: "read_file",
		editTool: "modify_file",
		cs:       cs,
		read: func(rel string) *mcp.CallToolParams {
			return &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": abs(rel)}}
		},
		// A text file comes back as one text content, its whole text; a
		// file over its inline limit (5 MiB) as a note and a resource
		// link, which the whole-file check refuses.
		text: func(res *mcp.CallToolResult) (string, bool, error) { return resultText(res), false, nil },
		edit: func(rel, old, new string) *mcp.CallToolParams {
			return &mcp.CallToolParams{Name: "modify_file", Arguments: map[string]any{
				"path":            abs(rel),
				"find":            old,
				"replace":         new,
				"all_occurrences": false,
			}}
		},
		create: func(rel, content string) *mcp.CallToolParams {
			return &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": abs(rel), "content": content}}
		},
		edited: func(res *mcp.CallToolResult) error {
			if t := resultText(res); !strings.Contains(t, "Made 1 replacement(s)") {
				return fmt.Errorf("mcp-filesystem-server modify_file: %s", t)
			}
			return nil
		},
	}, nil
}

// goPeerVersion is the module version recorded in the binary (go install
// records it), else the version the server announces, else "?".
func goPeerVersion(path string, cs *mcp.ClientSession) string {
	if bi, err := buildinfo.ReadFile(path); err == nil && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	if r := cs.InitializeResult(); r != nil && r.ServerInfo != nil && r.ServerInfo.Version != "" && r.ServerInfo.Version != "dev" {
		return r.ServerInfo.Version
	}
	return "?"
}

// connect starts cmd as a stdio MCP server, its stderr going to logPath.
func connect(ctx context.Context, client *mcp.Client, cmd *exec.Cmd, logPath string) (*mcp.ClientSession, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	// The child holds its own descriptor; ours is not needed after start.
	defer log.Close()
	cmd.Stderr = log
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("%w; stderr: %s", err, bytes.TrimSpace(b))
	}
	return cs, nil
}

// machine describes where the numbers were taken.
func machine(cfg *config) string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	nodeVersion := "?"
	if out, err := exec.Command(cfg.node, "--version").Output(); err == nil {
		nodeVersion = strings.TrimSpace(string(out))
	}
	return fmt.Sprintf("%d CPUs (%s), %s/%s, %s, node %s", runtime.NumCPU(), cpu, runtime.GOOS, runtime.GOARCH, runtime.Version(), nodeVersion)
}

// loadAverage returns the 1-minute load average, or "?" where the system
// does not report it: other work on the machine shows in the p90 column.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}
