package mcpserver

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/editguard/editguard"
	"golang.org/x/time/rate"
)

// The size of one request follows the workspace's file size limit
// (editguard.Options.MaxFileSize, N below): a request may be up to
// contentFactor*N + requestOverhead bytes, over stdio (one message) and
// over HTTP (one body). A larger one is refused before it is held whole:
// over HTTP with 413 (at once when its Content-Length says so, else once
// that much has been read), over stdio with a JSON-RPC error while the
// rest of its line is read past in small pieces (see
// LimitedStdioTransport). So memory while reading a request is bounded by
// the limit, not by what a client sends.
//
// contentFactor leaves room for JSON's escapes: text a client sends as
// \u escapes (Python's ensure_ascii) takes up to 3 bytes a byte (2 for
// the 3-byte UTF-8 of most scripts, 3 for the 2-byte UTF-8 of accented
// Latin, Greek or Cyrillic), so a file at the limit can be written by
// such a client. A file made mostly of characters escaped as \u00XX (6
// bytes each: control characters, or '<', '>' and '&' from Go's encoder)
// fits only up to about half the limit: a factor of 6 for that case
// would let every request be twice as large, and what the server holds
// while decoding one grows with it. requestOverhead is the rest:
// JSON-RPC framing, _meta, paths, the other arguments.
const (
	contentFactor   = 3
	requestOverhead = 4 << 20
)

// MessageLimit is the largest request, in bytes, for a workspace whose
// file size limit is maxFileSize (0 or less: editguard.DefaultMaxFileSize).
func MessageLimit(maxFileSize int64) int64 {
	if maxFileSize <= 0 {
		maxFileSize = editguard.DefaultMaxFileSize
	}
	if maxFileSize > (math.MaxInt64-requestOverhead)/contentFactor {
		return math.MaxInt64
	}
	return contentFactor*maxFileSize + requestOverhead
}

// Defaults of the per-token limits.
const (
	DefaultMaxInFlight = 8
	DefaultRate        = 20
)

// limiter bounds what the holder of one token can ask of the server, so
// that one runaway agent cannot starve the others: requests being handled
// at once, and requests per second. It is safe for concurrent use.
type limiter struct {
	inflight chan struct{} // nil: no bound
	rate     *rate.Limiter // nil: no bound
}

// newLimiter applies o's MaxInFlight, Rate and Burst, whose defaults
// Handler has filled in (negative: no bound).
func newLimiter(o *HTTPOptions) *limiter {
	l := &limiter{}
	if o.MaxInFlight > 0 {
		l.inflight = make(chan struct{}, o.MaxInFlight)
	}
	if o.Rate > 0 {
		l.rate = rate.NewLimiter(rate.Limit(o.Rate), max(o.Burst, 1))
	}
	return l
}

// admit lets r through, or answers 429 Too Many Requests with a
// Retry-After header and returns ok false. After ok, release must be
// called when r is handled.
//
// Every request counts against the rate. A GET, the session's event
// stream, does not count as in flight: it stays open for the session's
// life, at most one per session, and counting it would bound sessions
// instead of work.
func (l *limiter) admit(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	if l.rate != nil {
		now := time.Now()
		res := l.rate.ReserveN(now, 1)
		if d := res.DelayFrom(now); d > 0 {
			res.CancelAt(now)
			tooMany(w, d, "too many requests for this token; slow down")
			return nil, false
		}
	}
	if l.inflight == nil || r.Method == http.MethodGet {
		return func() {}, true
	}
	select {
	case l.inflight <- struct{}{}:
		return func() { <-l.inflight }, true
	default:
		tooMany(w, time.Second, "too many requests in flight for this token; wait for one to finish")
		return nil, false
	}
}

// tooMany answers 429 with Retry-After: after, in whole seconds, at least 1.
func tooMany(w http.ResponseWriter, after time.Duration, msg string) {
	secs := max(1, int(math.Ceil(after.Seconds())))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	http.Error(w, msg, http.StatusTooManyRequests)
}
