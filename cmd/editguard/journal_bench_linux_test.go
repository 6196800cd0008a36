package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/hookwire"
)

// BenchmarkShellJournal measures what a shell command costs under
// editguard with the change journal and without it, in one run, cell by
// cell in turn (hello, then each program), on a git working copy of
// $EDITGUARD_BENCH_FILES files (default 2000; a comma list runs each):
//
//   - hello: the start of a Go program that prints one line;
//   - bash-watch, bash-scan: a Claude Code Bash tool's PreToolUse and
//     PostToolUse events, each through editguard-hook and the root's hook
//     server, with 3 files changed between them: the pair's wall time. The
//     watch tree's server keeps a change journal; the scan tree's (a copy)
//     runs with EDITGUARD_NO_WATCH=1, as every version before the journal;
//   - exec-watch, exec-scan: "editguard exec -- true", with the server's
//     journal (the server takes exec's checkpoints) and with
//     EDITGUARD_NO_WATCH=1;
//   - exec-none: the same on a third copy, where no hook server runs
//     (exec takes its checkpoints, with a journal of its own);
//   - sed-watch, sed-none: "editguard exec -- sed -i 1s/$/x/ FILE" (one
//     file changed) on the watch tree and on the third copy;
//   - git-status: "git status --porcelain".
//
// EDITGUARD_BENCH_SCAN=0 leaves the scan tree's cells out;
// EDITGUARD_ISOLATE=off in the environment runs every exec in the tree.
//
// It reports the median of each, in milliseconds, and the hook servers'
// resident size at the end and at its peak (MiB).
//
// With EDITGUARD_BENCH_BASELINE set to a directory holding the editguard
// and editguard-hook programs of another build, the scan cells give way
// to that build's: a copy of the tree whose server (that build's, with
// its journal) runs the same pair and exec, cell by cell in turn with
// this build's ("baseline" in the metrics' names); and exec-none and
// sed-none run that build's exec too, on a copy of the third tree of its
// own (exec-none-baseline, sed-none-baseline).
//
//	EDITGUARD_BENCH_FILES=2000,20000,100000 go test -run '^$' -bench BenchmarkShellJournal -benchtime 15x -timeout 2h ./cmd/editguard
func BenchmarkShellJournal(b *testing.B) {
	sizes := []int{2000}
	if s := os.Getenv("EDITGUARD_BENCH_FILES"); s != "" {
		sizes = nil
		for f := range strings.SplitSeq(s, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				b.Fatal(err)
			}
			sizes = append(sizes, n)
		}
	}
	egBin, hookBin := hookPrograms(b)
	dir := b.TempDir()
	hello := filepath.Join(dir, "hello")
	os.WriteFile(hello+".go", []byte("package main\n\nimport \"os\"\n\nfunc main() { os.Stdout.WriteString(\"hello\\n\") }\n"), 0o644)
	if out, err := exec.Command("go", "build", "-o", hello, hello+".go").CombinedOutput(); err != nil {
		b.Fatalf("go build hello: %v\n%s", err, out)
	}
	run, err := os.MkdirTemp("", "egjb")
	if err != nil {
		b.Fatal(err)
	}
	b.Setenv("XDG_RUNTIME_DIR", run)
	defer func() {
		locks, _ := filepath.Glob(filepath.Join(run, "editguard", "*.lock"))
		for _, l := range locks {
			if pid := serverPID(l); pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		os.RemoveAll(run)
	}()
	progs := map[string][2]string{"watch": {egBin, hookBin}, "scan": {egBin, hookBin}}
	other := "scan"
	if dir := os.Getenv("EDITGUARD_BENCH_BASELINE"); dir != "" {
		other = "baseline"
		progs[other] = [2]string{filepath.Join(dir, "editguard"), filepath.Join(dir, "editguard-hook")}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			benchShellJournal(b, n, progs, other, hello)
		})
	}
}

