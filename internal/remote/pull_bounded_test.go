//go:build unix

package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/testutil"
)

// gitWith runs git in dir with extra environment variables and stdin (if
// not nil), for a test's own setup, and returns its output.
func gitWith(t *testing.T, dir string, env []string, stdin io.Reader, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = stdin
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// storeBlob stores content as a blob in the repository gitDir.
func storeBlob(t *testing.T, gitDir, content string) string {
	t.Helper()
	return gitWith(t, gitDir, nil, strings.NewReader(content), "hash-object", "-w", "--stdin")
}

// storeTree stores a tree holding blobs (path to blob id, mode 100644) in
// the repository gitDir and returns its id. Names are taken as they are:
// git mktree checks none, so a tree can hold what git add refuses (.git).
func storeTree(t *testing.T, gitDir string, blobs map[string]string) string {
	t.Helper()
	subs := map[string]map[string]string{}
	var lines []string
	for p, oid := range blobs {
		top, rest, nested := strings.Cut(p, "/")
		if !nested {
			lines = append(lines, fmt.Sprintf("100644 blob %s\t%s", oid, p))
			continue
		}
		if subs[top] == nil {
			subs[top] = map[string]string{}
		}
		subs[top][rest] = oid
	}
	for name, sub := range subs {
		lines = append(lines, fmt.Sprintf("040000 tree %s\t%s", storeTree(t, gitDir, sub), name))
	}
	sort.Strings(lines)
	return gitWith(t, gitDir, nil, strings.NewReader(strings.Join(lines, "\n")+"\n"), "mktree")
}

// commitTree makes the tree the next commit of main in the bare repository
// and returns the commit.
func commitTree(t *testing.T, bare, tree, message string) string {
	t.Helper()
	c := gitWith(t, bare, nil, nil, "commit-tree", tree, "-p", "main", "-m", message)
	gitWith(t, bare, nil, nil, "update-ref", "refs/heads/main", c)
	return c
}

// Environment of the child process that runs a pull (TestPullChildProcess).
const (
	pullChildDirEnv = "EDITGUARD_TEST_PULL_DIR"
	pullChildOutEnv = "EDITGUARD_TEST_PULL_OUT"
)

// pullChildOut is what the child reports.
type pullChildOut struct {
	Result *editguard.PullResult `json:"result"`
	Error  string                `json:"error"`
	// PeakRSSKiB is the child's own peak resident size and that of the
	// git processes it ran, measured in the child (0 where it cannot be).
	PeakRSSKiB int64 `json:"peak_rss_kib"`
}

// childPeakRSSKiB returns the peak resident size of this process since its
// exec (VmHWM) and of the children it waited for, in KiB; 0 off Linux.
// The parent's wait4 cannot tell it: a child started with vfork records,
// at its exec, the high-water mark of the memory it shared with its
// parent until then, so a large test process reports its own size as the
// child's.
func childPeakRSSKiB() int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	var hwm int64
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			fmt.Sscanf(strings.TrimSpace(rest), "%d", &hwm)
		}
	}
	var kids syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids) == nil {
		hwm = max(hwm, testutil.MaxRSSKiB(&kids))
	}
	return hwm
}

