//go:build unix

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/editguard/editguard/internal/testutil"
)

// These tests run "editguard publish" and "editguard pull" as separate
// processes, one workspace per clone, against a bare repository served by
// git daemon on loopback: the real transport, the real push with a lease.
// The editguard binary is the test binary itself, which TestMain installs
// in PATH under that name.

// syncEnv skips the test without git or git daemon, and isolates git from
// the user's and the system's configuration.
func syncEnv(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Skip("git --exec-path failed")
	}
	if _, err := os.Stat(filepath.Join(strings.TrimSpace(string(out)), "git-daemon")); err != nil {
		t.Skip("git daemon is not installed")
	}
	if _, err := exec.LookPath("editguard"); err != nil {
		t.Skip("the editguard command is not in PATH (TestMain installs it)")
	}
	t.Setenv("HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
}

// daemon is a git daemon serving a directory of bare repositories.
type daemon struct {
	base string
	port int
	cmd  *exec.Cmd
}

// startDaemon serves base on a free loopback port (or on port, if not 0).
func startDaemon(t *testing.T, base string, port int) *daemon {
	t.Helper()
	for try := 0; ; try++ {
		p := port
		if p == 0 {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			p = l.Addr().(*net.TCPAddr).Port
			l.Close()
		}
		d := &daemon{base: base, port: p}
		d.cmd = exec.Command("git", "daemon", "--export-all", "--enable=receive-pack", "--reuseaddr", "--informative-errors",
			"--base-path="+base, "--listen=127.0.0.1", "--port="+strconv.Itoa(p), base)
		// Its own process group, so that stop takes the connection
		// handlers (receive-pack, hooks) with it.
		d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var stderr bytes.Buffer
		d.cmd.Stderr = &stderr
		if err := d.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(d.stop)
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			c, err := net.DialTimeout("tcp", d.addr(), 200*time.Millisecond)
			if err == nil {
				c.Close()
				return d
			}
			if d.cmd.ProcessState != nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		d.stop()
		if try == 5 {
			t.Fatalf("git daemon did not start: %s", stderr.String())
		}
	}
}

func (d *daemon) addr() string { return "127.0.0.1:" + strconv.Itoa(d.port) }

func (d *daemon) url(repo string) string { return "git://" + d.addr() + "/" + repo }

// stop kills the daemon and everything it started.
func (d *daemon) stop() {
	if d.cmd.Process == nil {
		return
	}
	syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	d.cmd.Wait()
}

// sharedRepo makes base/shared.git with files on main.
func sharedRepo(t *testing.T, base string, files map[string]string) string {
	t.Helper()
	bare := filepath.Join(base, "shared.git")
	testutil.GitIn(t, base, "init", "-q", "--bare", bare)
	seed := filepath.Join(t.TempDir(), "seed")
	testutil.GitIn(t, base, "clone", "-q", bare, seed)
	for name, content := range files {
		p := filepath.Join(seed, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(content), 0o644)
	}
	testutil.GitIn(t, seed, "add", "-A")
	testutil.GitIn(t, seed, "commit", "-q", "-m", "initial")
	testutil.GitIn(t, seed, "push", "-q", "origin", "main")
	return bare
}

// syncHost is one machine: a clone with its own workspace.
type syncHost struct {
	t    *testing.T
	name string
	dir  string
	env  []string // the environment editguard runs in
	bin  string
}

func cloneHost(t *testing.T, url, name string) *syncHost {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	testutil.GitIn(t, filepath.Dir(dir), "clone", "-q", url, dir)
	bin, _ := exec.LookPath("editguard")
	// A race-enabled binary (the test binary under -race) waits a second
	// before a successful exit, for reports from other goroutines; the
	// tests run hundreds of them.
	env := append(os.Environ(), "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	return &syncHost{t: t, name: name, dir: dir, env: env, bin: bin}
}

// run runs editguard as this host's session and returns its stdout,
// stderr and exit code.
func (h *syncHost) run(stdin string, args ...string) (string, string, int) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.bin, append([]string{"--root", h.dir, "--session", h.name}, args...)...)
	cmd.Env = h.env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			h.t.Errorf("%s: editguard %v: %v", h.name, args, err)
			return out.String(), errb.String(), -1
		}
		code = ee.ExitCode()
	}
	return out.String(), errb.String(), code
}

// must runs editguard and fails the test unless it exits with want.
func (h *syncHost) must(want int, stdin string, args ...string) string {
	h.t.Helper()
	out, errs, code := h.run(stdin, args...)
	if code != want {
		h.t.Fatalf("%s: editguard %s exited %d, want %d\nstdout: %s\nstderr: %s", h.name, strings.Join(args, " "), code, want, out, errs)
	}
	return out
}

