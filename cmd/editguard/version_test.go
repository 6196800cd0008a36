package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"runtime/debug"
	"testing"
)

func TestVersionOf(t *testing.T) {
	tests := []struct {
		main     string
		settings map[string]string
		want     string
	}{
		{"v1.2.3", map[string]string{"vcs.revision": "0123456789abcdef"}, "v1.2.3"},
		{"(devel)", nil, "devel"},
		{"", nil, "devel"},
		{"(devel)", map[string]string{"vcs.revision": "0123456789abcdef", "vcs.modified": "false"}, "devel+0123456789ab"},
		{"(devel)", map[string]string{"vcs.revision": "0123456789abcdef", "vcs.modified": "true"}, "devel+0123456789ab+dirty"},
	}
	for _, tt := range tests {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/editguard/editguard", Version: tt.main}}
		for k, v := range tt.settings {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: k, Value: v})
		}
		if got := versionOf(bi); got != tt.want {
			t.Errorf("versionOf(%q, %v) = %q, want %q", tt.main, tt.settings, got, tt.want)
		}
	}
}

// TestServeReportsVersion checks that the MCP server tells its clients the
// version "editguard version" prints.
func TestServeReportsVersion(t *testing.T) {
	old := readBuildInfo
	t.Cleanup(func() { readBuildInfo = old })
	readBuildInfo = func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Version: "v9.8.7"}}, true
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}` + "\n"
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), []string{"--root", t.TempDir(), "serve"}, inR, outW, &stderr)
		outW.Close()
	}()
	go io.WriteString(inW, init)
	line, err := bufio.NewReader(outR).ReadString('\n')
	inW.Close()
	go io.Copy(io.Discard, outR)
	if code := <-done; code != 0 || err != nil {
		t.Fatalf("serve exited %d (%v): %s", code, err, stderr.String())
	}
	var resp struct {
		Result struct {
			ServerInfo struct{ Name, Version string } `json:"serverInfo"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(line), &resp); err != nil {
		t.Fatalf("initialize response %q: %v", line, err)
	}
	if got, want := resp.Result.ServerInfo.Version, "v9.8.7"; got != want {
		t.Errorf("server version %q, want %q", got, want)
	}
}
