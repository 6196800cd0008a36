//go:build unix

package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/editguard/editguard/internal/testutil"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// peakOf waits for cmd, which was asked to stop, and returns its peak
// resident size in bytes.
func peakOf(t *testing.T, cmd *exec.Cmd) int64 {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve exited with %v", err)
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("serve did not exit within 60 s of being asked to")
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Fatal("no rusage of the serve process")
	}
	return testutil.MaxRSSKiB(ru) << 10
}

// stdioPeak runs `editguard serve` on stdio with the global flags flags,
// pipes it the messages of one session that calls write_file with content
// (streamed, never held whole here), closes its input, and returns what
// it wrote and its peak resident size.
func stdioPeak(t *testing.T, root string, flags []string, content io.Reader, size int64) (string, int64) {
	t.Helper()
	cmd := exec.Command(editguardBin(t), append(append([]string{"--root", root}, flags...), "serve")...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve's stderr: %.2000s", stderr.String())
		}
	})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(in, 1<<20)
	w.WriteString(lines(pipeInitialize, pipeInitialized))
	w.WriteString(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"big.txt","content":"`)
	if n, err := io.Copy(w, content); err != nil || n != size {
		t.Fatalf("piped %d bytes of content, want %d: %v", n, size, err)
	}
	w.WriteString(`"}}}` + "\n" + `{"jsonrpc":"2.0","id":3,"method":"tools/list"}` + "\n")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	in.Close()
	peak := peakOf(t, cmd)
	return out.String(), peak
}

// lineReader is n bytes of 79-character lines of c, for a text file.
func lineReader(c byte, n int64) io.Reader {
	line := bytes.Repeat([]byte{c}, 80)
	line[79] = '\n'
	return io.LimitReader(&cycle{b: line}, n)
}

type cycle struct {
	b []byte
	i int
}

func (c *cycle) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		k := copy(p[n:], c.b[c.i:])
		n += k
		c.i = (c.i + k) % len(c.b)
	}
	return n, nil
}

// escapedLines is n bytes of file content, 79-character lines, as JSON
// string content: each newline is the two bytes \n.
func escapedLines(n int64) (io.Reader, int64) {
	lines := n / 80
	line := append(bytes.Repeat([]byte{'x'}, 79), '\\', 'n')
	return io.LimitReader(&cycle{b: line}, lines*81), lines * 81
}

// TestStdioLargeWritePeak writes a 63 MiB file through `editguard serve`
// on stdio, at the default limit of 64 MiB, and checks the server's peak
// resident size.
func TestStdioLargeWritePeak(t *testing.T) {
	if testing.Short() {
		t.Skip("pipes 63 MiB through a serve process")
	}
	root := t.TempDir()
	const file = 63 << 20
	r, n := escapedLines(file)
	out, peak := stdioPeak(t, root, nil, r, n)
	answers := answersByID(t, out)
	if a := answers["2"]; a.Error != nil || len(a.Result) == 0 || strings.Contains(string(a.Result), `"isError":true`) {
		t.Fatalf("write of 63 MiB: %+v %.1000s", a.Error, a.Result)
	}
	if fi, err := os.Stat(filepath.Join(root, "big.txt")); err != nil || fi.Size() != file/80*80 {
		t.Fatalf("big.txt: %v %v", fi, err)
	}
	t.Logf("stdio write of %d MiB: peak RSS %d MiB", file>>20, peak>>20)
	if peak > 20*file {
		t.Errorf("peak RSS %d MiB for a write of %d MiB, want under 20 times the file", peak>>20, file>>20)
	}
}

