package ui

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/editguard/editguard"
)

// sessionSum is what one session did, as the summary at the top of the
// timeline counts it from the ledger.
type sessionSum struct {
	Session string
	// Files is how many files the session changed (committed changes,
	// dry runs aside).
	Files int
	// Conflicts is how many of its writes were refused as stale
	// (STALE_FILE): each would have overwritten a change it had not seen.
	Conflicts int
	// Caught is how many of its changes went over another writer's
	// change without losing it: edits merged over it, and shell commands
	// that replaced it (history keeps what they replaced).
	Caught int
	// Commands is how many of its shell commands changed files (a command
	// that changed nothing leaves no record).
	Commands int
	Last     time.Time

	paths map[string]struct{}
	cmds  map[string]struct{}
}

// summaryCache keeps the sessions' counts up to a ledger seq, and counts
// only the records after it when asked again: the first page reads the
// whole ledger once, the next ones its new records.
type summaryCache struct {
	mu   sync.Mutex
	upTo uint64
	by   map[string]*sessionSum
}

// count adds the record r to its session's counts.
func (c *summaryCache) count(r *editguard.LedgerRecord) {
	if r.Outcome == "pending" || r.Tool == toolBeginTurn || r.Session == "" {
		return
	}
	ss := c.by[r.Session]
	if ss == nil {
		ss = &sessionSum{Session: r.Session, paths: map[string]struct{}{}, cmds: map[string]struct{}{}}
		c.by[r.Session] = ss
	}
	if r.Time.After(ss.Last) {
		ss.Last = r.Time
	}
	switch {
	case r.Outcome == "ok":
		if _, ok := ss.paths[r.Path]; !ok && r.Path != "" {
			ss.paths[r.Path] = struct{}{}
			ss.Files++
		}
		if mergedOf(r) || overwroteOf(r) {
			ss.Caught++
		}
	case r.Outcome == "error" && r.ErrorCode == string(editguard.CodeStaleFile):
		ss.Conflicts++
	}
	if strings.HasPrefix(r.Strategy, "command") {
		if key := groupOf(r); key != "" {
			if _, ok := ss.cmds[key]; !ok {
				ss.cmds[key] = struct{}{}
				ss.Commands++
			}
		}
	}
}

// summary is the summary at the top of the timeline: the sessions, most
// recently active first, and their totals.
type summary struct {
	Sessions []sessionSum
	More     int // sessions left out
	Total    sessionSum
}

// summaryRows is how many sessions the summary shows.
const summaryRows = 12

// summary counts what each session did, from the whole ledger; with
// session, that session only.
func (s *Server) summary(session string) (*summary, error) {
	c := &s.sums
	c.mu.Lock()
	defer c.mu.Unlock()
	newest, err := s.newestSeq()
	if err != nil {
		return nil, err
	}
	if c.by == nil || newest < c.upTo { // a ledger shorter than counted is counted again
		c.by, c.upTo = map[string]*sessionSum{}, 0
	}
	if newest > c.upTo {
		f := editguard.LogFilter{}
		if c.upTo > 0 {
			f.Last = int(newest - c.upTo)
		}
		top := c.upTo
		err := s.w.Log(f, func(r *editguard.LedgerRecord) error {
			if r.Seq > c.upTo {
				c.count(r)
				top = max(top, r.Seq)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		c.upTo = top
	}
	var all []sessionSum
	for _, ss := range c.by {
		if session == "" || ss.Session == session {
			all = append(all, *ss)
		}
	}
	slices.SortFunc(all, func(a, b sessionSum) int {
		if c := b.Last.Compare(a.Last); c != 0 {
			return c
		}
		return strings.Compare(a.Session, b.Session)
	})
	sum := &summary{}
	for _, ss := range all {
		sum.Total.Files += ss.Files
		sum.Total.Conflicts += ss.Conflicts
		sum.Total.Caught += ss.Caught
		sum.Total.Commands += ss.Commands
	}
	if len(all) > summaryRows {
		sum.More = len(all) - summaryRows
		all = all[:summaryRows]
	}
	sum.Sessions = all
	return sum, nil
}
