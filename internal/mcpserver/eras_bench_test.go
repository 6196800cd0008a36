package mcpserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/editguard/editguard/internal/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkErasEditRead compares the two protocol eras on one HTTP
// endpoint (with tokens): each iteration reads a 4 KiB file with read_file
// and changes it with edit_file, once as a 2025-11-25 client (a session)
// and once as a 2026-07-28 client (stateless), alternating which goes
// first. It reports the time of each era's read and edit, and the ratios
// of 2026-07-28 to 2025-11-25:
//
//	TMPDIR=/dev/shm go test -run '^$' -bench BenchmarkErasEditRead -benchtime 2000x ./internal/mcpserver
func BenchmarkErasEditRead(b *testing.B) {
	content := "MARKER_AAAA\n" + benchContent(4 << 10)[12:]
	files := map[string]string{}
	for _, v := range eras {
		files[v+".txt"] = content
	}
	e := newEraServer(b, mcpserver.ApproveAuto, nil, files)
	ctx := context.Background()
	type era struct {
		cs       *mcp.ClientSession
		file     string
		from, to string
		read     time.Duration
		edit     time.Duration
	}
	var all []*era
	for _, v := range eras {
		all = append(all, &era{cs: e.client(b, "alice", v, nil, nil), file: v + ".txt", from: "MARKER_AAAA", to: "MARKER_BBBB"})
	}
	call := func(cs *mcp.ClientSession, name string, args map[string]any) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %s", name, err, text(res))
		}
	}
	round := func(r *era) {
		start := time.Now()
		call(r.cs, "read_file", map[string]any{"path": r.file})
		read := time.Now()
		call(r.cs, "edit_file", map[string]any{"path": r.file, "old_string": r.from, "new_string": r.to})
		r.read += read.Sub(start)
		r.edit += time.Since(read)
		r.from, r.to = r.to, r.from
	}
	for _, r := range all { // warm up: connections, first reads
		round(r)
		r.read, r.edit = 0, 0
	}
	n := 0
	for b.Loop() {
		first := n % 2
		round(all[first])
		round(all[1-first])
		n++
	}
	legacy, modern := all[0], all[1]
	b.ReportMetric(float64(legacy.read.Nanoseconds())/float64(n), "ns/read-2025")
	b.ReportMetric(float64(modern.read.Nanoseconds())/float64(n), "ns/read-2026")
	b.ReportMetric(float64(legacy.edit.Nanoseconds())/float64(n), "ns/edit-2025")
	b.ReportMetric(float64(modern.edit.Nanoseconds())/float64(n), "ns/edit-2026")
	b.ReportMetric(float64(modern.read)/float64(legacy.read), "read-2026/2025")
	b.ReportMetric(float64(modern.edit)/float64(legacy.edit), "edit-2026/2025")
}
