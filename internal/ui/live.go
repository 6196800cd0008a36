package ui

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/editguard/editguard"
)

// maxLive bounds the records one update of the live timeline sends.
const maxLive = 4096

// hub watches the ledger's end and tells every open timeline when records
// arrived. One goroutine polls for all of them.
type hub struct {
	srv    *Server
	mu     sync.Mutex
	subs   map[chan uint64]struct{}
	newest uint64
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
}

func newHub(srv *Server) *hub {
	h := &hub{srv: srv, subs: map[chan uint64]struct{}{}, stop: make(chan struct{}), done: make(chan struct{})}
	go h.run()
	return h
}

func (h *hub) run() {
	defer close(h.done)
	t := time.NewTicker(h.srv.opts.Poll)
	defer t.Stop()
	for {
		h.poll()
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
	}
}

// poll reads the newest seq and, if it moved, tells the subscribers and
// the verifier.
func (h *hub) poll() {
	newest, err := h.srv.newestSeq()
	if err != nil {
		return
	}
	h.srv.trust.update(newest)
	h.mu.Lock()
	defer h.mu.Unlock()
	if newest == h.newest {
		return
	}
	h.newest = newest
	for c := range h.subs {
		select {
		case c <- newest:
		default: // it has an update waiting already
		}
	}
}

func (h *hub) subscribe() chan uint64 {
	c := make(chan uint64, 1)
	h.mu.Lock()
	h.subs[c] = struct{}{}
	h.mu.Unlock()
	return c
}

func (h *hub) unsubscribe(c chan uint64) {
	h.mu.Lock()
	delete(h.subs, c)
	h.mu.Unlock()
}

func (h *hub) close() {
	h.once.Do(func() { close(h.stop) })
	<-h.done
}

// since returns the records after seq that f matches, oldest first, read
// from the ledger's end, and the newest seq it saw. Intents whose outcome
// is not written yet are left for the outcome.
func (s *Server) since(f filter, seq uint64) ([]*editguard.LedgerRecord, uint64, error) {
	newest, err := s.newestSeq()
	if err != nil || newest <= seq {
		return nil, max(seq, newest), err
	}
	recs, err := s.tail(filter{}, 0, int(min(newest-seq, maxLive)))
	if err != nil {
		return nil, seq, err
	}
	var out []*editguard.LedgerRecord
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		if r.Seq > seq && r.Outcome != "pending" && f.matchesAll(r) {
			out = append(out, r)
		}
	}
	return out, newest, nil
}

// events streams the timeline's new rows and the ledger's chain status as
// server-sent events: "rows" (HTML rows to put on top, newest first) with
// the newest seq as the event id, and "trust" (the header's status).
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	f := filterFrom(r)
	last, err := strconv.ParseUint(r.URL.Query().Get("since"), 10, 64)
	if err != nil {
		last, _ = s.newestSeq()
	}
	if id, err := strconv.ParseUint(r.Header.Get("Last-Event-ID"), 10, 64); err == nil {
		last = id
	}
	w.Header().Set("Content-Type", "text/event-stream")
	sub := s.live.subscribe()
	defer s.live.unsubscribe(sub)
	fmt.Fprint(w, "retry: 1000\n\n")
	fl.Flush()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var shown time.Time
	for {
		if last, err = s.sendRows(w, f, last); err != nil {
			return
		}
		shown = s.sendTrust(w, shown)
		fl.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-sub:
		case <-tick.C:
		}
	}
}

// sendRows writes the rows of the records after last, if any, and
// returns the newest seq sent.
func (s *Server) sendRows(w http.ResponseWriter, f filter, last uint64) (uint64, error) {
	recs, newest, err := s.since(f, last)
	if err != nil || newest == last {
		return last, nil
	}
	if len(recs) > 0 {
		var b bytes.Buffer
		h := &histories{w: s.w}
		if err := templates().ExecuteTemplate(&b, "rows", s.rows(recs, h, true)); err != nil {
			return last, err
		}
		if err := writeEvent(w, "rows", strconv.FormatUint(newest, 10), b.String()); err != nil {
			return last, err
		}
	}
	return newest, nil
}

// sendTrust writes the chain status if it changed since shown.
func (s *Server) sendTrust(w http.ResponseWriter, shown time.Time) time.Time {
	st := s.trust.get()
	if !st.Checked || st.At.Equal(shown) {
		return shown
	}
	var b bytes.Buffer
	if templates().ExecuteTemplate(&b, "trust", st) == nil {
		_ = writeEvent(w, "trust", "", b.String())
	}
	return st.At
}

// writeEvent writes one server-sent event; each line of data is a data
// field of its own.
func writeEvent(w http.ResponseWriter, name, id, data string) error {
	var b strings.Builder
	b.WriteString("event: " + name + "\n")
	if id != "" {
		b.WriteString("id: " + id + "\n")
	}
	for line := range strings.Lines(data) {
		line = strings.ReplaceAll(strings.TrimRight(line, "\r\n"), "\r", "&#13;")
		b.WriteString("data: " + line + "\n")
	}
	b.WriteString("\n")
	_, err := w.Write([]byte(b.String()))
	return err
}
