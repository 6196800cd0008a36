package mcpserver

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Endpoint is the path of the streamable HTTP endpoint.
const Endpoint = "/mcp"

// HTTPOptions configure the streamable HTTP endpoint.
type HTTPOptions struct {
	// Tokens, if set, are the bearer tokens of the agents allowed in:
	// every request must carry "Authorization: Bearer TOKEN" with one of
	// them, others get 401. The agent's name goes into the names of the
	// sessions it opens (AGENT/mcp-ID, in the ledger's records), a session
	// answers only to the token that opened it (403 otherwise), and each
	// token has its own limits (MaxInFlight, Rate). Tokens are required on
	// an address that is not loopback (see CheckListenAddr).
	Tokens *Tokens
	// Token, if set and Tokens is not, is the one bearer token accepted,
	// held by an unnamed agent: its sessions keep plain names (mcp-ID), and
	// it has the limits of a token. It does not allow an address that is
	// not loopback.
	Token string
	// TLS, if set, makes Serve and ListenAndServe serve HTTPS with it (see
	// TLSConfig); TLS 1.2 is the minimum whatever it says.
	TLS *tls.Config
	// Insecure allows plain HTTP on an address that is not loopback, for a
	// network that is already private (a VPN, a TLS proxy in front).
	Insecure bool
	// MaxInFlight bounds the requests of one token handled at once
	// (default DefaultMaxInFlight; negative: no bound). More get 429 with
	// Retry-After. A session's event stream (GET) does not count.
	MaxInFlight int
	// Rate bounds the requests per second of one token (default
	// DefaultRate; negative: no bound), allowing bursts of Burst requests
	// (default twice Rate). More get 429 with Retry-After.
	Rate  float64
	Burst int
	// MaxFileSize is the file size limit that request bodies follow
	// (default: the workspace's). A body may be MessageLimit(MaxFileSize)
	// bytes, so that a write of a file at the limit fits and nothing
	// larger is buffered; a larger one gets 413.
	MaxFileSize int64
	// SessionTimeout closes sessions that have had no request for that
	// long, and forgets their read baselines (default
	// DefaultSessionTimeout; negative: never). A request in progress keeps
	// its session open; a session's event stream (GET) does not.
	SessionTimeout time.Duration
	// MaxSessions bounds the sessions open at once (default
	// DefaultMaxSessions; negative: no bound), and MaxSessionsPerToken
	// those opened with one token (default DefaultMaxSessionsPerToken;
	// negative: no bound; without tokens only MaxSessions applies). A
	// request that would open one more gets a JSON-RPC error naming the
	// limit, with 429 (the token's) or 503 (the server's) and Retry-After.
	// A session's place is free again once it is closed (DELETE) or has
	// expired (SessionTimeout).
	MaxSessions         int
	MaxSessionsPerToken int
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
// machines unless agents need a token from opts.Tokens (anyone who can
// reach the port could otherwise change files in the workspace), and
// unless the tokens and file contents are protected in transit by
// opts.TLS or the person said, with opts.Insecure, that the network is.
// A loopback address needs neither.
func CheckListenAddr(addr string, opts *HTTPOptions) error {
	var o HTTPOptions
	if opts != nil {
		o = *opts
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("bad listen address %q: %v", addr, err)
	}
	if isLoopback(host) {
		return nil
	}
	if o.Tokens == nil {
		return fmt.Errorf("refusing to listen on %q without a tokens file: it is not a loopback address, so anyone who can reach it could change the workspace; give each agent a token with --tokens FILE, or listen on 127.0.0.1", addr)
	}
	if o.TLS == nil && !o.Insecure {
		return fmt.Errorf("refusing to serve plain HTTP on %q: it is not a loopback address, and tokens and file contents would cross the network unencrypted; give --tls-cert and --tls-key, or --insecure if the network is private (a VPN, a TLS proxy in front)", addr)
	}
	return nil
}

// IsLoopbackAddr reports whether addr (host:port) is a loopback address,
// reachable only from this machine.
func IsLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && isLoopback(host)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// TLSConfig loads a certificate (chain) and its private key from PEM
// files and returns a server configuration with TLS 1.2 as the minimum
// and Go's default cipher suites and curves, which leave out the weak
// ones. The files are read once: replacing them needs a restart.
func TLSConfig(certFile, keyFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate %s and key %s: %w", certFile, keyFile, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// Handler returns the HTTP handler of the streamable endpoint at Endpoint.
// It serves 2026-07-28 clients (stateless) and those of earlier revisions
// (with sessions) at once (see eraRouter). Each MCP session
// (Mcp-Session-Id) gets its own editguard session; a 2026-07-28 call runs
// in the session of its token, or of a handle from begin_session, bound to
// the token that made it. Handles count against MaxSessions and
// MaxSessionsPerToken apart from MCP sessions, and expire after
// SessionTimeout unused.
//
// Requests pass, in order: the bearer token check (when tokens are set;
// 401), the token's limits (429), cross-origin protection (a browser page
// on another origin cannot post to the endpoint), the SDK's DNS-rebinding
// protection (on a loopback listener a Host header that is not loopback
// gets 403), the body size limit, then the SDK's check that a session is
// used with the token that opened it (403).
func (s *Server) Handler(opts *HTTPOptions) http.Handler {
	var o HTTPOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = s.ws.MaxFileSize()
	}
	limit := MessageLimit(o.MaxFileSize)
	switch {
	case o.SessionTimeout == 0:
		o.SessionTimeout = DefaultSessionTimeout
	case o.SessionTimeout < 0:
		o.SessionTimeout = 0
	}
	if o.MaxSessions == 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MaxSessionsPerToken == 0 {
		o.MaxSessionsPerToken = DefaultMaxSessionsPerToken
	}
	reg := newRegistry(s, o.SessionTimeout, o.MaxSessions, o.MaxSessionsPerToken)
	// The SDK asks getServer for a server on every request; sessionGate
	// makes the one of a new session (see serverFor).
	probe := s.NewMCPServer()
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server { return serverFor(r, probe) }, &mcp.StreamableHTTPOptions{
		Logger:              s.opts.Logger,
		SessionTimeout:      o.SessionTimeout,
		MaxRequestBodyBytes: limit,
	})
	stateless := s.statelessServer(reg)
	modern := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return stateless }, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		JSONResponse:        true,
		Logger:              s.opts.Logger,
		MaxRequestBodyBytes: limit,
	})
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = time.Minute
	}
	if o.MaxLargeBodies <= 0 {
		o.MaxLargeBodies = 2
	}
	if o.MaxInFlight == 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	if o.Rate == 0 {
		o.Rate = DefaultRate
	}
	if o.Burst <= 0 {
		o.Burst = int(math.Ceil(2 * o.Rate))
	}
	mux := http.NewServeMux()
	mux.Handle(Endpoint, http.NewCrossOriginProtection().Handler(limitBodies(&o, limit,
		eraRouter{legacy: newSessionGate(s, &o, h, reg), modern: modern})))
	tokens := o.Tokens
	if tokens == nil && o.Token != "" {
		tokens = singleToken(o.Token)
	}
	if tokens == nil {
		return mux
	}
	return requireToken(tokens, &o, mux)
}

