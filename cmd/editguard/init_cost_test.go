package main

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestStartupAllocatesLittle holds editguard's own packages to cheap
// initialisation: the hooks start a process per tool call of the agent, so
// work done at package init (compiling regular expressions, building
// tables) is paid on every call. It counts allocations, which do not
// depend on the machine's speed.
func TestStartupAllocatesLittle(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	built, err := builtPrograms()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(built[0], "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("editguard version: %v\n%s", err, out)
	}
	// init PACKAGE @T ms, C ms clock, B bytes, A allocs
	line := regexp.MustCompile(`^init (\S+) @\S+ ms, \S+ ms clock, (\d+) bytes, (\d+) allocs$`)
	const maxBytes = 8 << 10
	seen := 0
	for _, l := range strings.Split(string(out), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil || !strings.HasPrefix(m[1], "github.com/editguard/editguard") {
			continue
		}
		seen++
		if n, _ := strconv.Atoi(m[2]); n > maxBytes {
			t.Errorf("init of %s allocates %s bytes (%s allocations), want at most %d: defer the work to first use", m[1], m[2], m[3], maxBytes)
		}
	}
	if seen == 0 {
		t.Fatalf("no init trace of editguard's packages in:\n%s", out)
	}
}
