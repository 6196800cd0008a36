package mcpserver_test

import (
	"context"
	"testing"

	"github.com/editguard/editguard/internal/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkEditFile edits a 4 KiB file through edit_file, as
// cmd/editguard-bench does but in process, each edit after a read_file
// (the read is timed too): a client and the server over in-memory
// transports. With TMPDIR on a tmpfs no fsync waits for a disk, and what is
// left is the CPU of both ends and the system calls:
//
//	TMPDIR=/dev/shm go test -run '^$' -bench BenchmarkEditFile -cpuprofile /tmp/edit.prof ./internal/mcpserver
func BenchmarkEditFile(b *testing.B) {
	content := "MARKER_AAAA\n" + benchContent(4 << 10)[12:]
	ws := newWorkspace(b, nil, map[string]string{"f.txt": content})
	cs := connect(b, newServer(b, ws, mcpserver.ApproveAuto), nil)
	ctx := context.Background()
	call := func(name string, args map[string]any) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %s", name, err, text(res))
		}
	}
	from, to := "MARKER_AAAA", "MARKER_BBBB"
	b.ReportAllocs()
	for b.Loop() {
		call("read_file", map[string]any{"path": "f.txt"})
		call("edit_file", map[string]any{"path": "f.txt", "old_string": from, "new_string": to})
		from, to = to, from
	}
}
