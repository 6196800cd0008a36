package ui

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/editguard/editguard"
)

// maxLive bounds the records one update of the live timeline sends.
const maxLive = 4096

// hub watches the ledger's end and asks for a verification of its chain
// when records arrived. One goroutine polls for every open page.
type hub struct {
	srv  *Server
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

func newHub(srv *Server) *hub {
	h := &hub{srv: srv, stop: make(chan struct{}), done: make(chan struct{})}
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

// poll reads the newest seq and tells the verifier.
func (h *hub) poll() {
	newest, err := h.srv.newestSeq()
	if err != nil {
		return
	}
	h.srv.trust.update(newest)
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

// update is one answer of /updates.
type update struct {
	Newest uint64 `json:"newest"`          // the seq to ask from next time
	Rows   string `json:"rows,omitempty"`  // HTML rows to put on top, newest first
	Trust  string `json:"trust,omitempty"` // the header's chain status, once verified
}

// updates answers the live timeline's poll at once: the rows of the
// records after ?since=SEQ that the filters match, and the ledger's chain
// status. The page asks again a moment after each answer. It is polled,
// not streamed, so that no request of the page stays open: a headless
// browser that runs the page on virtual time (--virtual-time-budget)
// waits for every open request before its clock moves on, and would
// never finish a page that held one.
func (s *Server) updates(w http.ResponseWriter, r *http.Request) {
	f := filterFrom(r)
	last, err := strconv.ParseUint(r.URL.Query().Get("since"), 10, 64)
	if err != nil {
		if last, err = s.newestSeq(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	recs, newest, err := s.since(f, last)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	u := update{Newest: newest}
	var b bytes.Buffer
	if len(recs) > 0 {
		if err := templates().ExecuteTemplate(&b, "rows", s.rows(recs, &histories{w: s.w}, true)); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		u.Rows = b.String()
	}
	if st := s.trust.get(); st.Checked {
		b.Reset()
		if templates().ExecuteTemplate(&b, "trust", st) == nil {
			u.Trust = b.String()
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&u)
}
