package ui

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/editguard/editguard"
)

// Sources of a change, as the timeline names them.
const (
	sourceMCP     = "MCP"
	sourceHook    = "hook"
	sourceShell   = "shell"
	sourceCLI     = "CLI"
	sourceRecover = "recover"
)

// hookPrefixes are the session name prefixes of the agents' hooks.
var hookPrefixes = []string{"claude-", "gemini-", "codex-", "cursor-"}

// sourceOf names where a record's change came from: an MCP session, an
// agent's hook, a shell command, the CLI, or recovery at open.
func sourceOf(r *editguard.LedgerRecord) string {
	switch {
	case r.Recovered || r.Session == "recovery" || r.Tool == "recover":
		return sourceRecover
	case strings.HasPrefix(r.Strategy, "command"):
		return sourceShell
	case strings.HasPrefix(r.Session, "mcp-") || strings.Contains(r.Session, "/mcp-"):
		return sourceMCP
	}
	for _, p := range hookPrefixes {
		if strings.HasPrefix(r.Session, p) {
			return sourceHook
		}
	}
	return sourceCLI
}

// Outcomes the timeline shows beside the ledger's own ("ok", "dry_run",
// "pending" and the error codes).
const (
	// outcomeMerged: an edit applied over another writer's change to the
	// file since the session's read, which it kept.
	outcomeMerged = "merged"
	// outcomeOverwrote: a shell command's change that replaced another
	// writer's change; history keeps what it replaced.
	outcomeOverwrote = "overwrote"
	// outcomeWriterUnknown: a shell command's change made while it ran
	// by the command or by someone else (nothing told them apart).
	outcomeWriterUnknown = "writer_unknown"
	// outcomeUnchanged: a rewind's file that already held what it held
	// before the session's changes (the ledger's NO_CHANGE refusal).
	outcomeUnchanged = "unchanged"
)

// outcomeOf is a record's outcome as the timeline shows it: "ok",
// "merged", "overwrote", "writer_unknown", "unchanged", "dry_run",
// "pending", or the error code.
func outcomeOf(r *editguard.LedgerRecord) string {
	switch {
	case unchangedOf(r):
		return outcomeUnchanged
	case r.Outcome == "error" && r.ErrorCode != "":
		return r.ErrorCode
	case mergedOf(r):
		return outcomeMerged
	case overwroteOf(r):
		return outcomeOverwrote
	case editguard.WriterUnknown(r):
		return outcomeWriterUnknown
	}
	return r.Outcome
}

// refusedOf reports whether r is a refusal: an error, but not a rewind's
// file that was already as before (nothing was refused there).
func refusedOf(r *editguard.LedgerRecord) bool {
	return r.Outcome == "error" && !unchangedOf(r)
}

// unchangedOf reports whether r is a rewind's file left as it was because
// it already held what it held before the rewound session's changes.
func unchangedOf(r *editguard.LedgerRecord) bool {
	return r.Outcome == "error" && r.ErrorCode == string(editguard.CodeNoChange) && r.Tool == toolRewind
}

// toolRewind is the ledger's tool of a rewind's changes.
const toolRewind = "rewind"

// mergedOf reports whether the change r was merged over another writer's
// change: an edit's record says so in its strategy; a
// patch's records keep their transaction's strategy, and show it by the
// content they changed (SHA256Before) not being what the session had read
// (Baseline), which a patch allows only when it merges, or when the call
// gave a precondition in place of the read (and then it never merges).
func mergedOf(r *editguard.LedgerRecord) bool {
	if r.Outcome != "ok" {
		return false
	}
	if r.Strategy == strategyMerged {
		return true
	}
	if txOf(r) != "" {
		return r.Baseline != nil && r.Baseline.Exists && r.SHA256Before != "" && r.Baseline.SHA256 != r.SHA256Before &&
			len(r.Precondition) == 0
	}
	return false
}

// strategyMerged is the ledger's strategy of a merged edit.
const strategyMerged = "merged"

// overwroteOf reports whether r is a shell command's change that replaced
// another writer's change (the record's args say so).
func overwroteOf(r *editguard.LedgerRecord) bool {
	if r.Outcome != "ok" || !strings.HasPrefix(r.Strategy, "command") {
		return false
	}
	var a struct {
		Overwrote bool `json:"overwrote"`
	}
	return json.Unmarshal(r.Args, &a) == nil && a.Overwrote
}

