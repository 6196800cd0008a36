//go:build unix

package hookwire

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	var b bytes.Buffer
	ev := []byte("{\"session_id\":\"x\"}\n\x00binary\n")
	if err := WriteRequest(&b, &Request{Root: "/r/oo t", Client: "gemini", FailOpen: true, Event: ev}); err != nil {
		t.Fatal(err)
	}
	r, err := ReadRequest(&b)
	if err != nil || r.Root != "/r/oo t" || r.Client != "gemini" || !r.FailOpen || !bytes.Equal(r.Event, ev) {
		t.Fatalf("request = %+v, %v", r, err)
	}
	if err := WriteRequest(&b, &Request{Client: "a b"}); err == nil {
		t.Fatal("a client name with a space was written")
	}
	for _, want := range []*Response{
		{Code: 2, Stdout: []byte("{\"decision\":\"deny\"}\n"), Stderr: []byte("why\n")},
		{Code: 0},
		{Retry: true},
	} {
		b.Reset()
		WriteResponse(&b, want)
		got, err := ReadResponse(&b)
		if err != nil || got.Retry != want.Retry || got.Code != want.Code || !bytes.Equal(got.Stdout, want.Stdout) || !bytes.Equal(got.Stderr, want.Stderr) {
			t.Fatalf("response = %+v, %v; want %+v", got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "0 5\nabc", "x 0\n", "300 0\n", "0 -1\n"} {
		if _, err := ReadResponse(strings.NewReader(bad)); err == nil {
			t.Errorf("ReadResponse(%q) succeeded", bad)
		}
	}
	for _, bad := range []string{"editguard-hook/2 claude-code 0\n{}", "editguard-hook/1 claude-code\n{}", "editguard-hook/1 claude-code 2\n{}", "no newline"} {
		if _, err := ReadRequest(strings.NewReader(bad)); err == nil {
			t.Errorf("ReadRequest(%q) succeeded", bad)
		}
	}
}

func TestSocket(t *testing.T) {
	run := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", run)
	root := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	s1, dir, real, err := Socket(root)
	if err != nil {
		t.Fatal(err)
	}
	s2, _, real2, _ := Socket(link)
	s3, _, _, _ := Socket(t.TempDir())
	if want, _ := filepath.EvalSymlinks(root); real != want || real2 != want {
		t.Errorf("real roots %q %q, want %q", real, real2, want)
	}
	if s1 != s2 || s1 == s3 || filepath.Dir(s1) != dir {
		t.Fatalf("sockets %q %q %q in %q: one root must give one socket, two roots two", s1, s2, s3, dir)
	}
	if err := CheckDir(dir); err == nil {
		t.Fatal("CheckDir of a missing directory succeeded")
	}
	if err := MakeDir(dir); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o750)
	if err := CheckDir(dir); err == nil || !strings.Contains(err.Error(), "open to other users") {
		t.Fatalf("CheckDir of a 0750 directory: %v", err)
	}
	os.Remove(dir)
	os.Symlink(t.TempDir(), dir)
	if err := MakeDir(dir); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("MakeDir over a symlink: %v", err)
	}
}

func TestJournalRoundTrip(t *testing.T) {
	var req bytes.Buffer
	if err := WriteJournalRequest(&req, "/r/o ot", JournalQuery{ID: "abc", Seq: 42}); err != nil {
		t.Fatal(err)
	}
	r, err := ReadRequest(&req)
	if err != nil || r.Journal == nil || *r.Journal != (JournalQuery{ID: "abc", Seq: 42}) || r.Root != "/r/o ot" {
		t.Fatalf("request %+v, %v", r, err)
	}
	changes := []JournalChange{{Path: "a\nb", Created: true}, {Path: "d/\xff\xfe"}, {Path: "x y"}}
	now, ok, got, err := ParseJournal(AppendJournal(nil, JournalQuery{ID: "id", Seq: 7}, true, changes))
	if err != nil || !ok || now != (JournalQuery{ID: "id", Seq: 7}) || !reflect.DeepEqual(got, changes) {
		t.Fatalf("answer %v %v %+v %v", now, ok, got, err)
	}
	if now, ok, got, err := ParseJournal(AppendJournal(nil, JournalQuery{}, false, nil)); err != nil || ok || now != (JournalQuery{}) || got != nil {
		t.Fatalf("empty answer %v %v %+v %v", now, ok, got, err)
	}
	for _, bad := range []string{"", "id 1 2\n", "id x 1\n", "id 1 1\nmpath", "id 1 1\nzpath\x00", "id 1 1\nm\x00"} {
		if _, _, _, err := ParseJournal([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestCommandRoundTrip(t *testing.T) {
	var req bytes.Buffer
	body := []byte("\x00\xff a body\nwith lines")
	if err := WriteCommandRequest(&req, "/r/o ot", "b1d", body); err != nil {
		t.Fatal(err)
	}
	r, err := ReadRequest(&req)
	if err != nil || r.Build != "b1d" || r.Root != "/r/o ot" || !bytes.Equal(r.Command, body) || r.Journal != nil || r.Client != "" {
		t.Fatalf("request %+v, %v", r, err)
	}
	for _, build := range []string{"", "a b", "a\nb"} {
		if err := WriteCommandRequest(io.Discard, "/r", build, nil); err == nil {
			t.Errorf("build %q written", build)
		}
	}
	if _, err := ReadRequest(strings.NewReader(CommandProtocol + " b")); err == nil {
		t.Error("a command request without its root was read")
	}
}