// benchShellJournal runs the cells on a tree of n files ("watch") and a
// copy of it (other: "scan" or "baseline"), each key's with its programs
// (editguard, editguard-hook).
func benchShellJournal(b *testing.B, n int, progs map[string][2]string, other, hello string) {
	base := b.TempDir()
	keys := []string{"watch", other}
	if other == "scan" && os.Getenv("EDITGUARD_BENCH_SCAN") == "0" {
		keys = keys[:1]
	}
	trees := map[string]string{"watch": filepath.Join(base, "watch"), other: filepath.Join(base, other), "none": filepath.Join(base, "none")}
	// The trees no server runs for, by the build whose exec runs there.
	nones := map[string]string{"none": progs["watch"][0]}
	if other == "baseline" {
		trees["none-baseline"] = filepath.Join(base, "none-baseline")
		nones["none-baseline"] = progs[other][0]
	}
	var files []string
	for i := range n {
		files = append(files, fmt.Sprintf("d%03d/s%02d/f%06d.go", i/1000, i/50%20, i))
	}
	root := trees["watch"]
	for i, f := range files {
		p := filepath.Join(root, f)
		if i%50 == 0 {
			os.MkdirAll(filepath.Dir(p), 0o755)
		}
		if err := os.WriteFile(p, fmt.Appendf(nil, "package p\n\n// file %d\n%s", i, strings.Repeat("// some text of the file\n", 40)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"config", "gc.auto", "0"}, {"add", "-A"}, {"-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "tree"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	for _, k := range append([]string{other}, slices.Sorted(maps.Keys(nones))...) {
		if out, err := exec.Command("cp", "-a", root, trees[k]).CombinedOutput(); err != nil {
			b.Fatalf("cp: %v\n%s", err, out)
		}
	}
	envOf := map[string][]string{"watch": os.Environ(), "scan": append(os.Environ(), editguard.NoWatchEnv+"=1"), "baseline": os.Environ(), "none": os.Environ(), "none-baseline": os.Environ()}
	start := func(args []string, stdin []byte, env []string, dir string) time.Duration {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Stdin, cmd.Env, cmd.Dir = bytes.NewReader(stdin), env, dir
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		t0 := time.Now()
		err := cmd.Run()
		d := time.Since(t0)
		if err != nil {
			b.Fatalf("%v: %v\n%s", args, err, out.Bytes())
		}
		return d
	}
	id := 0
	event := func(root, name string) []byte {
		ev, _ := json.Marshal(map[string]any{"session_id": "bench", "cwd": root, "hook_event_name": name, "tool_name": "Bash",
			"tool_use_id": fmt.Sprintf("toolu_%d", id), "tool_input": map[string]any{"command": "sed -i s/some/any/ three files"}})
		return ev
	}
	round := 0
	pair := func(key string) time.Duration {
		root := trees[key]
		pre := start([]string{progs[key][1], "--root", root}, event(root, "PreToolUse"), envOf[key], root)
		for k := range 3 {
			f := files[(round*3+k*7919)%len(files)]
			if err := os.WriteFile(filepath.Join(root, f), fmt.Appendf(nil, "package p\n// round %d\n", round), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		post := start([]string{progs[key][1], "--root", root}, event(root, "PostToolUse"), envOf[key], root)
		return pre + post
	}
	// The first events start each tree's server (with its environment)
	// and take the first checkpoints; wait for the journal of the one.
	for range 2 {
		for _, k := range keys {
			id++
			pair(k)
		}
		round++
	}
	for _, k := range keys {
		if k == "scan" {
			continue
		}
		for deadline := time.Now().Add(5 * time.Minute); hookServerJournal(trees[k]) == nil; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatal("the hook server's journal does not answer")
			}
		}
	}
	egBin := progs["watch"][0]
	sedWith := func(bin string) []string {
		return []string{bin, "exec", "--", "sed", "-i", "1s/$/x/", files[len(files)/2]}
	}
	sed := sedWith(egBin)
	for _, k := range keys { // warm
		id++
		pair(k)
		start([]string{progs[k][0], "exec", "--", "true"}, nil, envOf[k], trees[k])
	}
	// No server ever runs for the third tree (hook events start one):
	// exec's first checkpoint there reads every file once.
	noneKeys := slices.Sorted(maps.Keys(nones))
	for _, k := range noneKeys {
		start([]string{nones[k], "exec", "--", "true"}, nil, envOf[k], trees[k])
		start(sedWith(nones[k]), nil, envOf[k], trees[k])
	}
	start(sed, nil, envOf["watch"], trees["watch"])
	times := map[string][]time.Duration{}
	for b.Loop() {
		times["hello"] = append(times["hello"], start([]string{hello}, nil, nil, ""))
		id++
		round++
		for _, k := range keys {
			times["bash-"+k] = append(times["bash-"+k], pair(k))
		}
		times["git-status"] = append(times["git-status"], start([]string{"git", "status", "--porcelain"}, nil, os.Environ(), trees["watch"]))
		if other == "baseline" { // its index rewritten as the other's
			start([]string{"git", "status", "--porcelain"}, nil, os.Environ(), trees[other])
		}
		for _, k := range keys {
			times["exec-"+k] = append(times["exec-"+k], start([]string{progs[k][0], "exec", "--", "true"}, nil, envOf[k], trees[k]))
		}
		for _, k := range noneKeys {
			times["exec-"+k] = append(times["exec-"+k], start([]string{nones[k], "exec", "--", "true"}, nil, envOf[k], trees[k]))
		}
		times["sed-watch"] = append(times["sed-watch"], start(sed, nil, envOf["watch"], trees["watch"]))
		for _, k := range noneKeys {
			times["sed-"+k] = append(times["sed-"+k], start(sedWith(nones[k]), nil, envOf[k], trees[k]))
		}
		slices.Reverse(keys) // the other goes first next round
		slices.Reverse(noneKeys)
	}
	for _, k := range slices.Sorted(maps.Keys(times)) {
		ds := times[k]
		slices.Sort(ds)
		b.ReportMetric(float64(ds[len(ds)/2])/float64(time.Millisecond), k+"-ms")
	}
	for _, k := range keys {
		rss, hwm := serverMemory(b, trees[k])
		b.ReportMetric(rss, "server-"+k+"-rss-MiB")
		b.ReportMetric(hwm, "server-"+k+"-peak-MiB")
	}
}

// serverMemory returns the resident size of root's hook server, now and
// at its peak, in MiB.
func serverMemory(b *testing.B, root string) (rss, hwm float64) {
	sock, _, _, err := hookwire.Socket(root)
	if err != nil {
		b.Fatal(err)
	}
	pid := serverPID(sock + ".lock")
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Fatal(err)
	}
	for l := range strings.Lines(string(data)) {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		kib, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			rss = kib / 1024
		case "VmHWM:":
			hwm = kib / 1024
		}
	}
	return rss, hwm
}

