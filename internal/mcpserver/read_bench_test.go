package mcpserver_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/editguard/editguard/internal/mcpserver"
	"github.com/editguard/editguard/toolset"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkReadFile reads a whole file through read_file, as
// cmd/editguard-bench does but in process: a go-sdk client and the server
// over in-memory transports, each call asking for more lines than the file
// has (a limit) and paging on with offset while the result has a
// next_offset (100 KiB: 1 call; 1 MiB: 5 calls). The time and allocations
// are the client's and the server's together; the server's share shows in
// a profile:
//
//	go test -run '^$' -bench BenchmarkReadFile -benchtime 200x -cpuprofile /tmp/read.prof ./internal/mcpserver
//	go tool pprof -top /tmp/read.prof
func BenchmarkReadFile(b *testing.B) {
	for _, size := range []int{100 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			content := benchContent(size)
			ws := newWorkspace(b, nil, map[string]string{"f.txt": content})
			cs := connect(b, newServer(b, ws, mcpserver.ApproveAuto), nil)
			ctx := context.Background()
			// read reads the file whole; with check it returns the file's
			// text, taken out of the numbered lines (which is not timed).
			read := func(check bool) (string, int) {
				var got strings.Builder
				calls := 0
				for offset := 1; ; {
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file",
						Arguments: map[string]any{"path": "f.txt", "offset": offset, "limit": 1 << 30}})
					if err != nil || res.IsError {
						b.Fatalf("read_file: %v %s", err, text(res))
					}
					calls++
					if check {
						lines, err := toolset.ReadText(text(res))
						if err != nil {
							b.Fatal(err)
						}
						got.WriteString(lines)
					}
					next, _ := res.Meta[mcpserver.MetaResult].(map[string]any)["next_offset"].(float64)
					if next == 0 {
						return got.String(), calls
					}
					offset = int(next)
				}
			}
			if got, calls := read(true); got != content {
				b.Fatalf("read %d bytes in %d calls, want the file's %d", len(got), calls, len(content))
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				read(false)
			}
		})
	}
}

// benchContent is what cmd/editguard-bench reads: size bytes of
// LF-terminated ASCII lines of about 90 bytes.
func benchContent(size int) string {
	var b bytes.Buffer
	b.Grow(size + 128)
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "%06d the quick brown fox jumps over the lazy dog; pack my box with five dozen jugs\n", i)
	}
	out := b.Bytes()[:size]
	out[size-1] = '\n'
	return string(out)
}
