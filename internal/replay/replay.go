// Package replay re-evaluates a workspace's ledger: for every recorded
// call it rebuilds the file's content before the call from history (by the
// recorded SHA-256), decides again whether the call could proceed from the
// recorded precondition, baseline and observation, applies the change again
// where it was accepted, and compares the decision and the resulting
// SHA-256 with the record. It reads only: the files on disk are never
// consulted, and nothing is written.
//
// A patch is decided on its text, which history keeps (the record's
// Text): each file's check, the hunks applied to its content before, and
// for a refused patch the files in the engine's order up to the refusal
// (the record's Files). A merged edit or patch is merged again against
// the session's read that history keeps (the baseline's Read.Version), a
// whole-file change after a partial read is NOT_READ again (Read.Full),
// and a file is decoded in the encoding it was read in (Read.Encoding).
//
// What a record does not hold cannot be decided again: a person's
// approval, a git publish or pull, a shell command's or another program's
// changes, the content of a write (kept as its hash only; the result is
// checked when history holds it), and a content that history does not
// hold (retired by retention, or never saved). Records written before the
// ledger kept a patch's text and a read's extent, encoding and merge base
// are replayed as they were: a patch on its decision only, a merge or a
// NOT_READ after a partial read skipped. Skipped records are counted by
// reason.
package replay

import (
	"encoding/json"
	"errors"
	"io/fs"
	"sort"

	"github.com/editguard/editguard/internal/history"
	"github.com/editguard/editguard/internal/ledger"
)

// Source is what replay reads: the ledger's records and history's
// contents. Its methods only read.
type Source interface {
	// Records calls fn for every record of session ("" for all), oldest
	// first; an intent that an outcome follows is left out.
	Records(session string, fn func(*ledger.Record) error) error
	// HistoryVersion returns the history version id of the file p.
	HistoryVersion(p, id string) (history.Version, error)
	// Content returns a content of p that history keeps, by its SHA-256;
	// one it does not keep is an error matching fs.ErrNotExist.
	Content(p, sum string) ([]byte, error)
}

// Options select the records replayed.
type Options struct {
	Session string // only this session's records; "" for all
	Since   uint64 // only records whose seq is at least Since
}

// A Divergence is a record whose replay does not give what it records.
type Divergence struct {
	Seq      uint64 `json:"seq"`
	Tool     string `json:"tool"`
	Path     string `json:"path"`
	What     string `json:"what"`     // "decision" or "sha256_after"
	Recorded string `json:"recorded"` // "ok", "dry_run" or an error code; or a SHA-256
	Replayed string `json:"replayed"`
}

// A Skip is a record that replay cannot decide again, and why.
type Skip struct {
	Seq    uint64 `json:"seq"`
	Tool   string `json:"tool"`
	Path   string `json:"path"`
	Reason string `json:"reason"` // one of the Skipped constants
	Detail string `json:"detail,omitempty"`
}

// Reasons a record is skipped.
const (
	SkippedApproval    = "needed a person's approval"
	SkippedGit         = "git publish or pull"
	SkippedShell       = "shell command's changes between checkpoints"
	SkippedHook        = "hook around another program's tool"
	SkippedRecovery    = "written by recovery, not by a call"
	SkippedNoOutcome   = "no outcome recorded"
	SkippedRetired     = "content not in history (retired by retention, or changed outside editguard and never saved)"
	SkippedContent     = "write content not recorded (only its hash), and its result not in history"
	SkippedUnobserved  = "refused before the file was observed"
	SkippedLate        = "refused after the decision, for a reason the ledger does not hold"
	SkippedReadExtent  = "the extent of the session's read is not recorded"
	SkippedMerged      = "merged over another writer's change"
	SkippedPatchText   = "refused patch whose text is not kept"
	SkippedDestination = "refused for the destination's state, which the ledger does not hold"
	SkippedRewind      = "rewind"
	SkippedUnknown     = "not a known tool"
)

// Report is the outcome of a replay.
type Report struct {
	Replayed int `json:"replayed"`
	Matched  int `json:"matched"`
	Diverged int `json:"diverged"`
	Skipped  int `json:"skipped"`
	// DecisionOnly counts the matched records whose resulting SHA-256
	// could not be computed again (a patch recorded before its text was
	// kept, what a dry-run move would have left), so only their decision
	// was compared.
	DecisionOnly int            `json:"decision_only"`
	SkippedBy    map[string]int `json:"skipped_by"`
	Divergences  []Divergence   `json:"divergences"`
	Skips        []Skip         `json:"skips"`
}

