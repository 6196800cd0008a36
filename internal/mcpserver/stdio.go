package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DrainLimit bounds how long the stdio transport holds back the end of its
// input for requests still being answered.
const DrainLimit = time.Minute

// StdioTransport is the MCP transport over a client's pipes: r is the
// server's standard input, w its standard output. Neither is closed.
//
// A client may write its requests and close its end of r at once (a
// script piping a batch, a client that is done). The SDK's own transport
// then stops at the end of r and drops the answers to the requests it has
// read but not yet answered (go-sdk issue 1061). This one reports the end
// of r only once every request read from it has been answered, or after
// DrainLimit, or at once if a request of the server to the client is open
// (the client can no longer answer it, so the call waiting for it, an
// approval, fails closed).
func StdioTransport(r io.Reader, w io.Writer) mcp.Transport {
	d := &drain{pending: map[string]bool{}}
	d.cond = sync.NewCond(&d.mu)
	return &mcp.IOTransport{
		Reader: &drainReader{d: d, dec: json.NewDecoder(r), in: r},
		Writer: &drainWriter{d: d, w: w},
	}
}

// drain tracks the requests in flight in both directions.
type drain struct {
	mu      sync.Mutex
	cond    *sync.Cond
	pending map[string]bool // ids of the client's requests not yet answered
	asked   map[string]bool // ids of the server's requests not yet answered
	closed  bool            // the transport closed
}

// message is what the transport needs of a JSON-RPC message. Params stay
// raw: a request whose params are not an object is still a request.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// cancelled returns the id of the request a notifications/cancelled names.
func (m message) cancelled() (string, bool) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(m.Params, &p) != nil {
		return "", false
	}
	return idKey(p.RequestID)
}

// messages decodes one JSON value of the stream: a message or a batch.
func messages(raw []byte) []message {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '[' {
		var batch []message
		json.Unmarshal(raw, &batch)
		return batch
	}
	var m message
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return []message{m}
}

// idKey is a message id in one spelling: 1, 1.0 and 1e0 are one id.
func idKey(id json.RawMessage) (string, bool) {
	var v any
	if len(id) == 0 || json.Unmarshal(id, &v) != nil || v == nil {
		return "", false
	}
	b, _ := json.Marshal(v)
	return string(b), true
}

// saw notes the messages of one direction: from the client (in) or to it.
func (d *drain) saw(raw []byte, in bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, m := range messages(raw) {
		id, hasID := idKey(m.ID)
		switch {
		case m.Method == "notifications/cancelled" && in:
			// A cancelled request gets no answer.
			if id, ok := m.cancelled(); ok {
				delete(d.pending, id)
			}
		case m.Method != "" && hasID && in:
			d.pending[id] = true
		case m.Method != "" && hasID:
			if d.asked == nil {
				d.asked = map[string]bool{}
			}
			d.asked[id] = true
		case m.Method == "" && hasID && in:
			delete(d.asked, id)
		case m.Method == "" && hasID:
			delete(d.pending, id)
		}
	}
	d.cond.Broadcast()
}

// waitAnswered returns once every request read has been answered, the
// server has asked the client something, the transport closed or
// DrainLimit passed.
func (d *drain) waitAnswered() {
	t := time.AfterFunc(DrainLimit, func() {
		d.mu.Lock()
		d.closed = true
		d.cond.Broadcast()
		d.mu.Unlock()
	})
	defer t.Stop()
	d.mu.Lock()
	defer d.mu.Unlock()
	for len(d.pending) > 0 && len(d.asked) == 0 && !d.closed {
		d.cond.Wait()
	}
}

// drainReader hands the SDK the client's messages one JSON value at a
// time, so that it sees each request it passes on, and holds back the end.
type drainReader struct {
	d   *drain
	dec *json.Decoder
	in  io.Reader
	buf []byte    // what is left of the value being handed over
	raw io.Reader // after input that does not decode: the rest, as it is
}

func (r *drainReader) Read(p []byte) (int, error) {
	if len(r.buf) == 0 && r.raw == nil {
		var v json.RawMessage
		switch err := r.dec.Decode(&v); {
		case err == io.EOF:
			r.d.waitAnswered()
			return 0, io.EOF
		case err != nil:
			// Not JSON: the SDK gets the bytes as they came and reports
			// them as it would have. A value cut by the end of the input
			// ends it: the answers to the requests before it come first.
			if errors.Is(err, io.ErrUnexpectedEOF) {
				r.d.waitAnswered()
			}
			r.raw = io.MultiReader(r.dec.Buffered(), r.in)
		default:
			r.d.saw(v, true)
			r.buf = append(v, '\n')
		}
	}
	if r.raw != nil {
		return r.raw.Read(p)
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// Close does not close the input (standard input stays the process's); it
// ends a wait for answers.
func (r *drainReader) Close() error {
	r.d.mu.Lock()
	r.d.closed = true
	r.d.cond.Broadcast()
	r.d.mu.Unlock()
	return nil
}

// drainWriter passes the server's messages on and notes them. The SDK
// writes each message, or batch, whole with its newline in one call.
type drainWriter struct {
	d *drain
	w io.Writer
}

func (w *drainWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if n == len(p) {
		w.d.saw(p, false)
	}
	return n, err
}

// Close leaves the output open, for whatever the process writes after.
func (w *drainWriter) Close() error { return nil }
