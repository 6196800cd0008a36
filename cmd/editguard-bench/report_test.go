package main

import (
	"bytes"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var ds []time.Duration
		for _, n := range ns {
			ds = append(ds, time.Duration(n)*time.Millisecond)
		}
		return ds
	}
	tests := []struct {
		ds   []time.Duration
		p    float64
		want time.Duration
	}{
		{ms(3, 1, 2), 0.5, 2 * time.Millisecond},
		{ms(4, 1, 3, 2), 0.5, 2500 * time.Microsecond},
		{ms(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 0.9, 9 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11), 0.9, 10 * time.Millisecond},
		{ms(5), 0.9, 5 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := percentile(tt.ds, tt.p); got != tt.want {
			t.Errorf("percentile(%v, %v) = %v, want %v", tt.ds, tt.p, got, tt.want)
		}
	}
}

func TestBenchContent(t *testing.T) {
	for _, size := range []int{4 << 10, 1 << 20} {
		b := benchContent(size)
		if len(b) != size {
			t.Errorf("len(benchContent(%d)) = %d, want %d", size, len(b), size)
		}
		if n := bytes.Count(b, []byte(markerA)); n != 1 {
			t.Errorf("benchContent(%d) holds %s %d times, want once", size, markerA, n)
		}
		if bytes.Contains(b, []byte(markerB)) {
			t.Errorf("benchContent(%d) holds %s", size, markerB)
		}
		if b[len(b)-1] != '\n' {
			t.Errorf("benchContent(%d) does not end in a newline", size)
		}
	}
}

// reportServers returns editguard, server-filesystem and, if goPeer, the
// Go peer, as the table names them.
func reportServers(goPeer bool) []*server {
	s := []*server{
		{name: "editguard", readTool: "read_file", editTool: "edit_file"},
		{name: "server-filesystem", readTool: "read_text_file", editTool: "edit_file"},
	}
	if goPeer {
		s = append(s, &server{name: "mcp-filesystem-server", readTool: "read_file", editTool: "modify_file"})
	}
	return s
}

func TestWriteTable(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var ds []time.Duration
		for _, n := range ns {
			ds = append(ds, time.Duration(n)*time.Millisecond)
		}
		return ds
	}
	cells := []cell{{op: "ping"}, {op: "read", file: "bench-4096.txt", size: 4096}, {op: "edit", file: "bench-1048576.txt", size: 1 << 20}}
	tests := []struct {
		name    string
		goPeer  bool
		results [][][]time.Duration
		want    string
	}{
		{
			name: "two servers",
			results: [][][]time.Duration{
				{ms(1, 1, 1), ms(2, 2, 2)},
				{ms(1, 2, 3), ms(3, 6, 9)},
				{ms(4, 4, 8), ms(2, 2, 2)},
			},
			want: `| operation | file | editguard median | server-filesystem median | ratio (median) | editguard p90 | server-filesystem p90 | ratio (p90) |
|---|---|---:|---:|---:|---:|---:|---:|
| ping (protocol round trip, for reference) | - | 1.000 ms | 2.000 ms | 2.00x | 1.000 ms | 2.000 ms | 2.00x |
| read (read_file / read_text_file) | 4 KiB | 2.000 ms | 6.000 ms | 3.00x | 3.000 ms | 9.000 ms | 3.00x |
| edit (edit_file / edit_file) | 1 MiB | 4.000 ms | 2.000 ms | 0.50x | 8.000 ms | 2.000 ms | 0.25x |
`,
		},
		{
			name:   "with the Go peer",
			goPeer: true,
			results: [][][]time.Duration{
				{ms(1, 1, 1), ms(2, 2, 2), ms(1, 1, 1)},
				{ms(1, 2, 3), ms(3, 6, 9), ms(1, 1, 6)},
				{ms(4, 4, 8), ms(2, 2, 2), ms(2, 2, 4)},
			},
			want: `| operation | file | editguard median | server-filesystem median | mcp-filesystem-server median | ratio server-filesystem (median) | ratio mcp-filesystem-server (median) | editguard p90 | server-filesystem p90 | mcp-filesystem-server p90 | ratio server-filesystem (p90) | ratio mcp-filesystem-server (p90) |
|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
| ping (protocol round trip, for reference) | - | 1.000 ms | 2.000 ms | 1.000 ms | 2.00x | 1.00x | 1.000 ms | 2.000 ms | 1.000 ms | 2.00x | 1.00x |
| read (read_file / read_text_file / read_file) | 4 KiB | 2.000 ms | 6.000 ms | 1.000 ms | 3.00x | 0.50x | 3.000 ms | 9.000 ms | 6.000 ms | 3.00x | 2.00x |
| edit (edit_file / edit_file / modify_file) | 1 MiB | 4.000 ms | 2.000 ms | 2.000 ms | 0.50x | 0.50x | 8.000 ms | 2.000 ms | 4.000 ms | 0.25x | 0.50x |
`,
		},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		if err := writeTable(&b, &config{}, reportServers(tt.goPeer), cells, tt.results); err != nil {
			t.Fatal(err)
		}
		if got := b.String(); got != tt.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tt.name, got, tt.want)
		}
	}
}