// Reasons returns the reasons of SkippedBy, sorted.
func (r *Report) Reasons() []string {
	var out []string
	for k := range r.SkippedBy {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Run replays src's ledger.
func Run(src Source, o Options) (*Report, error) {
	r := &run{src: src, o: o, rep: &Report{SkippedBy: map[string]int{}, Divergences: []Divergence{}, Skips: []Skip{}},
		moves: map[string]string{}, dstOf: map[uint64]string{}, txs: map[string]*ledger.Record{}, moved: map[string]string{}}
	// Every session's records are read: a move's or a transaction's
	// earlier records are needed for later ones.
	err := src.Records("", func(rec *ledger.Record) error {
		r.one(rec)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r.rep, nil
}

// run is one replay.
type run struct {
	src Source
	o   Options
	rep *Report
	// moves maps a move's session and arguments to the SHA-256 its source
	// record found, for the destination's record.
	moves map[string]string
	// dstOf maps a move's destination record to the SHA-256 of the
	// content its source record moved.
	dstOf map[uint64]string
	// txs maps a transaction's id and path to its apply_patch record.
	txs map[string]*ledger.Record
	// moved maps a transaction's id and a move's destination (as the
	// patch names it) to the SHA-256 of the content its source's record
	// computed.
	moved map[string]string
}

// verdict is what a replay computes for a record.
type verdict struct {
	skip, detail string
	code         string // "" if the call proceeds
	after        string // the resulting SHA-256 ("" for a deleted file)
	afterKnown   bool
}

func skipped(reason, detail string) verdict { return verdict{skip: reason, detail: detail} }
func refused(code string) verdict           { return verdict{code: code} }
func accepted(after string) verdict         { return verdict{after: after, afterKnown: true} }

// one replays rec and counts what it finds.
func (r *run) one(rec *ledger.Record) {
	r.note(rec)
	if rec.Seq < r.o.Since || r.o.Session != "" && rec.Session != r.o.Session || rec.Tool == toolTurn {
		return
	}
	v := r.evaluate(rec)
	if v.skip != "" {
		r.rep.Skipped++
		r.rep.SkippedBy[v.skip]++
		r.rep.Skips = append(r.rep.Skips, Skip{Seq: rec.Seq, Tool: rec.Tool, Path: rec.Path, Reason: v.skip, Detail: v.detail})
		return
	}
	r.rep.Replayed++
	if d := compare(rec, v); d != nil {
		r.rep.Diverged++
		r.rep.Divergences = append(r.rep.Divergences, *d)
		return
	}
	r.rep.Matched++
	if v.code == "" && !v.afterKnown {
		r.rep.DecisionOnly++
	}
}

// recordedDecision returns the record's outcome as replay states it:
// "ok", "dry_run" or the error code.
func recordedDecision(rec *ledger.Record) string {
	if rec.Outcome == "error" {
		return rec.ErrorCode
	}
	return rec.Outcome
}

// compare returns how v differs from rec, or nil.
func compare(rec *ledger.Record, v verdict) *Divergence {
	d := &Divergence{Seq: rec.Seq, Tool: rec.Tool, Path: rec.Path}
	want := recordedDecision(rec)
	got := v.code
	if got == "" {
		got = "ok"
		if rec.Outcome == "dry_run" {
			got = "dry_run"
		}
	}
	if want != got {
		d.What, d.Recorded, d.Replayed = "decision", want, got
		return d
	}
	if v.code != "" || !v.afterKnown {
		return nil
	}
	if have := recordedAfter(rec); have != v.after {
		d.What, d.Recorded, d.Replayed = "sha256_after", have, v.after
		return d
	}
	return nil
}

// recordedAfter returns the SHA-256 rec records as the call's result: its
// sha256_after, or for a dry run the result's sha256.
func recordedAfter(rec *ledger.Record) string {
	if rec.Outcome != "dry_run" {
		return rec.SHA256After
	}
	var res struct {
		SHA256 string `json:"sha256"`
	}
	json.Unmarshal(rec.Result, &res)
	return res.SHA256
}

// before returns the content of rec's file before the call, from history.
// A miss is a skip.
func (r *run) before(rec *ledger.Record) ([]byte, *verdict) {
	data, err := r.src.Content(rec.Path, rec.SHA256Before)
	if err == nil {
		return data, nil
	}
	v := skipped(SkippedRetired, "sha256_before "+short(rec.SHA256Before))
	if !errors.Is(err, fs.ErrNotExist) {
		v.detail = err.Error()
	}
	return nil, &v
}

func short(sum string) string { return sum[:min(12, len(sum))] }