// BenchmarkHookServedBash measures what a hook server does for a Claude
// Code Bash tool that changes 3 files, in process (no process start): the
// event before it and the event after it, with the workspace's change
// journal (watch) and without (scan), in turn, on a git working copy of
// $EDITGUARD_BENCH_FILES files (default 2000). Reported as the medians of
// pre-ms and post-ms.
//
//	go test -run '^$' -bench BenchmarkHookServedBash -benchtime 30x ./cmd/editguard
func BenchmarkHookServedBash(b *testing.B) {
	n := 2000
	if s := os.Getenv("EDITGUARD_BENCH_FILES"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	base := b.TempDir()
	root := filepath.Join(base, "watch")
	files := benchGitTree(b, root, n)
	if out, err := exec.Command("cp", "-a", root, filepath.Join(base, "scan")).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v\n%s", err, out)
	}
	wss := map[string]*editguard.Workspace{}
	for _, k := range []string{"watch", "scan"} {
		w, err := editguard.Open(filepath.Join(base, k), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer w.Close()
		wss[k] = w
	}
	if _, err := wss["watch"].Watch(); err != nil {
		b.Fatal(err)
	}
	id, round := 0, 0
	call := func(k, name string) time.Duration {
		root := filepath.Join(base, k)
		ev, _ := json.Marshal(map[string]any{"session_id": "bench", "cwd": root, "hook_event_name": name, "tool_name": "Bash",
			"tool_use_id": fmt.Sprintf("toolu_%d", id), "tool_input": map[string]any{"command": "sed -i s/some/any/ three files"}})
		var out, errb bytes.Buffer
		var later []func()
		e := &env{root: root, sessionName: defaultSession, stdin: bytes.NewReader(ev), stdout: &out, stderr: &errb, ws: wss[k], answered: &later}
		t0 := time.Now()
		if code := report(e, runHook(b.Context(), e, []string{"--client", "claude-code"})); code != 0 {
			b.Fatal(code, errb.String(), out.String())
		}
		d := time.Since(t0)
		for _, f := range later {
			f()
		}
		return d
	}
	times := map[string][]time.Duration{}
	// EDITGUARD_BENCH_GIT_STATUS=1 runs git status in the tree before
	// each pair, as an agent does between commands: it rewrites git's
	// index, whose change the next checkpoint follows.
	gitStatus := os.Getenv("EDITGUARD_BENCH_GIT_STATUS") == "1"
	cell := func(k string, record bool) {
		if gitStatus {
			cmd := exec.Command("git", "status", "--porcelain")
			cmd.Dir = filepath.Join(base, k)
			cmd.Run()
		}
		pre := call(k, "PreToolUse")
		for j := range 3 {
			f := files[(round*3+j*7919)%len(files)]
			os.WriteFile(filepath.Join(base, k, f), fmt.Appendf(nil, "package p\n// round %d\n", round), 0o644)
		}
		post := call(k, "PostToolUse")
		if record {
			times[k+"-pre"] = append(times[k+"-pre"], pre)
			times[k+"-post"] = append(times[k+"-post"], post)
		}
	}
	for range 2 {
		id++
		round++
		cell("watch", false)
		cell("scan", false)
	}
	// EDITGUARD_BENCH_SCAN=0 leaves the scan cells out (to profile the
	// other).
	scan := os.Getenv("EDITGUARD_BENCH_SCAN") != "0"
	for b.Loop() {
		id++
		round++
		cell("watch", true)
		if scan {
			cell("scan", true)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(times)) {
		ds := times[k]
		slices.Sort(ds)
		b.ReportMetric(float64(ds[len(ds)/2])/float64(time.Millisecond), k+"-ms")
	}
}

// BenchmarkHookServerHeap measures what a hook server holds: one watched
// workspace (a git working copy of $EDITGUARD_BENCH_FILES files, default
// 2000, as BenchmarkHookServedBash makes it) serves a Claude Code Bash
// tool's two events per iteration, in process, with 3 files changed
// between them and, with EDITGUARD_BENCH_GIT_STATUS=1, git status run
// before each pair. At the end it collects garbage twice and reports the
// live heap (heap-live-MiB) and the heap's pages held (heap-sys-MiB), and
// writes a heap profile to $EDITGUARD_BENCH_HEAP_PROFILE if set:
//
//	EDITGUARD_BENCH_FILES=100000 EDITGUARD_BENCH_HEAP_PROFILE=heap.pb.gz GOGC=50 go test -run '^$' -bench BenchmarkHookServerHeap -benchtime 6x ./cmd/editguard
//	go tool pprof -sample_index=inuse_space -top heap.pb.gz
func BenchmarkHookServerHeap(b *testing.B) {
	n := 2000
	if s := os.Getenv("EDITGUARD_BENCH_FILES"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	gitStatus := os.Getenv("EDITGUARD_BENCH_GIT_STATUS") == "1"
	root := filepath.Join(b.TempDir(), "watch")
	files := benchGitTree(b, root, n)
	w, err := editguard.Open(root, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Watch(); err != nil {
		b.Fatal(err)
	}
	id := 0
	call := func(name string) {
		ev, _ := json.Marshal(map[string]any{"session_id": "bench", "cwd": root, "hook_event_name": name, "tool_name": "Bash",
			"tool_use_id": fmt.Sprintf("toolu_%d", id), "tool_input": map[string]any{"command": "sed -i s/some/any/ three files"}})
		var out, errb bytes.Buffer
		var later []func()
		e := &env{root: root, sessionName: defaultSession, stdin: bytes.NewReader(ev), stdout: &out, stderr: &errb, ws: w, answered: &later}
		if code := report(e, runHook(b.Context(), e, []string{"--client", "claude-code"})); code != 0 {
			b.Fatal(code, errb.String(), out.String())
		}
		for _, f := range later {
			f()
		}
	}
	round := 0
	for b.Loop() {
		id++
		if gitStatus {
			cmd := exec.Command("git", "status", "--porcelain")
			cmd.Dir = root
			cmd.Run()
		}
		call("PreToolUse")
		for j := range 3 {
			f := files[(round*3+j*7919)%len(files)]
			os.WriteFile(filepath.Join(root, f), fmt.Appendf(nil, "package p\n// round %d\n", round), 0o644)
		}
		call("PostToolUse")
		round++
	}
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-live-MiB")
	b.ReportMetric(float64(ms.HeapSys)/(1<<20), "heap-sys-MiB")
	if out := os.Getenv("EDITGUARD_BENCH_HEAP_PROFILE"); out != "" {
		f, err := os.Create(out)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.WriteHeapProfile(f); err != nil {
			b.Fatal(err)
		}
	}
}

// benchGitTree makes a git working copy of n small Go files at root, all
// committed, and returns their names.
func benchGitTree(b *testing.B, root string, n int) []string {
	var files []string
	for i := range n {
		files = append(files, fmt.Sprintf("d%03d/s%02d/f%06d.go", i/1000, i/50%20, i))
	}
	for i, f := range files {
		p := filepath.Join(root, f)
		if i%50 == 0 {
			os.MkdirAll(filepath.Dir(p), 0o755)
		}
		os.WriteFile(p, fmt.Appendf(nil, "package p\n\n// file %d\n%s", i, strings.Repeat("// some text of the file\n", 40)), 0o644)
	}
	for _, args := range [][]string{{"init", "-q"}, {"config", "gc.auto", "0"}, {"add", "-A"}, {"-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "tree"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return files
}
