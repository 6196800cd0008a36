package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/soak"
	"golang.org/x/sys/unix"
)

// checkpointBench (-checkpoint) measures the checkpoints a shell command
// runs between (Session.BeginCommand and Command.End) on generated trees of
// N files, against what a user would compare them with, in the same run:
//
//   - In a git repository of N committed files (a clean working copy), the
//     pair BeginCommand + End around a command that changes 3 files (they
//     are changed from Go between the two calls, untimed), against
//     `git status --porcelain` run as a process on the same tree; the same
//     pair when another program has left 128 MiB written and not synced on
//     the file system (End's syncfs writes it back); and the first
//     checkpoint of a fresh workspace (no stat cache, empty store).
//   - The store: the bytes under .editguard/checkpoints/objects after the
//     first checkpoint of the clean working copy, as a fraction of the
//     covered files' bytes.
//   - In a tree of the same N files without git: the first checkpoint of a
//     fresh workspace against a plain copy of the tree (`cp -r` as a
//     process, a copy in Go by read and write, and the same into one
//     directory, as the store lays out its objects), and a later checkpoint
//     (BeginCommand, and End, with nothing changed) against a stat walk
//     (filepath.WalkDir and an Lstat of each file).
//   - Per N, in child processes of this program (checkpointChildEnv): the
//     device flushes (Linux sysfs, the whole machine's) and fsync-family
//     system calls (strace, where installed) per pair and per first
//     checkpoint, and the peak resident memory of a process that runs them
//     (VmHWM, which the child reads itself), next to git status's (by
//     /usr/bin/time).
//
// Each section runs its cells in rounds, every cell once per round in an
// order that rotates, after one untimed warm-up round, so that drift in
// the machine's speed affects them alike; before each cell the benchmark
// collects garbage and syncs the machine's disks (untimed), so that no cell
// writes back what another left dirty. Ratios are of medians in the same
// run.
//
// The tree: N regular files that Walk covers (a root .gitignore, one per
// top-level directory, and text files of 16 to a directory, three levels
// deep, log-normal sizes with a median of 3 KiB), plus N/200 files under
// build/, which the root .gitignore excludes.
//
// With EDITGUARD_BENCH_CPUPROFILE=FILE, the largest N is also profiled,
// untimed, after its rounds: 10 pairs in the git repository to FILE, one
// first checkpoint of a fresh workspace there to FILE.first, and 10 later
// checkpoints with nothing changed in the tree without git to FILE.later.
// Read them with `go tool pprof -top`.
func checkpointBench(ctx context.Context, cc *checkpointConfig, stdout, stderr io.Writer) error {
	if spec := os.Getenv(checkpointChildEnv); spec != "" {
		return checkpointChild(spec, stdout)
	}
	if cc.rounds < 1 || len(cc.files) == 0 {
		return errors.New("-checkpoint needs -rounds of at least 1 and -files")
	}
	parent := cc.dir
	if parent == "" {
		d, err := os.MkdirTemp("", "editguard-checkpoint-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		parent = d
	}
	loadBefore := loadAverage()
	disk, err := diskProbe(parent)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Machine: %s; 1-minute load average %s before\n", checkpointMachine(parent), loadBefore)
	fmt.Fprintf(stdout, "Disk: %s\n", disk)
	fmt.Fprintf(stdout, "%d timed rounds per section after 1 warm-up round; every cell once per round, the order rotating.\n", cc.rounds)
	largest := slices.Max(cc.files)
	var sums []cpSummary
	for _, n := range cc.files {
		sum, err := checkpointN(ctx, cc, parent, n, n == largest, stdout, stderr)
		if err != nil {
			return fmt.Errorf("%d files: %w", n, err)
		}
		sums = append(sums, sum)
	}
	writeCheckpointSummary(stdout, sums)
	fmt.Fprintf(stdout, "\n1-minute load average %s after\n", loadAverage())
	return nil
}

// checkpointConfig is what -checkpoint reads from the command line.
type checkpointConfig struct {
	dir    string // parent of the trees; empty: a new temporary directory
	files  []int  // tree sizes in files
	rounds int    // timed rounds per section
}

// parseCheckpointFiles parses -files.
func parseCheckpointFiles(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 100 {
			return nil, fmt.Errorf("bad tree size %q in -files (want a number of files, at least 100)", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// cpSummary is one N's line of the closing table.
type cpSummary struct {
	n                                int
	treeBytes                        int64
	pair, status, firstGit           time.Duration
	storeBytes                       int64
	first, cpCopy, goCopy, flatCopy  time.Duration
	pairDirty                        time.Duration
	laterBegin, laterEnd, statWalk   time.Duration
	flushesPair, fsyncsPair          float64
	rssPair, rssFirst, rssOpen, rssG int64 // KiB
}

// checkpointN builds the two trees of n files and runs both sections and
// the child processes on them.
func checkpointN(ctx context.Context, cc *checkpointConfig, parent string, n int, profile bool, stdout, stderr io.Writer) (cpSummary, error) {
	sum := cpSummary{n: n}
	dir, err := os.MkdirTemp(parent, fmt.Sprintf("n%d-", n))
	if err != nil {
		return sum, err
	}
	defer os.RemoveAll(dir)
	fmt.Fprintf(stderr, "checkpoint: %d files: making the trees\n", n)
	gt, err := makeCheckpointTree(filepath.Join(dir, "git"), n)
	if err != nil {
		return sum, err
	}
	if err := gitCommitTree(gt.root); err != nil {
		return sum, err
	}
	pt, err := makeCheckpointTree(filepath.Join(dir, "plain"), n)
	if err != nil {
		return sum, err
	}
	sum.treeBytes = gt.bytes
	// A file whose mtime or ctime is within 2 s of the scan that cached it
	// is read again by the next one (racyWindow in command.go); a user's
	// tree is older than that.
	time.Sleep(2500 * time.Millisecond)

	fmt.Fprintf(stdout, "\n### %s files\n\n", commas(int64(n)))
	fmt.Fprintf(stdout, "Tree: %s covered files, %s bytes (mean %s bytes), and %d ignored files under build/.\n",
		commas(int64(len(gt.covered))), commas(gt.bytes), commas(gt.bytes/int64(len(gt.covered))), gt.ignored)

	if err := gitSection(ctx, cc, gt, &sum, profile, stdout, stderr); err != nil {
		return sum, err
	}
	if err := plainSection(ctx, cc, pt, &sum, profile, stdout, stderr); err != nil {
		return sum, err
	}
	return sum, childSection(gt, &sum, stdout, stderr)
}

// dirtyBytes is how much another program has written, unsynced, before
// the pair of the cell "pair, dirty".
const dirtyBytes = 128 << 20

// cpTree is a generated tree.
type cpTree struct {
	root    string
	top     []string // the entries the tree made in root, for cp -r
	covered []string // the files Walk covers, slash paths
	content []string // the covered files that are not .gitignore files
	bytes   int64    // the covered files' bytes
	ignored int      // files under build/
}

var cpWords = strings.Fields(`alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega
	config handler request response buffer reader writer client server session record ledger
	history index object commit branch remote status update delete create append parse format
	encode decode render layout widget button window cursor matrix vector tensor model train`)

var cpExts = []string{".go", ".go", ".go", ".go", ".ts", ".ts", ".md", ".json", ".txt", ".yaml"}

// makeCheckpointTree writes a tree of n covered files (see checkpointBench)
// under root. The contents are deterministic in n and differ from file
// to file.
func makeCheckpointTree(root string, n int) (*cpTree, error) {
	// n = content + the root .gitignore + one per top-level directory of
	// 40 leaf directories of 16 files.
	tops := 1
	for range 4 {
		content := n - 1 - tops
		tops = max(1, ((content+15)/16+39)/40)
	}
	content := n - 1 - tops
	t := &cpTree{root: root}
	rng := rand.New(rand.NewPCG(uint64(n), 1))
	write := func(rel string, data []byte, covered bool) error {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
		if covered {
			t.covered = append(t.covered, rel)
			t.bytes += int64(len(data))
		}
		return nil
	}
	rootIgnore := "# build output and editor files\n/build/\n/dist/\n*.o\n*.tmp\n*.log\nnode_modules/\ncoverage/\n.DS_Store\n"
	if err := write(".gitignore", []byte(rootIgnore), true); err != nil {
		return nil, err
	}
	t.top = append(t.top, ".gitignore", "build")
	for i := range tops {
		top := fmt.Sprintf("m%02d", i)
		t.top = append(t.top, top)
		if err := write(top+"/.gitignore", []byte("*.generated.go\n/out/\n*.swp\n"), true); err != nil {
			return nil, err
		}
	}
	for k := range content {
		j := k / 16
		rel := fmt.Sprintf("m%02d/p%d/l%d/file_%02d%s", j/40, (j%40)/8, j%8, k%16, cpExts[rng.IntN(len(cpExts))])
		if err := write(rel, cpText(rng, rel), true); err != nil {
			return nil, err
		}
		t.content = append(t.content, rel)
	}
	t.ignored = max(1, n/200)
	for k := range t.ignored {
		rel := fmt.Sprintf("build/obj%05d.o", k)
		if err := write(rel, cpText(rng, rel), false); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// cpText is a file of text lines of a log-normal size (median 3 KiB),
// starting with its path.
func cpText(rng *rand.Rand, rel string) []byte {
	size := int(math.Exp(math.Log(3072) + rng.NormFloat64()))
	size = min(max(size, 96), 256<<10)
	b := make([]byte, 0, size+160)
	b = append(b, "// "+rel+"\n"...)
	word := func() { b = append(b, cpWords[rng.IntN(len(cpWords))]...) }
	for len(b) < size {
		switch rng.IntN(5) {
		case 0:
			b = append(b, "\nfunc "...)
			word()
			b = append(b, '(')
			word()
			b = append(b, " *"...)
			word()
			b = append(b, ") error {\n"...)
		case 1:
			b = append(b, '\t')
			word()
			b = append(b, " := "...)
			word()
			b = append(b, '(')
			b = strconv.AppendInt(b, int64(rng.IntN(100000)), 10)
			b = append(b, ", \""...)
			word()
			b = append(b, ' ')
			word()
			b = append(b, "\")\n"...)
		case 2:
			b = append(b, "\t// "...)
			for range 4 + rng.IntN(8) {
				word()
				b = append(b, ' ')
			}
			b = append(b, '\n')
		case 3:
			b = append(b, "\tif err := "...)
			word()
			b = append(b, '.')
			word()
			b = append(b, "(); err != nil {\n\t\treturn err\n\t}\n"...)
		default:
			b = append(b, "\treturn nil\n}\n"...)
		}
	}
	b = b[:size]
	b[size-1] = '\n'
	return b
}

// gitCommitTree makes root a git repository with every file committed.
// Setting up is not timed: the objects are not fsynced and no automatic gc
// runs after the commit.
func gitCommitTree(root string) error {
	for _, args := range [][]string{
		{"init", "-q"},
		{"-c", "core.fsync=none", "add", "-A"},
		{"-c", "core.fsync=none", "-c", "gc.auto=0", "-c", "user.name=editguard-bench", "-c", "user.email=bench@example.invalid", "commit", "-q", "-m", "tree"},
		{"status", "--porcelain"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// cpWS is a workspace over a tree, with one session.
type cpWS struct {
	root string
	w    *editguard.Workspace
	s    *editguard.Session
}

func openCPWS(root string) (*cpWS, error) {
	w, err := editguard.Open(root, nil)
	if err != nil {
		return nil, err
	}
	return &cpWS{root: root, w: w, s: w.NewSession("bench")}, nil
}

func (x *cpWS) close() error {
	if x.w == nil {
		return nil
	}
	err := x.w.Close()
	x.w, x.s = nil, nil
	return err
}

// reset closes the workspace, removes its state directory and opens it
// again: the next checkpoint is a fresh workspace's first.
func (x *cpWS) reset() error {
	if err := x.close(); err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(x.root, editguard.StateDir)); err != nil {
		return err
	}
	y, err := openCPWS(x.root)
	if err != nil {
		return err
	}
	*x = *y
	return nil
}

// begin times one BeginCommand: wall and CPU.
func (x *cpWS) begin(ctx context.Context) (*editguard.Command, time.Duration, time.Duration, error) {
	var c *editguard.Command
	wall, cpu, err := measure(func() error {
		var err error
		c, err = x.s.BeginCommand(ctx, "editguard-bench checkpoint", nil)
		return err
	})
	return c, wall, cpu, err
}

// end times c.End and checks that it found want changes.
func end(ctx context.Context, c *editguard.Command, want int) (time.Duration, time.Duration, error) {
	var res *editguard.CommandResult
	wall, cpu, err := measure(func() error {
		var err error
		res, err = c.End(ctx)
		return err
	})
	if err == nil && len(res.Changes) != want {
		err = fmt.Errorf("End found %d changes, want %d: %+v", len(res.Changes), want, res.Changes)
	}
	if err == nil && len(res.Warnings) > 0 {
		err = fmt.Errorf("End warned: %v", res.Warnings)
	}
	return wall, cpu, err
}

// changeFiles is the command: it rewrites the first line of each file.
func changeFiles(root string, rels []string, tag string) error {
	for _, rel := range rels {
		p := filepath.Join(root, filepath.FromSlash(rel))
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
		if err := os.WriteFile(p, append([]byte("// changed "+tag+"\n"), b...), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// changedFiles are the three files the command changes.
func (t *cpTree) changedFiles() []string {
	c := t.content
	return []string{c[len(c)/4], c[len(c)/2], c[3*len(c)/4]}
}

// cpuNow is the CPU time this process has used, all threads.
func cpuNow() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measure times fn: wall clock and this process's CPU.
func measure(fn func() error) (time.Duration, time.Duration, error) {
	c0, t0 := cpuNow(), time.Now()
	err := fn()
	return time.Since(t0), cpuNow() - c0, err
}

// cpSample is one run of a cell.
type cpSample struct {
	parts []time.Duration // the timed parts; most cells have one
	cpu   time.Duration   // CPU time: this process's, or the child's
}

func (s cpSample) total() time.Duration {
	var t time.Duration
	for _, p := range s.parts {
		t += p
	}
	return t
}

// cpCell is one cell of a section; run(r) runs it in round r and cleans
// up after itself, untimed.
type cpCell struct {
	name string
	run  func(r int) (cpSample, error)
}

// runCheckpointRounds runs one untimed warm-up round and rounds timed
// ones of cells, each round in an order rotated by one, and returns each
// cell's timed samples.
func runCheckpointRounds(ctx context.Context, label string, cells []cpCell, rounds int, stderr io.Writer) ([][]cpSample, error) {
	res := make([][]cpSample, len(cells))
	for r := 0; r <= rounds; r++ {
		for i := range cells {
			c := (i + r) % len(cells)
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			runtime.GC()
			unix.Sync()
			s, err := cells[c].run(r)
			if err != nil {
				return nil, fmt.Errorf("%s, round %d: %w", cells[c].name, r, err)
			}
			if r > 0 {
				res[c] = append(res[c], s)
			}
			fmt.Fprintf(stderr, "checkpoint: %s: round %d: %s %s\n", label, r, cells[c].name, ms(s.total()))
		}
		fmt.Fprintf(stderr, "checkpoint: %s: round %d of %d done\n", label, r, rounds)
	}
	return res, nil
}

// runProcess runs name in dir and returns its wall time and CPU time, and
// its standard output. (Not its peak memory: a child that Go starts shares
// this process's memory until it execs, and Linux carries that peak into
// the child's rusage.)
func runProcess(dir, name string, args ...string) (cpSample, []byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	t0 := time.Now()
	err := cmd.Run()
	wall := time.Since(t0)
	if err != nil {
		return cpSample{}, nil, fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, errb.String())
	}
	ps := cmd.ProcessState
	return cpSample{parts: []time.Duration{wall}, cpu: ps.UserTime() + ps.SystemTime()}, out.Bytes(), nil
}

// statWalk is the plain stat walk: filepath.WalkDir and an Lstat of every
// regular file, outside .git and the state directory.
func statWalk(root string) (int, error) {
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == editguard.StateDir) {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			if _, err := os.Lstat(p); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// goCopy copies the tree's entries into dst with os.ReadFile and
// os.WriteFile, as a plain Go program would, and returns the files copied.
// With flat set, every file goes into dst itself, named by its number, as
// the checkpoint store keeps its objects.
func goCopy(t *cpTree, dst string, flat bool) (int, error) {
	n := 0
	for _, top := range t.top {
		err := filepath.WalkDir(filepath.Join(t.root, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(t.root, p)
			to := filepath.Join(dst, rel)
			if flat {
				to = filepath.Join(dst, strconv.Itoa(n))
			}
			switch {
			case d.IsDir() && flat:
				return nil
			case d.IsDir():
				return os.Mkdir(to, 0o755)
			case d.Type().IsRegular():
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				n++
				return os.WriteFile(to, b, 0o644)
			}
			return nil
		})
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// countFiles counts the regular files under dir.
func countFiles(dir string) int {
	n := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return nil
	})
	return n
}

// dirUsage returns the regular files under dir, their bytes and the bytes
// the file system allocated for them.
func dirUsage(dir string) (files int, size, allocated int64) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		var st unix.Stat_t
		if unix.Lstat(p, &st) == nil {
			files++
			size += st.Size
			allocated += st.Blocks * 512
		}
		return nil
	})
	return
}

// checkGitStatus checks that git status listed only the files the command
// changes, as modified: the tree is otherwise clean and the state
// directory ignored.
func checkGitStatus(out []byte, changed []string) error {
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, " M ") || !slices.Contains(changed, line[3:]) {
			return fmt.Errorf("git status --porcelain listed %q: the tree is not clean but for the command's changes", line)
		}
	}
	return nil
}

// gitSection measures the pair against git status in the git repository.
func gitSection(ctx context.Context, cc *checkpointConfig, t *cpTree, sum *cpSummary, profile bool, stdout, stderr io.Writer) error {
	x, err := openCPWS(t.root)
	if err != nil {
		return err
	}
	defer x.close()
	changed := t.changedFiles()
	covered := len(t.covered)

	// The store after the first checkpoint of the clean working copy.
	c, firstWall, _, err := x.begin(ctx)
	if err != nil {
		return err
	}
	objs, objBytes, objAlloc := dirUsage(filepath.Join(t.root, editguard.StateDir, "checkpoints", "objects"))
	_, cpBytes, _ := dirUsage(filepath.Join(t.root, editguard.StateDir, "checkpoints"))
	_, gitBytes, _ := dirUsage(filepath.Join(t.root, ".git", "objects"))
	if _, _, err := end(ctx, c, 0); err != nil {
		return err
	}
	sum.storeBytes = objBytes
	fmt.Fprintf(stdout, "\nStore after the first checkpoint of the clean git working copy (%s):\n\n", ms(firstWall))
	fmt.Fprintf(stdout, "| what | files | bytes | / covered bytes |\n|---|---:|---:|---:|\n")
	fmt.Fprintf(stdout, "| covered files | %s | %s | 100%% |\n", commas(int64(covered)), commas(t.bytes))
	fmt.Fprintf(stdout, "| .editguard/checkpoints/objects | %s | %s | %.1f%% |\n", commas(int64(objs)), commas(objBytes), pct(objBytes, t.bytes))
	fmt.Fprintf(stdout, "| the same, blocks allocated | | %s | %.1f%% |\n", commas(objAlloc), pct(objAlloc, t.bytes))
	fmt.Fprintf(stdout, "| .editguard/checkpoints in all (objects, manifests, active record) | | %s | %.1f%% |\n", commas(cpBytes), pct(cpBytes, t.bytes))
	fmt.Fprintf(stdout, "| .git/objects, for reference (git's own zlib copy) | | %s | %.1f%% |\n", commas(gitBytes), pct(gitBytes, t.bytes))

	pair := 0
	runPair := func() (cpSample, error) {
		c, bw, bc, err := x.begin(ctx)
		if err != nil {
			return cpSample{}, err
		}
		pair++
		if err := changeFiles(t.root, changed, fmt.Sprintf("pair %d", pair)); err != nil {
			return cpSample{}, err
		}
		ew, ec, err := end(ctx, c, len(changed))
		return cpSample{parts: []time.Duration{bw, ew}, cpu: bc + ec}, err
	}
	dirty := filepath.Join(filepath.Dir(t.root), "dirty.bin")
	cells := []cpCell{
		{"pair", func(r int) (cpSample, error) { return runPair() }},
		// Another program's writes, not yet on the disk (a build's
		// output, a package install): the pair's syncfs writes them back
		// too.
		{"pair, dirty", func(r int) (cpSample, error) {
			if err := os.WriteFile(dirty, bytes.Repeat([]byte{byte(r + 1)}, dirtyBytes), 0o644); err != nil {
				return cpSample{}, err
			}
			defer os.Remove(dirty)
			return runPair()
		}},
		{"first", func(r int) (cpSample, error) {
			if err := x.reset(); err != nil {
				return cpSample{}, err
			}
			runtime.GC()
			unix.Sync()
			c, bw, bc, err := x.begin(ctx)
			if err != nil {
				return cpSample{}, err
			}
			_, _, err = end(ctx, c, 0)
			return cpSample{parts: []time.Duration{bw}, cpu: bc}, err
		}},
		{"git status", func(r int) (cpSample, error) {
			s, out, err := runProcess(t.root, "git", "status", "--porcelain")
			if err == nil {
				err = checkGitStatus(out, changed)
			}
			return s, err
		}},
		{"stat walk", func(r int) (cpSample, error) {
			var n int
			wall, cpu, err := measure(func() (err error) { n, err = statWalk(t.root); return err })
			if err == nil && n != covered+t.ignored {
				err = fmt.Errorf("stat walk met %d files, want %d", n, covered+t.ignored)
			}
			return cpSample{parts: []time.Duration{wall}, cpu: cpu}, err
		}},
		{"walk", func(r int) (cpSample, error) {
			n := 0
			wall, cpu, err := measure(func() error {
				return x.w.Walk(ctx, ".", func(*editguard.WalkFile) bool { n++; return true })
			})
			if err == nil && n != covered {
				err = fmt.Errorf("Walk met %d files, want %d", n, covered)
			}
			return cpSample{parts: []time.Duration{wall}, cpu: cpu}, err
		}},
	}
	res, err := runCheckpointRounds(ctx, fmt.Sprintf("%d files, git", covered), cells, cc.rounds, stderr)
	if err != nil {
		return err
	}
	pairS, dirtyS, firstS, statusS, walkS, egWalkS := res[0], res[1], res[2], res[3], res[4], res[5]
	status := medianOf(statusS, -1)
	sum.pair, sum.status, sum.firstGit = medianOf(pairS, -1), status, medianOf(firstS, -1)
	sum.pairDirty = medianOf(dirtyS, -1)
	fmt.Fprintf(stdout, "\nIn the git repository (%d timed rounds):\n\n", cc.rounds)
	fmt.Fprintf(stdout, "| cell | median | min | max | CPU (median) | / git status |\n|---|---:|---:|---:|---:|---:|\n")
	row := func(name string, ss []cpSample, part int, ratio bool) {
		m := medianOf(ss, part)
		r := ""
		if ratio {
			r = fmt.Sprintf("%.2fx", float64(m)/float64(status))
		}
		cpu := ms(medianCPU(ss))
		if part >= 0 {
			cpu = ""
		}
		fmt.Fprintf(stdout, "| %s | %s | %s | %s | %s | %s |\n", name, ms(m), ms(minOf(ss, part)), ms(maxOf(ss, part)), cpu, r)
	}
	row("**BeginCommand + End**, the command changing 3 files", pairS, -1, true)
	row("- of which BeginCommand", pairS, 0, true)
	row("- of which End", pairS, 1, true)
	row(fmt.Sprintf("the same, with %d MiB another program wrote and did not sync", dirtyBytes>>20), dirtyS, -1, true)
	row("- of which End", dirtyS, 1, true)
	row("first checkpoint of a fresh workspace (BeginCommand)", firstS, -1, true)
	row("`git status --porcelain` (a process)", statusS, -1, true)
	row("stat walk (WalkDir + Lstat), for reference", walkS, -1, true)
	row("editguard Walk alone (no stat), for reference", egWalkS, -1, true)

	if profile {
		if out := os.Getenv(cpuProfileEnv); out != "" {
			if err := profileTo(out, func() error {
				for i := range 10 {
					c, _, _, err := x.begin(ctx)
					if err != nil {
						return err
					}
					if err := changeFiles(t.root, changed, fmt.Sprintf("profile %d", i)); err != nil {
						return err
					}
					if _, _, err := end(ctx, c, len(changed)); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				return err
			}
			if err := x.reset(); err != nil {
				return err
			}
			var c *editguard.Command
			if err := profileTo(out+".first", func() (err error) {
				c, err = x.s.BeginCommand(ctx, "profile", nil)
				return err
			}); err != nil {
				return err
			}
			if _, _, err := end(ctx, c, 0); err != nil {
				return err
			}
			fmt.Fprintf(stderr, "checkpoint: profiles written to %s and %s.first\n", out, out)
		}
	}
	return x.close()
}

// plainSection measures the first and later checkpoints in the tree
// without git against a copy and a stat walk.
func plainSection(ctx context.Context, cc *checkpointConfig, t *cpTree, sum *cpSummary, profile bool, stdout, stderr io.Writer) error {
	x, err := openCPWS(t.root)
	if err != nil {
		return err
	}
	defer x.close()
	covered, all := len(t.covered), len(t.covered)+t.ignored
	dst := t.root + "-copy"
	// A copy cell makes the copy in a new directory, checks it and
	// removes it, untimed.
	copyCell := func(name string, copyFn func() (cpSample, error)) cpCell {
		return cpCell{name, func(r int) (cpSample, error) {
			if err := os.Mkdir(dst, 0o755); err != nil {
				return cpSample{}, err
			}
			defer os.RemoveAll(dst)
			s, err := copyFn()
			if err == nil {
				if n := countFiles(dst); n != all {
					err = fmt.Errorf("%s copied %d files, want %d", name, n, all)
				}
			}
			return s, err
		}}
	}
	timed := func(fn func() error) (cpSample, error) {
		wall, cpu, err := measure(fn)
		return cpSample{parts: []time.Duration{wall}, cpu: cpu}, err
	}
	cells := []cpCell{
		{"first", func(r int) (cpSample, error) {
			if err := x.reset(); err != nil {
				return cpSample{}, err
			}
			runtime.GC()
			unix.Sync()
			c, bw, bc, err := x.begin(ctx)
			if err != nil {
				return cpSample{}, err
			}
			_, _, err = end(ctx, c, 0)
			return cpSample{parts: []time.Duration{bw}, cpu: bc}, err
		}},
		copyCell("cp -r", func() (cpSample, error) {
			s, _, err := runProcess(t.root, "cp", append(append([]string{"-r"}, t.top...), dst)...)
			return s, err
		}),
		copyCell("Go copy", func() (cpSample, error) {
			return timed(func() error { _, err := goCopy(t, dst, false); return err })
		}),
		copyCell("Go copy into one directory", func() (cpSample, error) {
			return timed(func() error { _, err := goCopy(t, dst, true); return err })
		}),
		copyCell("Go copy + syncfs", func() (cpSample, error) {
			return timed(func() error {
				if _, err := goCopy(t, dst, false); err != nil {
					return err
				}
				d, err := os.Open(dst)
				if err != nil {
					return err
				}
				defer d.Close()
				return syncFS(int(d.Fd()))
			})
		}),
		{"later", func(r int) (cpSample, error) {
			c, bw, bc, err := x.begin(ctx)
			if err != nil {
				return cpSample{}, err
			}
			ew, ec, err := end(ctx, c, 0)
			return cpSample{parts: []time.Duration{bw, ew}, cpu: bc + ec}, err
		}},
		{"stat walk", func(r int) (cpSample, error) {
			var n int
			wall, cpu, err := measure(func() (err error) { n, err = statWalk(t.root); return err })
			if err == nil && n != all {
				err = fmt.Errorf("stat walk met %d files, want %d", n, all)
			}
			return cpSample{parts: []time.Duration{wall}, cpu: cpu}, err
		}},
		{"walk", func(r int) (cpSample, error) {
			n := 0
			wall, cpu, err := measure(func() error {
				return x.w.Walk(ctx, ".", func(*editguard.WalkFile) bool { n++; return true })
			})
			if err == nil && n != covered {
				err = fmt.Errorf("Walk met %d files, want %d", n, covered)
			}
			return cpSample{parts: []time.Duration{wall}, cpu: cpu}, err
		}},
	}
	res, err := runCheckpointRounds(ctx, fmt.Sprintf("%d files, no git", covered), cells, cc.rounds, stderr)
	if err != nil {
		return err
	}
	firstS, cpRS, goRS, flatRS, goSyncRS, laterS, walkS, egWalkS := res[0], res[1], res[2], res[3], res[4], res[5], res[6], res[7]
	cpM, goM, flatM, walkM := medianOf(cpRS, -1), medianOf(goRS, -1), medianOf(flatRS, -1), medianOf(walkS, -1)
	sum.first, sum.cpCopy, sum.goCopy, sum.flatCopy = medianOf(firstS, -1), cpM, goM, flatM
	sum.laterBegin, sum.laterEnd, sum.statWalk = medianOf(laterS, 0), medianOf(laterS, 1), walkM
	fmt.Fprintf(stdout, "\nIn the tree without git (%d timed rounds):\n\n", cc.rounds)
	fmt.Fprintf(stdout, "| cell | median | min | max | CPU (median) | / cp -r | / Go copy | / Go copy into one directory | / stat walk |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	row := func(name string, ss []cpSample, part int, copies, walk bool) {
		m := medianOf(ss, part)
		r1, r2, r4, r3 := "", "", "", ""
		if copies {
			r1, r2, r4 = fmt.Sprintf("%.2fx", float64(m)/float64(cpM)), fmt.Sprintf("%.2fx", float64(m)/float64(goM)), fmt.Sprintf("%.2fx", float64(m)/float64(flatM))
		}
		if walk {
			r3 = fmt.Sprintf("%.2fx", float64(m)/float64(walkM))
		}
		cpu := ms(medianCPU(ss))
		if part >= 0 {
			cpu = ""
		}
		fmt.Fprintf(stdout, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", name, ms(m), ms(minOf(ss, part)), ms(maxOf(ss, part)), cpu, r1, r2, r4, r3)
	}
	row("**first checkpoint** of a fresh workspace (BeginCommand)", firstS, -1, true, false)
	row("`cp -r` of the tree (a process)", cpRS, -1, true, false)
	row("Go copy (ReadFile, WriteFile)", goRS, -1, true, false)
	row("Go copy into one directory (the store's layout)", flatRS, -1, true, false)
	row("Go copy and one syncfs, for reference", goSyncRS, -1, true, false)
	row("**later checkpoint**, nothing changed: BeginCommand", laterS, 0, false, true)
	row("**later checkpoint**, nothing changed: End", laterS, 1, false, true)
	row("stat walk (WalkDir + Lstat)", walkS, -1, false, true)
	row("editguard Walk alone (no stat), for reference", egWalkS, -1, false, true)

	if profile {
		if out := os.Getenv(cpuProfileEnv); out != "" {
			if err := profileTo(out+".later", func() error {
				for range 10 {
					c, _, _, err := x.begin(ctx)
					if err != nil {
						return err
					}
					if _, _, err := end(ctx, c, 0); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				return err
			}
			fmt.Fprintf(stderr, "checkpoint: profile written to %s.later\n", out)
		}
	}
	return x.close()
}

// profileTo runs fn with the CPU profiler writing to out.
func profileTo(out string, fn func() error) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return err
	}
	err = fn()
	pprof.StopCPUProfile()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func sampleTime(s cpSample, part int) time.Duration {
	if part < 0 {
		return s.total()
	}
	return s.parts[part]
}

func times(ss []cpSample, part int) []time.Duration {
	var ds []time.Duration
	for _, s := range ss {
		ds = append(ds, sampleTime(s, part))
	}
	return ds
}

// medianOf is the median of part (-1: the sum of the parts) of ss.
func medianOf(ss []cpSample, part int) time.Duration { return median(times(ss, part)) }
func minOf(ss []cpSample, part int) time.Duration    { return slices.Min(times(ss, part)) }
func maxOf(ss []cpSample, part int) time.Duration    { return slices.Max(times(ss, part)) }

func medianCPU(ss []cpSample) time.Duration {
	var ds []time.Duration
	for _, s := range ss {
		ds = append(ds, s.cpu)
	}
	return median(ds)
}

// peakKiB is the process's peak resident memory (VmHWM), in KiB, or -1.
func peakKiB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			if k, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64); err == nil {
				return k
			}
		}
	}
	return -1
}

// gitStatusPeak is the peak resident memory of git status in root, in
// KiB, as /usr/bin/time reports it (its own fork of git does not carry
// this process's memory into git's), the median of three; -1 where
// /usr/bin/time is missing.
func gitStatusPeak(root string) int64 {
	out := filepath.Join(filepath.Dir(root), "time.out")
	defer os.Remove(out)
	var ks []int64
	for range 3 {
		cmd := exec.Command("/usr/bin/time", "-f", "%M", "-o", out, "git", "status", "--porcelain")
		cmd.Dir = root
		if cmd.Run() != nil {
			return -1
		}
		b, err := os.ReadFile(out)
		k, err2 := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || err2 != nil {
			return -1
		}
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks[1]
}

func pct(a, b int64) float64 { return 100 * float64(a) / float64(b) }

func kib(k int64) string {
	if k < 0 {
		return "?"
	}
	return fmt.Sprintf("%.1f MiB", float64(k)/1024)
}

// commas writes n with thousands separators.
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// checkpointMachine describes where the numbers were taken.
func checkpointMachine(dir string) string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	var uts unix.Utsname
	unix.Uname(&uts)
	version := func(name string) string {
		out, err := exec.Command(name, "--version").Output()
		if err != nil {
			return name + " ?"
		}
		return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
	}
	fsType := "?"
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) == nil {
		fsType = map[int64]string{0xEF53: "ext4", 0x58465342: "xfs", 0x01021994: "tmpfs", 0x9123683E: "btrfs", 0x794c7630: "overlayfs"}[int64(st.Type)]
		if fsType == "" {
			fsType = fmt.Sprintf("fs 0x%x", st.Type)
		}
	}
	return fmt.Sprintf("%d CPUs (%s), %s/%s, Linux %s, %s, %s, %s; trees on %s",
		runtime.NumCPU(), cpu, runtime.GOOS, runtime.GOARCH, unix.ByteSliceToString(uts.Release[:]),
		runtime.Version(), version("git"), version("cp"), fsType)
}

// checkpointChildEnv makes the program a child of childSection: it runs
// what the JSON childSpec in the variable says and prints a childResult.
const checkpointChildEnv = "EDITGUARD_BENCH_CHECKPOINT_CHILD"

type childSpec struct {
	Root string `json:"root"`
	// First: one first checkpoint (BeginCommand, then End) in a fresh
	// workspace; otherwise Pairs pairs, each changing Changed.
	First   bool     `json:"first"`
	Pairs   int      `json:"pairs"`
	Changed []string `json:"changed"`
}

type childResult struct {
	Flushes int64  `json:"flushes"`  // -1: not readable
	Alloc   uint64 `json:"alloc"`    // bytes allocated by the pairs or the first checkpoint
	PeakKiB int64  `json:"peak_kib"` // peak resident memory (VmHWM)
}

// markPrefix names the paths the child asks faccessat about, so that
// strace's output says where each pair's steps begin.
const markPrefix = "/editguard-bench-mark/"

func checkpointChild(specJSON string, stdout io.Writer) error {
	var spec childSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return err
	}
	ctx := context.Background()
	mark := func(name string) { unix.Access(markPrefix+name, unix.F_OK) }
	x, err := openCPWS(spec.Root)
	if err != nil {
		return err
	}
	f0, ok := soak.DeviceFlushes("/sys", spec.Root)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	if spec.First {
		mark("begin")
		c, err := x.s.BeginCommand(ctx, "first", nil)
		if err != nil {
			return err
		}
		mark("end")
		if _, _, err := end(ctx, c, 0); err != nil {
			return err
		}
		mark("after")
	}
	for i := range spec.Pairs {
		mark("begin")
		c, err := x.s.BeginCommand(ctx, "pair", nil)
		if err != nil {
			return err
		}
		mark("command")
		if err := changeFiles(spec.Root, spec.Changed, fmt.Sprintf("child %d %d", os.Getpid(), i)); err != nil {
			return err
		}
		mark("end")
		if _, _, err := end(ctx, c, len(spec.Changed)); err != nil {
			return err
		}
		mark("after")
	}
	runtime.ReadMemStats(&m1)
	mark("close")
	if err := x.close(); err != nil {
		return err
	}
	mark("closed")
	res := childResult{Flushes: -1, Alloc: m1.TotalAlloc - m0.TotalAlloc, PeakKiB: peakKiB()}
	if f1, ok1 := soak.DeviceFlushes("/sys", spec.Root); ok && ok1 {
		res.Flushes = f1 - f0
	}
	return json.NewEncoder(stdout).Encode(res)
}

// runChild runs this program as a child on spec, under strace when
// straceOut is set, and returns its result and peak resident memory in
// KiB, which the child reads from its own /proc/self/status.
func runChild(spec childSpec, straceOut string) (childResult, int64, error) {
	self, err := os.Executable()
	if err != nil {
		return childResult{}, 0, err
	}
	js, _ := json.Marshal(spec)
	args := []string{self, "-checkpoint"}
	if straceOut != "" {
		args = append([]string{"strace", "-f", "-qq", "-T", "-o", straceOut,
			"-e", "trace=fsync,fdatasync,syncfs,sync,sync_file_range,msync,faccessat,faccessat2,access", "--"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), checkpointChildEnv+"="+string(js))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return childResult{}, 0, fmt.Errorf("child %s: %v: %s", js, err, errb.String())
	}
	var res childResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return childResult{}, 0, fmt.Errorf("child %s printed %q: %v", js, out.String(), err)
	}
	return res, res.PeakKiB, nil
}

// syncCalls counts, from strace output with the child's marks, the
// fsync-family calls made in each step, and the time they took.
type syncCalls struct {
	calls map[string]map[string]int // step -> call -> count
	time  map[string]time.Duration  // step -> time in those calls
}

var syncNames = []string{"fsync", "fdatasync", "syncfs", "sync", "sync_file_range", "msync"}

func parseStrace(path string) (*syncCalls, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := &syncCalls{calls: map[string]map[string]int{}, time: map[string]time.Duration{}}
	step := "open"
	in := bufio.NewScanner(f)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	for in.Scan() {
		line := in.Text()
		if i := strings.Index(line, markPrefix); i >= 0 {
			rest := line[i+len(markPrefix):]
			step = rest[:strings.IndexByte(rest, '"')]
			continue
		}
		// "PID name(args) = 0 <0.000123>", "PID name(args <unfinished ...>",
		// "PID <... name resumed>) = 0 <0.000123>".
		_, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimLeft(rest, " ")
		resumed := strings.HasPrefix(rest, "<... ")
		name := rest
		if resumed {
			name = strings.TrimPrefix(rest, "<... ")
			name, _, _ = strings.Cut(name, " ")
		} else if i := strings.IndexByte(rest, '('); i >= 0 {
			name = rest[:i]
		}
		if !slices.Contains(syncNames, name) {
			continue
		}
		if !resumed {
			if sc.calls[step] == nil {
				sc.calls[step] = map[string]int{}
			}
			sc.calls[step][name]++
		}
		if i := strings.LastIndexByte(line, '<'); i >= 0 && strings.HasSuffix(line, ">") {
			if s, err := strconv.ParseFloat(line[i+1:len(line)-1], 64); err == nil {
				sc.time[step] += time.Duration(s * float64(time.Second))
			}
		}
	}
	return sc, in.Err()
}

// count is the calls in the steps named (all steps when none is).
func (sc *syncCalls) count(steps ...string) int {
	n := 0
	for step, calls := range sc.calls {
		if len(steps) > 0 && !slices.Contains(steps, step) {
			continue
		}
		for _, c := range calls {
			n += c
		}
	}
	return n
}

// describe lists the calls of the steps named, by name.
func (sc *syncCalls) describe(div float64, steps ...string) string {
	by := map[string]int{}
	for _, step := range steps {
		for name, c := range sc.calls[step] {
			by[name] += c
		}
	}
	var parts []string
	for _, name := range syncNames {
		if by[name] > 0 {
			parts = append(parts, fmt.Sprintf("%.1f %s", float64(by[name])/div, name))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func (sc *syncCalls) timeIn(steps ...string) time.Duration {
	var t time.Duration
	for _, s := range steps {
		t += sc.time[s]
	}
	return t
}

// childSection runs, on the git repository, child processes that make
// pairs and a first checkpoint, for their memory, device flushes and
// fsync-family calls.
func childSection(t *cpTree, sum *cpSummary, stdout, stderr io.Writer) error {
	const pairs = 5
	changed := t.changedFiles()
	fmt.Fprintf(stderr, "checkpoint: %d files: child processes\n", len(t.covered))
	pairRes, pairRSS, err := runChild(childSpec{Root: t.root, Pairs: pairs, Changed: changed}, "")
	if err != nil {
		return err
	}
	_, openRSS, err := runChild(childSpec{Root: t.root}, "")
	if err != nil {
		return err
	}
	resetState := func() error { return os.RemoveAll(filepath.Join(t.root, editguard.StateDir)) }
	if err := resetState(); err != nil {
		return err
	}
	firstRes, firstRSS, err := runChild(childSpec{Root: t.root, First: true}, "")
	if err != nil {
		return err
	}
	sum.rssPair, sum.rssFirst, sum.rssOpen = pairRSS, firstRSS, openRSS
	sum.rssG = gitStatusPeak(t.root)
	sum.flushesPair = float64(pairRes.Flushes) / pairs
	fmt.Fprintf(stdout, "\nChild processes on the git repository (each opens the workspace, runs, closes it):\n\n")
	fmt.Fprintf(stdout, "| process | peak resident memory | Go bytes allocated | device flushes (whole machine) |\n|---|---:|---:|---:|\n")
	fmt.Fprintf(stdout, "| open and close only | %s | | |\n", kib(openRSS))
	fmt.Fprintf(stdout, "| %d pairs, 3 files changed in each | %s | %.1f MiB per pair | %.1f per pair |\n", pairs, kib(pairRSS), float64(pairRes.Alloc)/pairs/(1<<20), sum.flushesPair)
	fmt.Fprintf(stdout, "| first checkpoint of a fresh workspace, then End | %s | %.1f MiB | %d |\n", kib(firstRSS), float64(firstRes.Alloc)/(1<<20), firstRes.Flushes)
	fmt.Fprintf(stdout, "| `git status --porcelain` (/usr/bin/time) | %s | | |\n", kib(sum.rssG))

	if _, err := exec.LookPath("strace"); err != nil {
		fmt.Fprintf(stdout, "\n(strace is not installed: no fsync counts)\n")
		sum.fsyncsPair = -1
		return nil
	}
	traceOut := filepath.Join(filepath.Dir(t.root), "strace.out")
	if err := resetState(); err != nil {
		return err
	}
	if _, _, err := runChild(childSpec{Root: t.root, First: true}, traceOut); err != nil {
		return err
	}
	first, err := parseStrace(traceOut)
	if err != nil {
		return err
	}
	if _, _, err := runChild(childSpec{Root: t.root, Pairs: pairs, Changed: changed}, traceOut); err != nil {
		return err
	}
	pair, err := parseStrace(traceOut)
	if err != nil {
		return err
	}
	os.Remove(traceOut)
	sum.fsyncsPair = float64(pair.count("begin", "command", "end", "after")) / pairs
	fmt.Fprintf(stdout, "\nfsync-family system calls (strace -f; time is strace's -T, inflated by tracing):\n\n")
	fmt.Fprintf(stdout, "| step | calls | time in them |\n|---|---|---:|\n")
	per := func(d time.Duration, n float64) string { return ms(time.Duration(float64(d) / n)) }
	fmt.Fprintf(stdout, "| pair: BeginCommand | %s | %s |\n", pair.describe(pairs, "begin"), per(pair.timeIn("begin"), pairs))
	fmt.Fprintf(stdout, "| pair: End | %s | %s |\n", pair.describe(pairs, "end"), per(pair.timeIn("end"), pairs))
	fmt.Fprintf(stdout, "| pair: after End returned (left to run) | %s | %s |\n", pair.describe(pairs, "after", "command"), per(pair.timeIn("after", "command"), pairs))
	fmt.Fprintf(stdout, "| first checkpoint of a fresh workspace | %s | %s |\n", first.describe(1, "begin"), ms(first.timeIn("begin")))
	fmt.Fprintf(stdout, "| opening, and closing the workspace, for reference | %s / %s | |\n", pair.describe(1, "open"), pair.describe(1, "close"))
	return nil
}

// writeCheckpointSummary prints the curves over N and the targets.
func writeCheckpointSummary(w io.Writer, sums []cpSummary) {
	fmt.Fprintf(w, "\n### Over N\n\n")
	fmt.Fprintf(w, "| files | pair / git status (target ≤ 2x) | with 128 MiB unsynced | store / tree bytes (target < 1%%) | first checkpoint / cp -r (target ≤ 1.5x) | / Go copy | / Go copy into one directory | later Begin / stat walk (target ≤ 2x) | later End / stat walk | device flushes per pair | fsync-family calls per pair | peak memory, pair process | git status |\n")
	fmt.Fprintf(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range sums {
		fsyncs := "?"
		if s.fsyncsPair >= 0 {
			fsyncs = fmt.Sprintf("%.1f", s.fsyncsPair)
		}
		fmt.Fprintf(w, "| %s | %s / %s = **%.2fx** | %.2fx | **%.1f%%** | %s / %s = **%.2fx** | %.2fx | %.2fx | %s / %s = **%.2fx** | **%.2fx** | %.1f | %s | %s | %s |\n",
			commas(int64(s.n)),
			ms(s.pair), ms(s.status), float64(s.pair)/float64(s.status), float64(s.pairDirty)/float64(s.status),
			pct(s.storeBytes, s.treeBytes),
			ms(s.first), ms(s.cpCopy), float64(s.first)/float64(s.cpCopy), float64(s.first)/float64(s.goCopy), float64(s.first)/float64(s.flatCopy),
			ms(s.laterBegin), ms(s.statWalk), float64(s.laterBegin)/float64(s.statWalk), float64(s.laterEnd)/float64(s.statWalk),
			s.flushesPair, fsyncs, kib(s.rssPair), kib(s.rssG))
	}
}
