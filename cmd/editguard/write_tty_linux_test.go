package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteSaysItReadsTheTerminal runs write with a terminal on standard
// input and no --content: it says on stderr that it reads standard input
// before it reads (the content is typed only once the line is there),
// and then writes what was typed.
func TestWriteSaysItReadsTheTerminal(t *testing.T) {
	root := t.TempDir()
	master, slave := openPTY(t)
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer errR.Close()
	done := make(chan int, 1)
	go func() {
		defer errW.Close()
		done <- run(context.Background(), []string{"--root", root, "write", "new.txt", "--yes"}, slave, io.Discard, errW)
	}()
	line, err := bufio.NewReader(errR).ReadString('\n')
	if err != nil || !strings.Contains(line, "reading the new content of new.txt from standard input") || !strings.Contains(line, "Ctrl-D") {
		t.Fatalf("write on a terminal first said %q (%v)", line, err)
	}
	// Typed only now: the line above came before write read anything.
	if _, err := master.WriteString("typed\n\x04"); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != 0 {
		t.Fatalf("write: exit %d", code)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "new.txt")); string(b) != "typed\n" {
		t.Errorf("new.txt holds %q, want what was typed", b)
	}
}

// TestWriteContentFlag writes --content, reading nothing from standard
// input and saying nothing about it, even on a terminal.
func TestWriteContentFlag(t *testing.T) {
	root := t.TempDir()
	_, slave := openPTY(t)
	var errb syncBuffer
	if code := run(context.Background(), []string{"--root", root, "write", "c.txt", "--content", "given\n", "--yes"}, slave, io.Discard, &errb); code != 0 {
		t.Fatalf("write --content: exit %d\n%s", code, errb.String())
	}
	if b, _ := os.ReadFile(filepath.Join(root, "c.txt")); string(b) != "given\n" {
		t.Errorf("c.txt holds %q, want the --content", b)
	}
	if strings.Contains(errb.String(), "standard input") {
		t.Errorf("write --content spoke of standard input: %q", errb.String())
	}
}
