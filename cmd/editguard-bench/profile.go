package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"os/exec"
	"runtime/pprof"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// With EDITGUARD_BENCH_CPUPROFILE=FILE set, the benchmark does not start
// the editguard binary: it re-executes itself as the editguard server (the
// same internal/mcpserver code over the same stdio transport, as
// `editguard serve` runs it) and that child writes its CPU profile to FILE.
// The benchmark's own process, the MCP client, writes FILE.client.
const cpuProfileEnv = "EDITGUARD_BENCH_CPUPROFILE"

// serveEnv marks the re-executed child.
const serveEnv = "EDITGUARD_BENCH_SERVE_PROFILED"

// profiledServerCommand returns the command that runs the profiled server
// over ws.
func profiledServerCommand(ws string) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-root", ws)
	cmd.Env = append(os.Environ(), serveEnv+"=1")
	return cmd, nil
}

// serveProfiled is the child: it serves one MCP session on stdin/stdout
// with the CPU profiler running, and stops the profile when the client
// disconnects.
func serveProfiled(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	root := fs.String("root", "", "workspace root")
	if err := fs.Parse(args); err != nil {
		return err
	}
	out := os.Getenv(cpuProfileEnv)
	if *root == "" || out == "" {
		return errors.New("the profiled server needs -root and " + cpuProfileEnv)
	}
	ws, err := editguard.Open(*root, nil)
	if err != nil {
		return err
	}
	srv, err := mcpserver.New(ws, nil)
	if err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return err
	}
	err = srv.Run(ctx, &mcp.StdioTransport{})
	pprof.StopCPUProfile()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// profileClient starts the CPU profile of the benchmark process itself
// when EDITGUARD_BENCH_CPUPROFILE is set; the returned func stops it.
func profileClient() (stop func() error, err error) {
	out := os.Getenv(cpuProfileEnv)
	if out == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(out + ".client")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}
