// Command editguard-bench measures the per-call latency of editguard's MCP
// server against the reference filesystem server of the MCP project
// (@modelcontextprotocol/server-filesystem), driven by one Go client over
// stdio on the same files.
//
// It times reading a whole file (read_file against read_text_file) and
// editing one string in it (edit_file against edit_file) at 4 KiB and 1 MiB,
// and prints a markdown table of the median and 90th percentile and the
// ratio of server-filesystem's time to editguard's (above 1: editguard is
// faster).
//
// With -ops list,list1 it times listing a directory of -entries files:
// every page of editguard's list_directory in turn, and its first page,
// against server-filesystem's one call of list_directory (or, with
// -sfs-sizes, list_directory_with_sizes, which stats and sorts as editguard
// does). -read-page says how editguard's whole-file reads page: a limit
// over the line count (256 KiB pages), the default pages a model reads
// without arguments, or max_chars N.
//
// The servers are measured in alternating calls on the same file, so
// that drift in the machine's speed affects them alike. Every edit changes
// the file (a marker is toggled). editguard refuses to edit a file the
// session has not seen in its current state, so before each of its edits
// the benchmark reads the file; that read is not timed, because
// the other servers have no such step. The timed editguard edit includes
// what makes it safe: the SHA-256 check under the file's lock, the history
// snapshot, the fsyncs of the atomic replace and the ledger append.
//
// With -go-peer, a third server is measured alongside: the Go filesystem
// server github.com/mark3labs/mcp-filesystem-server, reading with read_file
// and editing with modify_file (first occurrence only), which writes the
// file in place without fsync. It is not a dependency of this module;
// build it apart and pass the binary:
//
//	GOBIN=/tmp/peer go install github.com/mark3labs/mcp-filesystem-server@v0.11.1
//	editguard-bench -editguard /path/to/editguard -go-peer /tmp/peer/mcp-filesystem-server
//
// (Where go install cannot reach the module proxy's version list, which it
// consults for deprecations, `go mod download` the same version and run
// go build in the directory it reports.) The table then has a median and
// a p90 column per server and a ratio of each peer to editguard, and the
// order of the servers rotates on each call round.
//
// Usage:
//
//	editguard-bench -editguard /path/to/editguard [-go-peer PATH] [-n 200] [-warmup 20]
//
// With EDITGUARD_BENCH_CPUPROFILE=FILE, the editguard server is this
// program re-executed as one (see profile.go) and writes a CPU profile to
// FILE; the client's profile goes to FILE.client.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if os.Getenv(serveEnv) != "" {
		if err := serveProfiled(ctx, os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "editguard-bench (profiled server):", err)
			os.Exit(1)
		}
		return
	}
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "editguard-bench:", err)
		os.Exit(1)
	}
}

