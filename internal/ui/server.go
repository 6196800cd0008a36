// Package ui serves editguard's local web page: the ledger's timeline of
// changes and refusals (live: the page polls for new rows), each change's
// diff, every version of a file with a guarded restore, a session's
// changes with a guarded rewind and the undo of its patches, and the
// ledger's chain status. It reads through the editguard library only
// (Workspace.Log, History, VersionBytes, Current, VerifyLedger) and
// changes files through a Session's guarded operations only.
//
// Every request needs the server's token (in the URL once, then in a
// cookie); every POST also needs a same-origin request. Pages are
// html/template output under a strict Content-Security-Policy.
package ui

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/editguard/editguard"
)

// Options configure a Server. A nil *Options means the zero value.
type Options struct {
	// Token is the secret every request must carry; "" makes a random one.
	Token string
	// Poll is how often the server looks at the ledger's end to verify
	// the chain again when records arrived (0 means 200 ms). The page
	// itself asks for new rows every second.
	Poll time.Duration
	// PageSize is how many timeline rows a page shows (0 means 100).
	PageSize int
}

// Reader is what the page reads of its workspace: read-only methods of
// the root package's *editguard.Workspace, which New is given. None of
// them changes a file or records anything.
type Reader interface {
	Log(f editguard.LogFilter, fn func(*editguard.LedgerRecord) error) error
	VerifyLedger() (int, error)
	History(p string) ([]editguard.Version, error)
	VersionBytes(p, id string) ([]byte, error)
	Current(p string) (editguard.FileState, []byte, error)
}

var _ Reader = (*editguard.Workspace)(nil)

// Server is the web page of one workspace. It reads through a Reader; its
// guarded changes (restore, rewind, undo) are made by the session it is
// given.
type Server struct {
	w      Reader
	s      *editguard.Session
	token  string
	cookie string
	opts   Options
	stats  statsCache
	sums   summaryCache
	live   *hub
	trust  *verifier
	mux    *http.ServeMux
}

// New returns the page of the workspace w reads (a *editguard.Workspace),
// whose changes s makes. Close stops its background work.
func New(w Reader, s *editguard.Session, opts *Options) *Server {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Token == "" {
		o.Token = newToken()
	}
	if o.Poll <= 0 {
		o.Poll = 200 * time.Millisecond
	}
	if o.PageSize <= 0 {
		o.PageSize = 100
	}
	sum := sha256.Sum256([]byte(o.Token))
	srv := &Server{w: w, s: s, token: o.Token, opts: o,
		cookie: "editguard_ui_" + hex.EncodeToString(sum[:6])}
	srv.trust = newVerifier(w)
	srv.live = newHub(srv)
	srv.routes()
	return srv
}

// newToken returns 128 random bits as text.
func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Token returns the secret the page's URL carries.
func (s *Server) Token() string { return s.token }

// URL returns the address to open for a server listening on addr.
func (s *Server) URL(addr string) string {
	return "http://" + addr + "/?t=" + url.QueryEscape(s.token)
}

// Close stops the live timeline's polling and the trust checks.
func (s *Server) Close() {
	s.live.close()
	s.trust.close()
}

// Handler returns the page's HTTP handler, every route behind the token
// and the security headers.
func (s *Server) Handler() http.Handler { return s.guard(s.mux) }

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", s.timeline)
	m.HandleFunc("GET /updates", s.updates)
	m.HandleFunc("GET /change/{seq}", s.change)
	m.HandleFunc("GET /change/{seq}/diff", s.changeRaw)
	m.HandleFunc("GET /file", s.file)
	m.HandleFunc("GET /file/diff", s.fileRaw)
	m.HandleFunc("GET /session", s.session)
	m.HandleFunc("POST /restore", s.restore)
	m.HandleFunc("POST /rewind", s.rewind)
	m.HandleFunc("POST /undo", s.undo)
	m.Handle("GET /static/", http.FileServerFS(staticFS))
	s.mux = m
}

// CheckAddr refuses a listening address that is not on the loopback
// interface: the page is for the person at this machine only.
func CheckAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return errors.New("the page listens on the loopback interface only (127.0.0.1 or ::1), not on " + host)
	}
	return nil
}

// Serve serves the page on l until ctx ends.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = hs.Shutdown(sctx)
			hs.Close()
		case <-done:
		}
	}()
	err := hs.Serve(l)
	close(done)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// loopbackHost reports whether a Host header names this machine, so that
// a page of another site, its name rebound to 127.0.0.1, is refused.
func loopbackHost(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	h = strings.Trim(h, "[]")
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