// agentKey is the context key of the agent whose token a request carries.
type agentKey struct{}

func agentFrom(ctx context.Context) string {
	a, _ := ctx.Value(agentKey{}).(string)
	return a
}

// requireToken lets through only requests that carry one of the tokens,
// within that token's limits. Every other request gets the same 401,
// whether its token was missing, malformed or wrong.
//
// It hands the token's identity to the SDK (as auth.TokenInfo.UserID),
// which ties each session to the token that opened it and answers 403
// to a request of that session with another token.
func requireToken(t *Tokens, o *HTTPOptions, next http.Handler) http.Handler {
	limits := make([]*limiter, len(t.entries))
	for i := range limits {
		limits[i] = newLimiter(o)
	}
	type tokenIndex struct{}
	bind := auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		i := ctx.Value(tokenIndex{}).(int)
		return &auth.TokenInfo{UserID: "token-" + strconv.Itoa(i), Extra: map[string]any{"agent": t.entries[i].agent}}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := t.lookup(r.Header.Get("Authorization"))
		if i < 0 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="editguard"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		release, ok := limits[i].admit(w, r)
		if !ok {
			return
		}
		defer release()
		ctx := context.WithValue(r.Context(), tokenIndex{}, i)
		ctx = context.WithValue(ctx, tokenKey{}, i)
		ctx = context.WithValue(ctx, agentKey{}, t.entries[i].agent)
		bind.ServeHTTP(w, r.WithContext(ctx))
	})
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
			w.Header().Set("Connection", "close")
			bodyTooLarge(w, r.ContentLength, limit)
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
		body, err := readBody(http.MaxBytesReader(w, r.Body, limit), r.ContentLength)
		if err != nil {
			// The deadline stays: the connection is closed, not drained.
			w.Header().Set("Connection", "close")
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				bodyTooLarge(w, -1, limit)
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
		next.ServeHTTP(w, r.WithContext(withBody(r.Context(), body)))
	})
}