// run parses the flags, prepares the files, starts the servers and prints
// the table to stdout. Progress goes to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("editguard-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.StringVar(&cfg.editguard, "editguard", "", "path to the editguard binary (required)")
	fs.StringVar(&cfg.node, "node", "node", "node binary that runs server-filesystem")
	fs.StringVar(&cfg.fsServer, "fs-server", defaultFSServer, "server-filesystem's entry point (dist/index.js)")
	fs.StringVar(&cfg.goPeer, "go-peer", "", "`PATH` of a mcp-filesystem-server binary to measure as well (empty: not measured); build it with\nGOBIN=/tmp/peer go install github.com/mark3labs/mcp-filesystem-server@v0.11.1")
	fs.StringVar(&cfg.dir, "dir", "", "directory for the workspace (default: a new temporary directory)")
	fs.IntVar(&cfg.n, "n", 200, "timed calls per server and cell")
	fs.IntVar(&cfg.warmup, "warmup", 20, "untimed calls per server and cell before timing")
	ops := fs.String("ops", "ping,read,edit", "operations to measure, comma-separated: ping (the protocol round trip alone, as a floor), read, edit, create (a new file, written whole), list (list_directory of a directory of -entries files, every page), list1 (its first page)")
	fs.StringVar(&cfg.readPage, "read-page", "limit", "how editguard's whole-file reads page: limit (a limit over the line count: 256 KiB pages), default (neither: pages of about 25,000 characters), or a number, passed as max_chars")
	fs.IntVar(&cfg.entries, "entries", 10000, "files in the directory the list operations list")
	fs.BoolVar(&cfg.sfsSizes, "sfs-sizes", false, "list with server-filesystem's list_directory_with_sizes (stat'ed and sorted, as editguard lists) instead of list_directory")
	sizes := fs.String("sizes", "4096,1048576", "file sizes in bytes, comma-separated")
	fs.DurationVar(&cfg.gap, "gap", 0, "with -lib or -cold-page, an untimed pause before every call of every cell: an agent's time between changes, in which work left to run after an answer finishes (0: back to back)")
	lib := fs.Bool("lib", false, "measure the library's commit path against a bare durable replace instead of the servers (no -editguard needed)")
	checkpoint := fs.Bool("checkpoint", false, "measure the checkpoints around a shell command (BeginCommand and End) on trees of -files files, against git status, a copy and a stat walk, instead of the servers (no -editguard needed)")
	files := fs.String("files", "2000,5000,20000", "with -checkpoint, the trees' sizes in files, comma-separated")
	rounds := fs.Int("rounds", 7, "with -checkpoint, timed rounds per tree and section, after one warm-up round; with -http-load, rounds of every count of sessions")
	httpLoad := fs.String("http-load", "", "measure editguard's commits per second over streamable HTTP with these counts of sessions, comma-separated (say 1,64), each editing a 4 KiB file of its own, the counts taking turns for -rounds rounds of -duration each (empty: not measured)")
	duration := fs.Duration("duration", 10*time.Second, "with -http-load, how long each count of sessions runs")
	coldPage := fs.Int("cold-page", 0, "measure, through editguard alone, a cold read of the last page of a file of this many bytes against a cold read of the first page of a 1 MiB file, -warmup + -n calls each, alternating (0: not measured)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, op := range strings.Split(*ops, ",") {
		if !slices.Contains([]string{"ping", "read", "edit", "create", "list", "list1"}, op) {
			return fmt.Errorf("unknown operation %q in -ops (want ping, read, edit, create, list, list1)", op)
		}
		cfg.ops = append(cfg.ops, op)
	}
	if n, err := strconv.Atoi(cfg.readPage); cfg.readPage != "limit" && cfg.readPage != "default" && (err != nil || n < 1) {
		return fmt.Errorf("bad -read-page %q (want limit, default or max_chars)", cfg.readPage)
	}
	if cfg.entries < 1 {
		return fmt.Errorf("bad -entries %d", cfg.entries)
	}
	for _, sz := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(sz)
		if err != nil || n < 1024 {
			return fmt.Errorf("bad size %q in -sizes (want bytes, at least 1024)", sz)
		}
		cfg.sizes = append(cfg.sizes, n)
	}
	if *checkpoint && fs.NArg() == 0 {
		n, err := parseCheckpointFiles(*files)
		if err != nil {
			return err
		}
		return checkpointBench(ctx, &checkpointConfig{dir: cfg.dir, files: n, rounds: *rounds}, stdout, stderr)
	}
	if *lib && fs.NArg() == 0 && cfg.n >= 1 && cfg.warmup >= 0 {
		return libBench(ctx, &cfg, stdout, stderr)
	}
	if cfg.editguard == "" || fs.NArg() != 0 || cfg.n < 1 || cfg.warmup < 0 {
		fs.Usage()
		return errors.New("usage: editguard-bench -editguard PATH [-go-peer PATH] [-n N] [-warmup N] [-dir DIR]")
	}
	if *httpLoad != "" {
		var counts []int
		for _, f := range strings.Split(*httpLoad, ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 {
				return fmt.Errorf("bad count %q in -http-load", f)
			}
			counts = append(counts, n)
		}
		if cfg.editguard == "" {
			return errors.New("-http-load needs -editguard")
		}
		return httpLoadBench(ctx, &cfg, counts, *duration, *rounds, stdout, stderr)
	}
	if *coldPage > 0 {
		if *coldPage < 2<<20 {
			return fmt.Errorf("bad -cold-page %d (want at least 2 MiB)", *coldPage)
		}
		return coldPageBench(ctx, &cfg, *coldPage, stdout, stderr)
	}
	stopProfile, err := profileClient()
	if err != nil {
		return err
	}
	if err := benchmark(ctx, &cfg, stdout, stderr); err != nil {
		stopProfile()
		return err
	}
	return stopProfile()
}
