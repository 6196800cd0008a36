package mcpserver

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/editguard/editguard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Endpoint is the path of the streamable HTTP endpoint.
const Endpoint = "/mcp"

// requestOverhead is the part of the request body limit that is not file
// content: JSON-RPC framing, paths, old_string and the like.
const requestOverhead = 4 << 20

// HTTPOptions configure the streamable HTTP endpoint.
type HTTPOptions struct {
	// Token, if set, must be sent as "Authorization: Bearer TOKEN" with
	// every request; others get 401. It is required when the server
	// listens on an address that is not loopback (see CheckListenAddr).
	Token string
	// MaxFileSize is the workspace's file size limit (default
	// editguard.DefaultMaxFileSize). A request body may be that much plus
	// 4 MiB, so that a write of a file at the limit fits and nothing
	// larger is buffered.
	MaxFileSize int64
	// SessionTimeout closes sessions idle for that long, with their read
	// baselines (default 1 hour; negative: never).
	SessionTimeout time.Duration
	// BodyTimeout bounds the time to receive a request body (default 60
	// s): a client that trickles its body is cut off with 408, and holds
	// no memory or slot longer than that.
	BodyTimeout time.Duration
	// MaxLargeBodies is how many request bodies over 1 MiB (or of unknown
	// length) are received and handled at once (default 2); more wait up to
	// half of BodyTimeout for a slot, then get 503 with Retry-After. With the body
	// limit this bounds the memory that large writes can take.
	MaxLargeBodies int
}

// largeBody is the size from which a request body needs a slot.
const largeBody = 1 << 20

// CheckListenAddr refuses to serve on an address reachable from other
// machines without a token: anyone who can reach the port could otherwise
// change files in the workspace.
func CheckListenAddr(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("bad listen address %q: %v", addr, err)
	}
	if isLoopback(host) || token != "" {
		return nil
	}
	return fmt.Errorf("refusing to listen on %q without a token: it is not a loopback address; set --token or EDITGUARD_TOKEN, or listen on 127.0.0.1", addr)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Handler returns the HTTP handler of the streamable endpoint at Endpoint.
// Each MCP session (Mcp-Session-Id) gets its own editguard session.
//
// Requests pass, in order: the bearer token check (when a token is set),
// cross-origin protection (a browser page on another origin cannot post to
// the endpoint), and the SDK's DNS-rebinding protection (on a loopback
// listener a Host header that is not loopback gets 403), then the body
// size limit.
func (s *Server) Handler(opts *HTTPOptions) http.Handler {
	var o HTTPOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = editguard.DefaultMaxFileSize
	}
	switch {
	case o.SessionTimeout == 0:
		o.SessionTimeout = time.Hour
	case o.SessionTimeout < 0:
		o.SessionTimeout = 0
	}
	// The SDK asks getServer for a server on every request, also for
	// requests of an existing session, where only the protocol versions of
	// the answer matter; a new session is only made without a session id.
	probe := s.NewMCPServer()
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if r.Header.Get("Mcp-Session-Id") != "" {
			return probe
		}
		return s.NewMCPServer()
	}, &mcp.StreamableHTTPOptions{
		Logger:              s.opts.Logger,
		SessionTimeout:      o.SessionTimeout,
		MaxRequestBodyBytes: o.MaxFileSize + requestOverhead,
	})
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = time.Minute
	}
	if o.MaxLargeBodies <= 0 {
		o.MaxLargeBodies = 2
	}
	mux := http.NewServeMux()
	mux.Handle(Endpoint, http.NewCrossOriginProtection().Handler(limitBodies(&o, o.MaxFileSize+requestOverhead, h)))
	if o.Token == "" {
		return mux
	}
	return requireToken(o.Token, mux)
}

// limitBodies receives each request body before next sees it: within
// o.BodyTimeout, at most limit bytes, and for large bodies only while
// holding one of o.MaxLargeBodies slots (until next returns), so that slow
// or numerous large bodies cannot pin connections or memory without bound.
func limitBodies(o *HTTPOptions, limit int64, next http.Handler) http.Handler {
	slots := make(chan struct{}, o.MaxLargeBodies)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			next.ServeHTTP(w, r)
			return
		}
		if r.ContentLength > limit {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		if r.ContentLength < 0 || r.ContentLength > largeBody {
			t := time.NewTimer(o.BodyTimeout / 2)
			select {
			case slots <- struct{}{}:
				t.Stop()
				defer func() { <-slots }()
			case <-t.C:
				w.Header().Set("Retry-After", "5")
				http.Error(w, "too many large requests at once; retry shortly", http.StatusServiceUnavailable)
				return
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		rc := http.NewResponseController(w)
		rc.SetReadDeadline(time.Now().Add(o.BodyTimeout))
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
		if err != nil {
			// The deadline stays: the connection is closed, not drained.
			w.Header().Set("Connection", "close")
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			} else {
				http.Error(w, "request body not received in time", http.StatusRequestTimeout)
			}
			return
		}
		// The body is in; the connection may now stay open as long as the
		// call takes (an approval, an event stream).
		rc.SetReadDeadline(time.Time{})
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// requireToken lets through only requests that carry the bearer token. The
// comparison takes the same time whatever the token sent, so that timing
// does not reveal it.
func requireToken(token string, next http.Handler) http.Handler {
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="editguard"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Serve serves the endpoint on ln until ctx is done, then shuts down
// gracefully: it stops accepting, lets calls in progress finish for up to
// five seconds, and closes the rest.
func (s *Server) Serve(ctx context.Context, ln net.Listener, opts *HTTPOptions) error {
	hs := &http.Server{
		Handler:           s.Handler(opts),
		ReadHeaderTimeout: 10 * time.Second,
		// No write timeout: an approval question may wait minutes for the
		// person, and event streams stay open.
		IdleTimeout: 2 * time.Minute,
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := hs.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = hs.Close()
	}
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// ListenAndServe checks addr with CheckListenAddr, listens on it and
// serves until ctx is done. ready, if not nil, is called with the address
// listened on (useful with port 0).
func (s *Server) ListenAndServe(ctx context.Context, addr string, opts *HTTPOptions, ready func(net.Addr)) error {
	token := ""
	if opts != nil {
		token = opts.Token
	}
	if err := CheckListenAddr(addr, token); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if ready != nil {
		ready(ln.Addr())
	}
	return s.Serve(ctx, ln, opts)
}