// readBody reads r whole: into a buffer of n bytes when n, the request's
// Content-Length, is known, so that a large body is not copied as the
// buffer grows.
func readBody(r io.Reader, n int64) ([]byte, error) {
	if n <= 0 {
		return io.ReadAll(r)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	// The length said all: more is an error of the client's.
	var one [1]byte
	if k, _ := r.Read(one[:]); k > 0 {
		return nil, io.ErrUnexpectedEOF
	}
	return buf, nil
}

// bodyTooLarge answers 413 with a JSON-RPC error (id null: the body was
// not read) naming the limit; size is the body's length, or -1 if unknown.
func bodyTooLarge(w http.ResponseWriter, size, limit int64) {
	msg := fmt.Sprintf("request too large: the body is over the limit of %s for one request, and was not read or carried out; send less in one request (a file written must fit in the limit with the rest of the request; the limit follows the file size limit, serve --max-file-size)", sizeText(limit))
	data := map[string]any{"limit_bytes": limit}
	if size >= 0 {
		data["size_bytes"] = size
	}
	b, _ := json.Marshal(newErrorResponse(json.RawMessage("null"), codeInvalidRequest, msg, data))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusRequestEntityTooLarge)
	w.Write(append(b, '\n'))
}

// sizeText is n bytes, and in MiB when it is a whole number of them.
func sizeText(n int64) string {
	s := fmt.Sprintf("%d bytes", n)
	if n%(1<<20) == 0 {
		s += fmt.Sprintf(" (%d MiB)", n>>20)
	}
	return s
}

// Serve serves the endpoint on ln until ctx is done, then shuts down
// gracefully: it stops accepting, lets calls in progress finish for up to
// five seconds, and closes the rest. With opts.TLS it serves HTTPS (HTTP/2
// or HTTP/1.1), with TLS 1.2 at least.
//
// A client has ReadHeaderTimeout to complete the TLS handshake and send
// its request headers (at most 64 KiB), and BodyTimeout to send the body.
// Idle connections are closed after two minutes.
func (s *Server) Serve(ctx context.Context, ln net.Listener, opts *HTTPOptions) error {
	hs := &http.Server{
		Handler:           s.Handler(opts),
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    64 << 10,
		// No write timeout: an approval question may wait minutes for the
		// person, and event streams stay open.
		IdleTimeout: 2 * time.Minute,
	}
	if s.opts.Logger != nil {
		// Failed TLS handshakes and the like, in the server's log.
		hs.ErrorLog = slog.NewLogLogger(s.opts.Logger.Handler(), slog.LevelWarn)
	}
	serve := hs.Serve
	if opts != nil && opts.TLS != nil {
		hs.TLSConfig = opts.TLS.Clone()
		hs.TLSConfig.MinVersion = max(hs.TLSConfig.MinVersion, tls.VersionTLS12)
		serve = func(ln net.Listener) error { return hs.ServeTLS(ln, "", "") }
	}
	errc := make(chan error, 1)
	go func() { errc <- serve(ln) }()
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
	if err := CheckListenAddr(addr, opts); err != nil {
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
