package main

import (
	"testing"
	"time"

	"github.com/editguard/editguard/internal/soak"
)

// TestLoad is the short variant of "editguard-soak -mode load": 32 MCP
// sessions over HTTP on 8 shared files. Any error other than a refusal
// the loop expects, and any transport error, is a violation.
func TestLoad(t *testing.T) {
	rep := runSoak(t, soak.Config{
		Mode: soak.ModeLoad, Duration: 10 * time.Second,
		MCPSessions: 32, Files: 8,
	})
	// Sessions that append to the same files conflict: each conflict is
	// merged (the text an edit replaces is untouched by the other
	// append) or, where it is not, refused.
	if rep.Committed["mcp"] == 0 || rep.Refused["STALE_FILE"]+rep.Merged == 0 {
		t.Errorf("commits %v, refusals %v, merged %d: want both commits and conflicts", rep.Committed, rep.Refused, rep.Merged)
	}
	for _, op := range []string{"mcp read", "mcp edit"} {
		found := false
		for _, l := range rep.Latency {
			found = found || (l.Op == op && l.N > 0)
		}
		if !found {
			t.Errorf("no latency for %s in %+v", op, rep.Latency)
		}
	}
}