// change reads p if it exists, then writes content over it.
func (h *syncHost) change(p, content string) {
	h.t.Helper()
	h.run("", "read", p)
	h.must(0, content, "write", p, "--yes")
}

func (h *syncHost) read(p string) string {
	data, err := os.ReadFile(filepath.Join(h.dir, p))
	if err != nil {
		return "(missing)"
	}
	return string(data)
}

// jsonError decodes the {"error": {...}} object of a failed --json command.
func jsonError(t *testing.T, out string) (code string, details map[string]any) {
	t.Helper()
	var v struct {
		Error struct {
			Code    string         `json:"code"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("output is not a JSON error: %v\n%s", err, out)
	}
	return v.Error.Code, v.Error.Details
}

type publishOut struct {
	OldHead string `json:"old_head"`
	NewHead string `json:"new_head"`
	Files   []struct {
		Path     string `json:"path"`
		Op       string `json:"op"`
		SHA256   string `json:"sha256"`
		FirstSeq uint64 `json:"first_seq"`
	} `json:"files"`
	Attempts int `json:"attempts"`
}

type pullOut struct {
	Head    string `json:"head"`
	Updated []struct {
		Path string `json:"path"`
		Op   string `json:"op"`
	} `json:"updated"`
	Conflicts []struct {
		Path   string `json:"path"`
		Reason string `json:"reason"`
	} `json:"conflicts"`
}

func decode[T any](t *testing.T, out string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	return v
}

// blobAt returns p's content at rev in the bare repository.
func blobAt(bare, rev, p string) (string, bool) {
	out, err := exec.Command("git", "--git-dir", bare, "show", rev+":"+p).Output()
	if err != nil {
		return "", false
	}
	return string(out), true
}

func TestSyncThreeHostsOverGitDaemon(t *testing.T) {
	syncEnv(t)
	base := t.TempDir()
	bare := sharedRepo(t, base, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n", "shared.txt": "shared\n"})
	d := startDaemon(t, base, 0)
	h1, h2, h3 := cloneHost(t, d.url("shared.git"), "h1"), cloneHost(t, d.url("shared.git"), "h2"), cloneHost(t, d.url("shared.git"), "h3")

	// Disjoint changes from all three land.
	h1.change("a.txt", "a by h1\n")
	h1.change("new/h1.txt", "new by h1\n")
	h2.change("b.txt", "b by h2\n")
	h3.change("c.txt", "c by h3\n")
	for _, h := range []*syncHost{h1, h2, h3} {
		r := decode[publishOut](t, h.must(0, "", "publish", "--json"))
		if r.NewHead == r.OldHead || len(r.Files) == 0 {
			t.Fatalf("%s: publish = %+v, want a new commit", h.name, r)
		}
	}
	for p, want := range map[string]string{"a.txt": "a by h1\n", "new/h1.txt": "new by h1\n", "b.txt": "b by h2\n", "c.txt": "c by h3\n"} {
		if got, _ := blobAt(bare, "main", p); got != want {
			t.Errorf("remote %s = %q, want %q", p, got, want)
		}
	}

	// h2 and h3 change shared.txt too; h1 publishes its change first.
	h2.change("shared.txt", "shared by h2\n")
	h2.change("b2.txt", "another file of h2\n")
	h3.change("shared.txt", "shared by h3\n")
	h1.must(0, "", "pull")
	h1.change("shared.txt", "shared by h1\n")
	h1.must(0, "", "publish")
	head := testutil.GitIn(t, bare, "rev-parse", "main")

	// h2's change to a file someone else published is refused, and
	// nothing of its publish lands.
	out, errs, code := h2.run("", "publish", "--json")
	if code != exitConflict {
		t.Fatalf("h2: publish exited %d, want %d\n%s%s", code, exitConflict, out, errs)
	}
	ecode, details := jsonError(t, out)
	files, _ := details["files"].([]any)
	if ecode != "STALE_FILE" || len(files) != 1 || files[0].(map[string]any)["path"] != "shared.txt" {
		t.Fatalf("h2: publish error %s %v, want STALE_FILE for shared.txt", ecode, details)
	}
	if !strings.Contains(files[0].(map[string]any)["changes"].(string), "+shared by h1") {
		t.Fatalf("h2: STALE_FILE shows %v, want the upstream change", files[0])
	}
	if got := testutil.GitIn(t, bare, "rev-parse", "main"); got != head {
		t.Fatalf("remote head moved from %s to %s", head, got)
	}
	if _, ok := blobAt(bare, "main", "b2.txt"); ok {
		t.Fatalf("b2.txt landed with a refused publish")
	}
	// The text form shows the upstream change too.
	if _, errs, code := h2.run("", "publish"); code != exitConflict || !strings.Contains(errs, "+shared by h1") {
		t.Fatalf("h2: publish exited %d with %q", code, errs)
	}

	// h3 pulls: the files it did not touch are updated, shared.txt (its
	// own change) is left as it is and listed; exit 3.
	out, errs, code = h3.run("", "pull", "--json")
	if code != exitConflict {
		t.Fatalf("h3: pull exited %d, want %d\n%s%s", code, exitConflict, out, errs)
	}
	pr := decode[pullOut](t, out)
	var updated []string
	for _, f := range pr.Updated {
		updated = append(updated, f.Path)
	}
	if got := strings.Join(updated, " "); got != "a.txt b.txt new/h1.txt" {
		t.Errorf("h3: pull updated %q, want a.txt b.txt new/h1.txt", got)
	}
	if len(pr.Conflicts) != 1 || pr.Conflicts[0].Path != "shared.txt" || pr.Conflicts[0].Reason != "changed_both" {
		t.Errorf("h3: pull conflicts %+v, want shared.txt", pr.Conflicts)
	}
	for p, want := range map[string]string{"a.txt": "a by h1\n", "b.txt": "b by h2\n", "new/h1.txt": "new by h1\n", "c.txt": "c by h3\n", "shared.txt": "shared by h3\n"} {
		if got := h3.read(p); got != want {
			t.Errorf("h3: %s = %q, want %q", p, got, want)
		}
	}
	// The content the pull replaced is in history.
	if out := h3.must(0, "", "history", "a.txt"); !strings.Contains(out, "pull") {
		t.Errorf("h3: history of a.txt lacks the pull:\n%s", out)
	}
	// h2 gives up its version of shared.txt; its other file then lands.
	h2.must(0, "", "pull", "--discard-local")
	if got := h2.read("shared.txt"); got != "shared by h1\n" {
		t.Fatalf("h2: shared.txt = %q after pull --discard-local", got)
	}
	h2.must(0, "", "publish")
	if got, _ := blobAt(bare, "main", "b2.txt"); got != "another file of h2\n" {
		t.Fatalf("remote b2.txt = %q", got)
	}
	if got, _ := blobAt(bare, "main", "shared.txt"); got != "shared by h1\n" {
		t.Fatalf("remote shared.txt = %q", got)
	}
}

// sum is the hex SHA-256 of s.
func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func TestPublishRaceThreeHosts(t *testing.T) {
	syncEnv(t)
	duration := 10 * time.Second
	if os.Getenv("EDITGUARD_FULL") != "" {
		duration = 2 * time.Minute
	}
	base := t.TempDir()
	bare := sharedRepo(t, base, map[string]string{"hot-0.txt": "0\n", "hot-1.txt": "1\n"})
	d := startDaemon(t, base, 0)
	hosts := []*syncHost{cloneHost(t, d.url("shared.git"), "h1"), cloneHost(t, d.url("shared.git"), "h2"), cloneHost(t, d.url("shared.git"), "h3")}

	type ack struct {
		host string
		out  publishOut
	}
	acks := make(chan ack, 1000)
	stats := make(chan [3]int, len(hosts)) // published, refused (STALE_FILE), busy
	deadline := time.Now().Add(duration)
	for hi, h := range hosts {
		go func() {
			var st [3]int
			defer func() { stats <- st }()
			for i := 0; time.Now().Before(deadline); i++ {
				// A third of the changes go to the host's own file, the
				// rest to the two files every host changes.
				p := fmt.Sprintf("own-%s.txt", h.name)
				if i%3 != 0 {
					p = fmt.Sprintf("hot-%d.txt", (i+hi)%2)
				}
				h.run("", "read", p)
				if _, _, code := h.run(fmt.Sprintf("%s %d\n", h.name, i), "write", p, "--yes"); code != 0 {
					continue
				}
				out, _, code := h.run("", "publish", "--json")
				switch code {
				case 0:
					st[0]++
					acks <- ack{h.name, decode[publishOut](t, out)}
				case exitConflict:
					// Another host published the file first: take its
					// version (this one goes to history) and go on.
					st[1]++
					h.run("", "pull", "--discard-local")
				default:
					if c, _ := jsonError(t, out); c != "BUSY" {
						t.Errorf("%s: publish failed: %s", h.name, out)
						return
					}
					st[2]++
				}
			}
		}()
	}
	var total [3]int
	for range hosts {
		s := <-stats
		for i := range total {
			total[i] += s[i]
		}
	}
	close(acks)
	var all []ack
	retried := 0
	for a := range acks {
		all = append(all, a)
		retried += a.out.Attempts - 1
	}
	final := testutil.GitIn(t, bare, "rev-parse", "main")
	t.Logf("in %v: %d publishes acknowledged (%d lost the lease and retried), %d refused with STALE_FILE, %d gave up with BUSY",
		duration, total[0], retried, total[1], total[2])
	if total[0] < 3 {
		t.Fatalf("only %d publishes acknowledged", total[0])
	}

	// Each host's ledger, by seq, to find what each change was based on.
	ledgers := map[string]map[uint64]map[string]any{}
	for _, h := range hosts {
		m := map[uint64]map[string]any{}
		for _, line := range logLines(t, h.must(0, "", "log", "--json")) {
			var r map[string]any
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatal(err)
			}
			m[uint64(r["seq"].(float64))] = r
		}
		ledgers[h.name] = m
	}
	// Every acknowledged publish is in the final history, holds the
	// content it reported, and was built on the content its first change
	// read: no change was made over content its author did not see.
	landed := map[string]map[string]bool{} // path -> commits that changed it
	checked := 0
	for _, a := range all {
		if a.out.NewHead == a.out.OldHead {
			continue
		}
		if _, err := exec.Command("git", "--git-dir", bare, "merge-base", "--is-ancestor", a.out.NewHead, final).Output(); err != nil {
			t.Errorf("acknowledged publish %s of %s is not reachable from the final head", a.out.NewHead, a.host)
		}
		for _, f := range a.out.Files {
			if f.Op == "unchanged" {
				continue
			}
			got, ok := blobAt(bare, a.out.NewHead, f.Path)
			if !ok || sum(got) != f.SHA256 {
				t.Errorf("commit %s: %s = %q, want the content published", a.out.NewHead, f.Path, got)
			}
			first := ledgers[a.host][f.FirstSeq]
			before, existed := blobAt(bare, a.out.NewHead+"^", f.Path)
			want, _ := first["sha256_before"].(string)
			if obs, _ := first["observed"].(map[string]any); obs != nil && obs["exists"] == false {
				want = ""
			}
			if got := map[bool]string{true: sum(before), false: ""}[existed]; got != want {
				t.Errorf("commit %s by %s replaced %s content %.12s, but its change was made on %.12s", a.out.NewHead, a.host, f.Path, got, want)
			}
			checked++
			if landed[f.Path] == nil {
				landed[f.Path] = map[string]bool{}
			}
			landed[f.Path][a.out.NewHead] = true
		}
	}
	t.Logf("checked %d file changes in acknowledged commits against the ledger's bases, on %d files", checked, len(landed))
	// Nothing but acknowledged publishes changed a file: every commit of
	// the branch that touched it is one of them, so every acknowledged
	// change stands unless a later acknowledged publish of the same file
	// replaced it.
	for p, commits := range landed {
		log := testutil.GitIn(t, bare, "log", "--format=%H", "main", "--", p)
		var unacked []string
		n := 0
		for _, c := range strings.Fields(log) {
			if testutil.GitIn(t, bare, "log", "-1", "--format=%s", c) == "initial" {
				continue
			}
			n++
			if !commits[c] {
				unacked = append(unacked, c)
			}
		}
		if len(unacked) > 0 || n != len(commits) {
			t.Errorf("%s: %d commits changed it, %d acknowledged; not acknowledged: %v", p, n, len(commits), unacked)
		}
	}
}

func TestPublishFailures(t *testing.T) {
	syncEnv(t)
	base := t.TempDir()
	bare := sharedRepo(t, base, map[string]string{"a.txt": "a\n"})
	d := startDaemon(t, base, 0)
	h := cloneHost(t, d.url("shared.git"), "h1")
	h.change("a.txt", "a by h1\n")
	head := testutil.GitIn(t, bare, "rev-parse", "main")
	hook := filepath.Join(bare, "hooks", "pre-receive")

	t.Run("git missing", func(t *testing.T) {
		empty := *h
		empty.env = append(append([]string(nil), h.env...), "PATH="+t.TempDir())
		for _, cmd := range []string{"publish", "pull"} {
			out, _, code := empty.run("", cmd, "--json")
			if c, details := jsonError(t, out); code != exitError || c != "GIT" {
				t.Fatalf("%s without git: exit %d, %s %v; want exit 1, GIT", cmd, code, c, details)
			}
		}
	})

	t.Run("remote unreachable", func(t *testing.T) {
		l, _ := net.Listen("tcp", "127.0.0.1:0")
		closed := "git://" + l.Addr().String() + "/shared.git"
		l.Close()
		out, _, code := h.run("", "publish", "--remote", closed, "--branch", "main", "--json")
		c, details := jsonError(t, out)
		if code != exitError || c != "REMOTE" || details["reason"] != "unreachable" {
			t.Fatalf("publish to a closed port: exit %d, %s %v", code, c, details)
		}
	})

	t.Run("lease lost at every attempt", func(t *testing.T) {
		// The remote moves the branch itself while each push is under
		// way: the push's update then finds it elsewhere.
		script := "#!/bin/sh\nunset GIT_QUARANTINE_PATH GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES\n" +
			"export GIT_AUTHOR_NAME=hook GIT_AUTHOR_EMAIL=hook@remote GIT_COMMITTER_NAME=hook GIT_COMMITTER_EMAIL=hook@remote\n" +
			"c=$(git commit-tree refs/heads/main^{tree} -p refs/heads/main -m moved-by-hook) && git update-ref refs/heads/main $c\n"
		if err := os.WriteFile(hook, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(hook)
		out, _, code := h.run("", "publish", "--json")
		c, details := jsonError(t, out)
		if code != exitError || c != "BUSY" || details["attempts"] != float64(5) {
			t.Fatalf("publish against a moving branch: exit %d, %s %v; want BUSY after 5 attempts", code, c, details)
		}
		// Only the hook's commits are on the branch, and a.txt is as it was.
		if log := testutil.GitIn(t, bare, "log", "--format=%s", head+"..main"); log != strings.TrimSpace(strings.Repeat("moved-by-hook\n", 5)) {
			t.Fatalf("branch history since the test began:\n%s", log)
		}
		if got, _ := blobAt(bare, "main", "a.txt"); got != "a\n" {
			t.Fatalf("remote a.txt = %q", got)
		}
		head = testutil.GitIn(t, bare, "rev-parse", "main")
	})

	t.Run("remote goes away mid-push", func(t *testing.T) {
		marker := filepath.Join(t.TempDir(), "push-arrived")
		script := fmt.Sprintf("#!/bin/sh\ntouch %q\nsleep 60\n", marker)
		if err := os.WriteFile(hook, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		type result struct {
			out  string
			code int
		}
		done := make(chan result, 1)
		go func() {
			out, _, code := h.run("", "publish", "--json")
			done <- result{out, code}
		}()
		deadline := time.Now().Add(30 * time.Second)
		for {
			if _, err := os.Stat(marker); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the push never reached the remote's hook")
			}
			time.Sleep(10 * time.Millisecond)
		}
		d.stop() // the daemon, its receive-pack and the hook
		r := <-done
		c, details := jsonError(t, r.out)
		if r.code != exitError || c != "REMOTE" || details["reason"] != "unreachable" {
			t.Fatalf("publish cut off mid-push: exit %d, %s %v", r.code, c, details)
		}
		if got := testutil.GitIn(t, bare, "rev-parse", "main"); got != head {
			t.Fatalf("remote head = %s, want the old head %s", got, head)
		}
		// Once the remote is back, the publish goes through, once.
		os.Remove(hook)
		d = startDaemon(t, base, d.port)
		pr := decode[publishOut](t, h.must(0, "", "publish", "--json"))
		if pr.OldHead != head || len(pr.Files) != 1 || pr.Files[0].Op != "modified" {
			t.Fatalf("publish after the remote came back = %+v", pr)
		}
		if got, _ := blobAt(bare, "main", "a.txt"); got != "a by h1\n" {
			t.Fatalf("remote a.txt = %q", got)
		}
	})

	// Every attempt is in the ledger.
	var codes []string
	for _, line := range logLines(t, h.must(0, "", "log", "--reverse", "--json", "--tool", "publish")) {
		var r struct {
			Outcome   string `json:"outcome"`
			ErrorCode string `json:"error_code"`
		}
		json.Unmarshal([]byte(line), &r)
		codes = append(codes, r.Outcome+":"+r.ErrorCode)
	}
	if got := strings.Join(codes, " "); got != "error:GIT error:REMOTE error:BUSY error:REMOTE ok:" {
		t.Fatalf("publish records: %s", got)
	}
}
