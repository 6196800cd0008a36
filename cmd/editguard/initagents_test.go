package main

import (
	"strings"
	"testing"
)

// TestEditAgents: the section is added once, kept when current, and an
// earlier version of it is replaced in place, the rest of the file as it
// was.
func TestEditAgents(t *testing.T) {
	f := &initFile{}
	first, err := editAgents(f, "")
	if err != nil || !strings.HasPrefix(first, agentsBegin) || !strings.Contains(first, "mcp__editguard__read_file") {
		t.Fatalf("new AGENTS.md = %q, %v", first, err)
	}
	f = &initFile{}
	if again, _ := editAgents(f, first); again != first || len(f.Present) != 1 || len(f.Added) != 0 {
		t.Errorf("second run changed the file (%q) or did not say it was present (%+v)", again, f)
	}
	old := "intro\n" + agentsBegin + "\nan older section\n" + agentsEnd + "\nafter\n"
	f = &initFile{}
	got, _ := editAgents(f, old)
	if want := "intro\n" + first + "after\n"; got != want || len(f.Added) != 1 {
		t.Errorf("update = %q, want %q", got, want)
	}
}
