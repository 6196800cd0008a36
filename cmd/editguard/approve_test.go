package main

import (
	"bufio"
	"context"
	"strings"
	"testing"

	"github.com/editguard/editguard"
)

func TestPrompterAnswers(t *testing.T) {
	tests := []struct {
		input string
		want  bool
	}{
		{"y\n", true},
		{"yes\n", true},
		{" Y \n", true},
		{"n\n", false},
		{"\n", false},
		{"", false}, // end of input
		{"yep\n", false},
		{"no\ny\n", false}, // only the first line counts
	}
	for _, tt := range tests {
		var out strings.Builder
		p := &prompter{in: bufio.NewReader(strings.NewReader(tt.input)), out: &out}
		got, err := p.Approve(context.Background(), &editguard.Preview{Path: "a", Diff: "--- a/a\n+++ b/a\n@@ -1 +1 @@\n-x\n+y\n"})
		if err != nil {
			t.Fatalf("Approve(%q) error = %v", tt.input, err)
		}
		if got != tt.want {
			t.Errorf("Approve(%q) = %v, want %v", tt.input, got, tt.want)
		}
		if !strings.Contains(out.String(), "Apply this change? [y/N] ") || !strings.Contains(out.String(), "-x\n+y\n") {
			t.Errorf("Approve(%q) printed %q, want the diff and the question", tt.input, out.String())
		}
	}
}

func TestWriteDiffColor(t *testing.T) {
	diff := "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n ctx\n-old\n+new\n"
	var plain, color strings.Builder
	writeDiff(&plain, diff, false)
	if plain.String() != diff {
		t.Errorf("writeDiff(color=false) = %q, want %q", plain.String(), diff)
	}
	writeDiff(&color, diff, true)
	want := ansiBold + "--- a/f" + ansiReset + "\n" +
		ansiBold + "+++ b/f" + ansiReset + "\n" +
		ansiCyan + "@@ -1,2 +1,2 @@" + ansiReset + "\n" +
		" ctx\n" +
		ansiRed + "-old" + ansiReset + "\n" +
		ansiGreen + "+new" + ansiReset + "\n"
	if color.String() != want {
		t.Errorf("writeDiff(color=true) = %q, want %q", color.String(), want)
	}
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		args    []string
		wantPos []string
		wantOld string
		wantAll bool
	}{
		{[]string{"a", "--old", "x"}, []string{"a"}, "x", false},
		{[]string{"--old", "x", "a", "--all"}, []string{"a"}, "x", true},
		{[]string{"--old", "-x", "a"}, []string{"a"}, "-x", false},
		{[]string{"--all", "--", "-a", "--old"}, []string{"-a", "--old"}, "", true},
		{[]string{"a", "b"}, []string{"a", "b"}, "", false},
	}
	for _, tt := range tests {
		fs := newFlagSet("edit")
		old := fs.String("old", "", "")
		all := fs.Bool("all", false, "")
		pos, err := parseArgs(fs, tt.args)
		if err != nil {
			t.Fatalf("parseArgs(%q) error = %v", tt.args, err)
		}
		if strings.Join(pos, "|") != strings.Join(tt.wantPos, "|") || *old != tt.wantOld || *all != tt.wantAll {
			t.Errorf("parseArgs(%q) = %q, old=%q all=%v; want %q, old=%q all=%v",
				tt.args, pos, *old, *all, tt.wantPos, tt.wantOld, tt.wantAll)
		}
	}
}
