package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the scripts run "editguard" as a real process: the test
// binary re-executes itself and calls run.
func TestMain(m *testing.M) {
	// verify remembers what it proved in the user's cache directory: the
	// tests' own, not the user's.
	tm := &cleanAfter{TestingM: m}
	if os.Getenv("EDITGUARD_TEST_CACHE") == "" {
		// Go keeps its build cache in the user's cache directory too:
		// the tests that build the programs use the user's, or each
		// run would build the standard library and every dependency
		// again into an empty one.
		if os.Getenv("GOCACHE") == "" {
			if user, err := os.UserCacheDir(); err == nil {
				os.Setenv("GOCACHE", filepath.Join(user, "go-build"))
			}
		}
		cache, err := os.MkdirTemp("", "editguard-test-cache-")
		if err != nil {
			panic(err)
		}
		os.Setenv("EDITGUARD_TEST_CACHE", cache)
		os.Setenv("XDG_CACHE_HOME", cache)
		tm.dirs = append(tm.dirs, cache)
	}
	testscript.Main(tm, map[string]func(){
		"editguard": func() {
			os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
		},
	})
}

// cleanAfter removes its directories, and the programs builtPrograms
// built, once the tests have run (testscript.Main exits).
type cleanAfter struct {
	testscript.TestingM
	dirs []string
}

func (c *cleanAfter) Run() int {
	code := c.TestingM.Run()
	for _, d := range c.dirs {
		os.RemoveAll(d)
	}
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
	return code
}

// builtDir is the directory of the programs builtPrograms built.
var builtDir string

// builtPrograms builds editguard and editguard-hook once per test binary,
// as go build makes them (without -race, and without version control
// information, as the test binary has none: both are "devel"), into one
// directory, as go install puts them, and returns their paths. The tests
// that need the programs as a user has them use these; a test that
// changes one works on a copy (copyPrograms).
var builtPrograms = sync.OnceValues(func() ([2]string, error) {
	dir, err := os.MkdirTemp("", "editguard-programs-")
	if err != nil {
		return [2]string{}, err
	}
	builtDir = dir
	if out, err := exec.Command("go", "build", "-buildvcs=false", "-o", dir, ".", "../editguard-hook").CombinedOutput(); err != nil {
		return [2]string{}, errors.New("go build . ../editguard-hook: " + err.Error() + "\n" + string(out))
	}
	return [2]string{filepath.Join(dir, "editguard"), filepath.Join(dir, hookName)}, nil
})

// copyPrograms copies the programs builtPrograms built into a directory of
// the test's own and returns the copies' paths.
func copyPrograms(t testing.TB) (editguardBin, hookBin string) {
	t.Helper()
	built, err := builtPrograms()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	editguardBin, hookBin = filepath.Join(dir, "editguard"), filepath.Join(dir, hookName)
	for i, to := range []string{editguardBin, hookBin} {
		data, err := os.ReadFile(built[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return editguardBin, hookBin
}

// TestScripts runs the end-to-end scripts in testdata/script.
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits": cmdExits,
		},
	})
}

// cmdExits runs a command and checks its exit code exactly, since "! exec"
// only tells zero from non-zero and the exit codes are part of the CLI's
// contract:
//
//	exits CODE COMMAND [ARG...]
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE COMMAND [ARG...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad code %q", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exits: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", args[1], got, want)
	}
}
