package mcpserver_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/editguard/editguard/internal/mcpserver"
)

// slowPost opens a connection, sends the headers of a POST with a body of
// length n, and one byte of the body. The caller trickles or abandons the
// rest.
func slowPost(t *testing.T, addr string, n int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n{", mcpserver.Endpoint, addr, n)
	return c
}

// TestSlowBodyIsCutOff checks that a client trickling its body is answered
// 408 and disconnected after the body timeout.
func TestSlowBodyIsCutOff(t *testing.T) {
	ws := newWorkspace(t, nil, nil)
	hs := httptest.NewServer(newServer(t, ws, mcpserver.ApproveAuto).Handler(&mcpserver.HTTPOptions{BodyTimeout: 300 * time.Millisecond}))
	defer hs.Close()
	c := slowPost(t, hs.Listener.Addr().String(), 1000)
	defer c.Close()
	start := time.Now()
	go func() {
		for range 50 {
			if _, err := c.Write([]byte(" ")); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no response to a trickled body: %v", err)
	}
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("status = %d, want 408", resp.StatusCode)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cut off after %v, want about the body timeout", d)
	}
}

// TestLargeBodiesWaitForASlot checks that with one slot, a second large
// body is not received while the first holds it: it gets 503 with
// Retry-After. Both bodies stall, so whichever takes the slot holds it
// until its body times out (408), and the other gets 503 after waiting
// half that long; which comes first the test does not decide, so no
// scheduling delay short of a second changes what it sees.
func TestLargeBodiesWaitForASlot(t *testing.T) {
	ws := newWorkspace(t, nil, nil)
	hs := httptest.NewServer(newServer(t, ws, mcpserver.ApproveAuto).Handler(&mcpserver.HTTPOptions{
		BodyTimeout: 2 * time.Second, MaxLargeBodies: 1}))
	defer hs.Close()
	addr := hs.Listener.Addr().String()
	statuses := make(chan *http.Response, 2)
	for range 2 {
		c := slowPost(t, addr, 8<<20)
		defer c.Close()
		go func() {
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				resp = &http.Response{Status: err.Error()}
			}
			statuses <- resp
		}()
	}
	got := map[int]*http.Response{}
	for range 2 {
		r := <-statuses
		got[r.StatusCode] = r
	}
	if got[http.StatusRequestTimeout] == nil || got[http.StatusServiceUnavailable] == nil {
		t.Fatalf("the two large bodies got %v; want one 408 (it held the slot) and one 503", got)
	}
	if got[http.StatusServiceUnavailable].Header.Get("Retry-After") == "" {
		t.Errorf("the 503 has no Retry-After")
	}
	// A small request is not held up.
	resp2, err := http.Post(hs.URL+mcpserver.Endpoint, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode == http.StatusServiceUnavailable {
		t.Errorf("small request got 503")
	}
}
