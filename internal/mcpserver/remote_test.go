package mcpserver_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/mcpserver"
)

// selfSigned makes a self-signed certificate for localhost, the loopback
// addresses and ips, writes it and its key to PEM files in dir, and
// returns their names and a pool that trusts the certificate.
func selfSigned(t *testing.T, dir string, ips ...net.IP) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "editguard test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           append([]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, ips...),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile = writeFile(t, dir, "cert.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), 0o644)
	keyFile = writeFile(t, dir, "key.pem", string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk})), 0o600)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// withToken adds "Authorization: Bearer token" to every request it sends
// through base.
type withToken struct {
	token string
	base  http.RoundTripper
}

func (w withToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+w.token)
	return w.base.RoundTrip(r)
}

// tlsTransport trusts pool's certificates and prefers HTTP/2.
func tlsTransport(pool *x509.CertPool) *http.Transport {
	return &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
}

// serve serves srv on ln with opts until the test ends.
func serve(t *testing.T, srv *mcpserver.Server, ln net.Listener, opts *mcpserver.HTTPOptions) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, opts) }()
	t.Cleanup(func() { // after the clients' cleanups
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}

// do sends one request and returns the response with its body read.
func do(t *testing.T, c *http.Client, method, url string, header http.Header, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestRemoteServer runs the endpoint over real TLS on a loopback port
// with two agents' tokens, and uses it with the SDK's client.
func TestRemoteServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	tlsConf, err := mcpserver.TLSConfig(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	alice, bob := testToken(1), testToken(2)
	tokens, err := mcpserver.LoadTokens(writeFile(t, dir, "tokens", "# test agents\nalice "+alice+"\nbob "+bob+"\n", 0o600))
	if err != nil {
		t.Fatal(err)
	}
	ws := newWorkspace(t, nil, map[string]string{"a.txt": "one\n"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Serve keeps TLS 1.2 as the minimum whatever the configuration says.
	tlsConf.MinVersion = tls.VersionTLS10
	serve(t, newServer(t, ws, mcpserver.ApproveAuto), ln, &mcpserver.HTTPOptions{Tokens: tokens, TLS: tlsConf})
	url := "https://" + ln.Addr().String() + mcpserver.Endpoint
	anon := &http.Client{Transport: tlsTransport(pool)}

	// No token, a wrong one, a malformed one: the same 401, saying only
	// that a bearer token is wanted.
	var bodies []string
	for _, auth := range []string{"", "Bearer " + alice[:63] + "0", "Bearer " + alice + "x", "Bearer", "Basic " + alice, alice, "Bearer " + alice + " " + bob} {
		h := http.Header{}
		if auth != "" {
			h.Set("Authorization", auth)
		}
		resp, body := do(t, anon, "POST", url, h, initialize)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("POST with Authorization %.20q = %d, want 401", auth, resp.StatusCode)
		}
		if got := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
			t.Errorf("401 WWW-Authenticate = %q, want Bearer", got)
		}
		bodies = append(bodies, body)
	}
	for _, b := range bodies[1:] {
		if b != bodies[0] {
			t.Errorf("401 bodies differ: %q and %q; they must not tell a wrong token from a missing one", bodies[0], b)
		}
	}

	// TLS below 1.2 is refused.
	old := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}}}
	if resp, err := old.Get(url); err == nil {
		resp.Body.Close()
		t.Errorf("GET over TLS 1.1 = %s, want a failed handshake", resp.Status)
	} else if !strings.Contains(err.Error(), "protocol version") {
		t.Errorf("GET over TLS 1.1: %v, want the server to refuse the protocol version", err)
	}
	// The right token, over HTTP/2.
	resp, _ := do(t, &http.Client{Transport: withToken{alice, tlsTransport(pool)}}, "POST", url, nil, initialize)
	if resp.StatusCode != http.StatusOK || resp.Proto != "HTTP/2.0" {
		t.Errorf("POST with alice's token = %d over %s, want 200 over HTTP/2.0", resp.StatusCode, resp.Proto)
	}

	// Both agents work through the SDK's client; the ledger names them.
	ca := httpConnect(t, url, &http.Client{Transport: withToken{alice, tlsTransport(pool)}})
	cb := httpConnect(t, url, &http.Client{Transport: withToken{bob, tlsTransport(pool)}})
	ok(t, ca, "read_file", map[string]any{"path": "a.txt"})
	ok(t, ca, "write_file", map[string]any{"path": "a.txt", "content": "by alice\n"})
	ok(t, cb, "write_file", map[string]any{"path": "b.txt", "content": "by bob\n"})
	fails(t, cb, "write_file", map[string]any{"path": "a.txt", "content": "by bob\n"}, editguard.CodeNotRead)
	if got := readDisk(t, ws, "a.txt"); got != "by alice\n" {
		t.Errorf("a.txt = %q, want alice's write", got)
	}
	want := map[string]string{"a.txt": "alice/mcp-" + ca.ID()[:8], "b.txt": "bob/mcp-" + cb.ID()[:8]}
	n := 0
	err = ws.Log(editguard.LogFilter{}, func(r *editguard.LedgerRecord) error {
		n++
		if r.Path == "a.txt" && r.ErrorCode != "" {
			if r.Session != want["b.txt"] {
				t.Errorf("refused write of a.txt: session %q, want %q", r.Session, want["b.txt"])
			}
			return nil
		}
		if r.Session != want[r.Path] {
			t.Errorf("ledger record of %s (%s): session %q, want %q", r.Path, r.Outcome, r.Session, want[r.Path])
		}
		return nil
	})
	if err != nil || n != 3 {
		t.Errorf("Log: %d records, err %v; want 3", n, err)
	}

	// Alice's session does not answer to bob's token: 403 for a call, for
	// the event stream and for closing it, and it still works for alice.
	ping := `{"jsonrpc":"2.0","id":7,"method":"ping"}`
	for _, tc := range []struct{ method, body string }{{"POST", ping}, {"GET", ""}, {"DELETE", ""}} {
		h := http.Header{"Mcp-Session-Id": {ca.ID()}, "Authorization": {"Bearer " + bob}}
		if resp, _ := do(t, anon, tc.method, url, h, tc.body); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s to alice's session with bob's token = %d, want 403", tc.method, resp.StatusCode)
		}
	}
	h := http.Header{"Mcp-Session-Id": {ca.ID()}, "Authorization": {"Bearer " + alice}}
	if resp, _ := do(t, anon, "POST", url, h, ping); resp.StatusCode != http.StatusOK {
		t.Errorf("POST to alice's session with alice's token = %d, want 200", resp.StatusCode)
	}
	ok(t, ca, "read_file", map[string]any{"path": "a.txt"})
}

