package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpLoadBench measures commits per second of editguard's MCP server over
// streamable HTTP (-http-load): for each count of sessions in sessions,
// that many MCP sessions (protocol 2025-11-25, one HTTP connection pool),
// each editing a file of its own, 4 KiB, in a loop for dur: read once,
// then edit_file toggling a marker, each edit's reply awaited before the
// next. The counts take turns, rounds times, on one server; it prints each
// run's commits per second, edit p50 and p99, and the ratio of each run's
// commits per second to the mean of the one-session runs.
func httpLoadBench(ctx context.Context, cfg *config, sessions []int, dur time.Duration, rounds int, stdout, stderr io.Writer) error {
	parent, cleanup, err := benchParent(cfg)
	if err != nil {
		return err
	}
	defer cleanup()
	ws := filepath.Join(parent, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return err
	}
	maxN := slices.Max(sessions)
	content := benchContent(4096)
	for i := range maxN {
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%03d.txt", i)), content, 0o644); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(cfg.editguard, "--root", ws, "serve", "--http", addr, "--max-sessions", fmt.Sprint(maxN+8))
	log, err := os.Create(filepath.Join(parent, "server.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	fmt.Fprintf(stderr, "server pid %d at %s\n", cmd.Process.Pid, addr)
	url := "http://" + addr + "/mcp"
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if i > 200 {
			return fmt.Errorf("the server did not listen: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * maxN, MaxConnsPerHost: 0}}
	fmt.Fprintf(stdout, "| round | sessions | commits | commits/s | edit p50 | edit p99 | p99/p50 | load |\n|---:|---:|---:|---:|---:|---:|---:|---|\n")
	var one []float64
	type run struct {
		n    int
		rate float64
	}
	var runs []run
	for r := 1; r <= rounds; r++ {
		for _, n := range sessions {
			lat, err := httpLoadRun(ctx, url, hc, n, dur)
			if err != nil {
				return err
			}
			slices.Sort(lat)
			rate := float64(len(lat)) / dur.Seconds()
			p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
			fmt.Fprintf(stdout, "| %d | %d | %d | %.0f | %.2f ms | %.2f ms | %.1f | %s |\n", r, n, len(lat), rate, msOf(p50), msOf(p99), float64(p99)/float64(p50), loadAverage())
			if n == 1 {
				one = append(one, rate)
			}
			runs = append(runs, run{n, rate})
		}
	}
	if len(one) > 0 {
		var mean float64
		for _, v := range one {
			mean += v
		}
		mean /= float64(len(one))
		fmt.Fprintf(stdout, "\n")
		for _, r := range runs {
			if r.n != 1 {
				fmt.Fprintf(stdout, "%d sessions: %.2f× one session's mean commits/s\n", r.n, r.rate/mean)
			}
		}
	}
	return nil
}

// httpLoadRun runs n sessions on files f000.. for dur and returns the
// latency of every edit that committed.
func httpLoadRun(ctx context.Context, url string, hc *http.Client, n int, dur time.Duration) ([]time.Duration, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "editguard-bench-http", Version: "1"}, nil)
	css := make([]*mcp.ClientSession, n)
	for i := range n {
		tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}
		cs, err := client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			return nil, err
		}
		css[i] = cs
	}
	defer func() {
		for _, cs := range css {
			cs.Close()
		}
	}()
	var (
		mu   sync.Mutex
		lat  []time.Duration
		errs []error
		wg   sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(dur)
	for i, cs := range css {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("f%03d.txt", i)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": name}})
			if err == nil && res.IsError {
				err = fmt.Errorf("read %s: %s", name, resultText(res))
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			m := &markerState{on: bytes.Contains([]byte(resultText(res)), []byte(markerB))}
			var mine []time.Duration
			for time.Now().Before(deadline) {
				old := m.current()
				m.on = !m.on
				t := time.Now()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "edit_file", Arguments: map[string]any{"path": name, "old_string": old, "new_string": m.current()}})
				d := time.Since(t)
				if err == nil && res.IsError {
					err = fmt.Errorf("edit %s: %s", name, resultText(res))
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				mine = append(mine, d)
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, errs[0]
	}
	if len(lat) == 0 {
		return nil, fmt.Errorf("no edit committed with %d sessions", n)
	}
	return lat, nil
}
