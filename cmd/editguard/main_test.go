package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the scripts run "editguard" as a real process: the test
// binary re-executes itself and calls run.
func TestMain(m *testing.M) {
	// verify remembers what it proved in the user's cache directory: the
	// tests' own, not the user's.
	var tm testscript.TestingM = m
	if os.Getenv("EDITGUARD_TEST_CACHE") == "" {
		cache, err := os.MkdirTemp("", "editguard-test-cache-")
		if err != nil {
			panic(err)
		}
		os.Setenv("EDITGUARD_TEST_CACHE", cache)
		os.Setenv("XDG_CACHE_HOME", cache)
		tm = cleanAfter{m, cache}
	}
	testscript.Main(tm, map[string]func(){
		"editguard": func() {
			os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
		},
	})
}

// cleanAfter removes dir once the tests have run (testscript.Main exits).
type cleanAfter struct {
	testscript.TestingM
	dir string
}

func (c cleanAfter) Run() int {
	code := c.TestingM.Run()
	os.RemoveAll(c.dir)
	return code
}

// TestScripts runs the end-to-end scripts in testdata/script.
func TestScripts(t *testing.T) {
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
