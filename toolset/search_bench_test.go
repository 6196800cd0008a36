package toolset_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/toolset"
)

// searchBenchTree is a large tree to search: EDITGUARD_SEARCH_TREE, or a
// copy of this repository and the Go module cache (the module cache cannot
// hold a workspace's state directory itself), removed when the benchmark
// ends.
func searchBenchTree(b *testing.B) string {
	if d := os.Getenv("EDITGUARD_SEARCH_TREE"); d != "" {
		return d
	}
	dir := b.TempDir()
	modcache, _ := exec.Command("go", "env", "GOMODCACHE").Output()
	for i, src := range []string{"..", strings.TrimSpace(string(modcache))} {
		if src == "" {
			continue
		}
		if out, err := exec.Command("cp", "-a", src, filepath.Join(dir, fmt.Sprint("tree", i))).CombinedOutput(); err != nil {
			b.Fatalf("copy %s: %v\n%s", src, err, out)
		}
	}
	// The module cache's files are read-only; b.TempDir must remove them.
	b.Cleanup(func() { exec.Command("chmod", "-R", "u+w", dir).Run() })
	return dir
}

// BenchmarkSearchText searches a large tree for a literal and a regular
// expression that match nowhere, so both searchers read every file,
// with editguard's search_text and with ripgrep (--hidden
// --no-require-git: both honour .gitignore outside a git repository and
// skip .git). The ratio of the two ns/op is the comparison; run with
// -benchtime=5x or more.
func BenchmarkSearchText(b *testing.B) {
	dir := searchBenchTree(b)
	ws, err := editguard.Open(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	ts := toolset.New(ws.NewSession("bench"), nil)
	rg, rgErr := exec.LookPath("rg")
	for _, c := range []struct{ name, pattern, rgArg string }{
		// Built at run time, so that not even this file matches.
		{"literal", "zqxj_never" + "_matches_here", "-F"},
		{"regex", `[A-Z]\w*Zq` + `xj\d+Never\b`, "-e"},
	} {
		b.Run(c.name+"/editguard", func(b *testing.B) {
			args, _ := json.Marshal(map[string]any{"pattern": c.pattern, "literal": c.rgArg == "-F"})
			for b.Loop() {
				out, err := ts.Execute(context.Background(), "search_text", args)
				if err != nil || !strings.HasPrefix(out.Text, "No matches") {
					b.Fatalf("search_text: %v %v", out, err)
				}
			}
		})
		b.Run(c.name+"/ripgrep", func(b *testing.B) {
			if rgErr != nil {
				b.Skip("rg is not installed (apt-get install ripgrep)")
			}
			for b.Loop() {
				cmd := exec.Command(rg, "--hidden", "--no-require-git", "-n", c.rgArg, c.pattern, dir)
				if out, err := cmd.Output(); len(out) != 0 || err == nil {
					b.Fatalf("rg found %q (%v)", out, err)
				}
			}
		})
	}
}
