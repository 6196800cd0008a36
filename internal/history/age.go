//go:build unix

package history

import (
	"errors"
	"io/fs"
	"strconv"
	"strings"
	"time"
)

// Retention by age. With Options.MaxAge set, Prune drops every version
// saved longer ago than MaxAge, except the newest of each file: the content
// a file's last change displaced stays, however old, so that change can
// always be undone. Age applies beside the count (KeepVersions) and the
// byte cap, and is the strictest of the three where it is set.
//
// A Save does not look at ages: that would mean reading the file's index
// on every Save. Instead the caller runs Prune when AgeDue says a pass is
// due: a tenth of MaxAge after the last one, and at least once an hour. The
// time of the last pass is kept in the file "aged" of the history
// directory, so that each command of a command line, a process of its
// own, does not make a pass of its own.
const agedName = "aged"

// ageEvery is how long after one pass by age the next is due: a version
// outlives MaxAge by at most that, plus the wait for the next commit.
func ageEvery(maxAge time.Duration) time.Duration { return min(maxAge/10, time.Hour) }

// AgeDue reports whether MaxAge is set and no Prune has applied it, in
// any process, for ageEvery.
func (s *Store) AgeDue() bool {
	if s.maxAge <= 0 || s.readOnly {
		return false
	}
	at := s.agedAt.Load()
	if at == 0 {
		at = s.readAged()
		s.agedAt.Store(at)
	}
	return s.now().Sub(time.Unix(0, at)) >= ageEvery(s.maxAge)
}

// readAged returns the time of the last pass by age in Unix nanoseconds,
// or 1 (long ago) if none is recorded or the record does not read.
func (s *Store) readAged() int64 {
	b, err := s.dir.ReadFile(agedName)
	if err != nil {
		return 1
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 {
		return 1
	}
	return n
}

// writeAged records start as the time of the last pass by age. The record
// is not fsynced: losing it costs one more pass, nothing else.
func (s *Store) writeAged(start time.Time) error {
	n := start.UnixNano()
	s.agedAt.Store(n)
	err := s.dir.WriteFileVolatile(agedName, []byte(strconv.FormatInt(n, 10)+"\n"), 0o644)
	if errors.Is(err, fs.ErrPermission) {
		return nil // a read-only state: the pass still happened
	}
	return err
}

// dropAged marks the versions saved before the run's start less MaxAge to
// be dropped, never the newest of a file.
func (r *pruneRun) dropAged() {
	if r.s.maxAge <= 0 {
		return
	}
	cut := r.start.Add(-r.s.maxAge)
	for _, f := range r.files {
		if f.corrupt {
			continue
		}
		for i := range len(f.versions) - 1 {
			if f.versions[i].Time.Before(cut) {
				f.drop[i] = true
			}
		}
	}
}
