package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"90m":                       now.Add(-90 * time.Minute),
		"3d":                        now.AddDate(0, 0, -3),
		"0s":                        now,
		"2026-11-25T08:00:00Z":      time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC),
		"2026-11-25T08:00:00+01:00": time.Date(2026, 11, 25, 7, 0, 0, 0, time.UTC),
		"2026-11-25":                time.Date(2026, 11, 25, 0, 0, 0, 0, time.Local),
		"2026-11-25 08:30":          time.Date(2026, 11, 25, 8, 30, 0, 0, time.Local),
	} {
		if got, err := parseSince(in, now); err != nil || !got.Equal(want) {
			t.Errorf("parseSince(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"yesterday", "-3h", "-2d", "2026-13-01", ""} {
		if _, err := parseSince(bad, now); err == nil {
			t.Errorf("parseSince(%q) accepted", bad)
		}
	}
}

// TestLogSinceAndTimes checks log --since (alone and with -n) and that
// log and history print a time the same way, ISO 8601 with the zone.
func TestLogSinceAndTimes(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "a.txt", "one\n")
	cliRun(t, root, "read", "a.txt")
	if code, _, errs := cliRun(t, root, "edit", "a.txt", "--old", "one", "--new", "two"); code != 0 {
		t.Fatal(errs)
	}
	_, out, _ := cliRun(t, root, "log")
	iso := regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)`)
	logTime := iso.FindString(out)
	_, hist, _ := cliRun(t, root, "history", "a.txt")
	// The version is saved just before the change's record is written:
	// the two may fall on either side of a second.
	lt, err1 := time.Parse(time.RFC3339, logTime)
	ht, err2 := time.Parse(time.RFC3339, iso.FindString(hist))
	if err1 != nil || err2 != nil || lt.Sub(ht).Abs() > time.Second {
		t.Errorf("log and history print times differently:\n%s\n%s", out, hist)
	}
	for _, args := range [][]string{{"log", "--since", "1h"}, {"log", "--since", "1h", "-n", "5"}} {
		if _, out, _ := cliRun(t, root, args...); !strings.Contains(out, "edit_file") {
			t.Errorf("%v lacks the edit:\n%s", args, out)
		}
	}
	for _, args := range [][]string{{"log", "--since", "2999-01-01"}, {"log", "--since", "2999-01-01", "-n", "5"}} {
		if _, out, _ := cliRun(t, root, args...); strings.Contains(out, "edit_file") {
			t.Errorf("%v lists the edit made before:\n%s", args, out)
		}
	}
	if code, _, errs := cliRun(t, root, "log", "--since", "yesterday"); code != exitUsage || !strings.Contains(errs, "--since") {
		t.Errorf("log --since yesterday: exit %d, %s", code, errs)
	}
}

// TestLogTiming: log --timing shows how long each change took.
func TestLogTiming(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "a.txt", "one\n")
	cliRun(t, root, "read", "a.txt")
	if code, _, errs := cliRun(t, root, "edit", "a.txt", "--old", "one", "--new", "two"); code != 0 {
		t.Fatal(errs)
	}
	_, out, _ := cliRun(t, root, "log", "--timing")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "TOTAL_MS  LOCK_MS  CHECK_MS  APPROVAL_MS  DURABLE_MS") {
		t.Fatalf("log --timing:\n%s", out)
	}
	if !regexp.MustCompile(`edit_file\s+a\.txt\s+ok\s+\S+\s+v000001\s+\d+\.\d{3}\s+\d+\.\d{3}`).MatchString(lines[1]) {
		t.Errorf("log --timing row has no times:\n%s", out)
	}
}

// logLines returns the records log --json printed in out, in its order,
// each as the JSON the ledger stores.
func logLines(t testing.TB, out string) []string {
	t.Helper()
	var v struct {
		Status  string            `json:"status"`
		Records []json.RawMessage `json:"records"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Status != "ok" {
		t.Fatalf("log --json printed no {\"status\": \"ok\", \"records\": [...]} (%v):\n%s", err, out)
	}
	lines := make([]string, len(v.Records))
	for i, r := range v.Records {
		lines[i] = string(r)
	}
	return lines
}