// txOf returns the patch transaction a record belongs to, or "".
func txOf(r *editguard.LedgerRecord) string {
	if tx, ok := strings.CutPrefix(r.Strategy, "transaction "); ok {
		return tx
	}
	return ""
}

// rewindCall is what a rewind's record names in its args.
type rewindCall struct {
	Session string `json:"session"` // the session rewound
	ToSeq   uint64 `json:"to_seq"`
	ToTime  string `json:"to_time"`
	DryRun  bool   `json:"dry_run"`
}

// rewindOf returns the session the rewind record r rewound, or "".
func rewindOf(r *editguard.LedgerRecord) (rewindCall, bool) {
	var a rewindCall
	if r.Tool != toolRewind || len(r.Args) == 0 || json.Unmarshal(r.Args, &a) != nil || a.Session == "" {
		return a, false
	}
	return a, true
}

// groupOf returns the key that joins a record to the others of its patch
// transaction, shell command or rewind, or "" for a record of its own.
func groupOf(r *editguard.LedgerRecord) string {
	if tx := txOf(r); tx != "" {
		return "tx:" + tx
	}
	if a, ok := rewindOf(r); ok {
		return fmt.Sprintf("rewind:%q:%q:%d:%q:%t", r.Session, a.Session, a.ToSeq, a.ToTime, a.DryRun)
	}
	if !strings.HasPrefix(r.Strategy, "command") {
		return ""
	}
	var a struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(r.Args, &a) == nil && a.ID != "" {
		return "cmd:" + r.Session + ":" + a.ID
	}
	return ""
}

// commandText returns the shell command a record names, or "".
func commandText(r *editguard.LedgerRecord) string {
	var a struct {
		Command string `json:"command"`
	}
	if len(r.Args) == 0 || json.Unmarshal(r.Args, &a) != nil {
		return ""
	}
	return a.Command
}

// storedResult is what a record's result field holds: a Result for a
// change, an Error for a refusal.
type storedResult struct {
	editguard.Result
	Code         string         `json:"code"`
	Message      string         `json:"message"`
	Details      map[string]any `json:"details"`
	RecoveryHint string         `json:"recovery_hint"`
}

func resultOf(r *editguard.LedgerRecord) *storedResult {
	var s storedResult
	if len(r.Result) > 0 {
		_ = json.Unmarshal(r.Result, &s)
	}
	return &s
}

// detail returns a string detail of a refusal, or "".
func (s *storedResult) detail(key string) string {
	v, _ := s.Details[key].(string)
	return v
}

// filter selects records; empty fields match everything. Path, Session
// and Tool go to the ledger's own filter; Outcome and Source are checked
// on each record.
type filter struct {
	Path, Session, Tool, Outcome, Source string
}

func (f filter) logFilter(before uint64, last int) editguard.LogFilter {
	return editguard.LogFilter{Path: f.Path, Session: f.Session, Tool: f.Tool, Before: before, Last: last}
}

// local reports whether the filter has conditions the ledger does not
// check itself.
func (f filter) local() bool { return f.Outcome != "" || f.Source != "" }

func (f filter) matches(r *editguard.LedgerRecord) bool {
	switch {
	case f.Outcome == "refused" && !refusedOf(r):
		return false
	case f.Outcome == "ok" && r.Outcome != "ok": // merged, overwrote and writer_unknown are ok too
		return false
	case f.Outcome != "" && f.Outcome != "refused" && f.Outcome != "ok" && outcomeOf(r) != f.Outcome:
		return false
	case f.Source != "" && sourceOf(r) != f.Source:
		return false
	}
	return true
}

// matchesAll checks every condition of f on r, the ledger's own ones
// too, for records read without the ledger's filter.
func (f filter) matchesAll(r *editguard.LedgerRecord) bool {
	return (f.Path == "" || path.Clean(f.Path) == r.Path) &&
		(f.Session == "" || f.Session == r.Session) &&
		(f.Tool == "" || f.Tool == r.Tool) && f.matches(r)
}

// query returns the filter as URL query parameters.
func (f filter) query() string {
	var q []string
	for _, kv := range [][2]string{{"path", f.Path}, {"session", f.Session}, {"tool", f.Tool}, {"outcome", f.Outcome}, {"source", f.Source}} {
		if kv[1] != "" {
			q = append(q, kv[0]+"="+urlEscape(kv[1]))
		}
	}
	return strings.Join(q, "&")
}

// asError finds an *editguard.Error in err's chain.
func asError(err error, target **editguard.Error) bool { return errors.As(err, target) }