// TestRemoteLimits: each token has its own bound on requests in flight
// and on their rate; beyond them, 429 with Retry-After.
func TestRemoteLimits(t *testing.T) {
	t.Parallel()
	alice, bob := testToken(1), testToken(2)
	tokens := parseTokens(t, "alice "+alice+"\nbob "+bob+"\n")

	t.Run("in flight", func(t *testing.T) {
		t.Parallel()
		ws := newWorkspace(t, nil, nil)
		hs := httptest.NewServer(newServer(t, ws, mcpserver.ApproveAuto).Handler(&mcpserver.HTTPOptions{Tokens: tokens, MaxInFlight: 1, Rate: -1}))
		t.Cleanup(hs.Close)
		url := hs.URL + mcpserver.Endpoint
		// Alice's first request stays in flight while its body trickles:
		// written by hand on its own connection, so that its headers and
		// the body's first chunk are surely sent. Until the server has
		// admitted it, a probe of alice's may pass; a probe that holds the
		// one slot when it arrives gets it refused (the server answers it
		// with 429 at once), and then it is sent again. The probe is a
		// ping outside any session, so that probing opens no sessions.
		const probe = `{"jsonrpc":"2.0","id":2,"method":"ping"}`
		first := `{"jsonrpc":`
		var (
			conn     net.Conn
			resp     *http.Response
			answered chan struct{} // closed once the server answers conn
		)
		send := func() {
			var err error
			if conn, err = net.Dial("tcp", hs.Listener.Addr().String()); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n",
				mcpserver.Endpoint, hs.Listener.Addr(), alice, len(first), first)
			// A reader of its own waits for the answer: a short read
			// deadline would expire before the read on a loaded machine,
			// and an answer waiting to be read would go unseen.
			ch := make(chan struct{})
			answered = ch
			go func(c net.Conn) {
				if n, _ := c.Read(make([]byte, 12)); n > 0 {
					close(ch)
				}
			}(conn)
		}
		refused := func() bool {
			select {
			case <-answered:
				return true
			default:
				return false
			}
		}
		send()
		for deadline := time.Now().Add(20 * time.Second); ; {
			resp = post(t, url, "", "Bearer "+alice, probe)
			if resp.StatusCode == http.StatusTooManyRequests || time.Now().After(deadline) {
				break
			}
			if refused() {
				conn.Close()
				send()
			}
			time.Sleep(5 * time.Millisecond)
		}
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
			t.Errorf("second request of alice in flight = %d, Retry-After %q; want 429, 1", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		if resp := post(t, url, "", "Bearer "+bob, initialize); resp.StatusCode != http.StatusOK {
			t.Errorf("bob's request while alice's is in flight = %d, want 200", resp.StatusCode)
		}
		conn.Close() // the client gives up
		// The client gives up before the server's handler has seen the
		// broken body and returned: alice is admitted once it has.
		for deadline := time.Now().Add(10 * time.Second); ; {
			if resp = post(t, url, "", "Bearer "+alice, initialize); resp.StatusCode == http.StatusOK || time.Now().After(deadline) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		if resp.StatusCode != http.StatusOK {
			t.Errorf("alice's request after hers ended = %d, want 200", resp.StatusCode)
		}
	})

	t.Run("rate", func(t *testing.T) {
		t.Parallel()
		ws := newWorkspace(t, nil, nil)
		// One request every 10 s, bursts of 2: the third at once is refused.
		hs := httptest.NewServer(newServer(t, ws, mcpserver.ApproveAuto).Handler(&mcpserver.HTTPOptions{Tokens: tokens, Rate: 0.1, Burst: 2}))
		t.Cleanup(hs.Close)
		url := hs.URL + mcpserver.Endpoint
		for i := range 2 {
			if resp := post(t, url, "", "Bearer "+alice, initialize); resp.StatusCode != http.StatusOK {
				t.Errorf("alice's request %d of a burst of 2 = %d, want 200", i+1, resp.StatusCode)
			}
		}
		resp := post(t, url, "", "Bearer "+alice, initialize)
		after, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		if resp.StatusCode != http.StatusTooManyRequests || after < 5 || after > 10 {
			t.Errorf("alice's third request = %d, Retry-After %q; want 429, about 10", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		if resp := post(t, url, "", "Bearer "+bob, initialize); resp.StatusCode != http.StatusOK {
			t.Errorf("bob's first request = %d, want 200: alice's rate is hers", resp.StatusCode)
		}
		// A refused request does not use up the rate: still refused, not
		// pushed further back.
		resp = post(t, url, "", "Bearer "+alice, initialize)
		if again, _ := strconv.Atoi(resp.Header.Get("Retry-After")); resp.StatusCode != http.StatusTooManyRequests || again > after {
			t.Errorf("alice's fourth request = %d, Retry-After %d; want 429, at most %d", resp.StatusCode, again, after)
		}
	})
}

// nonLoopbackIP returns an IPv4 address of this machine that is not
// loopback, or nil.
func nonLoopbackIP() net.IP {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil && !n.IP.IsLinkLocalUnicast() {
			return n.IP
		}
	}
	return nil
}

// TestRemoteListen binds an address of this machine that is not loopback:
// refused without tokens, and without TLS unless insecure; served with
// them.
func TestRemoteListen(t *testing.T) {
	t.Parallel()
	ip := nonLoopbackIP()
	if ip == nil {
		t.Skip("no address that is not loopback on this machine")
	}
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir, ip)
	tlsConf, err := mcpserver.TLSConfig(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	alice := testToken(1)
	tokens := parseTokens(t, "alice "+alice+"\n")
	ws := newWorkspace(t, nil, map[string]string{"a.txt": "one\n"})
	srv := newServer(t, ws, mcpserver.ApproveAuto)
	addr := net.JoinHostPort(ip.String(), "0")
	ctx := context.Background()
	if err := srv.ListenAndServe(ctx, addr, &mcpserver.HTTPOptions{Token: alice}, nil); err == nil {
		t.Errorf("ListenAndServe(%s) with one unnamed token = nil, want a refusal", addr)
	}
	if err := srv.ListenAndServe(ctx, addr, &mcpserver.HTTPOptions{TLS: tlsConf}, nil); err == nil {
		t.Errorf("ListenAndServe(%s) without tokens = nil, want a refusal", addr)
	}
	if err := srv.ListenAndServe(ctx, addr, &mcpserver.HTTPOptions{Tokens: tokens}, nil); err == nil {
		t.Errorf("ListenAndServe(%s) with plain HTTP = nil, want a refusal", addr)
	}
	for _, tc := range []struct {
		name   string
		opts   *mcpserver.HTTPOptions
		scheme string
		base   http.RoundTripper
	}{
		{"tls", &mcpserver.HTTPOptions{Tokens: tokens, TLS: tlsConf}, "https", tlsTransport(pool)},
		{"insecure", &mcpserver.HTTPOptions{Tokens: tokens, Insecure: true}, "http", http.DefaultTransport},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			ready := make(chan net.Addr, 1)
			done := make(chan error, 1)
			go func() { done <- srv.ListenAndServe(ctx, addr, tc.opts, func(a net.Addr) { ready <- a }) }()
			var a net.Addr
			select {
			case a = <-ready:
			case err := <-done:
				t.Fatalf("ListenAndServe(%s): %v", addr, err)
			}
			url := tc.scheme + "://" + a.String() + mcpserver.Endpoint
			if resp, _ := do(t, &http.Client{Transport: tc.base}, "POST", url, nil, initialize); resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("POST to %s without a token = %d, want 401", url, resp.StatusCode)
			}
			cs := httpConnect(t, url, &http.Client{Transport: withToken{alice, tc.base}})
			ok(t, cs, "read_file", map[string]any{"path": "a.txt"})
			cs.Close()
			cancel()
			if err := <-done; err != nil {
				t.Errorf("ListenAndServe after cancel: %v", err)
			}
		})
	}
}
