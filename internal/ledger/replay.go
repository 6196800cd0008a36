//go:build unix

package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/editguard/editguard/internal/statedir"
)

// Call is the identity of a tool call as replay compares it.
type Call struct {
	Tool string
	Path string
	Args json.RawMessage
}

// Reasons a DivergenceError gives.
const (
	DivergedTool      = "tool"      // the call names another tool than the record
	DivergedPath      = "path"      // the call names another path
	DivergedArgs      = "args"      // the arguments differ as canonical JSON
	DivergedExhausted = "exhausted" // the log has no record left
)

// ErrDiverged is what every *DivergenceError matches with errors.Is.
var ErrDiverged = errors.New("ledger: replay diverged from the log")

// A DivergenceError reports a call that does not match the next recorded
// record.
type DivergenceError struct {
	Seq    uint64 // the record expected; for DivergedExhausted, one past the last record replayed
	Reason string // one of the Diverged constants
	Want   *Call  // what the record holds; nil when the log is exhausted
	Got    Call   // what the caller asked for
}

func (e *DivergenceError) Error() string {
	if e.Want == nil {
		return fmt.Sprintf("ledger: replay diverged at record %d: log exhausted, got %s %s", e.Seq, e.Got.Tool, e.Got.Path)
	}
	return fmt.Sprintf("ledger: replay diverged at record %d: %s differs: recorded %s %s %s, got %s %s %s",
		e.Seq, e.Reason, e.Want.Tool, e.Want.Path, e.Want.Args, e.Got.Tool, e.Got.Path, e.Got.Args)
}

func (e *DivergenceError) Unwrap() error { return ErrDiverged }

// A Replayer answers a sequence of tool calls with the records a ledger
// holds for them, in order, without touching the disk: in pure replay mode
// the recorded outcome (Outcome, ErrorCode, Result ...) is the answer, not
// a new evaluation against the file system. It is safe for concurrent use,
// but replay is only meaningful when calls arrive in the recorded order.
type Replayer struct {
	mu   sync.Mutex
	recs []*Record
	next int
}

// NewReplayer returns a Replayer over records, in the order given.
func NewReplayer(records []*Record) *Replayer {
	return &Replayer{recs: records}
}

// LoadReplayer verifies the ledger name in dir and returns a Replayer over its
// records, only those of session if session is not "". A torn final line is
// not a record and is ignored; any other verification failure is returned.
// Intents are not calls, and the outcomes recovery appended for intents
// carry no answer: both are left out.
func LoadReplayer(dir *statedir.Dir, name, session string) (*Replayer, error) {
	if _, err := Verify(dir, name); err != nil {
		var ve *VerifyError
		if !errors.As(err, &ve) || ve.Reason != ReasonTornTail {
			return nil, err
		}
	}
	var recs []*Record
	err := Filter(dir, name, Match{Session: session}, func(r *Record) error {
		if r.Outcome == OutcomePending || r.Intent != 0 && r.Result == nil {
			// An intent whose outcome was never written, and the outcome
			// recovery appended for one: neither holds a call's answer.
			return nil
		}
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return NewReplayer(recs), nil
}

// Next returns the next recorded record if it is for the same tool, the
// same path and the same arguments, compared as canonical JSON (object keys
// sorted, insignificant space removed; an absent argument list equals
// null). Otherwise it returns a *DivergenceError and does not advance.
func (r *Replayer) Next(tool, path string, args json.RawMessage) (*Record, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := Call{Tool: tool, Path: path, Args: args}
	if r.next >= len(r.recs) {
		var seq uint64 = 1
		if len(r.recs) > 0 {
			seq = r.recs[len(r.recs)-1].Seq + 1
		}
		return nil, &DivergenceError{Seq: seq, Reason: DivergedExhausted, Got: got}
	}
	rec := r.recs[r.next]
	want := &Call{Tool: rec.Tool, Path: rec.Path, Args: rec.Args}
	reason := ""
	switch {
	case tool != rec.Tool:
		reason = DivergedTool
	case path != rec.Path:
		reason = DivergedPath
	case !sameJSON(args, rec.Args):
		reason = DivergedArgs
	}
	if reason != "" {
		return nil, &DivergenceError{Seq: rec.Seq, Reason: reason, Want: want, Got: got}
	}
	r.next++
	return rec, nil
}

// Remaining reports how many records have not been replayed yet.
func (r *Replayer) Remaining() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.recs) - r.next
}

// sameJSON reports whether a and b are the same JSON value once canonical.
// Values that are not valid JSON are compared byte for byte.
func sameJSON(a, b json.RawMessage) bool {
	ca, erra := canonicalJSON(a)
	cb, errb := canonicalJSON(b)
	if erra != nil || errb != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca, cb)
}

// canonicalJSON re-encodes v with sorted object keys and no insignificant
// space. Numbers keep their literal text.
func canonicalJSON(v json.RawMessage) ([]byte, error) {
	if len(bytes.TrimSpace(v)) == 0 {
		return []byte("null"), nil
	}
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	var x any
	if err := d.Decode(&x); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, errors.New("trailing data after JSON value")
	}
	return json.Marshal(x)
}

// Rewrite replaces the ledger file at path with records, each sealed again
// onto the one before it (Prev and Hash recomputed, Seq kept), and its head
// anchor with one naming the last: what anyone who can write the state
// directory and knows the format can do, since the chain has no key.
// Verify then passes. It takes no lock; tests use it to forge a ledger
// that verifies.
func Rewrite(path string, records []*Record) error {
	var data []byte
	prev := ""
	for _, r := range records {
		r.Prev = prev
		line, err := seal(r)
		if err != nil {
			return err
		}
		data = append(data, line...)
		prev = r.Hash
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return err
	}
	if len(records) == 0 {
		return os.Remove(path + headSuffix)
	}
	last := records[len(records)-1]
	h := head{seq: last.Seq, hash: last.Hash}.encode()
	return os.WriteFile(path+headSuffix, append(h, h...), 0o600)
}
