package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/editguard/editguard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DrainLimit bounds how long the stdio transport holds back the end of its
// input for requests still being answered.
const DrainLimit = time.Minute

// DefaultMaxMessageBytes is the largest message StdioTransport reads:
// MessageLimit of the default file size limit, as for an HTTP request
// body, so that a write of a file at the limit fits. Server.Stdio follows
// the workspace's limit instead.
const DefaultMaxMessageBytes = contentFactor*editguard.DefaultMaxFileSize + requestOverhead

// codeInvalidRequest is JSON-RPC's error code of a request that is not one.
const codeInvalidRequest = -32600

// headBytes is how much of a message over the limit is kept, to find the
// id of the request it answers.
const headBytes = 64 << 10

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
//
// A message is at most DefaultMaxMessageBytes (see LimitedStdioTransport).
func StdioTransport(r io.Reader, w io.Writer) mcp.Transport {
	return LimitedStdioTransport(r, w, DefaultMaxMessageBytes)
}

// Stdio is StdioTransport with the message limit of s's workspace:
// MessageLimit of its file size limit.
func (s *Server) Stdio(r io.Reader, w io.Writer) mcp.Transport {
	return LimitedStdioTransport(r, w, MessageLimit(s.ws.MaxFileSize()))
}

// LimitedStdioTransport is StdioTransport with messages of at most max
// bytes. A longer message is not kept: the transport reads past it to the
// end of its line, answers it with a JSON-RPC error (-32600, invalid
// request) that names the limit, with the request's id when the id is in
// the first 64 KiB of the message, and reads on. The server keeps at most
// about twice max of a message while reading it. A max of 0 or less means
// DefaultMaxMessageBytes; more than 2 GiB means 2 GiB.
func LimitedStdioTransport(r io.Reader, w io.Writer, max int64) mcp.Transport {
	if max <= 0 {
		max = DefaultMaxMessageBytes
	}
	max = min(max, math.MaxInt32-headBytes)
	d := &drain{pending: map[string]bool{}}
	d.cond = sync.NewCond(&d.mu)
	dw := &drainWriter{d: d, w: w}
	lim := &frameReader{r: r, max: max}
	return &mcp.IOTransport{
		Reader: &drainReader{d: d, w: dw, lim: lim, dec: json.NewDecoder(lim)},
		Writer: dw,
		// The messages come one at a time from drainReader, within max;
		// the SDK's own limit only backs that up.
		MaxLineLength: int(max + headBytes),
	}
}

// errTooLarge is frameReader's error once a message has reached the limit.
var errTooLarge = errors.New("message over the size limit")

// frameReader reads r for a json.Decoder, failing once the decoder has
// taken max bytes for the message it is decoding: n counts the bytes read
// since that message began, including those read ahead of it.
type frameReader struct {
	r      io.Reader
	n, max int64
}

func (f *frameReader) Read(p []byte) (int, error) {
	if f.n >= f.max {
		return 0, errTooLarge
	}
	if int64(len(p)) > f.max-f.n {
		p = p[:f.max-f.n]
	}
	n, err := f.r.Read(p)
	f.n += int64(n)
	return n, err
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
// It answers messages over the limit itself (see LimitedStdioTransport).
type drainReader struct {
	d   *drain
	w   *drainWriter // for the answers to messages over the limit
	lim *frameReader // what dec reads
	dec *json.Decoder
	buf []byte    // what is left of the value being handed over
	nl  bool      // the newline after buf is still to be handed over
	raw io.Reader // after input that does not decode: the rest, as it is
}

func (r *drainReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 && !r.nl && r.raw == nil {
		var v json.RawMessage
		switch err := r.dec.Decode(&v); {
		case err == io.EOF:
			r.d.waitAnswered()
			return 0, io.EOF
		case errors.Is(err, errTooLarge):
			if err := r.skip(); err != nil {
				return 0, err
			}
		case err != nil:
			// Not JSON: the SDK gets the bytes as they came and reports
			// them as it would have. A value cut by the end of the input
			// ends it: the answers to the requests before it come first.
			if errors.Is(err, io.ErrUnexpectedEOF) {
				r.d.waitAnswered()
			}
			r.raw = io.MultiReader(r.dec.Buffered(), r.lim.r)
		default:
			// The bytes read ahead belong to the next message.
			r.lim.n = int64(r.dec.Buffered().(*bytes.Reader).Len())
			r.d.saw(v, true)
			r.buf, r.nl = v, true
		}
	}
	if r.raw != nil {
		return r.raw.Read(p)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if len(r.buf) == 0 {
		p[0], r.nl = '\n', false
		return 1, nil
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// skip reads past a message over the limit, to the end of its line, and
// answers it. Its first headBytes are kept for its id; the rest of it is
// read in small pieces and dropped. Reading goes on after the line, with
// a new decoder.
func (r *drainReader) skip() error {
	pending := r.dec.Buffered() // the message's start, as far as it was read
	src := io.MultiReader(pending, r.lim.r)
	var (
		head  []byte
		size  int64
		rest  []byte
		chunk = make([]byte, 32<<10)
		ended bool
	)
	for !ended {
		n, err := src.Read(chunk)
		data := chunk[:n]
		if size == 0 {
			// Before the message: the end of the line before it.
			data = bytes.TrimLeft(data, " \t\r\n")
		}
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			rest = bytes.Clone(data[i+1:])
			data, ended = data[:i], true
		}
		if len(head) < headBytes {
			head = append(head, data[:min(len(data), headBytes-len(head))]...)
		}
		size += int64(len(data))
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	r.lim.r = io.MultiReader(bytes.NewReader(rest), src)
	r.lim.n = 0
	r.dec = json.NewDecoder(r.lim)
	return r.w.answer(requestID(head), codeInvalidRequest,
		fmt.Sprintf("request too large: this message of %d bytes is over the limit of %s for one message on stdio, and was not carried out; send less in one request (a file written must fit in the limit with the rest of the request; the limit follows the file size limit, --max-file-size)",
			size, sizeText(r.lim.max)),
		map[string]any{"size_bytes": size, "limit_bytes": r.lim.max})
}

// requestID returns the id of the request whose start is head, or null
// when head does not show it: the id must come before any member that
// does not fit in head.
func requestID(head []byte) json.RawMessage {
	null := json.RawMessage("null")
	dec := json.NewDecoder(bytes.NewReader(head))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return null
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return null
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return null
		}
		if k == "id" {
			if _, ok := idKey(v); ok {
				return v
			}
			return null
		}
	}
	return null
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
// writes each message, or batch, whole with its newline in one call; the
// answers of drainReader go between them.
type drainWriter struct {
	d  *drain
	mu sync.Mutex
	w  io.Writer
}

func (w *drainWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	n, err := w.w.Write(p)
	w.mu.Unlock()
	if n == len(p) {
		w.d.saw(p, false)
	}
	return n, err
}

// answer writes a JSON-RPC error response with id.
func (w *drainWriter) answer(id json.RawMessage, code int, msg string, data any) error {
	b, err := json.Marshal(newErrorResponse(id, code, msg, data))
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err = w.w.Write(append(b, '\n'))
	return err
}

// Close leaves the output open, for whatever the process writes after.
func (w *drainWriter) Close() error { return nil }

// errorResponse is a JSON-RPC error response, for the errors this package
// answers itself.
type errorResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	} `json:"error"`
}

func newErrorResponse(id json.RawMessage, code int, msg string, data any) *errorResponse {
	r := &errorResponse{JSONRPC: "2.0", ID: id}
	r.Error.Code, r.Error.Message, r.Error.Data = code, msg, data
	return r
}