// TestStdioOverLimitPeak sends a 60 MB message to `editguard serve` on
// stdio with --max-file-size 8MiB: it is refused without being held.
func TestStdioOverLimitPeak(t *testing.T) {
	if testing.Short() {
		t.Skip("pipes 60 MB through a serve process")
	}
	root := t.TempDir()
	const size = 60_000_000
	out, peak := stdioPeak(t, root, []string{"--max-file-size", "8MiB"}, &repeatReader{c: 'x', n: size}, size)
	answers := answersByID(t, out)
	if a := answers["2"]; a.Error == nil || a.Error.Code != -32600 {
		t.Fatalf("60 MB message at --max-file-size 8MiB: answer %v %.500s (peak RSS %d MiB), want -32600", a.Error, a.Result, peak>>20)
	}
	if a, ok := answers["3"]; !ok || a.Error != nil {
		t.Errorf("no answer to the request after the one over the limit: %+v", a)
	}
	t.Logf("stdio 60 MB message, --max-file-size 8MiB: peak RSS %d MiB; %s", peak>>20, answers["2"].Error.Message)
	// The limit is 28 MiB: what is held is bounded by it, not by the 60 MB
	// sent (parsed whole, the message took 700 MiB).
	if peak > 400<<20 {
		t.Errorf("peak RSS %d MiB, want well under what parsing the message whole takes", peak>>20)
	}
	if _, err := os.Stat(filepath.Join(root, "big.txt")); !os.IsNotExist(err) {
		t.Errorf("big.txt exists (%v): the message over the limit was carried out", err)
	}
}

// TestHTTPLargeWritePeak writes a 63 MiB file through `editguard serve
// --http` and checks the server's peak resident size.
func TestHTTPLargeWritePeak(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 63 MiB to a serve process")
	}
	root := t.TempDir()
	cmd := exec.Command(editguardBin(t), "--root", root, "serve", "--http", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "EDITGUARD_TOKEN=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stderr)
	if !sc.Scan() {
		t.Fatalf("no output from %s: %v", cmd, sc.Err())
	}
	m := regexp.MustCompile(`http://(\S+)/mcp`).FindStringSubmatch(sc.Text())
	if m == nil {
		t.Fatalf("first line %q does not name the endpoint", sc.Text())
	}
	go func() {
		for sc.Scan() {
		}
	}()
	cs := httpConnect(t, "http://"+m[1]+"/mcp", nil)
	const file = 63 << 20
	content, _ := io.ReadAll(lineReader('x', file))
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "big.txt", "content": string(content)}})
	if err != nil || res.IsError {
		t.Fatalf("write of 63 MiB: %v %v", err, res)
	}
	cs.Close()
	if fi, err := os.Stat(filepath.Join(root, "big.txt")); err != nil || fi.Size() != file {
		t.Fatalf("big.txt: %v %v", fi, err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	peak := peakOf(t, cmd)
	t.Logf("HTTP write of %d MiB: peak RSS %d MiB", file>>20, peak>>20)
	if peak > 20*file {
		t.Errorf("peak RSS %d MiB for a write of %d MiB, want under 20 times the file", peak>>20, file>>20)
	}
}

// TestHTTPOverLimit posts bodies over the limit to `editguard serve
// --http --max-file-size 1MiB` (a limit of 3 MiB + 4 MiB): 413 with a
// JSON-RPC error naming the limit, whether the body's length is given or
// not, and nothing written.
func TestHTTPOverLimit(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	url, _, _ := startServe(t, root, "--max-file-size", "1MiB", "--http", "127.0.0.1:0")
	body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"big.txt","content":"` + strings.Repeat("x", 11<<20) + `"}}}`
	for _, chunked := range []bool{false, true} {
		var r io.Reader = strings.NewReader(body)
		if chunked {
			r = io.MultiReader(r) // no length: sent chunked
		}
		req, _ := http.NewRequest(http.MethodPost, url, r)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var a rpcAnswer
		if resp.StatusCode != http.StatusRequestEntityTooLarge || json.Unmarshal(b, &a) != nil || a.Error == nil || a.Error.Code != -32600 ||
			!strings.Contains(a.Error.Message, "over the limit of 7340032 bytes (7 MiB)") {
			t.Errorf("11 MiB body (chunked %v) at --max-file-size 1MiB: %d %.300s; want 413 with a JSON-RPC error naming the limit", chunked, resp.StatusCode, b)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "big.txt")); !os.IsNotExist(err) {
		t.Errorf("big.txt exists (%v)", err)
	}
}
