package ui

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/editguard/editguard"
)

// fixture is a workspace, the page served for it on 127.0.0.1, and the
// session the page's changes are made by.
type fixture struct {
	dir string
	w   *editguard.Workspace
	ui  *editguard.Session
	srv *Server
	hs  *httptest.Server
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	w, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return serveFixture(t, dir, w)
}

func serveFixture(t *testing.T, dir string, w *editguard.Workspace) *fixture {
	t.Helper()
	f := &fixture{dir: w.Dir(), w: w, ui: w.NewSession("ui-test")}
	f.srv = New(w, f.ui, &Options{Poll: 50 * time.Millisecond})
	f.hs = httptest.NewServer(f.srv.Handler())
	t.Cleanup(func() {
		f.hs.CloseClientConnections()
		f.hs.Close()
		f.srv.Close()
		w.Close()
	})
	return f
}

// client returns an HTTP client that entered the page with its token, so
// that it carries the cookie.
func (f *fixture) client(t *testing.T) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := c.Get(f.srv.URL(f.hs.Listener.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("entering with the token: %s", resp.Status)
	}
	return c
}

// get fetches path with c and returns the status and body.
func get(t *testing.T, c *http.Client, base, path string) (int, string) {
	t.Helper()
	resp, err := c.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// post sends a form as the page itself would (same Origin).
func post(t *testing.T, c *http.Client, base, path string, form url.Values) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// write writes content to p as session s, over whatever is there.
func write(t *testing.T, s *editguard.Session, p, content string) *editguard.Result {
	t.Helper()
	ctx := context.Background()
	var opts *editguard.WriteOptions
	st, _, err := s.Workspace().Current(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Exists {
		opts = &editguard.WriteOptions{Precondition: &editguard.Precondition{ExpectedSHA256: st.SHA256}}
	}
	res, err := s.Write(ctx, p, content, opts)
	if err != nil {
		t.Fatalf("write %s: %v", p, err)
	}
	return res
}

func readDisk(t *testing.T, dir, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, p))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// versionWith returns the history version of p that keeps content.
func versionWith(t *testing.T, w *editguard.Workspace, p, content string) string {
	t.Helper()
	vs, err := w.History(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if !v.Absent && v.SHA256 == sum(content) {
			return v.ID
		}
	}
	t.Fatalf("no version of %s holds %q", p, content)
	return ""
}

// lastSeq returns the seq of the ledger's last record.
func lastSeq(t *testing.T, w *editguard.Workspace) uint64 {
	t.Helper()
	var seq uint64
	if err := w.Log(editguard.LogFilter{Last: 1}, func(r *editguard.LedgerRecord) error {
		seq = r.Seq
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return seq
}