// TestPullChildProcess is the body of the child process of
// TestPullOversizedBlobBoundedMemory: it pulls into the workspace named by
// its environment, with the default options, and writes the result as
// JSON. It does nothing in a normal test run.
func TestPullChildProcess(t *testing.T) {
	dir := os.Getenv(pullChildDirEnv)
	if dir == "" {
		t.Skip("runs only as a child process of TestPullOversizedBlobBoundedMemory")
	}
	var out pullChildOut
	w, err := editguard.Open(dir, nil)
	if err == nil {
		out.Result, err = w.NewSession("puller").Pull(context.Background(), nil)
		w.Close()
	}
	if err != nil {
		out.Error = err.Error()
	}
	out.PeakRSSKiB = childPeakRSSKiB()
	data, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(os.Getenv(pullChildOutEnv), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPullOversizedBlobBoundedMemory pulls, in a child process, a branch
// that adds a 300 MiB blob next to ordinary changes, into a workspace with
// the default file size limit (64 MiB). The pull must report that file as
// a TOO_LARGE conflict naming its size and the limit, write every other
// file, and keep the peak resident size of the process, with the git
// processes it ran (wait4 accounts the largest of the whole tree), under
// 256 MiB: neither editguard nor git may hold the blob.
//
// The blob is 300 MiB of zeros, stored as a loose object, as git
// hash-object or a small push leaves it. The upstream is a path, so git
// runs its upload-pack here, as a descendant of the pull: its memory
// counts too. The file the blob is made from is sparse, and the test never
// writes or reads 300 MiB itself.
func TestPullOversizedBlobBoundedMemory(t *testing.T) {
	const (
		bigSize = 300 << 20
		maxRSS  = 256 << 20
	)
	if testing.Short() {
		t.Skip("stores and fetches a 300 MiB blob")
	}
	start := time.Now()
	bare := testutil.SyncRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "dir/c.txt": "c\n", "keep.txt": "k\n"})
	dir := filepath.Join(t.TempDir(), "ws")
	testutil.GitIn(t, filepath.Dir(dir), "clone", "-q", bare, dir)

	sparse := filepath.Join(t.TempDir(), "zeros")
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(bigSize); err != nil {
		t.Fatal(err)
	}
	f.Close()
	big := gitWith(t, bare, nil, nil, "-c", "core.looseCompression=1", "hash-object", "-w", "--", sparse)
	if _, err := os.Stat(filepath.Join(bare, "objects", big[:2], big[2:])); err != nil {
		t.Fatalf("the blob is not a loose object: %v", err)
	}
	tree := storeTree(t, bare, map[string]string{
		"a.txt":     storeBlob(t, bare, "a, changed upstream\n"),
		"dir/c.txt": storeBlob(t, bare, "c, changed upstream\n"),
		"keep.txt":  storeBlob(t, bare, "k\n"),
		"new.txt":   storeBlob(t, bare, "new upstream\n"),
		"big.bin":   big,
	})
	head := commitTree(t, bare, tree, "a huge blob among ordinary changes")
	setup := time.Since(start)

	out := filepath.Join(t.TempDir(), "out.json")
	cmd := exec.Command(os.Args[0], "-test.run=^TestPullChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), pullChildDirEnv+"="+dir, pullChildOutEnv+"="+out)
	var output strings.Builder
	cmd.Stdout, cmd.Stderr = &output, &output
	start = time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("pull process: %v\n%s", err, output.String())
	}
	took := time.Since(start)
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Fatalf("no resource usage for the pull process")
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the pull process wrote no result: %v\n%s", err, output.String())
	}
	var got pullChildOut
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	rss := testutil.MaxRSSKiB(ru) << 10
	if got.PeakRSSKiB > 0 {
		rss = got.PeakRSSKiB << 10 // see childPeakRSSKiB
	}
	t.Logf("setup %v; pull of a %d MiB blob: %v, peak RSS %d MiB (the pull process and the git processes it ran; wait4 says %d MiB)", setup.Round(time.Millisecond), bigSize>>20, took.Round(time.Millisecond), rss>>20, testutil.MaxRSSKiB(ru)>>10)
	if got.Error != "" {
		t.Fatalf("Pull = %s", got.Error)
	}
	r := got.Result
	if r.Head != head {
		t.Errorf("head = %s, want %s", r.Head, head)
	}
	if len(r.Conflicts) != 1 || r.Conflicts[0].Path != "big.bin" || r.Conflicts[0].Reason != "TOO_LARGE" || r.Conflicts[0].Error == nil {
		t.Fatalf("conflicts = %+v, want big.bin alone, TOO_LARGE", r.Conflicts)
	}
	e := r.Conflicts[0].Error
	if e.Code != editguard.CodeTooLarge || e.Details["path"] != "big.bin" ||
		e.Details["size_bytes"] != float64(bigSize) || e.Details["limit_bytes"] != float64(editguard.DefaultMaxFileSize) ||
		!strings.Contains(e.Message, fmt.Sprint(bigSize)) || !strings.Contains(e.Message, fmt.Sprint(editguard.DefaultMaxFileSize)) {
		t.Errorf("big.bin's error = %+v, want TOO_LARGE naming the path, its size and the limit", e)
	}
	if _, err := os.Lstat(filepath.Join(dir, "big.bin")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("big.bin is in the workspace (%v)", err)
	}
	var updated []string
	for _, u := range r.Updated {
		updated = append(updated, u.Path+" "+u.Op)
	}
	sort.Strings(updated)
	if want := "a.txt modified,b.txt deleted,dir/c.txt modified,new.txt added"; strings.Join(updated, ",") != want {
		t.Errorf("updated = %v, want %s", updated, want)
	}
	for p, want := range map[string]string{"a.txt": "a, changed upstream\n", "dir/c.txt": "c, changed upstream\n", "keep.txt": "k\n", "new.txt": "new upstream\n"} {
		if data, err := os.ReadFile(filepath.Join(dir, p)); err != nil || string(data) != want {
			t.Errorf("%s = %q, %v; want %q", p, data, err, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "b.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("b.txt, deleted upstream, is still here (%v)", err)
	}
	if rss >= maxRSS {
		t.Errorf("peak RSS of the pull = %d MiB, want under %d MiB for a %d MiB blob", rss>>20, maxRSS>>20, bigSize>>20)
	}
}

// TestPullNeverWritesGitOrStateEntries pulls a branch whose tree holds
// entries under .git and .editguard, at the top and deeper, in other cases
// and in the other spellings file systems take for them, next to an
// ordinary change. Each is reported as PROTECTED_PATH, never as
// changed_both, with or without DiscardLocal, and nothing of them is
// written; the ordinary change is pulled. A protected path is reported by
// the pull that meets its change, not by every pull after.
func TestPullNeverWritesGitOrStateEntries(t *testing.T) {
	bare := testutil.SyncRepo(t, map[string]string{"ok.txt": "ok\n"})
	ctx := context.Background()
	w, dir := testutil.Clone(t, bare, "ws")
	s := w.NewSession("s")
	gitConfig, err := os.ReadFile(filepath.Join(dir, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	evil := "[core]\n\tfsmonitor = touch pwned\n"
	protected := []string{
		".git/config", ".GIT/config", ".git./config", "GIT~1/config",
		"sub/.Git/hooks/post-checkout", ".editguard/sync.json", "deep/.EditGuard/ledger",
	}
	upstream := func(ok string) map[string]string {
		blobs := map[string]string{"ok.txt": storeBlob(t, bare, ok)}
		for _, p := range protected {
			blobs[p] = storeBlob(t, bare, evil+ok)
		}
		return blobs
	}
	check := func(r *editguard.PullResult, err error, ok string) {
		t.Helper()
		if err != nil {
			t.Fatalf("Pull = %v", err)
		}
		var got []string
		for _, c := range r.Conflicts {
			if c.Reason != "PROTECTED_PATH" || c.Error == nil || c.Error.Code != editguard.CodeProtectedPath || c.Error.Details["path"] != c.Path {
				t.Errorf("conflict %s: reason %q, error %+v; want PROTECTED_PATH", c.Path, c.Reason, c.Error)
			}
			got = append(got, c.Path)
		}
		want := append([]string(nil), protected...)
		sort.Strings(got)
		sort.Strings(want)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("conflicts = %v, want %v", got, want)
		}
		if len(r.Updated) != 1 || r.Updated[0].Path != "ok.txt" {
			t.Errorf("updated = %+v, want ok.txt alone", r.Updated)
		}
		if data, _ := os.ReadFile(filepath.Join(dir, "ok.txt")); string(data) != ok {
			t.Errorf("ok.txt = %q, want %q", data, ok)
		}
		if data, _ := os.ReadFile(filepath.Join(dir, ".git", "config")); string(data) != string(gitConfig) {
			t.Errorf(".git/config was changed:\n%s", data)
		}
		if data, _ := os.ReadFile(filepath.Join(dir, ".editguard", "sync.json")); strings.Contains(string(data), "fsmonitor") {
			t.Errorf(".editguard/sync.json holds upstream's content:\n%s", data)
		}
		for _, p := range protected {
			top, _, _ := strings.Cut(p, "/")
			if top == ".git" || top == ".editguard" {
				continue
			}
			if _, err := os.Lstat(filepath.Join(dir, top)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s was created for %s (%v)", top, p, err)
			}
		}
	}

	commitTree(t, bare, storeTree(t, bare, upstream("ok, first\n")), "protected entries")
	r, err := s.Pull(ctx, nil)
	check(r, err, "ok, first\n")

	commitTree(t, bare, storeTree(t, bare, upstream("ok, second\n")), "protected entries changed")
	r, err = s.Pull(ctx, &editguard.PullOptions{DiscardLocal: true})
	check(r, err, "ok, second\n")

	r, err = s.Pull(ctx, nil)
	if err != nil || len(r.Conflicts) != 0 || len(r.Updated) != 0 {
		t.Fatalf("a pull with nothing new upstream = %+v, %v; want nothing reported", r, err)
	}
}

// TestSyncOverTheLimit runs publish and pull in a workspace with a small
// file size limit against a branch holding content over it: publish fails
// with TOO_LARGE naming the file, its size and the limit, and publishes
// nothing; pull reports each such file as TOO_LARGE (also content that only
// its checkout conversion takes over the limit), leaves it as it is, pulls
// the rest, and reports it again at the next pull.
func TestSyncOverTheLimit(t *testing.T) {
	const limit = 1000
	bare := testutil.SyncRepo(t, map[string]string{".gitattributes": "*.crlf eol=crlf\n", "a.txt": "a\n", "b.txt": "b\n", "g.crlf": "g\n"})
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "ws")
	testutil.GitIn(t, filepath.Dir(dir), "clone", "-q", bare, dir)
	w, err := editguard.Open(dir, &editguard.Options{MaxFileSize: limit})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	s := w.NewSession("s")
	testutil.Change(t, s, "a.txt", "a, changed here\n")

	other := filepath.Join(t.TempDir(), "other")
	testutil.GitIn(t, filepath.Dir(other), "clone", "-q", bare, other)
	testutil.WriteRaw(t, filepath.Join(other, "a.txt"), strings.Repeat("A", 2*limit))
	testutil.WriteRaw(t, filepath.Join(other, "b.txt"), "b, changed upstream\n")
	testutil.WriteRaw(t, filepath.Join(other, "g.crlf"), strings.Repeat("g\n", 400)) // 800 bytes, 1200 checked out
	testutil.GitIn(t, other, "add", "-A")
	testutil.GitIn(t, other, "commit", "-q", "-m", "over the limit")
	testutil.GitIn(t, other, "push", "-q", "origin", "main")
	head := remoteHead(t, bare)

	_, err = s.Publish(ctx, nil)
	var e *editguard.Error
	if !errors.As(err, &e) || e.Code != editguard.CodeTooLarge {
		t.Fatalf("Publish = %v, want TOO_LARGE", err)
	}
	if e.Details["path"] != "a.txt" || e.Details["size_bytes"] != int64(2*limit) || e.Details["limit_bytes"] != int64(limit) {
		t.Errorf("TOO_LARGE details = %v, want a.txt, %d bytes, limit %d", e.Details, 2*limit, limit)
	}
	if got := remoteHead(t, bare); got != head {
		t.Fatalf("the remote branch moved to %s", got)
	}

	for round := 1; round <= 2; round++ {
		r, err := s.Pull(ctx, nil)
		if err != nil {
			t.Fatalf("Pull %d = %v", round, err)
		}
		reasons := map[string]*editguard.PullConflict{}
		for i, c := range r.Conflicts {
			reasons[c.Path] = &r.Conflicts[i]
		}
		if c := reasons["a.txt"]; c == nil || c.Reason != "TOO_LARGE" || c.Error.Details["size_bytes"] != int64(2*limit) || c.Error.Details["limit_bytes"] != int64(limit) {
			t.Errorf("pull %d: a.txt conflict = %+v, want TOO_LARGE with its size and the limit", round, c)
		}
		if c := reasons["g.crlf"]; c == nil || c.Reason != "TOO_LARGE" || c.Error.Details["size_at_least"] != true {
			t.Errorf("pull %d: g.crlf conflict = %+v, want TOO_LARGE, the size a lower bound", round, c)
		}
		if len(r.Conflicts) != 2 {
			t.Errorf("pull %d: conflicts = %+v, want a.txt and g.crlf", round, r.Conflicts)
		}
		if round == 1 && (len(r.Updated) != 1 || r.Updated[0].Path != "b.txt") {
			t.Errorf("pull 1: updated = %+v, want b.txt", r.Updated)
		}
	}
	for p, want := range map[string]string{"a.txt": "a, changed here\n", "b.txt": "b, changed upstream\n", "g.crlf": "g\r\n"} {
		if data, _ := os.ReadFile(filepath.Join(dir, path.Clean(p))); string(data) != want {
			t.Errorf("%s = %q, want %q", p, data, want)
		}
	}
}
